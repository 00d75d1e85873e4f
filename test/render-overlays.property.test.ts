// Property tests of the static-map grammars (path, marker, the view segment), their drawing (polygon
// auto-close) and the auto-fit: written forms parse back to what was written, "+" and " " mean the same in the
// style part, garbage never throws, and fitted overlays land inside the frame.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from './helpers/fast-check.js';
import { nearestWrap, project } from '../src/render/camera.js';
import { parseHexColor, parseMarker, parseMarkers, parsePath, parsePaths, type Rgba } from '../src/render/overlays.js';
import { parseStaticQuery, parseViewSegment, staticCamera, boundsOf } from '../src/render/static-params.js';
import { overlaySvg } from '../src/render/svg.js';

const hexDigits = (n: number) => fc.array(fc.constantFrom(...'0123456789abcdefABCDEF'), { minLength: n, maxLength: n }).map((a) => a.join(''));
const color = fc.oneof(hexDigits(3), hexDigits(4), hexDigits(6), hexDigits(8));
/** A number as a URL writes it: up to 6 decimals, no exponent. */
const decimal = (min: number, max: number) => fc.double({ min, max, noNaN: true }).map((v) => Number(v.toFixed(6)) || 0);
const lonLat = fc.tuple(decimal(-180, 180), decimal(-90, 90));
const width = fc.integer({ min: 1, max: 10000 }).map((v) => v / 100);

function expectedColor(hex: string): Rgba {
  const full = hex.length <= 4 ? [...hex].map((c) => c + c).join('') : hex;
  const n = (i: number) => parseInt(full.slice(i, i + 2), 16);
  return { r: n(0), g: n(2), b: n(4), a: full.length === 8 ? n(6) / 255 : 1 };
}

const coords = (pts: [number, number][], latlng = false) => pts.map(([lon, lat]) => (latlng ? `${lat},${lon}` : `${lon},${lat}`)).join('|');

describe('overlay grammars (properties)', () => {
  test('colours of 3, 4, 6 and 8 hex digits parse to their channels; other lengths do not', () => {
    fc.assert(fc.property(color, (hex) => assert.deepEqual(parseHexColor(hex), expectedColor(hex))));
    fc.assert(fc.property(fc.oneof(hexDigits(1), hexDigits(2), hexDigits(5), hexDigits(7), hexDigits(9)), (hex) => assert.equal(parseHexColor(hex), undefined)));
  });

  test('path-{w}+{stroke}[-{fill}](points) parses back to what was written, lon,lat or lat,lon', () => {
    fc.assert(
      fc.property(width, color, fc.option(color, { nil: undefined }), fc.array(lonLat, { minLength: 2, maxLength: 12 }), fc.boolean(), (w, stroke, fill, pts, latlng) => {
        const text = `path-${w}+${stroke}${fill ? `-${fill}` : ''}(${coords(pts, latlng)})`;
        const r = parsePath(text, latlng);
        assert.ok(r.ok, `${text}: ${r.ok ? '' : r.problem}`);
        assert.equal(r.value.width, w);
        assert.deepEqual(r.value.stroke, expectedColor(stroke));
        assert.deepEqual(r.value.fill, fill ? expectedColor(fill) : undefined);
        assert.deepEqual(r.value.points, pts);
      }),
    );
  });

  test('a query string turns "+" into " ": both read the same', () => {
    fc.assert(
      fc.property(width, color, fc.option(color, { nil: undefined }), fc.array(lonLat, { minLength: 2, maxLength: 5 }), (w, stroke, fill, pts) => {
        const text = `path-${w}+${stroke}${fill ? `-${fill}` : ''}(${coords(pts)})`;
        assert.deepEqual(parsePath(text.replace(/\+/g, ' '), false), parsePath(text, false));
      }),
    );
    fc.assert(
      fc.property(fc.constantFrom('s', 'm', 'l'), color, lonLat, (size, c, p) => {
        const text = `pin-${size}+${c}(${p[0]},${p[1]})`;
        assert.deepEqual(parseMarker(text.replace('+', ' '), false), parseMarker(text, false));
      }),
    );
  });

  test('width and stroke colour may be left out: 3 px, blue', () => {
    const r = parsePath('path(0,0|1,1)', false);
    assert.ok(r.ok);
    assert.equal(r.value.width, 3);
    assert.deepEqual(r.value.stroke, { r: 0, g: 0, b: 255, a: 1 });
  });

  test('pin-{s|m|l}[-{label}]+{color}(point) parses back, several joined by ~ in order', () => {
    const marker = fc.record({ size: fc.constantFrom('s', 'm', 'l'), label: fc.option(fc.constantFrom(...'ABCxyz0129'), { nil: undefined }), color, point: lonLat });
    fc.assert(
      fc.property(fc.array(marker, { minLength: 1, maxLength: 6 }), (ms) => {
        const text = ms.map((m) => `pin-${m.size}${m.label ? `-${m.label}` : ''}+${m.color}(${m.point[0]},${m.point[1]})`).join('~');
        const r = parseMarkers([text], false);
        assert.ok(r.ok, r.ok ? '' : r.problem);
        assert.deepEqual(
          r.value.map((m) => [m.size, m.label, m.point]),
          ms.map((m) => [m.size, m.label, m.point]),
        );
        assert.deepEqual(r.value.map((m) => m.color), ms.map((m) => expectedColor(m.color)));
      }),
    );
  });

  test('arbitrary text never throws; whatever parses is in range', () => {
    // Valid overlays written on purpose, the same with one character changed or cut short, and plain garbage:
    // random text alone almost never parses, and what parses is what this property is about.
    const validPath = fc
      .tuple(width, color, fc.option(color, { nil: undefined }), fc.array(lonLat, { minLength: 2, maxLength: 5 }), fc.boolean())
      .map(([w, stroke, fill, pts, ll]) => `path-${w}+${stroke}${fill ? `-${fill}` : ''}(${coords(pts, ll)})`);
    const validMarker = fc
      .tuple(fc.constantFrom('s', 'm', 'l'), color, fc.array(lonLat, { minLength: 1, maxLength: 3 }))
      .map(([size, c, pts]) => pts.map(([lon, lat]) => `pin-${size}+${c}(${lon},${lat})`).join('~'));
    const valid = fc.oneof(validPath, validMarker);
    const mutated = fc.tuple(valid, fc.nat(), fc.constantFrom('', 'x', '(', ')', '|', ',', '~', '-', '+', '9', '.', ' ')).map(([t, at, c]) => {
      const i = at % (t.length + 1);
      return t.slice(0, i) + c + t.slice(i + 1);
    });
    const text = fc.oneof(valid, mutated, fc.string({ maxLength: 60 }), fc.stringMatching(/^(path|pin)[-+ 0-9a-fsml(),.|~]{0,40}$/));
    const seen = { pathsAccepted: 0, pathsRefused: 0, markersAccepted: 0, markersRefused: 0 };
    fc.assert(
      fc.property(text, fc.boolean(), (t, latlng) => {
        for (const [kind, r] of [['paths', parsePaths([t], latlng)], ['markers', parseMarkers([t], latlng)]] as const) {
          if (!r.ok) {
            assert.equal(typeof r.problem, 'string');
            assert.ok(r.problem.length > 0);
            seen[`${kind}Refused`]++;
            continue;
          }
          const points = r.value.flatMap((o) => ('points' in o ? o.points : [o.point]));
          if (points.length) seen[`${kind}Accepted`]++;
          for (const [lon, lat] of points) assert.ok(Math.abs(lon) <= 180 && Math.abs(lat) <= 90);
        }
      }),
      { numRuns: 500 },
    );
    // Each parser both accepted overlays with points and refused text, many times over.
    for (const [what, n] of Object.entries(seen)) assert.ok(n >= 25, `${what}: ${n} of 500 runs`);
  });

  test('a broken colour or coordinate is named in the problem', () => {
    fc.assert(
      fc.property(color, fc.array(lonLat, { minLength: 2, maxLength: 4 }), fc.constantFrom('g', 'xyz', '12345'), (c, pts, bad) => {
        const r = parsePath(`path-2+${bad}(${coords(pts)})`, false);
        assert.ok(!r.ok && /color/.test(r.problem), `${bad}`);
        const q = parsePath(`path-2+${c}(${coords(pts)}|1,${bad})`, false);
        assert.ok(!q.ok && q.problem.includes(bad));
      }),
    );
  });

  test('the view segment: centre with bearing and pitch, and bounding boxes, parse back', () => {
    const centre = fc
      .tuple(decimal(-180, 180), decimal(-85, 85), decimal(0, 22), fc.oneof(fc.constant(undefined), fc.tuple(decimal(-360, 360), fc.constant(undefined)), fc.tuple(decimal(-360, 360), decimal(0, 85))))
      .map(([lon, lat, zoom, rot]) => ({ kind: rot ? (rot[1] !== undefined ? 'bearing+pitch' : 'bearing') : 'centre', lon, lat, zoom, rot }) as const);
    const box = fc
      .tuple(decimal(-180, 180), decimal(-180, 180), decimal(-90, 90), decimal(-90, 90))
      .filter(([w, e, a, b]) => w !== e && a !== b)
      .map(([west, east, a, b]) => ({ kind: 'bbox', west, east, south: Math.min(a, b), north: Math.max(a, b) }) as const);
    const seen: Record<string, number> = { centre: 0, bearing: 0, 'bearing+pitch': 0, bbox: 0, latlng: 0 };
    fc.assert(
      fc.property(fc.oneof(centre, box), fc.boolean(), (v, latlng) => {
        seen[v.kind]++;
        if (latlng) seen.latlng++;
        const pair = (lon: number, lat: number) => (latlng ? `${lat},${lon}` : `${lon},${lat}`);
        if (v.kind === 'bbox') {
          // An antimeridian-crossing box (west > east) is written as it is meant.
          const seg = `${pair(v.west, v.south)},${pair(v.east, v.north)}`;
          const r = parseViewSegment(seg, latlng);
          assert.ok(r.ok, seg);
          assert.deepEqual(r.value, { type: 'bbox', bounds: { west: v.west, south: v.south, east: v.east, north: v.north } });
          return;
        }
        const { lon, lat, zoom, rot } = v;
        const seg = `${pair(lon, lat)},${zoom}${rot ? `@${rot[0]}${rot[1] !== undefined ? `,${rot[1]}` : ''}` : ''}`;
        const r = parseViewSegment(seg, latlng);
        assert.ok(r.ok, seg);
        assert.deepEqual(r.value, { type: 'center', center: [lon, lat], zoom, bearing: rot?.[0] ?? 0, pitch: rot?.[1] ?? 0 });
      }),
      { numRuns: 400 },
    );
    for (const [form, n] of Object.entries(seen)) assert.ok(n >= 30, `${form}: ${n} of 400 runs`);
  });
});

describe('overlay drawing and fitting (properties)', () => {
  const cam = { center: [0, 0] as [number, number], zoom: 3, bearing: 0, pitch: 0, width: 400, height: 300 };

  test('a filled path is closed with a segment back to its start when its ends are more than 0.5 px apart', () => {
    const svg = (pts: string) => {
      const r = parsePath(`path-2+f00-0f0(${pts})`, false);
      assert.ok(r.ok);
      return /d="([^"]+)"/.exec(overlaySvg({ paths: [r.value], markers: [], shapes: [], icons: [] }, cam, 1))![1];
    };
    // Ends 10 degrees apart: the ring gets its closing segment.
    assert.match(svg('0,0|10,0|10,10|0,10'), /^M200 150L.*L200 150Z$/);
    // Ends within half a pixel (0.001 degree at zoom 3 is 0.01 px): no extra segment, only Z.
    const d = svg('0,0|10,0|10,10|0.001,0');
    assert.equal(d.split('L').length - 1, 3);
    assert.ok(d.endsWith('Z'));
    // A path without fill is a line, never closed.
    const line = parsePath('path-2+f00(0,0|10,0|10,10)', false);
    assert.ok(line.ok);
    assert.doesNotMatch(overlaySvg({ paths: [line.value], markers: [], shapes: [], icons: [] }, cam, 1), /Z"/);
  });

  test('auto fits every overlay point inside the frame, between zoom 0 and maxzoom', () => {
    let fitted = 0;
    let zoomZero = 0;
    fc.assert(
      fc.property(fc.array(fc.tuple(decimal(-170, 170), decimal(-70, 70)), { minLength: 1, maxLength: 8 }), fc.integer({ min: 100, max: 1200 }), fc.integer({ min: 100, max: 900 }), (pts, w, h) => {
        const q = parseStaticQuery({ one: () => undefined, all: (n) => (n === 'marker' ? [pts.map(([lon, lat]) => `pin-s+f00(${lon},${lat})`).join('~')] : []) });
        assert.ok(q.ok);
        const c = staticCamera({ type: 'auto' }, q.value, w, h);
        assert.ok(c.ok);
        assert.ok(c.value.zoom <= 18 && c.value.zoom >= 0);
        // At zoom 0 (the least there is) a small frame cannot hold points far apart; above it, all fit.
        if (c.value.zoom === 0) {
          zoomZero++;
          return;
        }
        fitted++;
        for (const [lon, lat] of pts) {
          // Each marker is drawn on the world copy nearest the centre (svg.ts), as here.
          const [x, y] = project(c.value, lon, lat, nearestWrap(c.value, lon))!;
          assert.ok(x >= -0.5 && x <= w + 0.5 && y >= -0.5 && y <= h + 0.5, `${lon},${lat} at ${x},${y} in ${w}x${h}`);
        }
      }),
      { numRuns: 200 },
    );
    // The frame check above must have run for most cases: zoom 0 is the exception, not the rule.
    assert.ok(fitted >= 100 && fitted > zoomZero, `${fitted} fitted, ${zoomZero} at zoom 0 of 200 runs`);
  });

  test('bounds of points take the short way across the antimeridian', () => {
    assert.deepEqual(boundsOf([[170, 0], [-170, 10]]), { west: 170, south: 0, east: -170, north: 10 });
    assert.deepEqual(boundsOf([[-10, 0], [10, 10]]), { west: -10, south: 0, east: 10, north: 10 });
  });
});
