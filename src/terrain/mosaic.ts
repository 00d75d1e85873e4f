// A DEM window cut from an archive's own tiles (encoded terrain tiles in PMTiles/MBTiles): the tiles around the
// window at the level the archive has (the window's zoom, or its deepest zoom when the window lies deeper), decoded
// to metres and sampled bilinearly at the window's pixel centres. At the archive's own zoom and tile size the
// samples fall on pixel centres and the window is an exact copy; deeper, it is the overzoomed surface a map client
// would draw from the same tiles.
import type { DemWindow } from './dem-window.js';

/** Where a window lies and which archive level feeds it. */
export interface MosaicPlan {
  z: number;
  x: number;
  y: number;
  size: number;
  border: number;
  /** The archive level read. */
  sourceZoom: number;
  /** The archive's tile edge in pixels. */
  sourceSize: number;
}

/** The archive tiles (at `sourceZoom`) a window needs: x wraps around the antimeridian, y outside the world is left out. */
export function tilesNeeded(plan: MosaicPlan): { x: number; y: number }[] {
  const { minU, maxU, minV, maxV } = sourceExtent(plan);
  const n = 2 ** plan.sourceZoom;
  const out: { x: number; y: number }[] = [];
  for (let ty = Math.floor(minV / plan.sourceSize); ty <= Math.floor(maxV / plan.sourceSize); ty++) {
    if (ty < 0 || ty >= n) continue;
    for (let tx = Math.floor(minU / plan.sourceSize); tx <= Math.floor(maxU / plan.sourceSize); tx++) out.push({ x: ((tx % n) + n) % n, y: ty });
  }
  // A window wider than the world at z0 would list a column twice.
  return out.filter((t, i) => out.findIndex((o) => o.x === t.x && o.y === t.y) === i);
}

/** The scale from window pixels to archive pixels, and the archive-pixel range the window's samples touch (one pixel more each way). */
function sourceExtent(plan: MosaicPlan) {
  const scale = (plan.sourceSize / plan.size) * 2 ** (plan.sourceZoom - plan.z);
  const side = plan.size + 2 * plan.border;
  const first = (plan.x * plan.size - plan.border + 0.5) * scale - 0.5;
  const firstRow = (plan.y * plan.size - plan.border + 0.5) * scale - 0.5;
  const last = first + (side - 1) * scale;
  const lastRow = firstRow + (side - 1) * scale;
  return { scale, first, firstRow, minU: Math.floor(first), maxU: Math.floor(last) + 1, minV: Math.floor(firstRow), maxV: Math.floor(lastRow) + 1 };
}

/**
 * The window sampled from decoded archive tiles (`tiles` by `${x}/${y}` at `sourceZoom`, metres, NaN without data;
 * a tile the archive lacks is simply absent). Undefined when no sample has data.
 *
 * The archive pixels the window touches are first copied row by row into one contiguous region (columns wrap around
 * the antimeridian, rows stop at the world's edges), so the loop over the window's pixels reads one array with
 * indices worked out once per column and once per row. Where the region has no hole the samples are plain bilinear
 * blends; otherwise each blends only its neighbours with data, weighted as they are.
 */
export function assembleWindow(plan: MosaicPlan, tiles: ReadonlyMap<string, Float32Array>): DemWindow | undefined {
  const { scale, first, firstRow, minU, maxU, minV, maxV } = sourceExtent(plan);
  const T = plan.sourceSize;
  const worldPixels = 2 ** plan.sourceZoom * T;
  const side = plan.size + 2 * plan.border;
  // Region rows: the world's rows from top to bottom of the window, clamped to the world (samples above the first
  // pixel centre of the world take the first row, as map clients do at the poles' edge).
  const top = Math.min(worldPixels - 1, Math.max(0, minV));
  const bottom = Math.min(worldPixels - 1, Math.max(0, maxV));
  const width = maxU - minU + 1;
  const height = bottom - top + 1;
  const region = new Float32Array(width * height);
  let holes = false;
  for (let v = top; v <= bottom; v++) {
    const ty = Math.floor(v / T);
    const rowInTile = (v % T) * T;
    const o = (v - top) * width;
    for (let u = minU; u <= maxU; ) {
      const g = ((u % worldPixels) + worldPixels) % worldPixels;
      const tx = Math.floor(g / T);
      const off = g % T;
      // The run of columns inside this tile.
      const run = Math.min(T - off, maxU - u + 1);
      const tile = tiles.get(`${tx}/${ty}`);
      const at = o + (u - minU);
      if (tile) region.set(tile.subarray(rowInTile + off, rowInTile + off + run), at);
      else {
        region.fill(Number.NaN, at, at + run);
        holes = true;
      }
      u += run;
    }
  }
  if (!holes) for (let i = 0; i < region.length; i++) if (region[i] !== region[i]) { holes = true; break; }

  // Per column and per row: the region index of the lower neighbour and the weight of the upper one.
  const colA = new Int32Array(side);
  const colW = new Float64Array(side);
  for (let c = 0; c < side; c++) {
    const at = first + c * scale;
    const i0 = Math.floor(at);
    colA[c] = i0 - minU;
    colW[c] = at - i0;
  }
  const rowA = new Int32Array(side);
  const rowB = new Int32Array(side);
  const rowW = new Float64Array(side);
  for (let r = 0; r < side; r++) {
    const at = Math.min(worldPixels - 1, Math.max(0, firstRow + r * scale));
    const i0 = Math.floor(at);
    rowA[r] = (i0 - top) * width;
    rowB[r] = (Math.min(worldPixels - 1, i0 + 1) - top) * width;
    rowW[r] = at - i0;
  }

  const data = new Float32Array(side * side);
  if (!holes) {
    for (let r = 0; r < side; r++) {
      const a = rowA[r];
      const b = rowB[r];
      const fy = rowW[r];
      const o = r * side;
      for (let c = 0; c < side; c++) {
        const i = colA[c];
        const fx = colW[c];
        const upper = region[a + i] + (region[a + i + 1] - region[a + i]) * fx;
        const lower = region[b + i] + (region[b + i + 1] - region[b + i]) * fx;
        data[o + c] = upper + (lower - upper) * fy;
      }
    }
    return { z: plan.z, x: plan.x, y: plan.y, size: plan.size, border: plan.border, data };
  }

  let any = false;
  for (let r = 0; r < side; r++) {
    const a = rowA[r];
    const b = rowB[r];
    const fy = rowW[r];
    for (let c = 0; c < side; c++) {
      const i = colA[c];
      const fx = colW[c];
      let sum = 0;
      let weights = 0;
      // The four neighbours; zero weights and missing data are skipped.
      const w00 = (1 - fx) * (1 - fy);
      const w10 = fx * (1 - fy);
      const w01 = (1 - fx) * fy;
      const w11 = fx * fy;
      const v00 = region[a + i];
      const v10 = region[a + i + 1];
      const v01 = region[b + i];
      const v11 = region[b + i + 1];
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
        data[r * side + c] = sum / weights;
        any = true;
      } else data[r * side + c] = Number.NaN;
    }
  }
  return any ? { z: plan.z, x: plan.x, y: plan.y, size: plan.size, border: plan.border, data } : undefined;
}

/** Elevation at fractional window-pixel coordinates (pixel centres at +0.5), bilinear; NaN where no neighbour has data. */
export function sampleWindow(win: DemWindow, px: number, py: number): number {
  const side = win.size + 2 * win.border;
  const u = Math.min(side - 1, Math.max(0, px + win.border - 0.5));
  const v = Math.min(side - 1, Math.max(0, py + win.border - 0.5));
  const i0 = Math.floor(u);
  const j0 = Math.floor(v);
  const fx = u - i0;
  const fy = v - j0;
  let sum = 0;
  let weights = 0;
  for (let dj = 0; dj <= 1; dj++) {
    for (let di = 0; di <= 1; di++) {
      const w = (di ? fx : 1 - fx) * (dj ? fy : 1 - fy);
      if (w === 0) continue;
      const value = win.data[Math.min(side - 1, j0 + dj) * side + Math.min(side - 1, i0 + di)];
      if (value !== value) continue;
      sum += w * value;
      weights += w;
    }
  }
  return weights > 0 ? sum / weights : Number.NaN;
}
