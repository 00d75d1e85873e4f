// Points grouped by the Web Mercator tile that holds them, so that a batch of elevation reads fetches and decodes
// each tile once however many points fall in it.
//
// Pixel positions are fractional and follow the raster convention of pixel areas: pixel i covers [i, i+1) and
// its centre is at i + 0.5. A point at (px, py) = (0, 0) is the tile's top-left corner, the corner of its first
// pixel; a bilinear read blends the four pixels whose centres surround it, floor(px - 0.5) and the one after on
// each axis (those outside the tile come from the neighbouring tile, or are clamped to the edge).
import { worldXY } from '../tiles/project.js';
import type { LonLat } from './profile.js';

export interface TileItem {
  /** The point's index in the list given to groupByTile. */
  index: number;
  /** Fractional pixel position inside the tile, 0..tileSize on each axis, y down. */
  px: number;
  py: number;
}

export interface TileGroup {
  z: number;
  x: number;
  y: number;
  /** The points in this tile, in the order they were given. */
  items: TileItem[];
}

/** The key of a tile in groupByTile's map. */
export const tileKey = (z: number, x: number, y: number) => `${z}/${x}/${y}`;

/**
 * The points grouped by their tile at zoom `z` (tiles of `tileSize` pixels), in order of each tile's first point.
 * Latitudes beyond Web Mercator's limit are taken at the limit. A point on the world's east or south edge
 * (longitude 180, the southern latitude limit) belongs to the last tile, at px or py = tileSize, not to a tile
 * outside the world; a point on an edge between two tiles belongs to the one east or south of it.
 */
export function groupByTile(points: readonly LonLat[], z: number, tileSize: number): Map<string, TileGroup> {
  const n = 2 ** z;
  const groups = new Map<string, TileGroup>();
  points.forEach(([lon, lat], index) => {
    const [wx, wy] = worldXY(lon, lat);
    const fx = wx * n;
    const fy = wy * n;
    const x = clamp(Math.floor(fx), 0, n - 1);
    const y = clamp(Math.floor(fy), 0, n - 1);
    // Clamped as well: at the latitude limit, rounding leaves wy a hair outside 0..1.
    const px = clamp((fx - x) * tileSize, 0, tileSize);
    const py = clamp((fy - y) * tileSize, 0, tileSize);
    const key = tileKey(z, x, y);
    let group = groups.get(key);
    if (!group) {
      group = { z, x, y, items: [] };
      groups.set(key, group);
    }
    group.items.push({ index, px, py });
  });
  return groups;
}

function clamp(v: number, lo: number, hi: number): number {
  return v < lo ? lo : v > hi ? hi : v;
}
