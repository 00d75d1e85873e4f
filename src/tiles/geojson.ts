// Vector tile features as GeoJSON. `/data/{id}/{z}/{x}/{y}.geojson` keeps tile coordinates (0..extent,
// spec); spatial queries project the same geometries to longitude/latitude with `toLonLat`.
import { classifyRings, type PropValue, type TileFeature, type VectorTileData } from './vector-model.js';

export type Position = [number, number];
export type Geometry =
  | { type: 'Point'; coordinates: Position }
  | { type: 'MultiPoint'; coordinates: Position[] }
  | { type: 'LineString'; coordinates: Position[] }
  | { type: 'MultiLineString'; coordinates: Position[][] }
  | { type: 'Polygon'; coordinates: Position[][] }
  | { type: 'MultiPolygon'; coordinates: Position[][][] };

/** Maps a tile-unit vertex to output coordinates. */
export type Project = (x: number, y: number) => Position;

const identity: Project = (x, y) => [x, y];

function line(flat: readonly number[], project: Project): Position[] {
  const out: Position[] = new Array(flat.length >> 1);
  for (let i = 0; i < flat.length; i += 2) out[i >> 1] = project(flat[i], flat[i + 1]);
  return out;
}

/** GeoJSON rings are closed: the first position is repeated at the end. */
function ring(flat: readonly number[], project: Project): Position[] {
  const out = line(flat, project);
  if (out.length > 0) out.push(out[0]);
  return out;
}

/** The GeoJSON geometry of a feature; single-part features get the single type, others the Multi type. */
export function featureGeometry(f: TileFeature, project: Project = identity): Geometry {
  const parts = f.geometry;
  switch (f.type) {
    case 1: {
      const points = parts.flatMap((p) => line(p, project));
      return points.length === 1 ? { type: 'Point', coordinates: points[0] } : { type: 'MultiPoint', coordinates: points };
    }
    case 2:
      return parts.length === 1 ? { type: 'LineString', coordinates: line(parts[0], project) } : { type: 'MultiLineString', coordinates: parts.map((p) => line(p, project)) };
    case 3: {
      const polygons = classifyRings(parts).map((rings) => rings.map((r) => ring(r, project)));
      return polygons.length === 1 ? { type: 'Polygon', coordinates: polygons[0] } : { type: 'MultiPolygon', coordinates: polygons };
    }
  }
}

/**
 * A JSON-safe value: integers beyond 2^53 become decimal strings, since a JSON number that large is not
 * read back exactly by most parsers (JavaScript's included).
 */
export const jsonValue = (v: PropValue): string | number | boolean => (typeof v === 'bigint' ? v.toString() : v);

export function jsonId(id: number | bigint | undefined): string | number | undefined {
  return id === undefined ? undefined : typeof id === 'bigint' ? id.toString() : id;
}

export function jsonProperties(props: Record<string, PropValue>): Record<string, string | number | boolean> {
  // Null prototype: a tile key named `__proto__` must stay a plain property.
  const out = Object.create(null) as Record<string, string | number | boolean>;
  for (const key in props) out[key] = jsonValue(props[key]);
  return out;
}

/** A FeatureCollection in tile coordinates; each feature's properties carry `_layer`, its layer name. */
export function tileToGeoJson(tile: VectorTileData): { type: 'FeatureCollection'; features: unknown[] } {
  const features: unknown[] = [];
  for (const layer of tile) {
    for (const f of layer.features) {
      const id = jsonId(f.id);
      features.push({
        type: 'Feature',
        ...(id !== undefined ? { id } : {}),
        geometry: featureGeometry(f),
        properties: { ...jsonProperties(f.properties), _layer: layer.name },
      });
    }
  }
  return { type: 'FeatureCollection', features };
}
