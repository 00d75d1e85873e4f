// Tile coordinates from URL path segments. Strict: only plain decimal integers are accepted, since
// "1e1", " 1", "0x1" and "01.0" would all be read as numbers by Number() and alias other tiles in caches.
export const MAX_ZOOM = 22;

export interface TileCoord {
  z: number;
  x: number;
  y: number;
}

export type CoordResult = { ok: true; coord: TileCoord } | { ok: false; problem: string };

const INTEGER = /^(0|[1-9][0-9]{0,8})$/;

export function parseTileCoord(zs: string, xs: string, ys: string): CoordResult {
  if (!INTEGER.test(zs)) return { ok: false, problem: `zoom "${zs}" is not an integer 0..${MAX_ZOOM}` };
  const z = Number(zs);
  if (z > MAX_ZOOM) return { ok: false, problem: `zoom ${z} is above ${MAX_ZOOM}` };
  const max = 2 ** z - 1;
  if (!INTEGER.test(xs) || Number(xs) > max) return { ok: false, problem: `x "${xs}" is not an integer 0..${max} at zoom ${z}` };
  if (!INTEGER.test(ys) || Number(ys) > max) return { ok: false, problem: `y "${ys}" is not an integer 0..${max} at zoom ${z}` };
  return { ok: true, coord: { z, x: Number(xs), y: Number(ys) } };
}

/** Splits the last path segment `{y}.{ext}` (or `{y}@{s}x.{ext}`) into its parts; undefined if it has no extension. */
export function splitTileFile(segment: string): { y: string; scale: string | undefined; ext: string } | undefined {
  const m = /^([^.@]*)(?:@([^.]*)x)?\.([A-Za-z0-9]+)$/.exec(segment);
  if (!m) return undefined;
  return { y: m[1], scale: m[2], ext: m[3] };
}

/** Longitude/latitude of a tile's north-west corner (Web Mercator). */
export function tileToLonLat(z: number, x: number, y: number): [number, number] {
  const n = 2 ** z;
  const lon = (x / n) * 360 - 180;
  const lat = (Math.atan(Math.sinh(Math.PI * (1 - (2 * y) / n))) * 180) / Math.PI;
  return [lon, lat];
}

/** The tile containing a longitude/latitude at zoom z (clamped to the valid range). */
export function lonLatToTile(lon: number, lat: number, z: number): { x: number; y: number } {
  const n = 2 ** z;
  const clampedLat = Math.max(-85.0511287798, Math.min(85.0511287798, lat));
  const r = (clampedLat * Math.PI) / 180;
  const x = Math.floor(((lon + 180) / 360) * n);
  const y = Math.floor(((1 - Math.log(Math.tan(r) + 1 / Math.cos(r)) / Math.PI) / 2) * n);
  return { x: Math.min(n - 1, Math.max(0, x)), y: Math.min(n - 1, Math.max(0, y)) };
}

/** Whether tile (z,x,y) intersects bounds [w,s,e,n] in degrees. */
export function tileIntersectsBounds(c: TileCoord, bounds: readonly [number, number, number, number]): boolean {
  const [w, n] = tileToLonLat(c.z, c.x, c.y);
  const [e, s] = tileToLonLat(c.z, c.x + 1, c.y + 1);
  const [bw, bs, be, bn] = bounds;
  // Bounds crossing the antimeridian (west > east) cover everything outside [east, west].
  const lonOverlap = bw <= be ? e > bw && w < be : e > bw || w < be;
  return lonOverlap && n > bs && s < bn;
}
