// tileserver-gl's overlay grammar for static maps, read next to this service's own (overlays.ts). A `path` or
// `marker` value in this grammar is one overlay (never joined by "~": an encoded polyline or an icon URL may
// hold one); which grammar a value is in shows in its first characters: ours starts with `path` or `pin-`.
//   path:   [{option}:{value}|…]{lon},{lat}|{lon},{lat}|…        options fill, stroke, width, border, borderwidth
//           [{option}:{value}|…]enc:{polyline}                   (enc6: for precision 6; lat,lon as the format has it)
//   marker: {lon},{lat}|{icon}[|{option}:{value}…]               options scale, offset, anchor
// Query parameters `fill`, `stroke`, `width`, `border`, `borderwidth`, `linecap`, `linejoin` give every path of
// this grammar its defaults, as tileserver-gl does. Unlike tileserver-gl, which skips what it cannot read, every
// value that is not understood is an error naming where it is.
import { parseHexColor, parseLonLat, parseNumber, pathPoints, type LineCap, type LineJoin, type LonLat, type Parsed, type PathOverlay, type Rgba } from './overlays.js';

/** tileserver-gl's defaults: a 1 px line of translucent blue; an empty `fill=` fills translucent white. */
const DEFAULT_STROKE: Rgba = { r: 0, g: 64, b: 255, a: 0.7 };
const DEFAULT_FILL: Rgba = { r: 255, g: 255, b: 255, a: 0.4 };
const DEFAULT_WIDTH = 1;
const MAX_WIDTH = 500;
const MAX_BORDER_WIDTH = 250;
/** tileserver-gl's colour names (canvas knows more, but tileserver-gl lets only these through). */
const NAMED: Record<string, Rgba> = {
  red: { r: 255, g: 0, b: 0, a: 1 },
  blue: { r: 0, g: 0, b: 255, a: 1 },
  green: { r: 0, g: 128, b: 0, a: 1 },
  yellow: { r: 255, g: 255, b: 0, a: 1 },
  black: { r: 0, g: 0, b: 0, a: 1 },
  white: { r: 255, g: 255, b: 255, a: 1 },
  gray: { r: 128, g: 128, b: 128, a: 1 },
  grey: { r: 128, g: 128, b: 128, a: 1 },
  orange: { r: 255, g: 165, b: 0, a: 1 },
  purple: { r: 128, g: 0, b: 128, a: 1 },
  pink: { r: 255, g: 192, b: 203, a: 1 },
  brown: { r: 165, g: 42, b: 42, a: 1 },
  cyan: { r: 0, g: 255, b: 255, a: 1 },
  magenta: { r: 255, g: 0, b: 255, a: 1 },
  none: { r: 0, g: 0, b: 0, a: 0 },
  transparent: { r: 0, g: 0, b: 0, a: 0 },
};
export const LINE_CAPS: readonly LineCap[] = ['butt', 'round', 'square'];
export const LINE_JOINS: readonly LineJoin[] = ['miter', 'round', 'bevel'];

/** True when a `path` value is in tileserver-gl's grammar rather than ours (`path…(…)`). */
export const isTileserverGlPath = (value: string) => !/^path[-+ (]/.test(value);
/** True when a `marker` value is in tileserver-gl's grammar rather than ours (`pin-…`). */
export const isTileserverGlMarker = (value: string) => !value.startsWith('pin-');

/**
 * A CSS colour as tileserver-gl accepts it: `#` and 3, 4, 6 or 8 hex digits, `rgb(r,g,b)`, `rgba(r,g,b,a)`, one
 * of its colour names, `none` or `transparent`. A query string turns `+` into a space, so spaces are allowed
 * where CSS allows them.
 */
export function parseCssColor(text: string): Rgba | undefined {
  const s = text.trim();
  if (s.startsWith('#')) return parseHexColor(s.slice(1));
  const named = Object.hasOwn(NAMED, s.toLowerCase()) ? NAMED[s.toLowerCase()] : undefined;
  if (named) return named;
  const m = /^rgb(a?)\(\s*(\d{1,3})\s*,\s*(\d{1,3})\s*,\s*(\d{1,3})\s*(?:,\s*(\d*\.?\d+)\s*)?\)$/.exec(s);
  if (!m || (m[1] === 'a') !== (m[5] !== undefined)) return undefined;
  const [r, g, b] = [m[2], m[3], m[4]].map(Number);
  const a = m[5] === undefined ? 1 : Number(m[5]);
  if (r > 255 || g > 255 || b > 255 || a > 1) return undefined;
  return { r, g, b, a };
}

/** The path styling query parameters: defaults of every path of this grammar. */
export interface PathDefaults {
  fill: Rgba | undefined;
  stroke: Rgba;
  width: number;
  border: Rgba | undefined;
  borderwidth: number | undefined;
  linecap: LineCap;
  linejoin: LineJoin;
}

export const PATH_DEFAULTS: PathDefaults = { fill: undefined, stroke: DEFAULT_STROKE, width: DEFAULT_WIDTH, border: undefined, borderwidth: undefined, linecap: 'butt', linejoin: 'miter' };

/** Reads one path style value (`fill`, `stroke`, `border`: colours; `width`, `borderwidth`: numbers), or the problem. */
export function pathStyleValue(name: 'fill' | 'stroke' | 'border', text: string): Parsed<Rgba>;
export function pathStyleValue(name: 'width' | 'borderwidth', text: string): Parsed<number>;
export function pathStyleValue(name: string, text: string): Parsed<Rgba | number> {
  if (name === 'width' || name === 'borderwidth') {
    const max = name === 'width' ? MAX_WIDTH : MAX_BORDER_WIDTH;
    const n = parseNumber(text.trim());
    if (n === undefined || n < 0 || n > max) return { ok: false, problem: `${name} "${text}" is not a number 0..${max}` };
    return { ok: true, value: n };
  }
  // An empty fill asks for tileserver-gl's default fill.
  if (name === 'fill' && text === '') return { ok: true, value: DEFAULT_FILL };
  const c = parseCssColor(text);
  if (!c) return { ok: false, problem: `${name} "${text}" is not a colour (#rgb, #rrggbb, #rrggbbaa, rgb(…), rgba(…), a colour name, none)` };
  return { ok: true, value: c };
}

const PATH_OPTIONS = new Set(['fill', 'stroke', 'width', 'border', 'borderwidth']);

/** One `path` value of tileserver-gl's grammar. */
export function parseTileserverGlPath(value: string, defaults: PathDefaults, latlng: boolean, metres: boolean): Parsed<PathOverlay> {
  const parts = value.split('|');
  const own = new Map<string, string>();
  let first = 0;
  // Leading `name:value` parts are options; the geometry starts at the first part without ":" or at `enc:`.
  while (first < parts.length && parts[first].includes(':') && !/^enc6?:/.test(parts[first])) {
    const part = parts[first];
    const colon = part.indexOf(':');
    const name = part.slice(0, colon);
    if (!PATH_OPTIONS.has(name)) return { ok: false, problem: `path option "${name}" is not one of ${[...PATH_OPTIONS].join(', ')}` };
    own.set(name, part.slice(colon + 1));
    first++;
  }
  const style = { ...defaults };
  for (const [name, text] of own) {
    const r = name === 'width' || name === 'borderwidth' ? pathStyleValue(name, text) : pathStyleValue(name as 'fill' | 'stroke' | 'border', text);
    if (!r.ok) return { ok: false, problem: `in the path "${short(value)}": ${r.problem}` };
    (style as Record<string, unknown>)[name] = r.value;
  }
  const geometry = parts.slice(first).join('|');
  if (geometry === '') return { ok: false, problem: `the path "${short(value)}" has no points (lon,lat|lon,lat|… or enc:…)` };
  const points = pathPoints(geometry, latlng, metres);
  if (!points.ok) return { ok: false, problem: `in the path "${short(value)}": ${points.problem}` };
  const pts = points.value;
  const closed = pts[0][0] === pts[pts.length - 1][0] && pts[0][1] === pts[pts.length - 1][1];
  // The border's default is a tenth of the line's width on each side.
  const border = style.border && { color: style.border, width: style.borderwidth ?? style.width * 0.1 };
  return {
    ok: true,
    value: { kind: 'path', width: style.width, stroke: style.stroke, fill: style.fill, closed, cap: style.linecap, join: style.linejoin, ...(border && border.width > 0 ? { border } : {}), points: pts },
  };
}

export type IconAnchor = 'center' | 'top' | 'bottom' | 'left' | 'right' | 'top-left' | 'top-right' | 'bottom-left' | 'bottom-right';
const ANCHORS: readonly IconAnchor[] = ['center', 'top', 'bottom', 'left', 'right', 'top-left', 'top-right', 'bottom-left', 'bottom-right'];

/** Where an icon comes from: the style's sprite, the `files` directory, or an allowed host. */
export type IconSource = { type: 'sprite'; name: string } | { type: 'file'; path: string } | { type: 'url'; url: URL };

export interface IconMarker {
  kind: 'icon';
  point: LonLat;
  icon: IconSource;
  /** Factor on the image's own size (0 < scale < 10). */
  scale: number;
  /** CSS pixels, right and down, multiplied by `scale` (as tileserver-gl does). */
  offset: [number, number];
  /** Which point of the image sits on the location: tileserver-gl's bottom centre by default. */
  anchor: IconAnchor;
}

/** A key naming an icon's image, the same for every marker showing it. */
export const iconKey = (s: IconSource) => (s.type === 'sprite' ? `sprite:${s.name}` : s.type === 'file' ? `file:${s.path}` : `url:${s.url.href}`);

/** Reads the `{icon}` part of a marker: `sprite:{name}`, an `http(s)://` URL, or a path in the files directory. */
export function parseIconSource(text: string): Parsed<IconSource> {
  if (text.startsWith('sprite:')) {
    const name = text.slice('sprite:'.length);
    if (name === '') return { ok: false, problem: '"sprite:" names no icon' };
    return { ok: true, value: { type: 'sprite', name } };
  }
  if (/^https?:\/\//i.test(text)) {
    if (!URL.canParse(text)) return { ok: false, problem: `icon URL "${text}" is not a URL` };
    return { ok: true, value: { type: 'url', url: new URL(text) } };
  }
  if (/^[a-z][a-z0-9+.-]*:/i.test(text)) return { ok: false, problem: `icon "${text}" is not sprite:{name}, an http(s) URL or a file of the files directory` };
  const file = text.replace(/^\/files\//, '').replace(/^\/+/, '');
  if (file === '' || file.split(/[\\/]/).some((p) => p === '..')) return { ok: false, problem: `icon "${text}" is not a file inside the files directory` };
  return { ok: true, value: { type: 'file', path: file } };
}

/** One `marker` value of tileserver-gl's grammar. */
export function parseTileserverGlMarker(value: string, latlng: boolean, metres: boolean): Parsed<IconMarker> {
  const parts = value.split('|');
  if (parts.length < 2 || parts[1] === '') return { ok: false, problem: `the marker "${short(value)}" is not {lon},{lat}|{icon}[|{option}:{value}…]` };
  const point = parseLonLat(parts[0], latlng, metres);
  if (!point.ok) return { ok: false, problem: `in the marker "${short(value)}": ${point.problem}` };
  const icon = parseIconSource(parts[1]);
  if (!icon.ok) return { ok: false, problem: `in the marker "${short(value)}": ${icon.problem}` };
  const marker: IconMarker = { kind: 'icon', point: point.value, icon: icon.value, scale: 1, offset: [0, 0], anchor: 'bottom' };
  for (const option of parts.slice(2)) {
    const colon = option.indexOf(':');
    const [name, text] = colon < 0 ? [option, ''] : [option.slice(0, colon), option.slice(colon + 1)];
    const bad = (why: string): Parsed<IconMarker> => ({ ok: false, problem: `in the marker "${short(value)}": ${why}` });
    if (name === 'scale') {
      const s = parseNumber(text);
      if (s === undefined || s <= 0 || s >= 10) return bad(`scale "${text}" is not a number above 0 and below 10`);
      marker.scale = s;
    } else if (name === 'offset') {
      const xy = text.split(',').map((t) => parseNumber(t));
      if (xy.length > 2 || xy.some((n) => n === undefined || Math.abs(n) >= 1000)) return bad(`offset "${text}" is not {x}[,{y}] in pixels (each within ±1000)`);
      marker.offset = [xy[0]!, xy[1] ?? 0];
    } else if (name === 'anchor') {
      if (!(ANCHORS as readonly string[]).includes(text)) return bad(`anchor "${text}" is not one of ${ANCHORS.join(', ')}`);
      marker.anchor = text as IconAnchor;
    } else return bad(`marker option "${name}" is not scale, offset or anchor`);
  }
  return { ok: true, value: marker };
}

const short = (s: string) => (s.length > 120 ? `${s.slice(0, 120)}…` : s);
