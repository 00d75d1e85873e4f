// Property tests of the parsing of OGC API - Features Part 2's CRS inputs (src/ogc/crs.ts, feature-input.ts): a
// `crs`/`bbox-crs` parameter or a Content-Crs header names a listed CRS exactly when its text (angle brackets and
// spaces aside) is that CRS's URI, and never throws; a bbox in a latitude-first CRS comes out west, south, east,
// north; positions in a written body are checked in the CRS they are given in and come out longitude first.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from './helpers/fast-check.js';
import { bboxToXy, crsNamed, CRS84_ENTRY, EPSG_3857, EPSG_4326, epsgUri, MERCATOR_HALF, tableCrss, type Crs } from '../src/ogc/crs.js';
import { checkFeature, type WriteSchema } from '../src/ogc/feature-input.js';

const RUNS = { numRuns: 1000 };
const LIST = tableCrss(25832, { swap: false }).list;
const listed = fc.constantFrom(...LIST);
const space = fc.constantFrom('', ' ', '  ', '\t');

test('a table lists CRS84, EPSG:4326 (latitude first), EPSG:3857 and its own SRID with the axis order GDAL gave, its storageCrs', () => {
  assert.deepEqual(
    LIST.map((c) => [c.uri.split('/').slice(-3).join('/'), c.srid, c.swap]),
    [
      ['OGC/1.3/CRS84', 4326, false],
      ['EPSG/0/4326', 4326, true],
      ['EPSG/0/3857', 3857, false],
      ['EPSG/0/25832', 25832, false],
    ],
  );
  assert.equal(tableCrss(4326).storage, EPSG_4326);
  assert.equal(tableCrss(3857).storage, EPSG_3857);
  assert.equal(tableCrss(4258, { swap: true }).storage?.swap, true);
  // An SRID whose axis order GDAL did not give (a code it does not know) is answered in the three, never in itself.
  assert.equal(tableCrss(999_999).storage, undefined);
  assert.deepEqual(tableCrss(999_999).list, tableCrss(4326).list);
});

test('a listed URI, bare or in angle brackets with spaces around, names its CRS', () => {
  fc.assert(
    fc.property(listed, space, space, fc.boolean(), (crs, a, b, brackets) => {
      const text = brackets ? `${a}<${crs.uri}>${b}` : `${a}${crs.uri}${b}`;
      assert.equal(crsNamed(LIST, text), crs);
    }),
    RUNS,
  );
});

test('any other text names no CRS and never throws', () => {
  const near = listed.chain((c) =>
    fc.oneof(
      fc.string({ maxLength: 80 }),
      fc.constant(c.uri.toUpperCase()),
      fc.constant(c.uri.replace('http:', 'https:')),
      fc.constant(`${c.uri}/`),
      fc.constant(`<${c.uri}`),
      fc.constant(`[EPSG:${c.srid}]`),
      fc.integer({ min: 1, max: c.uri.length - 1 }).map((n) => c.uri.slice(0, n)),
      fc.string({ maxLength: 3 }).map((s) => `${c.uri}${s}x`),
    ),
  );
  fc.assert(
    fc.property(near, (text) => {
      const bare = text.trim().replace(/^<(.*)>$/, '$1').trim();
      const found = crsNamed(LIST, text);
      assert.equal(found, LIST.find((c) => c.uri === bare));
    }),
    RUNS,
  );
});

test('a bbox in a latitude-first CRS becomes west, south, east, north; one in an x-first CRS is unchanged', () => {
  const n = fc.double({ noNaN: true, noDefaultInfinity: true });
  fc.assert(
    fc.property(listed, fc.tuple(n, n, n, n), (crs, b) => {
      const xy = bboxToXy(b, crs);
      assert.deepEqual(xy, crs.swap ? [b[1], b[0], b[3], b[2]] : b);
      assert.deepEqual(bboxToXy(xy, crs), b, 'swapping twice gives the box back');
    }),
    RUNS,
  );
});

const SCHEMA: WriteSchema = { properties: [], geometryColumn: 'geom', geometryType: 'geometry(Point,4326)' };
const point = (coordinates: unknown) => ({ type: 'Feature', properties: {}, geometry: { type: 'Point', coordinates } });

test('positions are checked in the CRS given and come out in x/y order', () => {
  const coordinate = fc.oneof(fc.double({ min: -200, max: 200, noNaN: true }), fc.double({ min: -3e7, max: 3e7, noNaN: true }), fc.constantFrom(90, -90, 180, -180, MERCATOR_HALF, -MERCATOR_HALF));
  const crs = fc.constantFrom<Crs>(CRS84_ENTRY, EPSG_4326, EPSG_3857, { uri: epsgUri(25832), srid: 25832, swap: false });
  fc.assert(
    fc.property(crs, coordinate, coordinate, (c, a, b) => {
      const [x, y] = c.swap ? [b, a] : [a, b];
      const fits = c.srid === 4326 ? Math.abs(x) <= 180 && Math.abs(y) <= 90 : c.srid === 3857 ? Math.abs(x) <= MERCATOR_HALF && Math.abs(y) <= MERCATOR_HALF : true;
      const r = checkFeature(point([a, b]), SCHEMA, '', c);
      assert.equal(r.ok, fits, JSON.stringify({ uri: c.uri, a, b }));
      if (r.ok) assert.deepEqual((r.value.geometry as { coordinates: number[] }).coordinates, [x, y]);
      else assert.equal(r.member, 'geometry.coordinates');
    }),
    RUNS,
  );
});
