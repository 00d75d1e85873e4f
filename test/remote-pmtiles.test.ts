// PMTiles over HTTP: the archive is read with range requests from a local HTTP server started here (it
// answers Range with 206, as object storage does). Tiles and TileJSON match the same archive read locally;
// a server that ignores Range, a 404 and an unreachable host each stop start-up with one line. http(s) goes
// through the same shared reader as s3://, gs:// and az:// (src/sources/object-store/reader.ts): an archive
// replaced at the URL is re-opened (new tiles with the new TileJSON, never the old header with the new tiles,
// also after a SIGHUP), 5xx and 429 are retried a bounded number of times, and at most max_concurrent_reads
// requests reach the server at once. Rendered images follow a replaced archive too: their cache keys carry its ETag.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { gunzipSync, gzipSync } from 'node:zlib';
import { Compression, TileType } from 'pmtiles';
import { PNG } from 'pngjs';
import { buildPmtiles, HEADER_BYTES, type PmtilesTileInput } from '../src/seed/pmtiles-writer.js';
import { startTcpProxy, type TcpProxy } from './helpers/object-storage.js';
import { fixture, freePort, runCli, startServer, writeTempConfig, type TestServer } from './helpers/server.js';
import { fileSize, getJson, layerCounts, request, startRangeServer, storedPmtilesTile, tempDir, waitFor, type RangeServer } from './helpers/foundation.js';

const OMT = fixture('vector/omt-planet-z0-1.pmtiles');
const SMALL = fixture('vector/test_fixture_1.pmtiles');

let ranges: RangeServer;
let server: TestServer;

before(async () => {
  ranges = await startRangeServer(OMT);
  server = await startServer({
    toml: `
[server]
disable_render = true
[[sources]]
id = "remote"
type = "pmtiles"
path = "${ranges.url}"
[[sources]]
id = "local"
type = "pmtiles"
path = "${OMT}"
`,
  });
});
after(async () => {
  await server?.stop();
  await ranges?.close();
});

test('a remote archive has the same TileJSON as the local file', async () => {
  const remote = await getJson<Record<string, unknown>>(server.url, '/data/remote.json');
  const local = await getJson<Record<string, unknown>>(server.url, '/data/local.json');
  assert.equal(remote.status, 200);
  const { tiles: rt, ...r } = remote.json;
  const { tiles: lt, ...l } = local.json;
  assert.deepEqual(r, l);
  assert.deepEqual(rt, [`${server.url}/data/remote/{z}/{x}/{y}.pbf`]);
  assert.deepEqual(lt, [`${server.url}/data/local/{z}/{x}/{y}.pbf`]);
  assert.equal(r.maxzoom, 1);
});

test('remote tiles are the stored tiles, fetched with byte ranges only', async () => {
  for (const [z, x, y] of [
    [0, 0, 0],
    [1, 1, 0],
  ]) {
    const stored = (await storedPmtilesTile(OMT, z, x, y))!;
    const sentBefore = ranges.bytesSent();
    const gz = await request(server.url, `/data/remote/${z}/${x}/${y}.pbf`, { headers: { 'Accept-Encoding': 'gzip' } });
    assert.equal(gz.status, 200);
    assert.equal(gz.headers['content-encoding'], 'gzip');
    assert.ok(gz.body.equals(stored), `${z}/${x}/${y}`);
    // A tile costs its own bytes from the remote server (and at most a directory block), not the archive.
    const cost = ranges.bytesSent() - sentBefore;
    assert.ok(cost >= stored.length && cost <= stored.length + 16_384, `${z}/${x}/${y}: ${cost} bytes read for a ${stored.length}-byte tile`);
    const plain = await request(server.url, `/data/remote/${z}/${x}/${y}.pbf`);
    assert.ok(plain.body.equals(gunzipSync(stored)));
    assert.ok(Object.keys(layerCounts(plain.body)).includes('place'));
  }
  assert.ok(ranges.ranges.length > 0);
  for (const r of ranges.ranges) assert.match(r ?? '(none)', /^bytes=\d+-\d+$/, 'every request asked for a byte range');
  assert.ok(ranges.bytesSent() < fileSize(OMT), `${ranges.bytesSent()} bytes read of ${fileSize(OMT)}: not the whole file`);
  assert.equal((await request(server.url, '/data/remote/2/0/0.pbf')).status, 204);
});

/** Starts the CLI on a config with one remote source and returns its stderr lines and exit code. */
async function failedStart(url: string): Promise<{ code: number | null; lines: string[] }> {
  const config = writeTempConfig(`[[sources]]\nid = "far"\ntype = "pmtiles"\npath = "${url}"\n`);
  const r = await runCli(['--config', config, '--port', '0', '--workers', '1']);
  return { code: r.code, lines: r.stderr.split('\n').filter((l) => l.trim() !== '') };
}

test('a server that ignores Range stops start-up with one line naming the source', async () => {
  const naive = await startRangeServer(OMT, { honourRange: false });
  try {
    const { code, lines } = await failedStart(naive.url);
    assert.notEqual(code, 0);
    assert.equal(lines.length, 1, lines.join('\n'));
    assert.match(lines[0], /"far"/);
    assert.match(lines[0], /range|byte serving/i);
  } finally {
    await naive.close();
  }
});

test('a missing remote archive and an unreachable host each stop start-up with one line', async () => {
  for (const url of [ranges.url.replace(/[^/]+$/, 'absent.pmtiles'), `http://127.0.0.1:${await freePort()}/x.pmtiles`]) {
    const { code, lines } = await failedStart(url);
    assert.notEqual(code, 0, url);
    assert.equal(lines.length, 1, lines.join('\n'));
    assert.match(lines[0], /"far"/);
    assert.ok(lines[0].includes(url), `the line names the URL: ${lines[0]}`);
  }
});

describe('the shared reader over http(s)', () => {
  let swap: RangeServer;
  let flaky: RangeServer;
  let busy: RangeServer;
  let deaf: RangeServer;
  let svc: TestServer;
  const gz = { headers: { 'Accept-Encoding': 'gzip' }, timeoutMs: 20_000 };

  before(async () => {
    [swap, flaky, busy, deaf] = await Promise.all([startRangeServer(OMT), startRangeServer(OMT), startRangeServer(OMT), startRangeServer(OMT, { honourIfMatch: false })]);
    svc = await startServer({
      toml: `
[server]
disable_render = true
[cache]
enabled = false
[storage]
read_retries = 2
max_concurrent_reads = 2
[[sources]]
id = "swap"
type = "pmtiles"
path = "${swap.url}"
[[sources]]
id = "flaky"
type = "pmtiles"
path = "${flaky.url}"
[[sources]]
id = "busy"
type = "pmtiles"
path = "${busy.url}"
[[sources]]
id = "deaf"
type = "pmtiles"
path = "${deaf.url}"
`,
    });
  });
  after(async () => {
    await svc?.stop();
    await Promise.all([swap?.close(), flaky?.close(), busy?.close(), deaf?.close()]);
  });

  test('an archive replaced at the URL: the new tiles come with the new TileJSON, never the old header; a SIGHUP re-reads it too', async () => {
    const omt = (await storedPmtilesTile(OMT, 0, 0, 0))!;
    const small = (await storedPmtilesTile(SMALL, 0, 0, 0))!;
    assert.ok((await request(svc.url, '/data/swap/0/0/0.pbf', gz)).body.equals(omt));
    assert.equal((await getJson<{ maxzoom: number }>(svc.url, '/data/swap.json')).json.maxzoom, 1);

    swap.replace(SMALL);
    const tile = await request(svc.url, '/data/swap/0/0/0.pbf', gz);
    assert.equal(tile.status, 200);
    assert.ok(tile.body.equals(small), 'the tile is the new archive\'s');
    const tj = await getJson<{ maxzoom: number; bounds: number[] }>(svc.url, '/data/swap.json');
    assert.equal(tj.json.maxzoom, 0, 'and the TileJSON is the new header');
    assert.deepEqual(tj.json.bounds.map((b) => Math.round(b)), [0, 0, 1, 1]);
    assert.equal((await request(svc.url, '/data/swap/1/0/0.pbf', gz)).status, 204);

    // Replaced again, and only a SIGHUP (an unchanged configuration) between: the TileJSON follows without a tile read.
    swap.replace(OMT);
    process.kill(svc.proc.pid!, 'SIGHUP');
    await waitFor('the TileJSON after SIGHUP', async () => ((await getJson<{ maxzoom: number }>(svc.url, '/data/swap.json')).json.maxzoom === 1 ? true : undefined));
    assert.ok((await request(svc.url, '/data/swap/0/0/0.pbf', gz)).body.equals(omt));
  });

  test('a server that ignores If-Match: an archive replaced by a shorter one (416 for the old ranges) is re-opened too', async () => {
    assert.ok((await request(svc.url, '/data/deaf/0/0/0.pbf', gz)).body.equals((await storedPmtilesTile(OMT, 0, 0, 0))!));
    deaf.replace(SMALL);
    const tile = await request(svc.url, '/data/deaf/0/0/0.pbf', gz);
    assert.equal(tile.status, 200, tile.body.toString());
    assert.ok(tile.body.equals((await storedPmtilesTile(SMALL, 0, 0, 0))!), 'the tile is the new archive\'s');
    assert.equal((await getJson<{ maxzoom: number }>(svc.url, '/data/deaf.json')).json.maxzoom, 0);
  });

  test('an archive replaced by something that is not PMTiles: 503 naming the reason, the old header stays, and the fixed object serves again', async () => {
    swap.replace(fixture('cog/dem-small.cog.tif'));
    const broken = await request(svc.url, '/data/swap/1/0/0.pbf', gz);
    assert.equal(broken.status, 503);
    assert.match(JSON.parse(broken.body.toString()).detail as string, /source "swap": cannot re-open PMTiles .*not a PMTiles archive/);
    assert.equal((await getJson<{ maxzoom: number }>(svc.url, '/data/swap.json')).json.maxzoom, 1, 'the header of the archive last opened');
    swap.replace(OMT);
    const fixed = await request(svc.url, '/data/swap/1/0/0.pbf', gz);
    assert.equal(fixed.status, 200);
    assert.ok(fixed.body.equals((await storedPmtilesTile(OMT, 1, 0, 0))!));
  });

  test('5xx and 429 answers are retried with back-off, a bounded number of times', async () => {
    const want = (await storedPmtilesTile(OMT, 1, 0, 0))!;
    for (const status of [503, 429]) {
      const before = flaky.answered();
      flaky.failNext(2, status);
      const r = await request(svc.url, '/data/flaky/1/0/0.pbf', gz);
      assert.equal(r.status, 200, `${status}: ${r.body}`);
      assert.ok(r.body.equals(want));
      const after = flaky.answered();
      assert.equal(after.failed - before.failed, 2, `two ${status}s, then the bytes`);
      assert.equal(after.ok - before.ok, 1);
    }
    const before = flaky.answered();
    flaky.failNext(100, 500);
    const r = await request(svc.url, '/data/flaky/1/1/1.pbf', gz);
    flaky.failNext(0, 500);
    assert.equal(r.status, 503);
    assert.ok(Number(r.headers['retry-after']) > 0);
    assert.equal(flaky.answered().failed - before.failed, 3, 'read_retries = 2: three attempts, then 503');
  });

  test('at most max_concurrent_reads requests reach the server at once', async () => {
    busy.setDelay(300);
    try {
      const asks = [];
      for (const [z, x, y] of [
        [0, 0, 0],
        [1, 0, 0],
        [1, 0, 1],
        [1, 1, 0],
        [1, 1, 1],
      ]) {
        // gzip and identity are two productions of the tile (two cache keys): ten reads asked for at once.
        asks.push(request(svc.url, `/data/busy/${z}/${x}/${y}.pbf`, gz), request(svc.url, `/data/busy/${z}/${x}/${y}.pbf`, { timeoutMs: 20_000 }));
      }
      const answers = await Promise.all(asks);
      assert.deepEqual(new Set(answers.map((a) => a.status)), new Set([200]));
      assert.equal(busy.maxActive(), 2);
    } finally {
      busy.setDelay(0);
    }
  });
});

describe('a replaced archive with the tile cache on', () => {
  let swap: RangeServer;
  let svc: TestServer;
  before(async () => {
    swap = await startRangeServer(OMT);
    svc = await startServer({ toml: `[server]\ndisable_render = true\n[[sources]]\nid = "swap"\ntype = "pmtiles"\npath = "${swap.url}"\n` });
  });
  after(async () => {
    await svc?.stop();
    await swap?.close();
  });

  test('tiles cached from the old archive are not served with the new header', async () => {
    const gz = { headers: { 'Accept-Encoding': 'gzip' }, timeoutMs: 20_000 };
    const omt = (await storedPmtilesTile(OMT, 0, 0, 0))!;
    const first = await request(svc.url, '/data/swap/0/0/0.pbf', gz);
    assert.ok(first.body.equals(omt));

    swap.replace(SMALL);
    // A tile not in the cache reads the store, which notices the new ETag: the archive is re-opened.
    await request(svc.url, '/data/swap/1/0/1.pbf', gz);
    assert.equal((await getJson<{ maxzoom: number }>(svc.url, '/data/swap.json')).json.maxzoom, 0);
    const again = await request(svc.url, '/data/swap/0/0/0.pbf', gz);
    assert.ok(again.body.equals((await storedPmtilesTile(SMALL, 0, 0, 0))!), 'the cached tile of the old archive is not served with the new header');
  });
});

describe('an archive with leaf directories through an outage', () => {
  let ranges: RangeServer;
  let proxy: TcpProxy;
  let svc: TestServer;
  const tiles: PmtilesTileInput[] = [];
  for (let z = 0; z <= 5; z++) for (let x = 0; x < 2 ** z; x++) for (let y = 0; y < 2 ** z; y++) tiles.push({ z, x, y, data: gzipSync(`tile ${z}/${x}/${y}`) });

  before(async () => {
    // A root of at most 40 bytes over 1,365 tiles: leaf directories (16 entries and up), each its own read.
    const file = path.join(tempDir('tsts-leaves-'), 'leaves.pmtiles');
    writeFileSync(
      file,
      buildPmtiles(tiles, { tileType: TileType.Mvt, tileCompression: Compression.Gzip, bounds: [-180, -85, 180, 85], center: [0, 0, 0], metadata: { vector_layers: [] }, leafSize: 16, maxRootBytes: HEADER_BYTES + 40 }),
    );
    ranges = await startRangeServer(file);
    proxy = await startTcpProxy(Number(new URL(ranges.url).port));
    svc = await startServer({
      toml: `[server]\ndisable_render = true\n[cache]\nenabled = false\n[storage]\nread_retries = 0\n[[sources]]\nid = "leaves"\ntype = "pmtiles"\npath = "${proxy.url}/leaves.pmtiles"\n`,
    });
  });
  after(async () => {
    await svc?.stop();
    await proxy?.close();
    await ranges?.close();
  });

  test('a leaf directory whose read failed during the outage is read again once the store is back', async () => {
    const gz = { headers: { 'Accept-Encoding': 'gzip' }, timeoutMs: 20_000 };
    const first = await request(svc.url, '/data/leaves/0/0/0.pbf', gz);
    assert.equal(first.status, 200);
    assert.equal(gunzipSync(first.body).toString(), 'tile 0/0/0');
    await proxy.stop();
    try {
      // 5/31/31 sits in a leaf not read yet (not 0/0/0's): its directory read fails now.
      assert.equal((await request(svc.url, '/data/leaves/5/31/31.pbf', gz)).status, 503);
    } finally {
      await proxy.start();
    }
    const back = await request(svc.url, '/data/leaves/5/31/31.pbf', gz);
    assert.equal(back.status, 200, back.body.toString());
    assert.equal(gunzipSync(back.body).toString(), 'tile 5/31/31');
  });
});

describe('rendered images of a replaced archive', () => {
  let swap: RangeServer;
  let svc: TestServer | undefined;
  let toml: string;
  const render = { timeoutMs: 90_000 };

  /** Pixels drawn in the style's water colour: the OMT archive has a water layer, the small one has none. */
  function waterPixels(png: Buffer): number {
    const { data } = PNG.sync.read(png);
    let n = 0;
    for (let i = 0; i < data.length; i += 4) if (data[i] < 80 && data[i + 1] < 130 && data[i + 2] > 170) n++;
    return n;
  }
  const timing = (r: { headers: Record<string, unknown> }) => String(r.headers['server-timing'] ?? '');
  const stale = (r: { headers: Record<string, unknown> }) => /fwd=stale/.test(String(r.headers['cache-status'] ?? ''));
  /**
   * The tile once the replacement's expiry has been drawn: an image of the old archive may be answered meanwhile,
   * but only marked stale (`old` says whether an answer shows the old archive).
   */
  const settled = (url: string, old: (png: Buffer) => boolean) =>
    waitFor(
      'a fresh answer',
      async () => {
        const r = await request(url, '/styles/water/0/0/0.png', render);
        assert.equal(r.status, 200, r.body.toString());
        if (old(r.body)) assert.ok(stale(r), 'an image of the old archive is answered only marked stale');
        return stale(r) ? undefined : r;
      },
      60_000,
    );

  before(async () => {
    const dir = tempDir('tsts-remote-render-');
    const style = path.join(dir, 'water.json');
    writeFileSync(
      style,
      JSON.stringify({
        version: 8,
        sources: { swap: { type: 'vector', url: 'source://swap' } },
        layers: [
          { id: 'land', type: 'background', paint: { 'background-color': '#e8e0d0' } },
          { id: 'water', type: 'fill', source: 'swap', 'source-layer': 'water', paint: { 'fill-color': '#3366cc', 'fill-antialias': false } },
        ],
      }),
    );
    swap = await startRangeServer(OMT);
    // The render caches on disk live in `[cache] dir`, which outlives the server: a restart reads them back.
    toml = `[cache]\ndir = "${path.join(dir, 'cache')}"\n[render]\npool_size = 1\npages_per_browser = 1\n[[sources]]\nid = "swap"\ntype = "pmtiles"\npath = "${swap.url}"\n[[styles]]\nid = "water"\npath = "${style}"\n`;
    svc = await startServer({ toml });
  });
  after(async () => {
    await svc?.stop();
    await swap?.close();
  });

  test('a replaced archive changes the rendered tile: neither the memory nor the disk cache serves the old image as fresh', async () => {
    const first = await request(svc!.url, '/styles/water/0/0/0.png', render);
    assert.equal(first.status, 200, first.body.toString());
    assert.ok(waterPixels(first.body) > 1000, 'the OMT archive draws water');
    assert.match(timing(await request(svc!.url, '/styles/water/0/0/0.png', render)), /cache;desc="memory"/);

    // Replaced while the server is down: the restarted server opens the new object, and its disk cache holds the
    // old archive's image under the URL (the key does not name the ETag); the record of served archives expires the
    // whole source at the start, so that image is at most answered stale while it is drawn again.
    await svc!.stop();
    svc = undefined;
    swap.replace(SMALL);
    svc = await startServer({ toml });
    const restarted = await settled(svc.url, (png) => waterPixels(png) > 0);
    assert.equal(waterPixels(restarted.body), 0, 'the small archive has no water');

    // Replaced while the server runs: a SIGHUP with the configuration unchanged keeps the state (and its caches)
    // and re-opens the archive, as the first tile read of a changed object would.
    swap.replace(OMT);
    process.kill(svc.proc.pid!, 'SIGHUP');
    const s = svc;
    await waitFor('the new header', async () => ((await getJson<{ maxzoom: number }>(s.url, '/data/swap.json')).json.maxzoom === 1 ? true : undefined));
    const live = await settled(s.url, (png) => waterPixels(png) === 0);
    assert.ok(waterPixels(live.body) > 1000, 'the rendered tile is the OMT archive\'s again');
    // Never rendered before: the page that drew the small archive must not draw from the tiles it parsed then.
    const fresh = await request(svc.url, '/styles/water/256/0/0/0.png', render);
    assert.equal(fresh.status, 200, fresh.body.toString());
    assert.doesNotMatch(timing(fresh), /cache;desc=/);
    assert.ok(waterPixels(fresh.body) > 250, 'a new render draws the OMT archive\'s water');
  });
});

describe('a slow store with more cold reads than slots', () => {
  const TIMEOUT_MS = 1000;
  let slow: RangeServer;
  let svc: TestServer;
  before(async () => {
    slow = await startRangeServer(OMT);
    svc = await startServer({
      toml: `[server]\ndisable_render = true\n[cache]\nenabled = false\n[storage]\nread_timeout_ms = ${TIMEOUT_MS}\nread_retries = 0\nmax_concurrent_reads = 1\n[[sources]]\nid = "slow"\ntype = "pmtiles"\npath = "${slow.url}"\n`,
    });
  });
  after(async () => {
    await svc?.stop();
    await slow?.close();
  });

  test('read_timeout_ms bounds the wait for a slot too: every request answers 503 with Retry-After in about the timeout', async () => {
    // Far longer than the timeout: one slot, six reads. Queued one after another, the last would wait six timeouts.
    slow.setDelay(30_000);
    try {
      const tiles = ['0/0/0', '1/0/0', '1/0/1', '1/1/0', '1/1/1'];
      const asks = [...tiles.map((t) => `/data/slow/${t}.pbf`), '/data/slow/0/0/0.mvt'].map(async (p) => {
        const t0 = performance.now();
        const r = await request(svc.url, p, { headers: { 'Accept-Encoding': 'gzip' }, timeoutMs: 20_000 });
        return { p, status: r.status, retryAfter: Number(r.headers['retry-after']), ms: performance.now() - t0 };
      });
      for (const a of await Promise.all(asks)) {
        assert.equal(a.status, 503, a.p);
        assert.ok(a.retryAfter > 0, `${a.p}: Retry-After`);
        assert.ok(a.ms < 3 * TIMEOUT_MS, `${a.p} answered after ${Math.round(a.ms)} ms, more than 3 x read_timeout_ms`);
      }
    } finally {
      slow.setDelay(0);
    }
  });
});
