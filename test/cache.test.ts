// The [cache] section as it shows from outside: a cached tile is not read from its source again (counted at a
// remote PMTiles archive's HTTP server), ttl_seconds expires entries, enabled = false reads every time, and
// max_size_mb bounds cache_bytes.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { fixture, startServer } from './helpers/server.js';
import { getJson, request, startRangeServer, type RangeServer } from './helpers/foundation.js';

const OMT = fixture('vector/omt-planet-z0-1.pmtiles');

let remote: RangeServer;
before(async () => {
  remote = await startRangeServer(OMT);
});
after(async () => {
  await remote?.close();
});

const source = (url: string) => `[server]\ndisable_render = true\n[[sources]]\nid = "remote"\ntype = "pmtiles"\npath = "${url}"\n`;

/** Range requests the archive's server received while `fn` ran. */
async function remoteReads(fn: () => Promise<unknown>): Promise<number> {
  const before = remote.ranges.length;
  await fn();
  return remote.ranges.length - before;
}

test('a cached tile is served without reading the source again; after ttl_seconds it is read again', async () => {
  // No absolute timing is assumed: the entry is stored between the first request's start and its answer, so a
  // second request answered within ttl_seconds of the first one's start must be a hit, and one sent more than
  // ttl_seconds after the first one's answer must read again. A pair too slow to tell (a loaded machine) is
  // tried again with another tile.
  const TTL_MS = 2000;
  const server = await startServer({ toml: `${source(remote.url)}[cache]\nttl_seconds = ${TTL_MS / 1000}\n` });
  try {
    const get = (zxy: string) => () => request(server.url, `/data/remote/${zxy}.pbf`, { headers: { 'Accept-Encoding': 'gzip' } });
    let decided: { zxy: string; firstAnswered: number } | undefined;
    for (const zxy of ['1/0/0', '1/1/0', '1/0/1', '1/1/1', '0/0/0']) {
      const firstStart = performance.now();
      assert.ok((await remoteReads(get(zxy))) >= 1, `the first request of ${zxy} reads the archive`);
      const firstAnswered = performance.now();
      const reads = await remoteReads(get(zxy));
      if (performance.now() - firstStart >= TTL_MS) continue; // too slow to tell whether the entry had expired
      assert.equal(reads, 0, `the second request of ${zxy} is a cache hit`);
      decided = { zxy, firstAnswered };
      break;
    }
    assert.ok(decided, 'no pair of requests came within ttl_seconds of each other on this machine');
    const wait = decided.firstAnswered + TTL_MS + 200 - performance.now();
    if (wait > 0) await new Promise((r) => setTimeout(r, wait));
    assert.ok((await remoteReads(get(decided.zxy))) >= 1, 'after the ttl the tile is read again');
  } finally {
    await server.stop();
  }
});

test('with enabled = false every request reads the source', async () => {
  const server = await startServer({ toml: `${source(remote.url)}[cache]\nenabled = false\n` });
  try {
    for (let i = 0; i < 3; i++) {
      const reads = await remoteReads(() => request(server.url, '/data/remote/1/1/0.pbf', { headers: { 'Accept-Encoding': 'gzip' } }));
      assert.ok(reads >= 1, `request ${i} read the archive`);
    }
  } finally {
    await server.stop();
  }
});

test('max_size_mb bounds cache_bytes', async () => {
  const budget = 0.25 * 1024 * 1024;
  const server = await startServer({
    toml: `[server]\ndisable_render = true\n[[sources]]\nid = "toner"\ntype = "pmtiles"\npath = "${fixture('raster/stamen-toner-z0-3.pmtiles')}"\n[cache]\nmax_size_mb = 0.25\n`,
  });
  try {
    let served = 0;
    for (let z = 0; z <= 3; z++)
      for (let x = 0; x < 2 ** z; x++)
        for (let y = 0; y < 2 ** z; y++) {
          const res = await request(server.url, `/data/toner/${z}/${x}/${y}.png`);
          if (res.status === 200) served += res.body.length;
        }
    assert.ok(served > 2 * budget, `the test serves more (${served}) than the cache may hold`);
    const { json } = await getJson<{ cache_entries: number; cache_bytes: number }>(server.url, '/ping');
    assert.ok(json.cache_bytes > 0);
    assert.ok(json.cache_bytes <= budget, `cache_bytes ${json.cache_bytes} > ${budget}`);
    assert.ok(json.cache_entries > 0 && json.cache_entries < 85);
  } finally {
    await server.stop();
  }
});
