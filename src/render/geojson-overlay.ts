// The `geojson` overlay of static maps: a Geometry, Feature or FeatureCollection, styled per feature with the
// simplestyle properties (stroke #0000ff, stroke-width 3, fill none, marker-color #ff0000, marker-size 12 px;
// stroke-opacity and fill-opacity 1). Parsed into flat shapes ready to draw; every error names where it is.
import { DEFAULT_STROKE, DEFAULT_STROKE_WIDTH, parseHexColor, type LonLat, type Parsed, type Rgba } from './overlays.js';

export type GeoShape =
  | { type: 'line'; points: LonLat[]; stroke: Rgba; width: number }
  | { type: 'polygon'; rings: LonLat[][]; stroke: Rgba; width: number; fill: Rgba | undefined }
  | { type: 'point'; point: LonLat; color: Rgba; size: number };

const MARKER_SIZES: Record<string, number> = { small: 8, medium: 12, large: 18 };
const DEFAULT_MARKER: Rgba = { r: 255, g: 0, b: 0, a: 1 };
const GEOMETRY_TYPES = ['Point', 'MultiPoint', 'LineString', 'MultiLineString', 'Polygon', 'MultiPolygon'];

interface Style {
  stroke: Rgba;
  width: number;
  fill: Rgba | undefined;
  marker: Rgba;
  size: number;
}

class GeoJsonError extends Error {}

const fail = (msg: string): never => {
  throw new GeoJsonError(msg);
};

export function parseGeoJsonOverlay(text: string): Parsed<GeoShape[]> {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (err) {
    return { ok: false, problem: `geojson is not valid JSON: ${(err as Error).message}` };
  }
  try {
    const shapes: GeoShape[] = [];
    readObject(doc, 'geojson', shapes);
    return { ok: true, value: shapes };
  } catch (err) {
    if (err instanceof GeoJsonError) return { ok: false, problem: err.message };
    throw err;
  }
}

function isObject(v: unknown): v is Record<string, unknown> {
  return v !== null && typeof v === 'object' && !Array.isArray(v);
}

function readObject(v: unknown, where: string, out: GeoShape[]): void {
  if (!isObject(v)) fail(`${where} is not a GeoJSON object`);
  const o = v as Record<string, unknown>;
  if (o.type === 'FeatureCollection') {
    if (!Array.isArray(o.features)) fail(`${where}.features is not an array`);
    (o.features as unknown[]).forEach((f, i) => readFeature(f, `${where}.features[${i}]`, out));
  } else if (o.type === 'Feature') readFeature(o, where, out);
  else readGeometry(o, where, styleOf(undefined, where), out);
}

function readFeature(v: unknown, where: string, out: GeoShape[]): void {
  if (!isObject(v) || v.type !== 'Feature') fail(`${where} is not a Feature`);
  const f = v as Record<string, unknown>;
  if (f.geometry === null) return;
  readGeometry(f.geometry, `${where}.geometry`, styleOf(f.properties, `${where}.properties`), out);
}

function readGeometry(v: unknown, where: string, style: Style, out: GeoShape[]): void {
  if (!isObject(v)) fail(`${where} is not a geometry`);
  const g = v as Record<string, unknown>;
  const type = String(g.type);
  if (!GEOMETRY_TYPES.includes(type)) fail(`${where}: type "${type}" is not one of ${GEOMETRY_TYPES.join(', ')}, Feature, FeatureCollection`);
  const c = g.coordinates;
  const at = `${where}.coordinates`;
  switch (type) {
    case 'Point':
      out.push({ type: 'point', point: position(c, at), color: style.marker, size: style.size });
      break;
    case 'MultiPoint':
      list(c, at).forEach((p, i) => out.push({ type: 'point', point: position(p, `${at}[${i}]`), color: style.marker, size: style.size }));
      break;
    case 'LineString':
      out.push({ type: 'line', points: line(c, at, 2), stroke: style.stroke, width: style.width });
      break;
    case 'MultiLineString':
      list(c, at).forEach((l, i) => out.push({ type: 'line', points: line(l, `${at}[${i}]`, 2), stroke: style.stroke, width: style.width }));
      break;
    case 'Polygon':
      out.push({ type: 'polygon', rings: rings(c, at), stroke: style.stroke, width: style.width, fill: style.fill });
      break;
    case 'MultiPolygon':
      list(c, at).forEach((p, i) => out.push({ type: 'polygon', rings: rings(p, `${at}[${i}]`), stroke: style.stroke, width: style.width, fill: style.fill }));
      break;
  }
}

function list(v: unknown, where: string): unknown[] {
  if (!Array.isArray(v)) fail(`${where} is not an array`);
  return v as unknown[];
}

function position(v: unknown, where: string): LonLat {
  const a = list(v, where);
  if (a.length < 2 || typeof a[0] !== 'number' || typeof a[1] !== 'number' || !Number.isFinite(a[0]) || !Number.isFinite(a[1])) fail(`${where} is not a [longitude, latitude] position`);
  const [lon, lat] = a as [number, number];
  if (lon < -180 || lon > 180 || lat < -90 || lat > 90) fail(`${where}: [${lon}, ${lat}] is outside longitude -180..180, latitude -90..90`);
  return [lon, lat];
}

function line(v: unknown, where: string, min: number): LonLat[] {
  const points = list(v, where).map((p, i) => position(p, `${where}[${i}]`));
  if (points.length < min) fail(`${where} has ${points.length} positions; at least ${min} are needed`);
  return points;
}

function rings(v: unknown, where: string): LonLat[][] {
  const out = list(v, where).map((r, i) => line(r, `${where}[${i}]`, 3));
  if (out.length === 0) fail(`${where} has no rings`);
  return out;
}

function color(props: Record<string, unknown>, key: string, where: string): Rgba | undefined {
  const value = props[key];
  if (value === undefined || value === null) return undefined;
  const c = typeof value === 'string' ? parseHexColor(value.replace(/^#/, '')) : undefined;
  return c ?? fail(`${where}["${key}"] is not a hex color`);
}

function opacity(props: Record<string, unknown>, key: string, where: string): number | undefined {
  const value = props[key];
  if (value === undefined || value === null) return undefined;
  if (typeof value !== 'number' || !(value >= 0 && value <= 1)) fail(`${where}["${key}"] is not a number 0..1`);
  return value as number;
}

function styleOf(properties: unknown, where: string): Style {
  const p = isObject(properties) ? properties : {};
  const withOpacity = (c: Rgba, o: number | undefined): Rgba => (o === undefined ? c : { ...c, a: c.a * o });
  const width = p['stroke-width'];
  if (width !== undefined && (typeof width !== 'number' || !(width >= 0 && width <= 100))) fail(`${where}["stroke-width"] is not a number 0..100`);
  const sizeValue = p['marker-size'];
  let size = MARKER_SIZES.medium;
  // Own names only: `in` would take "constructor" or "toString" (inherited by every object) for a size.
  if (typeof sizeValue === 'string' && Object.hasOwn(MARKER_SIZES, sizeValue)) size = MARKER_SIZES[sizeValue];
  else if (typeof sizeValue === 'number' && sizeValue > 0 && sizeValue <= 200) size = sizeValue;
  else if (sizeValue !== undefined) fail(`${where}["marker-size"] is not small, medium, large or a number of pixels (0..200]`);
  const fill = color(p, 'fill', where);
  return {
    stroke: withOpacity(color(p, 'stroke', where) ?? DEFAULT_STROKE, opacity(p, 'stroke-opacity', where)),
    width: (width as number | undefined) ?? DEFAULT_STROKE_WIDTH,
    fill: fill ? withOpacity(fill, opacity(p, 'fill-opacity', where)) : undefined,
    marker: color(p, 'marker-color', where) ?? DEFAULT_MARKER,
    size,
  };
}

/** Every position of the shapes (for fitting the map to them). */
export function shapePoints(shapes: readonly GeoShape[]): LonLat[] {
  return shapes.flatMap((s) => (s.type === 'point' ? [s.point] : s.type === 'line' ? s.points : s.rings.flat()));
}
