// The page a Chromium renderer loads: maplibre-gl (from the npm package, served by the renderer's local server)
// and a small driver that renders one frame per call with a single draw.
//
// Why not `map.once('idle')`: MapLibre repaints on every tile arrival and again for symbol placement, so a
// frame waited for with `idle` costs about three full draws. Here the map's own repaint loop is switched off
// (`triggerRepaint` does nothing); after a camera jump the driver asks the sources for the tiles the new view
// needs, waits until they (and their glyphs and icons) are loaded and laid out, then draws exactly once with
// `redraw()` and reads the pixels in the same task. `fadeDuration: 0` makes that one draw place every label.
//
// The map is hidden (visibility: hidden): WebGL draws it all the same, and the compositor skips a full-frame
// composite per frame (about 15 ms of GPU-process CPU for a 512 px frame, measured).
//
// After an expiry the page keeps its style and drops only the source tiles the expiry reached (EXPIRED_REFRESH).
//
// Kept as plain JavaScript text (not a bundled function) because the bundler's helpers do not exist in the page.

import { TILE_REVISION_PARAM } from '../resources.js';

export interface PageOptions {
  /** MapLibre web workers per page (tile parsing and layout). */
  workers: number;
  /** Largest canvas edge in pixels. */
  maxCanvas: number;
}

/** Where a page finds the deflate it writes PNGs with (libdeflate in WebAssembly, served by local-server.ts). */
export const DEFLATE_MODULE = './encoder/libdeflate.mjs';

/**
 * The page's PNG writer (plain JavaScript for a page): `pngTile(pixels, W, H, rect, opaque, level)` turns a region
 * of a readPixels frame into a PNG Blob, `pngOf(rows, width, height, opaque, level)` unfiltered rows;
 * `loadDeflate(url)` loads the low-level deflate once, before the first frame. The floor bench
 * (bench/floor.bench.ts) puts the same text in its page, so both encode alike.
 *
 * Why libdeflate at a zlib level rather than the browser's CompressionStream: CompressionStream always deflates at
 * zlib's level 6, and on map tiles that costs about twice level 3 for 1-2 % fewer bytes (docs/rendering.md,
 * "Encoding"). libdeflate (the npm package's WebAssembly build, one self-contained ES module) takes a level and,
 * compiled to WebAssembly, deflated map tiles in half the time fflate's plain JavaScript took for the same bytes.
 * Rows stay unfiltered: the "up" filter that suits shaded relief made map tiles 20-30 % larger (flat fills repeat
 * the row above exactly, which deflate finds as matches one row back; filtered, they become runs of zeros broken by
 * every anti-aliased edge). A page whose module does not load (level undefined, or loadDeflate failed) deflates with
 * CompressionStream.
 */
export const PNG_WRITER = `const CRC_TABLE = (() => {
  const t = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    t[n] = c >>> 0;
  }
  return t;
})();

function pngChunk(type, data) {
  const out = new Uint8Array(12 + data.length);
  const view = new DataView(out.buffer);
  view.setUint32(0, data.length);
  for (let i = 0; i < 4; i++) out[4 + i] = type.charCodeAt(i);
  out.set(data, 8);
  let c = 0xffffffff;
  for (let i = 4; i < 8 + data.length; i++) c = CRC_TABLE[(c ^ out[i]) & 255] ^ (c >>> 8);
  view.setUint32(8 + data.length, (c ^ 0xffffffff) >>> 0);
  return out;
}

const PNG_SIGNATURE = new Uint8Array([137, 80, 78, 71, 13, 10, 26, 10]);

// The deflate at a level once loadDeflate has loaded it: levelDeflate(rows, level) gives the zlib stream, and
// rowsBuffer(size) the bytes the next tile's rows are built in (inside the WebAssembly memory, so they are not
// copied there). Until then, or when the module could not be loaded, CompressionStream and a plain buffer.
let levelDeflate = null;
let deflateProblem = '';
let plainRows = null;
let rowsBuffer = (size) => {
  if (!plainRows || plainRows.length < size) plainRows = new Uint8Array(size);
  return plainRows.subarray(0, size);
};

// libdeflate's module instantiates its WebAssembly synchronously. One compressor per level and one input and one
// output block are kept for the page's life: fflate, the page's deflate before, allocated its tables and output for
// every tile, and the renderer paid for that memory in page faults (bench/RESULTS.md, the floor's kernel share).
function libdeflateWriter(lib) {
  const compressors = [];
  let input = 0, inputSize = 0, output = 0, outputSize = 0;
  const fit = (size) => {
    if (size <= inputSize) return;
    // Both blocks are grown together, before any rows are built: a later allocation could grow the memory and
    // detach the view the rows were written in. When the memory cannot grow, no block is kept, so the next tile
    // allocates again rather than write past a smaller one.
    if (input) lib._free(input);
    if (output) lib._free(output);
    input = output = inputSize = outputSize = 0;
    const bound = lib._libdeflate_zlib_compress_bound(0, size);
    const i = lib._malloc(size);
    const o = lib._malloc(bound);
    if (!i || !o) {
      if (i) lib._free(i);
      if (o) lib._free(o);
      throw new Error('libdeflate could not allocate ' + (size + bound) + ' bytes');
    }
    input = i;
    output = o;
    inputSize = size;
    outputSize = bound;
  };
  rowsBuffer = (size) => {
    fit(size);
    return lib.HEAPU8.subarray(input, input + size);
  };
  levelDeflate = (rows, level) => {
    if (!compressors[level]) compressors[level] = lib._libdeflate_alloc_compressor(level);
    const c = compressors[level];
    if (!c) throw new Error('libdeflate has no compression level ' + level);
    // Rows built elsewhere (the floor bench's table) are copied in.
    if (rows.buffer !== lib.HEAPU8.buffer || rows.byteOffset !== input) {
      fit(rows.length);
      lib.HEAPU8.set(rows, input);
    }
    const n = lib._libdeflate_zlib_compress(c, input, rows.length, output, outputSize);
    if (!n) throw new Error('libdeflate wrote nothing for ' + rows.length + ' bytes of rows');
    return lib.HEAPU8.slice(output, output + n);
  };
}

async function loadDeflate(url) {
  try {
    const m = await import(url);
    if (typeof m.default !== 'function') throw new Error('the module exports no factory');
    const lib = m.default();
    if (typeof lib._libdeflate_zlib_compress !== 'function') throw new Error('the module has no libdeflate_zlib_compress');
    libdeflateWriter(lib);
  } catch (e) {
    deflateProblem = String(e && e.message || e);
  }
  return pngDeflater();
}

// Which deflate the writer uses, for the renderer to report: 'libdeflate', or 'stream' with the reason.
function pngDeflater() {
  return levelDeflate ? { deflate: 'libdeflate', problem: '' } : { deflate: 'stream', problem: deflateProblem };
}

async function zlibOf(rows, level) {
  if (levelDeflate && level !== undefined && level !== null) return levelDeflate(rows, level);
  return new Uint8Array(await new Response(new Blob([rows]).stream().pipeThrough(new CompressionStream('deflate'))).arrayBuffer());
}

// One tile of a frame read back by readPixels (rows bottom to top, premultiplied alpha) as a PNG: rows top to bottom,
// each with filter byte 0, RGB for an opaque style, else RGBA with alpha undone; deflated at zlib level "level" (0-9) by
// libdeflate, or by CompressionStream (its level 6) when level is undefined or libdeflate did not load.
async function pngTile(px, W, H, r, opaque, level) {
  const ch = opaque ? 3 : 4;
  const stride = r.width * ch + 1;
  // The rows are deflated (libdeflate) or copied into a Blob (CompressionStream) before the first await below, so
  // every tile can build them in one buffer.
  const rows = rowsBuffer(stride * r.height);
  for (let y = 0; y < r.height; y++) {
    rows[y * stride] = 0;
    let i = ((H - 1 - (r.top + y)) * W + r.left) * 4;
    let o = y * stride + 1;
    if (opaque) {
      for (let x = 0; x < r.width; x++, i += 4) {
        rows[o++] = px[i];
        rows[o++] = px[i + 1];
        rows[o++] = px[i + 2];
      }
    } else {
      for (let x = 0; x < r.width; x++, i += 4, o += 4) {
        const a = px[i + 3];
        rows[o + 3] = a;
        if (a === 255 || a === 0) {
          rows[o] = px[i];
          rows[o + 1] = px[i + 1];
          rows[o + 2] = px[i + 2];
        } else {
          // c * 255 / a rounded half up, in integers, as the service's own un-premultiply does.
          const half = a >> 1;
          rows[o] = Math.min(255, ((px[i] * 255 + half) / a) | 0);
          rows[o + 1] = Math.min(255, ((px[i + 1] * 255 + half) / a) | 0);
          rows[o + 2] = Math.min(255, ((px[i + 2] * 255 + half) / a) | 0);
        }
      }
    }
  }
  return pngOf(rows, r.width, r.height, opaque, level);
}

// A PNG of unfiltered rows (each led by filter byte 0), 8-bit RGB or RGBA.
async function pngOf(rows, width, height, opaque, level) {
  const zlib = await zlibOf(rows, level);
  const ihdr = new Uint8Array(13);
  const view = new DataView(ihdr.buffer);
  view.setUint32(0, width);
  view.setUint32(4, height);
  ihdr[8] = 8;
  ihdr[9] = opaque ? 2 : 6;
  return new Blob([PNG_SIGNATURE, pngChunk('IHDR', ihdr), pngChunk('IDAT', zlib), pngChunk('IEND', new Uint8Array(0))]);
}
`;

/**
 * How a page waits for a frame with MapLibre's render loop off (plain JavaScript for a page): `settled(map)` resolves
 * once the style, the view's tiles, glyphs and icons are loaded and laid out. The floor bench (bench/floor.bench.ts)
 * puts the same text in its page, so both wait alike.
 */
export const FRAME_WAIT = `function transformOf(m) { return m._camera ? m._camera.transform : m.transform; }

// The render loop is off, so do its source bookkeeping here: when a source finishes loading (a TileJSON
// arrives) MapLibre marks the sources dirty, and the tiles of the view are requested only on the next update.
function sourcesUpdated(m) {
  if (m._sourcesDirty) {
    m._sourcesDirty = false;
    m.style._updateSources(transformOf(m));
  }
}

function settled(m) {
  // Style changes not applied yet (Style.loaded() waits for them) are applied by one update, as a frame would.
  if (m.style && m.style._updatedSources && Object.keys(m.style._updatedSources).length) m.redraw();
  const done = () => {
    sourcesUpdated(m);
    return m.style && m.style.loaded() && m.areTilesLoaded();
  };
  if (done()) return Promise.resolve();
  return new Promise((resolve) => {
    const check = () => {
      if (!done()) return;
      m.off('data', check);
      m.off('error', check);
      clearInterval(timer);
      resolve();
    };
    // Tile arrivals fire 'data'; the interval only covers state changes that fire nothing.
    const timer = setInterval(check, 15);
    m.on('data', check);
    m.on('error', check);
  });
}
`;

/**
 * How a page sizes MapLibre's cache of source tiles out of view (plain JavaScript for a page):
 * `sizeTileCaches(map)` before each frame. MapLibre sizes that cache by the view, five zoom levels' worth of the
 * tiles in view, so a bulk frame (8x8 tiles, 4160 px) would keep about 500 parsed source tiles out of view and the
 * page's memory would grow with the square of the frame's edge, while a seed walking blocks in order reuses only
 * the ring around the next block. Frames up to a person's largest (4x4 tiles of 512 px and a 32 px buffer, 2112
 * px) keep MapLibre's five levels; a larger frame keeps fewer (at least one), so that the cache holds about what a
 * 4x4 frame's holds.
 */
export const TILE_CACHE_SIZING = `const FULL_CACHE_AREA = 2112 * 2112;
function sizeTileCaches(m) {
  const box = m.getContainer();
  const area = box.clientWidth * box.clientHeight;
  const levels = area <= FULL_CACHE_AREA ? 5 : Math.max(1, Math.floor((5 * FULL_CACHE_AREA) / area));
  const managers = m.style.tileManagers || {};
  for (const id of Object.keys(managers)) managers[id]._maxTileCacheZoomLevels = levels;
}`;

/**
 * How a page drops the source tiles an expiry reached (plain JavaScript for a page): `refreshExpired(map, url,
 * style, since)` lists the tiles each tiled source holds (in view and in MapLibre's cache of tiles out of view),
 * asks the renderer's server which of them an expiry at or after `since` reached (expired-source-tiles.ts), drops
 * those from the cache and reloads those in view. A question that fails reloads the whole source instead.
 */
export const EXPIRED_REFRESH = `function canonicalOf(tile) {
  const c = tile.tileID.canonical;
  return c.z + '/' + c.x + '/' + c.y;
}

async function refreshExpired(m, url, style, since) {
  const managers = m.style.tileManagers || {};
  const asked = [];
  for (const id of Object.keys(managers)) {
    const tm = managers[id];
    const source = tm.getSource();
    const template = source && source.tiles && source.tiles[0];
    if (!template) continue;
    const held = new Map();
    const add = (tile) => { if (tile && tile.tileID) held.set(canonicalOf(tile), [tile.tileID.canonical.z, tile.tileID.canonical.x, tile.tileID.canonical.y]); };
    for (const tid of tm._inViewTiles.getAllIds()) add(tm._inViewTiles.getTileById(tid));
    for (const list of Object.values(tm._outOfViewCache.data)) for (const entry of list) add(entry.value);
    if (held.size) asked.push({ id, tm, template, tiles: [...held.values()] });
  }
  if (!asked.length) return;
  let stale = null;
  try {
    const res = await fetch(url, { method: 'POST', body: JSON.stringify({ style, since, sources: asked.map((a) => ({ template: a.template, tiles: a.tiles })) }) });
    if (res.ok) stale = (await res.json()).stale;
  } catch (e) {
    stale = null;
  }
  asked.forEach((a, i) => {
    if (!stale || !Array.isArray(stale[i])) return m.refreshTiles(a.id);
    if (!stale[i].length) return;
    const keys = new Set(stale[i].map((j) => a.tiles[j].join('/')));
    a.tm._outOfViewCache.filter((tile) => !keys.has(canonicalOf(tile)));
    m.refreshTiles(a.id, stale[i].map((j) => ({ z: a.tiles[j][0], x: a.tiles[j][1], y: a.tiles[j][2] })));
  });
}
`;

export function pageHtml(o: PageOptions): string {
  return `<!doctype html>
<html><head><meta charset="utf-8"><title>tileserver-ts renderer</title>
<style>html,body{margin:0;padding:0;overflow:hidden}#map{position:absolute;left:0;top:0;width:512px;height:512px;visibility:hidden}</style>
</head><body><div id="map"></div>
<script type="module">
import * as ml from './maplibre/maplibre-gl.mjs';
ml.setWorkerCount(${Math.max(1, Math.floor(o.workers))});

let map = null;
let styleKey = null;
// The last expiry of the loaded style's sources this page knows (0: none): tile URLs carry it, and a frame of a
// later revision first drops the tiles the expiries since reached (refreshExpired).
let revision = 0;
let lastError = '';
// Set when the map's WebGL context is lost (the browser's GPU process died or was reset). A lost context draws
// nothing and MapLibre does not recover from it in place: the page is replaced (chromium.ts).
let contextLost = false;
const LOST = 'webgl context lost';

function glLost() {
  return contextLost || (map && map.painter && map.painter.context.gl.isContextLost());
}

// A canary frame of the GL stack itself: a fresh WebGL2 context clears a 4x4 canvas to a known colour and reads
// it back. A page whose browser cannot give it a working context (a GPU process that keeps dying makes Chromium
// turn WebGL off) fails here, before any render is handed to it. The unmasked renderer string tells the caller which
// GL stack really runs (gl-stack.ts).
function canary() {
  const c = document.createElement('canvas');
  c.width = 4;
  c.height = 4;
  const gl = c.getContext('webgl2', { preserveDrawingBuffer: true });
  if (!gl) return { ok: false, detail: 'no WebGL2 context', renderer: '' };
  const info = gl.getExtension('WEBGL_debug_renderer_info');
  const renderer = String(info ? gl.getParameter(info.UNMASKED_RENDERER_WEBGL) : gl.getParameter(gl.RENDERER));
  gl.clearColor(0.2, 0.4, 0.6, 1);
  gl.clear(gl.COLOR_BUFFER_BIT);
  const px = new Uint8Array(4);
  gl.readPixels(1, 1, 1, 1, gl.RGBA, gl.UNSIGNED_BYTE, px);
  const ok = Math.abs(px[0] - 51) <= 1 && Math.abs(px[1] - 102) <= 1 && Math.abs(px[2] - 153) <= 1 && px[3] === 255;
  const lose = gl.getExtension('WEBGL_lose_context');
  if (lose) lose.loseContext();
  return { ok, detail: ok ? 'ok' : 'canary pixel ' + Array.from(px).join(','), renderer };
}

${FRAME_WAIT}
${EXPIRED_REFRESH}
${TILE_CACHE_SIZING}
async function load(url, key, rev) {
  if (glLost()) throw new Error(LOST);
  const res = await fetch(url);
  if (!res.ok) throw new Error('style request answered ' + res.status);
  const style = await res.json();
  // Property transitions would make consecutive frames blend into each other.
  style.transition = { duration: 0, delay: 0 };
  // A raster tile fades in over its parent for raster-fade-duration (300 ms by default) after it arrives, so a
  // frame drawn soon after would mix two zoom levels, and two renders of one view would differ by their timing.
  for (const layer of style.layers || []) {
    if (layer.type === 'raster') layer.paint = Object.assign({}, layer.paint, { 'raster-fade-duration': 0 });
  }
  if (!map) {
    map = new ml.Map({
      container: 'map',
      style,
      interactive: false,
      attributionControl: false,
      trackResize: false,
      fadeDuration: 0,
      validateStyle: false,
      refreshExpiredTiles: false,
      // CJK is drawn from the machine's fonts, as MapLibre does in a reader's browser by default (glyph PBFs of
      // ideographs are rare and large): the Makefile installs fonts-droid-fallback for them. Scripts MapLibre shapes
      // as grapheme clusters (Devanagari, Thai, ...) are drawn from the machine's fonts too (fonts-noto-core).
      localIdeographFontFamily: 'sans-serif',
      renderWorldCopies: true,
      minZoom: -2,
      maxZoom: 24,
      maxPitch: 85,
      pixelRatio: 1,
      maxCanvasSize: [${o.maxCanvas}, ${o.maxCanvas}],
      canvasContextAttributes: { preserveDrawingBuffer: true, antialias: false },
      // Frames may extend beyond the world's edges (tile buffers at z0): never move the camera to avoid that.
      transformConstrain: (center, zoom) => ({ center, zoom }),
      // A tile fetched again after an expiry must not come from the browser's cache (its URL carries the revision).
      transformRequest: (url, type) => (type === 'Tile' && revision ? { url: url + (url.includes('?') ? '&' : '?') + '${'${TILE_REVISION_PARAM}'}=' + revision } : undefined),
    });
    map.triggerRepaint = () => {};
    map.on('error', (e) => { lastError = String(e && e.error && e.error.message || e); });
    map.getCanvas().addEventListener('webglcontextlost', () => { contextLost = true; });
  } else {
    map.setStyle(style, { diff: false });
  }
  // Every tile of the new style is fetched from now on, after the expiries up to rev.
  revision = rev || 0;
  await new Promise((resolve) => (map.style && map.style._loaded ? resolve() : map.once('style.load', resolve)));
  // One draw applies the new style's sources (Style.loaded() waits for that) before the first real frame.
  map.redraw();
  styleKey = key;
}

function allZero(px) {
  const words = new Uint32Array(px.buffer, px.byteOffset, px.byteLength >> 2);
  for (let i = 0; i < words.length; i++) if (words[i] !== 0) return false;
  return true;
}

async function render(job) {
  // Nothing drawn yet: the caller replaces the page and renders there.
  if (glLost()) return { lost: true };
  if (styleKey !== job.styleKey) throw new Error('the style ' + job.styleKey + ' is not loaded');
  const t1 = performance.now();
  const box = map.getContainer();
  const w = job.width + 'px', h = job.height + 'px';
  if (box.style.width !== w || box.style.height !== h) {
    box.style.width = w;
    box.style.height = h;
    map.resize();
  }
  if (map.getPixelRatio() !== job.ratio) map.setPixelRatio(job.ratio);
  sizeTileCaches(map);
  const since = revision;
  const newer = job.revision > revision;
  // Tiles requested from now on are fetched past the browser's cache.
  if (newer) revision = job.revision;
  map.jumpTo({ center: job.center, zoom: job.zoom, bearing: job.bearing, pitch: job.pitch });
  // Request the new view's tiles now, without drawing the old ones at the new camera.
  map._sourcesDirty = true;
  if (newer) {
    // The new view's tiles are in view now and the old view's in the cache: both are checked, the view's reloaded.
    sourcesUpdated(map);
    await refreshExpired(map, job.expiredTiles, job.styleId, since);
  }
  await settled(map);
  const t2 = performance.now();
  map._styleDirty = true;
  map._sourcesDirty = true;
  map.redraw();
  const t3 = performance.now();
  const gl = map.painter.context.gl;
  const W = gl.drawingBufferWidth, H = gl.drawingBufferHeight;
  if (job.encode) return encodeTiles(job, gl, W, H, { resources: t2 - t1, draw: t3 - t2 });
  const pixels = new Uint8Array(W * H * 4);
  gl.readPixels(0, 0, W, H, gl.RGBA, gl.UNSIGNED_BYTE, pixels);
  await checkReadback(gl, pixels);
  const t4 = performance.now();
  // A Blob upload to the renderer's own server is several times cheaper than returning the bytes over CDP.
  const res = await fetch(job.upload, { method: 'POST', body: new Blob([pixels]) });
  if (!res.ok) throw new Error('frame upload answered ' + res.status);
  const t5 = performance.now();
  return { width: W, height: H, resources: t2 - t1, draw: t3 - t2, readback: t4 - t3, transfer: t5 - t4, lastError };
}

// Lost during the frame (the error code shows a loss the event has not announced yet): what was read is not the map.
// A readback from a GPU process that has just died leaves the buffer as it was, all zeros, before the page has
// heard of the loss (seen when the GPU process is killed mid-frame). A map frame is rarely entirely transparent:
// for one that is, give the loss event a moment to arrive before trusting it.
async function checkReadback(gl, pixels) {
  if (glLost() || gl.getError() === gl.CONTEXT_LOST_WEBGL) throw new Error(LOST);
  if (allZero(pixels)) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    if (glLost() || gl.getError() === gl.CONTEXT_LOST_WEBGL) throw new Error(LOST);
  }
}

// The tiles of the frame encoded here, so that only their bytes leave the page (a 2x2 frame's tiles are about a
// seventh of its raw pixels). JPEG and WebP come from the browser's own encoders: each tile is copied out of the
// map's canvas into a 2D canvas (the copy honours the canvas's premultiplied alpha, the encoder writes straight
// alpha; an opaque style's tiles go through a canvas without alpha, JPEG onto white as the service flattens it).
// PNG does not: Chromium's PNG encoder wrote 12-65 % more bytes than the service's own PNGs of the same pixels, so
// PNG tiles are made from one readback of the frame as the service made them (rows unfiltered, RGB when the style
// is opaque, straight alpha otherwise), deflated at the frame's zlib level by libdeflate (PNG_WRITER).
let framePixels = null;

async function encodeTiles(job, gl, W, H, times) {
  const e = job.encode;
  const t3 = performance.now();
  let blobs;
  let t4;
  if (e.format === 'png') {
    // One buffer for every frame of the page (grown when a frame is larger): a 2x2 frame is 5 MB of garbage otherwise.
    if (!framePixels || framePixels.length < W * H * 4) framePixels = new Uint8Array(W * H * 4);
    const pixels = framePixels.subarray(0, W * H * 4);
    gl.readPixels(0, 0, W, H, gl.RGBA, gl.UNSIGNED_BYTE, pixels);
    await checkReadback(gl, pixels);
    t4 = performance.now();
    blobs = await Promise.all(e.tiles.map((r) => pngTile(pixels, W, H, r, e.opaque, e.level)));
  } else {
    // One row of the frame read back: the same lost-context check as a whole readback, at a fraction of its cost.
    const row = new Uint8Array(W * 4);
    gl.readPixels(0, H >> 1, W, 1, gl.RGBA, gl.UNSIGNED_BYTE, row);
    await checkReadback(gl, row);
    t4 = performance.now();
    const source = map.getCanvas();
    const type = 'image/' + e.format;
    const jpeg = e.format === 'jpeg';
    blobs = await Promise.all(e.tiles.map((r) => {
      const c = new OffscreenCanvas(r.width, r.height);
      const ctx = c.getContext('2d', { alpha: !(e.opaque || jpeg) });
      if (jpeg) {
        ctx.fillStyle = '#ffffff';
        ctx.fillRect(0, 0, r.width, r.height);
      }
      ctx.drawImage(source, r.left, r.top, r.width, r.height, 0, 0, r.width, r.height);
      return c.convertToBlob({ type, quality: e.quality });
    }));
    // The context may have died while the tiles were copied: they would be empty, not the map.
    if (glLost()) throw new Error(LOST);
  }
  const t5 = performance.now();
  const res = await fetch(job.upload, { method: 'POST', headers: { 'X-Tile-Sizes': blobs.map((b) => b.size).join(',') }, body: new Blob(blobs) });
  if (!res.ok) throw new Error('tile upload answered ' + res.status);
  const t6 = performance.now();
  return { width: W, height: H, resources: times.resources, draw: times.draw, readback: t4 - t3, encode: t5 - t4, transfer: t6 - t5, lastError };
}

${PNG_WRITER}
window.__tsts = { load, render };
// The deflate is loaded before the page says it is ready, so no frame is written by the fallback for want of waiting.
const deflater = await loadDeflate('${DEFLATE_MODULE}');
window.__tstsReady = Object.assign(canary(), deflater);
</script></body></html>`;
}
