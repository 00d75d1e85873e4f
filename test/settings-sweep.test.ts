// The settings sweep: settings that no other test showed taking effect in a running server, each set
// to a value other than its default and checked where a user would see it. `server.host` (from the file, not
// --host: answered on 127.0.0.2, refused on 127.0.0.1), `render.chromium_path` (a path that does not exist
// leaves the renderer unavailable, said in the log, /ping and /ready, and a style tile is 503; a second check
// beside render-limits.test.ts, and it keeps Chromium from starting here), [raster] `tile_size` (512-pixel tiles
// and TileJSON), `pool_size` (four tiles at once all drawn with no queue) and `dataset_cache` (1: the file of
// the previous tile is closed, seen in /proc/<pid>/fd), and of [postgres]: `pool_size` with `pool_wait_timeout_ms` (one connection
// held by a slow query: the next tile is 503 "Database busy" within the wait), `ssl_mode` and `ssl_root_cert`
// (with TLS turned on in the test cluster: require connects over TLS, seen in pg_stat_ssl; verify-ca connects
// with the server's certificate as ssl_root_cert and stops start-up with another one), and of a table: `geometry_column`, `max_features`, `buffer` and `extent`,
// read from the tiles, and the schema, name, zooms and bounds of a function and an out-of-database raster
// catalogue. docs/testing.md ("Where each setting is shown to take effect") lists every setting and where it is shown.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { chmodSync, copyFileSync, readdirSync, readlinkSync } from 'node:fs';
import path from 'node:path';
import { CLI, fixture, freePort, osmLibertyToml, runCli, startServer, writeTempConfig, type TestServer, scratchTmp } from './helpers/server.js';
import { request, tempDir, waitFor } from './helpers/foundation.js';
import { startPostgres, type PostgresCluster } from './helpers/postgres.js';
import { readMvt } from './helpers/vector-tiles.js';

/** Width and height from a PNG's IHDR. */
const pngSize = (b: Buffer) => ({ width: b.readUInt32BE(16), height: b.readUInt32BE(20) });

/** Web-mercator tile of a point. */
function tileOf(lon: number, lat: number, z: number): { x: number; y: number } {
  const n = 2 ** z;
  const r = (lat * Math.PI) / 180;
  return { x: Math.floor(((lon + 180) / 360) * n), y: Math.floor(((1 - Math.log(Math.tan(r) + 1 / Math.cos(r)) / Math.PI) / 2) * n) };
}

describe('server.host from the file, render.chromium_path', () => {
  let proc: ChildProcess;
  let out = '';
  let port: number;
  const HOST = '127.0.0.2';
  const BOGUS = '/nonexistent/tsts-sweep/chromium';
  before(async () => {
    port = await freePort();
    // Started without --host (the test helper always passes one): the address must come from the file.
    const file = writeTempConfig(osmLibertyToml(`[server]
host = "${HOST}"
port = ${port}
workers = 1
[render]
backend = "chromium"
chromium_path = "${BOGUS}"
`));
    proc = spawn(process.execPath, [CLI, '--config', file], { env: { ...process.env, LOG_LEVEL: 'info', TMPDIR: scratchTmp() }, stdio: ['ignore', 'pipe', 'pipe'] });
    proc.stdout!.on('data', (d) => (out += d));
    proc.stderr!.on('data', (d) => (out += d));
    await waitFor('the service on the configured host', async () => {
      if (proc.exitCode !== null) throw new Error(`the service exited:\n${out}`);
      return (await request(`http://${HOST}:${port}`, '/health').then((r) => r.status === 200).catch(() => false)) || undefined;
    }, 60_000);
  });
  after(async () => {
    if (proc && proc.exitCode === null) {
      const exited = new Promise((r) => proc.once('exit', r));
      proc.kill('SIGTERM');
      const kill = setTimeout(() => proc.kill('SIGKILL'), 15_000);
      await exited;
      clearTimeout(kill);
    }
  });

  test('host: answered on the configured address only, not on every address', async () => {
    assert.equal((await request(`http://${HOST}:${port}`, '/health')).status, 200);
    await assert.rejects(request(`http://127.0.0.1:${port}`, '/health', { timeoutMs: 5000 }), /ECONNREFUSED/);
  });

  test('chromium_path: a path that does not exist leaves the renderer unavailable, named in the log, /ping, /ready and a 503', async () => {
    const base = `http://${HOST}:${port}`;
    const ping = await waitFor('the renderer to give up', async () => {
      const p = JSON.parse((await request(base, '/ping')).body.toString('utf8')) as { renderer_state: string; renderer: string | null };
      return p.renderer_state === 'starting' ? undefined : p;
    }, 60_000);
    assert.equal(ping.renderer_state, 'unavailable');
    assert.equal(ping.renderer, null);
    assert.ok(out.includes(`render.chromium_path ${BOGUS} does not exist`), `the log does not name the path:\n${out.slice(-2000)}`);
    const ready = await request(base, '/ready');
    assert.equal(ready.status, 503);
    assert.match(ready.body.toString('utf8'), /renderer is unavailable/);
    const tile = await request(base, '/styles/osm-liberty/0/0/0.png', { timeoutMs: 60_000 });
    assert.equal(tile.status, 503, tile.body.toString('utf8').slice(0, 300));
    assert.equal(tile.headers['content-type'], 'application/problem+json');
  });
});

describe('render.backend = "native" where MapLibre Native is not installed', () => {
  let server: TestServer;
  before(async () => {
    server = await startServer({ toml: osmLibertyToml('[render]\nbackend = "native"\n') });
  });
  after(() => server?.stop());

  test('no renderer (Chromium, which is installed, is not taken): /ping, /ready and a 503 naming native', async () => {
    const ping = await waitFor('the renderer to give up', async () => {
      const p = JSON.parse((await request(server.url, '/ping')).body.toString('utf8')) as { renderer_state: string; renderer: string | null };
      return p.renderer_state === 'starting' ? undefined : p;
    }, 60_000);
    assert.equal(ping.renderer_state, 'unavailable');
    assert.equal(ping.renderer, null);
    assert.equal((await request(server.url, '/ready')).status, 503);
    const tile = await request(server.url, '/styles/osm-liberty/0/0/0.png', { timeoutMs: 60_000 });
    assert.equal(tile.status, 503);
    assert.match(tile.body.toString('utf8'), /native/);
  });
});

describe('[raster] tile_size, pool_size and dataset_cache', () => {
  let server: TestServer;
  before(async () => {
    server = await startServer({
      toml: `[server]
disable_render = true
[cache]
enabled = false
[raster]
pool_size = 4
tile_size = 512
max_queue_per_thread = 0
dataset_cache = 1
[[sources]]
id = "rgb"
type = "cog"
path = "${fixture('cog/test-rgb.cog.tif')}"
resampling = "nearest"
[[sources]]
id = "dem"
type = "cog"
path = "${fixture('cog/dem-small.cog.tif')}"
[sources.colormap]
entries = [{ value = 0, color = "#000000" }, { value = 4000, color = "#ffffff" }]
`,
    });
  });
  after(() => server?.stop());

  /** The centre tile of a source at its maxzoom, from its TileJSON. */
  async function centreTile(id: string) {
    const tj = JSON.parse((await request(server.url, `/data/${id}.json`)).body.toString('utf8')) as { tileSize: number; center: [number, number, number]; maxzoom: number };
    return { tj, z: tj.maxzoom, ...tileOf(tj.center[0], tj.center[1], tj.maxzoom) };
  }

  /** A tile, asked again while the pool (no queue) refuses it because its threads are still busy. */
  async function settled(path: string) {
    let res = await request(server.url, path);
    for (let i = 0; res.status === 503 && i < 50; i++) {
      await new Promise((r) => setTimeout(r, 100));
      res = await request(server.url, path);
    }
    return res;
  }

  test('tile_size = 512: raster tiles are 512 x 512 and TileJSON says so', async () => {
    const { tj, z, x, y } = await centreTile('rgb');
    assert.equal(tj.tileSize, 512);
    const res = await settled(`/data/rgb/${z}/${x}/${y}.png`);
    assert.equal(res.status, 200, res.body.toString('utf8').slice(0, 300));
    assert.equal(res.headers['content-type'], 'image/png');
    assert.deepEqual(pngSize(res.body), { width: 512, height: 512 });
  });

  test('pool_size = 4 (no queue): four tiles at once are all drawn, round after round', async () => {
    const { z, x, y } = await centreTile('rgb');
    const statuses: number[] = [];
    for (let round = 0; round < 6; round++) {
      // Each round waits until every thread has taken its last answer back (no queue: a busy thread refuses).
      await new Promise((r) => setTimeout(r, 300));
      const answers = await Promise.all([0, 1, 2, 3].map((k) => request(server.url, `/data/rgb/${z}/${x + (k % 2)}/${y + (k >> 1)}.${round % 2 ? 'webp' : 'png'}`)));
      statuses.push(...answers.map((a) => a.status));
    }
    assert.ok(statuses.every((s) => s === 200), `four threads refused or failed a tile: ${statuses.join(',')}`);
  });

  test('dataset_cache = 1: after a tile of another file the first file is closed', async () => {
    const fds = () =>
      readdirSync(`/proc/${server.proc.pid}/fd`)
        .map((fd) => { try { return readlinkSync(`/proc/${server.proc.pid}/fd/${fd}`); } catch { return ''; } })
        .filter((target) => target.endsWith('.tif'))
        .map((target) => target.split('/').pop())
        .sort();
    const rgb = await centreTile('rgb');
    assert.equal((await settled(`/data/rgb/${rgb.z}/${rgb.x}/${rgb.y}.png`)).status, 200);
    assert.deepEqual(fds(), ['test-rgb.cog.tif'], 'the file of the tile is open');
    const dem = await centreTile('dem');
    assert.equal((await settled(`/data/dem/${dem.z}/${dem.x}/${dem.y}.png`)).status, 200);
    assert.deepEqual(fds(), ['dem-small.cog.tif'], 'the first file is still open beside the second');
  });
});

/** Tile of a lon/lat at zoom z, and the point's position inside it in tile units. */
function tileAt(lon: number, lat: number, z: number, extent = 4096) {
  const n = 2 ** z;
  const fx = ((lon + 180) / 360) * n;
  const r = (lat * Math.PI) / 180;
  const fy = ((1 - Math.log(Math.tan(r) + 1 / Math.cos(r)) / Math.PI) / 2) * n;
  return { z, x: Math.floor(fx), y: Math.floor(fy), px: (fx - Math.floor(fx)) * extent };
}

describe('[postgres] pool and table settings', () => {
  let db: PostgresCluster;
  let server: TestServer;
  before(async () => {
    db = await startPostgres();
    // A tile function outside the public schema (the seed has none): places_fn's body under another name.
    await db.sql(`CREATE FUNCTION parks.places_tiles(z integer, x integer, y integer) RETURNS bytea LANGUAGE sql STABLE AS $$
      SELECT ST_AsMVT(t, 'fnp', 4096, 'geom') FROM (
        SELECT id, name, ST_AsMVTGeom(ST_Transform(geom, 3857), ST_TileEnvelope(z, x, y), 4096, 64, true) AS geom
        FROM public.places WHERE geom && ST_Transform(ST_TileEnvelope(z, x, y, margin => 64.0 / 4096), 4326)
      ) AS t WHERE geom IS NOT NULL $$`);
    // An out-of-database raster catalogue in schema parks: every tile is covered by one file (lon -122.5..-122.3, lat 37.7..37.9).
    await db.sql(`CREATE FUNCTION parks.rgb_files(z integer, x integer, y integer, tile_bbox geometry, params json)
      RETURNS TABLE(filepath text) LANGUAGE sql STABLE AS $$ SELECT '${fixture('cog/test-rgb.cog.tif')}'::text $$`);
    server = await startServer({
      toml: `[cache]
enabled = false
[postgres]
connection_string = "${db.url}"
pool_size = 1
pool_wait_timeout_ms = 300
statement_timeout_ms = 20000

[[postgres.tables]]
id = "centres"
schema = "parks"
table = "areas"
geometry_column = "centre"

[[postgres.tables]]
id = "few"
table = "places"
max_features = 1
name = "Few places"
description = "one place a tile"
bounds = [-123, 37, -122, 38]

[[postgres.tables]]
id = "wide"
table = "places"
buffer = 4096
extent = 512

[[postgres.functions]]
id = "slow"
function = "slow_tiles"

[[postgres.functions]]
id = "fnp"
schema = "parks"
function = "places_tiles"
name = "Places of another schema"
attribution = "function attribution"
description = "function description"
minzoom = 3
maxzoom = 13
bounds = [-123, 37, -122, 38]

[[postgres.outdb_rasters]]
id = "rgbdb"
schema = "parks"
function = "rgb_files"
name = "Catalogue of another schema"
minzoom = 10
maxzoom = 13
bounds = [-122.5, 37.7, -122.4, 37.9]
`,
    });
  });
  after(async () => {
    await server?.stop();
    db?.destroy();
  });

  test('geometry_column: the named column (points), not the first one (polygons)', async () => {
    const t = tileAt(-122.482, 37.769, 12);
    const res = await request(server.url, `/data/centres/${t.z}/${t.x}/${t.y}.pbf`);
    assert.equal(res.status, 200);
    const features = readMvt(res.body).get('centres')!.features;
    assert.equal(features.length, 1);
    assert.equal(features[0]!.type, 1, 'a point, not the outline polygon');
  });

  test('max_features: a tile holding three places carries one', async () => {
    const t = tileAt(-122.42, 37.78, 10);
    const res = await request(server.url, `/data/few/${t.z}/${t.x}/${t.y}.pbf`);
    assert.equal(res.status, 200);
    assert.equal(readMvt(res.body).get('few')!.features.length, 1);
    const held = await db.sql(`SELECT count(*)::int AS n FROM places WHERE ST_Transform(geom, 3857) && ST_TileEnvelope(${t.z}, ${t.x}, ${t.y})`);
    assert.equal(held.rows[0].n, 3, 'the tile holds three places');
  });

  test('buffer and extent: a place one tile away is in the buffer, in a layer of extent 512', async () => {
    const sydney = tileAt(151.2153, -33.8568, 14);
    // The neighbour on the side farther from the point: outside the default 64-unit buffer, inside 4096.
    const dx = sydney.px < 2048 ? 1 : -1;
    const res = await request(server.url, `/data/wide/${sydney.z}/${sydney.x + dx}/${sydney.y}.pbf`);
    assert.equal(res.status, 200, 'the neighbouring tile is empty');
    const layer = readMvt(res.body).get('wide')!;
    assert.equal(layer.extent, 512);
    assert.equal(layer.features.length, 1);
    assert.equal(layer.features[0]!.properties.name, 'Sydney Opera House');
    const x = layer.features[0]!.geometry[0]![0]![0];
    assert.ok(dx === 1 ? x < 0 : x > 512, `x = ${x} does not lie outside the tile, in its buffer`);
  });

  test('a table\'s name, description and bounds: in its TileJSON, and no tile outside the bounds where the table has data', async () => {
    const tj = JSON.parse((await request(server.url, '/data/few.json')).body.toString('utf8')) as { name: string; description: string; bounds: number[] };
    assert.equal(tj.name, 'Few places');
    assert.equal(tj.description, 'one place a tile');
    assert.deepEqual(tj.bounds, [-123, 37, -122, 38]);
    const sydney = tileAt(151.2153, -33.8568, 10);
    assert.equal((await request(server.url, `/data/few/${sydney.z}/${sydney.x}/${sydney.y}.pbf`)).status, 204, 'a tile outside the configured bounds');
    assert.equal((await request(server.url, `/data/wide/${sydney.z}/${sydney.x}/${sydney.y}.pbf`)).status, 200, 'the table has a place there');
  });

  test('a function\'s schema, name, attribution, description, zooms and bounds', async () => {
    const tj = JSON.parse((await request(server.url, '/data/fnp.json')).body.toString('utf8')) as Record<string, unknown>;
    assert.equal(tj.name, 'Places of another schema');
    assert.equal(tj.attribution, 'function attribution');
    assert.equal(tj.description, 'function description');
    assert.equal(tj.minzoom, 3);
    assert.equal(tj.maxzoom, 13);
    assert.deepEqual(tj.bounds, [-123, 37, -122, 38]);
    const at = (lon: number, lat: number, z: number) => { const t = tileAt(lon, lat, z); return `/data/fnp/${t.z}/${t.x}/${t.y}.pbf`; };
    const inside = await request(server.url, at(-122.3937, 37.7955, 12));
    assert.equal(inside.status, 200, 'the function in schema parks answers');
    assert.ok(readMvt(inside.body).get('fnp')!.features.some((f) => f.properties.name === 'Ferry Building'));
    // z0 holds the places too (the function's own answer there is not empty), but it is below minzoom.
    assert.equal((await request(server.url, at(-122.3937, 37.7955, 0))).status, 204, 'below minzoom');
    assert.equal((await request(server.url, at(-122.3937, 37.7955, 3))).status, 200, 'at minzoom');
    assert.equal((await request(server.url, at(-122.3937, 37.7955, 14))).status, 204, 'above maxzoom');
    assert.equal((await request(server.url, at(151.2153, -33.8568, 5))).status, 204, 'outside the bounds');
  });

  test('an out-of-database catalogue\'s schema, name, zooms and bounds', async () => {
    const tj = JSON.parse((await request(server.url, '/data/rgbdb.json')).body.toString('utf8')) as Record<string, unknown>;
    assert.equal(tj.name, 'Catalogue of another schema');
    assert.equal(tj.minzoom, 10);
    assert.equal(tj.maxzoom, 13);
    assert.deepEqual(tj.bounds, [-122.5, 37.7, -122.4, 37.9]);
    const at = (lon: number, lat: number, z: number) => { const t = tileAt(lon, lat, z); return `/data/rgbdb/${t.z}/${t.x}/${t.y}.png`; };
    const inside = await request(server.url, at(-122.47, 37.8, 12));
    assert.equal(inside.status, 200, 'the function in schema parks names the file');
    assert.equal(inside.headers['content-type'], 'image/png');
    assert.equal((await request(server.url, at(-122.47, 37.8, 9))).status, 204, 'below minzoom');
    assert.equal((await request(server.url, at(-122.47, 37.8, 14))).status, 204, 'above maxzoom');
    // The file has pixels here too, east of the configured bounds.
    assert.equal((await request(server.url, at(-122.32, 37.8, 12))).status, 204, 'outside the bounds');
  });

  test('pool_size 1 and pool_wait_timeout_ms: while a slow query holds the one connection, a tile is 503 within the wait', async () => {
    const slow = request(server.url, '/data/slow/1/0/0.pbf', { timeoutMs: 30_000 });
    await new Promise((r) => setTimeout(r, 400));
    const t = tileAt(-122.3937, 37.7955, 14);
    const started = Date.now();
    const busy = await request(server.url, `/data/few/${t.z}/${t.x}/${t.y}.pbf`);
    const waited = Date.now() - started;
    assert.equal(busy.status, 503, busy.body.toString('utf8'));
    assert.match(busy.body.toString('utf8'), /pool_wait_timeout_ms \(300 ms\)/);
    assert.ok(busy.headers['retry-after']);
    assert.ok(waited < 1200, `answered after ${waited} ms, not within the 300 ms wait`);
    assert.equal((await slow).status, 204);
    assert.equal((await request(server.url, `/data/few/${t.z}/${t.x}/${t.y}.pbf`)).status, 200, 'served once the connection is free');
  });

  /** TLS on the test cluster: a self-signed server certificate in its data directory, `ssl = on`, reloaded. */
  async function enableTls(): Promise<{ serverCert: string; otherCert: string }> {
    const dir = tempDir('tsts-sweep-tls-');
    const cert = (name: string) => {
      execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', path.join(dir, `${name}.key`), '-out', path.join(dir, `${name}.crt`), '-subj', `/CN=${name}`, '-days', '2'], { stdio: 'ignore' });
      return path.join(dir, `${name}.crt`);
    };
    const serverCert = cert('server');
    const otherCert = cert('other');
    const data = String((await db.sql('SHOW data_directory')).rows[0].data_directory);
    for (const f of ['server.crt', 'server.key']) {
      copyFileSync(path.join(dir, f), path.join(data, f));
      chmodSync(path.join(data, f), 0o600);
      if (process.getuid?.() === 0) execFileSync('chown', ['postgres:postgres', path.join(data, f)]);
    }
    await db.sql('ALTER SYSTEM SET ssl = on');
    await db.sql('SELECT pg_reload_conf()');
    await waitFor('ssl on', async () => ((await db.sql('SHOW ssl')).rows[0].ssl === 'on' ? true : undefined));
    return { serverCert, otherCert };
  }

  /** The service's connections to the cluster (backend pid and whether it uses TLS). */
  const serviceConnections = async () =>
    (await db.sql("SELECT s.pid, s.ssl FROM pg_stat_ssl s JOIN pg_stat_activity a USING (pid) WHERE a.application_name = 'tileserver-ts'")).rows as { pid: number; ssl: boolean }[];
  /** Whether the connections opened since `before` (those of the server started since) use TLS, one entry each. */
  const tlsSince = async (before: { pid: number }[]) => (await serviceConnections()).filter((c) => !before.some((b) => b.pid === c.pid)).map((c) => c.ssl);

  const placesToml = (pgLines: string) => `[cache]\nenabled = false\n[postgres]\nconnection_string = "${db.url}"\n${pgLines}\n\n[[postgres.tables]]\nid = "places"\ntable = "places"\n`;

  test('ssl_mode and ssl_root_cert: require talks TLS; verify-ca trusts the configured certificate only', async () => {
    const { serverCert, otherCert } = await enableTls();
    const t = tileAt(-122.3937, 37.7955, 14);
    let earlier = await serviceConnections();
    const sslRequire = await startServer({ toml: placesToml('ssl_mode = "require"') });
    try {
      assert.equal((await request(sslRequire.url, `/data/places/${t.z}/${t.x}/${t.y}.pbf`)).status, 200);
      const tls = await tlsSince(earlier);
      assert.ok(tls.length > 0 && tls.every(Boolean), `connections over TLS: ${JSON.stringify(tls)}`);
    } finally {
      await sslRequire.stop();
    }
    earlier = await serviceConnections();
    const verified = await startServer({ toml: placesToml(`ssl_mode = "verify-ca"\nssl_root_cert = "${serverCert}"`) });
    try {
      assert.equal((await request(verified.url, `/data/places/${t.z}/${t.x}/${t.y}.pbf`)).status, 200);
      const tls = await tlsSince(earlier);
      assert.ok(tls.length > 0 && tls.every(Boolean), `connections over TLS: ${JSON.stringify(tls)}`);
    } finally {
      await verified.stop();
    }
    // Another certificate as the root: the server's is not trusted, and start-up stops.
    const file = writeTempConfig(placesToml(`ssl_mode = "verify-ca"\nssl_root_cert = "${otherCert}"`));
    const r = await runCli(['--config', file, '--host', '127.0.0.1', '--port', String(await freePort()), '--workers', '1'], {}, 30_000);
    assert.notEqual(r.code, 0, `started trusting another certificate:\n${r.stdout}${r.stderr}`);
    assert.match(r.stdout + r.stderr, /postgres/i);
  });
});
