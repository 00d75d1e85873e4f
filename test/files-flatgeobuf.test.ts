// The FlatGeobuf reader (src/sources/files/flatgeobuf.ts) against GDAL: real features (the Dortmund tile of the
// OpenMapTiles fixtures) written by ogr2ogr with and without a spatial index and in two other CRSs, read whole
// and by boxes (fixed and random), locally and over HTTP with range requests; GDAL's own reading of each file
// (`ogr2ogr -f GeoJSON`) is the reference. Broken files are open errors of one line.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Feature } from 'geojson';
import fc from './helpers/fast-check.js';
import { cityFeatures } from './helpers/city-collection.js';
import { writeBigFlatGeobuf } from './helpers/file-data.js';
import { assertSameFeatures, gdalFeatures, meets, readAll, readCrs, STORAGE } from './helpers/file-readers.js';
import { gdalTool } from './helpers/gdal.js';
import { startRangeServer, tempDir, type RangeServer } from './helpers/foundation.js';
import { openFlatGeobuf } from '../src/sources/files/flatgeobuf.js';
import type { FeatureReader } from '../src/sources/files/reader.js';
import { SourceOpenError } from '../src/sources/source.js';

const dir = tempDir('tsts-fgb-');
const file = (name: string) => path.join(dir, name);
const options = { sourceId: 'city', storage: STORAGE, readCrs };
const fidOf = (f: Feature) => f.properties?.fid as number;
/** Boxes inside, across the edge of and outside the city (lon/lat). */
const BOXES: Array<[number, number, number, number]> = [
  [7.45, 51.5, 7.46, 51.51],
  [7.3, 51.4, 7.42, 51.5],
  [7.47, 51.52, 7.471, 51.521],
  [8, 52, 9, 53],
];

const references = new Map<string, Feature[]>();
let server: RangeServer;

function ogr2ogr(out: string, args: string[], src: string): void {
  const r = gdalTool('ogr2ogr', ['-f', 'FlatGeobuf', ...args, file(out), src]);
  assert.equal(r.status, 0, r.stderr);
}

before(async () => {
  const city = cityFeatures();
  for (const f of city.features) f.properties!.fid = f.id as number;
  writeFileSync(file('city.geojson'), JSON.stringify(city));
  ogr2ogr('city.fgb', ['-nln', 'city'], file('city.geojson'));
  ogr2ogr('city-noindex.fgb', ['-nln', 'city', '-lco', 'SPATIAL_INDEX=NO'], file('city.geojson'));
  ogr2ogr('city-3857.fgb', ['-nln', 'city', '-t_srs', 'EPSG:3857'], file('city.geojson'));
  ogr2ogr('city-25832.fgb', ['-nln', 'city', '-t_srs', 'EPSG:25832'], file('city.geojson'));
  references.set('city.fgb', gdalFeatures(file('city.fgb')));
  references.set('city-noindex.fgb', gdalFeatures(file('city-noindex.fgb')));
  references.set('city-3857.fgb', gdalFeatures(file('city-3857.fgb'), ['-t_srs', 'EPSG:4326']));
  references.set('city-25832.fgb', gdalFeatures(file('city-25832.fgb'), ['-t_srs', 'EPSG:4326']));
  // 16 copies of the city in one indexed file (about 15 MB), for what a remote box read costs.
  writeBigFlatGeobuf(file('cities.fgb'), city, 16, 0);
  server = await startRangeServer(file('city.fgb'));
});

after(async () => {
  await server?.close();
});

async function withReader<T>(location: string, fn: (r: FeatureReader) => Promise<T>): Promise<T> {
  const reader = await openFlatGeobuf(location, options);
  try {
    return await fn(reader);
  } finally {
    await reader.close();
  }
}

for (const name of ['city.fgb', 'city-noindex.fgb', 'city-3857.fgb', 'city-25832.fgb']) {
  test(`${name}: the same features as GDAL reads, whole and for boxes, in lon/lat`, async () => {
    const expected = references.get(name)!;
    await withReader(file(name), async (reader) => {
      assert.equal(reader.layers.length, 1);
      const layer = reader.layers[0];
      assert.equal(layer.name, 'city');
      assert.equal(layer.featureCount, expected.length);
      assert.equal(layer.fields.class, 'String');
      assert.equal(layer.fields.rank, 'Number');
      assert.equal(layer.fields.fid, 'Number');
      // The extent in the file's CRS, in lon/lat: exact for lon/lat and Web Mercator, a close cover for UTM.
      const [w, s, e, n] = layer.bounds!;
      const near = name === 'city-25832.fgb' ? 0.01 : 1e-6;
      assert.ok(w <= 7.3939919 + 1e-9 && s <= 51.4822582 + 1e-9 && e >= 7.5062585 - 1e-9 && n >= 51.562045 - 1e-9, `bounds ${layer.bounds} cover the city`);
      assert.ok(7.3939919 - w < near && 51.4822582 - s < near && e - 7.5062585 < near && n - 51.562045 < near, `bounds ${layer.bounds} close to the city's`);
      assertSameFeatures(await readAll(reader, 'city'), expected, fidOf, `${name} whole`);
      for (const box of BOXES) {
        assertSameFeatures(await readAll(reader, 'city', box), expected.filter((f) => meets(f.geometry, box)), fidOf, `${name} ${box}`);
      }
      assert.deepEqual(await readAll(reader, 'another-layer'), []);
      assert.ok(reader.memoryBytes() > 0 && reader.memoryBytes() < 8 * 1024 * 1024, `memoryBytes ${reader.memoryBytes()}`);
    });
  });
}

test('any box gives exactly the features whose bounding box meets it (indexed and unindexed files)', async () => {
  const expected = references.get('city.fgb')!;
  const unindexed = references.get('city-noindex.fgb')!;
  const indexedReader = await openFlatGeobuf(file('city.fgb'), options);
  const plainReader = await openFlatGeobuf(file('city-noindex.fgb'), options);
  try {
    const coord = (lo: number, hi: number) => fc.double({ min: lo, max: hi, noNaN: true });
    await fc.assert(
      fc.asyncProperty(coord(7.38, 7.52), coord(51.47, 51.57), coord(0, 0.05), coord(0, 0.04), async (w, s, dw, dh) => {
        const box: [number, number, number, number] = [w, s, w + dw, s + dh];
        assertSameFeatures(await readAll(indexedReader, 'city', box), expected.filter((f) => meets(f.geometry, box)), fidOf, `indexed ${box}`);
        assertSameFeatures(await readAll(plainReader, 'city', box), unindexed.filter((f) => meets(f.geometry, box)), fidOf, `unindexed ${box}`);
      }),
      { numRuns: 25 },
    );
  } finally {
    await indexedReader.close();
    await plainReader.close();
  }
});

test('over HTTP with range requests: the same features; a box reads a small part of the file', async () => {
  const expected = references.get('city.fgb')!;
  await withReader(server.url, async (reader) => {
    assertSameFeatures(await readAll(reader, 'city'), expected, fidOf, 'remote whole');
    const box = BOXES[0];
    assertSameFeatures(await readAll(reader, 'city', box), expected.filter((f) => meets(f.geometry, box)), fidOf, 'remote box');
  });
  const big = await startRangeServer(file('cities.fgb'));
  try {
    const size = readFileSync(file('cities.fgb')).byteLength;
    const local = await withReader(file('cities.fgb'), (r) => readAll(r, 'city', BOXES[0]));
    const before = big.bytesSent();
    const remote = await withReader(big.url, (r) => readAll(r, 'city', BOXES[0]));
    const fetched = big.bytesSent() - before;
    assert.equal(remote.length, local.length);
    assert.ok(remote.length > 10);
    assert.deepEqual(remote, local);
    assert.ok(fetched < size / 10, `a box read fetched ${fetched} bytes of a ${size}-byte file`);
  } finally {
    await big.close();
  }
});

test('broken files: open errors of one line naming the source', async () => {
  const whole = readFileSync(file('city.fgb'));
  writeFileSync(file('truncated.fgb'), whole.subarray(0, Math.floor(whole.byteLength / 2)));
  writeFileSync(file('header-only.fgb'), whole.subarray(0, 200));
  const cases: Array<[string, RegExp]> = [
    [file('truncated.fgb'), /cut short \(truncated file\)/],
    [file('header-only.fgb'), /cut short|truncated/],
    [file('city.geojson'), /not a FlatGeobuf file/],
    [file('missing.fgb'), /no such file/],
    [`${server.url}.missing`, /HTTP 404/],
  ];
  for (const [location, reason] of cases) {
    await assert.rejects(openFlatGeobuf(location, options), (err: unknown) => {
      assert.ok(err instanceof SourceOpenError, String(err));
      assert.equal(err.sourceId, 'city');
      assert.match(err.message, /^source "city": cannot open FlatGeobuf /);
      assert.match(err.message, reason);
      assert.doesNotMatch(err.message, /\n/);
      return true;
    });
  }
});
