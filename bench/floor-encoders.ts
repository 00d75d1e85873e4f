// The encoder table of the floor bench (BENCH=floor BENCH_FLOOR_ENCODER_TABLE=1, issue 49): every way a Chromium
// page's rendered tiles could become PNG (or lossless WebP) bytes, run on the same frames of the browse workload,
// for bytes and for CPU by process. A frame is drawn once and its pixels kept in the page (as the whole-frame
// readPixels leaves them: rows bottom to top, premultiplied alpha); each encoder then encodes every tile of the kept
// frames a few times while the browser's processes are sampled (bench/lib.ts, cpuByKind), and Node's own CPU is
// read around whatever Node does (only the "raw pixels to Node" row does anything there).
//
// Chromium's own encoders get each tile through putImageData into a 2D canvas; the service's page copies JPEG and
// WebP tiles from the map's WebGL canvas with drawImage instead, so their rows leave that copy out. The in-page PNG
// rows leave out the upload of the encoded bytes (a few hundred KB a frame, the same for all of them); the raw row
// includes the upload of the whole frame, since that is what it costs.
import type { Page } from 'playwright-core';
import { encodeRegion, type RawImage } from '../src/render/image.js';
import { unpremultiplyInPlace } from '../src/render/renderer.js';
import { cpuByKind, fmt } from './lib.js';

/** Frames the page uploaded to the bench's static server for the raw row, and Node's CPU receiving them. */
export interface RawUploads {
  frames: Buffer[];
  nodeCpuMs: number;
}

export interface EncoderRow {
  id: string;
  name: string;
  tiles: number;
  bytesPerTile: number;
  /** Milliseconds of CPU per tile: the renderer process, the rest of the browser tree, Node. */
  rendererMs: number;
  otherBrowserMs: number;
  nodeMs: number;
}

/** The alternatives, the page's writer before issue 49 first (the others' bytes are compared with it). */
const ENCODERS: [string, string][] = [
  ['stream', 'PNG, CompressionStream (zlib 6, rows unfiltered): the page before issue 49'],
  ['fflate-3', 'PNG, fflate level 3 (the page before libdeflate)'],
  ['fflate-6', 'PNG, fflate level 6'],
  ['libdeflate-1', 'PNG, libdeflate level 1'],
  ['libdeflate-2', 'PNG, libdeflate level 2'],
  ['libdeflate-3', 'PNG, libdeflate level 3 (render.png_compression default)'],
  ['libdeflate-4', 'PNG, libdeflate level 4'],
  ['libdeflate-6', 'PNG, libdeflate level 6 (render.seed_png_compression default)'],
  ['libdeflate-7', 'PNG, libdeflate level 7'],
  ['libdeflate-8', 'PNG, libdeflate level 8'],
  ['libdeflate-9', 'PNG, libdeflate level 9'],
  ['libdeflate-up-1', 'PNG, libdeflate level 1, rows filtered "up"'],
  ['libdeflate-up-3', 'PNG, libdeflate level 3, rows filtered "up"'],
  ['chromium-png', "PNG, Chromium's encoder (convertToBlob)"],
  ['webp-lossless', "WebP lossless, Chromium's encoder (quality 1)"],
  ['raw-node', 'PNG, raw frame uploaded to Node, sharp level 3'],
];

/** Times each encoder encodes the kept frames (the first time's bytes are counted). */
const REPEATS = 3;

/** Plain JavaScript for the floor page (after PNG_WRITER, whose pngTile and levelDeflate it uses, and useDeflate). */
export const ENCODER_TABLE_PAGE = `const keptFrames = [];

function keepFrame(px, W, H, tiles, opaque) {
  keptFrames.push({ px: px.slice(0, W * H * 4), W, H, tiles, opaque });
}

// Straight-alpha pixels of one tile, rows top to bottom (the kept frame's rows run bottom to top, premultiplied).
function straightTile(f, r) {
  const out = new Uint8ClampedArray(r.width * r.height * 4);
  for (let y = 0; y < r.height; y++) {
    let i = ((f.H - 1 - (r.top + y)) * f.W + r.left) * 4;
    let o = y * r.width * 4;
    for (let x = 0; x < r.width; x++, i += 4, o += 4) {
      const a = f.opaque ? 255 : f.px[i + 3];
      const k = a === 255 || a === 0 ? 1 : 255 / a;
      out[o] = f.px[i] * k;
      out[o + 1] = f.px[i + 1] * k;
      out[o + 2] = f.px[i + 2] * k;
      out[o + 3] = a;
    }
  }
  return out;
}

// The rows of one tile as the terrain writer filters them: "up" (each byte minus the one above), the first row as it is.
function upRows(f, r) {
  const ch = f.opaque ? 3 : 4;
  const px = straightTile(f, r);
  const stride = r.width * ch + 1;
  const rows = new Uint8Array(stride * r.height);
  for (let y = 0; y < r.height; y++) {
    rows[y * stride] = y ? 2 : 0;
    for (let x = 0; x < r.width; x++) {
      for (let c = 0; c < ch; c++) {
        const i = (y * r.width + x) * 4 + c;
        rows[y * stride + 1 + x * ch + c] = y ? px[i] - px[i - r.width * 4] : px[i];
      }
    }
  }
  return rows;
}

// PNG bytes around the deflated rows: signature 8, IHDR 25, IDAT's length, type and CRC 12, IEND 12.
const PNG_FRAME_BYTES = 57;

async function encodeAs(name, f) {
  const each = (fn) => Promise.all(f.tiles.map(fn));
  let m;
  if (name === 'stream') {
    useDeflate('stream');
    return (await each((r) => pngTile(f.px, f.W, f.H, r, f.opaque, undefined))).map((b) => b.size);
  }
  if ((m = /^(fflate|libdeflate)-(\\d)$/.exec(name))) {
    useDeflate(m[1]);
    return (await each((r) => pngTile(f.px, f.W, f.H, r, f.opaque, Number(m[2])))).map((b) => b.size);
  }
  if ((m = /^libdeflate-up-(\\d)$/.exec(name))) {
    useDeflate('libdeflate');
    return each(async (r) => levelDeflate(upRows(f, r), Number(m[1])).length + PNG_FRAME_BYTES);
  }
  if (name === 'chromium-png' || name === 'webp-lossless') {
    return each(async (r) => {
      const c = new OffscreenCanvas(r.width, r.height);
      c.getContext('2d', { alpha: !f.opaque }).putImageData(new ImageData(straightTile(f, r), r.width, r.height), 0, 0);
      return (await c.convertToBlob(name === 'chromium-png' ? { type: 'image/png' } : { type: 'image/webp', quality: 1 })).size;
    });
  }
  if (name === 'raw-node') {
    const res = await fetch('./raw', { method: 'POST', body: new Blob([f.px]) });
    if (!res.ok) throw new Error('raw upload answered ' + res.status);
    return [];
  }
  throw new Error('no encoder ' + name);
}

async function encodeKept(name, repeats) {
  if (!deflates.libdeflate.levelDeflate || !deflates.fflate) throw new Error('a deflate did not load: ' + deflateProblem);
  let bytes = 0, tiles = 0;
  for (let k = 0; k < repeats; k++) {
    for (const f of keptFrames) {
      const sizes = await encodeAs(name, f);
      if (k === 0) for (const n of sizes) bytes += n;
      if (k === 0) tiles += f.tiles.length;
    }
  }
  return { bytes, tiles, frames: keptFrames.map((f) => ({ W: f.W, H: f.H, tiles: f.tiles, opaque: f.opaque })) };
}
`;

interface KeptShape {
  W: number;
  H: number;
  tiles: { left: number; top: number; width: number; height: number }[];
  opaque: boolean;
}

/** Node's side of the raw row, as the service does it: rows flipped, alpha undone, each tile cut and encoded by sharp. */
async function encodeRawFrames(raw: RawUploads, shapes: KeptShape[]): Promise<{ bytes: number; cpuMs: number }> {
  const c0 = process.cpuUsage();
  let bytes = 0;
  for (let i = 0; i < raw.frames.length; i++) {
    const s = shapes[i % shapes.length];
    const src = raw.frames[i];
    const data = new Uint8Array(s.W * s.H * 4);
    const row = s.W * 4;
    for (let y = 0; y < s.H; y++) data.set(src.subarray((s.H - 1 - y) * row, (s.H - y) * row), y * row);
    const opaque = unpremultiplyInPlace(data);
    const img: RawImage = { data, width: s.W, height: s.H, opaque };
    const out = await Promise.all(s.tiles.map((r) => encodeRegion(img, r, { format: 'png' }, { pngCompression: 3, jpegQuality: 85, webpQuality: 85, avifQuality: 50 })));
    if (i < shapes.length) bytes += out.reduce((n, b) => n + b.byteLength, 0);
  }
  const c = process.cpuUsage(c0);
  return { bytes, cpuMs: (c.user + c.system) / 1000 };
}

/** Runs every encoder over the page's kept frames; see the header. */
export async function encoderTable(page: Page, root: number, raw: RawUploads): Promise<EncoderRow[]> {
  const rows: EncoderRow[] = [];
  for (const [id, name] of ENCODERS) {
    raw.frames = [];
    raw.nodeCpuMs = 0;
    const cpu = cpuByKind(root);
    const r = (await page.evaluate(`window.__floor.encodeKept(${JSON.stringify(id)}, ${REPEATS})`)) as { bytes: number; tiles: number; frames: KeptShape[] };
    const split = cpu.end();
    let bytes = r.bytes;
    let nodeMs = 0;
    if (id === 'raw-node') {
      const n = await encodeRawFrames(raw, r.frames);
      bytes = n.bytes;
      nodeMs = n.cpuMs + raw.nodeCpuMs;
    }
    const perTile = (seconds: number) => (1000 * seconds) / (r.tiles * REPEATS);
    rows.push({
      id,
      name,
      tiles: r.tiles,
      bytesPerTile: bytes / r.tiles,
      rendererMs: perTile(split.renderer),
      otherBrowserMs: perTile(split.total - split.renderer),
      nodeMs: nodeMs / (r.tiles * REPEATS),
    });
  }
  return rows;
}

export function formatEncoderTable(rows: EncoderRow[]): string[] {
  const base = rows[0];
  const out = [
    `  encoders on ${base.tiles} tiles of the workload's first frames (each encoded ${REPEATS} times; CPU ms per tile; bytes against the first row):`,
    `    ${'encoder'.padEnd(62)} ${'KB/tile'.padStart(8)} ${'bytes'.padStart(6)} ${'renderer'.padStart(9)} ${'other browser'.padStart(14)} ${'node'.padStart(6)} ${'whole'.padStart(7)}`,
  ];
  for (const r of rows) {
    const whole = r.rendererMs + r.otherBrowserMs + r.nodeMs;
    out.push(
      `    ${r.name.padEnd(62)} ${fmt(r.bytesPerTile / 1000, 1).padStart(8)} ${fmt(r.bytesPerTile / base.bytesPerTile, 3).padStart(6)} ${fmt(r.rendererMs, 1).padStart(9)} ${fmt(r.otherBrowserMs, 1).padStart(14)} ${fmt(r.nodeMs, 1).padStart(6)} ${fmt(whole, 1).padStart(7)}`,
    );
  }
  return out;
}
