// Property tests of the elevation API's parsers (src/terrain/elevation-request.ts), called directly: a point from
// query text, a batch of points in both forms, a profile line in its three forms with samples or step_m, and the
// encoded polyline decoder. Valid input is generated on purpose and must come back as written (a polyline within
// its precision); invalid input is generated per mistake and must be refused with a problem that names the field
// and, for a list, the index; any JSON or text at all must give a value or a problem, never an exception. The
// number grammar and the polyline encoder used to check them are written here, independently of the module.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from './helpers/fast-check.js';
import { FormCounter } from './helpers/forms.js';
import {
  decodePolyline,
  DEFAULT_PROFILE_LIMITS,
  MAX_POINT_ZOOM,
  MERCATOR_MAX_LAT,
  parsePoint,
  parsePointsBody,
  parseProfileBody,
  type Parsed,
  type ProfileLimits,
} from '../src/terrain/elevation-request.js';
import { lineLength, sampleCount, type LonLat } from '../src/terrain/profile.js';

fc.configureGlobal({ ...fc.readConfigureGlobal(), includeErrorInReport: true });

// ---- Independent models --------------------------------------------------------------------------------------

/** Web Mercator's latitude limit, computed here: atan(sinh(π)). */
const MERCATOR_LAT = (Math.atan(Math.sinh(Math.PI)) * 180) / Math.PI;

const isDigit = (c: string | undefined) => c !== undefined && c >= '0' && c <= '9';

/** A decimal read character by character: [-] digits [. digits] | [-] . digits, then an optional e[+-]digits. */
function modelDecimal(s: string): number | undefined {
  let i = s[0] === '-' ? 1 : 0;
  let mantissaDigits = 0;
  while (isDigit(s[i])) (i++, mantissaDigits++);
  if (s[i] === '.') {
    i++;
    while (isDigit(s[i])) (i++, mantissaDigits++);
  }
  if (mantissaDigits === 0) return undefined;
  if (s[i] === 'e' || s[i] === 'E') {
    i++;
    if (s[i] === '+' || s[i] === '-') i++;
    let expDigits = 0;
    while (isDigit(s[i])) (i++, expDigits++);
    if (expDigits === 0) return undefined;
  }
  return i === s.length ? parseFloat(s) : undefined;
}

/** Google's encoded polyline algorithm, written from its description: lat then lon, zigzag, 5-bit chunks from 63. */
function encodePolyline(points: readonly LonLat[], precision: 5 | 6): string {
  const factor = 10 ** precision;
  let out = '';
  let prevLat = 0;
  let prevLon = 0;
  const encodeValue = (v: number) => {
    let z = v < 0 ? -2 * v - 1 : 2 * v;
    while (z >= 32) {
      out += String.fromCharCode((z % 32) + 32 + 63);
      z = Math.floor(z / 32);
    }
    out += String.fromCharCode(z + 63);
  };
  for (const [lon, lat] of points) {
    const la = Math.round(lat * factor);
    const lo = Math.round(lon * factor);
    encodeValue(la - prevLat);
    encodeValue(lo - prevLon);
    prevLat = la;
    prevLon = lo;
  }
  return out;
}

const problemOf = <T>(r: Parsed<T>, what: string): string => {
  assert.ok(!r.ok, `${what} was accepted as ${JSON.stringify(r.ok && r.value)}`);
  assert.ok(typeof r.problem === 'string' && r.problem.length > 0, `${what}: an empty problem`);
  return r.problem;
};

const startsWith = (problem: string, prefix: string, what: string) => assert.ok(problem.startsWith(prefix), `${what}: "${problem}" should start with "${prefix}"`);

/** JSON as a client sends it: what JSON.parse makes of the body (so -0 arrives as 0). */
const viaJson = <T>(v: T): T => JSON.parse(JSON.stringify(v)) as T;

// ---- Generators ----------------------------------------------------------------------------------------------

type Written = { text: string; value: number; form: string };

/** A number in min..max written the ways people and programs write decimals. */
function written(min: number, max: number): fc.Arbitrary<Written> {
  return fc
    .tuple(fc.oneof(fc.double({ min, max, noNaN: true }), fc.constantFrom(min, max, 0)), fc.constantFrom('shortest', 'fixed', 'exponent', 'exponent-upper', 'leading-dot', 'trailing-dot', 'leading-zeros'), fc.integer({ min: 0, max: 9 }))
    .map(([v, form, k]) => {
      const fixed = v.toFixed(k);
      const text =
        form === 'shortest' ? String(v)
        : form === 'fixed' ? fixed
        : form === 'exponent' ? v.toExponential(k)
        : form === 'exponent-upper' ? v.toExponential(k).toUpperCase()
        : form === 'leading-dot' ? (Math.abs(v) < 1 ? v.toFixed(Math.max(1, k)).replace(/^(-?)0\./, '$1.') : fixed)
        : form === 'trailing-dot' ? `${Math.trunc(v)}.`
        : fixed.replace(/^(-?)/, '$100');
      return { text, value: Number(text), form };
    })
    // Rounding to k places can step just past the end of the range (85.05112878 → 85.0511288): not valid then.
    .filter((w) => w.value >= min && w.value <= max);
}

const lonText = written(-180, 180);
const latText = written(-MERCATOR_LAT, MERCATOR_LAT);
const lonNum = fc.oneof(fc.double({ min: -180, max: 180, noNaN: true }), fc.constantFrom(-180, 180, 0));
const latNum = fc.oneof(fc.double({ min: -MERCATOR_LAT, max: MERCATOR_LAT, noNaN: true }), fc.constantFrom(-MERCATOR_LAT, MERCATOR_LAT));
const pair = fc.tuple(lonNum, latNum) as fc.Arbitrary<LonLat>;

/** Numbers outside a coordinate's range, as JSON numbers: just past the edge, far out, and huge. */
const beyond = (limit: number) =>
  fc.tuple(fc.oneof(fc.double({ min: limit + 1e-9, max: limit + 1, noNaN: true }), fc.double({ min: limit + 1, max: 1e6, noNaN: true }), fc.constant(1e308)), fc.boolean()).map(([v, neg]) => (neg ? -v : v));

// ---- A point from query text ---------------------------------------------------------------------------------

describe('parsePoint (properties)', () => {
  test('every decimal a user writes within range is read as that number', () => {
    const forms = new FormCounter();
    fc.assert(
      fc.property(lonText, latText, (lon, lat) => {
        forms.hit(lon.form);
        forms.hit(lat.form);
        assert.deepEqual(parsePoint(lon.text, lat.text), { ok: true, value: [lon.value, lat.value] }, `${lon.text},${lat.text}`);
        assert.equal(modelDecimal(lon.text), lon.value);
      }),
      { numRuns: 2000 },
    );
    forms.assertEach(['shortest', 'fixed', 'exponent', 'exponent-upper', 'leading-dot', 'trailing-dot', 'leading-zeros'], 100);
  });

  test('text that is not a plain decimal (hex, spaces, NaN, Infinity, empty, trailing garbage) is refused naming the field and the text', () => {
    const forms = new FormCounter();
    const junk = fc.oneof(
      fc.constantFrom('0x10', '0X1A', '0b1', '0o7', ' 1', '1 ', ' 1 ', '', 'NaN', 'Infinity', '-Infinity', '+1', '1e', '1e+', '.', '-', '-.', 'e5', '1.2.3', '1,5', '--1', '1_000', '١٢', '1d', '5f', '1e5.5', '٫5', '\t2', '12\n').map((t) => ({ kind: 'constant', text: t })),
      fc.tuple(lonText, fc.constantFrom(' ', 'x', ',', '°', 'e', '..', '%20')).map(([w, tail]) => ({ kind: 'trailing', text: w.text + tail })),
      fc.tuple(lonText, fc.constantFrom(' ', '+', '=', '0x')).map(([w, head]) => ({ kind: 'leading', text: head + w.text })),
    );
    fc.assert(
      fc.property(junk, fc.constantFrom('lon', 'lat'), ({ kind, text }, field) => {
        forms.hit(`${kind}-${field}`);
        assert.equal(modelDecimal(text), undefined, `the model refuses ${JSON.stringify(text)}`);
        const r = field === 'lon' ? parsePoint(text, '10') : parsePoint('10', text);
        const problem = problemOf(r, JSON.stringify(text));
        startsWith(problem, `${field} must be a decimal number`, text);
        assert.ok(problem.includes(JSON.stringify(text)), `"${problem}" quotes ${JSON.stringify(text)}`);
      }),
      { numRuns: 1000 },
    );
    forms.assertEach(['constant-lon', 'constant-lat', 'trailing-lon', 'trailing-lat', 'leading-lon', 'leading-lat'], 50);
    assert.deepEqual(parsePoint(undefined, '1'), { ok: false, problem: 'lon is required' });
    assert.deepEqual(parsePoint('1', undefined), { ok: false, problem: 'lat is required' });
  });

  test('numbers beyond -180..180 or Web Mercator\'s latitude limit are refused naming the field and the limit', () => {
    const forms = new FormCounter();
    const bad = fc.oneof(
      beyond(180).map((v) => ({ field: 'lon', lon: String(v), lat: '0', says: '-180..180' })),
      beyond(MERCATOR_LAT).map((v) => ({ field: 'lat', lon: '0', lat: String(v), says: 'Web Mercator' })),
      fc.constantFrom('1e400', '-1e999', '90', '-90', '85.0511288', '85.06').map((t) => ({ field: 'lat', lon: '0', lat: t, says: '85.05112878' })),
      fc.constantFrom('1e400', '180.0000001', '-181', '360').map((t) => ({ field: 'lon', lon: t, lat: '0', says: '-180..180' })),
    );
    fc.assert(
      fc.property(bad, ({ field, lon, lat, says }) => {
        forms.hit(field);
        const problem = problemOf(parsePoint(lon, lat), `${lon},${lat}`);
        startsWith(problem, `${field} must be within`, `${lon},${lat}`);
        assert.ok(problem.includes(says), `"${problem}" says ${says}`);
      }),
      { numRuns: 600 },
    );
    forms.assertEach(['lon', 'lat'], 100);
  });

  test('any text: never throws, and accepts exactly the decimals in range that the model reads', () => {
    const forms = new FormCounter();
    const text = fc.oneof(fc.string({ maxLength: 12 }), fc.string({ unit: 'binary', maxLength: 8 }), fc.stringMatching(/^[-+0-9.eExX ]{0,10}$/), lonText.map((w) => w.text), latText.map((w) => w.text));
    fc.assert(
      fc.property(text, text, (lon, lat) => {
        const r = parsePoint(lon, lat);
        const x = modelDecimal(lon);
        const y = modelDecimal(lat);
        const valid = x !== undefined && y !== undefined && x >= -180 && x <= 180 && Math.abs(y) <= MERCATOR_LAT;
        forms.hit(r.ok ? 'accepted' : 'refused');
        if (valid) assert.deepEqual(r, { ok: true, value: [x, y] }, `${lon},${lat}`);
        else assert.ok(/^(lon|lat) /.test(problemOf(r, `${JSON.stringify(lon)},${JSON.stringify(lat)}`)));
      }),
      { numRuns: 4000 },
    );
    forms.assertEach(['accepted', 'refused'], 200);
  });
});

// ---- A batch of points ---------------------------------------------------------------------------------------

const MAX_POINTS = 50;

/** A valid batch in either form; zooms only in tileserver-gl's form, and only on some points. */
const batch = fc.oneof(
  fc.array(pair, { minLength: 1, maxLength: MAX_POINTS }).map((pts) => ({ form: 'pairs' as const, body: { points: pts } })),
  fc
    .array(fc.record({ lon: lonNum, lat: latNum, z: fc.integer({ min: 0, max: MAX_POINT_ZOOM }) }, { requiredKeys: ['lon', 'lat'] }), { minLength: 1, maxLength: MAX_POINTS })
    .map((pts) => ({ form: 'objects' as const, body: { points: pts } })),
);

describe('parsePointsBody (properties)', () => {
  test('every valid batch, [lon, lat] pairs or {lon, lat, z?} objects, comes back with its form, points and zooms', () => {
    const forms = new FormCounter();
    fc.assert(
      fc.property(batch, ({ form, body }) => {
        const json = viaJson(body);
        forms.hit(form);
        const r = parsePointsBody(json, MAX_POINTS);
        assert.ok(r.ok, r.ok ? '' : r.problem);
        assert.equal(r.value.form, form);
        if (form === 'pairs') {
          assert.deepEqual(r.value.points, json.points);
          assert.deepEqual(r.value.z, json.points.map(() => undefined));
        } else {
          const pts = json.points as { lon: number; lat: number; z?: number }[];
          if (pts.some((p) => p.z !== undefined) && pts.some((p) => p.z === undefined)) forms.hit('some-zooms');
          assert.deepEqual(r.value.points, pts.map((p) => [p.lon, p.lat]));
          assert.deepEqual(r.value.z, pts.map((p) => p.z));
        }
      }),
      { numRuns: 800 },
    );
    forms.assertEach(['pairs', 'objects', 'some-zooms'], 100);
  });

  test('one wrong point is refused as points[i], naming its field: range, type, arity, members, zoom, mixed forms', () => {
    const forms = new FormCounter();
    const wrongValue = fc.constantFrom<unknown>('12', null, true, [], {}, Number.NaN, Infinity, -Infinity);
    const badZ = fc.constantFrom<unknown>(-1, 23, 3.5, '5', null, 1e9);
    const mistake = fc.tuple(batch, fc.nat(), fc.constantFrom('lon-range', 'lat-range', 'lon-type', 'lat-type', 'shape', 'missing', 'unknown-member', 'z', 'mixed'), wrongValue, beyond(180), beyond(MERCATOR_LAT), badZ);
    fc.assert(
      fc.property(mistake, ([{ form, body }, at, kind, value, badLon, badLat, z]) => {
        const points: unknown[] = viaJson(body).points;
        const i = at % points.length;
        const p = points[i] as unknown[] & Record<string, unknown>;
        const pairs = form === 'pairs';
        let names: string;
        if (kind === 'lon-range' || kind === 'lon-type') {
          const v = kind === 'lon-range' ? badLon : value;
          if (pairs) p[0] = v;
          else p.lon = v;
          names = 'lon';
        } else if (kind === 'lat-range' || kind === 'lat-type') {
          const v = kind === 'lat-range' ? badLat : value;
          if (pairs) p[1] = v;
          else p.lat = v;
          names = 'lat';
        } else if (kind === 'shape') {
          points[i] = pairs ? (p.length % 2 ? [p[0]] : [p[0], p[1], 3]) : 'a point';
          names = pairs ? 'must be a [lon, lat] pair' : 'a {"lon", "lat"} object';
        } else if (kind === 'missing') {
          if (pairs) return;
          delete p.lat;
          names = 'lat is required';
        } else if (kind === 'unknown-member') {
          if (pairs) return;
          p.lng = p.lon;
          names = 'unknown member "lng"';
        } else if (kind === 'z') {
          if (pairs) return;
          p.z = z;
          names = 'z must be an integer zoom';
        } else {
          if (i === 0) return;
          points[i] = pairs ? { lon: p[0], lat: p[1] } : [p.lon, p.lat];
          names = 'like points[0]';
        }
        forms.hit(`${form}-${kind}`);
        const problem = problemOf(parsePointsBody({ points }, MAX_POINTS), `${kind} at ${i}`);
        startsWith(problem, `points[${i}]: `, kind);
        assert.ok(problem.includes(names), `${kind}: "${problem}" names ${names}`);
      }),
      { numRuns: 3000 },
    );
    forms.assertEach(['pairs-lon-range', 'pairs-lat-range', 'pairs-lon-type', 'pairs-lat-type', 'pairs-shape', 'pairs-mixed'], 30);
    forms.assertEach(['objects-lon-range', 'objects-lat-range', 'objects-lon-type', 'objects-lat-type', 'objects-shape', 'objects-missing', 'objects-unknown-member', 'objects-z', 'objects-mixed'], 30);
  });

  test('the batch itself: an object with points only, 1..max of them; the problem gives the limit', () => {
    const forms = new FormCounter();
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 200 }), fc.integer({ min: 0, max: 260 }), (max, n) => {
        const r = parsePointsBody({ points: Array.from({ length: n }, (_, i) => [i % 180, 0]) }, max);
        if (n === 0) {
          forms.hit('empty');
          startsWith(problemOf(r, 'no points'), 'points is empty', 'empty');
        } else if (n > max) {
          forms.hit('too-many');
          assert.equal(problemOf(r, `${n} points`), `points holds ${n} points, more than the limit of ${max}`);
        } else {
          forms.hit(n === max ? 'at-the-limit' : 'within');
          assert.ok(r.ok && r.value.points.length === n);
        }
      }),
      { numRuns: 600 },
    );
    forms.assertEach(['empty', 'too-many', 'within', 'at-the-limit'], 2);
    const shapes: [unknown, string][] = [
      [[[0, 0]], 'the body must be a JSON object'],
      ['{"points": []}', 'the body must be a JSON object'],
      [null, 'the body must be a JSON object'],
      [{}, 'points is required'],
      [{ points: { 0: [1, 2] } }, 'points must be an array'],
      [{ points: [[0, 0]], zoom: 3 }, 'unknown member "zoom"'],
      [{ points: ['1,2'] }, 'points[0]: must be a [lon, lat] pair or a {"lon", "lat"} object'],
      [JSON.parse('{"points": [[0, 0]], "__proto__": {"x": 1}}'), 'unknown member "__proto__"'],
    ];
    for (const [body, says] of shapes) startsWith(problemOf(parsePointsBody(body, 10), JSON.stringify(body)), says, JSON.stringify(body));
  });

  test('any JSON or JavaScript value: never throws; whatever is accepted is a batch of points in range', () => {
    const forms = new FormCounter();
    const value = fc.jsonValue({ maxDepth: 2 });
    const object = fc.record({ lon: fc.oneof(lonNum, value), lat: fc.oneof(latNum, value), z: fc.oneof(fc.integer({ min: -1, max: 25 }), value) }, { requiredKeys: [] });
    const near = fc.record({ points: fc.oneof(fc.array(fc.oneof(pair, value, object), { maxLength: 12 }), fc.array(pair, { maxLength: 12 }), fc.array(object, { maxLength: 12 })) }, { requiredKeys: [] });
    fc.assert(
      fc.property(fc.oneof(fc.jsonValue(), fc.anything(), near, near), (json) => {
        const r = parsePointsBody(json, 10);
        forms.hit(r.ok ? 'accepted' : 'refused');
        if (!r.ok) return assert.ok(r.problem.length > 0);
        assert.ok(r.value.points.length >= 1 && r.value.points.length <= 10 && r.value.z.length === r.value.points.length);
        for (const [lon, lat] of r.value.points) assert.ok(Math.abs(lon) <= 180 && Math.abs(lat) <= MERCATOR_LAT);
      }),
      { numRuns: 3000 },
    );
    forms.assertEach(['accepted', 'refused'], 50);
  });
});

// ---- Encoded polylines ---------------------------------------------------------------------------------------

describe('decodePolyline', () => {
  test("Google's example `_p~iF~ps|U_ulLnnqC_mqNvxq`@` is (38.5, -120.2), (40.7, -120.95), (43.252, -126.453)", () => {
    assert.deepEqual(decodePolyline('_p~iF~ps|U_ulLnnqC_mqNvxq`@', 5), { ok: true, value: [[-120.2, 38.5], [-120.95, 40.7], [-126.453, 43.252]] });
    // The same line at precision 6 is ten times finer: the same text reads ten times closer to (0, 0).
    const six = decodePolyline('_p~iF~ps|U_ulLnnqC_mqNvxq`@', 6);
    assert.ok(six.ok);
    assert.deepEqual(six.value[2], [-12.6453, 4.3252]);
    assert.equal(encodePolyline([[-120.2, 38.5], [-120.95, 40.7], [-126.453, 43.252]], 5), '_p~iF~ps|U_ulLnnqC_mqNvxq`@');
    assert.deepEqual(decodePolyline('', 5), { ok: true, value: [] });
  });

  test('random coordinates encoded at precision 5 or 6 decode back within 1e-5 or 1e-6, and re-encode to the same text', () => {
    const forms = new FormCounter();
    const anywhere = fc.tuple(fc.double({ min: -180, max: 180, noNaN: true }), fc.double({ min: -90, max: 90, noNaN: true })) as fc.Arbitrary<LonLat>;
    fc.assert(
      fc.property(fc.array(anywhere, { maxLength: 40 }), fc.constantFrom<5 | 6>(5, 6), (pts, precision) => {
        forms.hit(`precision-${precision}`);
        const text = encodePolyline(pts, precision);
        const r = decodePolyline(text, precision);
        assert.ok(r.ok, r.ok ? '' : r.problem);
        assert.equal(r.value.length, pts.length);
        const tolerance = precision === 5 ? 1e-5 : 1e-6;
        r.value.forEach(([lon, lat], i) => {
          assert.ok(Math.abs(lon - pts[i][0]) <= tolerance && Math.abs(lat - pts[i][1]) <= tolerance, `point ${i}: ${lon},${lat} for ${pts[i]}`);
        });
        assert.equal(encodePolyline(r.value, precision), text);
      }),
      { numRuns: 1000 },
    );
    forms.assertEach(['precision-5', 'precision-6'], 300);
  });

  test('malformed text is refused: a character outside "?".."~", a value cut off, a latitude alone, a value that runs on', () => {
    const forms = new FormCounter();
    const valid = fc.array(pair, { minLength: 1, maxLength: 10 }).map((pts) => encodePolyline(pts, 5));
    const malformed = fc.oneof(
      fc.tuple(valid, fc.nat(), fc.constantFrom(' ', '!', '>', '\x7f', 'é', '\n', '😀', '"', '\0')).map(([t, at, ch]) => {
        const i = at % (t.length + 1);
        return { kind: 'character', text: t.slice(0, i) + ch + t.slice(i), says: 'is not a character of an encoded polyline' };
      }),
      // The last character of a value has no continuation bit: without it, a value is cut off or a longitude lost.
      valid.map((t) => ({ kind: 'truncated', text: t.slice(0, -1), says: 'the text ends' })),
      fc.tuple(valid, fc.integer({ min: 0x20 + 63, max: 126 })).map(([t, c]) => ({ kind: 'dangling', text: t + String.fromCharCode(c), says: 'in the middle of a value' })),
      fc.tuple(valid, fc.integer({ min: 7, max: 30 })).map(([t, n]) => ({ kind: 'runaway', text: t + '_'.repeat(n) + '?', says: 'runs on' })),
    );
    fc.assert(
      fc.property(malformed, fc.constantFrom<5 | 6>(5, 6), ({ kind, text, says }, precision) => {
        forms.hit(kind);
        const problem = problemOf(decodePolyline(text, precision), `${kind} ${JSON.stringify(text)}`);
        startsWith(problem, 'polyline: ', kind);
        assert.ok(problem.includes(says), `${kind}: "${problem}" says ${says}`);
        // Through the profile body the same problem is the answer.
        assert.deepEqual(parseProfileBody({ polyline: text, precision, samples: 10 }, DEFAULT_PROFILE_LIMITS), { ok: false, problem });
      }),
      { numRuns: 1200 },
    );
    forms.assertEach(['character', 'truncated', 'dangling', 'runaway'], 100);
  });

  test('any text: never throws; what decodes has a longitude for every latitude', () => {
    fc.assert(
      fc.property(fc.oneof(fc.string({ maxLength: 40 }), fc.string({ unit: 'binary', maxLength: 20 }), fc.stringMatching(/^[?-~]{0,30}$/)), fc.constantFrom<5 | 6>(5, 6), (text, precision) => {
        const r = decodePolyline(text, precision);
        if (r.ok) for (const [lon, lat] of r.value) assert.ok(Number.isFinite(lon) && Number.isFinite(lat));
        else assert.ok(r.problem.startsWith('polyline: '));
      }),
      { numRuns: 3000 },
    );
  });
});

// ---- A profile line ------------------------------------------------------------------------------------------

const LIMITS: ProfileLimits = { maxSamples: 100_000, maxLengthM: 1e8, maxVertices: 100 };

/** A line of 2..41 vertices, steps of up to half a degree, staying inside the ranges; never of no length. */
const line = fc
  .tuple(fc.double({ min: -160, max: 160, noNaN: true }), fc.double({ min: -60, max: 60, noNaN: true }), fc.array(fc.tuple(fc.double({ min: -0.5, max: 0.5, noNaN: true }), fc.double({ min: -0.5, max: 0.5, noNaN: true })), { minLength: 1, maxLength: 40 }))
  .map(([lon, lat, steps]) => {
    const pts: LonLat[] = [[lon, lat]];
    for (const [dx, dy] of steps) pts.push([pts[pts.length - 1][0] + dx, pts[pts.length - 1][1] + dy]);
    return pts;
  })
  .filter((pts) => lineLength(pts) > 1);

const spec = fc.oneof(fc.integer({ min: 2, max: 2000 }).map((samples) => ({ samples })), fc.double({ min: 500, max: 1e6, noNaN: true }).map((step_m) => ({ step_m })));

type ProfileCase = { form: 'geometry' | 'feature' | 'polyline'; body: Record<string, unknown>; pts: LonLat[]; precision: 5 | 6 };

/** A valid profile body in one of the three forms, with GeoJSON's foreign members and altitudes now and then. */
const profileBody: fc.Arbitrary<ProfileCase> = fc
  .tuple(line, spec, fc.constantFrom('geometry', 'feature', 'polyline'), fc.boolean(), fc.constantFrom<5 | 6>(5, 6))
  .map(([pts, sp, form, extras, precision]) => {
    const coordinates = extras ? pts.map(([x, y], i) => [x, y, i * 10.5]) : pts;
    const geometry = extras ? { type: 'LineString', coordinates, bbox: [0, 0, 1, 1] } : { type: 'LineString', coordinates };
    if (form === 'geometry') return { form, body: { ...geometry, ...sp }, pts, precision };
    if (form === 'feature') return { form, body: { type: 'Feature', ...(extras ? { id: 7, properties: { name: 'ridge' } } : { properties: null }), geometry, ...sp }, pts, precision };
    // Precision 5 is the default: leave it out now and then.
    const p = extras && precision === 5 ? {} : { precision };
    return { form, body: { polyline: encodePolyline(pts, precision), ...p, ...sp }, pts, precision };
  });

describe('parseProfileBody (properties)', () => {
  test('every valid line in each form, with samples or step_m, comes back with its vertices, length and sample count', () => {
    const forms = new FormCounter();
    fc.assert(
      fc.property(profileBody, ({ form, body, pts, precision }) => {
        const json = viaJson(body);
        forms.hit(form);
        forms.hit('samples' in body ? 'samples' : 'step_m');
        const r = parseProfileBody(json, LIMITS);
        assert.ok(r.ok, r.ok ? '' : r.problem);
        assert.equal(r.value.form, form);
        assert.deepEqual(r.value.spec, 'samples' in json ? { samples: json.samples } : { step_m: json.step_m });
        assert.equal(r.value.coords.length, pts.length);
        if (form === 'polyline') {
          const tolerance = precision === 5 ? 1e-5 : 1e-6;
          r.value.coords.forEach(([lon, lat], i) => assert.ok(Math.abs(lon - pts[i][0]) <= tolerance && Math.abs(lat - pts[i][1]) <= tolerance, `vertex ${i}`));
        } else assert.deepEqual(r.value.coords, viaJson(pts));
        assert.equal(r.value.length_m, lineLength(r.value.coords));
        assert.equal(r.value.samples, sampleCount(r.value.length_m, r.value.spec));
      }),
      { numRuns: 1000 },
    );
    forms.assertEach(['geometry', 'feature', 'polyline', 'samples', 'step_m'], 200);
  });

  test('a vertex out of range is refused naming it: coordinates[i], geometry.coordinates[i] or polyline point i, and lon or lat', () => {
    const forms = new FormCounter();
    fc.assert(
      fc.property(profileBody, fc.nat(), fc.constantFrom<'lon' | 'lat'>('lon', 'lat'), fc.double({ min: 0.001, max: 60, noNaN: true }), fc.boolean(), ({ form, pts, precision }, at, field, over, neg) => {
        const i = at % pts.length;
        const bad = pts.map(([x, y]) => [x, y] as LonLat);
        // Beyond the edge by at least a thousandth of a degree, which survives rounding to 5 places.
        const v = (field === 'lon' ? 180 : MERCATOR_LAT) + over;
        bad[i][field === 'lon' ? 0 : 1] = neg ? -v : v;
        const sp = { samples: 10 };
        const body = form === 'geometry' ? { type: 'LineString', coordinates: bad, ...sp } : form === 'feature' ? { type: 'Feature', properties: {}, geometry: { type: 'LineString', coordinates: bad }, ...sp } : { polyline: encodePolyline(bad, precision), precision, ...sp };
        forms.hit(`${form}-${field}`);
        const where = form === 'geometry' ? `coordinates[${i}]: ` : form === 'feature' ? `geometry.coordinates[${i}]: ` : `polyline point ${i}: `;
        startsWith(problemOf(parseProfileBody(body, LIMITS), `${form} ${field} at ${i}`), `${where}${field} must be within`, form);
      }),
      { numRuns: 1200 },
    );
    for (const form of ['geometry', 'feature', 'polyline']) forms.assertEach([`${form}-lon`, `${form}-lat`], 100);
  });

  test('samples and step_m: exactly one, each in its range; a step too fine for the limit names the smallest that fits', () => {
    const forms = new FormCounter();
    const geometry = { type: 'LineString', coordinates: [[0, 0], [1, 0], [1, 1]] };
    const mistakes = fc.oneof(
      fc.constant({ kind: 'both', extra: { samples: 10, step_m: 100 }, says: 'give samples or step_m, not both' }),
      fc.constant({ kind: 'neither', extra: {}, says: 'give samples' }),
      fc.constantFrom<unknown>(1, 0, -3, 2.5, 1001, '10', null, true, Infinity, [5]).map((v) => ({ kind: 'samples', extra: { samples: v }, says: 'samples must be an integer 2..1000' })),
      fc.constantFrom<unknown>(0, -1, -0.5, '100', null, false, Number.NaN, Infinity, {}).map((v) => ({ kind: 'step_m', extra: { step_m: v }, says: 'step_m must be a number of metres above 0' })),
    );
    const limits = { maxSamples: 1000, maxLengthM: 1e7, maxVertices: 10 };
    fc.assert(
      fc.property(mistakes, ({ kind, extra, says }) => {
        forms.hit(kind);
        startsWith(problemOf(parseProfileBody({ ...geometry, ...extra }, limits), kind), says, kind);
      }),
      { numRuns: 300 },
    );
    forms.assertEach(['both', 'neither', 'samples', 'step_m'], 30);
    fc.assert(
      fc.property(line, fc.integer({ min: 2, max: 500 }), fc.double({ min: 1e-3, max: 1, noNaN: true }), (pts, maxSamples, fraction) => {
        const length = lineLength(pts);
        const step = (length / (maxSamples - 1)) * fraction * 0.99;
        const lim = { maxSamples, maxLengthM: 1e8, maxVertices: 100 };
        const problem = problemOf(parseProfileBody({ type: 'LineString', coordinates: pts, step_m: step }, lim), `step ${step}`);
        assert.ok(problem.startsWith(`step_m ${step} over a line of`) && problem.includes(`more than the limit of ${maxSamples}`), problem);
        // The step it suggests is accepted, and gives at most the limit.
        const least = Number(/at least ([0-9.e+-]+) m$/.exec(problem)?.[1]);
        const r = parseProfileBody({ type: 'LineString', coordinates: pts, step_m: least }, lim);
        assert.ok(r.ok && r.value.samples <= maxSamples, r.ok ? `${r.value.samples}` : r.problem);
      }),
      { numRuns: 300 },
    );
  });

  test('vertex count and length limits: the problem names the field and the limit; a line of no length is refused', () => {
    const forms = new FormCounter();
    fc.assert(
      fc.property(line, fc.constantFrom('geometry', 'feature', 'polyline'), fc.integer({ min: 2, max: 40 }), (pts, form, maxVertices) => {
        const wrap = (p: LonLat[]) => (form === 'geometry' ? { type: 'LineString', coordinates: p, samples: 5 } : form === 'feature' ? { type: 'Feature', properties: {}, geometry: { type: 'LineString', coordinates: p }, samples: 5 } : { polyline: encodePolyline(p, 6), precision: 6, samples: 5 });
        const field = form === 'geometry' ? 'coordinates' : form === 'feature' ? 'geometry.coordinates' : 'polyline';
        const length = lineLength(pts);
        const r = parseProfileBody(wrap(pts), { maxSamples: 10, maxLengthM: length * 2, maxVertices });
        if (pts.length > maxVertices) {
          forms.hit('vertices');
          assert.equal(problemOf(r, 'too many'), `${field} has ${pts.length} vertices, more than the limit of ${maxVertices}`);
        } else {
          forms.hit('within');
          assert.ok(r.ok, r.ok ? '' : r.problem);
        }
        // A limit a metre short of the length refuses the line (measured from the body's own vertices).
        const given = form === 'polyline' ? (decodePolyline(encodePolyline(pts, 6), 6) as { value: LonLat[] }).value : pts;
        const max = Math.floor(lineLength(given)) - 1;
        const long = parseProfileBody(wrap(pts), { maxSamples: 10, maxLengthM: max, maxVertices: 100 });
        assert.ok(problemOf(long, 'too long').endsWith(`m long, more than the limit of ${max} m`));
        forms.hit('length');
        assert.equal(problemOf(parseProfileBody(wrap([pts[0]]), LIMITS), 'one vertex'), `${field} has 1 vertex: a line needs at least 2`);
        assert.equal(problemOf(parseProfileBody(wrap([pts[0], pts[0], pts[0]]), LIMITS), 'one place'), 'the line has no length: all its vertices are the same point');
      }),
      { numRuns: 400 },
    );
    forms.assertEach(['vertices', 'within', 'length'], 50);
  });

  test('the wrong kind of body or geometry is refused saying which', () => {
    const pts = [[7, 45], [7.1, 45.1]];
    const cases: [unknown, string][] = [
      [{ type: 'Point', coordinates: [7, 45], samples: 5 }, 'type must be "LineString" or "Feature"'],
      [{ type: 'MultiLineString', coordinates: [pts], samples: 5 }, 'type must be "LineString" or "Feature"'],
      [{ type: 'FeatureCollection', features: [], samples: 5 }, 'type must be "LineString" or "Feature"'],
      [{ type: 'Feature', geometry: { type: 'Point', coordinates: [7, 45] }, samples: 5 }, 'geometry.type must be "LineString"'],
      [{ type: 'Feature', geometry: null, properties: {}, samples: 5 }, 'geometry must be a LineString geometry, not null'],
      [{ type: 'LineString', samples: 5 }, 'coordinates must be an array of positions'],
      [{ type: 'LineString', coordinates: [[7, 45], [7.1]], samples: 5 }, 'coordinates[1]: must be a position'],
      [{ type: 'LineString', coordinates: [[7, 45], [7.1, 45, 'high']], samples: 5 }, 'coordinates[1]: altitude must be a number'],
      [{ type: 'LineString', coordinates: [[7, 45], ['7.1', 45]], samples: 5 }, 'coordinates[1]: lon must be a number, not the string "7.1"'],
      [{ type: 'LineString', coordinates: pts, polyline: '??', samples: 5 }, 'give a GeoJSON line (with "type") or a polyline, not both'],
      [{ polyline: '_p~iF~ps|U_ulLnnqC_mqNvxq`@', precison: 6, samples: 5 }, 'unknown member "precison"'],
      [{ polyline: '_p~iF~ps|U_ulLnnqC_mqNvxq`@', precision: 7, samples: 5 }, 'precision must be 5 or 6'],
      [{ polyline: '_p~iF~ps|U_ulLnnqC_mqNvxq`@', precision: null, samples: 5 }, 'precision must be 5 or 6'],
      [{ polyline: ['_p~iF~ps|U'], samples: 5 }, 'polyline must be a string'],
      [{ coordinates: pts, samples: 5 }, 'the body must be a GeoJSON LineString'],
      [pts, 'the body must be a GeoJSON LineString'],
      ['_p~iF~ps|U_ulLnnqC_mqNvxq`@', 'the body must be a GeoJSON LineString'],
    ];
    for (const [body, says] of cases) startsWith(problemOf(parseProfileBody(body, LIMITS), JSON.stringify(body)), says, JSON.stringify(body));
    // Google's example as a body: precision 5 by default, lat/lon order turned into lon/lat.
    const r = parseProfileBody({ polyline: '_p~iF~ps|U_ulLnnqC_mqNvxq`@', samples: 3 }, DEFAULT_PROFILE_LIMITS);
    assert.ok(r.ok && r.value.form === 'polyline');
    assert.deepEqual(r.value.coords, [[-120.2, 38.5], [-120.95, 40.7], [-126.453, 43.252]]);
  });

  test('any JSON or JavaScript value, and bodies near the valid ones: never throws; whatever is accepted is within every limit', () => {
    const forms = new FormCounter();
    const limits = { maxSamples: 500, maxLengthM: 5e6, maxVertices: 30 };
    const json = fc.jsonValue({ maxDepth: 4 });
    const coordinates = fc.oneof(json, line, fc.array(fc.oneof(fc.tuple(lonNum, latNum), fc.array(fc.oneof(fc.double(), json), { maxLength: 4 }), json), { maxLength: 25 }));
    const near = fc.record(
      {
        type: fc.constantFrom<unknown>('LineString', 'Feature', 'Point', 'linestring', 1, null),
        coordinates,
        geometry: fc.oneof(json, fc.record({ type: fc.constantFrom<unknown>('LineString', 'Polygon', null), coordinates }, { requiredKeys: [] })),
        polyline: fc.oneof(fc.string({ maxLength: 30 }), fc.stringMatching(/^[?-~]{0,40}$/), line.map((p) => encodePolyline(p, 5)), json),
        precision: fc.constantFrom<unknown>(5, 6, 7, '5', null),
        samples: fc.oneof(fc.integer({ min: -5, max: 600 }), json),
        step_m: fc.oneof(fc.double(), json),
      },
      { requiredKeys: [] },
    );
    // Valid bodies with one member taken away or replaced by any JSON: the input closest to the parser's edges.
    const keys = ['type', 'coordinates', 'geometry', 'polyline', 'precision', 'samples', 'step_m', 'properties'];
    const mutated = fc.tuple(profileBody, fc.constantFrom('keep', 'delete', 'set'), fc.constantFrom(...keys), json).map(([{ body }, op, key, value]) => {
      const b: Record<string, unknown> = viaJson(body);
      if (op === 'delete') delete b[key];
      if (op === 'set') b[key] = value;
      return b;
    });
    fc.assert(
      fc.property(fc.oneof(json, fc.anything(), near, mutated), (body) => {
        const r = parseProfileBody(body, limits);
        forms.hit(r.ok ? `accepted-${r.value.form}` : 'refused');
        if (!r.ok) return assert.ok(r.problem.length > 0);
        const { coords, length_m, samples, spec: sp } = r.value;
        assert.ok(coords.length >= 2 && coords.length <= limits.maxVertices);
        for (const [lon, lat] of coords) assert.ok(Math.abs(lon) <= 180 && Math.abs(lat) <= MERCATOR_LAT);
        assert.ok(length_m > 0 && length_m <= limits.maxLengthM && samples >= 1 && samples <= limits.maxSamples);
        assert.equal(samples, sampleCount(length_m, sp));
      }),
      { numRuns: 6000 },
    );
    forms.assertEach(['refused', 'accepted-geometry', 'accepted-feature', 'accepted-polyline'], 10);
  });
});
