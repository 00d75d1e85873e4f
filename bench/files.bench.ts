// Data files as vector sources (docs/files.md) against the same rows in PostGIS, through one server in one run:
// the Dortmund OpenMapTiles tile's roads (test/helpers/city-features.ts) written as each format, and loaded into
// a throwaway PostgreSQL + PostGIS with ogr2ogr. For each format and for the PostGIS table: tiles/s with the tile
// cache off (every request cuts a tile), the server's CPU seconds per tile, and the ratio to PostGIS; then each
// file source's memory (the file_source_memory_bytes gauge). Targets (issue 36): GeoPackage >= 0.8x the PostGIS
// path, GeoJSON in memory >= 2x. The runs are made twice: with the workers' default young generation
// (server.semi_space_mb = 64) and with Node's own (0), which decides how much of a file tile's CPU goes to the GC.
//
//   BENCH=files make bench          (or: node --import tsx bench/files.bench.ts after a build)
//
// Environment: BENCH_DURATION (s per run, 10), BENCH_CONNECTIONS (32), BENCH_WORKERS (server processes, cores),
// BENCH_FILES_SEMI (the semi_space_mb values, in order: 64,0), BENCH_FILES_GB (each big file, 2; 0: no big files).
// A new format is one entry of FORMATS: how to write its file from the GeoJSON, and its source's TOML.
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import type { FeatureCollection } from 'geojson';
import { writeGeoParquet } from '../test/helpers/file-data.js';
import { makeBigFiles } from './make-big-files.js';
import os from 'node:os';
import path from 'node:path';
import { CITY_TILE, loadCityIntoPostgis, writeCityFiles, type CityFiles } from '../test/helpers/city-features.js';
import { startPostgres } from '../test/helpers/postgres.js';
import { ChildServer, cores, cycleLoad, envNumber, fmt, freePort, httpGet, ROOT, table, wrk, wrkPathList } from './lib.js';

const DURATION = envNumber('BENCH_DURATION', 10);
const CONNECTIONS = envNumber('BENCH_CONNECTIONS', 32);
const WORKERS = envNumber('BENCH_WORKERS', cores());
const CLI = path.join(ROOT, 'dist/cli.js');
const LAYER = 'transportation';

interface Format {
  /** The source type, and the row's name. */
  type: string;
  /** Writes the format's file of `LAYER` into `dir` from the files already written; returns its path. */
  write(files: CityFiles, dir: string): string;
  /** Keys of its source beyond id, type and path. */
  extra?: string;
}

const FORMATS: Format[] = [
  { type: 'geojson', write: (files) => files.geojson[LAYER] },
  { type: 'geopackage', write: (files) => files.gpkg, extra: `layers = ["${LAYER}"]` },
  {
    type: 'flatgeobuf',
    write: (files, dir) => {
      const out = path.join(dir, `${LAYER}.fgb`);
      const r = spawnSync('ogr2ogr', ['-f', 'FlatGeobuf', out, files.geojson[LAYER], '-sql', `SELECT FID AS fid, * FROM "${LAYER}"`], { encoding: 'utf8' });
      if (r.status !== 0) throw new Error(`ogr2ogr FlatGeobuf: ${r.stderr}`);
      return out;
    },
  },
  {
    type: 'geoparquet',
    write: (files, dir) => {
      const out = path.join(dir, `${LAYER}.parquet`);
      writeGeoParquet(out, [(JSON.parse(readFileSync(files.geojson[LAYER], 'utf8')) as FeatureCollection).features], { rowGroupSize: 1000 });
      return out;
    },
  },
];

/** The workers' young generations (server.semi_space_mb) the sources are measured under, in this order. */
const SEMI_SPACES = (process.env.BENCH_FILES_SEMI ?? '64,0').split(',').map(Number);
/** Gigabytes of each big file (FlatGeobuf, GeoParquet) served in the bounded-memory stage; 0 skips the stage. */
const BIG_GB = process.env.BENCH_FILES_GB === '0' ? 0 : envNumber('BENCH_FILES_GB', 2);
const BIG_DIR = process.env.BENCH_FILES_DIR ?? path.join(os.tmpdir(), 'tileserver-ts-bench-files');

/** The city tile's descendants down to z16: 1 + 4 + 16 + 64 tiles the runs cycle through. */
function cityTiles(): string[] {
  const out: string[] = [];
  for (let dz = 0; dz <= 3; dz++) {
    const n = 2 ** dz;
    for (let dx = 0; dx < n; dx++) for (let dy = 0; dy < n; dy++) out.push(`${CITY_TILE.z + dz}/${CITY_TILE.x * n + dx}/${CITY_TILE.y * n + dy}`);
  }
  return out;
}

async function main(): Promise<void> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'tsts-bench-files-'));
  process.stdout.write('writing the city features as each format, starting PostgreSQL + PostGIS...\n');
  const files = writeCityFiles(dir);
  const db = await startPostgres([]);
  let server: ChildServer | undefined;
  try {
    loadCityIntoPostgis(files, db.url);
    // Statistics and visibility made now, not by autovacuum during the first server's PostGIS runs.
    await db.sql('VACUUM ANALYZE');
    const sources = FORMATS.map((f) => `[[sources]]\nid = "${f.type}"\ntype = "${f.type}"\npath = ${JSON.stringify(f.write(files, dir))}\nmaxzoom = 16\n${f.extra ?? ''}\n`).join('\n');
    const tiles = cityTiles();
    // The same sources under the default young generation of the workers (server.semi_space_mb, 64) and under
    // Node's own (0): a file tile makes many short-lived objects, and that setting decides how many die young.
    for (const semi of SEMI_SPACES) {
      const port = await freePort();
      const scrape = await freePort();
      const config = path.join(dir, `files-${semi}.toml`);
      writeFileSync(
        config,
        `[server]\nhost = "127.0.0.1"\nport = ${port}\nworkers = ${WORKERS}\ndisable_render = true\nsemi_space_mb = ${semi}\n\n[cache]\nenabled = false\n\n[telemetry]\nscrape_bind = "127.0.0.1:${scrape}"\n\n${sources}\n` +
          `[postgres]\nconnection_string = "${db.url}"\npool_size = 8\n\n[[postgres.tables]]\nid = "postgis"\ntable = "${LAYER}"\nid_column = "fid"\nmaxzoom = 16\n`,
      );
      server = ChildServer.start('files', process.execPath, [CLI, '--config', config], { env: { LOG_LEVEL: 'warn' } });
      const base = `http://127.0.0.1:${port}`;
      await server.waitReady(`${base}/health`);
      const rows: string[][] = [['source', 'tiles/s', 'p50', 'server CPU ms per tile', 'wrk CPU ms per tile', 'ratio to PostGIS', 'target']];
      // wrk (C) rather than autocannon: at a few thousand tiles/s autocannon, running in Node on the same two cores,
      // took CPU the server needed. wrk's own CPU per tile is printed.
      const script = (id: string) => wrkPathList(dir, `${id}-${semi}`, tiles.map((t) => `/data/${id}/${t}.pbf`));
      const measure = async (id: string) => {
        const paths = tiles.map((t) => `/data/${id}/${t}.pbf`);
        // Every process cuts each tile once first (in-memory indexes are built at the first tile).
        for (let pass = 0; pass < WORKERS; pass++) for (const p of paths) await httpGet(`${base}${p}`);
        const cpu0 = server!.cpuSeconds() ?? NaN;
        const r = wrk(base, script(id), { threads: 2, connections: CONNECTIONS, seconds: DURATION, headers: {} });
        if (r.errors) throw new Error(`${id}: ${r.errors} answers were not 2xx or failed`);
        const cpu = (server!.cpuSeconds() ?? NaN) - cpu0;
        return { rate: r.rps, cpuMs: (cpu * 1000) / Math.max(1, r.requests), wrkMs: (r.wrkCpu * 1000) / Math.max(1, r.requests), p50: r.p50Ms };
      };
      // A cold server and database: the first seconds of PostGIS load were slower in whichever server came first.
      wrk(base, script('postgis'), { threads: 2, connections: CONNECTIONS, seconds: 3, headers: {} });
      // PostGIS before and after the files (the database shares the cores, and its rate drifts over a run): the
      // ratios are to the mean of the two.
      const before = await measure('postgis');
      const files: { type: string; rate: number; cpuMs: number; wrkMs: number; p50: number }[] = [];
      for (const f of FORMATS) files.push({ type: f.type, ...(await measure(f.type)) });
      const after = await measure('postgis');
      const pgRate = (before.rate + after.rate) / 2;
      const row = (name: string, m: { rate: number; cpuMs: number; wrkMs: number; p50: number }, ratio: string, target: string) => [name, fmt(m.rate), `${fmt(m.p50, 1)} ms`, fmt(m.cpuMs, 2), fmt(m.wrkMs, 3), ratio, target];
      rows.push(row("postgis, first (server CPU only; the database's own is not counted)", before, '', ''));
      rows.push(row('postgis, last', after, '', ''));
      rows.push(['postgis, mean', fmt(pgRate), '', '', '', '1.00', '']);
      for (const m of files) rows.push(row(m.type, m, fmt(m.rate / pgRate, 2), m.type === 'geojson' ? '>= 2 (in memory)' : '>= 0.8'));
      const metrics = (await httpGet(`http://127.0.0.1:${scrape}/metrics`)).body.toString();
      const memory = FORMATS.map((f) => {
        const bytes = Number(new RegExp(`^file_source_memory_bytes\\{source="${f.type}"\\} (\\S+)$`, 'm').exec(metrics)?.[1] ?? NaN);
        return [f.type, `${fmt(bytes / 1048576, 1)} MB`];
      });
      const rss = server.rssBytes() ?? NaN;
      await server.stop().catch(() => {});
      server = undefined;
      const young = semi ? `server.semi_space_mb = ${semi}` : "server.semi_space_mb = 0 (Node's own young generation)";
      process.stdout.write(`\n${tiles.length} tiles (z${CITY_TILE.z}-${CITY_TILE.z + 3}), ${CONNECTIONS} connections, ${WORKERS} processes, ${DURATION} s each, cache off, ${young}\n`);
      process.stdout.write(`${table(rows)}\n\nmemory per source (summed over processes); the server's RSS after the runs: ${fmt(rss / 1048576)} MB\n${table([['source', 'memory'], ...memory])}\n`);
    }
  } finally {
    await server?.stop().catch(() => {});
    db.destroy();
    rmSync(dir, { recursive: true, force: true });
  }
  if (BIG_GB > 0) await bigFiles();
}

/**
 * Files larger than the memory the server is let use: a FlatGeobuf and a GeoParquet of BENCH_FILES_GB each, served
 * by one process whose resident memory is sampled while tiles from all over them are asked for.
 */
async function bigFiles(): Promise<void> {
  const started = Date.now();
  const big = makeBigFiles(BIG_DIR, BIG_GB);
  const made = (Date.now() - started) / 1000;
  const port = await freePort();
  const dir = mkdtempSync(path.join(os.tmpdir(), 'tsts-bench-big-'));
  const config = path.join(dir, 'big.toml');
  writeFileSync(
    config,
    `[server]\nhost = "127.0.0.1"\nport = ${port}\nworkers = 1\ndisable_render = true\n\n[cache]\nenabled = false\n\n` +
      `[[sources]]\nid = "big-fgb"\ntype = "flatgeobuf"\npath = ${JSON.stringify(big.flatgeobuf)}\nmaxzoom = 16\n\n` +
      `[[sources]]\nid = "big-parquet"\ntype = "geoparquet"\npath = ${JSON.stringify(big.geoparquet)}\nmaxzoom = 16\n`,
  );
  const server = ChildServer.start('files-big', process.execPath, [CLI, '--config', config], { env: { LOG_LEVEL: 'warn' } });
  try {
    const base = `http://127.0.0.1:${port}`;
    await server.waitReady(`${base}/health`);
    const idle = server.rssBytes() ?? NaN;
    // z14 tiles over every copy of the city: each copy's centre tile and its three neighbours to the east and south.
    const [w, s, e, n] = big.bounds;
    const tileAt = (lon: number, lat: number, z: number) => {
      const k = 2 ** z;
      const r = (lat * Math.PI) / 180;
      return [Math.floor(((lon + 180) / 360) * k), Math.floor(((1 - Math.log(Math.tan(r) + 1 / Math.cos(r)) / Math.PI) / 2) * k)];
    };
    const paths = (id: string) => {
      const out: string[] = [];
      for (let lon = w + 0.056; lon < e; lon += 0.12) {
        for (let lat = s + 0.04; lat < n; lat += 0.08) {
          const [x, y] = tileAt(lon, lat, 14);
          for (const [dx, dy] of [[0, 0], [1, 0], [0, 1], [1, 1]]) out.push(`/data/${id}/14/${x + dx}/${y + dy}.pbf`);
        }
      }
      return out;
    };
    const rows: string[][] = [['source', 'file size', 'tiles/s', 'CPU ms per tile', 'peak server RSS', 'RSS idle']];
    for (const [id, file] of [['big-fgb', big.flatgeobuf], ['big-parquet', big.geoparquet]] as const) {
      let peak = 0;
      const sampler = setInterval(() => (peak = Math.max(peak, server.rssBytes() ?? 0)), 100);
      const cpu0 = server.cpuSeconds() ?? NaN;
      const r = await cycleLoad(base, paths(id), { connections: 8, duration: DURATION, timeout: 30, headers: {} });
      clearInterval(sampler);
      if (r.non2xx) throw new Error(`${id}: ${r.non2xx} answers were not 2xx`);
      const cpu = (server.cpuSeconds() ?? NaN) - cpu0;
      rows.push([id, `${fmt(statSync(file).size / 1e9, 2)} GB`, fmt(r.requests.average), fmt((cpu * 1000) / Math.max(1, r.requests.total), 2), `${fmt(peak / 1048576)} MB`, `${fmt(idle / 1048576)} MB`]);
    }
    process.stdout.write(
      `\nbig files: ${big.copies} copies of the city (${fmt(big.features)} features, a 16 KB text property each) per file, made or found in ${fmt(made)} s under ${BIG_DIR};\n` +
        `one process, tile cache off, 8 connections, ${DURATION} s per source, z14 tiles over every copy; RSS = the server's process tree, sampled every 100 ms\n${table(rows)}\n`,
    );
  } finally {
    await server.stop().catch(() => {});
    rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((err) => {
  process.stderr.write(`${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
