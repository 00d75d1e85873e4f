// Bilinear resampling of a grid of values (elevations in metres, NaN without data) at positions separable by axis:
// every output column samples the grid at one fractional column, every output row at one fractional row. A web-
// mercator window is separable over a web-mercator grid, which covers both a window assembled from an archive's
// tiles (src/terrain/mosaic.ts) and one read from a COG in EPSG:3857 (src/raster/dem-read.ts).
import { gridKernels } from './kernels.js';

/** A grid and where a window samples it: what `sampleGrid` reads, as one value that can travel between threads. */
export interface GridSamples {
  /** `width` x `height` values, row-major; NaN without data. */
  grid: Float32Array;
  width: number;
  height: number;
  /** Column positions of the output's columns, in grid pixels with pixel centres at integers; NaN for none. */
  cols: Float64Array;
  /** Row positions of the output's rows, likewise. */
  rows: Float64Array;
  /** False promises the grid has no NaN, for a loop without those checks (done by the WebAssembly kernel). */
  holes: boolean;
  /** A sample is also NaN when the grid pixel it lies in has no data, as gdalwarp's kernels skip such pixels. Default false. */
  gdalMask?: boolean;
}

/** How `sampleGrid` works, not what it samples. */
export interface SampleOptions {
  /** Where the samples go when it is cols.length x rows.length long (a thread's scratch window); else a new array. */
  into?: Float32Array;
  /** 'javascript' leaves the WebAssembly kernel out (tests compare the two). */
  kernels?: 'wasm-when-possible' | 'javascript';
}

/**
 * Samples the grid at the column and row positions of `samples`. The neighbours of a position are clamped into
 * the grid (a sample between the edge and the last pixel centre takes the edge pixel, as GDAL's bilinear does at a
 * file's edge). A NaN position gives a NaN sample. Where neighbours lack data the others' weights are renormalised;
 * where none has data the sample is NaN. With `gdalMask`, a sample is also NaN when the grid pixel it lies in has
 * no data (so a hole does not shrink by half a pixel). Returns the samples (cols.length x rows.length) and whether
 * any has data.
 */
export function sampleGrid(samples: GridSamples, options: SampleOptions = {}): { data: Float32Array; any: boolean } {
  const { grid, width, height, cols, rows, holes, gdalMask = false } = samples;
  const { into, kernels = 'wasm-when-possible' } = options;
  const w = cols.length;
  const colA = new Int32Array(w);
  const colB = new Int32Array(w);
  const colW = new Float64Array(w);
  let outside = false;
  for (let c = 0; c < w; c++) {
    const at = cols[c];
    if (at !== at) {
      outside = true;
      colW[c] = Number.NaN;
      continue;
    }
    const i0 = Math.floor(at);
    colA[c] = Math.min(width - 1, Math.max(0, i0));
    colB[c] = Math.min(width - 1, Math.max(0, i0 + 1));
    colW[c] = at - i0;
  }
  const h = rows.length;
  const rowA = new Int32Array(h);
  const rowB = new Int32Array(h);
  const rowW = new Float64Array(h);
  for (let r = 0; r < h; r++) {
    const at = rows[r];
    if (at !== at) {
      outside = true;
      rowW[r] = Number.NaN;
      continue;
    }
    const i0 = Math.floor(at);
    rowA[r] = Math.min(height - 1, Math.max(0, i0)) * width;
    rowB[r] = Math.min(height - 1, Math.max(0, i0 + 1)) * width;
    rowW[r] = at - i0;
  }

  const data = into && into.length === w * h ? into : new Float32Array(w * h);
  if (!holes && !outside) {
    // The WebAssembly kernel gives the same samples to the bit (wasm/terrain-kernels.ts: bilinearComplete).
    const wasm = kernels === 'javascript' ? undefined : gridKernels();
    if (wasm && w * h > 0) {
      wasm.bilinear(grid, colA, colB, colW, rowA, rowB, rowW, data);
      return { data, any: true };
    }
    for (let r = 0; r < h; r++) {
      const a = rowA[r];
      const b = rowB[r];
      const fy = rowW[r];
      const o = r * w;
      for (let c = 0; c < w; c++) {
        const i = colA[c];
        const j = colB[c];
        const fx = colW[c];
        const upper = grid[a + i] + (grid[a + j] - grid[a + i]) * fx;
        const lower = grid[b + i] + (grid[b + j] - grid[b + i]) * fx;
        data[o + c] = upper + (lower - upper) * fy;
      }
    }
    return { data, any: w * h > 0 };
  }

  let any = false;
  for (let r = 0; r < h; r++) {
    const a = rowA[r];
    const b = rowB[r];
    const fy = rowW[r];
    const o = r * w;
    for (let c = 0; c < w; c++) {
      const fx = colW[c];
      if (fx !== fx || fy !== fy) {
        data[o + c] = Number.NaN;
        continue;
      }
      const i = colA[c];
      const j = colB[c];
      if (gdalMask) {
        const own = grid[(fy < 0.5 ? a : b) + (fx < 0.5 ? i : j)];
        if (own !== own) {
          data[o + c] = Number.NaN;
          continue;
        }
      }
      let sum = 0;
      let weights = 0;
      // The four neighbours; zero weights and missing data are skipped.
      const w00 = (1 - fx) * (1 - fy);
      const w10 = fx * (1 - fy);
      const w01 = (1 - fx) * fy;
      const w11 = fx * fy;
      const v00 = grid[a + i];
      const v10 = grid[a + j];
      const v01 = grid[b + i];
      const v11 = grid[b + j];
      if (w00 > 0 && v00 === v00) {
        sum += w00 * v00;
        weights += w00;
      }
      if (w10 > 0 && v10 === v10) {
        sum += w10 * v10;
        weights += w10;
      }
      if (w01 > 0 && v01 === v01) {
        sum += w01 * v01;
        weights += w01;
      }
      if (w11 > 0 && v11 === v11) {
        sum += w11 * v11;
        weights += w11;
      }
      if (weights > 0) {
        data[o + c] = sum / weights;
        any = true;
      } else data[o + c] = Number.NaN;
    }
  }
  return { data, any };
}

/** Whether any value of the grid is NaN. */
export function hasNaN(grid: Float32Array): boolean {
  for (let i = 0; i < grid.length; i++) if (grid[i] !== grid[i]) return true;
  return false;
}
