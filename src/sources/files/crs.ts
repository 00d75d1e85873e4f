// Coordinates of a data file to longitude/latitude. Longitude/latitude files (EPSG:4326, OGC:CRS84, or no CRS
// given, which both FlatGeobuf and GeoParquet define as that) pass through untouched; Web Mercator (EPSG:3857
// and its aliases) is inverted here with the spherical formulas; any other CRS is read by GDAL's OSR into a PROJ
// string and transformed by proj4js from it. GDAL runs in the raster pool's thread (RasterPool.readCrs), never
// here: gdal-async loads in one thread per process only, and loaded in the HTTP thread it left every raster
// source of the process unable to load it (docs/files.md). Files store x as east whatever the CRS's official axis
// order (GeoParquet says so, FlatGeobuf writers do), so both sides go through PROJ strings, which are always
// (east, north), as the raster code does. A CRS GDAL cannot read, or proj4js cannot transform, is an open error,
// never a silent guess.
import type { Geometry, Position } from 'geojson';
import proj4 from 'proj4';
import type { CrsReading } from '../../raster/crs-read.js';

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
const WGS84_PROJ = '+proj=longlat +datum=WGS84 +no_defs';
const MERCATOR_CODES = new Set(['3857', '900913', '3785', '102100', '102113']);

const MAX_LAT = 85.0511287798066;

export const MERCATOR: CrsTransform = {
  toLonLat: (x, y) => [(x / R) * (180 / Math.PI), (Math.atan(Math.exp(y / R)) * 2 - Math.PI / 2) * (180 / Math.PI)],
  fromLonLat: (lon, lat) => {
    const phi = (Math.max(-MAX_LAT, Math.min(MAX_LAT, lat)) * Math.PI) / 180;
    return [(lon * Math.PI * R) / 180, R * Math.log(Math.tan(Math.PI / 4 + phi / 2))];
  },
};

/** GDAL's reading of a CRS (src/raster/crs-read.ts), asked of the raster pool's thread (RasterPool.readCrs). */
export type CrsReader = (input: string, fallback?: string) => Promise<CrsReading>;

/**
 * The transformation of a CRS to longitude/latitude: undefined when the coordinates already are, a function
 * otherwise. GDAL reads the CRS (through `read`, in the raster pool's thread) and proj4js transforms the
 * coordinates here, synchronously, from GDAL's PROJ string. Throws Error with a one-line reason when GDAL cannot
 * read the CRS or proj4js cannot transform it.
 */
export async function crsTransform(crs: CrsName | undefined, read: CrsReader | undefined): Promise<CrsTransform | undefined> {
  if (!crs || (crs.authority === undefined && crs.definition === undefined)) return undefined;
  const auth = crs.authority?.toUpperCase();
  const code = crs.code === undefined ? undefined : String(crs.code);
  if ((auth === 'EPSG' && code === '4326') || (auth === 'OGC' && (code === 'CRS84' || code === 'CRS:84'))) return undefined;
  if ((auth === 'EPSG' || auth === 'ESRI') && code !== undefined && MERCATOR_CODES.has(code)) return MERCATOR;
  const input = auth !== undefined && code !== undefined ? `${auth}:${code}` : crs.definition!;
  // Only the server's state hands a reader over; a caller without one (a tool reading a file by itself) has no
  // thread where GDAL may load.
  if (!read) throw new Error(`its CRS ${input.slice(0, 80)} needs GDAL, which this reader was given no thread for`);
  const own = await read(input, crs.definition);
  if (own.lonLat) return undefined;
  let converter: proj4.Converter;
  try {
    converter = proj4(own.proj4, WGS84_PROJ);
  } catch (err) {
    throw new Error(`its CRS ${input.slice(0, 80)} (PROJ: ${own.proj4.slice(0, 120)}) cannot be transformed: ${err instanceof Error ? err.message : String(err)}`);
  }
  const through = (fn: (p: [number, number]) => number[]): ToLonLat => (x, y) => {
    try {
      const p = fn([x, y]);
      // Outside the projection's domain proj4js answers non-finite numbers (or throws): a position nothing can meet.
      return Number.isFinite(p[0]) && Number.isFinite(p[1]) ? [p[0], p[1]] : [NaN, NaN];
    } catch {
      return [NaN, NaN];
    }
  };
  return { toLonLat: through((p) => converter.forward(p)), fromLonLat: through((p) => converter.inverse(p)) };
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
