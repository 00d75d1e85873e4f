// The tiles an expiry given as an area changes: a bounding box or a GeoJSON geometry, as keys of one zoom. The
// zoom is the deepest the expiry reaches (its band's max_zoom, else the deepest zoom the source is served at),
// made coarser while the area would take more than AREA_MAX_TILES tiles there: a coarser tile covers all of its
// descendants in the index (area-times.ts), so the answer stays correct and only expires a little more around
// the area's edge. A geometry marks only the tiles it touches (a line's tiles, a polygon's tiles minus its holes).
import type { GeoArea } from '../tiles/geo-area.js';
import { boxTileCount, tileMeetsShapes, tileRange } from '../tiles/geo-area.js';
import { unique } from './area-times.js';
import { tileKey } from './tile-key.js';

/** The most tiles one area is marked with (8 bytes each in a batch, 16 in each process's index). */
export const AREA_MAX_TILES = 65_536;

/**
 * The most segment tests one geometry may cost: each tile of its box is tested against every vertex (about 1 ns
 * each), so a detailed geometry is marked at a coarser zoom instead of holding the listener for seconds.
 */
export const AREA_MAX_TESTS = 2 ** 27;

/** The zoom an area is marked at: `deepest`, or coarser until it fits both bounds above. */
export function areaZoom(area: GeoArea, deepest: number): number {
  let vertices = 0;
  for (const f of area.shapes ?? []) for (const part of f.geometry) vertices += part.length / 2;
  let z = deepest;
  for (; z > 0; z--) {
    const tiles = boxTileCount(area.bbox, z);
    if (tiles <= AREA_MAX_TILES && tiles * vertices <= AREA_MAX_TESTS) break;
  }
  return z;
}

/** The tiles of zoom z the area touches, as sorted unique keys. */
export function areaTiles(area: GeoArea, z: number): Float64Array {
  const { x0, x1, y0, y1 } = tileRange(area.bbox, z);
  const out = new Float64Array((x1 - x0 + 1) * (y1 - y0 + 1));
  let n = 0;
  for (let y = y0; y <= y1; y++) {
    for (let x = x0; x <= x1; x++) {
      if (area.shapes && !tileMeetsShapes(area.shapes, z, x, y)) continue;
      out[n++] = tileKey(z, x, y);
    }
  }
  return unique(out.subarray(0, n).sort());
}
