// Property tests of the `geojson` overlay of static maps (parseGeoJsonOverlay): every geometry type, as a bare
// geometry, a Feature or in a FeatureCollection, with any subset of the simplestyle properties, parses to the
// shapes an independent reading of the document gives (defaults: stroke #0000ff, width 3, no fill, marker
// #ff0000, medium = 12 px); each kind of mistake, put at a generated place, is refused naming that place; any
// text never throws. Through one real server: valid overlays pass to the pixel budget, broken ones are 400
// naming `geojson` and the place, and a few filled boxes are really rendered with `auto` and probed.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import fc from './helpers/fast-check.js';
import { parseGeoJsonOverlay, type GeoShape } from '../src/render/geojson-overlay.js';
import type { Rgba } from '../src/render/overlays.js';
import { FormCounter } from './helpers/forms.js';
import { decode, distance, pixel, type Rgb } from './helpers/render.js';
import { startServer, type TestServer } from './helpers/server.js';

fc.configureGlobal({ ...fc.readConfigureGlobal(), includeErrorInReport: true });

type Position = number[];
type Json = unknown;

// ---- The independent reading ---------------------------------------------------------------------------------

const SIZES: Record<string, number> = { small: 8, medium: 12, large: 18 };

/** #rgb, #rgba, #rrggbb, #rrggbbaa (the "#" optional) as channels, alpha 0..1. */
function hexColor(text: string): Rgba {
  const hex = text.startsWith('#') ? text.slice(1) : text;
  const full = hex.length <= 4 ? hex.replace(/./g, '$&$&') : hex;
  const byte = (i: number) => Number.parseInt(full.substring(i, i + 2), 16);
  return { r: byte(0), g: byte(2), b: byte(4), a: full.length === 8 ? byte(6) / 255 : 1 };
}

interface Props {
  stroke?: string | null;
  'stroke-width'?: number;
  'stroke-opacity'?: number | null;
  fill?: string | null;
  'fill-opacity'?: number | null;
  'marker-color'?: string | null;
  'marker-size'?: string | number;
  [other: string]: unknown;
}

function expectedStyle(p: Props | null | undefined) {
  const q = p ?? {};
  const strokeBase = q.stroke != null ? hexColor(q.stroke) : { r: 0, g: 0, b: 255, a: 1 };
  const stroke = q['stroke-opacity'] != null ? { ...strokeBase, a: strokeBase.a * q['stroke-opacity'] } : strokeBase;
  const fillBase = q.fill != null ? hexColor(q.fill) : undefined;
  const fill = fillBase && q['fill-opacity'] != null ? { ...fillBase, a: fillBase.a * q['fill-opacity'] } : fillBase;
  const size = q['marker-size'] === undefined ? 12 : typeof q['marker-size'] === 'string' ? SIZES[q['marker-size']] : q['marker-size'];
  return { stroke, width: q['stroke-width'] ?? 3, fill, marker: q['marker-color'] != null ? hexColor(q['marker-color']) : { r: 255, g: 0, b: 0, a: 1 }, size };
}

const lonLat = (p: Position): [number, number] => [p[0], p[1]];

function expectedShapes(geometry: { type: string; coordinates: Json }, props: Props | null | undefined): GeoShape[] {
  const s = expectedStyle(props);
  const c = geometry.coordinates as never;
  const point = (p: Position): GeoShape => ({ type: 'point', point: lonLat(p), color: s.marker, size: s.size });
  const line = (l: Position[]): GeoShape => ({ type: 'line', points: l.map(lonLat), stroke: s.stroke, width: s.width });
  const polygon = (rings: Position[][]): GeoShape => ({ type: 'polygon', rings: rings.map((r) => r.map(lonLat)), stroke: s.stroke, width: s.width, fill: s.fill });
  switch (geometry.type) {
    case 'Point':
      return [point(c)];
    case 'MultiPoint':
      return (c as Position[]).map(point);
    case 'LineString':
      return [line(c)];
    case 'MultiLineString':
      return (c as Position[][]).map(line);
    case 'Polygon':
      return [polygon(c)];
    default:
      return (c as Position[][][]).map(polygon);
  }
}

// ---- Generators of valid documents ---------------------------------------------------------------------------

const coord = (limit: number) => fc.oneof({ weight: 6, arbitrary: fc.double({ min: -limit, max: limit, noNaN: true }) }, { weight: 1, arbitrary: fc.constantFrom(-limit, limit, 0) }).map((v) => (Object.is(v, -0) ? 0 : v));
/** [lon, lat], sometimes with an altitude (ignored). */
const position = fc.tuple(coord(180), coord(90), fc.option(fc.integer({ min: -500, max: 9000 }), { nil: undefined })).map(([lon, lat, alt]) => (alt === undefined ? [lon, lat] : [lon, lat, alt]));
const lineCoords = fc.array(position, { minLength: 2, maxLength: 5 });
const ringCoords = fc.array(position, { minLength: 3, maxLength: 6 });
const polygonCoords = fc.array(ringCoords, { minLength: 1, maxLength: 3 });

const geometry = fc.oneof(
  position.map((c) => ({ type: 'Point', coordinates: c })),
  fc.array(position, { maxLength: 4 }).map((c) => ({ type: 'MultiPoint', coordinates: c })),
  lineCoords.map((c) => ({ type: 'LineString', coordinates: c })),
  fc.array(lineCoords, { maxLength: 3 }).map((c) => ({ type: 'MultiLineString', coordinates: c })),
  polygonCoords.map((c) => ({ type: 'Polygon', coordinates: c })),
  fc.array(polygonCoords, { maxLength: 3 }).map((c) => ({ type: 'MultiPolygon', coordinates: c })),
);

const hexDigits = (n: number) => fc.array(fc.constantFrom(...'0123456789abcdefABCDEF'), { minLength: n, maxLength: n }).map((a) => a.join(''));
const color = fc.tuple(fc.constantFrom(3, 4, 6, 8), fc.boolean()).chain(([n, hash]) => hexDigits(n).map((h) => (hash ? `#${h}` : h)));
const unit = fc.oneof(fc.double({ min: 0, max: 1, noNaN: true }), fc.constantFrom(0, 1));

/** Any subset of the simplestyle properties (null where null means "not given"), with unrelated ones. */
const props: fc.Arbitrary<Props> = fc.record(
  {
    stroke: fc.option(color, { nil: null, freq: 8 }),
    'stroke-width': fc.oneof(fc.double({ min: 0, max: 100, noNaN: true }), fc.constantFrom(0, 100)),
    'stroke-opacity': fc.option(unit, { nil: null, freq: 8 }),
    fill: fc.option(color, { nil: null, freq: 8 }),
    'fill-opacity': fc.option(unit, { nil: null, freq: 8 }),
    'marker-color': fc.option(color, { nil: null, freq: 8 }),
    'marker-size': fc.oneof(fc.constantFrom('small', 'medium', 'large'), fc.double({ min: 0.01, max: 200, noNaN: true }), fc.constant(200)),
    title: fc.string({ maxLength: 8 }),
    'marker-symbol': fc.constantFrom('bus', 'a', ''),
  },
  { requiredKeys: [] },
);

const feature = fc.record({ properties: fc.option(props, { nil: null, freq: 6 }), geometry: fc.option(geometry, { nil: null, freq: 12 }) }).map((f) => ({ type: 'Feature', ...f }));
type Feature = { type: string; properties: Props | null; geometry: { type: string; coordinates: Json } | null };

/** A document in one of the three top-level forms, with the shapes it means. */
const documentForm = fc.oneof(
  geometry.map((g) => ({ form: 'geometry', doc: g as Json, expected: expectedShapes(g, undefined), features: [] as Feature[] })),
  feature.map((f) => ({ form: 'feature', doc: f as Json, expected: f.geometry ? expectedShapes(f.geometry, f.properties) : [], features: [f as Feature] })),
  fc.array(feature, { maxLength: 5 }).map((fs) => ({
    form: 'collection',
    doc: { type: 'FeatureCollection', features: fs } as Json,
    expected: fs.flatMap((f) => (f.geometry ? expectedShapes(f.geometry, f.properties) : [])),
    features: fs as Feature[],
  })),
);

// ---- Generators of one mistake in a feature, with where it is and what the problem must say --------------------

interface Flaw {
  kind: string;
  feature: Feature;
  /** Place relative to the feature, e.g. `.geometry.coordinates[1]`. */
  at: string;
  says: string;
  /** A mistake in the geometry alone (it can stand as a bare geometry too). */
  inGeometry: boolean;
}

const geometryFlaw = (kind: string, geometry: { type: string; coordinates: Json }, at: string, says: string): Flaw => ({
  kind,
  feature: { type: 'Feature', properties: null, geometry },
  at: `.geometry${at}`,
  says,
  inGeometry: true,
});
const propFlaw = (kind: string, key: string, value: Json, says: string, extra: Props = {}) =>
  geometry.map((g): Flaw => ({ kind, feature: { type: 'Feature', properties: { ...extra, [key]: value }, geometry: g }, at: `.properties["${key}"]`, says, inGeometry: false }));

const outside = fc.oneof(
  fc.tuple(fc.double({ min: 180.000001, max: 1e6, noNaN: true }).chain((v) => fc.constantFrom(v, -v)), coord(90)),
  fc.tuple(coord(180), fc.double({ min: 90.000001, max: 1e6, noNaN: true }).chain((v) => fc.constantFrom(v, -v))),
);
/** Not a position: arrays of the wrong length or content, and things that are not arrays at all. */
const notAPosition = fc.oneof(
  fc.constantFrom<Json>([1], [], ['1', '2'], [null, 2], [1, true], [[1, 2]]).map((v) => ({ v, says: 'is not a [longitude, latitude] position' })),
  fc.constantFrom<Json>('a', 7, { lon: 1, lat: 2 }, null).map((v) => ({ v, says: 'is not an array' })),
);

const flaw: fc.Arbitrary<Flaw> = fc.oneof(
  fc.tuple(lineCoords, fc.nat(), outside).map(([l, i, bad]) => {
    const j = i % l.length;
    const c = l.map((p, k) => (k === j ? bad : p));
    return geometryFlaw('position-range', { type: 'LineString', coordinates: c }, `.coordinates[${j}]`, 'is outside longitude -180..180, latitude -90..90');
  }),
  fc.tuple(fc.array(position, { minLength: 1, maxLength: 4 }), fc.nat(), notAPosition).map(([pts, i, bad]) => {
    const j = i % pts.length;
    return geometryFlaw('position-shape', { type: 'MultiPoint', coordinates: pts.map((p, k) => (k === j ? bad.v : p)) }, `.coordinates[${j}]`, bad.says);
  }),
  position.map((p) => geometryFlaw('short-line', { type: 'LineString', coordinates: [p] }, '.coordinates', 'has 1 positions; at least 2 are needed')),
  fc.tuple(polygonCoords, fc.nat(), fc.array(position, { minLength: 0, maxLength: 2 })).map(([rings, i, short]) => {
    const j = i % rings.length;
    return geometryFlaw('short-ring', { type: 'Polygon', coordinates: rings.map((r, k) => (k === j ? short : r)) }, `.coordinates[${j}]`, `has ${short.length} positions; at least 3`);
  }),
  fc.tuple(fc.array(lineCoords, { minLength: 1, maxLength: 3 }), fc.nat(), position).map(([lines, i, p]) => {
    const j = i % lines.length;
    return geometryFlaw('multiline-short', { type: 'MultiLineString', coordinates: lines.map((l, k) => (k === j ? [p] : l)) }, `.coordinates[${j}]`, 'has 1 positions; at least 2');
  }),
  fc.tuple(fc.array(polygonCoords, { minLength: 1, maxLength: 2 }), fc.nat(), fc.nat(), fc.nat(), outside).map(([polys, a, b, c, bad]) => {
    const i = a % polys.length;
    const j = b % polys[i].length;
    const k = c % polys[i][j].length;
    const coords = polys.map((poly, pi) => poly.map((ring, ri) => ring.map((pos, qi) => (pi === i && ri === j && qi === k ? bad : pos))));
    return geometryFlaw('deep-position', { type: 'MultiPolygon', coordinates: coords }, `.coordinates[${i}][${j}][${k}]`, 'is outside longitude');
  }),
  fc.constant(geometryFlaw('no-rings', { type: 'Polygon', coordinates: [] }, '.coordinates', 'has no rings')),
  fc.tuple(fc.array(polygonCoords, { minLength: 1, maxLength: 3 }), fc.nat()).map(([polys, i]) => {
    const j = i % polys.length;
    return geometryFlaw('multipolygon-empty', { type: 'MultiPolygon', coordinates: polys.map((p, k) => (k === j ? [] : p)) }, `.coordinates[${j}]`, 'has no rings');
  }),
  fc.tuple(fc.constantFrom('Circle', 'point', 'GeometryCollection', '', 'LINESTRING', 'toString'), position).map(([t, p]) => geometryFlaw('type', { type: t, coordinates: p }, '', `type "${t}" is not one of`)),
  fc.constantFrom<Json>(null, 'a', 5, { x: 1 }).map((c) => geometryFlaw('coordinates', { type: 'MultiLineString', coordinates: c }, '.coordinates', 'is not an array')),
  fc.constantFrom<Json>('red', '#12', '12345', '#ggg', 'rgb(1,2,3)', 255, '##fff').chain((v) => propFlaw('stroke', 'stroke', v, 'is not a hex color')),
  fc.constantFrom<Json>('red', '#12', '12345', '#ggg', 255, true).chain((v) => propFlaw('fill', 'fill', v, 'is not a hex color')),
  fc.constantFrom<Json>('blue', '#1', 0xff0000, false).chain((v) => propFlaw('marker-color', 'marker-color', v, 'is not a hex color')),
  fc.constantFrom<Json>(-1, 101, 1e9, '3', true).chain((v) => propFlaw('stroke-width', 'stroke-width', v, 'is not a number 0..100')),
  fc.constantFrom<Json>(1.5, -0.1, '0.5', true).chain((v) => propFlaw('stroke-opacity', 'stroke-opacity', v, 'is not a number 0..1')),
  // fill-opacity is read with a fill (it scales the fill's alpha).
  fc.constantFrom<Json>(1.01, -1, '1').chain((v) => propFlaw('fill-opacity', 'fill-opacity', v, 'is not a number 0..1', { fill: '#0f0' })),
  // Names every object has (toString, constructor) are not sizes either.
  fc.constantFrom<Json>('huge', 'Small', 0, -5, 200.5, true, 'toString', 'constructor', '__proto__', 'hasOwnProperty').chain((v) => propFlaw('marker-size', 'marker-size', v, 'is not small, medium, large or a number')),
);

describe('the geojson overlay (properties)', () => {
  test('every geometry type, as a geometry, Feature or FeatureCollection, with any simplestyle properties, parses to its shapes', () => {
    const forms = new FormCounter();
    fc.assert(
      fc.property(documentForm, ({ form, doc, expected, features }) => {
        forms.hit(form);
        const geometries = form === 'geometry' ? [doc as { type: string }] : features.map((f) => f.geometry).filter((g) => g !== null);
        for (const g of geometries) forms.hit(g.type);
        for (const f of features) {
          if (f.geometry === null) forms.hit('null-geometry');
          for (const [k, v] of Object.entries(f.properties ?? {})) forms.hit(v === null ? `${k}=null` : k);
        }
        const r = parseGeoJsonOverlay(JSON.stringify(doc));
        assert.ok(r.ok, r.ok ? '' : r.problem);
        assert.deepEqual(r.value, expected);
      }),
      { numRuns: 1500 },
    );
    forms.assertEach(['geometry', 'feature', 'collection', 'Point', 'MultiPoint', 'LineString', 'MultiLineString', 'Polygon', 'MultiPolygon', 'null-geometry'], 50);
    forms.assertEach(['stroke', 'stroke-width', 'stroke-opacity', 'fill', 'fill-opacity', 'marker-color', 'marker-size', 'title', 'stroke=null', 'fill=null', 'marker-color=null'], 50);
  });

  test('the defaults: stroke #0000ff at 3 px, no fill, marker #ff0000 of 12 px; opacity scales a colour with alpha', () => {
    // Hand-written expectations, independent of the model above.
    const line = parseGeoJsonOverlay('{"type":"LineString","coordinates":[[0,0],[1,1]]}');
    assert.deepEqual(line, { ok: true, value: [{ type: 'line', points: [[0, 0], [1, 1]], stroke: { r: 0, g: 0, b: 255, a: 1 }, width: 3 }] });
    const point = parseGeoJsonOverlay('{"type":"Feature","properties":{"marker-size":"large"},"geometry":{"type":"Point","coordinates":[5,6]}}');
    assert.deepEqual(point, { ok: true, value: [{ type: 'point', point: [5, 6], color: { r: 255, g: 0, b: 0, a: 1 }, size: 18 }] });
    const poly = parseGeoJsonOverlay('{"type":"Feature","properties":{"fill":"#ff000080","fill-opacity":0.5,"stroke-opacity":0.25},"geometry":{"type":"Polygon","coordinates":[[[0,0],[1,0],[1,1]]]}}');
    assert.ok(poly.ok && poly.value[0].type === 'polygon');
    const shape = poly.value[0] as Extract<GeoShape, { type: 'polygon' }>;
    assert.deepEqual(shape.fill, { r: 255, g: 0, b: 0, a: (128 / 255) * 0.5 });
    assert.deepEqual(shape.stroke, { r: 0, g: 0, b: 255, a: 0.25 });
    assert.equal(shape.width, 3);
  });

  test('each kind of mistake, wherever it is put, is refused naming its place and what is wrong', () => {
    const forms = new FormCounter();
    const placed = fc.tuple(flaw, fc.array(feature, { maxLength: 3 }), fc.array(feature, { maxLength: 2 }), fc.constantFrom('collection', 'feature', 'geometry'));
    fc.assert(
      fc.property(placed, ([f, before, after, form]) => {
        const wrap = form === 'geometry' && !f.inGeometry ? 'feature' : form;
        forms.hit(f.kind);
        forms.hit(`in-${wrap}`);
        const doc = wrap === 'collection' ? { type: 'FeatureCollection', features: [...before, f.feature, ...after] } : wrap === 'feature' ? f.feature : f.feature.geometry;
        const where = wrap === 'collection' ? `geojson.features[${before.length}]${f.at}` : wrap === 'feature' ? `geojson${f.at}` : `geojson${f.at.slice('.geometry'.length)}`;
        const r = parseGeoJsonOverlay(JSON.stringify(doc));
        assert.ok(!r.ok, `${f.kind} was accepted: ${JSON.stringify(doc)}`);
        assert.ok(r.problem.startsWith(where) && r.problem.includes(f.says), `${f.kind}: "${r.problem}" should start with ${where} and say "${f.says}"`);
        // The next character after the place ends it: [0] is not mistaken for [0]… of a deeper place.
        assert.match(r.problem.slice(where.length), /^( |:|$)/, r.problem);
      }),
      { numRuns: 1500 },
    );
    forms.assertEach(['position-range', 'position-shape', 'short-line', 'multiline-short', 'deep-position', 'short-ring', 'no-rings', 'multipolygon-empty', 'type', 'coordinates', 'stroke', 'fill', 'marker-color', 'stroke-width', 'stroke-opacity', 'fill-opacity', 'marker-size'], 30);
    forms.assertEach(['in-collection', 'in-feature', 'in-geometry'], 100);
  });

  test('documents of the wrong shape are refused naming what is wrong; text that is not JSON says so', () => {
    const forms = new FormCounter();
    const wrong = fc.oneof(
      fc.constantFrom<Json>(1, 'x', null, true, []).map((d) => ({ kind: 'not-object', text: JSON.stringify(d), says: 'geojson is not a GeoJSON object' })),
      fc.constantFrom<Json>(null, {}, 'a', 3).map((fs) => ({ kind: 'features', text: JSON.stringify({ type: 'FeatureCollection', features: fs }), says: 'geojson.features is not an array' })),
      fc.tuple(fc.array(feature, { maxLength: 3 }), fc.constantFrom<Json>(null, 3, { type: 'feature' }, { type: 'Point', coordinates: [0, 0] })).map(([fs, bad]) => ({
        kind: 'not-feature',
        text: JSON.stringify({ type: 'FeatureCollection', features: [...fs, bad] }),
        says: `geojson.features[${fs.length}] is not a Feature`,
      })),
      documentForm.chain((d) => {
        const text = JSON.stringify(d.doc);
        return fc.integer({ min: 0, max: text.length - 1 }).map((cut) => ({ kind: 'truncated', text: text.slice(0, cut), says: 'geojson is not valid JSON' }));
      }),
    );
    fc.assert(
      fc.property(wrong, ({ kind, text, says }) => {
        forms.hit(kind);
        const r = parseGeoJsonOverlay(text);
        assert.ok(!r.ok && r.problem.startsWith(says), `${kind}: ${text} → ${JSON.stringify(r)}`);
      }),
      { numRuns: 800 },
    );
    forms.assertEach(['not-object', 'features', 'not-feature', 'truncated'], 50);
  });

  test('any text or JSON value: never throws; what parses has positions in range', () => {
    const forms = new FormCounter();
    const sizeName = fc.constantFrom('small', 'toString', 'valueOf', 'constructor', 'isPrototypeOf', 'x');
    const anyDoc = fc.oneof(
      fc.string({ maxLength: 40 }),
      fc.json(),
      sizeName.map((n) => JSON.stringify({ type: 'Feature', properties: { 'marker-size': n }, geometry: { type: 'Point', coordinates: [1, 2] } })), fc.jsonValue().map((v) => JSON.stringify({ type: 'Feature', geometry: v, properties: v })), documentForm.map((d) => JSON.stringify(d.doc)));
    fc.assert(
      fc.property(anyDoc, (text) => {
        const r = parseGeoJsonOverlay(text);
        forms.hit(r.ok ? 'accepted' : 'refused');
        if (!r.ok) return assert.ok(r.problem.startsWith('geojson'), r.problem);
        for (const s of r.value) {
          if (s.type === 'point') assert.ok(typeof s.size === 'number' && s.size > 0 && s.size <= 200, `marker size ${String(s.size)}`);
          const pts = s.type === 'point' ? [s.point] : s.type === 'line' ? s.points : s.rings.flat();
          for (const [lon, lat] of pts) assert.ok(Math.abs(lon) <= 180 && Math.abs(lat) <= 90);
        }
      }),
      { numRuns: 2000 },
    );
    forms.assertEach(['accepted', 'refused'], 100);
  });
});

// ---- Through the real server ---------------------------------------------------------------------------------

const MAX_PIXELS = 64 * 64;

describe('the geojson overlay through the server (properties)', () => {
  let server: TestServer;
  let dir: string;

  before(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'tsts-geojson-prop-'));
    writeFileSync(path.join(dir, 'style.json'), JSON.stringify({ version: 8, sources: {}, layers: [{ id: 'bg', type: 'background', paint: { 'background-color': '#ffffff' } }] }));
    server = await startServer({
      toml: `[[styles]]\nid = "plain"\npath = "${path.join(dir, 'style.json')}"\n[cache]\ndir = "${path.join(dir, 'cache')}"\n[render]\npool_size = 1\npages_per_browser = 1\nmax_pixels = ${MAX_PIXELS}\n`,
      timeoutMs: 60_000,
    });
  });
  after(async () => {
    await server?.stop();
    if (dir) rmSync(dir, { recursive: true, force: true });
  });

  const staticUrl = (size: string, geojson: string, view = 'auto') => `${server.url}/styles/plain/static/${view}/${size}?geojson=${encodeURIComponent(geojson)}`;

  test('valid overlays reach the pixel budget; each mistake is 400 problem+json naming geojson and its place', async () => {
    const forms = new FormCounter();
    await fc.assert(
      fc.asyncProperty(documentForm.filter((d) => JSON.stringify(d.doc).length < 3000), async ({ form, doc }) => {
        forms.hit(form);
        const res = await fetch(staticUrl('100x100.png', JSON.stringify(doc), '0,0,2'));
        const body = (await res.json()) as { status: number; parameter: string; detail: string };
        assert.deepEqual([res.status, body.parameter, body.detail], [400, 'size', `100x100 is 10000 device pixels, more than render.max_pixels (${MAX_PIXELS})`]);
      }),
      { numRuns: 40 },
    );
    await fc.assert(
      fc.asyncProperty(flaw, fc.array(feature, { maxLength: 2 }).filter((fs) => JSON.stringify(fs).length < 2500), async (f, before) => {
        forms.hit(`flaw-${f.kind}`);
        const res = await fetch(staticUrl('100x100.png', JSON.stringify({ type: 'FeatureCollection', features: [...before, f.feature] })));
        assert.equal(res.status, 400);
        assert.equal(res.headers.get('content-type'), 'application/problem+json');
        const body = (await res.json()) as { type: string; title: string; status: number; parameter: string; detail: string };
        assert.equal(body.parameter, 'geojson');
        assert.ok(body.type && body.title && body.status === 400);
        assert.ok(body.detail.startsWith(`geojson.features[${before.length}]${f.at}`) && body.detail.includes(f.says), body.detail);
      }),
      { numRuns: 60 },
    );
    forms.assertEach(['geometry', 'feature', 'collection'], 3);
    assert.ok(['position-range', 'short-ring', 'stroke', 'marker-size'].filter((k) => forms.count(`flaw-${k}`) > 0).length >= 2, 'several kinds of mistake went through the server');
  });

  test('a filled box fitted with auto is drawn in its fill colour, its stroke at its edge', async () => {
    const forms = new FormCounter();
    const box = fc.record({
      west: fc.integer({ min: -170, max: 150 }),
      south: fc.integer({ min: -60, max: 50 }),
      dx: fc.integer({ min: 2, max: 15 }),
      dy: fc.integer({ min: 2, max: 10 }),
      fill: fc.constantFrom<[string, Rgb]>(['#ff0000', [255, 0, 0]], ['0f0', [0, 255, 0]], ['#00f', [0, 0, 255]], ['#ffff00', [255, 255, 0]]),
      form: fc.constantFrom('Polygon', 'MultiPolygon'),
    });
    await fc.assert(
      fc.asyncProperty(box, async ({ west, south, dx, dy, fill, form }) => {
        forms.hit(form);
        const ring = [[west, south], [west + dx, south], [west + dx, south + dy], [west, south + dy], [west, south]];
        const geometry = form === 'Polygon' ? { type: 'Polygon', coordinates: [ring] } : { type: 'MultiPolygon', coordinates: [[ring]] };
        const doc = { type: 'Feature', properties: { fill: fill[0], stroke: '#000000', 'stroke-width': 1 }, geometry };
        const res = await fetch(staticUrl('40x40.png', JSON.stringify(doc)) + '&padding=0.2');
        assert.equal(res.status, 200, await res.clone().text());
        const img = await decode(Buffer.from(await res.arrayBuffer()));
        assert.deepEqual([img.width, img.height], [40, 40]);
        assert.ok(distance(pixel(img, 20, 20), fill[1]) < 40, `centre ${pixel(img, 20, 20)} is the fill ${fill[1]}`);
        // padding 0.2: the box stays 8 px clear of every edge, so the corners are the white background.
        for (const [x, y] of [[1, 1], [38, 1], [1, 38], [38, 38]]) assert.ok(distance(pixel(img, x, y), [255, 255, 255]) < 40, `corner ${x},${y}: ${pixel(img, x, y)}`);
      }),
      { numRuns: 4 },
    );
    assert.equal(forms.count('Polygon') + forms.count('MultiPolygon'), 4);
  });
});
