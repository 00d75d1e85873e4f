// PMTiles over HTTP: the archive is read with range requests from a local HTTP server started here (it
// answers Range with 206, as object storage does). Tiles and TileJSON match the same archive read locally;
// a server that ignores Range, a 404 and an unreachable host each stop start-up with one line.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { gunzipSync } from 'node:zlib';
import { fixture, freePort, runCli, startServer, writeTempConfig, type TestServer } from './helpers/server.js';
import { fileSize, getJson, layerCounts, request, startRangeServer, storedPmtilesTile, type RangeServer } from './helpers/foundation.js';

const OMT = fixture('vector/omt-planet-z0-1.pmtiles');

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
