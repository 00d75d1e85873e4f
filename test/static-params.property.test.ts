// Property tests of the static-map and social-card parameters: the size segment (parseSizeSegment with
// parseDimension and parseScale), parseBoolean, the view segment in all three forms (centre, bounding box,
// `auto`) and garbage, and the /og `center` and `bounds`. Valid input is generated on purpose, written as a user
// writes it and compared with an independent reading (a model written here without the product's regexes);
// invalid input is generated per mistake and must be refused naming the part. Through one real server (a style
// with a red box on blue, Chromium): every valid request reaches the pixel budget check with the exact size it
// asked for (render.max_pixels is small), invalid ones are 400 problem+json naming the parameter, never 500,
// and a few small images are really rendered and probed where the red box must (or must not) be.
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import fc from 'fast-check';
import { parseBoolean, parseDimension, parseScale, parseSizeSegment, parseViewSegment } from '../src/render/static-params.js';
import { parseLonLat } from '../src/render/overlays.js';
import { FormCounter } from './helpers/forms.js';
import { decode, distance, pixel, type Rgb } from './helpers/render.js';
import { startServer, type TestServer } from './helpers/server.js';

// A failing property reports the assertion's own message, not only the counterexample.
fc.configureGlobal({ ...fc.readConfigureGlobal(), includeErrorInReport: true });

/** Web Mercator's latitude limit, computed here: atan(sinh(π)). */
const MERCATOR_LAT = (Math.atan(Math.sinh(Math.PI)) * 180) / Math.PI;
const FORMATS = new Map([
  ['png', 'png'],
  ['jpg', 'jpeg'],
  ['jpeg', 'jpeg'],
  ['webp', 'webp'],
]);

// ---- Independent readings (models) ---------------------------------------------------------------------------

/** A number as a URL writes it, read character by character: [-]digits[.digits] or [-].digits. */
function modelNumber(s: string): number | undefined {
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

const allDigits = (s: string) => s.length > 0 && [...s].every((c) => c >= '0' && c <= '9');

interface ModelSize {
  width: number;
  height: number;
  scale: number;
  format: string;
}

/** `{w}x{h}[@{s}x].{ext}` read from the right: the extension after the last dot, then `@…x`, then the two sides. */
function modelSize(seg: string): ModelSize | undefined {
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

type ModelView =
  | { type: 'center'; center: [number, number]; zoom: number; bearing: number; pitch: number }
  | { type: 'bbox'; bounds: { west: number; south: number; east: number; north: number } }
  | { type: 'auto' };

function modelView(seg: string, latlng: boolean): ModelView | undefined {
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
const written = (min: number, max: number, decimals = 4) =>
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
const side = fc.tuple(fc.integer({ min: 1, max: 4096 }), fc.integer({ min: 0, max: 4 })).map(([n, pad]) => ({ n, text: String(n).padStart(Math.min(5, String(n).length + pad), '0') }));
const formatText = fc.constantFrom('png', 'PNG', 'jpg', 'JPG', 'jpeg', 'Jpeg', 'webp', 'WEBP');
const scaleText = fc.constantFrom<string | undefined>(undefined, '1', '2', '3', '02', '003');
const sizeSegment = fc.record({ w: side, h: side, s: scaleText, f: formatText }).map((r) => ({ ...r, text: `${r.w.text}x${r.h.text}${r.s === undefined ? '' : `@${r.s}x`}.${r.f}` }));

const badSide = fc.oneof(fc.constantFrom('0', '00', '4097', '99999', '123456', '', '-1', '+5', ' 5', '1e3', 'abc', '٣'), fc.integer({ min: 4097, max: 99999 }).map(String));
const badScale = fc.oneof(fc.constantFrom('0', '4', '10', '', 'a', '2y', '-1', '+2', ' 2'), fc.integer({ min: 4, max: 999 }).map(String));
const badFormat = fc.stringMatching(/^[A-Za-z0-9]{1,6}$/).filter((e) => !FORMATS.has(e.toLowerCase()));
/** A size segment with one wrong part, and that part. */
const sizeMistake = fc.oneof(
  fc.record({ part: fc.constant('width'), w: badSide, h: side.map((x) => x.text), s: scaleText, f: formatText }),
  fc.record({ part: fc.constant('height'), w: side.map((x) => x.text), h: badSide, s: scaleText, f: formatText }),
  fc.record({ part: fc.constant('scale'), w: side.map((x) => x.text), h: side.map((x) => x.text), s: badScale, f: formatText }),
  fc.record({ part: fc.constant('format'), w: side.map((x) => x.text), h: side.map((x) => x.text), s: scaleText, f: badFormat }),
).map((m) => ({ ...m, text: `${m.w}x${m.h}${m.s === undefined ? '' : `@${m.s}x`}.${m.f}` }));
const lonText = written(-180, 180);
const latText = (limit: number) => written(-limit, limit);
const zoomText = written(0, 22, 2);

/** A centre view as written, in the given coordinate order, with or without @bearing[,pitch]. */
const centerView = (latlng: boolean, latLimit = 85) =>
  fc
    .record({ lon: lonText, lat: latText(latLimit), zoom: zoomText, bearing: fc.option(written(-360, 360, 2), { nil: undefined }), pitch: fc.option(written(0, 85, 2), { nil: undefined }) })
    .map((r) => {
      const pair = latlng ? `${r.lat.text},${r.lon.text}` : `${r.lon.text},${r.lat.text}`;
      const rot = r.bearing ? `@${r.bearing.text}${r.pitch ? `,${r.pitch.text}` : ''}` : '';
      const expected: ModelView = { type: 'center', center: [r.lon.value, r.lat.value], zoom: r.zoom.value, bearing: r.bearing?.value ?? 0, pitch: r.bearing ? (r.pitch?.value ?? 0) : 0 };
      return { text: `${pair},${r.zoom.text}${rot}`, expected, rotated: r.bearing !== undefined };
    });

/** A bounding box with south < north and west ≠ east (west > east crosses the antimeridian). */
const bboxView = (latlng: boolean) =>
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
const nearView = fc.oneof(
  fc.stringMatching(/^-?[0-9]{0,3}(\.[0-9]{0,2})?(,-?[0-9]{0,3}(\.[0-9]{0,2})?){1,4}(@-?[0-9]{0,3}(\.[0-9])?(,[0-9]{0,2})?){0,2}$/),
  fc.stringMatching(/^[-0-9.,@autoAUTO +e]{0,20}$/),
  fc.string({ maxLength: 30 }),
  fc.constantFrom('auto', 'AUTO', 'auto ', ' auto', 'Auto', 'auto@1', ''),
);

describe('size segment, scale, dimension and boolean (properties)', () => {
  test('every {w}x{h}[@{s}x].{format} a user writes parses to the sizes, scale and format written', () => {
    const forms = new FormCounter();
    fc.assert(
      fc.property(sizeSegment, ({ w, h, s, f, text }) => {
        forms.hit(s === undefined ? 'no-scale' : `scale-${Number(s)}`);
        forms.hit(`format-${FORMATS.get(f.toLowerCase())}`);
        if (w.text.startsWith('0') || h.text.startsWith('0')) forms.hit('leading-zero');
        if (w.n === 4096 || h.n === 4096 || w.n === 1 || h.n === 1) forms.hit('edge');
        const r = parseSizeSegment(text);
        assert.ok(r.ok, `${text}: ${r.ok ? '' : r.problem.detail}`);
        assert.deepEqual(r.value, { width: w.n, height: h.n, scale: s === undefined ? 1 : Number(s), format: FORMATS.get(f.toLowerCase()) });
        assert.deepEqual(r.value, modelSize(text));
      }),
      { numRuns: 1500 },
    );
    forms.assertEach(['no-scale', 'scale-1', 'scale-2', 'scale-3', 'format-png', 'format-jpeg', 'format-webp', 'leading-zero', 'edge'], 30);
  });

  test('a size with one wrong part is refused naming that part: width, height, scale, format or the whole size', () => {
    const forms = new FormCounter();
    fc.assert(
      fc.property(sizeMistake, ({ part, w, h, s, f, text }) => {
        const r = parseSizeSegment(text);
        assert.equal(modelSize(text), undefined, `the model refuses ${text}`);
        assert.ok(!r.ok, `${text} was accepted`);
        forms.hit(part);
        assert.equal(r.problem.parameter, part, `${text}: ${r.problem.detail}`);
        const shown = part === 'width' ? w : part === 'height' ? h : part === 'scale' ? s : f;
        assert.ok(r.problem.detail.includes(`"${part === 'format' ? '.' : part === 'scale' ? '@' : ''}${shown}`), `${text}: "${r.problem.detail}" names ${shown}`);
      }),
      { numRuns: 1000 },
    );
    forms.assertEach(['width', 'height', 'scale', 'format'], 100);
  });

  test('any text: parseSizeSegment never throws and accepts exactly what the model reads', () => {
    const forms = new FormCounter();
    const text = fc.oneof(fc.string({ maxLength: 24 }), fc.stringMatching(/^[0-9x@.a-zA-Z]{0,16}$/), fc.stringMatching(/^[0-9]{0,5}x[0-9]{0,5}(@[0-9]{0,2}x)?\.(png|jpg|webp|gif|PNG)$/), sizeSegment.map((s) => s.text));
    fc.assert(
      fc.property(text, (seg) => {
        const r = parseSizeSegment(seg);
        const m = modelSize(seg);
        forms.hit(r.ok ? 'accepted' : `refused-${r.problem.parameter}`);
        if (m) assert.deepEqual(r, { ok: true, value: m }, seg);
        else {
          assert.ok(!r.ok, `${JSON.stringify(seg)} was accepted as ${JSON.stringify(r.ok && r.value)}`);
          assert.ok(['size', 'width', 'height', 'scale', 'format'].includes(r.problem.parameter));
          assert.ok(r.problem.detail.length > 0);
        }
      }),
      { numRuns: 3000 },
    );
    forms.assertEach(['accepted', 'refused-size', 'refused-width', 'refused-height', 'refused-scale', 'refused-format'], 20);
  });

  test('parseDimension and parseScale read 1..4096 and 1..3 written in decimal digits, nothing else', () => {
    const forms = new FormCounter();
    fc.assert(
      fc.property(fc.oneof(fc.integer({ min: -10, max: 10_000 }).map(String), fc.stringMatching(/^0{0,3}[0-4]$/), fc.stringMatching(/^[0-9]{1,7}$/), fc.string({ maxLength: 6 }), fc.constant(undefined)), (s) => {
        const d = parseDimension(s, 'width');
        const inRange = (lo: number, hi: number, maxLen: number) => s !== undefined && allDigits(s) && s.length <= maxLen && parseInt(s, 10) >= lo && parseInt(s, 10) <= hi;
        forms.hit(d.ok ? 'dimension-ok' : 'dimension-refused');
        if (inRange(1, 4096, 5)) assert.deepEqual(d, { ok: true, value: parseInt(s!, 10) });
        else assert.ok(!d.ok && d.problem.parameter === 'width' && d.problem.detail.includes(`"${s ?? ''}"`), String(s));
        if (s === undefined) return; // an absent scale means 1 (below)
        const sc = parseScale(s);
        forms.hit(sc.ok ? 'scale-ok' : 'scale-refused');
        if (inRange(1, 3, Infinity)) assert.deepEqual(sc, { ok: true, value: parseInt(s, 10) });
        else assert.ok(!sc.ok && sc.problem.parameter === 'scale' && sc.problem.detail.includes(`"@${s}x"`), s);
      }),
      { numRuns: 3000 },
    );
    assert.deepEqual(parseScale(undefined), { ok: true, value: 1 });
    forms.assertEach(['dimension-ok', 'dimension-refused', 'scale-ok', 'scale-refused'], 50);
  });

  test('parseBoolean: absent, "", true/1 and false/0 only; anything else is refused naming the parameter and value', () => {
    const forms = new FormCounter();
    const meaning = new Map<string | undefined, boolean>([[undefined, false], ['', false], ['true', true], ['1', true], ['false', false], ['0', false]]);
    const text = fc.oneof(fc.constantFrom(...meaning.keys()), fc.constantFrom('TRUE', 'True', 'yes', 'no', 'on', ' 1', '1 ', '01', '00', 'fals', '2', '-1'), fc.string({ maxLength: 8 }));
    fc.assert(
      fc.property(text, fc.stringMatching(/^[a-z_]{1,10}$/), (v, name) => {
        const r = parseBoolean(v, name);
        if (meaning.has(v)) {
          forms.hit(`valid-${String(v)}`);
          assert.deepEqual(r, { ok: true, value: meaning.get(v) });
        } else {
          forms.hit('refused');
          assert.ok(!r.ok, JSON.stringify(v));
          assert.equal(r.problem.parameter, name);
          assert.ok(r.problem.detail.includes(`"${v}"`));
        }
      }),
      { numRuns: 2000 },
    );
    forms.assertEach(['valid-undefined', 'valid-', 'valid-true', 'valid-1', 'valid-false', 'valid-0', 'refused'], 20);
  });
});

describe('the view segment (properties)', () => {
  test('centre views, bounding boxes and auto parse back to what was written, lon,lat and lat,lon', () => {
    const forms = new FormCounter();
    const view = fc.boolean().chain((latlng) =>
      fc.oneof(
        centerView(latlng).map((v) => ({ ...v, latlng, form: v.rotated ? 'center-rotated' : 'center' })),
        bboxView(latlng).map((v) => ({ ...v, latlng, form: v.crossing ? 'bbox-antimeridian' : 'bbox' })),
        fc.constant({ text: 'auto', expected: { type: 'auto' } as ModelView, latlng, form: 'auto' }),
      ),
    );
    fc.assert(
      fc.property(view, ({ text, expected, latlng, form }) => {
        forms.hit(form);
        forms.hit(latlng ? 'latlng' : 'lonlat');
        const r = parseViewSegment(text, latlng);
        assert.ok(r.ok, `${text}: ${r.ok ? '' : r.problem.detail}`);
        assert.deepEqual(r.value, expected, text);
        assert.deepEqual(r.value, modelView(text, latlng));
      }),
      { numRuns: 1500 },
    );
    forms.assertEach(['center', 'center-rotated', 'bbox', 'bbox-antimeridian', 'auto', 'latlng', 'lonlat'], 40);
  });

  test('each kind of wrong view is refused with a problem that names it', () => {
    const bad = fc.oneof(
      centerView(false).map((v) => ({ kind: 'zoom', text: v.text.replace(/^([^,]*,[^,]*),[^@]*/, '$1,22.5'), names: 'zoom' })),
      fc.tuple(lonText, written(-85, 85), fc.integer({ min: 361, max: 9999 })).map(([lo, la, b]) => ({ kind: 'bearing', text: `${lo.text},${la.text},3@-${b}`, names: 'bearing' })),
      fc.tuple(lonText, written(-85, 85), fc.integer({ min: 86, max: 999 })).map(([lo, la, p]) => ({ kind: 'pitch', text: `${lo.text},${la.text},3@10,${p}`, names: 'pitch' })),
      fc.tuple(lonText, written(85.06, 90)).map(([lo, la]) => ({ kind: 'mercator', text: `${lo.text},${la.text},2`, names: 'latitude' })),
      fc.tuple(written(180.001, 999), written(-80, 80)).map(([lo, la]) => ({ kind: 'longitude', text: `${lo.text},${la.text},2`, names: 'longitude' })),
      bboxView(false).map((v) => {
        const b = (v.expected as { bounds: { west: number; south: number; east: number; north: number } }).bounds;
        return { kind: 'south-north', text: `${b.west},${b.north},${b.east},${b.south}`, names: 'south' };
      }),
      fc.tuple(lonText, lonText, latText(90)).filter(([w, e]) => w.value !== e.value).map(([w, e, l]) => ({ kind: 'no-height', text: `${w.text},${l.text},${e.text},${l.text}`, names: 'south' })),
      fc.tuple(lonText, written(-80, 0), written(1, 80)).map(([lo, s, n]) => ({ kind: 'no-width', text: `${lo.text},${s.text},${lo.text},${n.text}`, names: 'no width' })),
      bboxView(false).map((v) => ({ kind: 'bbox-rotated', text: `${v.text}@10`, names: 'only a centre' })),
      centerView(false).map((v) => ({ kind: 'two-at', text: `${v.text.split('@')[0]}@1@2`, names: 'more than one "@"' })),
      fc.tuple(fc.integer({ min: 1, max: 6 }).filter((n) => n !== 3 && n !== 4), lonText).map(([n, x]) => ({ kind: 'count', text: Array(n).fill(x.text).join(','), names: 'is not lon,lat,zoom' })),
      fc.tuple(lonText, fc.constantFrom('1e3', '+5', '0x1', 'NaN', 'Infinity', ' 5', '5 ', '', '1,5'.replace(',', '٫'))).map(([lo, junk]) => ({ kind: 'not-a-number', text: `${lo.text},${junk},3`, names: `"${junk}"` })),
      fc.constantFrom('AUTO', 'Auto', 'auto ', ' auto', 'auto@1', 'auto,1').map((t) => ({ kind: 'auto-spelling', text: t, names: t.split('@')[0].split(',')[0] })),
    );
    const forms = new FormCounter();
    fc.assert(
      fc.property(bad, ({ kind, text, names }) => {
        forms.hit(kind);
        assert.equal(modelView(text, false), undefined, `the model refuses ${text}`);
        const r = parseViewSegment(text, false);
        assert.ok(!r.ok, `${kind}: ${text} was accepted as ${JSON.stringify(r.ok && r.value)}`);
        assert.equal(r.problem.parameter, 'view');
        assert.ok(r.problem.detail.includes(names), `${kind}: "${r.problem.detail}" should name ${names}`);
      }),
      { numRuns: 1500 },
    );
    forms.assertEach(['zoom', 'bearing', 'pitch', 'mercator', 'longitude', 'south-north', 'no-height', 'no-width', 'bbox-rotated', 'two-at', 'count', 'not-a-number', 'auto-spelling'], 40);
  });

  test('text near the grammar and garbage: never throws, and accepts exactly what the model reads', () => {
    const forms = new FormCounter();
    // Valid views with one character inserted, deleted or replaced sit right at the grammar's edge.
    const valid = fc.oneof(centerView(false).map((v) => v.text), bboxView(false).map((v) => v.text));
    const mutated = fc.tuple(valid, fc.nat(), fc.constantFrom('insert', 'delete', 'replace'), fc.constantFrom(...'-.,@0123456789a +e')).map(([t, at, op, ch]) => {
      const i = at % (t.length + 1);
      return op === 'insert' ? t.slice(0, i) + ch + t.slice(i) : op === 'delete' ? t.slice(0, i) + t.slice(i + 1) : t.slice(0, i) + ch + t.slice(i + 1);
    });
    fc.assert(
      fc.property(fc.oneof(nearView, valid, mutated), fc.boolean(), (seg, latlng) => {
        const r = parseViewSegment(seg, latlng);
        const m = modelView(seg, latlng);
        forms.hit(r.ok ? `accepted-${r.value.type}` : 'refused');
        if (m) assert.deepEqual(r, { ok: true, value: m }, seg);
        else {
          assert.ok(!r.ok, `${JSON.stringify(seg)} was accepted as ${JSON.stringify(r.ok && r.value)}`);
          assert.equal(r.problem.parameter, 'view');
          assert.ok(r.problem.detail.length > 0);
        }
      }),
      { numRuns: 4000 },
    );
    forms.assertEach(['accepted-center', 'accepted-bbox', 'refused'], 50);
    forms.assertEach(['accepted-auto'], 15);
  });
});

describe('/og center and bounds (properties of the parsers the route uses)', () => {
  test('center=lat,lng reads latitude first; bounds=minLng,minLat,maxLng,maxLat reads a box', () => {
    const forms = new FormCounter();
    fc.assert(
      fc.property(lonText, latText(90), (lon, lat) => {
        forms.hit(Math.abs(lat.value) > MERCATOR_LAT ? 'center-polar' : 'center');
        // The route reads center with latlng = true.
        assert.deepEqual(parseLonLat(`${lat.text},${lon.text}`, true), { ok: true, value: [lon.value, lat.value] });
      }),
      { numRuns: 800 },
    );
    fc.assert(
      fc.property(bboxView(false), ({ text, expected }) => {
        forms.hit('bounds');
        assert.deepEqual(parseViewSegment(text, false), { ok: true, value: expected });
      }),
      { numRuns: 500 },
    );
    forms.assertEach(['center', 'center-polar', 'bounds'], 20);
  });
});

// ---- Through the real server ---------------------------------------------------------------------------------

const RED: Rgb = [255, 0, 0];
const BLUE: Rgb = [0, 0, 255];
/** The red box of the probe style, in degrees. */
// Wider than tall, so that a point inside read the wrong way round (lat as lon) falls outside.
const BOX = { west: 10, south: 10, east: 80, north: 40 };
const MAX_PIXELS = 64 * 64;

describe('static maps and social cards through the server (properties)', () => {
  let server: TestServer;

  before(async () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'tsts-static-prop-'));
    const ring = [[BOX.west, BOX.south], [BOX.east, BOX.south], [BOX.east, BOX.north], [BOX.west, BOX.north], [BOX.west, BOX.south]];
    const style = {
      version: 8,
      sources: { box: { type: 'geojson', data: { type: 'Feature', properties: {}, geometry: { type: 'Polygon', coordinates: [ring] } } } },
      layers: [
        { id: 'bg', type: 'background', paint: { 'background-color': '#0000ff' } },
        { id: 'box', type: 'fill', source: 'box', paint: { 'fill-color': '#ff0000', 'fill-antialias': false } },
      ],
    };
    writeFileSync(path.join(dir, 'style.json'), JSON.stringify(style));
    server = await startServer({
      toml: `[[styles]]\nid = "probe"\npath = "${path.join(dir, 'style.json')}"\n[cache]\ndir = "${path.join(dir, 'cache')}"\n[render]\npool_size = 1\npages_per_browser = 1\nmax_pixels = ${MAX_PIXELS}\n`,
      timeoutMs: 60_000,
    });
  });
  after(async () => {
    await server?.stop();
  });

  async function get(p: string): Promise<{ status: number; type: string | null; body: Buffer }> {
    const res = await fetch(server.url + p);
    return { status: res.status, type: res.headers.get('content-type'), body: Buffer.from(await res.arrayBuffer()) };
  }

  async function problemOf(p: string): Promise<{ status: number; parameter: string; detail: string }> {
    const r = await get(p);
    assert.equal(r.type, 'application/problem+json', `${p}: ${r.status} ${r.body.toString().slice(0, 200)}`);
    const body = JSON.parse(r.body.toString()) as { type: string; title: string; status: number; detail: string; parameter: string };
    assert.equal(body.status, r.status);
    assert.ok(body.type && body.title && body.detail, p);
    assert.doesNotMatch(body.detail, /\n\s+at |TypeError|RangeError/, 'no internal exception text');
    return { status: r.status, parameter: body.parameter, detail: body.detail };
  }

  /** The budget refusal of a request that parsed: it names the exact size asked for. */
  const budgetDetail = (w: number, h: number, s: number) =>
    `${s === 1 ? `${w}x${h}` : `${w}x${h}@${s}x`} is ${w * h * s * s} device pixels, more than render.max_pixels (${MAX_PIXELS})`;

  const overBudget = sizeSegment.filter(({ w, h, s }) => w.n * h.n * (s === undefined ? 1 : Number(s)) ** 2 > MAX_PIXELS);

  test('valid sizes, views and latlng reach the pixel budget with the size written', async () => {
    const forms = new FormCounter();
    const latlngText = fc.constantFrom<[string | undefined, boolean]>([undefined, false], ['', false], ['false', false], ['0', false], ['true', true], ['1', true]);
    const request = latlngText.chain(([lt, latlng]) =>
      fc.record({
        lt: fc.constant(lt),
        view: fc.oneof(centerView(latlng).map((v) => ({ ...v, form: 'center' })), bboxView(latlng).map((v) => ({ ...v, form: 'bbox' })), fc.constant({ text: 'auto', form: 'auto' })),
        size: overBudget,
      }),
    );
    await fc.assert(
      fc.asyncProperty(request, async ({ lt, view, size }) => {
        forms.hit(view.form);
        forms.hit(`latlng-${lt === undefined ? 'absent' : lt}`);
        const q = lt === undefined ? '' : `?latlng=${lt}`;
        const p = await problemOf(`/styles/probe/static/${view.text}/${size.text}${q}`);
        const s = size.s === undefined ? 1 : Number(size.s);
        assert.deepEqual(p, { status: 400, parameter: 'size', detail: budgetDetail(size.w.n, size.h.n, s) });
      }),
      { numRuns: 120 },
    );
    forms.assertEach(['center', 'bbox', 'auto', 'latlng-absent', 'latlng-', 'latlng-true', 'latlng-1', 'latlng-false', 'latlng-0'], 5);
  });

  test('a wrong size, view or latlng is 400 problem+json naming that parameter, never 500', async () => {
    const forms = new FormCounter();
    const okView = centerView(false).map((v) => v.text);
    const okSize = overBudget.map((s) => s.text);
    const badSize = fc.oneof(
      sizeMistake,
      fc.stringMatching(/^[0-9x@.a-zA-Z]{1,16}$/).filter((s) => !modelSize(s) && s !== '.' && s !== '..').map((text) => ({ part: 'any', text })),
    );
    const badView = nearView.filter((s) => s.length > 0 && s !== '.' && s !== '..' && modelView(s, false) === undefined);
    // Each request gets one part wrong: the part named in the answer is that one (a size wrong as a whole or in
    // one of its parts).
    const wrong = fc.oneof(
      fc.record({ part: fc.constant('view'), view: badView, size: okSize, lt: fc.constant('0') }),
      fc.record({ part: fc.constant('size'), view: okView, bad: badSize, lt: fc.constant('0') }).map((r) => ({ ...r, size: r.bad.text, sizePart: r.bad.part })),
      fc.record({ part: fc.constant('latlng'), view: okView, size: okSize, lt: fc.stringMatching(/^[a-zA-Z0-9]{1,6}$/).filter((s) => !['true', 'false', '1', '0'].includes(s)) }),
    );
    await fc.assert(
      fc.asyncProperty(wrong, async (w) => {
        const { part, view, size, lt } = w;
        const p = await problemOf(`/styles/probe/static/${encodeURIComponent(view)}/${encodeURIComponent(size)}?latlng=${lt}`);
        assert.equal(p.status, 400, `${view}/${size}?latlng=${lt}: ${p.detail}`);
        const sizePart = 'sizePart' in w ? w.sizePart : undefined;
        const expected = part !== 'size' ? [part] : sizePart === 'any' ? ['size', 'width', 'height', 'scale', 'format'] : [sizePart];
        assert.ok(expected.includes(p.parameter), `${part}/${sizePart}: parameter ${p.parameter} (${p.detail})`);
        forms.hit(`${part}:${p.parameter}`);
      }),
      { numRuns: 200 },
    );
    forms.assertEach(['view:view', 'size:size', 'size:width', 'size:height', 'size:scale', 'size:format', 'latlng:latlng'], 3);
  });

  test('/og: valid center, zoom, bounds, width and height reach the budget with the size written; wrong ones are named', async () => {
    const forms = new FormCounter();
    const dims = fc.tuple(fc.integer({ min: 1, max: 4096 }), fc.integer({ min: 1, max: 4096 })).filter(([w, h]) => w * h > MAX_PIXELS);
    const valid = fc.record({
      place: fc.oneof(
        fc.record({ lat: latText(85), lon: lonText, zoom: fc.option(zoomText, { nil: undefined }) }).map((c) => ({ form: 'center', q: `center=${c.lat.text},${c.lon.text}${c.zoom ? `&zoom=${c.zoom.text}` : ''}` })),
        bboxView(false).map((b) => ({ form: 'bounds', q: `bounds=${b.text}` })),
      ),
      dims,
    });
    await fc.assert(
      fc.asyncProperty(valid, async ({ place, dims: [w, h] }) => {
        forms.hit(place.form);
        const p = await problemOf(`/og/probe?${place.q}&width=${w}&height=${h}`);
        assert.deepEqual(p, { status: 400, parameter: 'width', detail: budgetDetail(w, h, 1) });
      }),
      { numRuns: 60 },
    );
    // Width, height and format are read first, then bounds or center: each case spells only what it gets wrong.
    const wrong = fc.oneof(
      fc.oneof(written(85.06, 90), written(-90, -85.06)).chain((la) => lonText.map((lo) => ({ part: 'center', q: `center=${la.text},${lo.text}`, names: 'latitude' }))),
      fc.tuple(written(90.001, 500), lonText).map(([la, lo]) => ({ part: 'center', q: `center=${la.text},${lo.text}`, names: `${la.value}` })),
      fc
        .stringMatching(/^[a-z0-9,. -]{1,10}$/)
        .filter((s) => {
          const p = s.split(',');
          return p.length !== 2 || p.some((x) => modelNumber(x) === undefined);
        })
        .map((s) => ({ part: 'center', q: `center=${encodeURIComponent(s)}`, names: s })),
      bboxView(false).map((b) => {
        const v = (b.expected as { bounds: { west: number; south: number; east: number; north: number } }).bounds;
        return { part: 'bounds', q: `bounds=${v.west},${v.north},${v.east},${v.south}`, names: 'south' };
      }),
      centerView(false).map((c) => ({ part: 'bounds', q: `bounds=${c.text.split('@')[0]}`, names: 'minLng,minLat,maxLng,maxLat' })),
      fc.tuple(latText(80), lonText, fc.constantFrom('23', '-1', 'x', '1e1', '')).map(([la, lo, z]) => ({ part: 'zoom', q: `center=${la.text},${lo.text}&zoom=${z}`, names: `"${z}"` })),
      fc.constantFrom('0', '4097', 'big', '-3').map((w) => ({ part: 'width', q: `center=1,1&width=${w}`, names: `"${w}"` })),
      fc.constantFrom('0', '5000', 'tall').map((h) => ({ part: 'height', q: `center=1,1&width=10&height=${h}`, names: `"${h}"` })),
      fc.constant({ part: 'center', q: 'zoom=3', names: 'center=lat,lng' }),
    );
    await fc.assert(
      fc.asyncProperty(wrong, async ({ part, q, names }) => {
        forms.hit(`wrong-${part}`);
        const p = await problemOf(`/og/probe?${q}`);
        assert.equal(p.status, 400, q);
        assert.equal(p.parameter, part, `${q}: ${p.detail}`);
        assert.ok(p.detail.includes(names), `${q}: "${p.detail}" names ${names}`);
      }),
      { numRuns: 80 },
    );
    forms.assertEach(['center', 'bounds', 'wrong-center', 'wrong-bounds', 'wrong-zoom', 'wrong-width', 'wrong-height'], 3);
  });

  test('small images are rendered where the view puts them: the red box under the centre, or not', async () => {
    const forms = new FormCounter();
    // Points at least 4 degrees inside or outside the box (about 45 px at zoom 3), so the centre pixel is sure.
    const inside = fc.tuple(written(BOX.west + 4, BOX.east - 4, 2), written(BOX.south + 4, BOX.north - 4, 2)).map(([lon, lat]) => ({ lon, lat, red: true }));
    const outside = fc.tuple(written(-170, BOX.west - 4, 2), written(-70, 70, 2)).map(([lon, lat]) => ({ lon, lat, red: false }));
    const render = fc.record({
      where: fc.oneof(inside, outside),
      kind: fc.constantFrom('static-lonlat', 'static-latlng', 'og'),
      size: fc.constantFrom({ text: '32x24.png', w: 32, h: 24, type: 'image/png' }, { text: '16x16@2x.webp', w: 32, h: 32, type: 'image/webp' }, { text: '20x30.jpg', w: 20, h: 30, type: 'image/jpeg' }),
    });
    await fc.assert(
      fc.asyncProperty(render, async ({ where, kind, size }) => {
        const { lon, lat } = where;
        forms.hit(`${kind}-${where.red ? 'in' : 'out'}`);
        const p =
          kind === 'og'
            ? `/og/probe?center=${lat.text},${lon.text}&zoom=3&width=${size.w}&height=${size.h}`
            : kind === 'static-latlng'
              ? `/styles/probe/static/${lat.text},${lon.text},3/${size.text}?latlng=1`
              : `/styles/probe/static/${lon.text},${lat.text},3/${size.text}`;
        const r = await get(p);
        assert.equal(r.status, 200, `${p}: ${r.body.toString().slice(0, 200)}`);
        assert.equal(r.type, kind === 'og' ? 'image/png' : size.type);
        const img = await decode(r.body);
        assert.deepEqual([img.width, img.height], [size.w, size.h], p);
        const c = pixel(img, img.width / 2, img.height / 2);
        assert.ok(distance(c, where.red ? RED : BLUE) < 60, `${p}: centre pixel ${c} should be ${where.red ? 'red' : 'blue'}`);
      }),
      { numRuns: 14 },
    );
    // A bounding box inside the box is red edge to edge; one west of it is blue.
    // Spans of 2..4 degrees at latitudes 16..32: the frame's extension along the box's shorter side (an exact fit
    // fills one axis) stays under 3 degrees, well inside the 4-degree margins.
    const box = fc.tuple(fc.integer({ min: BOX.west + 4, max: BOX.east - 8 }), fc.integer({ min: 16, max: 28 }), fc.integer({ min: 2, max: 4 }), fc.integer({ min: 2, max: 4 }));
    for (const red of [true, false]) {
    await fc.assert(
      fc.asyncProperty(box, async ([w, s, dx, dy]) => {
        forms.hit(red ? 'bbox-in' : 'bbox-out');
        const west = red ? w : w - 100;
        const bbox = `${west},${s},${west + dx},${s + dy}`;
        const r = await get(`/styles/probe/static/${bbox}/24x24.png`);
        assert.equal(r.status, 200, bbox);
        const img = await decode(r.body);
        for (const [x, y] of [[1, 1], [22, 1], [1, 22], [22, 22], [12, 12]]) assert.ok(distance(pixel(img, x, y), red ? RED : BLUE) < 60, `${bbox} at ${x},${y}: ${pixel(img, x, y)}`);
      }),
      { numRuns: 2 },
    );
    }
    forms.assertEach(['bbox-in', 'bbox-out'], 2);
    assert.ok(forms.count('static-lonlat-in') + forms.count('static-latlng-in') + forms.count('og-in') >= 2, 'renders inside the box');
    assert.ok(forms.count('static-lonlat-out') + forms.count('static-latlng-out') + forms.count('og-out') >= 2, 'renders outside the box');
  });
});
