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

/** Where one axis of the window samples the archive: for each sample, its two neighbours' tiles, offsets and weight. */
interface AxisSamples {
  /** Tile index (column or row of the archive level) of the lower and upper neighbour. */
  tileA: Int32Array;
  tileB: Int32Array;
  /** Pixel offset inside those tiles. */
  offA: Int32Array;
  offB: Int32Array;
  /** Weight of the upper neighbour (the lower one gets 1 - weight). */
  weight: Float64Array;
}

/** Samples along one axis: `first + k * scale` for k < count, in archive pixels (centres at integers). */
function axisSamples(first: number, scale: number, count: number, T: number, worldPixels: number, wrap: boolean): AxisSamples {
  const out: AxisSamples = { tileA: new Int32Array(count), tileB: new Int32Array(count), offA: new Int32Array(count), offB: new Int32Array(count), weight: new Float64Array(count) };
  const place = (p: number): number => (wrap ? ((p % worldPixels) + worldPixels) % worldPixels : Math.min(worldPixels - 1, Math.max(0, p)));
  for (let k = 0; k < count; k++) {
    // Rows above the first pixel centre of the world take the first row (and likewise at the bottom); columns wrap.
    const at = wrap ? first + k * scale : Math.min(worldPixels - 1, Math.max(0, first + k * scale));
    const i0 = Math.floor(at);
    const a = place(i0);
    const b = place(i0 + 1);
    out.tileA[k] = Math.floor(a / T);
    out.tileB[k] = Math.floor(b / T);
    out.offA[k] = a % T;
    out.offB[k] = b % T;
    out.weight[k] = at - i0;
  }
  return out;
}

/**
 * The window sampled from decoded archive tiles (`tiles` by `${x}/${y}` at `sourceZoom`, metres, NaN without data;
 * a tile the archive lacks is simply absent). Undefined when no sample has data. Where the tile of each sample lies
 * is worked out once per column and once per row, so the loop over pixels does no lookups by key.
 */
export function assembleWindow(plan: MosaicPlan, tiles: ReadonlyMap<string, Float32Array>): DemWindow | undefined {
  const { scale, first, firstRow } = sourceExtent(plan);
  const T = plan.sourceSize;
  const worldPixels = 2 ** plan.sourceZoom * T;
  const side = plan.size + 2 * plan.border;
  const cols = axisSamples(first, scale, side, T, worldPixels, true);
  const rows = axisSamples(firstRow, scale, side, T, worldPixels, false);
  // The few tile columns the window touches, numbered 0..k-1 so that a row can hold its tiles in a small array.
  const tileColumns = [...new Set([...cols.tileA, ...cols.tileB])];
  const slotA = Int32Array.from(cols.tileA, (t) => tileColumns.indexOf(t));
  const slotB = Int32Array.from(cols.tileB, (t) => tileColumns.indexOf(t));
  const rowTiles = (ty: number) => tileColumns.map((tx) => tiles.get(`${tx}/${ty}`));
  const data = new Float32Array(side * side);
  let any = false;
  let upperRow = -1;
  let lowerRow = -1;
  let upperTiles: (Float32Array | undefined)[] = [];
  let lowerTiles: (Float32Array | undefined)[] = [];
  for (let r = 0; r < side; r++) {
    if (rows.tileA[r] !== upperRow) upperTiles = rowTiles((upperRow = rows.tileA[r]));
    if (rows.tileB[r] !== lowerRow) lowerTiles = rowTiles((lowerRow = rows.tileB[r]));
    const fy = rows.weight[r];
    const baseA = rows.offA[r] * T;
    const baseB = rows.offB[r] * T;
    for (let c = 0; c < side; c++) {
      const fx = cols.weight[c];
      let sum = 0;
      let weights = 0;
      // The four neighbours: (A, A), (B, A), (A, B), (B, B) as (column, row); zero weights and missing data skipped.
      const w00 = (1 - fx) * (1 - fy);
      const w10 = fx * (1 - fy);
      const w01 = (1 - fx) * fy;
      const w11 = fx * fy;
      if (w00 > 0) {
        const v = upperTiles[slotA[c]]?.[baseA + cols.offA[c]];
        if (v !== undefined && v === v) {
          sum += w00 * v;
          weights += w00;
        }
      }
      if (w10 > 0) {
        const v = upperTiles[slotB[c]]?.[baseA + cols.offB[c]];
        if (v !== undefined && v === v) {
          sum += w10 * v;
          weights += w10;
        }
      }
      if (w01 > 0) {
        const v = lowerTiles[slotA[c]]?.[baseB + cols.offA[c]];
        if (v !== undefined && v === v) {
          sum += w01 * v;
          weights += w01;
        }
      }
      if (w11 > 0) {
        const v = lowerTiles[slotB[c]]?.[baseB + cols.offB[c]];
        if (v !== undefined && v === v) {
          sum += w11 * v;
          weights += w11;
        }
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
