// The overlay grammars of static maps (spec, "Static map image"), parsed strictly: every error names the part
// of the value that is wrong. Coordinates are read as lon,lat, or lat,lon when `latlng` is set.
//   path:   path-{strokeWidth}+{strokeColor}[-{fillColor}]({lon},{lat}|{lon},{lat}|...)   several joined by ~
//           path-{strokeWidth}+{strokeColor}[-{fillColor}](enc:{polyline})   or enc6: for precision 6
//   marker: pin-{s|m|l}[-{label}]+{color}({lon},{lat})                                     several joined by ~
// A query string decodes `+` to a space (decisions.md): in the style part of an item (before its "(") a space
// stands for `+`. The stroke width may be left out (3 px), and so may the stroke colour (blue, #0000ff, as in
// simplestyle's default) — `path(…)`, `path-5(…)` and `path+f00(…)` are all read.
// With `metres` (the `raw` routes) a pair is EPSG:3857 x,y in metres instead of degrees.
import { decodePolyline } from './polyline.js';

export interface Rgba {
  r: number;
  g: number;
  b: number;
  /** 0..1 */
  a: number;
}

export type LonLat = [number, number];

export type LineCap = 'butt' | 'round' | 'square';
export type LineJoin = 'miter' | 'round' | 'bevel';

export interface PathOverlay {
  kind: 'path';
  width: number;
  stroke: Rgba;
  /** The inside of the line, as if closed (SVG and canvas fill an open path that way). */
  fill: Rgba | undefined;
  /** Drawn as a closed ring: a segment back to the first point when the ends are more than 0.5 px apart. */
  closed: boolean;
  cap: LineCap;
  join: LineJoin;
  /** A wider stroke under the line (a halo): `width` CSS pixels on each side of it. */
  border?: { color: Rgba; width: number };
  points: LonLat[];
}

export type PinSize = 's' | 'm' | 'l';

export interface MarkerOverlay {
  kind: 'marker';
  size: PinSize;
  label: string | undefined;
  color: Rgba;
  point: LonLat;
}

export type Parsed<T> = { ok: true; value: T } | { ok: false; problem: string };

export const DEFAULT_STROKE_WIDTH = 3;
export const DEFAULT_STROKE: Rgba = { r: 0, g: 0, b: 255, a: 1 };
/** Pin boxes in CSS pixels (width x height); the tip is at the box centre, the pin fills the upper half. */
export const PIN_SIZES: Record<PinSize, { width: number; height: number }> = { s: { width: 20, height: 50 }, m: { width: 30, height: 70 }, l: { width: 40, height: 100 } };
/** Widest stroke accepted, in CSS pixels. */
const MAX_STROKE_WIDTH = 100;

const HEX = /^(?:[0-9a-fA-F]{3}|[0-9a-fA-F]{4}|[0-9a-fA-F]{6}|[0-9a-fA-F]{8})$/;
const NUMBER = /^-?(?:\d+(?:\.\d*)?|\.\d+)$/;

/** A colour of 3, 4, 6 or 8 hex digits (no "#"); 4 and 8 digits carry alpha. */
export function parseHexColor(hex: string): Rgba | undefined {
  if (!HEX.test(hex)) return undefined;
  const full = hex.length <= 4 ? [...hex].map((c) => c + c).join('') : hex;
  const n = (i: number) => parseInt(full.slice(i, i + 2), 16);
  return { r: n(0), g: n(2), b: n(4), a: full.length === 8 ? n(6) / 255 : 1 };
}

/** A number as written in a URL: optional minus, digits, optional fraction. No exponents, no "+", no spaces. */
export function parseNumber(s: string): number | undefined {
  return NUMBER.test(s) ? Number(s) : undefined;
}

/** Half the width of the Web Mercator world (EPSG:3857), metres. */
export const MERCATOR_EXTENT = 20037508.342789244;
const EARTH_RADIUS = 6378137;

/** Longitude and latitude of EPSG:3857 metres. */
export function metresToLonLat(x: number, y: number): LonLat {
  return [(x / EARTH_RADIUS) * (180 / Math.PI), (2 * Math.atan(Math.exp(y / EARTH_RADIUS)) - Math.PI / 2) * (180 / Math.PI)];
}

/**
 * One `a,b` pair as [lon, lat], checked against the ranges of longitudes and latitudes. With `metres` the pair
 * is EPSG:3857 x,y (y,x with `latlng`), within the Mercator world's ±20037508.34 m.
 */
export function parseLonLat(pair: string, latlng: boolean, metres = false): Parsed<LonLat> {
  const parts = pair.split(',');
  if (parts.length !== 2) return { ok: false, problem: `"${pair}" is not a coordinate pair ${metres ? (latlng ? 'y,x' : 'x,y') : latlng ? 'lat,lng' : 'lon,lat'}` };
  const a = parseNumber(parts[0]);
  const b = parseNumber(parts[1]);
  if (a === undefined || b === undefined) return { ok: false, problem: `"${pair}" is not a pair of numbers` };
  if (metres) {
    const [x, y] = latlng ? [b, a] : [a, b];
    if (Math.abs(x) > MERCATOR_EXTENT || Math.abs(y) > MERCATOR_EXTENT) return { ok: false, problem: `"${pair}" is outside the EPSG:3857 world (±${MERCATOR_EXTENT} m)` };
    return { ok: true, value: metresToLonLat(x, y) };
  }
  const [lon, lat] = latlng ? [b, a] : [a, b];
  if (lon < -180 || lon > 180) return { ok: false, problem: `longitude ${lon} in "${pair}" is outside -180..180` };
  if (lat < -90 || lat > 90) return { ok: false, problem: `latitude ${lat} in "${pair}" is outside -90..90` };
  return { ok: true, value: [lon, lat] };
}

/** Splits an item into its style part (spaces read as "+") and the text inside its one pair of parentheses. */
function splitItem(item: string): Parsed<{ head: string; body: string }> {
  const open = item.indexOf('(');
  if (open < 0 || !item.endsWith(')')) return { ok: false, problem: `"${item}" has no (coordinates) at its end` };
  const body = item.slice(open + 1, -1);
  if (body.includes('(') || body.includes(')')) return { ok: false, problem: `"${item}" has unbalanced parentheses` };
  return { ok: true, value: { head: item.slice(0, open).replace(/ /g, '+'), body } };
}

/**
 * Items of a value joined by "~"; an empty item is an error. Only a "~" outside parentheses joins: an encoded
 * polyline inside them may hold "~" itself (and never a parenthesis).
 */
function items(value: string): Parsed<string[]> {
  const list: string[] = [];
  let depth = 0;
  let start = 0;
  for (let i = 0; i < value.length; i++) {
    const ch = value[i];
    if (ch === '(') depth++;
    else if (ch === ')') depth = Math.max(0, depth - 1);
    else if (ch === '~' && depth === 0) {
      list.push(value.slice(start, i));
      start = i + 1;
    }
  }
  list.push(value.slice(start));
  const empty = list.findIndex((s) => s.trim() === '');
  if (empty >= 0) return { ok: false, problem: `item ${empty + 1} of "${value}" is empty` };
  return { ok: true, value: list };
}

/** The points of an encoded polyline written `enc:{text}` (precision 5) or `enc6:{text}`, or undefined when `body` is neither. */
export function encodedPoints(body: string): Parsed<LonLat[]> | undefined {
  const m = /^enc(6?):/.exec(body);
  if (!m) return undefined;
  const r = decodePolyline(body.slice(m[0].length), m[1] === '6' ? 6 : 5);
  if (!r.ok) return r;
  if (r.value.length < 2) return { ok: false, problem: `the encoded polyline "${body.slice(0, 60)}" has ${r.value.length} point; a path needs at least 2` };
  return r;
}

export function parsePath(item: string, latlng: boolean, metres = false): Parsed<PathOverlay> {
  const split = splitItem(item);
  if (!split.ok) return split;
  const { head, body } = split.value;
  const m = /^path(?:-([^+]*))?(?:\+([^-]*)(?:-(.*))?)?$/.exec(head);
  if (!m) return { ok: false, problem: `"${head}" is not path-{strokeWidth}+{strokeColor}[-{fillColor}]` };
  let width = DEFAULT_STROKE_WIDTH;
  if (m[1] !== undefined) {
    const w = parseNumber(m[1]);
    if (w === undefined || w <= 0 || w > MAX_STROKE_WIDTH) return { ok: false, problem: `stroke width "${m[1]}" in "${head}" is not a number above 0 and at most ${MAX_STROKE_WIDTH}` };
    width = w;
  }
  let stroke = DEFAULT_STROKE;
  if (m[2] !== undefined) {
    const c = parseHexColor(m[2]);
    if (!c) return { ok: false, problem: `stroke color "${m[2]}" in "${head}" is not 3, 4, 6 or 8 hex digits` };
    stroke = c;
  }
  let fill: Rgba | undefined;
  if (m[3] !== undefined) {
    fill = parseHexColor(m[3]);
    if (!fill) return { ok: false, problem: `fill color "${m[3]}" in "${head}" is not 3, 4, 6 or 8 hex digits` };
  }
  const points = pathPoints(body, latlng, metres);
  if (!points.ok) return { ok: false, problem: `in the path "${item.length > 200 ? `${item.slice(0, 200)}…` : item}": ${points.problem}` };
  return { ok: true, value: { kind: 'path', width, stroke, fill, closed: fill !== undefined, cap: 'round', join: 'round', points: points.value } };
}

/** The points of a path's geometry: `enc:`/`enc6:` and an encoded polyline, or pairs joined by "|" (at least 2). */
export function pathPoints(body: string, latlng: boolean, metres: boolean): Parsed<LonLat[]> {
  const encoded = encodedPoints(body);
  if (encoded) return encoded;
  const pairs = body.split('|');
  if (pairs.length < 2) return { ok: false, problem: `${pairs.length} point; a path needs at least 2` };
  const points: LonLat[] = [];
  for (const pair of pairs) {
    const p = parseLonLat(pair, latlng, metres);
    if (!p.ok) return p;
    points.push(p.value);
  }
  return { ok: true, value: points };
}

export function parseMarker(item: string, latlng: boolean, metres = false): Parsed<MarkerOverlay> {
  const split = splitItem(item);
  if (!split.ok) return split;
  const { head, body } = split.value;
  const m = /^pin-([sml])(?:-([\p{L}\p{N}]))?\+([^+]*)$/u.exec(head);
  if (!m) {
    if (/^pin-[^sml]/.test(head)) return { ok: false, problem: `pin size in "${head}" is not s, m or l` };
    if (/^pin-[sml]-/.test(head)) return { ok: false, problem: `the label in "${head}" is not one letter or digit` };
    return { ok: false, problem: `"${head}" is not pin-{s|m|l}[-{label}]+{color}` };
  }
  const color = parseHexColor(m[3]);
  if (!color) return { ok: false, problem: `marker color "${m[3]}" in "${head}" is not 3, 4, 6 or 8 hex digits` };
  const p = parseLonLat(body, latlng, metres);
  if (!p.ok) return { ok: false, problem: `in the marker "${item}": ${p.problem}` };
  return { ok: true, value: { kind: 'marker', size: m[1] as PinSize, label: m[2], color, point: p.value } };
}

/** All paths of `path` query values (each may hold several joined by "~"). */
export function parsePaths(values: readonly string[], latlng: boolean, metres = false): Parsed<PathOverlay[]> {
  return parseAll(values, (i) => parsePath(i, latlng, metres));
}

/** All markers of `marker` query values (each may hold several joined by "~"). */
export function parseMarkers(values: readonly string[], latlng: boolean, metres = false): Parsed<MarkerOverlay[]> {
  return parseAll(values, (i) => parseMarker(i, latlng, metres));
}

function parseAll<T>(values: readonly string[], one: (item: string) => Parsed<T>): Parsed<T[]> {
  const out: T[] = [];
  for (const value of values) {
    const list = items(value);
    if (!list.ok) return list;
    for (const item of list.value) {
      const r = one(item);
      if (!r.ok) return r;
      out.push(r.value);
    }
  }
  return { ok: true, value: out };
}

/** Text of a colour as SVG wants it, alpha apart. */
export const svgColor = (c: Rgba) => `rgb(${c.r},${c.g},${c.b})`;
