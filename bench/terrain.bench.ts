// Terrain (issue 35): what hillshade and contour tiles and the batch elevation API cost, against GDAL's command-line
// tools doing the same work on the same windows in the same run. The issue's targets: a 512 px hillshade tile under
// 15 ms of CPU warm (martin publishes 10-15 ms), a contour tile under 25 ms, 10,000 points under 200 ms.
//   1. Warm tiles: one server (workers = 1, [raster] tile_size = 512, tile cache OFF) with a COG source and a PMTiles
//      archive of the same hill, already running, its datasets open and its pool threads started by a warm-up round.
//      Every tile over the hill at BENCH_TERRAIN_ZOOMS is fetched once per pass, by 1 and then 2 clients on
//      keep-alive connections: tiles/s, p50/p95, the server's CPU per tile (its process tree, from /proc) split by
//      thread, and the load generator's own CPU. Hillshade is measured in `mode=grey&method=basic` (the pixels
//      gdaldem writes) and in the default colour mode (MapLibre's overlay).
//   2. Cold tiles: a freshly started server per source and product, its first BENCH_TERRAIN_COLD tiles after /health
//      answers: the first tile's latency and CPU (thread start, GDAL loading in the raster thread, dataset open,
//      code not yet optimised), and the mean CPU per tile over those first tiles.
//   3. The peer, as a user would run it: `gdalwarp` of the server's exact window (same extent, size, bilinear,
//      Float32, NaN no-data, one warp thread) from the COG, then `gdaldem hillshade` (PNG, as the server answers) and
//      `gdal_contour` (GeoJSON) on it. CPU from this process's reaped children (cutime + cstime of /proc/self/stat),
//      warp and product timed apart, so "gdaldem alone" (a window already warped) and "warp + gdaldem" (what the
//      server's tile does) are both stated. Each is a process of its own: `gdalinfo --version` shows that floor.
//   4. Batch elevation: 10,000 seeded random points inside the hill, POSTed to the COG source (read at the file's
//      resolution) and to the archive (read from its deepest tiles): ms per request and server CPU per request;
//      `gdallocationinfo -valonly -wgs84` reading the same points from stdin, one process, beside it.
//
//   BENCH=terrain make bench          (or: node --import tsx bench/terrain.bench.ts after a build)
//
// Environment: BENCH_TERRAIN_QUICK=1 (a smoke run: a few tiles, requests and processes; the figures mean nothing),
// BENCH_TERRAIN_ZOOMS (zooms of the tile list, 12,13,14), BENCH_TERRAIN_COLD (first tiles timed on a fresh server, 10),
// BENCH_TERRAIN_PEER_TILES (windows the GDAL tools run on, 40), BENCH_TERRAIN_ELEVATION_RUNS (requests per source, 8).
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { defaultContourInterval } from '../src/terrain/contours.js';
import { ChildServer, cores, envNumber, fmt, freePort, processTree, ROOT, statCpu, table } from './lib.js';
import { random } from '../scripts/build-bench-data.js';

const QUICK = process.env.BENCH_TERRAIN_QUICK === '1';
const ZOOMS = (process.env.BENCH_TERRAIN_ZOOMS ?? '12,13,14').split(',').map(Number);
const COLD_TILES = envNumber('BENCH_TERRAIN_COLD', QUICK ? 3 : 10);
const PEER_TILES = envNumber('BENCH_TERRAIN_PEER_TILES', QUICK ? 3 : 40);
const ELEVATION_RUNS = envNumber('BENCH_TERRAIN_ELEVATION_RUNS', QUICK ? 2 : 8);
/** Tiles per pass in a smoke run: enough to see every column filled. */
const QUICK_TILES = 8;
const POINTS = 10_000;
const TILE_SIZE = 512;
/** The server's windows (src/serve/terrain-tiles.ts): one pixel of border for Horn's slope, a 256 px contour grid with 4. */
const HILLSHADE_BORDER = 1;
const CONTOUR_GRID = 256;
const CONTOUR_BORDER = 4;
const TARGET_HILLSHADE_MS = 15;
const TARGET_CONTOUR_MS = 25;
const TARGET_POINTS_MS = 200;

const CLI = path.join(ROOT, 'dist/cli.js');
const HILL = path.join(ROOT, 'fixtures/dem/hill.cog.tif');
const HILL_PMTILES = path.join(ROOT, 'fixtures/dem/hill-terrarium.pmtiles');
/** The hill's extent in EPSG:3857 (gdalinfo fixtures/dem/hill.cog.tif): 400 px of 60 m around 10.05E 46.55N. */
const HILL_3857 = { minx: 1106760.882, miny: 5856929.463, maxx: 1130760.882, maxy: 5880929.463 };
const HALF_WORLD = 20037508.342789244;
/** The grey shading gdaldem also draws: -z 1 -az 315 -alt 45, Horn's basic formula (test/terrain.test.ts checks the pixels agree). */
const GREY = 'mode=grey&method=basic&exaggeration=1&azimuth=315&altitude=45';

const SOURCES = [
  { id: 'hill-cog', label: 'COG (hill.cog.tif)', toml: `type = "cog"\npath = ${JSON.stringify(HILL)}\ndem = { encoding = "terrarium" }` },
  { id: 'hill-pm', label: 'PMTiles (terrarium 256 px PNG)', toml: `type = "pmtiles"\npath = ${JSON.stringify(HILL_PMTILES)}\ndem = { encoding = "terrarium" }` },
] as const;
type SourceId = (typeof SOURCES)[number]['id'];

const PRODUCTS = [
  { name: 'hillshade grey', route: (t: Tile) => `hillshade/${t.z}/${t.x}/${t.y}.png?${GREY}`, target: TARGET_HILLSHADE_MS },
  { name: 'hillshade colour', route: (t: Tile) => `hillshade/${t.z}/${t.x}/${t.y}.png`, target: TARGET_HILLSHADE_MS },
  { name: 'contours', route: (t: Tile) => `contours/${t.z}/${t.x}/${t.y}.pbf`, target: TARGET_CONTOUR_MS },
] as const;
type Product = (typeof PRODUCTS)[number];

interface Tile {
  z: number;
  x: number;
  y: number;
}

/** Every tile at zoom z whose square meets the hill's extent (web-mercator tiles are squares in EPSG:3857). */
function tilesOverHill(z: number): Tile[] {
  const span = (2 * HALF_WORLD) / 2 ** z;
  const col = (mx: number) => Math.floor((mx + HALF_WORLD) / span);
  const row = (my: number) => Math.floor((HALF_WORLD - my) / span);
  const out: Tile[] = [];
  for (let y = row(HILL_3857.maxy); y <= row(HILL_3857.miny); y++) for (let x = col(HILL_3857.minx); x <= col(HILL_3857.maxx); x++) out.push({ z, x, y });
  return out;
}

/** `n` tiles spread evenly over the list (every zoom represented), for the smoke run and the peer's windows. */
function spread<T>(list: T[], n: number): T[] {
  if (n >= list.length) return list;
  return Array.from({ length: n }, (_, i) => list[Math.floor((i * list.length) / n)]);
}

/**
 * The extent of a tile's window as src/raster/dem-read.ts defines it (it reads the hill, a web-mercator file,
 * directly and samples it as gdalwarp would; other files it gives to gdalwarp with these arguments).
 */
function windowExtent(t: Tile, size: number, border: number): { te: number[]; side: number } {
  const span = (2 * HALF_WORLD) / 2 ** t.z;
  const pixel = span / size;
  const minx = -HALF_WORLD + t.x * span - border * pixel;
  const maxy = HALF_WORLD - t.y * span + border * pixel;
  const side = size + 2 * border;
  return { te: [minx, maxy - side * pixel, minx + side * pixel, maxy], side };
}

/** Latitude of a tile's centre: gdaldem's -s (vertical to horizontal units) is cos(latitude) on mercator metres. */
function centreLatitude(t: Tile): number {
  const n = Math.PI - (2 * Math.PI * (t.y + 0.5)) / 2 ** t.z;
  return (180 / Math.PI) * Math.atan(Math.sinh(n));
}

const quantile = (sorted: number[], p: number) => sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))] ?? NaN;
const ms = (v: number, digits = 1) => `${fmt(v, digits)} ms`;
const verdict = (value: number, target: number) => (value < target ? 'met' : 'NOT met');

function startServer(dir: string, port: number, name: string, sources: readonly (typeof SOURCES)[number][]): ChildServer {
  const file = path.join(dir, `${name}.toml`);
  // Cache off: every request computes its tile, even when a pass asks for it again (each pass asks once anyway).
  const body =
    `[server]\nhost = "127.0.0.1"\nport = ${port}\nworkers = 1\n\n[cache]\nenabled = false\n\n[raster]\ntile_size = ${TILE_SIZE}\n\n` +
    sources.map((s) => `[[sources]]\nid = "${s.id}"\n${s.toml}\n`).join('\n');
  writeFileSync(file, body);
  return ChildServer.start(name, process.execPath, [CLI, '--config', file], { env: { LOG_LEVEL: 'warn' } });
}

interface Answer {
  status: number;
  bytes: number;
}

/** One request on the given agent (keep-alive, as a map client's connections are); the body read to its end. */
function request(agent: http.Agent, url: string, body?: string): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      url,
      { agent, method: body === undefined ? 'GET' : 'POST', headers: body === undefined ? {} : { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) }, timeout: 60_000 },
      (res) => {
        let bytes = 0;
        res.on('data', (c: Buffer) => (bytes += c.length));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, bytes }));
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error(`${url}: timed out`)));
    req.on('error', reject);
    req.end(body);
  });
}

/** Same as request, keeping the body (the elevation answers are checked against GDAL's). */
function post(agent: http.Agent, url: string, body: string): Promise<{ status: number; text: string }> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { agent, method: 'POST', headers: { 'content-type': 'application/json', 'content-length': Buffer.byteLength(body) }, timeout: 60_000 }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, text: Buffer.concat(chunks).toString('utf8') }));
      res.on('error', reject);
    });
    req.on('error', reject);
    req.end(body);
  });
}

interface Pass {
  tiles: number;
  ok: number;
  empty: number;
  seconds: number;
  /** Sorted latencies, ms. */
  times: number[];
  serverCpuMs: number;
  clientCpuMs: number;
  /** Server CPU by thread name over the pass, seconds. */
  threads: Map<string, number>;
}

/** Each path once, `clients` at a time, each client on its own keep-alive connection. Anything but 200/204 fails the run. */
async function runPass(server: ChildServer, base: string, paths: string[], clients: number): Promise<Pass> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: clients });
  const pid = server.proc.pid as number;
  const times: number[] = [];
  let ok = 0;
  let empty = 0;
  let next = 0;
  const threads0 = serverThreads(pid);
  const cpu0 = server.cpuSeconds() ?? NaN;
  const client0 = process.cpuUsage();
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: clients }, async () => {
      while (next < paths.length) {
        const p = paths[next++];
        const s = performance.now();
        const r = await request(agent, base + p);
        times.push(performance.now() - s);
        if (r.status === 200 && r.bytes > 0) ok++;
        // A contour tile without a line is a 204: computed all the same (window read, grid traced).
        else if (r.status === 204) empty++;
        else throw new Error(`${p}: status ${r.status} (${r.bytes} bytes)\n${server.output()}`);
      }
    }),
  );
  const seconds = (performance.now() - t0) / 1000;
  const client = process.cpuUsage(client0);
  const serverCpuMs = ((server.cpuSeconds() ?? NaN) - cpu0) * 1000;
  const threads1 = serverThreads(pid);
  const threads = new Map<string, number>();
  for (const [k, v] of threads1) threads.set(k, v - (threads0.get(k) ?? 0));
  agent.destroy();
  times.sort((a, b) => a - b);
  return { tiles: paths.length, ok, empty, seconds, times, serverCpuMs, clientCpuMs: (client.user + client.system) / 1000, threads };
}

/**
 * CPU seconds so far of every thread of the server's process tree. Node names its worker threads, the libuv pool
 * and V8's helpers all "node", so the useful split is the main thread (the event loop, which must stay free) against
 * the others (the terrain pool's worker threads, the raster thread, the libuv pool GDAL's async calls run on, GC),
 * plus any thread with a name of its own (libvips).
 */
function serverThreads(root: number): Map<string, number> {
  const out = new Map<string, number>();
  for (const pid of processTree(root).keys()) {
    const role = pid === root ? 'server' : `process ${pid}`;
    let tids: string[];
    try {
      tids = readdirSync(`/proc/${pid}/task`);
    } catch {
      continue; // ended meanwhile
    }
    for (const tid of tids) {
      let st: string;
      try {
        st = readFileSync(`/proc/${pid}/task/${tid}/stat`, 'utf8');
      } catch {
        continue;
      }
      const name = st.slice(st.indexOf('(') + 1, st.lastIndexOf(')'));
      const key = Number(tid) === pid ? `${role} main thread` : name === 'node' ? `${role} other threads` : `${role} ${name.replace(/\d+/g, '#')}`;
      out.set(key, (out.get(key) ?? 0) + statCpu(st));
    }
  }
  return out;
}

/** "server main thread 12 %, server other threads 85 %, ..." for the threads that took at least 2 % of the pass's CPU. */
function threadSplit(threads: Map<string, number>): string {
  const total = [...threads.values()].reduce((a, b) => a + Math.max(0, b), 0);
  if (total <= 0) return 'no CPU counted';
  return [...threads]
    .filter(([, v]) => v / total >= 0.02)
    .sort((a, b) => b[1] - a[1])
    .map(([k, v]) => `${k} ${fmt((100 * v) / total)} %`)
    .join(', ');
}

interface WarmRow {
  source: SourceId;
  product: Product;
  clients: number;
  pass: Pass;
}

async function warm(dir: string, tiles: Tile[]): Promise<WarmRow[]> {
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const server = startServer(dir, port, 'terrain-warm', SOURCES);
  const rows: WarmRow[] = [];
  try {
    await server.waitReady(`${base}/health`);
    // Warm-up: every source and product once on tiles of every zoom (threads started, datasets open, code optimised).
    for (const s of SOURCES) for (const p of PRODUCTS) await runPass(server, base, spread(tiles, 6).map((t) => `/data/${s.id}/${p.route(t)}`), 1);
    for (const s of SOURCES) {
      for (const p of PRODUCTS) {
        const paths = tiles.map((t) => `/data/${s.id}/${p.route(t)}`);
        for (const clients of [1, 2]) rows.push({ source: s.id, product: p, clients, pass: await runPass(server, base, paths, clients) });
      }
    }
  } finally {
    await server.stop();
  }
  return rows;
}

interface ColdRow {
  source: SourceId;
  product: string;
  startCpuMs: number;
  firstMs: number;
  firstCpuMs: number;
  meanCpuMs: number;
  tiles: number;
}

/** A fresh server per source and product (the cold state is gone after one), its first tiles after /health answers. */
async function cold(dir: string, tiles: Tile[]): Promise<ColdRow[]> {
  const rows: ColdRow[] = [];
  const first = spread(tiles, COLD_TILES);
  for (const s of SOURCES) {
    for (const p of PRODUCTS.filter((x) => x.name !== 'hillshade colour')) {
      const port = await freePort();
      const base = `http://127.0.0.1:${port}`;
      const server = startServer(dir, port, `terrain-cold-${s.id}`, [s]);
      try {
        await server.waitReady(`${base}/health`);
        const startCpuMs = (server.cpuSeconds() ?? NaN) * 1000;
        const one = await runPass(server, base, first.slice(0, 1).map((t) => `/data/${s.id}/${p.route(t)}`), 1);
        const rest = first.length > 1 ? await runPass(server, base, first.slice(1).map((t) => `/data/${s.id}/${p.route(t)}`), 1) : undefined;
        rows.push({
          source: s.id,
          product: p.name,
          startCpuMs,
          firstMs: one.times[0],
          firstCpuMs: one.serverCpuMs,
          meanCpuMs: (one.serverCpuMs + (rest?.serverCpuMs ?? 0)) / first.length,
          tiles: first.length,
        });
      } finally {
        await server.stop();
      }
    }
  }
  return rows;
}

let clockTicks: number | undefined;

/** CPU seconds of this process's children that have ended and been waited for (spawnSync waits for each). */
function childrenCpuSeconds(): number {
  clockTicks ??= Number(spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).stdout.trim()) || 100;
  const stat = readFileSync('/proc/self/stat', 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // Fields 16 and 17 of stat: cutime and cstime.
  return (Number(f[13]) + Number(f[14])) / clockTicks;
}

interface Measured {
  cpuMs: number;
  wallMs: number;
}

/** Runs a command line and returns its CPU (user + system, from the reaped child's times) and wall time. */
function run(cmd: string, args: string[], input?: string): Measured & { stdout: string } {
  const c0 = childrenCpuSeconds();
  const t0 = performance.now();
  const r = spawnSync(cmd, args, { encoding: 'utf8', input, maxBuffer: 64 * 1024 * 1024 });
  const wallMs = performance.now() - t0;
  const cpuMs = (childrenCpuSeconds() - c0) * 1000;
  if (r.error || r.status !== 0) throw new Error(`${cmd} ${args.join(' ')}: ${r.error?.message ?? `exit ${r.status}`}\n${r.stderr}`);
  return { cpuMs, wallMs, stdout: r.stdout };
}

interface PeerRow {
  step: string;
  cpuMs: number;
  wallMs: number;
  n: number;
}

/** The GDAL command lines on the server's own windows, from the same COG; per-window CPU and wall, means. */
function peer(dir: string, tiles: Tile[]): PeerRow[] {
  const sum = new Map<string, Measured & { n: number }>();
  const add = (step: string, m: Measured) => {
    const s = sum.get(step) ?? { cpuMs: 0, wallMs: 0, n: 0 };
    s.cpuMs += m.cpuMs;
    s.wallMs += m.wallMs;
    s.n++;
    sum.set(step, s);
  };
  const warpArgs = (t: Tile, size: number, border: number, out: string) => {
    const { te, side } = windowExtent(t, size, border);
    // The window src/raster/dem-read.ts makes (gdalwarp's arguments for files it does not read directly), written
    // to a file as a user's would be.
    return ['-q', '-overwrite', '-of', 'GTiff', '-t_srs', 'EPSG:3857', '-te', ...te.map(String), '-ts', String(side), String(side), '-r', 'bilinear', '-ot', 'Float32', '-dstnodata', 'nan', '-wo', 'NUM_THREADS=1', HILL, out];
  };
  // Files and libraries in the page cache first, as they are for the warm server.
  run('gdalinfo', ['--version']);
  run('gdalinfo', ['-nomd', HILL]);
  for (const [i, t] of tiles.entries()) {
    const hsWindow = path.join(dir, `hs-${i}.tif`);
    const warp = run('gdalwarp', warpArgs(t, TILE_SIZE, HILLSHADE_BORDER, hsWindow));
    add('gdalwarp, hillshade window', warp);
    const shade = run('gdaldem', ['hillshade', '-q', '-of', 'PNG', '-z', '1', '-s', String(Math.cos((centreLatitude(t) * Math.PI) / 180)), '-az', '315', '-alt', '45', hsWindow, path.join(dir, `hs-${i}.png`)]);
    add('gdaldem hillshade alone', shade);
    add('gdalwarp + gdaldem hillshade', { cpuMs: warp.cpuMs + shade.cpuMs, wallMs: warp.wallMs + shade.wallMs });

    const ctWindow = path.join(dir, `ct-${i}.tif`);
    const warpC = run('gdalwarp', warpArgs(t, CONTOUR_GRID, CONTOUR_BORDER, ctWindow));
    add('gdalwarp, contour window', warpC);
    const out = path.join(dir, `ct-${i}.geojson`);
    rmSync(out, { force: true });
    const contour = run('gdal_contour', ['-q', '-a', 'ele', '-i', String(defaultContourInterval(t.z, 'm')), '-f', 'GeoJSON', ctWindow, out]);
    add('gdal_contour alone', contour);
    add('gdalwarp + gdal_contour', { cpuMs: warpC.cpuMs + contour.cpuMs, wallMs: warpC.wallMs + contour.wallMs });

    add('gdalinfo --version (a GDAL process, no work)', run('gdalinfo', ['--version']));
  }
  return [...sum].map(([step, s]) => ({ step, cpuMs: s.cpuMs / s.n, wallMs: s.wallMs / s.n, n: s.n }));
}


/** POINTS lon/lat points inside the hill (a 1 km margin keeps every point on data for every reader). */
function points(): [number, number][] {
  const rnd = random(35);
  const toLon = (mx: number) => (mx / HALF_WORLD) * 180;
  const toLat = (my: number) => (180 / Math.PI) * (2 * Math.atan(Math.exp((my / HALF_WORLD) * Math.PI)) - Math.PI / 2);
  const m = 1000;
  return Array.from({ length: POINTS }, () => {
    const mx = HILL_3857.minx + m + rnd() * (HILL_3857.maxx - HILL_3857.minx - 2 * m);
    const my = HILL_3857.miny + m + rnd() * (HILL_3857.maxy - HILL_3857.miny - 2 * m);
    return [Math.round(toLon(mx) * 1e7) / 1e7, Math.round(toLat(my) * 1e7) / 1e7];
  });
}

interface ElevationRow {
  reader: string;
  p50: number;
  min: number;
  cpuMs: number;
  clientCpuMs: number;
  runs: number;
  /** Points answered without a value (null from the server, the file's no-data value from GDAL). */
  missing: number;
  /** Mean absolute difference from gdallocationinfo's values over the points both gave a value for, metres. */
  diff?: number;
}

/** The hill's no-data value (fixtures/PROVENANCE.md: a 20x20 px hole in its south-east corner). */
const HILL_NODATA = -9999;

async function elevation(dir: string, pts: [number, number][]): Promise<ElevationRow[]> {
  // GDAL first: its values are the reference the server's answers are compared with.
  const input = pts.map(([lon, lat]) => `${lon} ${lat}`).join('\n') + '\n';
  const gdalRuns: Measured[] = [];
  let reference: number[] = [];
  for (let i = 0; i < Math.max(1, Math.min(3, ELEVATION_RUNS)); i++) {
    const r = run('gdallocationinfo', ['-valonly', '-wgs84', HILL], input);
    gdalRuns.push(r);
    reference = r.stdout.trim().split('\n').map(Number);
  }
  if (reference.length !== pts.length) throw new Error(`gdallocationinfo gave ${reference.length} values for ${pts.length} points`);
  const byWall = [...gdalRuns].sort((a, b) => a.wallMs - b.wallMs);
  const rows: ElevationRow[] = [
    {
      reader: 'gdallocationinfo -valonly -wgs84 (one process, points on stdin; nearest pixel)',
      p50: quantile(byWall.map((r) => r.wallMs), 0.5),
      min: byWall[0].wallMs,
      cpuMs: gdalRuns.reduce((a, r) => a + r.cpuMs, 0) / gdalRuns.length,
      clientCpuMs: NaN,
      runs: gdalRuns.length,
      missing: reference.filter((v) => v === HILL_NODATA).length,
    },
  ];

  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const server = startServer(dir, port, 'terrain-elevation', SOURCES);
  try {
    await server.waitReady(`${base}/health`);
    const body = JSON.stringify({ points: pts });
    const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
    for (const s of SOURCES) {
      // One request first: dataset open, archive tiles decoded, pool threads started (the warm state).
      const first = await post(agent, `${base}/api/elevation/${s.id}`, body);
      if (first.status !== 200) throw new Error(`POST /api/elevation/${s.id}: ${first.status} ${first.text.slice(0, 300)}`);
      const got = (JSON.parse(first.text) as { elevations: (number | null)[] }).elevations;
      // Near the hole the readers differ by design: gdallocationinfo takes the nearest pixel, the server blends the
      // pixels around a point that have data (or gives none when none has): compared where both gave a value.
      const diffs = got.flatMap((v, i) => (v === null || reference[i] === HILL_NODATA ? [] : [Math.abs(v - reference[i])]));
      const times: number[] = [];
      const cpu0 = server.cpuSeconds() ?? NaN;
      const client0 = process.cpuUsage();
      for (let i = 0; i < ELEVATION_RUNS; i++) {
        const t0 = performance.now();
        const r = await request(agent, `${base}/api/elevation/${s.id}`, body);
        times.push(performance.now() - t0);
        if (r.status !== 200) throw new Error(`POST /api/elevation/${s.id}: status ${r.status}`);
      }
      const client = process.cpuUsage(client0);
      times.sort((a, b) => a - b);
      rows.push({
        reader: `POST /api/elevation/${s.id}, ${s.label}`,
        p50: quantile(times, 0.5),
        min: times[0],
        cpuMs: (((server.cpuSeconds() ?? NaN) - cpu0) * 1000) / ELEVATION_RUNS,
        clientCpuMs: (client.user + client.system) / 1000 / ELEVATION_RUNS,
        runs: ELEVATION_RUNS,
        missing: got.filter((v) => v === null).length,
        diff: diffs.reduce((a, b) => a + b, 0) / diffs.length,
      });
    }
    agent.destroy();
  } finally {
    await server.stop();
  }
  return rows;
}

function gdalVersion(): string {
  return spawnSync('gdalinfo', ['--version'], { encoding: 'utf8' }).stdout.trim();
}

async function main(): Promise<void> {
  if (process.platform !== 'linux') throw new Error('this bench reads CPU times from /proc (Linux only)');
  const all = ZOOMS.flatMap(tilesOverHill);
  const tiles = QUICK ? spread(all, QUICK_TILES) : all;
  const dir = mkdtempSync(path.join(os.tmpdir(), 'tsts-bench-terrain-'));
  process.stdout.write(
    `Terrain (issue 35): node ${process.version}, ${cores()} cores, load average ${os.loadavg().map((l) => fmt(l, 2)).join(' ')} at start, ${gdalVersion()}${QUICK ? ', SMOKE RUN (BENCH_TERRAIN_QUICK=1): few tiles, figures not meaningful' : ''}\n` +
      `server: dist/cli.js, workers = 1, [raster] tile_size = ${TILE_SIZE} (hillshade tiles ${TILE_SIZE} px), tile cache OFF; hill: fixtures/dem/hill.cog.tif and hill-terrarium.pmtiles\n` +
      `tiles: ${tiles.length} of the ${all.length} tiles over the hill at z${ZOOMS.join(',')}, each requested once per pass\n` +
      `warm = the server already running, datasets open and pool threads started by a warm-up round, every tile still computed (cache off);\n` +
      `cold = a freshly started server's first tiles after /health answers (one server per source and product)\n`,
  );
  try {
    const warmRows = await warm(dir, tiles);
    process.stdout.write(`\n1. warm tiles: each tile once per pass, tile cache off; CPU = the server's process tree (all threads), from /proc\n`);
    const rows = [['source', 'product', 'clients', 'tiles', '200/204', 'tiles/s', 'p50', 'p95', 'server CPU/tile', 'client CPU/tile', 'client CPU % of wall', 'target (CPU, 1 client)']];
    for (const r of warmRows) {
      const p = r.pass;
      const cpu = p.serverCpuMs / p.tiles;
      rows.push([
        r.source,
        r.product.name,
        String(r.clients),
        String(p.tiles),
        `${p.ok}/${p.empty}`,
        fmt(p.tiles / p.seconds, 1),
        ms(quantile(p.times, 0.5)),
        ms(quantile(p.times, 0.95)),
        ms(cpu),
        ms(p.clientCpuMs / p.tiles, 2),
        `${fmt((100 * p.clientCpuMs) / (p.seconds * 1000), 1)} %`,
        r.clients === 1 ? `< ${r.product.target} ms: ${verdict(cpu, r.product.target)}` : '',
      ]);
    }
    process.stdout.write(table(rows) + '\n');
    process.stdout.write('  server CPU by thread (1 client; the main thread runs the event loop, the other threads the pools):\n');
    for (const r of warmRows.filter((x) => x.clients === 1)) process.stdout.write(`    ${r.source}, ${r.product.name}: ${threadSplit(r.pass.threads)}\n`);

    const coldRows = await cold(dir, tiles);
    process.stdout.write(`\n2. cold tiles: a fresh server per row, its first ${COLD_TILES} tiles one at a time after /health answers\n`);
    const warmCpu = (source: SourceId, product: string) => {
      const w = warmRows.find((r) => r.source === source && r.product.name === product && r.clients === 1);
      return w ? w.pass.serverCpuMs / w.pass.tiles : NaN;
    };
    process.stdout.write(
      table([
        ['source', 'product', 'start-up CPU (to /health)', 'first tile', 'first tile CPU', `mean CPU/tile, first ${COLD_TILES}`, 'warm CPU/tile'],
        ...coldRows.map((r) => [r.source, r.product, ms(r.startCpuMs, 0), ms(r.firstMs), ms(r.firstCpuMs), ms(r.meanCpuMs), ms(warmCpu(r.source, r.product))]),
      ]) + '\n',
    );

    const peerTiles = spread(tiles, PEER_TILES);
    const peerRows = peer(dir, peerTiles);
    process.stdout.write(
      `\n3. the peer: GDAL's command-line tools on the server's windows (${peerTiles.length} tiles; gdalwarp from hill.cog.tif gives the window the server's COG source reads;\n` +
        `   ${TILE_SIZE + 2 * HILLSHADE_BORDER} px window -> PNG hillshade, ${CONTOUR_GRID + 2 * CONTOUR_BORDER} px window -> GeoJSON contours); CPU of the reaped processes, mean per tile\n`,
    );
    const serverCog = (product: string) => warmCpu('hill-cog', product);
    const compare: Record<string, string> = {
      'gdaldem hillshade alone': 'hillshade grey',
      'gdalwarp + gdaldem hillshade': 'hillshade grey',
      'gdal_contour alone': 'contours',
      'gdalwarp + gdal_contour': 'contours',
    };
    process.stdout.write(
      table([
        ['GDAL step', 'CPU/tile', 'wall/tile', 'server (hill-cog, warm, 1 client) CPU/tile', 'GDAL CPU / server CPU'],
        ...peerRows.map((r) => {
          const product = compare[r.step];
          const s = product ? serverCog(product) : NaN;
          return [r.step, ms(r.cpuMs), ms(r.wallMs), product ? `${ms(s)} (${product})` : '', product ? `${fmt(r.cpuMs / s, 2)}x` : ''];
        }),
      ]) + '\n',
    );
    process.stdout.write(
      "  each GDAL step is a process of its own: the last row is what starting one costs before any work. The server's CPU per tile covers\n" +
        '  its whole tile (window, shading or tracing, encoding, HTTP), so "alone" rows compare part of the peer\'s work with all of ours\n',
    );

    const pts = points();
    const elevationRows = await elevation(dir, pts);
    process.stdout.write(`\n4. batch elevation: ${fmt(POINTS)} seeded random points inside the hill, one request at a time after one unmeasured request\n`);
    process.stdout.write(
      table([
        ['reader', 'runs', 'p50 (wall)', 'fastest', 'CPU/request', 'client CPU/request', 'points without a value', 'mean |diff| vs gdallocationinfo', `target < ${TARGET_POINTS_MS} ms (p50)`],
        ...elevationRows.map((r) => [
          r.reader,
          String(r.runs),
          ms(r.p50),
          ms(r.min),
          ms(r.cpuMs),
          Number.isNaN(r.clientCpuMs) ? '' : ms(r.clientCpuMs),
          String(r.missing),
          r.diff === undefined ? '' : `${fmt(r.diff, 2)} m`,
          r.reader.startsWith('POST') ? verdict(r.p50, TARGET_POINTS_MS) : '',
        ]),
      ]) + '\n',
    );
    process.stdout.write(
      "  the server samples bilinearly (COG at its own pixels, the archive from its deepest tiles), gdallocationinfo takes the nearest pixel: the difference\n" +
        "  is over the points both gave a value for; at the hole's edge the COG reader blends the neighbours that have data where GDAL's nearest pixel has none\n",
    );

    process.stdout.write('\ntargets:\n');
    for (const r of warmRows.filter((x) => x.clients === 1 && x.product.name !== 'hillshade colour')) {
      const cpu = r.pass.serverCpuMs / r.pass.tiles;
      const what = r.product.name === 'contours' ? 'a contour tile' : `a ${TILE_SIZE} px hillshade tile (grey)`;
      process.stdout.write(`  ${what}, ${r.source}: ${ms(cpu)} of CPU warm (target < ${r.product.target} ms): ${verdict(cpu, r.product.target)}\n`);
    }
    for (const r of elevationRows.filter((x) => x.reader.startsWith('POST'))) {
      process.stdout.write(`  ${fmt(POINTS)} points, ${r.reader.slice('POST '.length)}: p50 ${ms(r.p50)} (target < ${TARGET_POINTS_MS} ms): ${verdict(r.p50, TARGET_POINTS_MS)}\n`);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`${(err as Error).stack ?? String(err)}\n`);
  process.exit(1);
});
