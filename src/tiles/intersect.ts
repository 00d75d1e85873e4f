// Whether a feature's geometry meets an axis-aligned rectangle, in tile units. Exact for the integer
// geometry of vector tiles: points inside (edges included), any segment crossing, or the rectangle lying
// inside a polygon.
import type { TileFeature } from './vector-model.js';

export interface Rect {
  minX: number;
  minY: number;
  maxX: number;
  maxY: number;
}

/** Whether (x, y) lies in the rectangle, edges included. */
export const inside = (r: Rect, x: number, y: number) => x >= r.minX && x <= r.maxX && y >= r.minY && y <= r.maxY;

/**
 * Liang–Barsky: the parameters t0 <= t1 in [0, 1] between which the segment (x0,y0)-(x1,y1) lies in the
 * rectangle, or undefined when it misses it. Shared by the hit test here and by tile cutting (overzoom.ts).
 */
export function segmentRange(r: Rect, x0: number, y0: number, x1: number, y1: number): [number, number] | undefined {
  let t0 = 0;
  let t1 = 1;
  const dx = x1 - x0;
  const dy = y1 - y0;
  const ps = [-dx, dx, -dy, dy];
  const qs = [x0 - r.minX, r.maxX - x0, y0 - r.minY, r.maxY - y0];
  for (let i = 0; i < 4; i++) {
    const p = ps[i];
    const q = qs[i];
    if (p === 0) {
      if (q < 0) return undefined;
    } else {
      const t = q / p;
      if (p < 0) {
        if (t > t1) return undefined;
        if (t > t0) t0 = t;
      } else {
        if (t < t0) return undefined;
        if (t < t1) t1 = t;
      }
    }
  }
  return [t0, t1];
}

/** Does the segment (x0,y0)-(x1,y1) touch the rectangle? */
const segmentHits = (r: Rect, x0: number, y0: number, x1: number, y1: number) => segmentRange(r, x0, y0, x1, y1) !== undefined;

function pathHits(r: Rect, flat: readonly number[], closed: boolean): boolean {
  const n = flat.length;
  if (n >= 2 && inside(r, flat[0], flat[1])) return true;
  for (let i = 2; i < n; i += 2) if (segmentHits(r, flat[i - 2], flat[i - 1], flat[i], flat[i + 1])) return true;
  return closed && n >= 4 && segmentHits(r, flat[n - 2], flat[n - 1], flat[0], flat[1]);
}

/** Even-odd rule over every ring of the feature (holes and separate polygons alike). */
function insideRings(rings: readonly number[][], x: number, y: number): boolean {
  let odd = false;
  for (const ring of rings) {
    const n = ring.length;
    for (let i = 0, j = n - 2; i < n; j = i, i += 2) {
      const yi = ring[i + 1];
      const yj = ring[j + 1];
      if (yi > y !== yj > y && x < ((ring[j] - ring[i]) * (y - yi)) / (yj - yi) + ring[i]) odd = !odd;
    }
  }
  return odd;
}

export function featureIntersects(f: TileFeature, r: Rect): boolean {
  switch (f.type) {
    case 1:
      for (const p of f.geometry) for (let i = 0; i < p.length; i += 2) if (inside(r, p[i], p[i + 1])) return true;
      return false;
    case 2:
      return f.geometry.some((p) => pathHits(r, p, false));
    case 3:
      return f.geometry.some((p) => pathHits(r, p, true)) || insideRings(f.geometry, (r.minX + r.maxX) / 2, (r.minY + r.maxY) / 2);
  }
}
