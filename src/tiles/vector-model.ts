// The in-memory form of a vector tile that every vector operation shares: MVT and MLT decode into it,
// MVT and MLT encode from it, composites merge it, GeoJSON and spatial queries read it.
// Geometry stays in tile units as flat coordinate lists: no Point objects, so big tiles stay cheap.

/** MVT geometry types: 1 point(s), 2 line string(s), 3 polygon(s). Multi-part is a matter of how many parts. */
export type GeomType = 1 | 2 | 3;

/** A property value. Integers beyond 2^53 are bigints so that 64-bit values survive a transcode exactly. */
export type PropValue = string | number | boolean | bigint;

export interface TileFeature {
  /** Feature id; bigint only when it does not fit a double exactly (e.g. OSM ids stored as uint64). */
  id: number | bigint | undefined;
  type: GeomType;
  /**
   * Parts as flat `[x0, y0, x1, y1, …]` lists: one per point (type 1), per line (type 2), per ring (type 3).
   * Rings are open: the closing vertex equal to the first is not repeated (the MVT wire form).
   */
  geometry: number[][];
  /** Null-prototype record: keys come from tiles and may be anything, `__proto__` included. */
  properties: Record<string, PropValue>;
}

export interface TileLayer {
  name: string;
  extent: number;
  /** MVT layer version (2 for tiles written by this server). */
  version: number;
  features: TileFeature[];
}

export type VectorTileData = TileLayer[];

export const DEFAULT_EXTENT = 4096;

/** Total number of features over all layers. */
export function featureCount(tile: VectorTileData): number {
  let n = 0;
  for (const l of tile) n += l.features.length;
  return n;
}

/**
 * Twice the signed area of an open ring (shoelace), in tile units where y grows downwards. MVT exterior
 * rings have a positive area by this formula, holes a negative one.
 */
export function ringArea2(ring: readonly number[]): number {
  let sum = 0;
  const n = ring.length;
  for (let i = 0, j = n - 2; i < n; j = i, i += 2) sum += (ring[j] - ring[i]) * (ring[i + 1] + ring[j + 1]);
  return sum;
}

/**
 * Groups the rings of an MVT polygon feature into polygons: a ring wound like the first ring starts a new
 * polygon, an opposite ring is a hole of the current one. Zero-area rings are kept with the current polygon
 * (dropping them, as some readers do, would change the feature).
 */
export function classifyRings(rings: number[][]): number[][][] {
  const polygons: number[][][] = [];
  let current: number[][] | undefined;
  let outerSign = 0;
  for (const ring of rings) {
    const area = ringArea2(ring);
    const sign = Math.sign(area);
    if (outerSign === 0 && sign !== 0) outerSign = sign;
    if (!current || (sign !== 0 && sign === outerSign)) {
      current = [ring];
      polygons.push(current);
    } else current.push(ring);
  }
  return polygons;
}
