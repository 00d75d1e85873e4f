// The independent readings (models) and the generators of the static-map and social-card parameters, shared by
// the direct property tests (static-params.property.test.ts) and those through the server
// (static-routes.property.test.ts). The models are written without the product's regexes.
import fc from './fast-check.js';

/** Web Mercator's latitude limit, computed here: atan(sinh(π)). */
export const MERCATOR_LAT = (Math.atan(Math.sinh(Math.PI)) * 180) / Math.PI;
export const FORMATS = new Map([
  ['png', 'png'],
  ['jpg', 'jpeg'],
  ['jpeg', 'jpeg'],
  ['webp', 'webp'],
  ['avif', 'avif'],
  ['auto', 'auto'],
]);

// ---- Independent readings (models) ---------------------------------------------------------------------------

/** A number as a URL writes it, read character by character: [-]digits[.digits] or [-].digits. */
export function modelNumber(s: string): number | undefined {
  let i = s.startsWith('-') ? 1 : 0;
  let digits = 0;
  let dots = 0;
  for (; i < s.length; i++) {
    const c = s.charCodeAt(i);
    if (c >= 48 && c <= 57) digits++;
    else if (s[i] === '.' && dots === 0) dots++;
    else return undefined;
  }
  return digits > 0 ? parseFloat(s) : undefined;
}

export const allDigits = (s: string) => s.length > 0 && [...s].every((c) => c >= '0' && c <= '9');

export interface ModelSize {
  width: number;
  height: number;
  scale: number;
  format: string;
}

/** `{w}x{h}[@{s}x].{ext}` read from the right: the extension after the last dot, then `@…x`, then the two sides. */
export function modelSize(seg: string): ModelSize | undefined {
  const dot = seg.lastIndexOf('.');
  if (dot < 0) return undefined;
  const format = FORMATS.get(seg.slice(dot + 1).toLowerCase());
  if (!format) return undefined;
  let dims = seg.slice(0, dot);
  let scale = 1;
  const at = dims.indexOf('@');
  if (at >= 0) {
    const tail = dims.slice(at + 1);
    if (!tail.endsWith('x') || !allDigits(tail.slice(0, -1))) return undefined;
    scale = parseInt(tail.slice(0, -1), 10);
    if (scale < 1 || scale > 3) return undefined;
    dims = dims.slice(0, at);
  }
  const sides = dims.split('x');
  if (sides.length !== 2 || !sides.every((d) => allDigits(d) && d.length <= 5)) return undefined;
  const [width, height] = sides.map((d) => parseInt(d, 10));
  if (width < 1 || width > 4096 || height < 1 || height > 4096) return undefined;
  return { width, height, scale, format };
}

export type ModelView =
  | { type: 'center'; center: [number, number]; zoom: number; bearing: number; pitch: number }
  | { type: 'bbox'; bounds: { west: number; south: number; east: number; north: number } }
  | { type: 'auto' };

export function modelView(seg: string, latlng: boolean): ModelView | undefined {
  if (seg === 'auto') return { type: 'auto' };
  const [main, rotation, ...more] = seg.split('@');
  if (more.length) return undefined;
  const n = main.split(',').map(modelNumber);
  if (n.some((x) => x === undefined)) return undefined;
  const v = n as number[];
  const pair = (a: number, b: number): [number, number] | undefined => {
    const [lon, lat] = latlng ? [b, a] : [a, b];
    return Math.abs(lon) <= 180 && Math.abs(lat) <= 90 ? [lon, lat] : undefined;
  };
  if (v.length === 3) {
    const c = pair(v[0], v[1]);
    if (!c || Math.abs(c[1]) > MERCATOR_LAT || v[2] < 0 || v[2] > 22) return undefined;
    let bearing = 0;
    let pitch = 0;
    if (rotation !== undefined) {
      const r = rotation.split(',').map(modelNumber);
      if (r.length > 2 || r.some((x) => x === undefined)) return undefined;
      bearing = r[0]!;
      pitch = r[1] ?? 0;
      if (Math.abs(bearing) > 360 || pitch < 0 || pitch > 85) return undefined;
    }
    return { type: 'center', center: c, zoom: v[2], bearing, pitch };
  }
  if (rotation !== undefined || v.length !== 4) return undefined;
  const sw = pair(v[0], v[1]);
  const ne = pair(v[2], v[3]);
  if (!sw || !ne || sw[1] >= ne[1] || sw[0] === ne[0]) return undefined;
  return { type: 'bbox', bounds: { west: sw[0], south: sw[1], east: ne[0], north: ne[1] } };
}

// ---- Generators of what a user writes --------------------------------------------------------------------------

/** A decimal in [min, max] written in one of the spellings a URL may carry, with the number it means. */
export const written = (min: number, max: number, decimals = 4) =>
  fc
    .tuple(fc.integer({ min: Math.round(min * 10 ** decimals), max: Math.round(max * 10 ** decimals) }), fc.constantFrom('fixed', 'short', 'dot'))
    .map(([units, style]) => {
      const value = units / 10 ** decimals;
      const neg = value < 0 ? '-' : '';
      const abs = Math.abs(value);
      const int = Math.trunc(abs);
      const frac = String(Math.abs(units) % 10 ** decimals).padStart(decimals, '0');
      let text: string;
      if (style === 'fixed') text = `${neg}${int}.${frac}`;
      else if (style === 'dot' && int === 0 && abs > 0) text = `${neg}.${frac}`; // ".5"
      else if (style === 'dot' && frac === '0'.repeat(decimals)) text = `${neg}${int}.`; // "12."
      else text = `${neg}${int}${frac.replace(/0+$/, '') ? `.${frac.replace(/0+$/, '')}` : ''}`;
      return { text, value: parseFloat(text) };
    });

/** A side of 1..4096 px, sometimes with leading zeros (five digits at most). */
export const side = fc.tuple(fc.integer({ min: 1, max: 4096 }), fc.integer({ min: 0, max: 4 })).map(([n, pad]) => ({ n, text: String(n).padStart(Math.min(5, String(n).length + pad), '0') }));
export const formatText = fc.constantFrom('png', 'PNG', 'jpg', 'JPG', 'jpeg', 'Jpeg', 'webp', 'WEBP');
export const scaleText = fc.constantFrom<string | undefined>(undefined, '1', '2', '3', '02', '003');
export const sizeSegment = fc.record({ w: side, h: side, s: scaleText, f: formatText }).map((r) => ({ ...r, text: `${r.w.text}x${r.h.text}${r.s === undefined ? '' : `@${r.s}x`}.${r.f}` }));

const badSide = fc.oneof(fc.constantFrom('0', '00', '4097', '99999', '123456', '', '-1', '+5', ' 5', '1e3', 'abc', '٣'), fc.integer({ min: 4097, max: 99999 }).map(String));
const badScale = fc.oneof(fc.constantFrom('0', '4', '10', '', 'a', '2y', '-1', '+2', ' 2'), fc.integer({ min: 4, max: 999 }).map(String));
const badFormat = fc.stringMatching(/^[A-Za-z0-9]{1,6}$/).filter((e) => !FORMATS.has(e.toLowerCase()));
/** A size segment with one wrong part, and that part. */
export const sizeMistake = fc.oneof(
  fc.record({ part: fc.constant('width'), w: badSide, h: side.map((x) => x.text), s: scaleText, f: formatText }),
  fc.record({ part: fc.constant('height'), w: side.map((x) => x.text), h: badSide, s: scaleText, f: formatText }),
  fc.record({ part: fc.constant('scale'), w: side.map((x) => x.text), h: side.map((x) => x.text), s: badScale, f: formatText }),
  fc.record({ part: fc.constant('format'), w: side.map((x) => x.text), h: side.map((x) => x.text), s: scaleText, f: badFormat }),
).map((m) => ({ ...m, text: `${m.w}x${m.h}${m.s === undefined ? '' : `@${m.s}x`}.${m.f}` }));
export const lonText = written(-180, 180);
export const latText = (limit: number) => written(-limit, limit);
export const zoomText = written(0, 22, 2);

/** A centre view as written, in the given coordinate order, with or without @bearing[,pitch]. */
export const centerView = (latlng: boolean, latLimit = 85) =>
  fc
    .record({ lon: lonText, lat: latText(latLimit), zoom: zoomText, bearing: fc.option(written(-360, 360, 2), { nil: undefined }), pitch: fc.option(written(0, 85, 2), { nil: undefined }) })
    .map((r) => {
      const pair = latlng ? `${r.lat.text},${r.lon.text}` : `${r.lon.text},${r.lat.text}`;
      const rot = r.bearing ? `@${r.bearing.text}${r.pitch ? `,${r.pitch.text}` : ''}` : '';
      const expected: ModelView = { type: 'center', center: [r.lon.value, r.lat.value], zoom: r.zoom.value, bearing: r.bearing?.value ?? 0, pitch: r.bearing ? (r.pitch?.value ?? 0) : 0 };
      return { text: `${pair},${r.zoom.text}${rot}`, expected, rotated: r.bearing !== undefined };
    });

/** A bounding box with south < north and west ≠ east (west > east crosses the antimeridian). */
export const bboxView = (latlng: boolean) =>
  fc
    .record({ w: lonText, e: lonText, a: latText(90), b: latText(90) })
    .filter((r) => r.w.value !== r.e.value && r.a.value !== r.b.value)
    .map((r) => {
      const [s, n] = r.a.value < r.b.value ? [r.a, r.b] : [r.b, r.a];
      const text = latlng ? `${s.text},${r.w.text},${n.text},${r.e.text}` : `${r.w.text},${s.text},${r.e.text},${n.text}`;
      const expected: ModelView = { type: 'bbox', bounds: { west: r.w.value, south: s.value, east: r.e.value, north: n.value } };
      return { text, expected, crossing: r.w.value > r.e.value };
    });

/** Strings near the grammar (numbers, commas, @, dots, minus, letters of "auto"): a mix of valid and invalid. */
export const nearView = fc.oneof(
  fc.stringMatching(/^-?[0-9]{0,3}(\.[0-9]{0,2})?(,-?[0-9]{0,3}(\.[0-9]{0,2})?){1,4}(@-?[0-9]{0,3}(\.[0-9])?(,[0-9]{0,2})?){0,2}$/),
  fc.stringMatching(/^[-0-9.,@autoAUTO +e]{0,20}$/),
  fc.string({ maxLength: 30 }),
  fc.constantFrom('auto', 'AUTO', 'auto ', ' auto', 'Auto', 'auto@1', ''),
);

