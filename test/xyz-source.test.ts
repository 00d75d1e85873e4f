// Remote XYZ sources (`type = "xyz"`, docs/xyz.md) against a real upstream tile server started here (node:http on
// a free port) that records every request and can be told to answer slowly, 500, 404, gzip, never, or by closing
// the socket. One tileserver serves every case (the tile cache is off, so each request reaches the source): the
// tile bytes are the upstream's; `{s}` spreads tiles over the subdomains; headers from the environment reach the
// upstream and never our answers or logs; 5xx and dead connections answer 502, a silent upstream 504 within the
// timeout; at most max_concurrency requests are in flight upstream and a full queue is 503; a tile read before is
// answered marked stale when the upstream fails; a reload follows a changed URL.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { writeFileSync } from 'node:fs';
import { gzipSync } from 'node:zlib';
import path from 'node:path';
import Database from 'better-sqlite3';
import { fixture, freePort, runCli, startServer, writeTempConfig, type TestServer } from './helpers/server.js';
import { getJson, layerCounts, request, storedPmtilesTile, tempDir, waitFor } from './helpers/foundation.js';
import { decode, dominantColor } from './helpers/render.js';

const SECRET = 'Bearer xyz-secret-7f3a9c';
const QUERY_SECRET = 'qkey-51d0e2';

/** The bytes the upstream serves for a tile: distinct per tile and path. */
const tileBytes = (path: string) => Buffer.from(`tile:${path}`);

interface Seen {
  path: string;
  headers: http.IncomingHttpHeaders;
}

let mode: 'ok' | '500' | '404' | 'hang' | 'close' | 'slow' = 'ok';
const seen: Seen[] = [];
let inFlight = 0;
let maxInFlight = 0;
const sockets = new Set<Socket>();
let upstream: http.Server;
/** Another origin, where the upstream redirects some tiles: what it receives is recorded. */
let elsewhere: http.Server;
let elsewhereBase = '';
const seenElsewhere: Seen[] = [];
let base = '';
let server: TestServer;
let configText = '';
/** A real MVT (the OpenMapTiles fixture's 0/0/0) for the composite's members. */
let mvt: Buffer;

before(async () => {
  mvt = (await storedPmtilesTile(fixture('vector/omt-planet-z0-1.pmtiles'), 0, 0, 0))!;
  upstream = http.createServer((req, res) => {
    const path = (req.url ?? '').split('?')[0];
    seen.push({ path: req.url ?? '', headers: req.headers });
    inFlight++;
    maxInFlight = Math.max(maxInFlight, inFlight);
    const done = () => inFlight--;
    res.on('close', done);
    const send = () => {
      if (path.startsWith('/gz-header/')) {
        res.writeHead(200, { 'content-type': 'application/x-protobuf', 'content-encoding': 'gzip' });
        return res.end(gzipSync(tileBytes(path)));
      }
      if (path.startsWith('/gz-raw/')) {
        res.writeHead(200, { 'content-type': 'application/x-protobuf' });
        return res.end(gzipSync(tileBytes(path)));
      }
      if (path.includes('mvt/')) {
        res.writeHead(200, { 'content-type': 'application/x-protobuf' });
        return res.end(mvt);
      }
      if (path.startsWith('/redir-same/')) {
        res.writeHead(302, { location: path.replace('/redir-same/', '/ok/') });
        return res.end();
      }
      if (path.startsWith('/redir-other/')) {
        res.writeHead(302, { location: `${elsewhereBase}${path.replace('/redir-other/', '/ok/')}` });
        return res.end();
      }
      if (path.startsWith('/none/')) {
        res.writeHead(404);
        return res.end();
      }
      res.writeHead(200, { 'content-type': 'application/octet-stream' });
      res.end(tileBytes(path));
    };
    const behaviour = path.startsWith('/ctl/') || path.startsWith('/ctlmvt/') ? mode : path.startsWith('/slow/') ? 'slow' : 'ok';
    if (behaviour === 'ok') return send();
    if (behaviour === 'slow') return void setTimeout(send, 250);
    if (behaviour === '500') {
      res.writeHead(500);
      return res.end('broken');
    }
    if (behaviour === '404') {
      res.writeHead(404);
      return res.end();
    }
    if (behaviour === 'close') return req.socket.destroy();
    // 'hang': never answers
  });
  upstream.on('connection', (s) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((r) => upstream.listen(0, '127.0.0.1', r));
  elsewhere = http.createServer((req, res) => {
    seenElsewhere.push({ path: req.url ?? '', headers: req.headers });
    res.writeHead(200);
    res.end(tileBytes(`elsewhere:${req.url}`));
  });
  await new Promise<void>((r) => elsewhere.listen(0, '127.0.0.1', r));
  elsewhereBase = `http://127.0.0.1:${(elsewhere.address() as AddressInfo).port}`;
  base = `http://127.0.0.1:${(upstream.address() as AddressInfo).port}`;
  configText = toml(`${base}/ok/{z}/{x}/{y}.pbf?key=${QUERY_SECRET}`);
  server = await startServer({ toml: configText, env: { XYZ_TEST_AUTH: SECRET, LOG_LEVEL: 'info' } });
});

after(async () => {
  await server?.stop();
  for (const s of sockets) s.destroy();
  await new Promise((r) => upstream?.close(r));
  await new Promise((r) => elsewhere?.close(r));
});

function toml(vecUrl: string): string {
  return `
[server]
disable_render = true
[cache]
enabled = false
[[sources]]
id = "vec"
type = "xyz"
url = "${vecUrl}"
format = "pbf"
maxzoom = 14
attribution = "upstream"
vector_layers = [{ id = "roads", fields = { name = "String" } }]
headers = { "X-Client" = "tileserver-ts-test" }
headers_env = { Authorization = "XYZ_TEST_AUTH" }
[[sources]]
id = "sub"
type = "xyz"
url = "${base}/sub-{s}/{z}/{x}/{y}.png"
subdomains = ["a", "b", "c"]
format = "png"
[[sources]]
id = "tms"
type = "xyz"
url = "${base}/ok/{z}/{x}/{-y}.png"
format = "png"
[[sources]]
id = "gzh"
type = "xyz"
url = "${base}/gz-header/{z}/{x}/{y}.pbf"
format = "pbf"
[[sources]]
id = "gzr"
type = "xyz"
url = "${base}/gz-raw/{z}/{x}/{y}.pbf"
format = "pbf"
[[sources]]
id = "none"
type = "xyz"
url = "${base}/none/{z}/{x}/{y}.pbf"
format = "pbf"
[[sources]]
id = "ctl"
type = "xyz"
url = "${base}/ctl/{z}/{x}/{y}.png?key=${QUERY_SECRET}"
format = "png"
timeout_ms = 600
retries = 1
[[sources]]
id = "capped"
type = "xyz"
url = "${base}/slow/{z}/{x}/{y}.png"
format = "png"
max_concurrency = 2
[[sources]]
id = "tiny"
type = "xyz"
url = "${base}/slow/t/{z}/{x}/{y}.png"
format = "png"
max_concurrency = 1
max_queue = 1
[[sources]]
id = "mvta"
type = "xyz"
url = "${base}/ctlmvt/{z}/{x}/{y}.pbf"
format = "pbf"
maxzoom = 1
timeout_ms = 600
[[sources]]
id = "mvtb"
type = "xyz"
url = "${base}/mvt/{z}/{x}/{y}.pbf"
format = "pbf"
maxzoom = 1
[[sources]]
id = "redir"
type = "xyz"
url = "${base}/redir-{s}/{z}/{x}/{y}.png"
subdomains = ["same", "other"]
format = "png"
headers_env = { "X-Api-Key" = "XYZ_TEST_AUTH" }
[[composites]]
id = "both"
sources = ["mvta", "mvtb"]
`;
}

const pathsSince = (from: number) => seen.slice(from).map((s) => s.path);

test('tiles are the upstream bytes; headers from the environment reach the upstream; TileJSON and /data.json list the source', async () => {
  const from = seen.length;
  const r = await request(server.url, '/data/vec/3/2/5.pbf');
  assert.equal(r.status, 200);
  assert.deepEqual(r.body, tileBytes('/ok/3/2/5.pbf'));
  assert.equal(r.headers['content-type'], 'application/x-protobuf');
  const sent = seen.slice(from);
  assert.equal(sent.length, 1);
  assert.equal(sent[0].path, `/ok/3/2/5.pbf?key=${QUERY_SECRET}`);
  assert.equal(sent[0].headers.authorization, SECRET);
  assert.equal(sent[0].headers['x-client'], 'tileserver-ts-test');
  assert.equal(r.headers.authorization, undefined);

  const tj = await getJson<Record<string, unknown>>(server.url, '/data/vec.json');
  assert.equal(tj.status, 200);
  assert.deepEqual(tj.json.tiles, [`${server.url}/data/vec/{z}/{x}/{y}.pbf`]);
  assert.equal(tj.json.maxzoom, 14);
  assert.equal(tj.json.attribution, 'upstream');
  assert.deepEqual(tj.json.vector_layers, [{ id: 'roads', fields: { name: 'String' } }]);
  assert.ok(!JSON.stringify(tj.json).includes(QUERY_SECRET));
  const none = await getJson<Record<string, unknown>>(server.url, '/data/none.json');
  assert.deepEqual(none.json.vector_layers, []);
  const list = await getJson<{ id: string }[]>(server.url, '/data.json');
  assert.ok(list.json.some((s) => s.id === 'vec'));
  assert.ok(!JSON.stringify(list.json).includes(QUERY_SECRET));
  const index = await request(server.url, '/index.json');
  assert.equal(index.status, 200);
  assert.ok(index.body.toString().includes(`${server.url}/data/vec/{z}/{x}/{y}.pbf`));
  assert.ok(!index.body.toString().includes(QUERY_SECRET));
  // Out of the zoom range: 204 without asking the upstream.
  const before = seen.length;
  assert.equal((await request(server.url, '/data/vec/15/0/0.pbf')).status, 204);
  assert.equal(seen.length, before);
});

test('{s} is one of the subdomains, fixed per tile and spread over the list; {-y} is the TMS row', async () => {
  const from = seen.length;
  for (const [x, y] of [[0, 0], [1, 0], [2, 0], [0, 0]]) assert.equal((await request(server.url, `/data/sub/2/${x}/${y}.png`)).status, 200);
  assert.deepEqual(pathsSince(from), ['/sub-a/2/0/0.png', '/sub-b/2/1/0.png', '/sub-c/2/2/0.png', '/sub-a/2/0/0.png']);
  const t = await request(server.url, '/data/tms/2/1/0.png');
  assert.equal(t.status, 200);
  assert.deepEqual(t.body, tileBytes('/ok/2/1/3.png'));
});

test('redirects are followed; the headers go along only while the origin stays the same', async () => {
  const from = seen.length;
  const same = await request(server.url, '/data/redir/1/0/0.png');
  assert.equal(same.status, 200);
  assert.deepEqual(same.body, tileBytes('/ok/1/0/0.png'));
  const followed = seen.slice(from).find((s) => s.path === '/ok/1/0/0.png');
  assert.equal(followed?.headers['x-api-key'], SECRET);
  const other = await request(server.url, '/data/redir/1/1/0.png');
  assert.equal(other.status, 200);
  assert.deepEqual(other.body, tileBytes('elsewhere:/ok/1/1/0.png'));
  assert.equal(seenElsewhere.length, 1);
  assert.equal(seenElsewhere[0].headers['x-api-key'], undefined);
  assert.equal(seenElsewhere[0].headers.authorization, undefined);
});

test('gzip from the upstream, with or without Content-Encoding, is served as the service encodes any stored MVT', async () => {
  for (const id of ['gzh', 'gzr']) {
    const kind = id === 'gzh' ? 'gz-header' : 'gz-raw';
    const plain = await request(server.url, `/data/${id}/1/1/1.pbf`);
    assert.equal(plain.status, 200, id);
    assert.equal(plain.headers['content-encoding'], undefined, id);
    assert.deepEqual(plain.body, tileBytes(`/${kind}/1/1/1.pbf`), id);
    const gz = await request(server.url, `/data/${id}/1/1/1.pbf`, { headers: { 'Accept-Encoding': 'gzip' } });
    assert.equal(gz.headers['content-encoding'], 'gzip', id);
    assert.deepEqual(Buffer.from((await import('node:zlib')).gunzipSync(gz.body)), tileBytes(`/${kind}/1/1/1.pbf`), id);
  }
  assert.equal((await request(server.url, '/data/none/1/1/1.pbf')).status, 204);
});

test('upstream failures: 5xx and a closed socket are 502 after one retry, a silent upstream 504 within the timeout, 404 no tile; a tile read before is answered stale', async () => {
  mode = '500';
  let from = seen.length;
  const e500 = await request(server.url, '/data/ctl/4/1/1.png');
  assert.equal(e500.status, 502);
  assert.match(String(e500.headers['content-type']), /problem\+json/);
  const body = JSON.parse(e500.body.toString());
  assert.equal(body.title, 'Upstream failed');
  assert.match(body.detail, /"ctl"/);
  assert.ok(!e500.body.toString().includes(QUERY_SECRET) && !e500.body.toString().includes(base));
  assert.equal(seen.length - from, 2, 'one try and one retry');

  mode = 'close';
  from = seen.length;
  assert.equal((await request(server.url, '/data/ctl/4/1/2.png')).status, 502);
  assert.equal(seen.length - from, 2);

  mode = '404';
  assert.equal((await request(server.url, '/data/ctl/4/1/3.png')).status, 204);

  mode = 'hang';
  from = seen.length;
  // Answered (504) well before the client's own 5 s limit: the upstream's silence does not hang the request.
  const hung = await request(server.url, '/data/ctl/4/1/4.png', { timeoutMs: 5000 });
  assert.equal(hung.status, 504);
  assert.equal(JSON.parse(hung.body.toString()).title, 'Upstream timeout');
  assert.equal(seen.length - from, 1, 'a timeout is not retried');

  // A tile read while the upstream was well, asked again while it fails: the last good copy, marked stale.
  mode = 'ok';
  const good = await request(server.url, '/data/ctl/4/2/2.png');
  assert.equal(good.status, 200);
  assert.equal(good.headers.warning, undefined);
  for (const m of ['500', 'hang'] as const) {
    mode = m;
    const stale = await request(server.url, '/data/ctl/4/2/2.png');
    assert.equal(stale.status, 200, m);
    assert.deepEqual(stale.body, good.body, m);
    assert.equal(stale.headers.warning, '110 - "Response is Stale"', m);
    assert.match(String(stale.headers['cache-status']), /stale/, m);
    assert.equal(stale.headers['cache-control'], 'no-cache', m);
  }
  mode = 'ok';
});

test('composites merge xyz members; a failed member makes the composite 502/504, or stale from its last good copy', async () => {
  mode = 'ok';
  const good = await request(server.url, '/data/both/0/0/0.pbf');
  assert.equal(good.status, 200);
  assert.deepEqual(layerCounts(good.body), Object.fromEntries(Object.entries(layerCounts(mvt)).map(([k, n]) => [k, 2 * n])));
  const plus = await request(server.url, '/data/mvta+mvtb/1/0/0.pbf');
  assert.equal(plus.status, 200);
  mode = '500';
  const stale = await request(server.url, '/data/both/0/0/0.pbf');
  assert.equal(stale.status, 200);
  assert.equal(stale.headers.warning, '110 - "Response is Stale"');
  assert.deepEqual(stale.body, good.body);
  mode = 'hang';
  const never = await request(server.url, '/data/both/1/1/1.pbf');
  assert.equal(never.status, 504);
  mode = 'ok';
});

test('at most max_concurrency requests are in flight upstream; beyond max_queue waiting, 503 with Retry-After', async () => {
  maxInFlight = 0;
  const from = seen.length;
  const answers = await Promise.all(Array.from({ length: 8 }, (_, i) => request(server.url, `/data/capped/3/${i}/0.png`)));
  assert.deepEqual(answers.map((a) => a.status), Array(8).fill(200));
  assert.equal(seen.length - from, 8);
  assert.ok(maxInFlight <= 2, `${maxInFlight} in flight`);
  assert.equal(maxInFlight, 2);

  const tiny = await Promise.all(Array.from({ length: 5 }, (_, i) => request(server.url, `/data/tiny/3/${i}/1.png`)));
  const statuses = tiny.map((a) => a.status).sort();
  assert.deepEqual(statuses, [200, 200, 503, 503, 503]);
  const busy = tiny.find((a) => a.status === 503)!;
  assert.ok(Number(busy.headers['retry-after']) > 0);
  assert.equal(JSON.parse(busy.body.toString()).title, 'Upstream busy');
});

test('secrets never appear in the logs', () => {
  const out = server.output();
  assert.match(out, /xyz upstream failed/);
  assert.ok(!out.includes(SECRET) && !out.includes('xyz-secret'), 'the header value is not logged');
  assert.ok(!out.includes(QUERY_SECRET), 'the query string is not logged');
});

test('seeding reads through the source: the tiles of the upstream end up in the archive', async () => {
  const out = path.join(tempDir('tsts-xyz-seed-'), 'sub.mbtiles');
  const from = seen.length;
  const run = await runCli(['seed', '--config', server.configFile!, '--source', 'sub', '--bbox', '-10,-10,10,10', '--zoom', '0-1', '--out', out], { XYZ_TEST_AUTH: SECRET, LOG_LEVEL: 'warn' }, 30_000);
  assert.equal(run.code, 0, run.stderr);
  const db = new Database(out, { readonly: true });
  try {
    const rows = db.prepare('SELECT zoom_level AS z, tile_column AS x, tile_data AS d FROM tiles ORDER BY z, x').all() as { z: number; x: number; d: Buffer }[];
    assert.equal(rows.length, 5);
    for (const r of rows) assert.ok(r.d.toString().startsWith(`tile:/sub-`), r.d.toString());
  } finally {
    db.close();
  }
  assert.equal(pathsSince(from).filter((p) => p.startsWith('/sub-')).length, 5);
});

test('a header variable missing from the environment stops start-up with one line naming it', async () => {
  const cfg = writeTempConfig(`[[sources]]\nid = "k"\ntype = "xyz"\nurl = "${base}/ok/{z}/{x}/{y}.png"\nformat = "png"\nheaders_env = { "X-Api-Key" = "XYZ_TEST_UNSET_VAR" }\n`);
  const run = await runCli(['--config', cfg, '--host', '127.0.0.1', '--port', String(await freePort()), '--workers', '1'], { XYZ_TEST_UNSET_VAR: '' }, 20_000);
  assert.notEqual(run.code, 0);
  assert.match(run.stdout + run.stderr, /XYZ_TEST_UNSET_VAR/);
});

test('a render of a style drawing an xyz source whose upstream never answers still finishes, drawing the rest', async () => {
  const dir = tempDir('tsts-xyz-render-');
  const style = path.join(dir, 'style.json');
  writeFileSync(style, JSON.stringify({
    version: 8,
    sources: { up: { type: 'raster', url: 'source://hang', tileSize: 256 } },
    layers: [{ id: 'bg', type: 'background', paint: { 'background-color': '#ff0000' } }, { id: 'up', type: 'raster', source: 'up' }],
  }));
  mode = 'hang';
  const svc = await startServer({
    toml: `[[sources]]\nid = "hang"\ntype = "xyz"\nurl = "${base}/ctl/{z}/{x}/{y}.png"\nformat = "png"\ntimeout_ms = 300\n[[styles]]\nid = "s"\npath = "${style}"\n`,
  });
  try {
    await waitFor('the renderer', async () => ((await request(svc.url, '/ready')).status === 200 ? true : undefined), 30_000);
    const from = seen.length;
    const r = await request(svc.url, '/styles/s/1/0/0.png', { timeoutMs: 20_000 });
    assert.equal(r.status, 200, r.body.toString());
    assert.equal(r.headers['content-type'], 'image/png');
    // The red background is drawn, untouched: a raster tile that failed becomes a transparent image
    // (src/render/resources.ts), which draws nothing over it.
    const [red, green, blue] = dominantColor(await decode(r.body));
    assert.ok(red >= 250 && green <= 5 && blue <= 5, `dominant colour ${red},${green},${blue}`);
    assert.ok(seen.slice(from).some((s) => s.path.startsWith('/ctl/')), 'the renderer asked the upstream');
  } finally {
    mode = 'ok';
    await svc.stop();
  }
});

test('a reload follows a changed URL', async () => {
  writeFileSync(server.configFile!, toml(`${base}/moved/{z}/{x}/{y}.pbf`));
  process.kill(server.proc.pid!, 'SIGHUP');
  await waitFor('the moved upstream', async () => {
    const r = await request(server.url, '/data/vec/2/1/1.pbf');
    return r.body.equals(tileBytes('/moved/2/1/1.pbf')) ? true : undefined;
  });
  assert.equal(seen.at(-1)!.path, '/moved/2/1/1.pbf');
});
