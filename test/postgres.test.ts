// PostGIS tables and functions against a real throwaway PostgreSQL + PostGIS (test/helpers/postgres.ts, seeded
// from test/sql/seed.sql): tiles decoded with the reference MVT reader and compared with what the database
// holds, TileJSON, zoom and bounds limits, parameters passed verbatim, the spatial index, auto_publish, the
// database going away and coming back, start-up against an unreachable database, statement_timeout, and reload.
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import { after, before, describe, test } from 'node:test';
import { fixture, freePort, runCli, startServer, type TestServer } from './helpers/server.js';
import { startPostgres, type PostgresCluster } from './helpers/postgres.js';
import { readMvt } from './helpers/vector-tiles.js';
import fc from './helpers/fast-check.js';
import { tableTileSql } from '../src/sources/postgres/table.js';

/** Tile of a lon/lat at zoom z and the point's position inside it in tile units (web mercator, computed here). */
function tileOf(lon: number, lat: number, z: number, extent = 4096) {
  const n = 2 ** z;
  const fx = ((lon + 180) / 360) * n;
  const r = (lat * Math.PI) / 180;
  const fy = ((1 - Math.log(Math.tan(r) + 1 / Math.cos(r)) / Math.PI) / 2) * n;
  const x = Math.floor(fx);
  const y = Math.floor(fy);
  return { z, x, y, px: (fx - x) * extent, py: (fy - y) * extent };
}

async function get(url: string, headers: Record<string, string> = {}) {
  const res = await fetch(url, { headers });
  const body = new Uint8Array(await res.arrayBuffer());
  return { status: res.status, headers: res.headers, body, text: () => new TextDecoder().decode(body) };
}

async function waitFor<T>(what: string, fn: () => Promise<T | undefined>, ms = 30_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn().catch(() => undefined);
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 200));
  }
}

const PG_SECTION = (url: string, extra = '') => `
[postgres]
connection_string = "${url}"
pool_size = 4
statement_timeout_ms = 5000
${extra}

[[postgres.tables]]
id = "places"
table = "places"
id_column = "id"

[[postgres.tables]]
id = "roads"
table = "roads"
minzoom = 5
maxzoom = 16

[[postgres.tables]]
id = "parks"
schema = "parks"
table = "areas"
properties = ["title", "tags"]
attribution = "City parks"

[[postgres.functions]]
id = "fn_places"
function = "places_fn"

[[postgres.functions]]
id = "echo"
function = "echo_query"
maxzoom = 14
`;

const PMTILES = `
[[sources]]
id = "omt"
type = "pmtiles"
path = "${fixture('vector/omt-planet-z0-1.pmtiles')}"
`;

describe('PostGIS sources', () => {
  let db: PostgresCluster;
  let server: TestServer;

  before(async () => {
    db = await startPostgres();
    server = await startServer({ toml: PMTILES + PG_SECTION(db.url) });
  });
  after(async () => {
    await server?.stop();
    db?.destroy();
  });

  test('TileJSON of a table: vector_layers with field types from the column types, bounds from the data', async () => {
    const res = await get(`${server.url}/data/places.json`);
    assert.equal(res.status, 200);
    const tj = JSON.parse(res.text());
    assert.equal(tj.format, 'pbf');
    assert.deepEqual(tj.vector_layers, [{ id: 'places', fields: { name: 'String', rank: 'Number', height: 'Number', open: 'Boolean' }, minzoom: 0, maxzoom: 22 }]);
    // The data spans San Francisco to Sydney.
    const { rows } = await db.sql('SELECT ST_XMin(e) w, ST_YMin(e) s, ST_XMax(e) e, ST_YMax(e) n FROM (SELECT ST_Extent(geom) e FROM places) x');
    const want = [rows[0].w, rows[0].s, rows[0].e, rows[0].n].map(Number);
    tj.bounds.forEach((b: number, i: number) => assert.ok(Math.abs(b - want[i]) < 1e-6, `bounds[${i}] ${b} vs ${want[i]}`));
    assert.match(tj.tiles[0], /\/data\/places\/\{z\}\/\{x\}\/\{y\}\.pbf$/);

    const parks = JSON.parse((await get(`${server.url}/data/parks.json`)).text());
    assert.deepEqual(parks.vector_layers[0].fields, { title: 'String', tags: 'String' });
    assert.equal(parks.attribution, 'City parks');
    const roads = JSON.parse((await get(`${server.url}/data/roads.json`)).text());
    assert.deepEqual(roads.vector_layers[0].fields, { gid: 'Number', road_name: 'String', lanes: 'Number' });
    assert.equal(roads.minzoom, 5);
    assert.equal(roads.maxzoom, 16);
  });

  test('points in EPSG:4326: ids, properties and positions as the database holds them', async () => {
    const { rows } = await db.sql('SELECT id, name, rank, height, open, ST_X(geom) lon, ST_Y(geom) lat FROM places WHERE id = 1');
    const p = rows[0];
    const t = tileOf(p.lon, p.lat, 14);
    const res = await get(`${server.url}/data/places/${t.z}/${t.x}/${t.y}.pbf`);
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-type'), 'application/x-protobuf');
    const layer = readMvt(res.body).get('places');
    assert.ok(layer, 'layer "places"');
    const f = layer.features.find((x) => x.id === p.id);
    assert.ok(f, `feature ${p.id} in the tile`);
    assert.equal(f.type, 1);
    assert.deepEqual(f.properties, { name: p.name, rank: p.rank, height: p.height, open: p.open });
    assert.ok(Math.abs(f.geometry[0][0][0] - t.px) <= 1 && Math.abs(f.geometry[0][0][1] - t.py) <= 1, `position ${f.geometry[0][0]} vs ${t.px},${t.py}`);
    // Every place the database has in this tile, and no other.
    const inTile = await db.sql('SELECT id FROM places WHERE ST_Intersects(ST_Transform(geom, 3857), ST_TileEnvelope($1, $2, $3)) ORDER BY id', [t.z, t.x, t.y]);
    assert.deepEqual(layer.features.map((x) => x.id).sort(), inTile.rows.map((r) => r.id));
  });

  test('lines in EPSG:3857 and polygons in another schema', async () => {
    const { rows } = await db.sql("SELECT ST_X(ST_Transform(ST_StartPoint(geom), 4326)) lon, ST_Y(ST_Transform(ST_StartPoint(geom), 4326)) lat, gid, lanes FROM roads WHERE road_name = 'Market Street'");
    const t = tileOf(rows[0].lon, rows[0].lat, 12);
    const roads = readMvt((await get(`${server.url}/data/roads/${t.z}/${t.x}/${t.y}.pbf`)).body).get('roads');
    const market = roads?.features.find((f) => f.properties.road_name === 'Market Street');
    assert.ok(market, 'Market Street in its tile');
    assert.equal(market.type, 2);
    assert.deepEqual(market.properties, { gid: rows[0].gid, road_name: 'Market Street', lanes: rows[0].lanes });
    assert.ok(Math.abs(market.geometry[0][0][0] - t.px) <= 1 && Math.abs(market.geometry[0][0][1] - t.py) <= 1);

    const park = await db.sql('SELECT ST_X(centre) lon, ST_Y(centre) lat, title, tags::text tags FROM parks.areas');
    const pt = tileOf(park.rows[0].lon, park.rows[0].lat, 13);
    const parks = readMvt((await get(`${server.url}/data/parks/${pt.z}/${pt.x}/${pt.y}.pbf`)).body).get('parks');
    assert.equal(parks?.features.length, 1);
    assert.equal(parks.features[0].type, 3);
    assert.deepEqual(parks.features[0].properties, { title: park.rows[0].title, tags: park.rows[0].tags });
  });

  test('zoom and bounds limits: 204 outside, 400 for invalid coordinates', async () => {
    const sf = tileOf(-122.4194, 37.7749, 4);
    assert.equal((await get(`${server.url}/data/roads/${sf.z}/${sf.x}/${sf.y}.pbf`)).status, 204, 'below minzoom 5');
    const deep = tileOf(-122.4194, 37.7749, 17);
    assert.equal((await get(`${server.url}/data/roads/${deep.z}/${deep.x}/${deep.y}.pbf`)).status, 204, 'above maxzoom 16');
    // Far from the roads (London): outside the bounds computed from the data.
    const london = tileOf(-0.1, 51.5, 10);
    assert.equal((await get(`${server.url}/data/roads/${london.z}/${london.x}/${london.y}.pbf`)).status, 204);
    // Inside the bounds but without features: no tile.
    const sea = tileOf(-122.47, 37.81, 16);
    assert.equal((await get(`${server.url}/data/roads/${sea.z}/${sea.x}/${sea.y}.pbf`)).status, 204);
    const bad = await get(`${server.url}/data/places/3/8/0.pbf`);
    assert.equal(bad.status, 400);
    assert.equal(bad.headers.get('content-type'), 'application/problem+json');
    assert.equal((await get(`${server.url}/data/places/0/0/0.png`)).status, 400);
  });

  test('the tile query filters with the spatial index (EXPLAIN)', async () => {
    const cols = await db.sql("SELECT attname AS name, format_type(atttypid, atttypmod) AS type FROM pg_attribute WHERE attrelid = 'public.grid_points'::regclass AND attnum > 0 AND NOT attisdropped ORDER BY attnum");
    const sql = tableTileSql(
      { id: 'grid', schema: 'public', table: 'grid_points', extent: 4096, buffer: 64, minzoom: 0, maxzoom: 22 },
      { schema: 'public', table: 'grid_points', geometryColumn: 'geom', srid: 3857, columns: cols.rows, isFirstGeometry: true },
      'grid',
    );
    const t = tileOf(-122.45, 37.75, 15);
    const plan = (await db.sql(`EXPLAIN ${sql.replace(/\$1::int/g, String(t.z)).replace(/\$2::int/g, String(t.x)).replace(/\$3::int/g, String(t.y))}`)).rows.map((r) => r['QUERY PLAN']).join('\n');
    assert.match(plan, /grid_points_geom_idx/, plan);
    // And a table in 4326 (places): the envelope is transformed, not the column.
    const placesSql = tableTileSql(
      { id: 'p', schema: 'public', table: 'places', extent: 4096, buffer: 64, minzoom: 0, maxzoom: 22 },
      { schema: 'public', table: 'places', geometryColumn: 'geom', srid: 4326, columns: [{ name: 'name', type: 'text' }, { name: 'geom', type: 'geometry(Point,4326)' }], isFirstGeometry: true },
      'p',
    );
    assert.match(placesSql, /"geom" && ST_Transform\(ST_ClipByBox2D\(ST_TileEnvelope\(/);
    await db.sql('SET enable_seqscan = off');
    const plan2 = (await db.sql(`EXPLAIN ${placesSql.replace(/\$1::int/g, '14').replace(/\$2::int/g, '2620').replace(/\$3::int/g, '6332')}`)).rows.map((r) => r['QUERY PLAN']).join('\n');
    assert.match(plan2, /places_geom_idx/, plan2);
  });

  test('a function of (z, x, y) serves its MVT', async () => {
    const t = tileOf(-122.3937, 37.7955, 12);
    const res = await get(`${server.url}/data/fn_places/${t.z}/${t.x}/${t.y}.pbf`);
    assert.equal(res.status, 200);
    const direct = await db.sql('SELECT places_fn($1, $2, $3) AS mvt', [t.z, t.x, t.y]);
    assert.deepEqual(readMvt(res.body), readMvt(direct.rows[0].mvt));
    assert.ok(readMvt(res.body).get('fn_places')!.features.some((f) => f.properties.name === 'Ferry Building'));
    const tj = JSON.parse((await get(`${server.url}/data/fn_places.json`)).text());
    assert.deepEqual(tj.vector_layers, [{ id: 'places_fn', fields: {} }]);
  });

  test('a function with a query argument gets every query parameter, verbatim, as JSON', async () => {
    const injection = "x'); DROP TABLE places; --";
    const qs = new URLSearchParams({ name: injection, colour: 'red', 'odd key"': '1;SELECT 1' });
    const res = await get(`${server.url}/data/echo/3/1/2.pbf?${qs}`);
    assert.equal(res.status, 200);
    const f = readMvt(res.body).get('echo')!.features[0];
    assert.equal(f.properties.name, injection);
    assert.deepEqual(JSON.parse(String(f.properties.query_text)), { name: injection, colour: 'red', 'odd key"': '1;SELECT 1' });
    assert.equal((await db.sql('SELECT count(*)::int AS n FROM places')).rows[0].n, 4, 'the table is still there');
    // Parameters are part of the cache key: another value gives another tile, and no parameters gives {}.
    const other = readMvt((await get(`${server.url}/data/echo/3/1/2.pbf?name=other`)).body).get('echo')!.features[0];
    assert.equal(other.properties.name, 'other');
    const none = readMvt((await get(`${server.url}/data/echo/3/1/2.pbf`)).body).get('echo')!.features[0];
    assert.equal(none.properties.query_text, '{}');
    assert.equal((await get(`${server.url}/data/echo/15/0/0.pbf?name=a`)).status, 204, 'above the function maxzoom');
  });

  test('property: any query parameters reach the function verbatim as one JSON object', async () => {
    // Names and values of any characters but NUL (PostgreSQL text cannot hold it); the first value of a name counts.
    const text = fc.string({ unit: 'binary', maxLength: 12 }).filter((s) => !/[\u0000\uD800-\uDFFF]/.test(s));
    const name = fc.oneof(text, fc.constantFrom('__proto__', 'constructor', 'z', "'; DROP TABLE places; --"));
    await fc.assert(
      fc.asyncProperty(fc.dictionary(name, text, { maxKeys: 4 }), async (params) => {
        const qs = new URLSearchParams(params).toString();
        const res = await get(`${server.url}/data/echo/4/2/5.pbf${qs ? `?${qs}` : ''}`);
        assert.equal(res.status, 200);
        const f = readMvt(res.body).get('echo')!.features[0];
        assert.deepEqual(JSON.parse(String(f.properties.query_text)), { ...params });
      }),
      { numRuns: 40 },
    );
  });

  test('/data.json lists the database sources beside the files', async () => {
    const ids = (JSON.parse((await get(`${server.url}/data.json`)).text()) as { id: string }[]).map((s) => s.id).sort();
    assert.deepEqual(ids, ['echo', 'fn_places', 'omt', 'parks', 'places', 'roads']);
  });
});

describe('PostGIS auto_publish, outage, start-up and reload', () => {
  let db: PostgresCluster;
  before(async () => {
    db = await startPostgres();
  });
  after(() => db?.destroy());

  test('auto_publish offers what the role can read; configured entries win', async () => {
    const url = db.url.replace('postgres@', 'reader@');
    // A table whose name starts with the prefix kept for uploads is published under its qualified name.
    await db.sql('CREATE TABLE public."upload-notes" (id integer, geom geometry(Point, 4326)); GRANT SELECT ON public."upload-notes" TO reader');
    await db.sql(`INSERT INTO public."upload-notes" VALUES (1, ST_SetSRID(ST_MakePoint(-122.3937, 37.7955), 4326))`);
    const server = await startServer({
      // pool_size above the test cluster's max_connections (60): a start-up warning.
      toml: `[postgres]\nconnection_string = "${url}"\nauto_publish = true\npool_size = 100\n\n[[postgres.tables]]\nid = "my_places"\ntable = "places"\nproperties = ["name"]\n`,
      env: { LOG_LEVEL: 'info' },
    });
    try {
      const docs = JSON.parse((await get(`${server.url}/data.json`)).text()) as { id: string; vector_layers: { id: string }[] }[];
      const ids = docs.map((d) => d.id).sort();
      const t14 = tileOf(-122.3937, 37.7955, 14);
      // places is configured as my_places; secret_sites is not readable; slow_tiles not executable; naip/dem
      // return raster file paths (configured under outdb_rasters, never published by discovery).
      assert.deepEqual(ids, ['areas', 'areas.centre', 'echo_query', 'grid_points', 'my_places', 'places_fn', 'public.upload-notes', 'raster_files', 'roads']);
      const notes = await get(`${server.url}/data/public.upload-notes/${t14.z}/${t14.x}/${t14.y}.pbf`);
      assert.equal(notes.status, 200);
      assert.equal(readMvt(notes.body).get('public.upload-notes')?.features.length, 1);
      const t = tileOf(-122.3937, 37.7955, 14);
      const mine = readMvt((await get(`${server.url}/data/my_places/${t.z}/${t.x}/${t.y}.pbf`)).body).get('my_places')!;
      const inTile = (await db.sql('SELECT name FROM places WHERE ST_Intersects(ST_Transform(geom, 3857), ST_TileEnvelope($1, $2, $3)) ORDER BY name', [t.z, t.x, t.y])).rows.map((r) => r.name);
      assert.ok(inTile.length > 0);
      assert.deepEqual(mine.features.map((f) => f.properties).sort((a, b) => String(a.name).localeCompare(String(b.name))), inTile.map((name) => ({ name })));
      const grid = await get(`${server.url}/data/grid_points/14/2620/6332.pbf`);
      assert.ok(grid.status === 200 || grid.status === 204);
      const expected = (await db.sql('SELECT count(*)::int AS n FROM grid_points WHERE ST_Intersects(geom, ST_TileEnvelope(14, 2620, 6332))')).rows[0].n;
      assert.equal(grid.status === 200 ? readMvt(grid.body).get('grid_points')!.features.length : 0, expected);
      assert.ok(expected > 0, 'the test tile holds grid points');
      assert.match(server.output(), /auto_publish: 8 source\(s\) discovered/);
      assert.match(server.output(), /pool_size 100 x 1 processes = 100 connections, above the server's max_connections \(60\)/);
    } finally {
      await server.stop();
      await db.sql('DROP TABLE public."upload-notes"');
    }
  });

  test('database stopped: 503 with Retry-After while PMTiles serves; back without a restart', async () => {
    const server = await startServer({ toml: PMTILES + PG_SECTION(db.url, 'pool_pre_warm = true') });
    try {
      // pool_pre_warm: the pool's 4 connections are open before the first tile (without it: the one that checked the database).
      const open = await db.sql("SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = 'tileserver-ts'");
      assert.ok(open.rows[0].n >= 4, `${open.rows[0].n} connections`);
      const a = tileOf(-122.3937, 37.7955, 14);
      assert.equal((await get(`${server.url}/data/places/${a.z}/${a.x}/${a.y}.pbf`)).status, 200);
      db.stop();
      const b = tileOf(-122.4058, 37.8024, 15);
      const down = await get(`${server.url}/data/places/${b.z}/${b.x}/${b.y}.pbf`);
      assert.equal(down.status, 503);
      assert.equal(down.headers.get('content-type'), 'application/problem+json');
      assert.ok(Number(down.headers.get('retry-after')) > 0);
      const problem = JSON.parse(down.text());
      assert.equal(problem.status, 503);
      assert.equal(problem.title, 'Database unavailable');
      assert.doesNotMatch(problem.detail, /ECONNREFUSED|Error:/);
      assert.equal((await get(`${server.url}/data/echo/2/1/1.pbf?x=1`)).status, 503, 'functions too');
      assert.equal((await get(`${server.url}/data/omt/0/0/0.pbf`)).status, 200, 'PMTiles keeps serving');
      assert.equal((await get(`${server.url}/health`)).status, 200);
      // Liveness stays, readiness goes: /ready names the database.
      const notReady = await get(`${server.url}/ready`);
      assert.equal(notReady.status, 503);
      assert.match(JSON.parse(notReady.text()).detail, /database is unreachable/);
      db.start();
      const back = await waitFor('the database source to recover', async () => {
        const r = await get(`${server.url}/data/places/${b.z}/${b.x}/${b.y}.pbf`);
        return r.status === 200 ? r : undefined;
      });
      assert.ok(readMvt(back.body).get('places')!.features.some((f) => f.properties.name === 'Coit Tower'));
      assert.match(server.output(), /lost the database connection/);
      const ready = await waitFor('readiness to return', async () => {
        const r = await get(`${server.url}/ready`);
        return r.status === 200 ? r : undefined;
      });
      assert.deepEqual(JSON.parse(ready.text()).components, [{ name: 'database', state: 'connected' }]);
      assert.equal(server.proc.exitCode, null, 'the same process');
    } finally {
      await server.stop();
    }
  });

  test('start-up with an unreachable database fails with one line naming it', async () => {
    const port = await freePort();
    const file = `${db.url.replace(/:\d+\//, `:${port}/`)}`;
    const { writeTempConfig } = await import('./helpers/server.js');
    const cfg = writeTempConfig(`[postgres]\nconnection_string = "${file.replace('postgres@', 'postgres:secret-pw@')}"\n`);
    const r = await runCli(['--config', cfg, '--port', '0', '--workers', '1']);
    assert.equal(r.code, 1);
    const lines = r.stderr.trim().split('\n');
    assert.equal(lines.length, 1, r.stderr);
    assert.match(lines[0], new RegExp(`postgres: cannot connect to 127\\.0\\.0\\.1:${port} \\(database "postgres", user "postgres"\\)`));
    assert.doesNotMatch(r.stderr, /secret-pw/);
  });

  test('statement_timeout_ms cuts a slow query (503); SIGHUP with new settings rebuilds the pool', async () => {
    const toml = (ms: number) => `[postgres]\nconnection_string = "${db.url}"\nstatement_timeout_ms = ${ms}\n\n[[postgres.functions]]\nid = "slow"\nfunction = "slow_tiles"\n`;
    const server = await startServer({ toml: toml(300) });
    try {
      const calls = async () => {
        const r = (await db.sql('SELECT last_value, is_called FROM slow_calls')).rows[0];
        return r.is_called ? Number(r.last_value) : 0;
      };
      const before = await calls();
      const slow = await get(`${server.url}/data/slow/1/0/0.pbf`);
      assert.equal(slow.status, 503);
      assert.equal((await calls()) - before, 1, 'the timed-out query ran once, not again');
      assert.equal(JSON.parse(slow.text()).title, 'Database query timed out');
      assert.ok(Number(slow.headers.get('retry-after')) > 0);
      // The same settings otherwise, a longer timeout: the query (1.5 s) now completes with an empty tile.
      writeFileSync(server.configFile!, toml(20_000));
      server.proc.kill('SIGHUP');
      await waitFor('the reload', async () => ((await get(`${server.url}/data/slow/1/0/1.pbf`)).status === 204 ? true : undefined));
    } finally {
      await server.stop();
    }
  });

  test('reload keeps an unchanged pool; flush renews it (in-process server)', async () => {
    const { loadConfigFile } = await import('../src/config/load.js');
    const { startServer: startInProcess } = await import('../src/server.js');
    const { writeTempConfig } = await import('./helpers/server.js');
    const port = await freePort();
    const base = `[server]\nhost = "127.0.0.1"\nport = ${port}\nworkers = 1\n` + PG_SECTION(db.url);
    const file = writeTempConfig(base);
    const running = await startInProcess(loadConfigFile(file));
    const url = `http://127.0.0.1:${port}`;
    const pids = async () =>
      new Set((await db.sql("SELECT pid FROM pg_stat_activity WHERE application_name = 'tileserver-ts'")).rows.map((r) => r.pid as number));
    try {
      const pool0 = running.ctx.holder.current.postgres!;
      assert.equal(pool0.ready(), true);
      assert.equal(await pool0.check(), true);
      assert.equal((await get(`${url}/data/places/0/0/0.pbf`)).status, 200);
      const before = await pids();
      assert.ok(before.size > 0);
      // A changed file whose [postgres] is the same: the pool (and its connections) carry over.
      writeFileSync(file, base + '\n# a comment changes the hash\n');
      assert.equal((await running.reload(loadConfigFile(file))).reloaded, true);
      assert.equal(running.ctx.holder.current.postgres, pool0);
      // flush: an unchanged file, yet a new pool with new connections.
      const flushed = await running.reload(loadConfigFile(file), true);
      assert.equal(flushed.reloaded, true);
      assert.equal(flushed.figures.loaded_sources, running.ctx.holder.current.sources.size);
      const pool1 = running.ctx.holder.current.postgres!;
      assert.notEqual(pool1, pool0);
      assert.equal((await get(`${url}/data/places/1/0/0.pbf`)).status, 200);
      const after = await pids();
      assert.ok([...after].some((p) => !before.has(p)), 'a connection of the new pool');
      // No request holds the replaced state: its pool is closed at once, and its connections leave the database.
      await waitFor('the old pool to disconnect', async () => ([...(await pids())].every((p) => !before.has(p)) ? true : undefined));
      // Without flush and with the same file, nothing is reloaded.
      assert.equal((await running.reload(loadConfigFile(file))).reloaded, false);
    } finally {
      await running.drain(1000);
    }
    // Draining closed the active state's pool: its connections are gone (the replaced ones close after their grace period).
    assert.equal(readFileSync(file, 'utf8').includes('[postgres]'), true);
  });
});
