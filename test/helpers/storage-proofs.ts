// The proofs every object-storage provider owes, run against a real storage server that a test file
// starts: tiles byte-for-byte equal to the local file, TileJSON from the remote header, wrong credentials and a
// missing object stop start-up with one line, a replaced object is re-opened (new tiles and new TileJSON, never
// the old header with the new tiles, and a reload reads the new header), an outage answers 503 for that source
// only and recovers without a restart, a slow store answers 503 by the read timeout, and the storage metrics
// count it all. Between the server under test and the store sits a TCP proxy (outage, delay). FlatGeobuf and
// GeoParquet sources in the same store, served by the same server, have proofs of their own (storage-file-proofs.ts).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { fixture, freePort, runCli, startServer, writeTempConfig, type TestServer } from './server.js';
import { getJson, request, storedPmtilesTile, tempDir, waitFor } from './foundation.js';
import { rangeFileProofs, rangeFileSources, uploadRangeFiles, writeRangeFiles, type RangeFiles } from './storage-file-proofs.js';
import { readFixture, startTcpProxy, type TcpProxy } from './object-storage.js';
import { parseScrape } from './prom-text.js';

export const OMT = fixture('vector/omt-planet-z0-1.pmtiles');
/** A different archive (one tile at z0, bounds 0..1 degrees) that replaces OMT in the bucket. */
export const SMALL = fixture('vector/test_fixture_1.pmtiles');

/** The XYZ tile holding a point at zoom z. */
export function tileAt(lon: number, lat: number, z: number): [number, number] {
  const n = 2 ** z;
  const x = Math.floor(((lon + 180) / 360) * n);
  const r = (lat * Math.PI) / 180;
  const y = Math.floor(((1 - Math.log(Math.tan(r) + 1 / Math.cos(r)) / Math.PI) / 2) * n);
  return [x, y];
}

/**
 * Appends `sources` (TOML) to a running server's configuration file and sends SIGHUP; resolves with the log line of
 * the reload that fails on source `id`, its JSON-escaped quotes undone. The file is put back before it resolves.
 */
export async function failedReloadLine(server: TestServer, sources: string, id: string): Promise<string> {
  const file = server.configFile!;
  const before = readFileSync(file, 'utf8');
  const seen = server.output().length;
  writeFileSync(file, `${before}\n${sources}\n`);
  try {
    process.kill(server.proc.pid!, 'SIGHUP');
    const line = await waitFor(`the failed reload naming "${id}" in the log`, () => server.output().slice(seen).split('\n').find((l) => l.includes(`source \\"${id}\\"`) || l.includes(`source "${id}"`)));
    return line.replaceAll('\\"', '"');
  } finally {
    writeFileSync(file, before);
  }
}

export interface StoreUnderTest {
  /** s3, gs or az */
  scheme: string;
  /** Bucket or container. */
  bucket: string;
  /** Port of the real storage server (the proxy forwards to it). */
  port: number;
  /** Writes an object straight to the server (not through the proxy). */
  put(key: string, body: Uint8Array): Promise<void>;
  /** TOML lines of a source reading through `endpoint` with valid credentials (secrets as `${VAR}` of `env`). */
  keys(endpoint: string): string;
  /** The same with a wrong secret. */
  wrongKeys(endpoint: string): string;
  env: Record<string, string>;
  /** The provider's reason for the wrong secret, and for a missing object. */
  deniedReason: RegExp;
  missingReason: RegExp;
  stop(): Promise<void>;
}

export interface ProofContext {
  store: StoreUnderTest;
  proxy: TcpProxy;
  server: TestServer;
}

const TIMEOUT = { timeoutMs: 20_000 };
const gz = { headers: { 'Accept-Encoding': 'gzip' }, ...TIMEOUT };

/** Registers the proofs for one provider; `extraSources` adds TOML (e.g. a COG) to the server under test. */
export function storageProofs(start: () => Promise<StoreUnderTest>, extraSources: (store: StoreUnderTest, endpoint: string) => Promise<string> = async () => ''): () => ProofContext {
  let store: StoreUnderTest;
  let proxy: TcpProxy;
  let server: TestServer;
  let metricsPort: number;
  let files: RangeFiles;
  const path = (key: string) => `${store.scheme}://${store.bucket}/${key}`;

  before(async () => {
    store = await start();
    files = writeRangeFiles(tempDir('tsts-range-files-'));
    await store.put('planet/omt.pmtiles', readFixture(OMT));
    await store.put('planet/swap.pmtiles', readFixture(OMT));
    await uploadRangeFiles(store, files);
    proxy = await startTcpProxy(store.port);
    metricsPort = await freePort();
    const toml = `
[server]
disable_render = true
[cache]
enabled = false
[storage]
read_timeout_ms = 1000
read_retries = 1
[telemetry]
scrape_bind = "127.0.0.1:${metricsPort}"
[[sources]]
id = "remote"
type = "pmtiles"
path = "${path('planet/omt.pmtiles')}"
${store.keys(proxy.url)}
[[sources]]
id = "swap"
type = "pmtiles"
path = "${path('planet/swap.pmtiles')}"
${store.keys(proxy.url)}
[[sources]]
id = "local"
type = "pmtiles"
path = "${OMT}"
${rangeFileSources(path, store.keys(proxy.url), files)}
${await extraSources(store, proxy.url)}
`;
    // The TOML first: a store may derive its environment from the endpoints its keys were asked for.
    server = await startServer({ env: store.env, toml });
  });
  after(async () => {
    await server?.stop();
    await proxy?.close();
    await store?.stop();
  });

  test('tiles are the local file\'s bytes and the TileJSON comes from the remote header', async () => {
    const remote = await getJson<Record<string, unknown>>(server.url, '/data/remote.json');
    const local = await getJson<Record<string, unknown>>(server.url, '/data/local.json');
    assert.equal(remote.status, 200);
    const { tiles: rt, ...r } = remote.json;
    const { tiles: lt, ...l } = local.json;
    assert.deepEqual(r, l);
    assert.deepEqual(rt, [`${server.url}/data/remote/{z}/{x}/{y}.pbf`]);
    assert.ok(Array.isArray(lt));
    for (const [z, x, y] of [
      [0, 0, 0],
      [1, 0, 0],
      [1, 1, 1],
    ]) {
      const stored = (await storedPmtilesTile(OMT, z, x, y))!;
      const res = await request(server.url, `/data/remote/${z}/${x}/${y}.pbf`, gz);
      assert.equal(res.status, 200, `${z}/${x}/${y}: ${res.body}`);
      assert.ok(res.body.equals(stored), `${z}/${x}/${y} is the stored tile`);
    }
    assert.equal((await request(server.url, '/data/remote/2/0/0.pbf', TIMEOUT)).status, 204);
  });

  test('the storage metrics count reads and bytes per source', async () => {
    await request(server.url, '/data/remote/1/0/1.pbf', gz);
    const scrape = parseScrape((await request(`http://127.0.0.1:${metricsPort}`, '/metrics', TIMEOUT)).body.toString());
    const reads = scrape.value('storage_reads_total', { source: 'remote' });
    const bytes = scrape.value('storage_read_bytes_total', { source: 'remote' });
    assert.ok(reads !== undefined && reads >= 3, `reads: ${reads}`);
    assert.ok(bytes !== undefined && bytes > (await storedPmtilesTile(OMT, 1, 0, 1))!.length, `bytes: ${bytes}`);
    assert.equal(scrape.find('storage_reads_total', { source: 'local' }).length, 0, 'a local file is not storage');
  });

  test('wrong credentials stop start-up with one line naming the source, the URL and the provider\'s reason', async () => {
    const url = path('planet/omt.pmtiles');
    const config = writeTempConfig(`[[sources]]\nid = "denied"\ntype = "pmtiles"\npath = "${url}"\n${store.wrongKeys(proxy.url)}\n`);
    const r = await runCli(['--config', config, '--port', '0', '--workers', '1'], store.env);
    const lines = r.stderr.split('\n').filter((l) => l.trim() !== '');
    assert.notEqual(r.code, 0);
    assert.equal(lines.length, 1, lines.join('\n'));
    assert.match(lines[0], /source "denied"/);
    assert.ok(lines[0].includes(url), lines[0]);
    assert.match(lines[0], store.deniedReason);
  });

  test('a missing object stops start-up with one line naming the source, the URL and the provider\'s reason', async () => {
    const url = path('planet/absent.pmtiles');
    const config = writeTempConfig(`[[sources]]\nid = "gone"\ntype = "pmtiles"\npath = "${url}"\n${store.keys(proxy.url)}\n`);
    const r = await runCli(['--config', config, '--port', '0', '--workers', '1'], store.env);
    const lines = r.stderr.split('\n').filter((l) => l.trim() !== '');
    assert.notEqual(r.code, 0);
    assert.equal(lines.length, 1, lines.join('\n'));
    assert.match(lines[0], /source "gone"/);
    assert.ok(lines[0].includes(url), lines[0]);
    assert.match(lines[0], store.missingReason);
  });

  test('an object replaced in the bucket is re-opened: new tiles with the new TileJSON, never a mix; a reload reads the new header', async () => {
    const before = await getJson<{ maxzoom: number; bounds: number[] }>(server.url, '/data/swap.json');
    assert.equal(before.json.maxzoom, 1);
    const omt000 = (await storedPmtilesTile(OMT, 0, 0, 0))!;
    assert.ok((await request(server.url, '/data/swap/0/0/0.pbf', gz)).body.equals(omt000));

    await store.put('planet/swap.pmtiles', readFixture(SMALL));
    const small000 = (await storedPmtilesTile(SMALL, 0, 0, 0))!;
    assert.ok(!small000.equals(omt000));
    // The first read after the change notices the new ETag; the archive is re-opened before the tile is read.
    const tile = await request(server.url, '/data/swap/0/0/0.pbf', gz);
    assert.equal(tile.status, 200, tile.body.toString());
    assert.ok(tile.body.equals(small000), 'the tile comes from the new object');
    const after = await getJson<{ maxzoom: number; bounds: number[] }>(server.url, '/data/swap.json');
    assert.equal(after.json.maxzoom, 0, 'the TileJSON shows the new header with the new tiles');
    assert.deepEqual(after.json.bounds.map((b) => Math.round(b)), [0, 0, 1, 1]);
    // Old header + new archive would ask the new object for a z1 tile; the new header knows there is none.
    assert.equal((await request(server.url, '/data/swap/1/1/0.pbf', gz)).status, 204);

    // Back to the first archive, noticed by a reload alone (no tile read in between).
    await store.put('planet/swap.pmtiles', readFixture(OMT));
    process.kill(server.proc.pid!, 'SIGHUP');
    await waitFor('the reloaded TileJSON to show the first archive again', async () => {
      const j = await getJson<{ maxzoom: number }>(server.url, '/data/swap.json');
      return j.json.maxzoom === 1 ? true : undefined;
    });
    assert.ok((await request(server.url, '/data/swap/0/0/0.pbf', gz)).body.equals(omt000));

    // Replaced again by the small archive padded past the first one's size: every range of the old directories
    // can be read from the new object, so only the ETag tells the two apart (a 412 from a store that honours
    // If-Match, the new ETag in the answer from one that does not), never a short read.
    const padded = new Uint8Array(readFixture(OMT).length + 4096);
    padded.set(readFixture(SMALL));
    await store.put('planet/swap.pmtiles', padded);
    const swapped = await request(server.url, '/data/swap/0/0/0.pbf', gz);
    assert.equal(swapped.status, 200, swapped.body.toString());
    assert.ok(swapped.body.equals(small000), 'the tile comes from the new object, not the old offsets in it');
    assert.equal((await getJson<{ maxzoom: number }>(server.url, '/data/swap.json')).json.maxzoom, 0);
  });

  test('storage stopped: 503 with Retry-After for that source only, /ready names it; recovery without a restart', async () => {
    // Stopped mid-load: reads in flight (held back by a delay) lose their connections; each answers 503, none hangs.
    proxy.setDelay(400);
    const inFlight = [
      [1, 0, 0],
      [1, 0, 1],
      [1, 1, 1],
    ].map(([z, x, y]) => request(server.url, `/data/remote/${z}/${x}/${y}.pbf`, gz));
    await new Promise((r) => setTimeout(r, 150));
    await proxy.stop();
    proxy.setDelay(0);
    const cut = await Promise.all(inFlight);
    assert.deepEqual(
      cut.map((r) => r.status),
      [503, 503, 503],
    );
    try {
      const down = await request(server.url, '/data/remote/1/1/0.pbf', gz);
      assert.equal(down.status, 503, down.body.toString());
      assert.ok(Number(down.headers['retry-after']) > 0, 'Retry-After');
      assert.match(String(down.headers['content-type']), /application\/problem\+json/);
      const problem = JSON.parse(down.body.toString()) as { detail: string };
      assert.match(problem.detail, /source "remote"/);
      assert.equal((await request(server.url, '/data/local/1/1/0.pbf', gz)).status, 200, 'the local source keeps serving');
      const ready = await request(server.url, '/ready', TIMEOUT);
      assert.equal(ready.status, 503);
      assert.match(ready.body.toString(), /source \\?"remote\\?" is unreachable/);
    } finally {
      await proxy.start();
    }
    const stored = (await storedPmtilesTile(OMT, 1, 1, 0))!;
    await waitFor('/ready to turn back by itself', async () => ((await request(server.url, '/ready', TIMEOUT)).status === 200 ? true : undefined), 20_000);
    const back = await request(server.url, '/data/remote/1/1/0.pbf', gz);
    assert.equal(back.status, 200);
    assert.ok(back.body.equals(stored));
    const scrape = parseScrape((await request(`http://127.0.0.1:${metricsPort}`, '/metrics', TIMEOUT)).body.toString());
    const errors = scrape.find('storage_errors_total', { source: 'remote' }).reduce((n, s) => n + s.value, 0);
    assert.ok(errors >= 2, `the failed attempts are counted: ${errors}`);
  });

  test('a slow store: the read timeout answers 503 instead of a hung request', async () => {
    proxy.setDelay(5000);
    try {
      const slow = await request(server.url, '/data/remote/1/0/0.pbf', gz);
      assert.equal(slow.status, 503, slow.body.toString());
      assert.match(JSON.parse(slow.body.toString()).detail as string, /read_timeout_ms/);
      assert.equal((await request(server.url, '/data/local/1/0/0.pbf', gz)).status, 200);
    } finally {
      proxy.setDelay(0);
    }
    const stored = (await storedPmtilesTile(OMT, 1, 0, 0))!;
    const back = await waitFor('tiles after the delay is lifted', async () => {
      const r = await request(server.url, '/data/remote/1/0/0.pbf', gz);
      return r.status === 200 ? r : undefined;
    });
    assert.ok(back.body.equals(stored));
  });

  test('a reload that adds a source with wrong credentials fails with its one line and keeps the running configuration', async () => {
    const url = path('planet/omt.pmtiles');
    const line = await failedReloadLine(server, `[[sources]]\nid = "late"\ntype = "pmtiles"\npath = "${url}"\n${store.wrongKeys(proxy.url)}`, 'late');
    assert.ok(line.includes(url), line);
    assert.match(line, store.deniedReason);
    assert.equal((await request(server.url, '/data/late.json', TIMEOUT)).status, 404);
    assert.equal((await request(server.url, '/data/remote/0/0/0.pbf', gz)).status, 200, 'the running configuration still serves');
  });

  rangeFileProofs(
    () => ({ store, proxy, server }),
    () => files,
  );

  return () => ({ store, proxy, server });
}
