// The encoded-polyline decoder (src/render/polyline.ts) against an encoder written here from the format's
// description: every list of points survives encode → decode at precision 5 and 6 (to the precision's rounding),
// and text that is not a polyline (a character outside '?'..'~', a value cut short, a latitude without its
// longitude, a coordinate out of range) is refused with a problem saying what and where, never a throw. Through
// the static-map parser the problem names the `path` parameter, in both grammars.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from './helpers/fast-check.js';
import { decodePolyline, type PolylinePrecision } from '../src/render/polyline.js';
import { parseStaticQuery } from '../src/render/static-params.js';
import { encodePolyline, encodeValue } from './helpers/polyline.js';

const point = fc.tuple(fc.double({ min: -180, max: 180, noNaN: true }), fc.double({ min: -90, max: 90, noNaN: true }));
const query = (values: Record<string, string[]>) => ({ one: (n: string) => values[n]?.[0], all: (n: string) => values[n] ?? [] });

describe('encoded polylines (properties)', () => {
  test("Google's example decodes to its three points", () => {
    const r = decodePolyline('_p~iF~ps|U_ulLnnqC_mqNvxq`@');
    assert.deepEqual(r, { ok: true, value: [[-120.2, 38.5], [-120.95, 40.7], [-126.453, 43.252]] });
  });

  test('encode → decode gives the points back, to the precision, at 5 and 6', () => {
    fc.assert(
      fc.property(fc.array(point, { minLength: 0, maxLength: 40 }), fc.constantFrom<PolylinePrecision>(5, 6), (pts, precision) => {
        const r = decodePolyline(encodePolyline(pts, precision), precision);
        assert.ok(r.ok, r.ok ? '' : r.problem);
        assert.equal(r.value.length, pts.length);
        const f = 10 ** precision;
        r.value.forEach(([lon, lat], i) => {
          // `+ 0` makes -0 (a rounded small negative) equal to 0.
          assert.equal(Math.round(lon * f) + 0, Math.round(pts[i][0] * f) + 0);
          assert.equal(Math.round(lat * f) + 0, Math.round(pts[i][1] * f) + 0);
        });
      }),
    );
  });

  test('a character outside ? to ~ is refused, naming it and its position', () => {
    fc.assert(
      fc.property(fc.array(point, { minLength: 1, maxLength: 5 }), fc.nat(), fc.integer({ min: 0, max: 62 }), (pts, at, code) => {
        const good = encodePolyline(pts, 5);
        const i = at % (good.length + 1);
        const r = decodePolyline(good.slice(0, i) + String.fromCharCode(code) + good.slice(i));
        assert.equal(r.ok, false);
        assert.match(r.ok ? '' : r.problem, new RegExp(`at position ${i + 1} is not part of an encoded polyline`));
      }),
    );
  });

  test('text cut inside a value or after a lone latitude is refused; so are coordinates out of range', () => {
    fc.assert(
      fc.property(fc.array(point, { minLength: 1, maxLength: 5 }), (pts) => {
        const good = encodePolyline(pts, 5);
        // The last value's last character has no continuation bit: without it the value is cut short.
        const cut = decodePolyline(good.slice(0, -1));
        assert.equal(cut.ok, false);
        assert.match(cut.ok ? '' : cut.problem, /ends inside a value|ends after a latitude/);
        const lone = decodePolyline(good + encodeValue(5));
        assert.match(lone.ok ? '' : lone.problem, /ends after a latitude without its longitude/);
      }),
    );
    const far = decodePolyline(encodeValue(91e5) + encodeValue(0));
    assert.match(far.ok ? '' : far.problem, /outside latitude -90\.\.90/);
    // A value of more chunks than any coordinate needs is refused, not summed past exact arithmetic.
    assert.match((decodePolyline('~'.repeat(40) + '?') as { problem: string }).problem, /too long to be a coordinate/);
  });

  test('arbitrary text never throws', () => {
    fc.assert(fc.property(fc.string({ maxLength: 60 }), fc.constantFrom<PolylinePrecision>(5, 6), (s, p) => void decodePolyline(s, p)));
  });

  test('in both path grammars enc: and enc6: draw the decoded points; a bad polyline is a problem of `path`', () => {
    fc.assert(
      fc.property(fc.array(point, { minLength: 2, maxLength: 20 }), fc.constantFrom<PolylinePrecision>(5, 6), fc.boolean(), (pts, precision, ours) => {
        const enc = `${precision === 6 ? 'enc6' : 'enc'}:${encodePolyline(pts, precision)}`;
        const value = ours ? `path-3+f00(${enc})` : `stroke:red|${enc}`;
        const r = parseStaticQuery(query({ path: [value] }));
        assert.ok(r.ok, r.ok ? '' : r.problem.detail);
        const decoded = decodePolyline(encodePolyline(pts, precision), precision);
        assert.ok(decoded.ok);
        assert.deepEqual(r.value.overlays.paths[0].points, decoded.value);
      }),
    );
    // Several of our paths joined by "~", each with a polyline that holds "~" itself.
    const tilde = encodePolyline([[-120.2, 38.5], [-120.95, 40.7]], 5);
    assert.match(tilde, /~/);
    const two = parseStaticQuery(query({ path: [`path-2+f00(enc:${tilde})~path-2+00f(enc:${tilde})`] }));
    assert.ok(two.ok && two.value.overlays.paths.length === 2);
    for (const bad of ['path-3+f00(enc:_p~iF~ps|U_ulLnnqC_mqNvxq`@ )', 'stroke:red|enc:_p~iF~ps|U_ulLnnqC_mqNvxq', 'enc:??']) {
      const r = parseStaticQuery(query({ path: [bad] }));
      assert.equal(r.ok, false, bad);
      assert.equal(r.ok ? '' : r.problem.parameter, 'path');
      assert.match(r.ok ? '' : r.problem.detail, /polyline/);
    }
  });
});
