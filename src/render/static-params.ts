// Parameters of the static-map, social-card and rendered-tile routes, validated into what to draw. Every
// problem names the part of the request that is wrong (the route answers 400 with it).
import { fitBounds, MAX_LATITUDE, offsetCenter, type Bounds, type Camera } from './camera.js';
import { parseGeoJsonOverlay, shapePoints } from './geojson-overlay.js';
import { parseLonLat, parseMarkers, parseNumber, parsePaths, PIN_SIZES } from './overlays.js';
import type { Overlays } from './svg.js';
import {
  iconKey,
  isTileserverGlMarker,
  isTileserverGlPath,
  LINE_CAPS,
  LINE_JOINS,
  parseTileserverGlMarker,
  parseTileserverGlPath,
  PATH_DEFAULTS,
  pathStyleValue,
  type PathDefaults,
} from './tileserver-gl-grammar.js';

export type ImageFormat = 'png' | 'jpeg' | 'webp' | 'avif';
/** What a URL's format may be: a format, or `auto` (negotiated from the Accept header: image-encoding.ts). */
export type RequestedFormat = ImageFormat | 'auto';
export const FORMAT_WORDS = 'png, jpg, jpeg, webp, avif or auto';
export const MAX_IMAGE_EDGE = 4096;
export const MAX_SCALE = 3;
export const MAX_ZOOM = 22;
/** Different icon images one map may show: each is fetched (or read) before the render. */
export const MAX_ICON_IMAGES = 20;
/** Longest watermark text (characters). */
export const MAX_WATERMARK = 200;

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

/**
 * The `{type}` segment: `lon,lat,zoom[@bearing[,pitch]]`, `minLon,minLat,maxLon,maxLat` or `auto`. With `metres`
 * (the `raw` routes) the coordinates are EPSG:3857 x,y in metres.
 */
export function parseViewSegment(seg: string, latlng: boolean, metres = false): Checked<StaticView> {
  if (seg === 'auto') return { ok: true, value: { type: 'auto' } };
  const [main, rotation, ...extra] = seg.split('@');
  if (extra.length) return bad('view', `"${seg}" has more than one "@"`);
  const parts = main.split(',');
  const nums = parts.map((p) => parseNumber(p));
  const badIndex = nums.findIndex((n) => n === undefined);
  if (badIndex >= 0) return bad('view', `"${parts[badIndex]}" in "${seg}" is not a number`);
  if (parts.length === 3) {
    const ll = parseLonLat(`${parts[0]},${parts[1]}`, latlng, metres);
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
    const sw = parseLonLat(`${parts[0]},${parts[1]}`, latlng, metres);
    const ne = parseLonLat(`${parts[2]},${parts[3]}`, latlng, metres);
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
  /** Draw the attribution of the style's sources (`attribution=false` turns it off; configuration may too). */
  attribution: boolean;
}

export function parseBoolean(v: string | undefined, parameter: string, absent = false): Checked<boolean> {
  if (v === undefined || v === '') return { ok: true, value: absent };
  if (v === 'true' || v === '1') return { ok: true, value: true };
  if (v === 'false' || v === '0') return { ok: true, value: false };
  return bad(parameter, `${parameter} "${v}" is not true or false`);
}

/** How a parameter is written as a JSON member of the POST form (a query parameter is always text). */
export type ParameterKind = 'text' | 'number' | 'boolean' | 'geojson';

export interface StaticParameter {
  kind: ParameterKind;
  /** May be given several times (an array in the POST form). */
  many?: true;
  description: string;
}

/**
 * Every query parameter of a static map (and member of the POST body), one entry each: the route documents and
 * checks the body from this table, `parseStaticQuery` reads them.
 */
export const STATIC_PARAMETERS = {
  path: { kind: 'text', many: true, description: 'path-{strokeWidth}+{strokeColor}[-{fillColor}]({lon},{lat}|… or enc:{polyline}), several joined by ~; or tileserver-gl\'s [{option}:{value}|…]{lon},{lat}|… or …|enc:{polyline}' },
  marker: { kind: 'text', many: true, description: 'pin-{s|m|l}[-{label}]+{color}({lon},{lat}), several joined by ~; or tileserver-gl\'s {lon},{lat}|{icon}[|scale:{s}][|offset:{x},{y}][|anchor:{a}], icon sprite:{name}, a file of /files or a URL of an allowed host' },
  geojson: { kind: 'geojson', many: true, description: 'GeoJSON geometry, Feature or FeatureCollection with simplestyle properties' },
  padding: { kind: 'number', description: 'auto-fit padding, a fraction of the image on each side (default 0.1)' },
  maxzoom: { kind: 'number', description: 'largest zoom of an auto-fit (default 18)' },
  latlng: { kind: 'boolean', description: 'coordinates are lat,lng (default false)' },
  fill: { kind: 'text', description: 'fill colour of tileserver-gl-syntax paths (CSS: #rrggbb, rgba(…), a name); empty: translucent white' },
  stroke: { kind: 'text', description: 'stroke colour of tileserver-gl-syntax paths (default rgba(0,64,255,0.7))' },
  width: { kind: 'number', description: 'stroke width of tileserver-gl-syntax paths, px (default 1)' },
  border: { kind: 'text', description: 'colour of a border (halo) around tileserver-gl-syntax paths' },
  borderwidth: { kind: 'number', description: 'border width on each side, px (default a tenth of the stroke width)' },
  linecap: { kind: 'text', description: 'butt (default), round or square: ends of tileserver-gl-syntax paths' },
  linejoin: { kind: 'text', description: 'miter (default), round or bevel: corners of tileserver-gl-syntax paths' },
  attribution: { kind: 'boolean', description: 'draw the attribution of the style\'s sources in the bottom-right corner (default true)' },
  watermark: { kind: 'text', description: `a text drawn in the bottom-left corner (at most ${MAX_WATERMARK} characters; default: the style's configured watermark)` },
  // Read by the encoder and the label rewrite (src/http/routes/render-answer.ts), listed here so that a POST body takes them too.
  quality: { kind: 'number', description: 'jpg, webp, avif: encoder quality 1..100 (default render.*_quality)' },
  lossless: { kind: 'boolean', description: 'webp, avif: lossless encoding (default false)' },
  lang: { kind: 'text', description: 'BCP 47 tag: labels in this language (else Accept-Language when the style honours it, else its default_language)' },
} as const satisfies Record<string, StaticParameter>;

export type StaticParameterName = keyof typeof STATIC_PARAMETERS;

/**
 * The query of a static map: overlays (`path`, `marker`, `geojson`, each repeatable), padding, maxzoom, latlng,
 * the style parameters of tileserver-gl-syntax paths, attribution and watermark. With `metres` (the `raw`
 * routes) coordinate pairs of paths and markers are EPSG:3857 metres.
 */
export function parseStaticQuery(q: { one(name: string): string | undefined; all(name: string): string[] }, metres = false): Checked<StaticQuery> {
  const latlng = parseBoolean(q.one('latlng'), 'latlng');
  if (!latlng.ok) return latlng;
  const paddingText = q.one('padding');
  const padding = paddingText === undefined ? 0.1 : parseNumber(paddingText);
  if (padding === undefined || padding < 0 || padding >= 0.5) return bad('padding', `padding "${paddingText}" is not a number 0 ≤ p < 0.5 (a fraction of the image on each side)`);
  const maxText = q.one('maxzoom');
  const maxzoom = maxText === undefined ? 18 : parseNumber(maxText);
  if (maxzoom === undefined || maxzoom < 0 || maxzoom > MAX_ZOOM) return bad('maxzoom', `maxzoom "${maxText}" is not a number 0..${MAX_ZOOM}`);
  const defaults = parsePathDefaults(q);
  if (!defaults.ok) return defaults;
  const paths: Overlays['paths'] = [];
  const markers: Overlays['markers'] = [];
  const icons: Overlays['icons'] = [];
  for (const value of q.all('path')) {
    const r = isTileserverGlPath(value) ? parseTileserverGlPath(value, defaults.value, latlng.value, metres) : parsePaths([value], latlng.value, metres);
    if (!r.ok) return bad('path', r.problem);
    paths.push(...(Array.isArray(r.value) ? r.value : [r.value]));
  }
  for (const value of q.all('marker')) {
    const r = isTileserverGlMarker(value) ? parseTileserverGlMarker(value, latlng.value, metres) : parseMarkers([value], latlng.value, metres);
    if (!r.ok) return bad('marker', r.problem);
    if (Array.isArray(r.value)) markers.push(...r.value);
    else icons.push(r.value);
  }
  const images = new Set(icons.map((m) => iconKey(m.icon)));
  if (images.size > MAX_ICON_IMAGES) return bad('marker', `the markers show ${images.size} different icons; a map may show at most ${MAX_ICON_IMAGES}`);
  const shapes: Overlays['shapes'] = [];
  for (const text of q.all('geojson')) {
    const r = parseGeoJsonOverlay(text);
    if (!r.ok) return bad('geojson', r.problem);
    shapes.push(...r.value);
  }
  const attribution = parseBoolean(q.one('attribution'), 'attribution', true);
  if (!attribution.ok) return attribution;
  const watermark = q.one('watermark');
  if (watermark !== undefined && (watermark.length > MAX_WATERMARK || /[\u0000-\u001f\u007f]/.test(watermark))) {
    return bad('watermark', `watermark is at most ${MAX_WATERMARK} characters without control characters`);
  }
  return {
    ok: true,
    value: {
      overlays: { paths, markers, shapes, icons, ...(watermark ? { watermark } : {}) },
      padding,
      maxzoom,
      latlng: latlng.value,
      attribution: attribution.value,
    },
  };
}

/** The query parameters that style every tileserver-gl-syntax path (`fill`, `stroke`, `width`, …). */
function parsePathDefaults(q: { one(name: string): string | undefined }): Checked<PathDefaults> {
  const d: PathDefaults = { ...PATH_DEFAULTS };
  for (const name of ['fill', 'stroke', 'border'] as const) {
    const text = q.one(name);
    if (text === undefined) continue;
    const r = pathStyleValue(name, text);
    if (!r.ok) return bad(name, r.problem);
    d[name] = r.value;
  }
  for (const name of ['width', 'borderwidth'] as const) {
    const text = q.one(name);
    if (text === undefined) continue;
    const r = pathStyleValue(name, text);
    if (!r.ok) return bad(name, r.problem);
    d[name] = r.value;
  }
  const cap = q.one('linecap');
  if (cap !== undefined) {
    if (!(LINE_CAPS as readonly string[]).includes(cap)) return bad('linecap', `linecap "${cap}" is not one of ${LINE_CAPS.join(', ')}`);
    d.linecap = cap as PathDefaults['linecap'];
  }
  const join = q.one('linejoin');
  if (join !== undefined) {
    if (!(LINE_JOINS as readonly string[]).includes(join)) return bad('linejoin', `linejoin "${join}" is not one of ${LINE_JOINS.join(', ')}`);
    d.linejoin = join as PathDefaults['linejoin'];
  }
  return { ok: true, value: d };
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
  const points = [...o.paths.flatMap((p) => p.points), ...o.markers.map((m) => m.point), ...o.icons.map((m) => m.point), ...shapePoints(o.shapes)];
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
