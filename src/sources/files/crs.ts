// Coordinates of a data file to longitude/latitude. Longitude/latitude files (EPSG:4326, OGC:CRS84, or no CRS
// given, which both FlatGeobuf and GeoParquet define as that) pass through untouched; Web Mercator (EPSG:3857
// and its aliases) is inverted here with the spherical formulas; any other CRS GDAL knows is transformed with
// GDAL's OSR (gdal-async, loaded only then). Files store x as east whatever the CRS's official axis order
// (GeoParquet says so, FlatGeobuf writers do), so both sides go through PROJ strings, which are always
// (east, north), as the raster code does. A CRS GDAL cannot read is an open error, never a silent guess.
import type { Geometry, Position } from 'geojson';

/** x, y in one CRS to x, y in another. */
export type ToLonLat = (x: number, y: number) => [number, number];

/** A file CRS's way to longitude/latitude and back (the way back turns a requested box into an index query). */
export interface CrsTransform {
  toLonLat: ToLonLat;
  fromLonLat: ToLonLat;
}

/** How a file names its CRS: an authority and code, and/or a definition GDAL reads (WKT, PROJJSON). */
export interface CrsName {
  authority?: string;
  code?: string | number;
  definition?: string;
}

const R = 6378137;
const MERCATOR_CODES = new Set(['3857', '900913', '3785', '102100', '102113']);

const MAX_LAT = 85.0511287798066;

export const MERCATOR: CrsTransform = {
  toLonLat: (x, y) => [(x / R) * (180 / Math.PI), (Math.atan(Math.exp(y / R)) * 2 - Math.PI / 2) * (180 / Math.PI)],
  fromLonLat: (lon, lat) => {
    const phi = (Math.max(-MAX_LAT, Math.min(MAX_LAT, lat)) * Math.PI) / 180;
    return [(lon * Math.PI * R) / 180, R * Math.log(Math.tan(Math.PI / 4 + phi / 2))];
  },
};

/**
 * The transformation of a CRS to longitude/latitude: undefined when the coordinates already are, a function
 * otherwise. Throws Error with a one-line reason when GDAL cannot read the CRS.
 */
export async function crsTransform(crs: CrsName | undefined): Promise<CrsTransform | undefined> {
  if (!crs || (crs.authority === undefined && crs.definition === undefined)) return undefined;
  const auth = crs.authority?.toUpperCase();
  const code = crs.code === undefined ? undefined : String(crs.code);
  if ((auth === 'EPSG' && code === '4326') || (auth === 'OGC' && (code === 'CRS84' || code === 'CRS:84'))) return undefined;
  if ((auth === 'EPSG' || auth === 'ESRI') && code !== undefined && MERCATOR_CODES.has(code)) return MERCATOR;
  const input = auth !== undefined && code !== undefined ? `${auth}:${code}` : crs.definition!;
  const { default: gdal } = await import('gdal-async');
  let own;
  try {
    own = gdal.SpatialReference.fromProj4(gdal.SpatialReference.fromUserInput(input).toProj4());
  } catch {
    if (crs.definition === undefined || input === crs.definition) throw new Error(`GDAL cannot read its CRS ${input.slice(0, 80)}`);
    try {
      own = gdal.SpatialReference.fromProj4(gdal.SpatialReference.fromUserInput(crs.definition).toProj4());
    } catch {
      throw new Error(`GDAL cannot read its CRS ${input}`);
    }
  }
  const wgs = gdal.SpatialReference.fromProj4('+proj=longlat +datum=WGS84 +no_defs');
  if (own.isSame(wgs)) return undefined;
  const forward = new gdal.CoordinateTransformation(own, wgs);
  const backward = new gdal.CoordinateTransformation(wgs, own);
  const through = (t: InstanceType<typeof gdal.CoordinateTransformation>): ToLonLat => (x, y) => {
    try {
      const p = t.transformPoint(x, y);
      return [p.x, p.y];
    } catch {
      // Outside the projection's domain: a position nothing can meet.
      return [NaN, NaN];
    }
  };
  return { toLonLat: through(forward), fromLonLat: through(backward) };
}

/** `g` with every position passed through `fn` (Z and M are already gone: positions are [x, y]). */
export function transformGeometry(g: Geometry, fn: ToLonLat): Geometry {
  const p = (c: Position): Position => fn(c[0], c[1]);
  switch (g.type) {
    case 'Point':
      return { type: 'Point', coordinates: p(g.coordinates) };
    case 'MultiPoint':
      return { type: 'MultiPoint', coordinates: g.coordinates.map(p) };
    case 'LineString':
      return { type: 'LineString', coordinates: g.coordinates.map(p) };
    case 'MultiLineString':
      return { type: 'MultiLineString', coordinates: g.coordinates.map((l) => l.map(p)) };
    case 'Polygon':
      return { type: 'Polygon', coordinates: g.coordinates.map((l) => l.map(p)) };
    case 'MultiPolygon':
      return { type: 'MultiPolygon', coordinates: g.coordinates.map((q) => q.map((l) => l.map(p))) };
    case 'GeometryCollection':
      return { type: 'GeometryCollection', geometries: g.geometries.map((c) => transformGeometry(c, fn)) };
  }
}

/** The bounding box of a geometry (west, south, east, north), or undefined when it has no positions. */
export function geometryBounds(g: Geometry): [number, number, number, number] | undefined {
  let w = Infinity;
  let s = Infinity;
  let e = -Infinity;
  let n = -Infinity;
  const visit = (c: Position) => {
    if (c[0] < w) w = c[0];
    if (c[0] > e) e = c[0];
    if (c[1] < s) s = c[1];
    if (c[1] > n) n = c[1];
  };
  const walk = (x: Geometry): void => {
    switch (x.type) {
      case 'Point':
        return visit(x.coordinates);
      case 'MultiPoint':
      case 'LineString':
        return x.coordinates.forEach(visit);
      case 'MultiLineString':
      case 'Polygon':
        return x.coordinates.forEach((l) => l.forEach(visit));
      case 'MultiPolygon':
        return x.coordinates.forEach((q) => q.forEach((l) => l.forEach(visit)));
      case 'GeometryCollection':
        return x.geometries.forEach(walk);
    }
  };
  walk(g);
  return w <= e ? [w, s, e, n] : undefined;
}

/** Whether two boxes (west, south, east, north) meet; touching edges meet. */
export function boxesMeet(a: ArrayLike<number>, b: ArrayLike<number>): boolean {
  return a[0] <= b[2] && a[2] >= b[0] && a[1] <= b[3] && a[3] >= b[1];
}

/**
 * A box through a transformation (a requested box into the file's CRS for its index, a file's extent into
 * longitude/latitude): the box of its transformed edge points, exact for Web Mercator, a close cover otherwise.
 */
export function transformBox(bbox: ArrayLike<number>, fn: ToLonLat | undefined): [number, number, number, number] {
  if (!fn) return [bbox[0], bbox[1], bbox[2], bbox[3]];
  const xs: number[] = [];
  const ys: number[] = [];
  const steps = 8;
  for (let i = 0; i <= steps; i++) {
    for (const [lon, lat] of [
      [bbox[0] + ((bbox[2] - bbox[0]) * i) / steps, bbox[1]],
      [bbox[0] + ((bbox[2] - bbox[0]) * i) / steps, bbox[3]],
      [bbox[0], bbox[1] + ((bbox[3] - bbox[1]) * i) / steps],
      [bbox[2], bbox[1] + ((bbox[3] - bbox[1]) * i) / steps],
    ]) {
      const [x, y] = fn(lon, lat);
      if (Number.isFinite(x) && Number.isFinite(y)) {
        xs.push(x);
        ys.push(y);
      }
    }
  }
  // No edge point inside the CRS's domain: ask for everything and let the longitude/latitude test decide.
  if (xs.length === 0) return [-Infinity, -Infinity, Infinity, Infinity];
  return [Math.min(...xs), Math.min(...ys), Math.max(...xs), Math.max(...ys)];
}
