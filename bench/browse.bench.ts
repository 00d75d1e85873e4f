// People browsing a dense city map (BENCH=browse make bench): what a k6 test of a rendering host measures, the
// scenario of bench/k6/browse-scenario.ts (the same one bench/k6/browse.ts runs with k6 against any deployment).
// Virtual users with 1920x1080 screens (4 x 3 tiles of 512 px PNG, every fourth user @2x) each ask for the tiles
// of their view they have not seen yet through 6 connections, look for 1 s, then pan one tile or zoom one level;
// six views each. The server runs its default settings (worker processes auto, metatile 2, caches on) with cold
// caches: a fresh server per run.
//
// Data (BENCH_BROWSE_DATA): an MBTiles archive over the browse area in which every position of a zoom holds the
// same real OpenMapTiles tile of that zoom, so each rendered tile is as dense as a city centre.
// - "paris" (default): central Paris at z14 (900 KB, the densest fixture tile: a worst case), Dortmund's centre at
//   z13 (125 KB) and at z12 (285 KB); z15 is drawn from the z14 tiles (overzoom), as with any OpenMapTiles archive.
// - "dortmund": Dortmund's centre at z12 and z13 only, a European old town like the one issue 20 was measured on;
//   z14 and z15 are drawn from the z13 tile (overzoom: each z14 frame lays out a whole z13 tile, so this is
//   heavier per tile than a real z14 archive of the same town).
//
// Prints per run: screen fill p50/p95/max, tile p50/p95/p99, distinct tiles, distinct tiles/s per core and per
// CPU-second (every process of the server, browsers included), peak PSS, errors, and the mean time per phase of
// the renders (from the Server-Timing header of each rendered answer).
//
// Environment: BENCH_BROWSE_USERS (runs, by user count; "1,4"), BENCH_BROWSE_SEED (1), BENCH_BROWSE_REPEAT (runs
// of each user count, 1), BENCH_CPUS (a taskset CPU list for the server, e.g. "0" for one core; per-core figures
// then count those cores), BENCH_WORKERS (server.workers), BENCH_RENDER_EXTRA (extra [render] lines, ";"-separated),
// BENCH_STYLE (another style file), BENCH_BROWSE_DATA ("paris" or "dortmund"), BENCH_BROWSE_FLOOR (1: first measure the
// renderer's floor for the same data, the largest user count and seed, bench/floor.bench.ts, and print the service's
// CPU per tile over it; 0: skip), BENCH_FLOOR_PAGES and BENCH_FLOOR_ALPHA (the floor's, see there), BENCH_BROWSE_STATIC
// (static maps measured after the runs on a fresh server, one at a time at distinct spots of the city; 24, 0: none),
// BENCH_NODE_ARGS (node options for the server, e.g. "--cpu-prof --cpu-prof-dir=/tmp/prof").
import Database from 'better-sqlite3';
import http from 'node:http';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { gzipSync } from 'node:zlib';
import { archiveCover, archiveZooms, browseData, omtTile } from './browse-data.js';
import { floorOptions, formatFloor, runFloor, type FloorResult } from './floor.bench.js';
import { areaAt, BROWSE, percentile, userWalk, viewTiles } from './k6/browse-scenario.js';
import { unmercator } from '../src/render/camera.js';
import { ChildServer, cores, cpuByKind, cpuListSize, envNumber, fmt, formatCpuSplit, freePort, httpGet, outsideRendererGpu, processTree, ROOT, serverTimings, statCpu, table, treePss, type CpuSplit } from './lib.js';

const CLI = path.join(ROOT, 'dist/cli.js');
const fixture = (...p: string[]) => path.join(ROOT, 'fixtures', ...p);
const USERS = (process.env.BENCH_BROWSE_USERS ?? '1,4').split(',').map(Number).filter((n) => n > 0);
const SEED = envNumber('BENCH_BROWSE_SEED', 1);
const REPEAT = envNumber('BENCH_BROWSE_REPEAT', 1);
const CPUS = process.env.BENCH_CPUS;
const STYLE_ID = 'osm-liberty';
const FLOOR = process.env.BENCH_BROWSE_FLOOR !== '0';
/** Extra node arguments for the server (profiling: BENCH_NODE_ARGS="--cpu-prof --cpu-prof-dir=/tmp/prof"). */
const NODE_ARGS = (process.env.BENCH_NODE_ARGS ?? '').split(' ').filter(Boolean);
/** Static maps measured after the browse runs (0: none). */
const STATICS = process.env.BENCH_BROWSE_STATIC === '0' ? 0 : envNumber('BENCH_BROWSE_STATIC', 24);

const DATA_NAME = process.env.BENCH_BROWSE_DATA ?? 'paris';
const DATA = browseData(DATA_NAME);
const DENSE = DATA.tiles;

/**
 * The city archive: every tile of the browse area (and two tiles around it, which metatile buffers reach) at z12-14.
 * Tiles are stored once per zoom and referenced by every position (the MBTiles `map`/`images` layout).
 */
export function writeCityArchive(file: string): number {
  const db = new Database(file);
  db.exec(`CREATE TABLE metadata (name TEXT, value TEXT);
    CREATE TABLE images (tile_id TEXT PRIMARY KEY, tile_data BLOB);
    CREATE TABLE map (zoom_level INTEGER, tile_column INTEGER, tile_row INTEGER, tile_id TEXT);
    CREATE UNIQUE INDEX map_index ON map (zoom_level, tile_column, tile_row);
    CREATE VIEW tiles AS SELECT map.zoom_level, map.tile_column, map.tile_row, images.tile_data FROM map JOIN images ON images.tile_id = map.tile_id;`);
  const meta = db.prepare('INSERT INTO metadata VALUES (?, ?)');
  const zooms = archiveZooms(DATA);
  for (const [k, v] of Object.entries({ name: 'city', format: 'pbf', minzoom: String(zooms.minzoom), maxzoom: String(zooms.maxzoom) })) meta.run(k, v);
  const img = db.prepare('INSERT INTO images VALUES (?, ?)');
  const map = db.prepare('INSERT INTO map VALUES (?, ?, ?, ?)');
  let n = 0;
  db.transaction(() => {
    for (const [zs, name] of Object.entries(DENSE)) {
      const z = Number(zs);
      img.run(`z${z}`, gzipSync(readFileSync(omtTile(name))));
      const c = archiveCover(z);
      for (let x = c.x0; x < c.x1; x++)
        for (let y = c.y0; y < c.y1; y++) {
          map.run(z, x, 2 ** z - 1 - y, `z${z}`);
          n++;
        }
    }
  })();
  db.close();
  return n;
}

function treeCpu(root: number): number {
  let cpu = 0;
  for (const st of processTree(root).values()) cpu += statCpu(st);
  return cpu;
}

interface Answer {
  status: number;
  ms: number;
  timing: Record<string, number> | undefined;
}

function get(agent: http.Agent, url: string): Promise<Answer> {
  const t = performance.now();
  return new Promise((resolve) => {
    const req = http.get(url, { agent, timeout: 120_000 }, (res) => {
      res.resume();
      res.on('end', () => resolve({ status: res.statusCode ?? 0, ms: performance.now() - t, timing: serverTimings(res.headers['server-timing']) }));
      res.on('error', () => resolve({ status: 0, ms: performance.now() - t, timing: undefined }));
    });
    req.on('timeout', () => req.destroy(new Error('timed out')));
    req.on('error', () => resolve({ status: 0, ms: performance.now() - t, timing: undefined }));
  });
}

export interface RunResult {
  users: number;
  fills: number[];
  tiles: number[];
  distinct: number;
  errors: number;
  /** Failed answers by status (0: no answer). */
  statuses: Record<number, number>;
  seconds: number;
  cpu: number;
  peak: number;
  renders: Record<string, number>[];
  /** The server's CPU by kind of process (lib.ts, cpuByKind). */
  split: CpuSplit | undefined;
}

/** One virtual user: its walk, 6 requests at a time, what it has already seen kept client-side. */
async function user(base: string, u: number, out: RunResult, distinct: Set<string>): Promise<void> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: BROWSE.connections });
  const seen = new Set<string>();
  const walk = userWalk(BROWSE, u, SEED);
  for (let i = 0; i < walk.length; i++) {
    const wanted = viewTiles(BROWSE, walk[i]).filter((t) => !seen.has(t));
    if (wanted.length) {
      const started = performance.now();
      let next = 0;
      await Promise.all(
        Array.from({ length: Math.min(BROWSE.connections, wanted.length) }, async () => {
          while (next < wanted.length) {
            const t = wanted[next++];
            const a = await get(agent, `${base}/styles/${STYLE_ID}/${t}`);
            if (a.status !== 200) {
              out.errors++;
              out.statuses[a.status] = (out.statuses[a.status] ?? 0) + 1;
            }
            else seen.add(t);
            distinct.add(t);
            out.tiles.push(a.ms);
            if (a.timing) out.renders.push(a.timing);
          }
        }),
      );
      out.fills.push(performance.now() - started);
    }
    if (i < walk.length - 1) await new Promise((r) => setTimeout(r, BROWSE.thinkMs));
  }
  agent.destroy();
}

/** A fresh server (cold caches) over the city archive with the bench's settings, once its renderers are warm. */
async function startCity(cityFile: string): Promise<{ child: ChildServer; base: string; dir: string }> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'tsts-browse-bench-'));
  const port = await freePort();
  const toml = `fonts = "${fixture('fonts')}"
[server]
host = "127.0.0.1"
port = ${port}
${process.env.BENCH_WORKERS ? `workers = ${process.env.BENCH_WORKERS === 'auto' ? '"auto"' : process.env.BENCH_WORKERS}` : ''}
[[sources]]
id = "openmaptiles"
type = "mbtiles"
path = "${cityFile}"
[[sources]]
id = "natural_earth"
type = "pmtiles"
path = "${fixture('raster/natural-earth-png-z0-1.pmtiles')}"
[[styles]]
id = "${STYLE_ID}"
path = "${process.env.BENCH_STYLE ?? fixture('styles/osm-liberty/style.json')}"
[cache]
dir = "${dir}"
[render]
${(process.env.BENCH_RENDER_EXTRA ?? '').replace(/;/g, '\n')}
`;
  writeFileSync(path.join(dir, 'config.toml'), toml);
  const args = [...NODE_ARGS, CLI, '--config', path.join(dir, 'config.toml')];
  const child = CPUS
    ? ChildServer.start('tileserver-ts', 'taskset', ['-c', CPUS, process.execPath, ...args], { env: { LOG_LEVEL: 'warn' } })
    : ChildServer.start('tileserver-ts', process.execPath, args, { env: { LOG_LEVEL: 'warn' } });
  const base = `http://127.0.0.1:${port}`;
  // /ready answers for the process that takes the connection: ask until several in a row (fresh connections,
  // spread over the processes) say every renderer has warmed up.
  await child.waitReady(`${base}/health`, {}, 120_000);
  for (let ok = 0, deadline = Date.now() + 180_000; ok < 8; ) {
    if (Date.now() > deadline) throw new Error(`the renderers did not warm up:\n${child.output()}`);
    ok = (await httpGet(`${base}/ready`)).status === 200 ? ok + 1 : 0;
    if (ok === 0) await new Promise((r) => setTimeout(r, 500));
  }
  await new Promise((r) => setTimeout(r, 2_000));
  return { child, base, dir };
}

/** One browse run of `users` people on a fresh server over the city archive (bench/seed.bench.ts runs it too). */
export async function run(users: number, cityFile: string): Promise<RunResult> {
  const { child, base, dir } = await startCity(cityFile);
  const pid = child.proc.pid!;
  const out: RunResult = { users, fills: [], tiles: [], distinct: 0, errors: 0, statuses: {}, seconds: 0, cpu: 0, peak: 0, renders: [], split: undefined };
  const sampler = setInterval(() => (out.peak = Math.max(out.peak, treePss(pid))), 500);
  const distinct = new Set<string>();
  const cpu0 = treeCpu(pid);
  const byKind = cpuByKind(pid);
  const t0 = performance.now();
  await Promise.all(Array.from({ length: users }, (_, u) => user(base, u, out, distinct)));
  out.seconds = (performance.now() - t0) / 1000;
  out.cpu = treeCpu(pid) - cpu0;
  out.split = byKind.end();
  out.peak = Math.max(out.peak, treePss(pid));
  clearInterval(sampler);
  out.distinct = distinct.size;
  await child.stop();
  rmSync(dir, { recursive: true, force: true });
  return out;
}

function phases(rows: Record<string, number>[]): string {
  const keys = ['queue', 'wait', 'style', 'resources', 'draw', 'readback', 'transfer', 'encode', 'total'];
  const avg = (k: string) => rows.reduce((n, r) => n + (r[k] ?? 0), 0) / Math.max(1, rows.length);
  return keys.map((k) => `${k} ${fmt(avg(k), 0)}`).join(', ') + ` ms (mean of ${rows.length} rendered answers)`;
}

interface StaticRun {
  ms: number[];
  renders: Record<string, number>[];
  errors: number;
  cpu: number;
  split: CpuSplit | undefined;
}

/**
 * Static maps over the city, one at a time, as a page embedding maps of addresses asks for them: 800x600 with a
 * path and two markers, at z14 and z15, each centred a third of a tile east of the last (wrapping to the next row of
 * the area), so no spot repeats and most of a map's source tiles were parsed for the one before.
 */
async function staticRun(cityFile: string, count: number): Promise<StaticRun> {
  const { child, base, dir } = await startCity(cityFile);
  const pid = child.proc.pid!;
  const out: StaticRun = { ms: [], renders: [], errors: 0, cpu: 0, split: undefined };
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const cpu0 = treeCpu(pid);
  const byKind = cpuByKind(pid);
  for (let i = 0; i < count; i++) {
    const z = 14 + (i % 2);
    const a = areaAt(BROWSE, 14);
    const step = Math.floor(i / 2);
    const perRow = Math.max(1, Math.floor((a.size - 2) * 3));
    const x = (a.x0 + 1 + (step % perRow) / 3) / 2 ** 14;
    const y = (a.y0 + 1.5 + Math.floor(step / perRow) * 0.75) / 2 ** 14;
    const [lon, lat] = unmercator(x, y);
    const d = 0.002;
    const q = `path=path-4+f00(${lon - d},${lat - d}|${lon + d},${lat + d})&marker=pin-m-A+00f(${lon},${lat})~pin-s+f00(${lon + d},${lat})`;
    const res = await get(agent, `${base}/styles/${STYLE_ID}/static/${lon.toFixed(6)},${lat.toFixed(6)},${z}/800x600.png?${q}`);
    if (res.status !== 200) out.errors++;
    out.ms.push(res.ms);
    if (res.timing) out.renders.push(res.timing);
  }
  out.cpu = treeCpu(pid) - cpu0;
  out.split = byKind.end();
  agent.destroy();
  await child.stop();
  rmSync(dir, { recursive: true, force: true });
  return out;
}

async function main(): Promise<void> {
  const work = mkdtempSync(path.join(os.tmpdir(), 'tsts-browse-data-'));
  const cityFile = path.join(work, 'city.mbtiles');
  const stored = writeCityArchive(cityFile);
  const n = CPUS ? cpuListSize(CPUS) : cores();
  console.log(
    `machine: ${cores()} cores${CPUS ? `, server on CPUs ${CPUS} (${n})` : ''}; style ${STYLE_ID}; ${BROWSE.cols}x${BROWSE.rows} tiles of 512 px per screen, ` +
      `${BROWSE.connections} connections per user, ${BROWSE.thinkMs} ms think time, ${BROWSE.views} views per user, z${BROWSE.minZoom}-${BROWSE.maxZoom}, every ${BROWSE.hiDpiEvery}th user @2x; seed ${SEED}`,
  );
  console.log(`data "${DATA_NAME}": ${stored} tile positions, each a real OpenMapTiles tile: ${DATA.describe}`);
  // The floor first, before any server runs, so the two never share the machine.
  let floor: FloorResult | undefined;
  if (FLOOR) {
    if (process.env.BENCH_STYLE) console.log('floor: BENCH_STYLE is set, but the floor draws OSM Liberty');
    floor = await runFloor(floorOptions());
    console.log(formatFloor(floor).join('\n'));
    console.log();
  }
  const results: RunResult[] = [];
  for (const u of USERS) for (let r = 0; r < REPEAT; r++) results.push(await run(u, cityFile));
  const rows = [['users', 'fills', 'fill p50', 'fill p95', 'fill max', 'tile p50', 'tile p95', 'tile p99', 'distinct', 'tiles/s/core', 'tiles/CPU-s', 'outside R+G %', 'peak PSS MB', 'errors']];
  for (const r of results) {
    const f = [...r.fills].sort((a, b) => a - b);
    const t = [...r.tiles].sort((a, b) => a - b);
    rows.push([
      String(r.users),
      String(f.length),
      fmt(percentile(f, 50)),
      fmt(percentile(f, 95)),
      fmt(f[f.length - 1] ?? NaN),
      fmt(percentile(t, 50)),
      fmt(percentile(t, 95)),
      fmt(percentile(t, 99)),
      String(r.distinct),
      fmt(r.distinct / r.seconds / n, 2),
      fmt(r.distinct / r.cpu, 2),
      r.split ? fmt(100 * outsideRendererGpu(r.split), 1) : '',
      fmt(r.peak / 1e6),
      String(r.errors),
    ]);
  }
  console.log(table(rows));
  console.log('(times in ms; distinct tiles/s over the whole run, think time included; CPU of every server process, browsers included)');
  for (const r of results) {
    console.log(`${r.users} user(s): per render: ${phases(r.renders)}`);
    if (r.split) console.log(`${r.users} user(s): ${formatCpuSplit(r.split)}`);
    console.log(`${r.users} user(s): ${fmt((1000 * r.cpu) / r.distinct)} ms of server CPU per distinct tile`);
    if (floor) {
      const ratio = r.cpu / r.distinct / (floor.split.total / floor.tiles);
      console.log(`${r.users} user(s): service CPU per tile / floor CPU per tile = ${fmt(ratio, 2)}x (floor: ${floor.options.users} users, ${fmt((1000 * floor.split.total) / floor.tiles)} ms per tile)`);
    }
    // 503 is the queue's answer under overload (render.queue_timeout_ms): the client is told to retry, nothing broke.
    if (r.errors) console.log(`${r.users} user(s): failed answers by status: ${Object.entries(r.statuses).map(([k, v]) => `${k === '0' ? 'no answer' : k} x${v}`).join(', ')}`);
  }
  if (STATICS > 0) {
    const st = await staticRun(cityFile, STATICS);
    const ms = [...st.ms].sort((a, b) => a - b);
    console.log(
      `static 800x600 with a path and two markers over the city, z14-15, ${ms.length} distinct spots one at a time: p50 ${fmt(percentile(ms, 50))} ms, p95 ${fmt(percentile(ms, 95))} ms, ` +
        `max ${fmt(ms[ms.length - 1] ?? NaN)} ms; ${fmt((1000 * st.cpu) / Math.max(1, ms.length))} ms of server CPU per map; errors ${st.errors}`,
    );
    console.log(`static: per render: ${phases(st.renders)}`);
    if (st.split) console.log(`static: ${formatCpuSplit(st.split)}`);
  }
  rmSync(work, { recursive: true, force: true });
}

// Run directly (not imported by bench/seed.bench.ts).
if (process.argv[1] && import.meta.url === pathToFileURL(path.resolve(process.argv[1])).href) await main();
