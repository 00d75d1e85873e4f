// A GeoPackage table small enough has its R*Tree's boxes held in memory (src/sources/files/gpkg-boxes.ts). For any
// box, in memory or through SQLite's R*Tree, the reader must find the same features: the same FIDs, properties and
// geometry, and with a row limit the same number of rows. Real data: the Dortmund city layers written by ogr2ogr.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import fc from './helpers/fast-check.js';
import { CITY_LAYERS, writeCityFiles } from './helpers/city-features.js';
import { openGeoPackage } from '../src/sources/files/geopackage.js';
import type { FeatureReader, FileFeature } from '../src/sources/files/reader.js';
import type { Bounds } from '../src/sources/source.js';
import type { StorageConfig } from '../src/config/schema.js';

let dir: string;
let inMemory: FeatureReader;
let rtree: FeatureReader;
let bounds: Bounds;

before(async () => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'tsts-gpkg-boxes-'));
  const files = writeCityFiles(dir);
  const options = { sourceId: 'city', storage: {} as StorageConfig };
  inMemory = await openGeoPackage(files.gpkg, options);
  rtree = await openGeoPackage(files.gpkg, { ...options, boxesInMemory: 0 });
  bounds = inMemory.layers.find((l) => l.name === 'transportation')!.bounds!;
});
after(async () => {
  await inMemory?.close();
  await rtree?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

async function read(r: FeatureReader, layer: string, box: Bounds): Promise<FileFeature[]> {
  const out: FileFeature[] = [];
  for await (const f of r.features(layer, box)) out.push(f);
  return out;
}

/** A box around the city's streets: anywhere from a point to more than the whole, partly outside them too. */
const boxes = () =>
  fc.tuple(fc.integer({ min: -20, max: 100 }), fc.integer({ min: -20, max: 100 }), fc.integer({ min: 0, max: 120 }), fc.integer({ min: 0, max: 120 })).map(([fx, fy, fw, fh]): Bounds => {
    const [w, s, e, n] = bounds;
    const x = w + (fx / 100) * (e - w);
    const y = s + (fy / 100) * (n - s);
    return [x, y, x + (fw / 100) ** 2 * (e - w), y + (fh / 100) ** 2 * (n - s)];
  });

test('the city has features in every layer, and the in-memory boxes are the ones searched', () => {
  assert.deepEqual(inMemory.layers.map((l) => l.name).sort(), [...CITY_LAYERS].sort());
  for (const l of inMemory.layers) assert.ok((l.featureCount ?? 0) > 0, l.name);
  // The gauge counts the boxes held: the reader of the R*Tree holds none of them.
  assert.ok(inMemory.memoryBytes() > rtree.memoryBytes(), `${inMemory.memoryBytes()} > ${rtree.memoryBytes()}`);
});

test('any box: the same features whether the boxes are in memory or searched through the R*Tree (fast-check)', async () => {
  let nonEmpty = 0;
  await fc.assert(
    fc.asyncProperty(boxes(), fc.constantFrom(...CITY_LAYERS), async (box, layer) => {
      const a = await read(inMemory, layer, box);
      const b = await read(rtree, layer, box);
      assert.deepEqual(a, b, `${layer} ${box.join(',')}`);
      if (a.length) nonEmpty++;
    }),
    { numRuns: 150 },
  );
  assert.ok(nonEmpty > 50, `${nonEmpty} of 150 boxes held features`);
});

test('with a row limit, as many rows either way', async () => {
  const limited = async (r: FeatureReader, box: Bounds, limit: number) => (await r.featuresInBox('transportation', box, limit)).length;
  for (const limit of [1, 10, 100, 100_000]) {
    const a = await limited(inMemory, bounds, limit);
    assert.equal(a, await limited(rtree, bounds, limit), `limit ${limit}`);
    assert.ok(a === limit || limit === 100_000, `${a} rows for limit ${limit}`);
  }
});
