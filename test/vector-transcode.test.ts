// MVT <-> MLT through the real server, judged against the MLT reference encoder's fixture pairs
// (fixtures/vector/omt-tiles) with the reference decoders: (a) every MVT served as .mlt decodes to the source
// MVT's features; (b) every reference .mlt served as .pbf decodes to the reference .mvt's features. Also: MLT
// detection (PMTiles type 6, MBTiles "mlt" and by bytes), MLT TileJSON, raw MLT served unchanged, gzip both
// ways, caching of transcoded tiles, the fallback on a failed transcode, and transcoding off the event loop.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { waitFor } from './helpers/foundation.js';
import { fixture, startServer, type TestServer } from './helpers/server.js';
import { buildVectorArchives, omtPairs, type VectorArchives } from './helpers/vector-archives.js';
import { comparableProps, featureCount, get, getJson, loadZstd, readMlt, readMvt, type PlainTile } from './helpers/vector-tiles.js';

const MLT_TYPE = 'application/vnd.open-vector-tile';
const MVT_TYPE = 'application/x-protobuf';
const TWO_POW_32 = 2 ** 32;

const uint64 = (id: number | bigint) => BigInt.asUintN(64, BigInt(id));

/** Same layers, same features in the same order: geometry type, geometry and properties. Ids are checked by the caller. */
function assertSameFeatures(actual: PlainTile, expected: PlainTile, label: string): void {
  assert.deepEqual([...actual.keys()].sort(), [...expected.keys()].sort(), `${label}: layer names`);
  for (const [name, exp] of expected) {
    const act = actual.get(name)!;
    assert.equal(act.extent, exp.extent, `${label}/${name}: extent`);
    assert.equal(act.features.length, exp.features.length, `${label}/${name}: feature count`);
    exp.features.forEach((e, i) => {
      const a = act.features[i];
      assert.equal(a.type, e.type, `${label}/${name}#${i}: geometry type`);
      assert.deepEqual(a.geometry, e.geometry, `${label}/${name}#${i}: geometry`);
      assert.deepEqual(comparableProps(a.properties), comparableProps(e.properties), `${label}/${name}#${i}: properties`);
    });
  }
}

let server: TestServer;
let archives: VectorArchives;
const pairs = omtPairs();

before(async () => {
  archives = buildVectorArchives();
  const src = (id: string, type: string, path: string) => `[[sources]]\nid = "${id}"\ntype = "${type}"\npath = "${path}"\n`;
  server = await startServer({
    toml:
      src('mltpm', 'pmtiles', archives.mltPmtiles) +
      src('mvtpm', 'pmtiles', archives.mvtPmtiles) +
      src('mvtpm_cold', 'pmtiles', archives.mvtPmtiles) +
      src('mltmb', 'mbtiles', archives.mltMbtiles) +
      src('mltbytes', 'mbtiles', archives.mltBytesMbtiles) +
      src('broken', 'mbtiles', archives.brokenMltMbtiles) +
      src('planet', 'pmtiles', fixture('vector/omt-planet-z0-1.pmtiles')) +
      src('monaco', 'pmtiles', fixture('vector/monaco-mlt.pmtiles')),
  });
});
after(async () => {
  await server?.stop();
});

describe('transcoding off the event loop', () => {
  test('other requests are answered while a big tile is transcoded', async () => {
    // The 1 MB tile 5/16/10 takes a long time to encode as MLT. Inline, the event loop would be blocked for the
    // whole encode: /health requests sent back to back would see one gap about as long as the tile itself. Off
    // the loop they keep coming back. Judged relative to the tile's own time, not by any absolute figure: the
    // longest wait for a /health answer while the tile is in flight must be well under half the tile's time.
    const big = pairs.find((p) => p.name === '5_16_21')!;
    let tileDone = false;
    const start = performance.now();
    const tile = get(`${server.url}/data/mvtpm_cold/${big.z}/${big.x}/${big.y}.mlt`).then((r) => ((tileDone = true), r));
    const waits: number[] = [];
    while (!tileDone) {
      const sent = performance.now();
      const h = await get(`${server.url}/health`);
      assert.equal(h.status, 200);
      waits.push(performance.now() - sent);
    }
    const res = await tile;
    const tileMs = performance.now() - start;
    assert.equal(res.status, 200);
    assert.equal(readMlt(res.body).size, readMvt(big.mvt).size, 'the transcoded tile has every layer');
    assert.ok(waits.length >= 2, `only ${waits.length} /health requests fit in the ${tileMs.toFixed(0)} ms of the tile`);
    assert.ok(Math.max(...waits) < tileMs / 2, `a /health answer waited ${Math.max(...waits).toFixed(0)} ms of the tile's ${tileMs.toFixed(0)} ms`);
  });
});

describe('MVT -> MLT, judged against the source MVT', () => {
  for (const p of pairs) {
    test(`${p.name} (XYZ ${p.z}/${p.x}/${p.y})`, async () => {
      const res = await get(`${server.url}/data/mvtpm/${p.z}/${p.x}/${p.y}.mlt`, { 'accept-encoding': 'gzip' });
      assert.equal(res.status, 200);
      assert.equal(res.headers['content-type'], MLT_TYPE);
      assert.equal(res.headers['content-encoding'], 'gzip');
      const served = readMlt(res.body);
      const source = readMvt(p.mvt);
      assertSameFeatures(served, source, p.name);
      const reference = readMlt(p.mlt);
      for (const [name, layer] of source) {
        layer.features.forEach((f, i) => {
          const id = served.get(name)!.features[i].id;
          if (f.id === undefined) return assert.equal(id, undefined, `${name}#${i}: no id`);
          assert.notEqual(id, undefined, `${name}#${i}: id kept`);
          assert.equal(Number(id), f.id, `${name}#${i}: id`);
          // Exactly, bit for bit, where the reference encoder kept a 64-bit id (as a negative int64).
          const ref = reference.get(name)!.features[i].id;
          if (ref !== undefined && ref < 0) assert.equal(uint64(id!), uint64(ref), `${name}#${i}: 64-bit id`);
        });
      }
    });
  }
});

describe('MLT -> MVT, judged against the reference MVT', () => {
  for (const p of pairs) {
    test(`${p.name} (XYZ ${p.z}/${p.x}/${p.y})`, async () => {
      const res = await get(`${server.url}/data/mltpm/${p.z}/${p.x}/${p.y}.pbf`);
      assert.equal(res.status, 200);
      assert.equal(res.headers['content-type'], MVT_TYPE);
      assert.equal(res.headers['content-encoding'], undefined);
      const served = readMvt(res.body);
      const expected = readMvt(p.mvt);
      assertSameFeatures(served, expected, p.name);
      const fromMlt = readMlt(p.mlt);
      for (const [name, layer] of expected) {
        layer.features.forEach((f, i) => {
          const ours = served.get(name)!.features[i].id;
          const mltId = fromMlt.get(name)!.features[i].id;
          // The MLT's id is carried over exactly (a negative int64 becomes its uint64 two's complement) ...
          assert.equal(ours, mltId === undefined ? undefined : Number(uint64(mltId)), `${name}#${i}: id from the MLT`);
          // ... and equals the reference MVT's, except where the reference encoder cut a 64-bit id to 32 bits.
          const truncatedByReference = mltId !== undefined && f.id !== undefined && f.id >= TWO_POW_32 && uint64(mltId) < TWO_POW_32;
          if (!truncatedByReference) assert.equal(ours, f.id, `${name}#${i}: id`);
        });
      }
    });
  }
});

describe('MLT sources', () => {
  test('TileJSON of MLT sources: encoding and format mlt, .mlt tile URLs', async () => {
    for (const id of ['mltpm', 'mltmb', 'mltbytes', 'monaco']) {
      const { status, body } = await getJson<{ encoding?: string; format: string; tiles: string[] }>(`${server.url}/data/${id}.json`);
      assert.equal(status, 200, id);
      assert.equal(body.encoding, 'mlt', id);
      assert.equal(body.format, 'mlt', id);
      assert.equal(body.tiles[0], `${server.url}/data/${id}/{z}/{x}/{y}.mlt`, id);
    }
    const mvt = await getJson<{ encoding?: string; format: string; tiles: string[] }>(`${server.url}/data/mvtpm.json`);
    assert.equal(mvt.body.encoding, undefined);
    assert.equal(mvt.body.format, 'pbf');
    assert.match(mvt.body.tiles[0], /\.pbf$/);
  });

  test('MLT tiles are served unchanged with the MLT content type (PMTiles gzip, MBTiles by format and by bytes)', async () => {
    for (const p of pairs.slice(0, 4)) {
      const zxy = `${p.z}/${p.x}/${p.y}`;
      const gz = await get(`${server.url}/data/mltpm/${zxy}.mlt`, { 'accept-encoding': 'gzip' });
      assert.equal(gz.headers['content-type'], MLT_TYPE);
      assert.equal(gz.headers['content-encoding'], 'gzip', 'stored gzip passes through');
      assert.ok(gz.body.equals(p.mlt), `${zxy}: gzip body is the MLT`);
      const plain = await get(`${server.url}/data/mltpm/${zxy}.mlt`);
      assert.equal(plain.headers['content-encoding'], undefined);
      assert.ok(plain.raw.equals(p.mlt), `${zxy}: identity body is the MLT`);
      for (const id of ['mltmb', 'mltbytes']) {
        const r = await get(`${server.url}/data/${id}/${zxy}.mlt`);
        assert.equal(r.status, 200);
        assert.equal(r.headers['content-type'], MLT_TYPE, id);
        assert.ok(r.raw.equals(p.mlt), `${id} ${zxy}: body is the MLT`);
      }
    }
  });

  test('.pbf of an MBTiles MLT source (recognised by its bytes) is the reference MVT', async () => {
    const p = pairs.find((x) => x.name === '13_4265_5468')!;
    const r = await get(`${server.url}/data/mltbytes/${p.z}/${p.x}/${p.y}.pbf`);
    assert.equal(r.headers['content-type'], MVT_TYPE);
    assertSameFeatures(readMvt(r.body), readMvt(p.mvt), p.name);
  });

  test('monaco-mlt.pmtiles: MLT metadata but no tiles, so 204 in both formats', async () => {
    for (const path of ['0/0/0.mlt', '0/0/0.pbf', '1/1/0.mlt']) {
      const r = await get(`${server.url}/data/monaco/${path}`);
      assert.equal(r.status, 204, path);
      assert.equal(r.raw.length, 0);
    }
  });
});

describe('encodings, caching, failures', () => {
  test('gzip MVT source to MLT and back: every client encoding gives the same features', async () => {
    const stored = await get(`${server.url}/data/planet/1/1/0.pbf`);
    assert.equal(stored.headers['content-encoding'], undefined, 'identity when the client sends no Accept-Encoding');
    const source = readMvt(stored.body);
    assert.ok(featureCount(source) > 100);
    await loadZstd();
    // The transcode runs in the pool thread and so does the compression of its output (zstd there too).
    for (const enc of [undefined, 'gzip', 'br', 'zstd']) {
      const r = await get(`${server.url}/data/planet/1/1/0.mlt`, enc ? { 'accept-encoding': enc } : {});
      assert.equal(r.status, 200);
      assert.equal(r.headers['content-type'], MLT_TYPE);
      assert.equal(r.headers['content-encoding'], enc, `content encoding ${enc}`);
      assertSameFeatures(readMlt(r.body), source, `planet .mlt (${enc ?? 'identity'})`);
    }
    const back = await get(`${server.url}/data/mltpm/0/0/0.mvt`, { 'accept-encoding': 'gzip' });
    assert.equal(back.headers['content-encoding'], 'gzip');
    assertSameFeatures(readMvt(back.body), readMvt(pairs[0].mvt), '.mvt alias of gzip MLT source');
  });

  test('transcoded tiles are cached: one new cache entry, the same ETag, then 304', async () => {
    const p = pairs.find((x) => x.name === '12_2130_2733')!;
    // A source and tile no other test asks for as .pbf, so the first request is a miss.
    const url = `${server.url}/data/mltmb/${p.z}/${p.x}/${p.y}.pbf`;
    const entries = async () => (await getJson<{ cache_entries: number }>(`${server.url}/ping`)).body.cache_entries;
    const before = await entries();
    const first = await get(url);
    assert.equal(await entries(), before + 1);
    const second = await get(url);
    assert.equal(await entries(), before + 1, 'the second request is a cache hit');
    assert.equal(second.headers.etag, first.headers.etag);
    assert.ok(second.raw.equals(first.raw));
    const conditional = await get(url, { 'if-none-match': String(first.headers.etag) });
    assert.equal(conditional.status, 304);
  });

  test('a tile that cannot be transcoded is served as stored, with a warning in the log', async () => {
    const good = await get(`${server.url}/data/broken/0/0/0.pbf`);
    assert.equal(good.headers['content-type'], MVT_TYPE);
    const bad = await get(`${server.url}/data/broken/1/0/0.pbf`);
    assert.equal(bad.status, 200);
    assert.equal(bad.headers['content-type'], MLT_TYPE, 'the original bytes keep their own type');
    const truncated = pairs[0].mlt.subarray(0, Math.floor(pairs[0].mlt.length / 3));
    assert.ok(bad.raw.equals(truncated), 'the stored bytes, unchanged');
    // The log line is written asynchronously: wait for it (an event on the output), not for a fixed time.
    const line = await waitFor('the transcoding warning in the log', () =>
      server
        .output()
        .split('\n')
        .find((l) => l.includes('tile transcoding failed; serving the stored tile unchanged')),
    );
    assert.match(line, /"source":"broken"/);
  });

  test('raster sources are not transcoded: 400 naming the formats', async () => {
    const s = await startServer({ toml: `[[sources]]\nid = "toner"\ntype = "pmtiles"\npath = "${fixture('raster/stamen-toner-z0-3.pmtiles')}"\n` });
    try {
      const r = await fetch(`${s.url}/data/toner/0/0/0.pbf`);
      assert.equal(r.status, 400);
      assert.equal(r.headers.get('content-type'), 'application/problem+json');
      assert.match(((await r.json()) as { detail: string }).detail, /png.*pbf/);
    } finally {
      await s.stop();
    }
  });
});
