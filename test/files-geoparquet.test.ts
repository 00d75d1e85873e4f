// The GeoParquet reader (src/sources/files/geoparquet.ts) against the features a file was written from: real
// features (the Dortmund tile of the OpenMapTiles fixtures) written by hyparquet-writer as GeoParquet 1.1 (WKB,
// a bbox covering column, several row groups), without a covering, and in EPSG:3857 (converted by GDAL); read
// whole and by boxes (fixed and random), locally and over HTTP with range requests. Debian 12's GDAL has no
// Parquet driver, so the GeoJSON the file was written from is the reference. Broken files are open errors.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Feature, FeatureCollection } from 'geojson';
import { parquetWriteFile } from 'hyparquet-writer';
import fc from './helpers/fast-check.js';
import { cityFeatures } from './helpers/city-collection.js';
import { shiftedCopies, spatialOrder, writeGeoParquet } from './helpers/file-data.js';
import { assertSameFeatures, meets, readAll, readCrs, STORAGE } from './helpers/file-readers.js';
import { gdalTool } from './helpers/gdal.js';
import { startRangeServer, tempDir, type RangeServer } from './helpers/foundation.js';
import { openGeoParquet } from '../src/sources/files/geoparquet.js';
import type { FeatureReader } from '../src/sources/files/reader.js';
import { SourceOpenError } from '../src/sources/source.js';

const dir = tempDir('tsts-geoparquet-');
const file = (name: string) => path.join(dir, name);
const options = { sourceId: 'city', storage: STORAGE, readCrs };
const BOXES: Array<[number, number, number, number]> = [
  [7.45, 51.5, 7.46, 51.51],
  [7.3, 51.4, 7.42, 51.5],
  [7.47, 51.52, 7.471, 51.521],
  [8, 52, 9, 53],
];

let city: FeatureCollection;
/** The features as the reader must give them: the `id` column is the feature's id and stays a property. */
let expected: Feature[];
let server: RangeServer;
const idOf = (f: Feature) => f.id as number;

before(async () => {
  const source = cityFeatures();
  // In a spatial order, as GeoParquet writers sort for serving, so that row groups cover parts of the city.
  city = { type: 'FeatureCollection', features: spatialOrder(source.features) };
  expected = city.features.map((f) => ({ ...f, properties: { ...f.properties, id: f.id } }));
  writeGeoParquet(file('city.parquet'), [city.features], { rowGroupSize: 500 });
  writeGeoParquet(file('city-nocover.parquet'), [city.features], { rowGroupSize: 1000, covering: false });
  writeFileSync(file('city.geojson'), JSON.stringify(city));
  const r = gdalTool('ogr2ogr', ['-f', 'GeoJSON', '-t_srs', 'EPSG:3857', file('city-3857.geojson'), file('city.geojson')]);
  assert.equal(r.status, 0, r.stderr);
  // GDAL keeps the features' order and properties but not their ids: take them from the lon/lat file.
  const merc = (JSON.parse(readFileSync(file('city-3857.geojson'), 'utf8')) as FeatureCollection).features.map((f, i) => ({ ...f, id: city.features[i].id }));
  const epsg3857 = { $schema: 'https://proj.org/schemas/v0.7/projjson.schema.json', type: 'ProjectedCRS', name: 'WGS 84 / Pseudo-Mercator', id: { authority: 'EPSG', code: 3857 } };
  writeGeoParquet(file('city-3857.parquet'), [merc], { rowGroupSize: 1000, crs: epsg3857 });
  // 16 copies (about 16 MB), for what a remote box read costs.
  writeGeoParquet(file('cities.parquet'), shiftedCopies(city, 16, 0), { rowGroupSize: 1000 });
  server = await startRangeServer(file('city.parquet'));
});

after(async () => {
  await server?.close();
});

async function withReader<T>(location: string, fn: (r: FeatureReader) => Promise<T>): Promise<T> {
  const reader = await openGeoParquet(location, options);
  try {
    return await fn(reader);
  } finally {
    await reader.close();
  }
}

for (const name of ['city.parquet', 'city-nocover.parquet', 'city-3857.parquet']) {
  test(`${name}: the features it was written from, whole and for boxes, in lon/lat`, async () => {
    await withReader(file(name), async (reader) => {
      assert.equal(reader.layers.length, 1);
      const layer = reader.layers[0];
      assert.equal(layer.name, 'city');
      assert.equal(layer.featureCount, expected.length);
      assert.equal(layer.fields.class, 'String');
      assert.equal(layer.fields.rank, 'Number');
      assert.equal(layer.fields.id, 'Number');
      assert.equal(layer.fields.geometry, undefined);
      assert.equal(layer.fields.bbox, undefined);
      const [w, s, e, n] = layer.bounds!;
      assert.ok(Math.abs(w - 7.3939919) < 1e-6 && Math.abs(s - 51.4822582) < 1e-6 && Math.abs(e - 7.5062585) < 1e-6 && Math.abs(n - 51.562045) < 1e-6, `bounds ${layer.bounds}`);
      assertSameFeatures(await readAll(reader, 'city'), expected, idOf, `${name} whole`);
      for (const box of BOXES) assertSameFeatures(await readAll(reader, 'city', box), expected.filter((f) => meets(f.geometry, box)), idOf, `${name} ${box}`);
      assert.ok(reader.memoryBytes() > 0 && reader.memoryBytes() < 8 * 1024 * 1024, `memoryBytes ${reader.memoryBytes()}`);
    });
  });
}

test('any box gives exactly the features whose bounding box meets it (with and without a covering)', async () => {
  const covered = await openGeoParquet(file('city.parquet'), options);
  const plain = await openGeoParquet(file('city-nocover.parquet'), options);
  try {
    const coord = (lo: number, hi: number) => fc.double({ min: lo, max: hi, noNaN: true });
    await fc.assert(
      fc.asyncProperty(coord(7.38, 7.52), coord(51.47, 51.57), coord(0, 0.05), coord(0, 0.04), async (w, s, dw, dh) => {
        const box: [number, number, number, number] = [w, s, w + dw, s + dh];
        const want = expected.filter((f) => meets(f.geometry, box));
        assertSameFeatures(await readAll(covered, 'city', box), want, idOf, `covering ${box}`);
        assertSameFeatures(await readAll(plain, 'city', box), want, idOf, `no covering ${box}`);
      }),
      { numRuns: 25 },
    );
  } finally {
    await covered.close();
    await plain.close();
  }
});

test('over HTTP with range requests: the same features; a box reads a small part of the file', async () => {
  await withReader(server.url, async (reader) => {
    assertSameFeatures(await readAll(reader, 'city'), expected, idOf, 'remote whole');
    const box = BOXES[0];
    assertSameFeatures(await readAll(reader, 'city', box), expected.filter((f) => meets(f.geometry, box)), idOf, 'remote box');
  });
  const big = await startRangeServer(file('cities.parquet'));
  try {
    const size = readFileSync(file('cities.parquet')).byteLength;
    const local = await withReader(file('cities.parquet'), (r) => readAll(r, 'city', BOXES[0]));
    const before = big.bytesSent();
    const remote = await withReader(big.url, (r) => readAll(r, 'city', BOXES[0]));
    const fetched = big.bytesSent() - before;
    assert.ok(remote.length > 10);
    assert.deepEqual(remote, local);
    assert.ok(fetched < size / 8, `a box read fetched ${fetched} bytes of a ${size}-byte file`);
  } finally {
    await big.close();
  }
});

test('broken files: open errors of one line naming the source', async () => {
  parquetWriteFile({ filename: file('no-geometry.parquet'), columnData: [{ name: 'name', data: ['a', 'b'], type: 'STRING' }] });
  writeGeoParquet(file('geoarrow.parquet'), [city.features.slice(0, 10)], { rowGroupSize: 10, encoding: 'point' });
  const whole = readFileSync(file('city.parquet'));
  writeFileSync(file('truncated.parquet'), whole.subarray(0, Math.floor(whole.byteLength / 2)));
  const cases: Array<[string, RegExp]> = [
    [file('no-geometry.parquet'), /no geometry column/],
    [file('geoarrow.parquet'), /encoded as "point"; only WKB is read/],
    [file('truncated.parquet'), /truncated/],
    [file('city.geojson'), /not a Parquet file/],
    [file('missing.parquet'), /no such file/],
    [`${server.url}.missing`, /HTTP 404/],
  ];
  for (const [location, reason] of cases) {
    await assert.rejects(openGeoParquet(location, options), (err: unknown) => {
      assert.ok(err instanceof SourceOpenError, String(err));
      assert.equal(err.sourceId, 'city');
      assert.match(err.message, /^source "city": cannot open GeoParquet /);
      assert.match(err.message, reason);
      assert.doesNotMatch(err.message, /\n/);
      return true;
    });
  }
});
