// PNG files of shaded relief, written here rather than by libvips: a hillshade tile is a smooth surface, and
// libvips gives the choice between no row filter (fast, but a 512 px tile comes out about three times larger)
// and adaptive filtering (small, but it doubles the encoding time). The "up" filter (each byte minus the one above
// it) suits relief shaded from a continuous surface, costs one subtraction per byte, and with zlib at level 1 made
// the PNG of a 512 px grey tile in about a third of the CPU of libvips' adaptive mode, at a similar size (measured on
// this machine, 2026-11-28; docs/terrain.md). zlib does the compressing, as it does inside libvips.
import zlib from 'node:zlib';
import { gridKernels, lend, type Borrowed } from '../grid/kernels.js';

/** PNG colour types by bytes per pixel: grey, grey with alpha, RGBA (8 bits per channel). */
const COLOUR_TYPE = { 1: 0, 2: 4, 4: 6 } as const;

const SIGNATURE = Uint8Array.of(0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a);

/** CRC-32 of a chunk's type and data: zlib's own (Node 20.15 and later), else a table as the PNG specification gives it. */
const crc32: (data: Uint8Array, start: number) => number =
  typeof (zlib as { crc32?: unknown }).crc32 === 'function' ? (data, start) => (zlib as unknown as { crc32: (d: Uint8Array, v: number) => number }).crc32(data, start) : tableCrc32;

let table: Uint32Array | undefined;

function tableCrc32(data: Uint8Array, start: number): number {
  if (!table) {
    table = new Uint32Array(256);
    for (let n = 0; n < 256; n++) {
      let c = n;
      for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
      table[n] = c >>> 0;
    }
  }
  let c = ~start >>> 0;
  for (let i = 0; i < data.length; i++) c = table[(c ^ data[i]) & 0xff] ^ (c >>> 8);
  return ~c >>> 0;
}

/**
 * Rows filtered "up": row 0 with filter type 0 (none), the others with type 2, each byte minus the one above. The
 * WebAssembly kernel does it sixteen bytes at a time; without it, this loop. Either way the rows are lent until the
 * next image (the kernels' memory, or this module's scratch buffer): deflate reads them at once.
 */
function filterUp(pixels: Uint8Array, stride: number, height: number, kernels: 'wasm-when-possible' | 'javascript' = 'wasm-when-possible'): Borrowed<Uint8Array> {
  const wasm = kernels === 'javascript' ? undefined : gridKernels();
  if (wasm) return wasm.pngUpFilter(pixels, stride, height);
  const filtered = filteredBuffer((stride + 1) * height);
  filtered[0] = 0;
  filtered.set(pixels.subarray(0, stride), 1);
  for (let y = 1; y < height; y++) {
    const o = y * (stride + 1);
    filtered[o] = 2;
    const row = y * stride;
    for (let i = 0; i < stride; i++) filtered[o + 1 + i] = pixels[row + i] - pixels[row - stride + i];
  }
  return lend(filtered);
}

/** The filtered rows of the last image, reused: deflate reads them synchronously, before the next image. */
let filteredScratch = new Uint8Array(0);

function filteredBuffer(length: number): Uint8Array {
  if (filteredScratch.length < length) filteredScratch = new Uint8Array(length);
  return filteredScratch.subarray(0, length);
}

function chunk(type: string, data: Uint8Array): Uint8Array {
  const out = new Uint8Array(12 + data.length);
  const view = new DataView(out.buffer);
  view.setUint32(0, data.length);
  for (let i = 0; i < 4; i++) out[4 + i] = type.charCodeAt(i);
  out.set(data, 8);
  view.setUint32(8 + data.length, crc32(out.subarray(4, 8 + data.length), 0));
  return out;
}

/**
 * An 8-bit PNG of `width` x `height` pixels of `channels` bytes each (1 grey, 2 grey and alpha, 4 RGBA; straight
 * alpha), rows filtered "up" (the first row unfiltered) and deflated at zlib `level` (0-9). `kernels` 'javascript'
 * filters without the WebAssembly kernel (tests compare the two).
 */
export function encodePng(pixels: Uint8Array, width: number, height: number, channels: 1 | 2 | 4, level: number, kernels: 'wasm-when-possible' | 'javascript' = 'wasm-when-possible'): Uint8Array {
  const stride = width * channels;
  if (pixels.length !== stride * height) throw new RangeError(`${width}x${height} pixels of ${channels} bytes need ${stride * height} bytes, got ${pixels.length}`);
  const filtered = filterUp(pixels, stride, height, kernels);
  const header = new Uint8Array(13);
  const view = new DataView(header.buffer);
  view.setUint32(0, width);
  view.setUint32(4, height);
  header[8] = 8; // bits per channel
  header[9] = COLOUR_TYPE[channels];
  // compression method 0, filter method 0, no interlace: the bytes stay 0
  const parts = [SIGNATURE, chunk('IHDR', header), chunk('IDAT', zlib.deflateSync(filtered, { level })), chunk('IEND', new Uint8Array(0))];
  const out = new Uint8Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}
