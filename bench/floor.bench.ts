// The renderer's floor (BENCH=floor make bench): what the browse workload costs when nothing but drawing and encoding
// is left. The same Chromium binary and switches as the service's renderers (CHROMIUM_FLAGS, lavapipe), the same
// maplibre-gl from npm, the same style (OSM Liberty with flat extrusions, as pitch-0 frames get it) and the same
// frames as the browse bench's users ask for, but every source tile, TileJSON, glyph range and sprite is already in
// the page's memory (maplibre's addProtocol('mem')), no tile server is around it, and each tile is encoded to PNG in
// the page by the same writer as the service's pages (PNG_WRITER: one whole-frame readPixels into one buffer kept for
// every frame, unfiltered rows, libdeflate at a zlib level or the browser's CompressionStream), and kept there. The CPU of the browser's process tree per tile is about the least a service built
// on this renderer can spend; the service's own figure over it says what everything around the drawing costs
// (bench/browse.bench.ts prints both). The PNG check line compares the writer with Chromium's own encoder and sharp.
//
// Frames: the browse scenario replayed without timing. Views are taken in turn (view 1 of every user, then view 2,
// ...), as users running at once ask for them; a user asks for the tiles of a view it has not seen, and a tile some
// user's frame has drawn already comes from the service's cache. The new tiles of a view are grouped by block
// (batchEdge) and each block drawn in one frame over the bounding box of its tiles, or a lone tile's 2x2 metatile:
// what render.metatile = "auto" draws (src/render/tile-batches.ts) when a view's tiles arrive together. Every tile
// a frame draws is encoded (the service caches them all); "tiles" are the distinct tiles asked for, as the browse
// bench counts them. Frames go to a page by the owner hash of their 4x4 block (src/render/peers.ts, ownerSlot), as
// owner routing sends them to a process; a page draws its frames one after the other, the pages at the same time.
//
// Source tiles are the bytes the service gives its pages: the archive's tile of each zoom within the archive's
// area (bench/browse-data.ts), empty outside it, and below the archive's maxzoom the tile cut from its ancestor by
// src/tiles/overzoom.ts with the service's buffer (src/serve/tile-service.ts, fetchRenderTile). Glyph ranges are
// what the fonts route answers for each font stack of the style (src/styles/fonts.ts, readGlyphs).
//
// A warm-up (style loaded, one 2x2 frame at z12 and one at the deepest zoom just outside the browse area, so the
// shaders are compiled) precedes the timed pass; the pages' tile caches are then cleared, their byte stores kept.
//
//   node --import tsx bench/floor.bench.ts        (or BENCH=floor make bench)
//
// Encoders (issue 49): the timed pass runs once per PNG deflate of BENCH_FLOOR_ENCODERS, the same frames each time
// (the pages' tile caches cleared in between), BENCH_FLOOR_ROUNDS times in turn, and prints each pass and the ratio
// of the first encoder's floor to the others': "stream" is CompressionStream (zlib level 6, the writer before issue
// 49), a digit is libdeflate at that zlib level (3: render.png_compression's default, what the service writes now),
// "fflate" and a digit fflate's JavaScript deflate at that level (the page's deflate before libdeflate).
// BENCH_FLOOR_ENCODER_TABLE=1 adds the table of every alternative on frames of the workload (floor-encoders.ts).
//
// Environment: BENCH_BROWSE_DATA (paris | dortmund), BENCH_BROWSE_USERS (the largest count is replayed; "1,4"),
// BENCH_BROWSE_SEED (1), BENCH_FLOOR_PAGES (pages of the one browser, 2), BENCH_FLOOR_ALPHA=1 (encode RGBA PNGs from
// canvases with alpha; by default RGB, as the service writes opaque tiles), BENCH_FLOOR_ENCODERS ("stream,3"),
// BENCH_FLOOR_ROUNDS (1), BENCH_FLOOR_ENCODER_TABLE (0), BENCH_FLOOR_TABLE_TILES (tiles in the table's frames, 32),
// BENCH_FLOOR_GL (the GL stack: lavapipe, the default and the service's own on this machine, egl or swiftshader;
// src/render/backends/gl-stack.ts), LP_NUM_THREADS (the rasteriser threads of Mesa's llvmpipe under lavapipe and egl, passed on to the browser; unset:
// the service's 0, drawing on the GPU process's own thread), BENCH_FLOOR_SWITCHES (more Chromium switches for the
// browser, space-separated, after the service's: a way to weigh one, e.g. --enable-features=...). The last line of
// the output, "floor-row:", is the run's figures as JSON for scripts that compare runs (scripts/bench-debian13.sh).
//
// The line "kernel share and page faults per tile" gives the renderer and GPU processes' CPU in the kernel and their
// minor page faults: on a virtual machine a page fault costs several microseconds, and the allocators of Chromium,
// V8 and Mesa hand memory back to the kernel and take it again every frame (bench/RESULTS.md).
import { readdirSync, readFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createRequire } from 'node:module';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import type { Browser, Page } from 'playwright-core';
import sharp from 'sharp';
import { CHROMIUM_FLAGS, findChromium } from '../src/render/backends/chromium.js';
import { DEFLATE_MODULE, FRAME_WAIT, PNG_WRITER } from '../src/render/backends/chromium-page.js';
import { pageAsset } from '../src/render/backends/local-server.js';
import { AUTO_ORDER, glLaunch, type GlStack } from '../src/render/backends/gl-stack.js';
import { flattenExtrusions } from '../src/render/flat-extrusions.js';
import { ownerSlot } from '../src/render/peers.js';
import { cells } from '../src/render/tile-batches.js';
import { batchEdge, planBlock, planMetatile, tileRect, type MetatilePlan, type TileRequest } from '../src/render/tile-render.js';
import { loadFontIndex, readGlyphs } from '../src/styles/fonts.js';
import { decodeMvt } from '../src/tiles/mvt-decode.js';
import { encodeMvt } from '../src/tiles/mvt-encode.js';
import { cutTile } from '../src/tiles/overzoom.js';
import type { StyleSpecification } from '@maplibre/maplibre-gl-style-spec';
import * as v from 'valibot';
import { SourceSchema } from '../src/config/schema.js';
import { openSource } from '../src/sources/open.js';
import { sourceTileJson } from '../src/sources/tilejson.js';
import { archiveCover, archiveZooms, browseData, omtTile } from './browse-data.js';
import { areaAt, BROWSE, userWalk, viewTiles } from './k6/browse-scenario.js';
import { ENCODER_TABLE_PAGE, encoderTable, formatEncoderTable, type EncoderRow, type RawUploads } from './floor-encoders.js';
import { cpuByKind, cpuTimes, envNumber, fmt, formatCpuSplit, kernelByKind, processTree, ROOT, stealShare, threadCpu, treePss, type CpuSplit, type KernelShare, type ProcessKind } from './lib.js';

/** The service's settings that shape frames: render.tile_buffer, the renderer's largest frame, the tile base. */
const TILE_BUFFER = 32;
const MAX_FRAME = 4096;
const BASE = 512;
/** Geometry kept around a cut tile: src/serve/tile-service.ts, CUT_BUFFER (128 of 4096 units). */
const CUT_BUFFER = 1 / 32;
/** The in-page origin of every resource (maplibre's custom protocol). */
const MEM = 'mem://r';
const STYLE_FILE = path.join(ROOT, 'fixtures/styles/osm-liberty/style.json');
const FONTS = path.join(ROOT, 'fixtures/fonts');
const RELIEF = path.join(ROOT, 'fixtures/raster/natural-earth-png-z0-1.pmtiles');

export interface FloorOptions {
  data: string;
  users: number;
  seed: number;
  pages: number;
  /**
   * Encode tiles from 2D canvases with an alpha channel (RGBA PNGs). Off by default: the service writes opaque
   * tiles (every OSM Liberty tile: its background layer is opaque) as RGB, and Chromium writes RGB from a canvas
   * without alpha. The PNG check after the timed pass encodes one frame both ways.
   */
  alpha: boolean;
  /** The PNG deflates of the timed passes, in order: see the header. */
  encoders: FloorEncoder[];
  /** How many times the passes of every encoder run, in turn. */
  rounds: number;
  /** Print the table of every encoding alternative (floor-encoders.ts), on frames of this many tiles. */
  table: number;
  /** The software GL stack the browser draws with (the service's own, lavapipe, by default). */
  gl: GlStack;
}

/** A PNG deflate of the page's writer: CompressionStream (level undefined), or libdeflate or fflate at a zlib level. */
export interface FloorEncoder {
  name: string;
  deflate: 'stream' | 'libdeflate' | 'fflate';
  level: number | undefined;
}

/** "stream", a zlib level 0-9 (libdeflate) or "fflate" and a level, as BENCH_FLOOR_ENCODERS lists them. */
export function parseEncoders(text: string): FloorEncoder[] {
  return text.split(',').map((t) => t.trim()).filter(Boolean).map((t): FloorEncoder => {
    if (t === 'stream') return { name: 'CompressionStream (zlib 6)', deflate: 'stream', level: undefined };
    if (/^[0-9]$/.test(t)) return { name: `libdeflate level ${t}`, deflate: 'libdeflate', level: Number(t) };
    const f = /^fflate([0-9])$/.exec(t);
    if (f) return { name: `fflate level ${f[1]}`, deflate: 'fflate', level: Number(f[1]) };
    throw new Error(`BENCH_FLOOR_ENCODERS: "${t}" is neither "stream", a zlib level 0-9 nor "fflate" and a level`);
  });
}

/** One frame of the replay: its plan, the page that draws it, and the tiles of it that were asked for. */
interface FloorFrame {
  plan: MetatilePlan;
  page: number;
  /** Tiles asked for that this frame is the first to draw. */
  asked: number;
}

const TILE_PATH = /^(\d+)\/(\d+)\/(\d+)(?:@(\d)x)?\.png$/;

/** The frames of the browse workload for `users` users, in the order they would be asked for (see the header). */
export function floorFrames(users: number, seed: number, pages: number): { frames: FloorFrame[]; asked: number; drawn: number } {
  const walks = Array.from({ length: users }, (_, u) => userWalk(BROWSE, u, seed));
  const seen = walks.map(() => new Set<string>());
  // Tiles drawn by some frame (the service's cache), keyed like the requests: "z/x/y[@2x].png".
  const drawn = new Set<string>();
  const asked = new Set<string>();
  const frames: FloorFrame[] = [];
  for (let i = 0; i < BROWSE.views; i++) {
    for (let u = 0; u < users; u++) {
      const view = walks[u][i];
      if (!view) continue;
      const wanted = viewTiles(BROWSE, view).filter((t) => !seen[u].has(t));
      for (const t of wanted) {
        seen[u].add(t);
        asked.add(t);
      }
      const fresh = wanted.filter((t) => !drawn.has(t));
      const suffix = view.scale === 2 ? '@2x' : '';
      // The new tiles of the view by block, in the order they were asked for.
      const blocks = new Map<string, { t: TileRequest; xy: [number, number][] }>();
      for (const key of fresh) {
        const m = TILE_PATH.exec(key)!;
        const t: TileRequest = { z: Number(m[1]), x: Number(m[2]), y: Number(m[3]), base: BASE, scale: view.scale };
        const edge = batchEdge(t, TILE_BUFFER, MAX_FRAME);
        const bk = `${Math.floor(t.x / edge)},${Math.floor(t.y / edge)}`;
        let b = blocks.get(bk);
        if (!b) blocks.set(bk, (b = { t, xy: [] }));
        b.xy.push([t.x, t.y]);
      }
      for (const { t, xy } of blocks.values()) {
        let plan: MetatilePlan;
        if (xy.length === 1) plan = planMetatile({ ...t, x: xy[0][0], y: xy[0][1] }, 2, TILE_BUFFER, MAX_FRAME);
        else {
          const xs = xy.map((p) => p[0]);
          const ys = xy.map((p) => p[1]);
          const x0 = Math.min(...xs);
          const y0 = Math.min(...ys);
          plan = planBlock(t, x0, y0, Math.max(...xs) - x0 + 1, Math.max(...ys) - y0 + 1, TILE_BUFFER, MAX_FRAME);
        }
        for (const [x, y] of cells(plan)) drawn.add(`${t.z}/${x}/${y}${suffix}.png`);
        frames.push({ plan, page: ownerSlot(t.z, plan.x0, plan.y0, pages), asked: xy.length });
      }
    }
  }
  let cellCount = 0;
  for (const f of frames) cellCount += cells(f.plan).length;
  return { frames, asked: asked.size, drawn: cellCount };
}

/** The bytes the pages hold, by key (the page maps a resource URL to its key), and how the page finds tiles. */
interface Store {
  entries: Map<string, Uint8Array>;
  /** What the page needs to map a tile URL to a key: the archive's maxzoom and the positions it holds per zoom. */
  tiles: { maxzoom: number; cover: Record<number, { x0: number; x1: number; y0: number; y1: number }> };
}

/** The font stacks the style's layers name (as MapLibre joins them in glyph URLs). */
function fontStacks(style: StyleSpecification): string[] {
  const out = new Set<string>();
  for (const layer of style.layers) {
    const font = (layer as { layout?: Record<string, unknown> }).layout?.['text-font'];
    if (Array.isArray(font) && font.every((f) => typeof f === 'string')) out.add(font.join(','));
  }
  return [...out];
}

async function buildStore(dataName: string, style: StyleSpecification): Promise<Store> {
  const data = browseData(dataName);
  const { minzoom, maxzoom } = archiveZooms(data);
  const entries = new Map<string, Uint8Array>();
  const json = (v: unknown) => Buffer.from(JSON.stringify(v));
  const world = [-180, -85.05112877980659, 180, 85.0511287798066];
  // The TileJSON documents as src/sources/tilejson.ts writes them (URLs leading back to the renderer).
  entries.set('tilejson/openmaptiles', json({ tilejson: '3.0.0', name: 'city', tiles: [`${MEM}/data/openmaptiles/{z}/{x}/{y}.pbf`], minzoom, maxzoom, bounds: world, format: 'pbf', scheme: 'xyz' }));
  // The shaded relief (z0-1, the browse bench's second source): MapLibre asks for its tiles when a page loads the
  // style (the map starts at zoom 0), never at the browse zooms (its layer ends at z6).
  const relief = await openSource(v.parse(SourceSchema, { id: 'natural_earth', type: 'pmtiles', path: RELIEF }));
  try {
    entries.set('tilejson/natural_earth', json(sourceTileJson(relief.info, { base: MEM, key: undefined, forRenderer: true })));
    for (let z = relief.info.minzoom; z <= relief.info.maxzoom; z++)
      for (let x = 0; x < 2 ** z; x++)
        for (let y = 0; y < 2 ** z; y++) {
          const bytes = await relief.getTile(z, x, y);
          if (bytes) entries.set(`relief/${z}/${x}/${y}`, bytes);
        }
  } finally {
    await relief.close();
  }
  const cover: Store['tiles']['cover'] = {};
  for (const [zs, name] of Object.entries(data.tiles)) {
    entries.set(`tile/${zs}`, readFileSync(omtTile(name)));
    cover[Number(zs)] = archiveCover(Number(zs));
  }
  // Deeper tiles, to the browse scenario's deepest zoom: every position's cut depends only on where it lies in its
  // ancestor, and every ancestor is the same tile.
  const ancestor = decodeMvt(readFileSync(omtTile(data.tiles[maxzoom])));
  for (let z = maxzoom + 1; z <= BROWSE.maxZoom; z++) {
    const k = 2 ** (z - maxzoom);
    for (let cx = 0; cx < k; cx++) for (let cy = 0; cy < k; cy++) entries.set(`tile/${z}/${cx}/${cy}`, encodeMvt(cutTile(ancestor, z - maxzoom, cx, cy, CUT_BUFFER)));
  }
  // Every range of every stack, as the fonts route answers it (the first font of the stack that has the range).
  const fonts = await loadFontIndex(FONTS);
  for (const stack of fontStacks(style)) {
    for (let start = 0; start <= 65280; start += 256) {
      const r = await readGlyphs(fonts, stack, `${start}-${start + 255}`);
      if (r.kind !== 'ok') throw new Error(`glyphs of "${stack}" ${start}: ${r.kind}`);
      entries.set(`glyphs/${stack}/${start}-${start + 255}`, r.bytes);
    }
  }
  const sprites = path.join(path.dirname(STYLE_FILE), 'sprites');
  for (const f of readdirSync(sprites)) {
    const m = /^osm-liberty(@2x)?\.(json|png)$/.exec(f);
    if (m) entries.set(`sprite${m[1] ?? ''}.${m[2]}`, readFileSync(path.join(sprites, f)));
  }
  return { entries, tiles: { maxzoom, cover } };
}

/** The style a renderer gets (src/serve/rewrite.ts: sources through TileJSON, vector maxzoom 22), flat extrusions. */
function rendererStyle(): StyleSpecification {
  const style = JSON.parse(readFileSync(STYLE_FILE, 'utf8')) as StyleSpecification;
  style.sources = {
    openmaptiles: { type: 'vector', url: `${MEM}/data/openmaptiles.json`, maxzoom: 22 },
    natural_earth_shaded_relief: { type: 'raster', tileSize: 256, url: `${MEM}/data/natural_earth.json` },
  };
  style.glyphs = `${MEM}/fonts/{fontstack}/{range}.pbf`;
  style.sprite = `${MEM}/styles/osm-liberty/sprite`;
  return flattenExtrusions(style);
}

/**
 * The page: maplibre-gl with a resource store in memory, and a driver that draws frames as the service's page does
 * (src/render/backends/chromium-page.ts, render(): repaint loop off, jumpTo, wait until settled, one redraw) and
 * encodes each tile of the frame to PNG in the page. Plain JavaScript text: it runs in the browser.
 */
function pageHtml(): string {
  return `<!doctype html>
<html><head><meta charset="utf-8"><title>renderer floor</title>
<style>html,body{margin:0;padding:0;overflow:hidden}#map{position:absolute;left:0;top:0;width:512px;height:512px;visibility:hidden}</style>
</head><body><div id="map"></div>
<script type="module">
import * as ml from './maplibre/maplibre-gl.mjs';
${PNG_WRITER}
${ENCODER_TABLE_PAGE}
// The service's pages run one MapLibre worker (src/render/backends/chromium.ts, LocalServer workers: 1).
ml.setWorkerCount(1);

const store = new Map();
let tiles = null;
// Answers from the store, empty answers (tiles outside the archive, as the service answers them) and misses.
const counts = { hits: 0, empty: 0, misses: 0, missed: [] };
const EMPTY = 'empty';

function keyOf(url) {
  const p = url.slice('${MEM}/'.length).split('?')[0];
  if (p === 'data/openmaptiles.json') return 'tilejson/openmaptiles';
  if (p === 'data/natural_earth.json') return 'tilejson/natural_earth';
  let m = /^data\\/openmaptiles\\/(\\d+)\\/(\\d+)\\/(\\d+)\\.pbf$/.exec(p);
  if (m) {
    const z = +m[1], x = +m[2], y = +m[3];
    const az = Math.min(z, tiles.maxzoom), k = 2 ** (z - az);
    const c = tiles.cover[az];
    const ax = Math.floor(x / k), ay = Math.floor(y / k);
    if (!c || ax < c.x0 || ax >= c.x1 || ay < c.y0 || ay >= c.y1) return EMPTY;
    return z <= tiles.maxzoom ? 'tile/' + z : 'tile/' + z + '/' + (x - ax * k) + '/' + (y - ay * k);
  }
  m = /^data\\/natural_earth\\/(\\d+\\/\\d+\\/\\d+)\\.png$/.exec(p);
  if (m) return 'relief/' + m[1];
  m = /^fonts\\/([^/]+)\\/(\\d+-\\d+)\\.pbf$/.exec(p);
  if (m) return 'glyphs/' + decodeURIComponent(m[1]) + '/' + m[2];
  m = /^styles\\/osm-liberty\\/(sprite(?:@2x)?\\.(?:json|png))$/.exec(p);
  if (m) return m[1];
  return undefined;
}

ml.addProtocol('mem', async (params) => {
  const key = keyOf(params.url);
  if (key === EMPTY) {
    counts.empty++;
    return { data: new ArrayBuffer(0) };
  }
  const bytes = key === undefined ? undefined : store.get(key);
  if (!bytes) {
    counts.misses++;
    if (counts.missed.length < 20) counts.missed.push(params.url);
    throw new Error('not in the store: ' + params.url);
  }
  counts.hits++;
  if (params.type === 'json') return { data: JSON.parse(new TextDecoder().decode(bytes)) };
  if (params.type === 'string') return { data: new TextDecoder().decode(bytes) };
  // A copy: MapLibre may transfer the buffer to its worker, which would empty the store's.
  return { data: bytes.slice().buffer };
});

// The store's bytes, fetched from the bench's static server once, before anything is timed.
async function preload() {
  const index = await (await fetch('./store.json')).json();
  const blob = new Uint8Array(await (await fetch('./store.bin')).arrayBuffer());
  for (const [key, at, n] of index.entries) store.set(key, blob.slice(at, at + n));
  tiles = index.tiles;
  let bytes = 0;
  for (const b of store.values()) bytes += b.byteLength;
  return { entries: store.size, bytes };
}

function canary() {
  const c = document.createElement('canvas');
  const gl = c.getContext('webgl2');
  if (!gl) return { ok: false, renderer: 'no WebGL2 context' };
  const info = gl.getExtension('WEBGL_debug_renderer_info');
  const renderer = String(info ? gl.getParameter(info.UNMASKED_RENDERER_WEBGL) : gl.getParameter(gl.RENDERER));
  const lose = gl.getExtension('WEBGL_lose_context');
  if (lose) lose.loseContext();
  return { ok: true, renderer };
}

let map = null;
let lastError = '';
let framePixels = null;

// The service page's own wait for a frame (FRAME_WAIT: transformOf, sourcesUpdated, settled).
${FRAME_WAIT}

async function load(style) {
  style.transition = { duration: 0, delay: 0 };
  for (const layer of style.layers || []) {
    if (layer.type === 'raster') layer.paint = Object.assign({}, layer.paint, { 'raster-fade-duration': 0 });
  }
  map = new ml.Map({
    container: 'map',
    style,
    interactive: false,
    attributionControl: false,
    trackResize: false,
    fadeDuration: 0,
    validateStyle: false,
    refreshExpiredTiles: false,
    localIdeographFontFamily: false,
    renderWorldCopies: true,
    minZoom: -2,
    maxZoom: 24,
    maxPitch: 85,
    pixelRatio: 1,
    maxCanvasSize: [${MAX_FRAME}, ${MAX_FRAME}],
    canvasContextAttributes: { preserveDrawingBuffer: true, antialias: false },
    transformConstrain: (center, zoom) => ({ center, zoom }),
  });
  map.triggerRepaint = () => {};
  map.on('error', (e) => { lastError = String(e && e.error && e.error.message || e); });
  await new Promise((resolve) => (map.style && map.style._loaded ? resolve() : map.once('style.load', resolve)));
  map.redraw();
}

// One frame: drawn as the service's page draws it, then every tile of it cut from the canvas and encoded to PNG.
async function render(job, keep) {
  const t1 = performance.now();
  const box = map.getContainer();
  const w = job.width + 'px', h = job.height + 'px';
  if (box.style.width !== w || box.style.height !== h) {
    box.style.width = w;
    box.style.height = h;
    map.resize();
  }
  if (map.getPixelRatio() !== job.ratio) map.setPixelRatio(job.ratio);
  map.jumpTo({ center: job.center, zoom: job.zoom, bearing: job.bearing, pitch: job.pitch });
  map._sourcesDirty = true;
  await settled(map);
  const t2 = performance.now();
  map._styleDirty = true;
  map._sourcesDirty = true;
  map.redraw();
  const t3 = performance.now();
  // The draw calls above only queue commands for the GPU process, which rasterises them (in software) afterwards:
  // the whole-frame readPixels waits for that and reads the frame once, as the service's page does; each tile is
  // then written by the service page's own PNG writer (PNG_WRITER: unfiltered rows, the browser's zlib).
  const gl = map.painter.context.gl;
  const W = gl.drawingBufferWidth, H = gl.drawingBufferHeight;
  // One buffer for every frame, as the service's page keeps one.
  if (!framePixels || framePixels.length < W * H * 4) framePixels = new Uint8Array(W * H * 4);
  const pixels = framePixels.subarray(0, W * H * 4);
  gl.readPixels(0, 0, W, H, gl.RGBA, gl.UNSIGNED_BYTE, pixels);
  const t3r = performance.now();
  useDeflate(job.deflate);
  const blobs = await Promise.all(job.tiles.map((r) => pngTile(pixels, W, H, r, !job.alpha, job.level)));
  const t5 = performance.now();
  // Frames for the encoder table (floor-encoders.ts) keep a copy of their pixels.
  if (keep === 'table') keepFrame(pixels, W, H, job.tiles, !job.alpha);
  const out = { settle: t2 - t1, draw: t3 - t2, raster: t3r - t3, encode: t5 - t3r, bytes: blobs.map((b) => b.size), lastError };
  // For the PNG comparison after the timed pass only: the encoded tiles themselves, and the same tiles encoded by
  // Chromium's own PNG encoder (OffscreenCanvas.convertToBlob from 2D canvases of the same kind), with its time.
  if (keep === true) {
    const bytesOf = (list) => Promise.all(list.map(async (b) => Array.from(new Uint8Array(await b.arrayBuffer()))));
    out.pngs = await bytesOf(blobs);
    const canvas = map.getCanvas();
    const t6 = performance.now();
    // The writer timed again on its own, the frame already read back (the timed pass's encode includes no readback
    // either, but shares the moment with the next frame's work in the other page).
    await Promise.all(job.tiles.map((r) => pngTile(pixels, W, H, r, !job.alpha, job.level)));
    out.sameEncode = performance.now() - t6;
    const t7 = performance.now();
    const other = await Promise.all(job.tiles.map((r) => {
      const oc = new OffscreenCanvas(r.width, r.height);
      oc.getContext('2d', { alpha: job.alpha }).drawImage(canvas, r.left, r.top, r.width, r.height, 0, 0, r.width, r.height);
      return oc.convertToBlob({ type: 'image/png' });
    }));
    out.otherEncode = performance.now() - t7;
    out.otherPngs = await bytesOf(other);
  }
  return out;
}

// A page's frames, one after the other.
async function run(jobs) {
  const out = [];
  for (const job of jobs) out.push(await render(job, false));
  return out;
}

// Fresh tile caches (the timed pass starts with none); the store, the style and the compiled shaders stay.
function clearTiles() {
  for (const id of Object.keys(map.style.tileManagers)) map.style._clearSource(id);
  counts.hits = counts.empty = counts.misses = 0;
  counts.missed = [];
}

window.__floor = { preload, load, render, run, clearTiles, counts: () => counts, encodeKept };
const deflater = await loadDeflate('${DEFLATE_MODULE}');
// The other deflates a pass may ask for: CompressionStream with a plain rows buffer (the page before issue 49), and
// fflate with the hash table the page gave it before libdeflate (mem 6), its rows in a plain buffer as well.
const deflates = { libdeflate: { levelDeflate, rowsBuffer } };
const plain = rowsBuffer;
deflates.stream = { levelDeflate: null, rowsBuffer: plain };
try {
  const fflate = await import('./encoder/fflate.mjs');
  deflates.fflate = { levelDeflate: (rows, level) => fflate.zlibSync(rows, { level, mem: 6 }), rowsBuffer: plain };
} catch (e) {
  deflateProblem += ' fflate: ' + e.message;
}
function useDeflate(kind) {
  const d = deflates[kind];
  if (!d) throw new Error('no deflate ' + kind + ' in the page');
  levelDeflate = d.levelDeflate;
  rowsBuffer = d.rowsBuffer;
}
window.__floorReady = Object.assign(canary(), deflater);
</script></body></html>`;
}

/** The static server: the page, maplibre's two files and the store for the preload; it counts what it serves. */
async function staticServer(store: Store): Promise<{ origin: string; served: () => number; raw: RawUploads; close: () => Promise<void> }> {
  const dist = path.join(path.dirname(createRequire(import.meta.url).resolve('maplibre-gl/package.json')), 'dist');
  const index: [string, number, number][] = [];
  let at = 0;
  for (const [k, v] of store.entries) {
    index.push([k, at, v.byteLength]);
    at += v.byteLength;
  }
  const blob = Buffer.concat([...store.entries.values()]);
  const files: Record<string, [string, Buffer]> = {
    '/page.html': ['text/html; charset=utf-8', Buffer.from(pageHtml())],
    '/maplibre/maplibre-gl.mjs': ['text/javascript', readFileSync(path.join(dist, 'maplibre-gl.mjs'))],
    '/maplibre/maplibre-gl-worker.mjs': ['text/javascript', readFileSync(path.join(dist, 'maplibre-gl-worker.mjs'))],
    '/store.json': ['application/json', Buffer.from(JSON.stringify({ entries: index, tiles: store.tiles }))],
    '/store.bin': ['application/octet-stream', blob],
    [`/${DEFLATE_MODULE.slice(2)}`]: ['text/javascript', (await pageAsset(DEFLATE_MODULE.slice(2)))!],
    '/encoder/fflate.mjs': ['text/javascript', readFileSync(path.join(path.dirname(createRequire(import.meta.url).resolve('fflate/package.json')), 'esm/browser.js'))],
  };
  let served = 0;
  const raw: RawUploads = { frames: [], nodeCpuMs: 0 };
  const server = http.createServer((req, res) => {
    served++;
    // The encoder table's "raw pixels to Node" row: frames uploaded as the service's pages upload them.
    if (req.method === 'POST' && req.url === '/raw') {
      const c0 = process.cpuUsage();
      const chunks: Buffer[] = [];
      req.on('data', (c: Buffer) => chunks.push(c));
      req.on('end', () => {
        raw.frames.push(Buffer.concat(chunks));
        const c = process.cpuUsage(c0);
        raw.nodeCpuMs += (c.user + c.system) / 1000;
        res.writeHead(204).end();
      });
      return;
    }
    const f = files[new URL(req.url ?? '/', 'http://127.0.0.1').pathname];
    if (!f) return void res.writeHead(404).end();
    res.writeHead(200, { 'Content-Type': f[0], 'Content-Length': f[1].byteLength }).end(f[1]);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return {
    origin: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    served: () => served,
    raw,
    close: () => {
      server.closeAllConnections();
      return new Promise((resolve) => server.close(() => resolve()));
    },
  };
}

/** The job a page gets for a frame: the camera and the device-pixel rectangle of every tile to encode. */
function jobOf(plan: MetatilePlan, alpha: boolean, e: FloorEncoder) {
  return { ...plan.frame, alpha, level: e.level, deflate: e.deflate, tiles: cells(plan).map(([x, y]) => tileRect(plan, x, y)) };
}

/** The browser's own process (the root of its tree): the chromium executable among this process's children. */
function browserPid(executable: string): number {
  for (const e of readdirSync('/proc')) {
    if (!/^\d+$/.test(e)) continue;
    try {
      const st = readFileSync(`/proc/${e}/stat`, 'utf8');
      if (Number(st.slice(st.lastIndexOf(')') + 2).split(' ')[1]) !== process.pid) continue;
      if (readFileSync(`/proc/${e}/cmdline`, 'utf8').split('\0')[0] === executable) return Number(e);
    } catch {
      /* gone */
    }
  }
  throw new Error(`no ${executable} process among this process's children`);
}

interface FrameStats {
  settle: number;
  draw: number;
  raster: number;
  encode: number;
  bytes: number[];
  lastError: string;
  pngs?: number[][];
  otherPngs?: number[][];
  otherEncode?: number;
  sameEncode?: number;
}

interface StoreCounts {
  hits: number;
  empty: number;
  misses: number;
  missed: string[];
}

/** One timed pass of the workload with one encoder. */
export interface FloorPass {
  encoder: FloorEncoder;
  round: number;
  seconds: number;
  split: CpuSplit;
  pngBytes: number;
  phases: { settle: number; draw: number; raster: number; encode: number };
  timed: StoreCounts;
  /** Requests the static server answered during the timed pass (none expected). */
  servedTimed: number;
  /** CPU seconds of the busiest threads of the browser tree during the timed pass, "process kind/thread name". */
  threads: [string, number][];
  /** Kernel time and minor page faults of the renderer and GPU processes (those alive through the pass). */
  kernel: Map<ProcessKind, KernelShare>;
  /** Share of the machine's CPU time the hypervisor stole during the timed pass. */
  steal: number;
  /** The browser tree's largest resident and proportional set sizes (bytes) sampled during the timed pass. */
  peak: { rss: number; pss: number };
  /** Mesa's llvmpipe rasteriser threads ("llvmpipe-N") in the browser tree after the timed pass. */
  lpThreads: number;
}

/** The floor: every pass, and (spread at the top level) the last pass, the last encoder's (the service's). */
export interface FloorResult extends FloorPass {
  options: FloorOptions;
  renderer: string;
  frames: number;
  /** Distinct tiles asked for (what the browse bench counts). */
  tiles: number;
  /** Tiles drawn and encoded (a lone tile's 2x2 metatile draws three more). */
  drawn: number;
  warmup: StoreCounts;
  storeBytes: number;
  png: PngCheck | undefined;
  passes: FloorPass[];
  table: EncoderRow[] | undefined;
}

interface PngCheck {
  tiles: number;
  /** IHDR colour types seen (2 RGB, 6 RGBA) with their counts. */
  colourTypes: Record<number, number>;
  opaque: number;
  browserBytes: number;
  sharpBytes: number;
  /** The same tiles from Chromium's own PNG encoder (convertToBlob): colour types, bytes, the encode's time. */
  otherTypes: Record<number, number>;
  otherBytes: number;
  encodeMs: number;
  otherEncodeMs: number;
}

/** Resident bytes of a process tree (every process's RSS summed: shared pages count in each). */
function treeRss(root: number): number {
  let total = 0;
  for (const pid of processTree(root).keys()) {
    try {
      const pages = Number(readFileSync(`/proc/${pid}/statm`, 'utf8').split(' ')[1]);
      total += pages * 4096;
    } catch {
      /* ended meanwhile */
    }
  }
  return total;
}

/**
 * The browser tree's peak memory while the pages draw: RSS and PSS sampled every half second (PSS reads every
 * mapping of every process, too slow to sample more often; the peak is a floor of the true one).
 */
function memorySampler(root: number): { stop: () => { rss: number; pss: number } } {
  const peak = { rss: 0, pss: 0 };
  const sample = () => {
    peak.rss = Math.max(peak.rss, treeRss(root));
    peak.pss = Math.max(peak.pss, treePss(root));
  };
  sample();
  const timer = setInterval(sample, 500);
  return {
    stop: () => {
      clearInterval(timer);
      sample();
      return peak;
    },
  };
}

/** Threads named "llvmpipe-N" (Mesa's rasteriser workers, LP_NUM_THREADS of them per context) under `root`. */
function lpThreadCount(root: number): number {
  let n = 0;
  for (const pid of processTree(root).keys()) {
    try {
      for (const t of readdirSync(`/proc/${pid}/task`)) if (/^llvmpipe-\d+$/.test(readFileSync(`/proc/${pid}/task/${t}/comm`, 'utf8').trim())) n++;
    } catch {
      /* ended meanwhile */
    }
  }
  return n;
}

/** Chromium's PNGs of one frame against sharp's of the same pixels, at the service's settings (src/render/image.ts). */
async function comparePng(r: FrameStats): Promise<PngCheck> {
  const pngs = r.pngs ?? [];
  const out: PngCheck = { tiles: pngs.length, colourTypes: {}, opaque: 0, browserBytes: 0, sharpBytes: 0, otherTypes: {}, otherBytes: 0, encodeMs: r.sameEncode ?? NaN, otherEncodeMs: r.otherEncode ?? NaN };
  for (const p of r.otherPngs ?? []) {
    out.otherTypes[p[25]] = (out.otherTypes[p[25]] ?? 0) + 1;
    out.otherBytes += p.length;
  }
  for (const p of pngs) {
    const png = Buffer.from(p);
    // Byte 25: the colour type in IHDR (8 signature + 4 length + 4 type + 4 width + 4 height + 1 depth).
    out.colourTypes[png[25]] = (out.colourTypes[png[25]] ?? 0) + 1;
    out.browserBytes += png.byteLength;
    const { data, info } = await sharp(png).ensureAlpha().raw().toBuffer({ resolveWithObject: true });
    let opaque = true;
    for (let i = 3; i < data.length && opaque; i += 4) opaque = data[i] === 255;
    if (opaque) out.opaque++;
    const pipeline = sharp(data, { raw: { width: info.width, height: info.height, channels: 4 } });
    out.sharpBytes += (await (opaque ? pipeline.removeAlpha() : pipeline).png({ compressionLevel: 3, adaptiveFiltering: false }).toBuffer()).byteLength;
  }
  return out;
}

/** One timed pass of the workload's frames with one encoder: its CPU, time and bytes. */
async function timedPass(pages: Page[], frames: FloorFrame[], o: FloorOptions, e: FloorEncoder, round: number, root: number, server: { served: () => number }): Promise<FloorPass> {
  const lists = pages.map((_, i) => frames.filter((f) => f.page === i).map((f) => jobOf(f.plan, o.alpha, e)));
  const served0 = server.served();
  const cpu = cpuByKind(root);
  const threads0 = threadCpu(root);
  const kernel = kernelByKind(root);
  const steal0 = cpuTimes();
  const t0 = performance.now();
  const memory = memorySampler(root);
  const results = await Promise.all(pages.map((page, i) => page.evaluate(`window.__floor.run(${JSON.stringify(lists[i])})`) as Promise<FrameStats[]>));
  const seconds = (performance.now() - t0) / 1000;
  const peak = memory.stop();
  const lpThreads = lpThreadCount(root);
  const kernelShares = kernel();
  const split = cpu.end();
  const steal = stealShare(steal0, cpuTimes());
  const threads = [...threadCpu(root)].map(([k, v]): [string, number] => [k, v - (threads0.get(k) ?? 0)]).sort((a, b) => b[1] - a[1]).slice(0, 8);
  const servedTimed = server.served() - served0;
  const timed: StoreCounts = { hits: 0, empty: 0, misses: 0, missed: [] };
  for (const page of pages) {
    const c = (await page.evaluate('window.__floor.counts()')) as StoreCounts;
    timed.hits += c.hits;
    timed.empty += c.empty;
    timed.misses += c.misses;
    timed.missed.push(...c.missed);
  }
  const all = results.flat();
  const mean = (k: 'settle' | 'draw' | 'raster' | 'encode') => all.reduce((n, r) => n + r[k], 0) / Math.max(1, all.length);
  const bytes = all.flatMap((r) => r.bytes);
  const errors = [...new Set(all.map((r) => r.lastError).filter(Boolean))];
  if (errors.length) console.log(`floor: map errors: ${errors.join('; ')}`);
  return {
    encoder: e,
    round,
    seconds,
    split,
    pngBytes: bytes.reduce((a, b) => a + b, 0) / Math.max(1, bytes.length),
    phases: { settle: mean('settle'), draw: mean('draw'), raster: mean('raster'), encode: mean('encode') },
    timed,
    servedTimed,
    threads,
    kernel: kernelShares,
    steal,
    peak,
    lpThreads,
  };
}

/** Runs the floor: one browser, its pages, the warm-up, the timed pass; see the header. */
export async function runFloor(o: FloorOptions): Promise<FloorResult> {
  const executable = findChromium();
  if (!executable) throw new Error('no Chromium found (CHROMIUM_PATH, or the Debian package chromium)');
  const style = rendererStyle();
  const store = await buildStore(o.data, style);
  const { frames, asked, drawn } = floorFrames(o.users, o.seed, o.pages);
  const server = await staticServer(store);
  const launch = glLaunch(o.gl);
  const { chromium } = await import('playwright-core');
  const browser: Browser = await chromium.launch({ executablePath: executable, args: [...CHROMIUM_FLAGS, ...launch.args, ...(process.env.BENCH_FLOOR_SWITCHES ?? '').split(' ').filter(Boolean)], env: { ...process.env, ...launch.env }, timeout: 60_000 });
  try {
    const root = browserPid(executable);
    const pages: Page[] = [];
    let renderer = '';
    let storeBytes = 0;
    for (let i = 0; i < o.pages; i++) {
      const page = await browser.newPage({ viewport: { width: 512, height: 512 }, deviceScaleFactor: 1 });
      await page.goto(`${server.origin}/page.html`);
      await page.waitForFunction('window.__floorReady !== undefined');
      const canary = (await page.evaluate('window.__floorReady')) as { ok: boolean; renderer: string };
      // The floor is measured on the stack asked for: a quiet fallback to SwiftShader would be a different floor.
      if (!canary.ok || !launch.renderer.test(canary.renderer)) {
        throw new Error(`WebGL runs on "${canary.renderer}", not ${o.gl} (${launch.renderer}): are Mesa's drivers installed (mesa-vulkan-drivers, libegl-mesa0)?`);
      }
      renderer = canary.renderer;
      storeBytes = ((await page.evaluate('window.__floor.preload()')) as { bytes: number }).bytes;
      await page.evaluate(`window.__floor.load(${JSON.stringify(style)})`);
      pages.push(page);
    }
    // Warm-up: a 2x2 frame at z12 and one at the deepest zoom, just outside the browse area (inside the archive),
    // with every encoder (its code compiled too).
    for (const page of pages) {
      for (const z of [BROWSE.minZoom, BROWSE.maxZoom]) {
        const a = areaAt(BROWSE, z);
        const plan = planMetatile({ z, x: a.x0 - 2, y: a.y0 - 2, base: BASE, scale: 1 }, 2, TILE_BUFFER, MAX_FRAME);
        for (const e of o.encoders) await page.evaluate(`window.__floor.render(${JSON.stringify(jobOf(plan, o.alpha, e))}, false)`);
      }
    }
    const warmup = (await pages[0].evaluate('window.__floor.counts()')) as StoreCounts;

    // The timed passes: every encoder in turn, each round; the same frames each time, from empty tile caches.
    const passes: FloorPass[] = [];
    for (let round = 1; round <= o.rounds; round++) {
      for (const e of o.encoders) {
        for (const page of pages) await page.evaluate('window.__floor.clearTiles()');
        passes.push(await timedPass(pages, frames, o, e, round, root, server));
      }
    }

    // After the timed passes: one frame of several tiles drawn again, its PNGs (the last encoder's) compared with sharp's.
    const last = o.encoders[o.encoders.length - 1];
    const sample = frames.find((f) => cells(f.plan).length >= 4) ?? frames[0];
    let png: PngCheck | undefined;
    if (sample) {
      const r = (await pages[sample.page].evaluate(`window.__floor.render(${JSON.stringify(jobOf(sample.plan, o.alpha, last))}, true)`)) as FrameStats;
      png = await comparePng(r);
    }
    // The encoder table: the first frames of page 1 up to o.table tiles, drawn again and kept in the page.
    let table: EncoderRow[] | undefined;
    if (o.table > 0) {
      let n = 0;
      for (const f of frames.filter((x) => x.page === 0)) {
        if (n >= o.table) break;
        await pages[0].evaluate(`window.__floor.render(${JSON.stringify(jobOf(f.plan, o.alpha, last))}, 'table')`);
        n += cells(f.plan).length;
      }
      table = await encoderTable(pages[0], root, server.raw);
    }
    const main = passes[passes.length - 1];
    return { options: o, renderer, frames: frames.length, tiles: asked, drawn, warmup, storeBytes, png, passes, table, ...main };
  } finally {
    await browser.close().catch(() => {});
    await server.close();
  }
}

/** The floor as a block of lines, labelled as such. */
export function formatFloor(r: FloorResult): string[] {
  const o = r.options;
  const lines = [
    `floor: the renderer alone (same Chromium, switches, maplibre-gl, style and frames; every resource in page memory; PNG encoded in the page; no server)`,
    `  data "${o.data}", ${o.users} user(s), seed ${o.seed}; 1 browser, ${o.pages} page(s); GL stack ${o.gl}, LP_NUM_THREADS ${lpSetting(o.gl)}; WebGL on ${r.renderer}; PNGs from canvases ${o.alpha ? 'with alpha (RGBA)' : 'without alpha (RGB)'}`,
    `  frames ${r.frames}; tiles ${r.tiles} (distinct tiles asked for); tiles drawn and encoded ${r.drawn}`,
    `  wall ${fmt(r.seconds, 1)} s; browser tree CPU ${fmt(r.split.total, 1)} s; CPU per tile ${fmt((1000 * r.split.total) / r.tiles)} ms; tiles/CPU-s ${fmt(r.tiles / r.split.total, 2)}; CPU stolen by the hypervisor meanwhile ${fmt(100 * r.steal, 1)} %`,
    `  ${formatCpuSplit(r.split)}`,
    `  memory of the browser tree while drawing (peak of half-second samples): PSS ${fmt(r.peak.pss / 1e6)} MB (${fmt(r.peak.pss / 1e6 / o.pages)} MB per page), RSS summed over its processes ${fmt(r.peak.rss / 1e6)} MB; llvmpipe rasteriser threads ${r.lpThreads}`,
    `  per frame (mean, in the page): settle (resources, parsing, layout) ${fmt(r.phases.settle)} ms, draw ${fmt(r.phases.draw)} ms, raster and readback (the whole-frame readPixels) ${fmt(r.phases.raster)} ms, encode ${fmt(r.phases.encode)} ms; PNG ${fmt(r.pngBytes / 1000, 1)} KB per tile drawn`,
    `  store: ${fmt(r.storeBytes / 1e6, 1)} MB per page; timed pass: ${r.timed.hits} answers from it, ${r.timed.empty} empty (outside the archive, as the service answers), ${r.timed.misses} misses` +
      `${r.timed.missed.length ? ` (${r.timed.missed.slice(0, 5).join(', ')})` : ''}; warm-up misses (page 1) ${r.warmup.misses}; static server requests while timed ${r.servedTimed}`,
  ];
  if (r.png) {
    const p = r.png;
    const types = (c: Record<number, number>) => Object.entries(c).map(([t, n]) => `${t === '6' ? 'RGBA (6)' : t === '2' ? 'RGB (2)' : `type ${t}`} x${n}`).join(', ');
    const kb = (b: number) => `${fmt(b / p.tiles / 1000, 1)} KB`;
    lines.push(
      `  PNG check (after the timed pass), ${p.tiles} tiles of one frame, ${p.opaque} of them opaque: the page's PNG writer (the service's) ${types(p.colourTypes)}, ${kb(p.browserBytes)} per tile, ${fmt(p.encodeMs)} ms for the frame's tiles; ` +
        `Chromium's own encoder (convertToBlob) ${types(p.otherTypes)}, ${kb(p.otherBytes)}, ${fmt(p.otherEncodeMs)} ms; ` +
        `sharp of the same pixels (level 3, no adaptive filtering, RGB when opaque: tile_encoder = "sharp") ${kb(p.sharpBytes)} (the page's ${fmt(p.browserBytes / p.sharpBytes, 2)}x that)`,
    );
  }
  if (r.threads.length) {
    lines.push(`  kernel share and page faults per tile: ${kernelShares(r.kernel, r.tiles)}`);
    lines.push(`  CPU ms per tile by thread (top ${r.threads.length}): ${r.threads.map(([k, s]) => `${k} ${fmt((1000 * s) / r.tiles)}`).join(', ')}`);
  }
  if (r.passes.length > 1) lines.push(...formatPasses(r));
  if (r.table) lines.push(...formatEncoderTable(r.table));
  return lines;
}

/** "renderer 52 ms in the kernel of 205, 3,498 faults; gpu …": per tile, for the processes that lived through a pass. */
function kernelShares(kernel: Map<ProcessKind, KernelShare>, tiles: number): string {
  return (['renderer', 'gpu'] as const)
    .map((k) => {
      const s = kernel.get(k);
      return s ? `${k} ${fmt((1000 * s.system) / tiles)} ms in the kernel of ${fmt((1000 * (s.system + s.user)) / tiles)}, ${fmt(s.faults / tiles)} faults` : `${k} -`;
    })
    .join('; ');
}

/** Every timed pass on a line, then each encoder's mean floor and the first encoder's over it (the target: 1.15x). */
function formatPasses(r: FloorResult): string[] {
  const perTile = (p: FloorPass) => (1000 * p.split.total) / r.tiles;
  const lines = [`  timed passes (the same ${r.frames} frames each, pages' tile caches emptied before each):`];
  for (const p of r.passes) {
    lines.push(
      `    round ${p.round}, ${p.encoder.name}: CPU per tile ${fmt(perTile(p))} ms (renderer ${fmt((1000 * p.split.renderer) / r.tiles)}, gpu ${fmt((1000 * p.split.gpu) / r.tiles)}, browser ${fmt((1000 * p.split.browser) / r.tiles)}); ` +
        `encode ${fmt(p.phases.encode)} ms per frame; PNG ${fmt(p.pngBytes / 1000, 1)} KB per tile drawn; wall ${fmt(p.seconds, 1)} s; steal ${fmt(100 * p.steal, 1)} %; ${kernelShares(p.kernel, r.tiles)}`,
    );
  }
  const byEncoder = r.options.encoders.map((e) => {
    const mine = r.passes.filter((p) => p.encoder.name === e.name);
    return { e, ms: mine.reduce((n, p) => n + perTile(p), 0) / mine.length, kb: mine.reduce((n, p) => n + p.pngBytes, 0) / mine.length / 1000 };
  });
  const first = byEncoder[0];
  for (const b of byEncoder.slice(1)) {
    lines.push(`  floor with ${first.e.name} / floor with ${b.e.name}: ${fmt(first.ms)} / ${fmt(b.ms)} ms per tile = ${fmt(first.ms / b.ms, 2)}x; bytes ${fmt(b.kb, 1)} / ${fmt(first.kb, 1)} KB per tile = ${fmt(b.kb / first.kb, 3)}`);
  }
  return lines;
}

/** What the browser's LP_NUM_THREADS is for a stack (glLaunch's default unless this process's environment sets it). */
function lpSetting(gl: GlStack): string {
  return gl === 'swiftshader' ? 'n/a' : (glLaunch(gl).env.LP_NUM_THREADS ?? 'unset');
}

/** The figures one comparison row needs, for scripts/bench-debian13.sh (one JSON object per run). */
export function floorRow(r: FloorResult): Record<string, number | string> {
  return {
    gl: r.options.gl,
    lp: lpSetting(r.options.gl),
    renderer: r.renderer,
    msPerTile: (1000 * r.split.total) / r.tiles,
    renderer_ms: (1000 * r.split.renderer) / r.tiles,
    gpu_ms: (1000 * r.split.gpu) / r.tiles,
    wall: r.seconds,
    pssMB: r.peak.pss / 1e6,
    rssMB: r.peak.rss / 1e6,
    lpThreads: r.lpThreads,
    steal: r.steal,
  };
}

/** The floor's options from the browse bench's environment. */
export function floorOptions(): FloorOptions {
  const users = (process.env.BENCH_BROWSE_USERS ?? '1,4').split(',').map(Number).filter((n) => n > 0);
  return {
    data: process.env.BENCH_BROWSE_DATA ?? 'paris',
    users: Math.max(...users),
    seed: envNumber('BENCH_BROWSE_SEED', 1),
    pages: envNumber('BENCH_FLOOR_PAGES', 2),
    alpha: process.env.BENCH_FLOOR_ALPHA === '1',
    encoders: parseEncoders(process.env.BENCH_FLOOR_ENCODERS ?? 'stream,3'),
    rounds: envNumber('BENCH_FLOOR_ROUNDS', 1),
    table: process.env.BENCH_FLOOR_ENCODER_TABLE === '1' ? envNumber('BENCH_FLOOR_TABLE_TILES', 32) : 0,
    gl: floorGl(process.env.BENCH_FLOOR_GL),
  };
}

/** BENCH_FLOOR_GL: one of the stacks, lavapipe when unset. */
function floorGl(setting: string | undefined): GlStack {
  if (setting === undefined || setting === '') return 'lavapipe';
  const stack = AUTO_ORDER.find((s) => s === setting);
  if (!stack) throw new Error(`BENCH_FLOOR_GL must be one of ${AUTO_ORDER.join(', ')}, not "${setting}"`);
  return stack;
}

// Run directly (not imported by browse.bench.ts).
if (process.argv[1] && import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href) {
  const r = await runFloor(floorOptions());
  for (const line of formatFloor(r)) console.log(line);
  console.log(`floor-row: ${JSON.stringify(floorRow(r))}`);
}
