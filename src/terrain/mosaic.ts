// A DEM window cut from an archive's own tiles (encoded terrain tiles in PMTiles/MBTiles): the tiles around the
// window at the level the archive has (the window's zoom, or its deepest zoom when the window lies deeper), decoded
// to metres and sampled bilinearly at the window's pixel centres. At the archive's own zoom and tile size the
// samples fall on pixel centres and the window is an exact copy; deeper, it is the overzoomed surface a map client
// would draw from the same tiles.
import type { DemWindow } from './dem-window.js';
import { hasNaN, sampleGrid } from '../grid/bilinear.js';

/**
 * Buffers a thread reuses from one window to the next, for windows consumed before the next is assembled (a
 * hillshade tile's): a 512 px window is a megabyte, and allocating one per tile kept the garbage collector busy.
 * Every value of a buffer handed out is overwritten by the assembly.
 */
export class WindowScratch {
  private regionBuffer = new Float32Array(0);
  private windowBuffer = new Float32Array(0);
  region(length: number): Float32Array {
    if (this.regionBuffer.length < length) this.regionBuffer = new Float32Array(length);
    return this.regionBuffer.subarray(0, length);
  }
  window(length: number): Float32Array {
    if (this.windowBuffer.length < length) this.windowBuffer = new Float32Array(length);
    return this.windowBuffer.subarray(0, length);
  }
}

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
 * the antimeridian, rows stop at the world's edges), which is then resampled (src/grid/bilinear.ts): each window
 * pixel blends the four region pixels around its centre, or those of them with data.
 */
export function assembleWindow(plan: MosaicPlan, tiles: ReadonlyMap<string, Float32Array>, scratch?: WindowScratch): DemWindow | undefined {
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
  const region = scratch ? scratch.region(width * height) : new Float32Array(width * height);
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
  if (!holes) holes = hasNaN(region);
  // Window pixel centres in region pixels: columns unwrapped from minU, rows clamped to the world then from top.
  const cols = new Float64Array(side);
  for (let c = 0; c < side; c++) cols[c] = first + c * scale - minU;
  const rows = new Float64Array(side);
  for (let r = 0; r < side; r++) rows[r] = Math.min(worldPixels - 1, Math.max(0, firstRow + r * scale)) - top;
  const { data, any } = sampleGrid({ grid: region, width, height, cols, rows, holes }, { into: scratch?.window(side * side) });
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
