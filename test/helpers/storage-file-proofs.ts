// The proofs that FlatGeobuf and GeoParquet sources read from object storage as a user configures them
// (`path = "s3://bucket/key"` with the store's keys, docs/files.md "Remote files"), run by storage-proofs.ts inside
// each provider's test file, so they share its storage server, its TCP proxy and its server under test. The
// Dortmund features (helpers/city-collection.ts) are written as FlatGeobuf by GDAL's ogr2ogr and as GeoParquet by
// helpers/file-data.ts, uploaded, and served both from the store and from the local files: the remote sources must
// give the same TileJSON, tiles and OGC items as the local ones. A source that cannot be opened stops start-up with
// one line; an object replaced under a running source is never mixed with the old one, and is read again at once.
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import type { Feature } from 'geojson';
import { cityFeatures } from './city-collection.js';
import { copyShift, shiftedCopy, writeGeoParquet } from './file-data.js';
import { getJson, request } from './foundation.js';
import { gdalTool } from './gdal.js';
import { readFixture } from './object-storage.js';
import { runCli, writeTempConfig } from './server.js';
import { failedReloadLine, type ProofContext, type StoreUnderTest } from './storage-proofs.js';
import { readMvt } from './vector-tiles.js';

export interface RangeFiles {
  fgb: string;
  parquet: string;
  /** The city moved east by copyShift(1), with ids n+1..2n: the objects that replace the `swap` ones. */
  movedFgb: string;
  movedParquet: string;
  /** Features in each file. */
  count: number;
}

/** Keys in the bucket. */
const KEY = { fgb: 'data/city.fgb', parquet: 'data/city.parquet', swapFgb: 'data/swap.fgb', swapParquet: 'data/swap.parquet' };

/** Two children of the Dortmund tile (13/4265/2723) at the sources' maxzoom: parts of the city, read through the index. */
const TILES = [
  [14, 8531, 5447],
  [14, 8530, 5446],
];
const TIMEOUT = { timeoutMs: 20_000 };

function writeBoth(dir: string, name: string, features: Feature[]): { fgb: string; parquet: string } {
  const geojson = path.join(dir, `${name}.geojson`);
  writeFileSync(geojson, JSON.stringify({ type: 'FeatureCollection', features }));
  const fgb = path.join(dir, `${name}.fgb`);
  const r = gdalTool('ogr2ogr', ['-f', 'FlatGeobuf', '-nln', 'city', fgb, geojson]);
  if (r.status !== 0) throw new Error(`ogr2ogr FlatGeobuf ${name}: ${r.stderr}`);
  const parquet = path.join(dir, `${name}.parquet`);
  writeGeoParquet(parquet, [features], { rowGroupSize: 500 });
  return { fgb, parquet };
}

/** Writes the files into `dir`: the city with a `fid` column (FlatGeobuf keeps no ids of its own), and the moved city. */
export function writeRangeFiles(dir: string): RangeFiles {
  const city = cityFeatures();
  for (const f of city.features) f.properties!.fid = f.id as number;
  const here = writeBoth(dir, 'city', city.features);
  const moved = writeBoth(dir, 'moved', shiftedCopy(city, 1, 0));
  return { ...here, movedFgb: moved.fgb, movedParquet: moved.parquet, count: city.features.length };
}

export async function uploadRangeFiles(store: StoreUnderTest, files: RangeFiles): Promise<void> {
  await store.put(KEY.fgb, readFixture(files.fgb));
  await store.put(KEY.parquet, readFixture(files.parquet));
  await store.put(KEY.swapFgb, readFixture(files.fgb));
  await store.put(KEY.swapParquet, readFixture(files.parquet));
}

/** TOML of the sources: each format from the store (`keys` are the store's lines) and from the local file. */
export function rangeFileSources(url: (key: string) => string, keys: string, files: RangeFiles): string {
  const source = (id: string, type: string, location: string, extra = '') => `[[sources]]\nid = "${id}"\ntype = "${type}"\npath = "${location}"\n${extra}\n`;
  return [
    source('fgb-remote', 'flatgeobuf', url(KEY.fgb), keys),
    source('pq-remote', 'geoparquet', url(KEY.parquet), keys),
    source('fgb-swap', 'flatgeobuf', url(KEY.swapFgb), keys),
    source('pq-swap', 'geoparquet', url(KEY.swapParquet), keys),
    source('fgb-local', 'flatgeobuf', files.fgb),
    source('pq-local', 'geoparquet', files.parquet),
  ].join('');
}

/** A JSON value with one source's id written as another's (the layer, the URLs): what must then be equal. */
const renamed = <T>(value: T, from: string, to: string): T => JSON.parse(JSON.stringify(value).replaceAll(from, to)) as T;

interface Items {
  features: { id: number; geometry: unknown; properties: Record<string, unknown> }[];
  numberMatched: number;
}

/** Registers the proofs; `ctx` and `files` are read when the tests run (after storage-proofs' `before`). */
export function rangeFileProofs(ctx: () => ProofContext, files: () => RangeFiles): void {
  const pairs = [
    ['fgb-remote', 'fgb-local'],
    ['pq-remote', 'pq-local'],
  ];

  test('FlatGeobuf and GeoParquet objects: the TileJSON, tiles and OGC items of the same files on disk', async () => {
    const { server } = ctx();
    for (const [remote, local] of pairs) {
      const r = await getJson<{ bounds: number[]; vector_layers: { id: string; fields: Record<string, string> }[] }>(server.url, `/data/${remote}.json`);
      const l = await getJson<Record<string, unknown>>(server.url, `/data/${local}.json`);
      assert.equal(r.status, 200, JSON.stringify(r.json));
      assert.deepEqual(renamed(r.json, remote, local), l.json, `${remote}: the TileJSON is the local file's`);
      assert.equal(r.json.vector_layers[0].fields.omt_layer, 'String');
      for (const [z, x, y] of TILES) {
        const rt = await request(server.url, `/data/${remote}/${z}/${x}/${y}.pbf`, TIMEOUT);
        const lt = await request(server.url, `/data/${local}/${z}/${x}/${y}.pbf`, TIMEOUT);
        assert.equal(rt.status, 200, `${remote} ${z}/${x}/${y}: ${rt.body}`);
        assert.equal(lt.status, 200);
        const remoteTile = readMvt(rt.body);
        assert.ok((remoteTile.get(remote)?.features.length ?? 0) > 20, `${remote} ${z}/${x}/${y} holds part of the city`);
        assert.deepEqual(remoteTile.get(remote), readMvt(lt.body).get(local), `${remote} ${z}/${x}/${y}: the local file's features`);
      }
      // A page from the middle of the file (every feature is read for numberMatched), then a box inside the city.
      for (const query of ['limit=200&offset=1800', 'limit=10000&bbox=7.45,51.5,7.46,51.51']) {
        const ri = await getJson<Items>(server.url, `/ogc/collections/${remote}/items?${query}`);
        const li = await getJson<Items>(server.url, `/ogc/collections/${local}/items?${query}`);
        assert.equal(ri.status, 200, JSON.stringify(ri.json));
        assert.ok(ri.json.features.length >= 10, `${remote} ${query}: ${ri.json.features.length} items`);
        assert.deepEqual(renamed(ri.json.features, remote, local), li.json.features, `${remote} ${query}: the local file's items`);
        assert.equal(ri.json.numberMatched, li.json.numberMatched);
        if (!query.includes('bbox')) assert.equal(ri.json.numberMatched, files().count);
      }
    }
  });

  test('a FlatGeobuf read with a wrong secret stops start-up, a GeoParquet object that is missing fails a reload: one line naming the source', async () => {
    const { store, proxy, server } = ctx();
    const url = (key: string) => `${store.scheme}://${store.bucket}/${key}`;
    const denied = url(KEY.fgb);
    const r = await runCli(['--config', writeTempConfig(`[[sources]]\nid = "fgb-denied"\ntype = "flatgeobuf"\npath = "${denied}"\n${store.wrongKeys(proxy.url)}\n`), '--port', '0', '--workers', '1'], store.env);
    const lines = r.stderr.split('\n').filter((l) => l.trim() !== '');
    assert.notEqual(r.code, 0);
    assert.equal(lines.length, 1, lines.join('\n'));
    assert.ok(lines[0].includes(`source "fgb-denied": cannot open FlatGeobuf ${denied}: `), lines[0]);
    assert.match(lines[0], store.deniedReason);

    // The running server: a reload that adds the missing object fails with its line and keeps serving.
    const missing = url('data/absent.parquet');
    const line = await failedReloadLine(server, `[[sources]]\nid = "pq-gone"\ntype = "geoparquet"\npath = "${missing}"\n${store.keys(proxy.url)}`, 'pq-gone');
    assert.ok(line.includes(`source "pq-gone": cannot open GeoParquet ${missing}: `), line);
    assert.match(line, store.missingReason);
    assert.equal((await request(server.url, '/data/pq-gone.json', TIMEOUT)).status, 404);
    assert.equal((await request(server.url, '/data/pq-remote/14/8531/5447.pbf', TIMEOUT)).status, 200, 'the running configuration still serves');
  });

  test('an object replaced in the store: the source reads the new file from its start and answers from it, never from a mix of the two', async () => {
    const { store, server } = ctx();
    const { movedFgb, movedParquet, count } = files();
    const before = await getJson<{ bounds: number[] }>(server.url, '/data/fgb-local.json');
    // The swap sources have read their headers (at start-up and at each reload) and no tile: a tile reads ranges
    // they have not read yet, from an object that is not the one they opened.
    await store.put(KEY.swapFgb, readFixture(movedFgb));
    await store.put(KEY.swapParquet, readFixture(movedParquet));
    const [dx] = copyShift(1);
    for (const id of ['fgb-swap', 'pq-swap']) {
      // The old city's tile: the moved city lies east of it (only a few features reach into its buffer).
      const old = await request(server.url, `/data/${id}/13/4265/2723.pbf`, TIMEOUT);
      assert.ok(old.status === 204 || old.status === 200, `${id}: ${old.status} ${old.body}`);
      if (old.status === 200) assert.ok((readMvt(old.body).get(id)?.features ?? []).every((f) => Number(f.id) > count), `${id}: no feature of the old file`);
      const tj = (await getJson<{ bounds: number[] }>(server.url, `/data/${id}.json`)).json;
      tj.bounds.forEach((b, i) => assert.ok(Math.abs(b - before.json.bounds[i] - (i % 2 === 0 ? dx : 0)) < 1e-6, `${id} bounds ${tj.bounds}`));
      // Replaced again, by something that is not a file of its type: the tile in the middle of the moved city reads
      // ranges not held yet, finds the change, cannot read the new object and says so; the reading it had stays, so
      // once the store holds that file again (the same bytes, the same ETag) the same tile is answered.
      const [w, s, e, n] = tj.bounds;
      const mid = `/data/${id}/13/${Math.floor((((w + e) / 2 + 180) / 360) * 2 ** 13)}/${Math.floor(((1 - Math.asinh(Math.tan((((s + n) / 2) * Math.PI) / 180)) / Math.PI) / 2) * 2 ** 13)}.pbf`;
      const moved = readFixture(id === 'fgb-swap' ? movedFgb : movedParquet);
      await store.put(id === 'fgb-swap' ? KEY.swapFgb : KEY.swapParquet, Buffer.from('this is not a data file'));
      const broken = await request(server.url, mid, TIMEOUT);
      assert.equal(broken.status, 503, `${id} ${mid}: ${broken.status} ${broken.body}`);
      assert.match(JSON.parse(broken.body.toString()).detail as string, new RegExp(`source "${id}": \\S+ was replaced and cannot be read again: `));
      await store.put(id === 'fgb-swap' ? KEY.swapFgb : KEY.swapParquet, moved);
      const fixed = await request(server.url, mid, TIMEOUT);
      assert.equal(fixed.status, 200, `${id} ${mid}: ${fixed.status} ${fixed.body}`);
      assert.ok((readMvt(fixed.body).get(id)?.features ?? []).every((f) => Number(f.id) > count), `${id}: the moved city's features`);
      const items = await getJson<Items>(server.url, `/ogc/collections/${id}/items?limit=200`);
      assert.equal(items.json.numberMatched, count);
      assert.ok(items.json.features.length === 200 && items.json.features.every((f) => f.id > count), `${id}: the moved city's ids`);
    }
  });
}
