// The feature query over decoded tiles (runs in a vector pool thread): keep the features of the wanted
// layers whose geometry meets the bounding box inside the tile's own area, drop repeats of a feature split
// across tiles (same layer, same id), count them all and return the first `limit` with their geometry in
// longitude/latitude.
import { featureGeometry, jsonId, jsonProperties, type Geometry } from './geojson.js';
import type { VectorTileData } from './vector-model.js';
import { featureIntersects } from './intersect.js';
import { lonLatToTileUnits, tileUnitsToLonLat } from './project.js';

export type BBox = [west: number, south: number, east: number, north: number];

export interface QueryTile {
  z: number;
  x: number;
  y: number;
  tile: VectorTileData;
}

export interface QueryFeature {
  layer: string;
  geometry_type: Geometry['type'];
  properties: Record<string, string | number | boolean>;
  id?: string | number;
  geometry: Geometry;
}

export interface QueryResult {
  features: QueryFeature[];
  total: number;
}

export function queryTiles(tiles: readonly QueryTile[], bbox: BBox, layers: readonly string[] | undefined, limit: number): QueryResult {
  const wanted = layers ? new Set(layers) : undefined;
  const seen = new Set<string>();
  const features: QueryFeature[] = [];
  let total = 0;
  for (const { z, x, y, tile } of tiles) {
    for (const layer of tile) {
      if (wanted && !wanted.has(layer.name)) continue;
      // The box is cut to the tile's own area (half-open: x = extent belongs to the next tile). Features in the
      // tile's buffer are found in the tile they belong to, so a point is never counted twice.
      const [minX, minY] = lonLatToTileUnits(bbox[0], bbox[3], z, x, y, layer.extent);
      const [maxX, maxY] = lonLatToTileUnits(bbox[2], bbox[1], z, x, y, layer.extent);
      const edge = layer.extent - 0.5;
      const rect = { minX: Math.max(0, minX), minY: Math.max(0, minY), maxX: Math.min(edge, maxX), maxY: Math.min(edge, maxY) };
      if (rect.minX > rect.maxX || rect.minY > rect.maxY) continue;
      const project = tileUnitsToLonLat(z, x, y, layer.extent);
      for (const f of layer.features) {
        if (!featureIntersects(f, rect)) continue;
        if (f.id !== undefined) {
          const key = `${layer.name}\u0000${String(f.id)}`;
          if (seen.has(key)) continue;
          seen.add(key);
        }
        total++;
        if (features.length >= limit) continue;
        const geometry = featureGeometry(f, project);
        const id = jsonId(f.id);
        features.push({ layer: layer.name, geometry_type: geometry.type, properties: jsonProperties(f.properties), ...(id !== undefined ? { id } : {}), geometry });
      }
    }
  }
  return { features, total };
}
