// Parameters of the static-map, social-card and rendered-tile routes, validated into what to draw. Every
// problem names the part of the request that is wrong (the route answers 400 with it).
import { fitBounds, MAX_LATITUDE, offsetCenter, type Bounds, type Camera } from './camera.js';
import { parseGeoJsonOverlay, shapePoints } from './geojson-overlay.js';
import { parseLonLat, parseMarkers, parseNumber, parsePaths, PIN_SIZES, type Parsed } from './overlays.js';
import type { Overlays } from './svg.js';

export type ImageFormat = 'png' | 'jpeg' | 'webp' | 'avif';
/** What a URL's format may be: a format, or `auto` (negotiated from the Accept header: image-encoding.ts). */
export type RequestedFormat = ImageFormat | 'auto';
export const FORMAT_WORDS = 'png, jpg, jpeg, webp, avif or auto';
export const MAX_IMAGE_EDGE = 4096;
export const MAX_SCALE = 3;
export const MAX_ZOOM = 22;

export interface Problem {
  /** The request part that is wrong: a path segment or query parameter name. */
  parameter: string;
  detail: string;
}

export type Checked<T> = { ok: true; value: T } | { ok: false; problem: Problem };

const bad = (parameter: string, detail: string): { ok: false; problem: Problem } => ({ ok: false, problem: { parameter, detail } });

export function imageFormat(ext: string): ImageFormat | undefined {
  const e = ext.toLowerCase();
  return e === 'png' ? 'png' : e === 'jpg' || e === 'jpeg' ? 'jpeg' : e === 'webp' ? 'webp' : e === 'avif' ? 'avif' : undefined;
}

/** A format a request may name: one of imageFormat's, or `auto`. */
export const requestedFormat = (ext: string): RequestedFormat | undefined => (ext.toLowerCase() === 'auto' ? 'auto' : imageFormat(ext));

export const CONTENT_TYPES: Record<ImageFormat, string> = { png: 'image/png', jpeg: 'image/jpeg', webp: 'image/webp', avif: 'image/avif' };

/** The scale of `@{s}x` (absent: 1): an integer 1..3. */
export function parseScale(s: string | undefined, parameter = 'scale'): Checked<number> {
  if (s === undefined) return { ok: true, value: 1 };
  if (!/^[0-9]+$/.test(s) || Number(s) < 1 || Number(s) > MAX_SCALE) return bad(parameter, `scale "@${s}x" is not an integer 1..${MAX_SCALE}`);
  return { ok: true, value: Number(s) };
}

/** A width or height: an integer 1..4096. */
export function parseDimension(s: string | undefined, parameter: string): Checked<number> {
  if (s === undefined || !/^[0-9]{1,5}$/.test(s) || Number(s) < 1 || Number(s) > MAX_IMAGE_EDGE) {
    return bad(parameter, `${parameter} "${s ?? ''}" is not an integer 1..${MAX_IMAGE_EDGE}`);
  }
  return { ok: true, value: Number(s) };
}

/** `{width}x{height}[@{scale}x].{format}`, the last segment of a static-map URL. */
/**
 * The pixel budget (render.max_pixels): an image of width x height CSS pixels at `scale` has width x height x
 * scale² device pixels, and memory per render grows with that number (docs/rendering.md, "Bounds").
 */
export function withinPixelBudget(width: number, height: number, scale: number, maxPixels: number, parameter = 'size'): Problem | undefined {
  const pixels = width * height * scale * scale;
  if (pixels <= maxPixels) return undefined;
  const shown = scale === 1 ? `${width}x${height}` : `${width}x${height}@${scale}x`;
  return { parameter, detail: `${shown} is ${pixels} device pixels, more than render.max_pixels (${maxPixels})` };
}

export function parseSizeSegment(seg: string): Checked<{ width: number; height: number; scale: number; format: RequestedFormat }> {
  const m = /^([^x@.]*)x([^x@.]*)(?:@([^.]*)x)?\.([A-Za-z0-9]+)$/.exec(seg);
  if (!m) return bad('size', `"${seg}" is not {width}x{height}[@{scale}x].{format}`);
  const width = parseDimension(m[1], 'width');
  if (!width.ok) return width;
  const height = parseDimension(m[2], 'height');
  if (!height.ok) return height;
  const scale = parseScale(m[3]);
  if (!scale.ok) return scale;
  const format = requestedFormat(m[4]);
  if (!format) return bad('format', `format ".${m[4]}" is not ${FORMAT_WORDS}`);
  return { ok: true, value: { width: width.value, height: height.value, scale: scale.value, format } };
}

export type StaticView =
  | { type: 'center'; center: [number, number]; zoom: number; bearing: number; pitch: number }
  | { type: 'bbox'; bounds: Bounds }
  | { type: 'auto' };

/** The `{type}` segment: `lon,lat,zoom[@bearing[,pitch]]`, `minLon,minLat,maxLon,maxLat` or `auto`. */
export function parseViewSegment(seg: string, latlng: boolean): Checked<StaticView> {
  if (seg === 'auto') return { ok: true, value: { type: 'auto' } };
  const [main, rotation, ...extra] = seg.split('@');
  if (extra.length) return bad('view', `"${seg}" has more than one "@"`);
  const parts = main.split(',');
  const nums = parts.map((p) => parseNumber(p));
  const badIndex = nums.findIndex((n) => n === undefined);
  if (badIndex >= 0) return bad('view', `"${parts[badIndex]}" in "${seg}" is not a number`);
  if (parts.length === 3) {
    const ll = parseLonLat(`${parts[0]},${parts[1]}`, latlng);
    if (!ll.ok) return bad('view', ll.problem);
    const [lon, lat] = ll.value;
    if (Math.abs(lat) > MAX_LATITUDE) return bad('view', `latitude ${lat} cannot be a map centre (Web Mercator reaches ±${MAX_LATITUDE.toFixed(4)})`);
    const zoom = nums[2]!;
    if (zoom < 0 || zoom > MAX_ZOOM) return bad('view', `zoom ${zoom} is outside 0..${MAX_ZOOM}`);
    let bearing = 0;
    let pitch = 0;
    if (rotation !== undefined) {
      const r = rotation.split(',').map((p) => parseNumber(p));
      if (r.length > 2 || r.some((n) => n === undefined)) return bad('view', `"@${rotation}" is not @{bearing} or @{bearing},{pitch}`);
      bearing = r[0]!;
      pitch = r[1] ?? 0;
      if (bearing < -360 || bearing > 360) return bad('view', `bearing ${bearing} is outside -360..360`);
      if (pitch < 0 || pitch > 85) return bad('view', `pitch ${pitch} is outside 0..85`);
    }
    return { ok: true, value: { type: 'center', center: [lon, lat], zoom, bearing, pitch } };
  }
  if (rotation !== undefined) return bad('view', `only a centre view takes "@{bearing}": "${seg}"`);
  if (parts.length === 4) {
    const sw = parseLonLat(`${parts[0]},${parts[1]}`, latlng);
    const ne = parseLonLat(`${parts[2]},${parts[3]}`, latlng);
    if (!sw.ok) return bad('view', sw.problem);
    if (!ne.ok) return bad('view', ne.problem);
    const [west, south] = sw.value;
    const [east, north] = ne.value;
    if (south >= north) return bad('view', `the bounding box "${seg}" has its south edge (${south}) not below its north edge (${north})`);
    if (west === east) return bad('view', `the bounding box "${seg}" has no width`);
    return { ok: true, value: { type: 'bbox', bounds: { west, south, east, north } } };
  }
  return bad('view', `"${seg}" is not lon,lat,zoom[@bearing[,pitch]], minLon,minLat,maxLon,maxLat or auto`);
}

export interface StaticQuery {
  overlays: Overlays;
  padding: number;
  maxzoom: number;
  latlng: boolean;
}

export function parseBoolean(v: string | undefined, parameter: string): Checked<boolean> {
  if (v === undefined || v === '') return { ok: true, value: false };
  if (v === 'true' || v === '1') return { ok: true, value: true };
  if (v === 'false' || v === '0') return { ok: true, value: false };
  return bad(parameter, `${parameter} "${v}" is not true or false`);
}

/** The query of a static map: overlays (`path`, `marker`, `geojson`, each repeatable), padding, maxzoom, latlng. */
export function parseStaticQuery(q: { one(name: string): string | undefined; all(name: string): string[] }): Checked<StaticQuery> {
  const latlng = parseBoolean(q.one('latlng'), 'latlng');
  if (!latlng.ok) return latlng;
  const paddingText = q.one('padding');
  const padding = paddingText === undefined ? 0.1 : parseNumber(paddingText);
  if (padding === undefined || padding < 0 || padding >= 0.5) return bad('padding', `padding "${paddingText}" is not a number 0 ≤ p < 0.5 (a fraction of the image on each side)`);
  const maxText = q.one('maxzoom');
  const maxzoom = maxText === undefined ? 18 : parseNumber(maxText);
  if (maxzoom === undefined || maxzoom < 0 || maxzoom > MAX_ZOOM) return bad('maxzoom', `maxzoom "${maxText}" is not a number 0..${MAX_ZOOM}`);
  const paths = parsePaths(q.all('path'), latlng.value);
  if (!paths.ok) return bad('path', paths.problem);
  const markers = parseMarkers(q.all('marker'), latlng.value);
  if (!markers.ok) return bad('marker', markers.problem);
  const shapes: Parsed<Overlays['shapes']> = { ok: true, value: [] };
  for (const text of q.all('geojson')) {
    const r = parseGeoJsonOverlay(text);
    if (!r.ok) return bad('geojson', r.problem);
    shapes.value.push(...r.value);
  }
  return { ok: true, value: { overlays: { paths: paths.value, markers: markers.value, shapes: shapes.value }, padding, maxzoom, latlng: latlng.value } };
}

/**
 * The camera of a static map. A bounding box is fitted exactly (no padding); `auto` fits every overlay point
 * with `padding` and at most `maxzoom`, leaving room above the points for the tallest pin.
 */
export function staticCamera(view: StaticView, q: StaticQuery, width: number, height: number): Checked<Camera> {
  if (view.type === 'center') return { ok: true, value: { ...view, width, height } };
  if (view.type === 'bbox') {
    const fit = fitBounds(view.bounds, width, height, 0, MAX_ZOOM);
    return { ok: true, value: { ...fit, bearing: 0, pitch: 0, width, height } };
  }
  const o = q.overlays;
  const points = [...o.paths.flatMap((p) => p.points), ...o.markers.map((m) => m.point), ...shapePoints(o.shapes)];
  if (points.length === 0) return bad('view', '"auto" fits the map to the overlays, and there are none: give path, marker or geojson');
  const b = boundsOf(points);
  const pin = Math.max(0, ...o.markers.map((m) => PIN_SIZES[m.size].height / 2));
  // Pins stand above their points: fit the points into the frame less the tallest pin, then move the view up
  // by half a pin so the points sit in the lower part and the pins above them stay inside.
  const room = height > 2 * pin ? pin : 0;
  const fit = fitBounds(b, width, height - room, q.padding, q.maxzoom);
  const cam: Camera = { ...fit, bearing: 0, pitch: 0, width, height };
  return { ok: true, value: { ...cam, center: offsetCenter(cam, 0, -room / 2) } };
}

/** The smallest box around the points, across the antimeridian when that is narrower. */
export function boundsOf(points: readonly [number, number][]): Bounds {
  const lons = points.map((p) => p[0]).sort((a, b) => a - b);
  const lats = points.map((p) => p[1]);
  let west = lons[0];
  let east = lons[lons.length - 1];
  // The widest gap between consecutive longitudes: when it is wider than the gap across ±180, wrap there.
  let gap = 360 - (east - west);
  for (let i = 1; i < lons.length; i++) {
    const g = lons[i] - lons[i - 1];
    if (g > gap) {
      gap = g;
      west = lons[i];
      east = lons[i - 1];
    }
  }
  return { west, south: Math.min(...lats), east, north: Math.max(...lats) };
}
