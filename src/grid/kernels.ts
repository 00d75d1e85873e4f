// The WebAssembly kernels of the terrain work (wasm/terrain-kernels.ts, built into dist/terrain-kernels.wasm): the
// bilinear resampling of a window without holes, and hillshade's common cases. Loaded once per thread, fed through
// the module's memory. When the module cannot be found or compiled (a checkout that was never built, an engine
// without SIMD) `gridKernels()` is undefined and the JavaScript passes do the work: the same samples to the bit,
// the same shading within a grey level. One memory serves every call of a thread, so what a call leaves there lasts
// until the next: the types below say it (a LoadedWindow handle is the only way to shade, and knows when a later
// call unloaded its window; a Borrowed view is lent until the next call).
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { log } from '../log.js';

interface KernelExports {
  memory: WebAssembly.Memory;
  hasNaN(data: number, n: number): number;
  pngUpFilter(pixels: number, stride: number, height: number, out: number): void;
  bilinearComplete(grid: number, colA: number, colB: number, colW: number, w: number, rowA: number, rowB: number, rowW: number, h: number, out: number, lerped: number): void;
  shadeGreyBasic(win: number, w: number, border: number, size: number, rowK: number, out: number, sinAlt: number, cosAzCosAlt: number, sinAzCosAlt: number): void;
  shadeColorStandard(win: number, w: number, border: number, size: number, rows: number, out: number, channels: number, tables: number, entries: number, toIndex: number, cosAz: number, sinAz: number, colours: number): void;
}

const FILE = 'terrain-kernels.wasm';
const PAGE = 65536;
/** Where the caller's data starts in the module's memory (the module has no data of its own). */
const BASE = 64;

/** The built module: in dist/ beside the bundle, or in the checkout's dist/ when the sources run directly (tests). */
function modulePath(): string | undefined {
  let dir = path.dirname(fileURLToPath(import.meta.url));
  for (let i = 0; i < 4; i++) {
    for (const candidate of [path.join(dir, FILE), path.join(dir, 'dist', FILE)]) if (existsSync(candidate)) return candidate;
    dir = path.dirname(dir);
  }
  return undefined;
}

/** Regions of the module's memory, in bytes from BASE, for one call. */
class Arena {
  private next = BASE;
  constructor(private readonly kernels: KernelExports) {}
  /** Reserves `bytes` (16-byte aligned) and grows the memory to hold them. */
  take(bytes: number): number {
    const at = this.next;
    this.next = at + Math.ceil(bytes / 16) * 16;
    const memory = this.kernels.memory;
    if (this.next > memory.buffer.byteLength) memory.grow(Math.ceil((this.next - memory.buffer.byteLength) / PAGE));
    return at;
  }
}

declare const borrowed: unique symbol;

/**
 * A view of the kernels' memory, lent until the next call into them: that call writes over the same memory, and
 * may grow it (which detaches every view of the old buffer). Read it before calling again, or copy it (`slice()`)
 * where it is kept; the type says so where the value travels.
 */
export type Borrowed<T extends ArrayBufferView> = T & { readonly [borrowed]: 'until the next kernel call' };

/** Marks a view as lent until the next call of its lender (the kernels, or a scratch buffer that the next call reuses). */
export const lend = <T extends ArrayBufferView>(view: T): Borrowed<T> => view as Borrowed<T>;

/**
 * A window of elevations copied into the kernels (`loadWindow`), and the only way to shade it there. It stays valid
 * until any other call loads something else into the kernels' memory (another window, a resampling, a PNG filter):
 * after that its methods throw rather than shade whatever memory holds then. Shading does not unload it.
 */
export interface LoadedWindow {
  /** Whether the window has a pixel without data (NaN). */
  readonly holes: boolean;
  /** gdaldem's plain hillshade in grey, one byte per pixel; `rowK` the slope factor of each tile row. */
  greyBasic(w: number, border: number, size: number, rowK: Float32Array, sinAlt: number, cosAzCosAlt: number, sinAzCosAlt: number): Uint8Array;
  /**
   * MapLibre's standard method; `rows` holds factor, low clamp and high clamp per tile row; `tables` the accent then
   * the shade strengths (`entries` + 2 each); `colours` shadow, highlight, accent as premultiplied RGBA.
   */
  colorStandard(w: number, border: number, size: number, rows: Float32Array, channels: 2 | 4, tables: Float32Array, entries: number, toIndex: number, cosAz: number, sinAz: number, colours: Float32Array): Uint8Array;
}

/** What src/grid/bilinear.ts, src/terrain/hillshade.ts and src/terrain/png-writer.ts call. One thread's kernels share one memory: each call below loads its own input there. */
export interface GridKernels {
  /** PNG rows filtered "up", each led by its filter type byte (src/terrain/png-writer.ts). */
  pngUpFilter(pixels: Uint8Array, stride: number, height: number): Borrowed<Uint8Array>;
  /** sampleGrid's result for a grid without holes and positions inside it: the same f32 values, copied into `into`. */
  bilinear(grid: Float32Array, colA: Int32Array, colB: Int32Array, colW: Float64Array, rowA: Int32Array, rowB: Int32Array, rowW: Float64Array, into: Float32Array): void;
  /** Copies the window in, for the shading calls of the handle it returns (see LoadedWindow). */
  loadWindow(data: Float32Array): LoadedWindow;
}

let loaded: GridKernels | undefined | null = null;

function instantiate(): GridKernels | undefined {
  const file = modulePath();
  if (!file) {
    log.warn({ file: FILE }, 'the WebAssembly terrain kernels are not built (run the build); resampling and shading in JavaScript');
    return undefined;
  }
  let exports: KernelExports;
  try {
    exports = new WebAssembly.Instance(new WebAssembly.Module(readFileSync(file)), {}).exports as unknown as KernelExports;
  } catch (err) {
    log.warn({ file, err: (err as Error).message }, 'the WebAssembly terrain kernels did not load; resampling and shading in JavaScript');
    return undefined;
  }
  const copyIn = (arena: Arena, values: Float32Array | Float64Array | Int32Array): number => {
    const at = arena.take(values.byteLength);
    const view = values instanceof Float64Array ? Float64Array : values instanceof Int32Array ? Int32Array : Float32Array;
    new view(exports.memory.buffer, at, values.length).set(values);
    return at;
  };
  const copyOut = (at: number, length: number): Uint8Array => new Uint8Array(exports.memory.buffer, at, length).slice();
  // Each call that loads input into the memory takes the next load number; a window handle shades only while the
  // load that made it is still the last one.
  let loads = 0;
  const load = () => ++loads;
  return {
    pngUpFilter(pixels, stride, height) {
      load();
      const arena = new Arena(exports);
      const at = arena.take(pixels.byteLength);
      new Uint8Array(exports.memory.buffer, at, pixels.length).set(pixels);
      const out = arena.take((stride + 1) * height);
      exports.pngUpFilter(at, stride, height, out);
      return lend(new Uint8Array(exports.memory.buffer, out, (stride + 1) * height));
    },
    bilinear(grid, colA, colB, colW, rowA, rowB, rowW, into) {
      load();
      const arena = new Arena(exports);
      const values = copyIn(arena, grid);
      const [ca, cb, cw, ra, rb, rw] = [colA, colB, colW, rowA, rowB, rowW].map((a) => copyIn(arena, a));
      const out = arena.take(into.byteLength);
      const lerped = arena.take(colA.length * 16);
      exports.bilinearComplete(values, ca, cb, cw, colA.length, ra, rb, rw, rowA.length, out, lerped);
      into.set(new Float32Array(exports.memory.buffer, out, into.length));
    },
    loadWindow(data) {
      const mine = load();
      const arena = new Arena(exports);
      // The window sits first in memory (at BASE); what a shading call needs besides it follows.
      const at = arena.take(data.byteLength);
      new Float32Array(exports.memory.buffer, at, data.length).set(data);
      const windowBytes = data.byteLength;
      const afterWindow = () => {
        if (loads !== mine) throw new Error('terrain kernels: this window was unloaded by a later call; load it again');
        const next = new Arena(exports);
        next.take(windowBytes);
        return next;
      };
      return {
        holes: exports.hasNaN(at, data.length) !== 0,
        greyBasic(w, border, size, rowK, sinAlt, cosAzCosAlt, sinAzCosAlt) {
          const arena = afterWindow();
          const k = copyIn(arena, rowK);
          const out = arena.take(size * size);
          exports.shadeGreyBasic(BASE, w, border, size, k, out, sinAlt, cosAzCosAlt, sinAzCosAlt);
          return copyOut(out, size * size);
        },
        colorStandard(w, border, size, rows, channels, tables, entries, toIndex, cosAz, sinAz, colours) {
          const arena = afterWindow();
          const rowValues = copyIn(arena, rows);
          const tableValues = copyIn(arena, tables);
          const colourValues = copyIn(arena, colours);
          const out = arena.take(size * size * channels);
          exports.shadeColorStandard(BASE, w, border, size, rowValues, out, channels, tableValues, entries, toIndex, cosAz, sinAz, colourValues);
          return copyOut(out, size * size * channels);
        },
      };
    },
  };
}

/** The kernels of this thread, loaded on first use; undefined when only JavaScript can do the work here. */
export function gridKernels(): GridKernels | undefined {
  if (loaded === null) loaded = instantiate();
  return loaded;
}
