// Property tests of the static-map and social-card parameters, called directly: the size segment
// (parseSizeSegment with parseDimension and parseScale), parseBoolean, the view segment in all three forms
// (centre, bounding box, `auto`) and garbage, and the /og `center` and `bounds`. Valid input is generated on
// purpose, written as a user writes it and compared with an independent reading (test/helpers/static-models.ts);
// invalid input is generated per mistake and must be refused naming the part. The same parameters through the
// real server: static-routes.property.test.ts.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from './helpers/fast-check.js';
import { parseBoolean, parseDimension, parseScale, parseSizeSegment, parseViewSegment } from '../src/render/static-params.js';
import { parseLonLat } from '../src/render/overlays.js';
import { FormCounter } from './helpers/forms.js';
import { MERCATOR_LAT, FORMATS, allDigits, modelSize, modelView, written, sizeSegment, sizeMistake, lonText, latText, centerView, bboxView, nearView, type ModelView } from './helpers/static-models.js';

// A failing property reports the assertion's own message, not only the counterexample.
fc.configureGlobal({ ...fc.readConfigureGlobal(), includeErrorInReport: true });

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
    // Outcomes of random text, not forms made on purpose: the format is reached rarely (about 20 in 3,000 runs).
    forms.assertEach(['accepted', 'refused-size', 'refused-width', 'refused-height', 'refused-scale', 'refused-format'], 8);
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
