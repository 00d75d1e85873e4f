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
 */
export function assembleWindow(plan: MosaicPlan, tiles: ReadonlyMap<string, Float32Array>): DemWindow | undefined {
  const { scale, first, firstRow } = sourceExtent(plan);
  const n = 2 ** plan.sourceZoom;
  const T = plan.sourceSize;
  const worldPixels = n * T;
  const side = plan.size + 2 * plan.border;
  const data = new Float32Array(side * side);
  let any = false;
  const at = (u: number, v: number): number => {
    if (v < 0 || v >= worldPixels) return Number.NaN;
    const uu = ((u % worldPixels) + worldPixels) % worldPixels;
    const tile = tiles.get(`${Math.floor(uu / T)}/${Math.floor(v / T)}`);
    return tile ? tile[(v % T) * T + (uu % T)] : Number.NaN;
  };
  for (let r = 0; r < side; r++) {
    const v = firstRow + r * scale;
    // Rows above the first pixel centre of the world take the first row (and likewise at the bottom).
    const vc = Math.min(worldPixels - 1, Math.max(0, v));
    const j0 = Math.floor(vc);
    const fy = vc - j0;
    for (let c = 0; c < side; c++) {
      const u = first + c * scale;
      const i0 = Math.floor(u);
      const fx = u - i0;
      let sum = 0;
      let weights = 0;
      for (let dj = 0; dj <= 1; dj++) {
        const wy = dj ? fy : 1 - fy;
        if (wy === 0) continue;
        for (let di = 0; di <= 1; di++) {
          const w = (di ? fx : 1 - fx) * wy;
          if (w === 0) continue;
          const value = at(i0 + di, Math.min(worldPixels - 1, j0 + dj));
          if (value !== value) continue;
          sum += w * value;
          weights += w;
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
