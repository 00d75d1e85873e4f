// Real features for the data-file readers' tests: the OpenMapTiles tile of Dortmund (fixtures/vector/omt-tiles,
// XYZ 13/4265/2723) decoded and projected to longitude/latitude, every layer in one GeoJSON collection with the
// layer's name as `omt_layer`, so that ogr2ogr and hyparquet-writer can write the same features as FlatGeobuf and
// GeoParquet. `shift` moves copies of the city elsewhere (the bounded-memory test repeats it to make big files).
import { readFileSync } from 'node:fs';
import type { Feature, FeatureCollection, Geometry, Position } from 'geojson';
import { fixture } from './server.js';
import { decodeMvt } from '../../src/tiles/mvt-decode.js';
import { featureGeometry } from '../../src/tiles/geojson.js';
import { tileUnitsToLonLat } from '../../src/tiles/project.js';

export const CITY_TILE = { z: 13, x: 4265, y: 2723, file: 'vector/omt-tiles/13_4265_5468.mvt' };

/** The city's features, ids 1..n in tile order (the tile's own ids are not unique across layers). */
export function cityFeatures(): FeatureCollection {
  const { z, x, y, file } = CITY_TILE;
  const tile = decodeMvt(new Uint8Array(readFileSync(fixture(file))));
  const features: Feature[] = [];
  for (const layer of tile) {
    const project = tileUnitsToLonLat(z, x, y, layer.extent);
    for (const f of layer.features) {
      const properties: Record<string, string | number | boolean> = { omt_layer: layer.name };
      for (const [k, v] of Object.entries(f.properties)) properties[k] = typeof v === 'bigint' ? Number(v) : v;
      features.push({ type: 'Feature', id: features.length + 1, geometry: featureGeometry(f, project) as Geometry, properties });
    }
  }
  return { type: 'FeatureCollection', features };
}

const mapPositions = (g: Geometry, fn: (p: Position) => Position): Geometry => {
  switch (g.type) {
    case 'Point':
      return { type: 'Point', coordinates: fn(g.coordinates) };
    case 'MultiPoint':
    case 'LineString':
      return { type: g.type, coordinates: g.coordinates.map(fn) } as Geometry;
    case 'MultiLineString':
    case 'Polygon':
      return { type: g.type, coordinates: g.coordinates.map((l) => l.map(fn)) } as Geometry;
    case 'MultiPolygon':
      return { type: 'MultiPolygon', coordinates: g.coordinates.map((p) => p.map((l) => l.map(fn))) };
    case 'GeometryCollection':
      return { type: 'GeometryCollection', geometries: g.geometries.map((c) => mapPositions(c, fn)) };
  }
};

/** A copy of `g` moved by dx, dy degrees. */
export function shift(g: Geometry, dx: number, dy: number): Geometry {
  return mapPositions(g, (p) => [p[0] + dx, p[1] + dy]);
}

/** The bounding box of a geometry: west, south, east, north. */
export function geometryBox(g: Geometry): [number, number, number, number] {
  const box: [number, number, number, number] = [Infinity, Infinity, -Infinity, -Infinity];
  mapPositions(g, (p) => {
    box[0] = Math.min(box[0], p[0]);
    box[1] = Math.min(box[1], p[1]);
    box[2] = Math.max(box[2], p[0]);
    box[3] = Math.max(box[3], p[1]);
    return p;
  });
  return box;
}
