// Rendering: uncached raster tiles of the showcase style (OSM Liberty), distinct 512 px tiles, with metatile 1, 2
// and 4 and "auto" (adaptive), on three workloads:
//   planet:    the OpenMapTiles planet archive (z0-1) overzoomed to z5-z7 over Europe;
//   city:      z14 tiles that each hold the real Paris z14 tile (the densest fixture);
//   scattered: distinct z7 tiles in a shuffled order, as a load test with a random tile list sends them.
// On planet and city, simulated users (two connections each) fill their own views in 4x4 blocks aligned to a
// grid of 4, so the renderers are saturated and every metatile size covers whole blocks. Then static maps
// (800x600 with a path, markers and a GeoJSON polygon; then the same view bare and with many overlays: a 500-point
// encoded polyline and 50 sprite-icon markers) and social cards one at a time, for their latency.
// Prints tiles/s, tiles/s per core, tiles per CPU-second (every process of the server, browsers included),
// p50/p99, peak memory, the share of CPU time the hypervisor stole during the run, and where a frame's time
// goes (from the Server-Timing header the service sends with every rendered answer).
//
//   node --import tsx bench/render.bench.ts        (make bench runs it; build first: node scripts/build.mjs)
//
// Environment: BENCH_RENDER_SECONDS (measured seconds per tile run, 30), BENCH_RENDER_CLIENTS (concurrent
// connections; default two per core), BENCH_RENDER_METATILES (1,2,4,auto), BENCH_RENDER_WORKLOADS
// (planet,city,scattered; none: only static maps and cards), BENCH_RENDER_SAMPLES (static/og requests, 12), BENCH_WORKERS (worker processes;
// default auto), BENCH_RENDER_EXTRA (extra TOML lines for the [render] section, e.g. "tile_buffer = 0"),
// BENCH_RENDER_THREADS=1 (print CPU per tile by process kind and thread name: where the CPU goes),
// BENCH_STYLE (another style file in place of OSM Liberty), BENCH_NODE_ARGS (node options for the server, e.g.
// "--cpu-prof --cpu-prof-dir=/tmp/prof").
import Database from 'better-sqlite3';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { encodePolyline } from '../test/helpers/polyline.js';
import { ChildServer, cores, cpuByKind, cpuTimes, formatCpuSplit, processTree, statCpu, stealShare, threadCpu, envNumber, fmt, freePort, httpGet, ROOT, serverTimings, table, treePss, type CpuSplit } from './lib.js';

const SECONDS = envNumber('BENCH_RENDER_SECONDS', 30);
const SAMPLES = envNumber('BENCH_RENDER_SAMPLES', 12);
type Metatile = number | 'auto';
const METATILES: Metatile[] = (process.env.BENCH_RENDER_METATILES ?? '1,2,4,auto').split(',').map((v) => (v.trim() === 'auto' ? 'auto' : Number(v)));
const WORKLOADS = (process.env.BENCH_RENDER_WORKLOADS ?? 'planet,city,scattered').split(',').filter((w) => w && w !== 'none') as Workload[];
const WORKERS = process.env.BENCH_WORKERS;
/** Extra node arguments for the server (profiling: BENCH_NODE_ARGS="--cpu-prof --cpu-prof-dir=/tmp/prof"). */
const NODE_ARGS = (process.env.BENCH_NODE_ARGS ?? '').split(' ').filter(Boolean);
const CLI = path.join(ROOT, 'dist/cli.js');
const fixture = (...p: string[]) => path.join(ROOT, 'fixtures', ...p);

/** CPU seconds and proportional memory of the server and everything it started. */
function tree(root: number, withMemory = false): { cpu: number; rss: number } {
  let cpu = 0;
  for (const st of processTree(root).values()) cpu += statCpu(st);
  return { cpu, rss: withMemory ? treePss(root) : 0 };
}

const pct = (sorted: number[], p: number) => (sorted.length ? sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] : NaN);

/**
 * Tiles in blocks of 4x4 over an area, block after block, as a map client fills its view. Blocks are aligned to
 * a grid of 4 (the area is widened to it), so every metatile size covers whole blocks: what a client panning
 * over a region, or a seeding job, sees in steady state. A run of 30 s covers only part of an area, and an
 * unaligned start would leave half-used metatiles at the run's edge that a longer run would use later.
 */
function blocks(z: number, x0: number, x1: number, y0: number, y1: number): string[][] {
  const out: string[][] = [];
  const a = (v: number) => Math.floor(v / 4) * 4;
  for (let by = a(y0); by <= y1; by += 4)
    for (let bx = a(x0); bx <= x1; bx += 4) {
      const block: string[] = [];
      for (let y = by; y < by + 4; y++) for (let x = bx; x < bx + 4; x++) block.push(`${z}/${x}/${y}`);
      out.push(block);
    }
  return out;
}

const tileY = (lat: number, n: number) => Math.floor(((1 - Math.log(Math.tan(Math.PI / 4 + (lat * Math.PI) / 360)) / Math.PI) / 2) * n);
const tileX = (lon: number, n: number) => Math.floor(((lon + 180) / 360) * n);

/**
 * What each simulated user requests, in order. Users are independent map clients (two connections each, as a
 * browser fetching its view): block i of the area goes to user i mod users, so at any time the users are
 * filling different views and every renderer has work.
 */
function perUser(all: string[][], users: number): string[][] {
  const out: string[][] = Array.from({ length: users }, () => []);
  all.forEach((block, i) => out[i % users].push(...block));
  return out;
}

/** The planet archive (z0-1) overzoomed: Europe and around at z5, z6, then z7. */
function planetBlocks(): string[][] {
  return [5, 6, 7].flatMap((z) => blocks(z, tileX(-30, 2 ** z), tileX(60, 2 ** z), tileY(70, 2 ** z), tileY(30, 2 ** z)));
}

/** A block of z14 tiles, each holding the real z14 Paris tile (900 KB, dense), around XYZ 14/8298/5635. */
const CITY = { x0: 8288, y0: 5624, size: 16 };
function cityBlocks(): string[][] {
  return blocks(14, CITY.x0, CITY.x0 + CITY.size - 1, CITY.y0, CITY.y0 + CITY.size - 1);
}

/**
 * Scattered: distinct z7 tiles in a shuffled order (a fixed seed), as a load test with a random tile list sends
 * them. Neighbours are rarely asked for soon after each other, so a metatile's other tiles are mostly wasted.
 */
function scatteredBlocks(): string[][] {
  const tiles: string[] = [];
  for (let y = tileY(70, 128); y <= tileY(30, 128); y++) for (let x = tileX(-30, 128); x <= tileX(60, 128); x++) tiles.push(`7/${x}/${y}`);
  let seed = 42;
  const rnd = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
  for (let i = tiles.length - 1; i > 0; i--) {
    const j = Math.floor(rnd() * (i + 1));
    [tiles[i], tiles[j]] = [tiles[j], tiles[i]];
  }
  return [tiles];
}

function writeCityArchive(file: string): void {
  const paris = gzipSync(readFileSync(fixture('vector/omt-tiles/14_8298_10748.mvt')));
  const db = new Database(file);
  db.exec('CREATE TABLE metadata (name TEXT, value TEXT); CREATE TABLE tiles (zoom_level INTEGER, tile_column INTEGER, tile_row INTEGER, tile_data BLOB);');
  const meta = db.prepare('INSERT INTO metadata VALUES (?, ?)');
  for (const [k, v] of Object.entries({ name: 'city', format: 'pbf', minzoom: '0', maxzoom: '14' })) meta.run(k, v);
  const ins = db.prepare('INSERT INTO tiles VALUES (?, ?, ?, ?)');
  ins.run(0, 0, 0, gzipSync(readFileSync(fixture('vector/omt-tiles/0_0_0.mvt'))));
  for (let x = CITY.x0 - 2; x < CITY.x0 + CITY.size + 2; x++) for (let y = CITY.y0 - 2; y < CITY.y0 + CITY.size + 2; y++) ins.run(14, x, 2 ** 14 - 1 - y, paris);
  db.close();
}

type Workload = 'planet' | 'city' | 'scattered';

interface Server {
  child: ChildServer;
  url: string;
  dir: string;
  peak: number;
  sampler: NodeJS.Timeout;
}

async function start(metatile: Metatile, workload: Workload, cityFile: string): Promise<Server> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'tsts-render-bench-'));
  const port = await freePort();
  const toml = `fonts = "${fixture('fonts')}"
[server]
host = "127.0.0.1"
port = ${port}
${WORKERS ? `workers = ${WORKERS === 'auto' ? '"auto"' : WORKERS}` : ''}
[[sources]]
id = "openmaptiles"
type = "${workload === 'city' ? 'mbtiles' : 'pmtiles'}"
path = "${workload === 'city' ? cityFile : fixture('vector/omt-planet-z0-1.pmtiles')}"
[[sources]]
id = "natural_earth"
type = "pmtiles"
path = "${fixture('raster/natural-earth-png-z0-1.pmtiles')}"
[[styles]]
id = "osm-liberty"
path = "${process.env.BENCH_STYLE ?? fixture('styles/osm-liberty/style.json')}"
[cache]
dir = "${dir}"
[render]
metatile = ${metatile === 'auto' ? '"auto"' : metatile}
${(process.env.BENCH_RENDER_EXTRA ?? '').replace(/;/g, '\n')}
`;
  writeFileSync(path.join(dir, 'config.toml'), toml);
  const child = ChildServer.start(`tileserver-ts (${workload}, metatile ${metatile})`, process.execPath, [...NODE_ARGS, CLI, '--config', path.join(dir, 'config.toml')], { env: { LOG_LEVEL: 'warn' } });
  const url = `http://127.0.0.1:${port}`;
  await child.waitReady(`${url}/health`);
  // Rendering is ready when every process says so (each worker process warms its own pool).
  const deadline = Date.now() + 120_000;
  for (;;) {
    const ping = JSON.parse((await httpGet(`${url}/ping`)).body.toString()) as { renderer_enabled: boolean };
    if (ping.renderer_enabled) break;
    if (Date.now() > deadline) throw new Error(`renderer did not start:\n${child.output()}`);
    await new Promise((r) => setTimeout(r, 500));
  }
  // Other worker processes may still be warming: a short settle before measuring.
  await new Promise((r) => setTimeout(r, 5_000));
  const s: Server = { child, url, dir, peak: 0, sampler: setInterval(() => (s.peak = Math.max(s.peak, tree(child.proc.pid!, true).rss)), 1000) };
  return s;
}

async function stop(s: Server): Promise<void> {
  clearInterval(s.sampler);
  await s.child.stop();
  rmSync(s.dir, { recursive: true, force: true });
}

interface TileRun {
  workload: Workload;
  metatile: Metatile;
  tiles: number;
  seconds: number;
  cpu: number;
  lat: number[];
  rendered: Record<string, number>[];
  errors: number;
  peak: number;
  /** Share of the machine's CPU time stolen by the hypervisor during the run. */
  steal: number;
  /** The server's CPU by kind of process (lib.ts, cpuByKind). */
  split: CpuSplit;
}

async function tileRun(workload: Workload, metatile: Metatile, cityFile: string): Promise<TileRun> {
  const s = await start(metatile, workload, cityFile);
  // Two connections per core already keep every renderer busy (the same tiles/s as four per core, measured), and
  // more only lengthen the queue: p99 "at saturation" is read at the smallest load that saturates.
  const clients = envNumber('BENCH_RENDER_CLIENTS', 2 * Math.max(2, cores()));
  const all = workload === 'city' ? cityBlocks() : workload === 'planet' ? planetBlocks() : scatteredBlocks();
  // Scattered tiles are one shared list; the other workloads are users of two connections each.
  const lists = workload === 'scattered' ? all : perUser(all, Math.max(1, Math.floor(clients / 2)));
  const lat: number[] = [];
  const rendered: Record<string, number>[] = [];
  let errors = 0;
  const cpu0 = tree(s.child.proc.pid!).cpu;
  const byKind = cpuByKind(s.child.proc.pid!);
  const threads0 = process.env.BENCH_RENDER_THREADS ? threadCpu(s.child.proc.pid!) : undefined;
  const steal0 = cpuTimes();
  const t0 = Date.now();
  const end = t0 + SECONDS * 1000;
  const cursor = lists.map(() => 0);
  await Promise.all(
    Array.from({ length: clients }, async (_, c) => {
      const u = c % lists.length;
      const tiles = lists[u];
      // After the deadline a user finishes the block it is in, so that every metatile drawn is counted whole
      // (a run cut mid-block would charge a metatile's whole render to the few tiles served from it).
      while (cursor[u] < tiles.length && (Date.now() < end || (workload !== 'scattered' && cursor[u] % 16 !== 0))) {
        const t = tiles[cursor[u]++];
        const started = performance.now();
        const r = await httpGet(`${s.url}/styles/osm-liberty/${t}.png`, {}, 60_000);
        if (r.status !== 200) {
          errors++;
          continue;
        }
        lat.push(performance.now() - started);
        const tm = serverTimings(r.headers['server-timing']);
        if (tm) rendered.push(tm);
      }
    }),
  );
  const seconds = (Date.now() - t0) / 1000;
  const cpu = tree(s.child.proc.pid!).cpu - cpu0;
  const split = byKind.end();
  const steal = stealShare(steal0, cpuTimes());
  if (threads0) {
    const diff = [...threadCpu(s.child.proc.pid!)].map(([k, v]) => [k, v - (threads0.get(k) ?? 0)] as const).filter(([, v]) => v > 0.05);
    console.log(`${workload}, metatile ${metatile}: CPU ms per tile by thread:`);
    for (const [k, v] of diff.sort((a, b) => b[1] - a[1])) console.log(`  ${k.padEnd(40)} ${fmt((v * 1000) / Math.max(1, lat.length), 1)}`);
  }
  await stop(s);
  return { workload, metatile, tiles: lat.length, seconds, cpu, lat: lat.sort((a, b) => a - b), rendered, errors, peak: s.peak, steal, split };
}

async function sequential(paths: string[], s: Server): Promise<{ lat: number[]; rendered: Record<string, number>[] }> {
  const lat: number[] = [];
  const rendered: Record<string, number>[] = [];
  for (const p of paths) {
    const started = performance.now();
    const r = await httpGet(`${s.url}${p}`, {}, 60_000);
    if (r.status !== 200) throw new Error(`${p}: ${r.status} ${r.body.toString().slice(0, 200)}`);
    lat.push(performance.now() - started);
    const tm = serverTimings(r.headers['server-timing']);
    if (tm) rendered.push(tm);
  }
  return { lat: lat.sort((a, b) => a - b), rendered };
}

function breakdown(rows: Record<string, number>[]): string {
  const keys = ['queue', 'style', 'resources', 'draw', 'readback', 'transfer', 'encode', 'total'];
  const avg = (k: string) => rows.reduce((n, r) => n + (r[k] ?? 0), 0) / Math.max(1, rows.length);
  return keys.map((k) => `${k} ${fmt(avg(k), 1)}`).join(', ') + ` ms (mean of ${rows.length} renders)`;
}

async function main(): Promise<void> {
  const n = cores();
  const work = mkdtempSync(path.join(os.tmpdir(), 'tsts-render-bench-data-'));
  const cityFile = path.join(work, 'city.mbtiles');
  writeCityArchive(cityFile);
  console.log(`machine: ${n} cores; ${SECONDS} s per tile run; style osm-liberty; 512 px PNG; every tile distinct and uncached`);
  console.log('  planet: the OpenMapTiles planet archive (z0-1) overzoomed, Europe at z5-z7');
  console.log('  city:   z14 tiles each holding the real Paris z14 tile (900 KB, the densest fixture)');
  console.log('  scattered: distinct z7 tiles of the planet archive in a shuffled order');
  console.log('  planet and city: users of two connections each fill their own views in 4x4 blocks aligned to a grid of 4');
  const runs: TileRun[] = [];
  for (const w of WORKLOADS) for (const m of METATILES) runs.push(await tileRun(w, m, cityFile));
  const rows = [['workload', 'metatile', 'tiles', 'tiles/s', 'tiles/s/core', 'tiles/CPU-s', 'p50 ms', 'p99 ms', 'errors', 'peak PSS MB', 'steal %']];
  for (const r of runs) {
    rows.push([
      r.workload,
      String(r.metatile),
      String(r.tiles),
      fmt(r.tiles / r.seconds, 2),
      fmt(r.tiles / r.seconds / n, 2),
      fmt(r.tiles / r.cpu, 2),
      fmt(pct(r.lat, 50)),
      fmt(pct(r.lat, 99)),
      String(r.errors),
      fmt(r.peak / 1e6),
      fmt(r.steal * 100),
    ]);
  }
  console.log(table(rows));
  for (const r of runs) {
    console.log(`${r.workload}, metatile ${r.metatile}: per frame: ${breakdown(r.rendered)}`);
    console.log(`${r.workload}, metatile ${r.metatile}: ${formatCpuSplit(r.split)}`);
  }

  const s = await start(METATILES[METATILES.length - 1], 'planet', cityFile);
  const statics: string[] = [];
  const ogs: string[] = [];
  for (let i = 0; i < SAMPLES; i++) {
    const lon = -5 + i * 1.7;
    const lat = 44 + (i % 5);
    const poly = encodeURIComponent(
      JSON.stringify({ type: 'Feature', properties: { fill: '#00ff00', 'fill-opacity': 0.4 }, geometry: { type: 'Polygon', coordinates: [[[lon - 2, lat - 1], [lon + 2, lat - 1], [lon + 2, lat + 1], [lon - 2, lat + 1], [lon - 2, lat - 1]]] } }),
    );
    statics.push(`/styles/osm-liberty/static/${lon},${lat},5/800x600.png?path=path-4+f00(${lon - 3},${lat - 2}|${lon + 3},${lat + 2})&marker=pin-m-A+00f(${lon},${lat})~pin-s+f00(${lon + 1},${lat})&geojson=${poly}`);
    ogs.push(`/og/osm-liberty?center=${lat},${lon}&zoom=5`);
  }
  // Many overlays against the same maps without them, each view distinct (no cache): what drawing and compositing
  // a long encoded polyline and 50 icon markers adds to a render.
  const bare: string[] = [];
  const heavy: string[] = [];
  for (let i = 0; i < SAMPLES; i++) {
    const lon = -4 + i * 1.3;
    const lat = 45 + (i % 4);
    const view = `/styles/osm-liberty/static/${lon},${lat},5/800x600.png?attribution=false`;
    const line = Array.from({ length: 500 }, (_, k): [number, number] => [lon - 4 + (8 * k) / 500, lat + 2 * Math.sin(k / 20)]);
    const icons = Array.from({ length: 50 }, (_, k) => `marker=${encodeURIComponent(`${lon - 4 + (k % 10) * 0.8},${lat - 2 + Math.floor(k / 10) * 0.8}|sprite:airport`)}`);
    bare.push(`${view}&n=${i}`);
    heavy.push(`${view}&path=${encodeURIComponent(`stroke:red|width:3|enc:${encodePolyline(line, 5)}`)}&${icons.join('&')}`);
  }
  const steal0 = cpuTimes();
  const st = await sequential(statics, s);
  const stBare = await sequential(bare, s);
  const stHeavy = await sequential(heavy, s);
  const og = await sequential(ogs, s);
  const steal = stealShare(steal0, cpuTimes());
  const peak = s.peak;
  await stop(s);
  console.log(
    table([
      ['request', 'n', 'p50 ms', 'p99 ms'],
      ['static 800x600, path+markers+geojson', String(st.lat.length), fmt(pct(st.lat, 50)), fmt(pct(st.lat, 99))],
      ['static 800x600, no overlay', String(stBare.lat.length), fmt(pct(stBare.lat, 50)), fmt(pct(stBare.lat, 99))],
      ['static 800x600, 500-point polyline + 50 icons', String(stHeavy.lat.length), fmt(pct(stHeavy.lat, 50)), fmt(pct(stHeavy.lat, 99))],
      ['og 1200x630', String(og.lat.length), fmt(pct(og.lat, 50)), fmt(pct(og.lat, 99))],
    ]),
  );
  console.log(`static: per frame: ${breakdown(st.rendered)}`);
  console.log(`static, no overlay: per frame: ${breakdown(stBare.rendered)}`);
  console.log(`static, 500-point polyline + 50 icons: per frame: ${breakdown(stHeavy.rendered)}`);
  console.log(`og: per frame: ${breakdown(og.rendered)}`);
  console.log(`peak memory (PSS) of the server with its renderers (static/og run): ${fmt(peak / 1e6)} MB; CPU stolen by the hypervisor meanwhile: ${fmt(steal * 100)} %`);
  rmSync(work, { recursive: true, force: true });
}

await main();
