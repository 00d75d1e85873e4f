// Database and raster sources: a throwaway PostgreSQL + PostGIS (test/helpers/postgres.ts) with a table of
// points, and the COG fixture.
//   1. PostGIS table tiles/s through the server, tile cache off, against the same ST_AsMVT query run directly
//      with `pg` (same SQL, same number of connections and of requests in flight) in the same run. The ratio is
//      what the server costs on top of the database; the target is >= 0.8.
//   2. The same tiles through the server with the tile cache on (warmed first).
//   3. COG tiles/s per core, cache off (every request warps and encodes a tile), measured with wrk (PNG bodies
//      are large; autocannon saturates on large bodies, see ARCHITECTURE.md).
//
//   BENCH=postgis make bench          (or: node --import tsx bench/postgis.bench.ts after a build)
//
// Environment: BENCH_DURATION (s per run, 10), BENCH_CONNECTIONS (32), BENCH_WORKERS (server processes, cores),
// BENCH_POINTS (rows of the table, 200000).
import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { startPostgres } from '../test/helpers/postgres.js';
import { tableTileSql } from '../src/sources/postgres/table.js';
import { ChildServer, cores, cycleLoad, envNumber, fmt, freePort, httpGet, ROOT, table } from './lib.js';

const DURATION = envNumber('BENCH_DURATION', 10);
const CONNECTIONS = envNumber('BENCH_CONNECTIONS', 32);
const WORKERS = envNumber('BENCH_WORKERS', cores());
const POINTS = envNumber('BENCH_POINTS', 200_000);
const POOL_SIZE = 8;
const CLI = path.join(ROOT, 'dist/cli.js');
const COG = path.join(ROOT, 'fixtures/cog/test-rgb.cog.tif');

/** z14 tiles over the points (around San Francisco): a spread the cache-off runs cycle through. */
function tilesAround(lon0: number, lat0: number, z: number, n: number): string[] {
  const scale = 2 ** z;
  const cx = Math.floor(((lon0 + 180) / 360) * scale);
  const r = (lat0 * Math.PI) / 180;
  const cy = Math.floor(((1 - Math.log(Math.tan(r) + 1 / Math.cos(r)) / Math.PI) / 2) * scale);
  const out: string[] = [];
  for (let dy = -n; dy < n; dy++) for (let dx = -n; dx < n; dx++) out.push(`${z}/${cx + dx}/${cy + dy}`);
  return out;
}

function startServer(port: number, dir: string, name: string, body: string): ChildServer {
  const file = path.join(dir, `${name}.toml`);
  writeFileSync(file, `[server]\nhost = "127.0.0.1"\nport = ${port}\nworkers = ${WORKERS}\n\n${body}`);
  return ChildServer.start(name, process.execPath, [CLI, '--config', file], { env: { LOG_LEVEL: 'warn' } });
}

/** The tile query run straight against the database: `inFlight` loops for `seconds`, cycling through the tiles. */
async function direct(url: string, sql: string, tiles: string[], inFlight: number, seconds: number): Promise<number> {
  const pool = new pg.Pool({ connectionString: url, max: inFlight });
  const end = Date.now() + seconds * 1000;
  let done = 0;
  await Promise.all(
    Array.from({ length: inFlight }, async (_, k) => {
      for (let i = Math.floor((k * tiles.length) / inFlight); Date.now() < end; i++) {
        const [z, x, y] = tiles[i % tiles.length].split('/').map(Number);
        await pool.query({ name: 'bench_tile', text: sql, values: [z, x, y] });
        done++;
      }
    }),
  );
  await pool.end();
  return done / seconds;
}

/** wrk over a list of paths (a Lua script hands them out in turn); requests per second. */
function wrk(base: string, paths: string[], seconds: number, dir: string): number {
  const script = path.join(dir, 'paths.lua');
  writeFileSync(script, `local paths = {${paths.map((p) => JSON.stringify(p)).join(',')}}\nlocal i = 0\nrequest = function()\n  i = i + 1\n  return wrk.format("GET", paths[(i % #paths) + 1])\nend\n`);
  const r = spawnSync('wrk', ['-t', '2', '-c', String(CONNECTIONS), '-d', `${seconds}s`, '-s', script, base], { encoding: 'utf8' });
  if (r.error || r.status !== 0) throw new Error(`wrk failed (install the Debian package wrk): ${r.error?.message ?? r.stderr}`);
  const m = /Requests\/sec:\s+([\d.]+)/.exec(r.stdout);
  const non2xx = /Non-2xx or 3xx responses: (\d+)/.exec(r.stdout);
  if (non2xx) throw new Error(`wrk: ${non2xx[1]} answers were not 2xx`);
  return m ? Number(m[1]) : 0;
}

async function main(): Promise<void> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'tsts-bench-pg-'));
  process.stdout.write(`starting PostgreSQL + PostGIS with ${fmt(POINTS)} points...\n`);
  const db = await startPostgres(['seed.sql']);
  const servers: ChildServer[] = [];
  try {
    await db.sql(`CREATE TABLE bench_points AS
      SELECT i AS id, (i % 1000) AS category, 'name ' || i AS label,
             ST_Transform(ST_SetSRID(ST_MakePoint(-122.52 + random() * 0.2, 37.70 + random() * 0.12), 4326), 3857)::geometry(Point, 3857) AS geom
      FROM generate_series(1, ${POINTS}) AS i`);
    await db.sql('CREATE INDEX ON bench_points USING gist (geom); ANALYZE bench_points');
    const tiles = tilesAround(-122.42, 37.76, 14, 6);
    const cols = (await db.sql("SELECT attname AS name, format_type(atttypid, atttypmod) AS type FROM pg_attribute WHERE attrelid = 'bench_points'::regclass AND attnum > 0 AND NOT attisdropped ORDER BY attnum")).rows;
    const sql = tableTileSql(
      { id: 'points', schema: 'public', table: 'bench_points', extent: 4096, buffer: 64, minzoom: 0, maxzoom: 22, id_column: 'id' },
      { schema: 'public', table: 'bench_points', geometryColumn: 'geom', srid: 3857, columns: cols, isFirstGeometry: true },
      'points',
    );
    const pgSection = (cache: boolean) =>
      `[cache]\nenabled = ${cache}\n\n[postgres]\nconnection_string = "${db.url}"\npool_size = ${POOL_SIZE}\n\n[[postgres.tables]]\nid = "points"\ntable = "bench_points"\nid_column = "id"\nbounds = [-122.6, 37.6, -122.2, 37.9]\n`;
    const inFlight = Math.min(CONNECTIONS, POOL_SIZE * WORKERS);
    const rows: string[][] = [['run', 'tiles/s', 'note']];

    const directRate = await direct(db.url, sql, tiles, inFlight, DURATION);
    rows.push(['PostGIS, ST_AsMVT run directly with pg', fmt(directRate), `${inFlight} queries in flight`]);

    const uncachedPort = await freePort();
    const uncached = startServer(uncachedPort, dir, 'postgis-uncached', pgSection(false));
    servers.push(uncached);
    const base = `http://127.0.0.1:${uncachedPort}`;
    await uncached.waitReady(`${base}/health`);
    const paths = tiles.map((t) => `/data/points/${t}.pbf`);
    const u = await cycleLoad(base, paths, { connections: inFlight, duration: DURATION, timeout: 10, headers: {} });
    if (u.non2xx) throw new Error(`${u.non2xx} answers were not 2xx`);
    rows.push(['PostGIS table through the server, cache off', fmt(u.requests.average), `ratio to direct ${fmt(u.requests.average / directRate, 2)} (target >= 0.8)`]);
    await uncached.stop();

    const cachedPort = await freePort();
    const cached = startServer(cachedPort, dir, 'postgis-cached', pgSection(true));
    servers.push(cached);
    const cbase = `http://127.0.0.1:${cachedPort}`;
    await cached.waitReady(`${cbase}/health`);
    // Every process warms its own cache: enough passes that each has seen every tile.
    for (let pass = 0; pass < WORKERS * 2; pass++) for (const p of paths) await httpGet(`${cbase}${p}`);
    const c = await cycleLoad(cbase, paths, { connections: CONNECTIONS, duration: DURATION, timeout: 10, headers: {} });
    rows.push(['PostGIS table through the server, cache on', fmt(c.requests.average), `${CONNECTIONS} connections`]);
    await cached.stop();

    const cogPort = await freePort();
    const cog = startServer(cogPort, dir, 'cog', `[cache]\nenabled = false\n\n[[sources]]\nid = "rgb"\ntype = "cog"\npath = ${JSON.stringify(COG)}\nmaxzoom = 14\n`);
    servers.push(cog);
    const gbase = `http://127.0.0.1:${cogPort}`;
    // 16 z13 tiles inside the file (it spans 0.2 degrees around -122.4, 37.8).
    const cogTiles = tilesAround(-122.4, 37.8, 13, 2).map((t) => `/data/rgb/${t}.png`);
    await cog.waitReady(`${gbase}${cogTiles[0]}`);
    const cogRate = wrk(gbase, cogTiles, DURATION, dir);
    rows.push(['COG tiles (PNG 256 px), cache off', fmt(cogRate), `${fmt(cogRate / cores(), 1)} per core (${cores()} cores, ${WORKERS} processes)`]);
    await cog.stop();

    process.stdout.write(`\n${table(rows)}\n`);
  } finally {
    for (const s of servers) await s.stop().catch(() => {});
    db.destroy();
    rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((err) => {
  process.stderr.write(`${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
