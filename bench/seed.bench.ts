// Seeding rate (BENCH=seed make bench): `tileserver-ts seed` with the bundled configuration (config/default.toml,
// what `make run` serves), each run in a fresh scratch directory so no render cache helps it:
//   - vector export: the world source (Natural Earth, z0-6) copied into a PMTiles archive, as stored (MVT) and
//     transcoded to MLT, for the whole world at z0-BENCH_SEED_VECTOR_ZOOM (default 6: 5,461 tiles);
//   - raster rendering: the world's generated style and OSM Liberty rendered into an MBTiles archive for Europe
//     at z0-BENCH_SEED_RASTER_ZOOM (default 6), with the configuration's render pool.
// Reported: tiles written (empty tiles are fetched but not written), the whole process's wall seconds (start-up
// and closing the archive included), tiles fetched per second (from the seed's own final progress line: every
// tile asked for, written or empty, over the fetch phase only, so it is not written / seconds) and CPU seconds
// per 100 tiles written of the whole process tree (the seed, its renderers).
// Then another server reads the archives: tileserver-gl-light (the tile benchmark's peer, installed into
// bench/peer on first use) serves the MVT PMTiles and the raster MBTiles, and a sample of their tiles is
// fetched from it and from tileserver-ts serving the same files; the bench prints how many were byte-equal
// (after undoing any Content-Encoding). BENCH_SEED_PEER=off leaves this step out.
//
// Then the city (BENCH_SEED_CITY: "on", "only" for this part alone, "off"): the browse bench's city archive
// (bench/browse-data.ts, BENCH_BROWSE_DATA) seeded with OSM Liberty over a square at the centre of the browse area
// (BENCH_SEED_CITY_EDGE tiles on an edge at z12, default 2) at BENCH_SEED_CITY_ZOOMS (default 12-16), once per bulk
// frame size (BENCH_SEED_FRAMES, render.bulk_metatile, default "2,4,8"; BENCH_SEED_POOL sets render.pool_size and
// BENCH_SEED_PAGES render.pages_per_browser,
// BENCH_SEED_PNG render.seed_png_compression, BENCH_SEED_CPUS a taskset CPU list for the seed such as "0", BENCH_SEED_CONCURRENCY its --concurrency), then
// (unless BENCH_SEED_BROWSE=off) the browse bench's 4-user run on a fresh server over the same
// archive. Per frame size: tiles written, tiles written per second, the whole machine's busy CPU (/proc/stat) per
// tile written (less the bench's own sampling), the seed's process tree's CPU per tile by kind of process, the archive's bytes per tile, the peak
// PSS of the browser's processes per browser (and against the 2x2 frame's, the interactive size); beside it the
// browse run's CPU per distinct tile, measured both ways, and the ratios. On a shared machine the machine's CPU counts the neighbours too: compare within one run.
import { spawn } from 'node:child_process';
import { copyFileSync, mkdtempSync, readFileSync, rmSync, statSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { gunzipSync } from 'node:zlib';
import Database from 'better-sqlite3';
import { bboxCoverage, tilesOf } from '../src/seed/coverage.js';
import { unmercator } from '../src/render/camera.js';
import { run as browseRun, writeCityArchive } from './browse.bench.js';
import { areaAt, BROWSE } from './k6/browse-scenario.js';
import { ChildServer, cpuByKind, cpuListSize, ensurePeer, envNumber, fmt, freePort, groupCpuSeconds, machineBusySeconds, PEER_MAIN, PEER_VERSION, processTree, ROOT, table, type CpuSplit } from './lib.js';

const CLI = path.join(ROOT, 'dist/cli.js');
const CONFIG = path.join(ROOT, 'config/default.toml');
const VECTOR_ZOOM = envNumber('BENCH_SEED_VECTOR_ZOOM', 6);
const RASTER_ZOOM = envNumber('BENCH_SEED_RASTER_ZOOM', 6);
const EUROPE = '-12,35,32,61';
const WORLD = '-180,-85,180,85';
const PEER_CHECK = (process.env.BENCH_SEED_PEER ?? 'on').toLowerCase() !== 'off';
/** Tiles fetched from each archive by both servers. */
const PEER_SAMPLE = envNumber('BENCH_SEED_PEER_SAMPLE', 60);

interface Run {
  name: string;
  args: string[];
  out: string;
  /** Copy the archive to this path (the peer step reads it) before the scratch directory goes. */
  keepAs?: string;
}

interface Outcome {
  tiles: number;
  seconds: number;
  tilesPerS: number;
  cpuPer100: number | undefined;
}

/** One seed in its own process group and scratch directory; its last JSON progress line and CPU time. */
function seed(run: Run): Promise<Outcome> {
  const scratch = mkdtempSync(path.join(os.tmpdir(), 'tsts-seed-bench-'));
  const out = path.join(scratch, run.out);
  const started = performance.now();
  const child = spawn(process.execPath, [CLI, 'seed', '--config', CONFIG, ...run.args, '--out', out], {
    detached: true,
    stdio: ['ignore', 'pipe', 'inherit'],
    env: { ...process.env, TMPDIR: scratch, LOG_LEVEL: 'warn' },
  });
  let stdout = '';
  let cpu: number | undefined;
  child.stdout.on('data', (d) => (stdout += d));
  // The group's CPU time is read while its processes exist: each sample replaces the last, the last one counts.
  const sampler = setInterval(() => (cpu = groupCpuSeconds(child.pid!) ?? cpu), 250);
  return new Promise((resolve, reject) => {
    child.once('exit', (code) => {
      clearInterval(sampler);
      // A renderer's browser may still be writing its profile for a moment after the seed has exited.
      if (code === 0 && run.keepAs) copyFileSync(out, run.keepAs);
      rmSync(scratch, { recursive: true, force: true, maxRetries: 10, retryDelay: 200 });
      const last = stdout.trim().split('\n').at(-1);
      if (code !== 0 || !last) return reject(new Error(`${run.name}: seed exited ${code}\n${stdout}`));
      const line = JSON.parse(last) as { written: number; tiles_per_s: number };
      const seconds = (performance.now() - started) / 1000;
      resolve({ tiles: line.written, seconds, tilesPerS: line.tiles_per_s, cpuPer100: cpu === undefined ? undefined : (cpu / Math.max(1, line.written)) * 100 });
    });
    child.once('error', reject);
  });
}

/** The archives the peer step reads (the vector PMTiles and the world style's raster MBTiles). */
const KEPT = mkdtempSync(path.join(os.tmpdir(), 'tsts-seed-bench-kept-'));

interface Sampled {
  /** Path under /data/{id}/ (z/x/y.ext). */
  tile: string;
}

/** Every n-th tile of a list, so that the sample spans its zooms; at most `count`. */
const spread = <T>(all: T[], count: number): T[] => all.filter((_, i) => i % Math.max(1, Math.floor(all.length / count)) === 0).slice(0, count);

/** The MVT archive's tiles: the world box at z0-VECTOR_ZOOM, as seeded (empty ones were left out, both servers say so). */
function vectorSample(): Sampled[] {
  const all = [...tilesOf(bboxCoverage([-180, -85, 180, 85]), 0, VECTOR_ZOOM)];
  return spread(all, PEER_SAMPLE).map((t) => ({ tile: `${t.z}/${t.x}/${t.y}.pbf` }));
}

/** The raster archive's tiles, as the MBTiles holds them (TMS rows turned into XYZ). */
function rasterSample(file: string): Sampled[] {
  const db = new Database(file, { readonly: true });
  try {
    const rows = db.prepare('SELECT zoom_level AS z, tile_column AS x, tile_row AS row FROM tiles ORDER BY zoom_level, tile_column, tile_row').all() as { z: number; x: number; row: number }[];
    return spread(rows, PEER_SAMPLE).map((r) => ({ tile: `${r.z}/${r.x}/${(1 << r.z) - 1 - r.row}.png` }));
  } finally {
    db.close();
  }
}

/** A tile's status and bytes, with any Content-Encoding undone (fetch decodes it; a gzip body sent as is too). */
async function tileBytes(url: string): Promise<{ status: number; body: Buffer }> {
  const res = await fetch(url, { signal: AbortSignal.timeout(30_000) });
  let body = Buffer.from(await res.arrayBuffer());
  if (body[0] === 0x1f && body[1] === 0x8b) body = gunzipSync(body);
  return { status: res.status, body };
}

/** Serves the seeded archives with tileserver-ts and with the peer and compares a sample of their tiles. */
async function peerCheck(): Promise<void> {
  ensurePeer();
  const [tsPort, peerPort] = [await freePort(), await freePort()];
  const vector = path.join(KEPT, 'vector.pmtiles');
  const raster = path.join(KEPT, 'raster.mbtiles');
  const tsConfig = path.join(KEPT, 'tileserver-ts.toml');
  writeFileSync(
    tsConfig,
    `[server]\nhost = "127.0.0.1"\nport = ${tsPort}\ndisable_render = true\n[[sources]]\nid = "vec"\ntype = "pmtiles"\npath = ${JSON.stringify(vector)}\n[[sources]]\nid = "ras"\ntype = "mbtiles"\npath = ${JSON.stringify(raster)}\n`,
  );
  const peerConfig = path.join(KEPT, 'tileserver-gl-light.json');
  writeFileSync(
    peerConfig,
    JSON.stringify({ options: { paths: { root: KEPT, mbtiles: KEPT, pmtiles: KEPT } }, data: { vec: { pmtiles: 'vector.pmtiles' }, ras: { mbtiles: 'raster.mbtiles' } } }, null, 2),
  );
  const ts = ChildServer.start('tileserver-ts', process.execPath, [CLI, '--config', tsConfig], { env: { LOG_LEVEL: 'warn' } });
  const peer = ChildServer.start('tileserver-gl-light', process.execPath, [PEER_MAIN, '--config', peerConfig, '--port', String(peerPort), '--bind', '127.0.0.1', '--silent'], { cwd: KEPT });
  try {
    const tsBase = `http://127.0.0.1:${tsPort}`;
    const peerBase = `http://127.0.0.1:${peerPort}`;
    await ts.waitReady(`${tsBase}/health`);
    await peer.waitReady(`${peerBase}/health`);
    const rows = [['archive', 'tiles sampled', 'byte-equal', 'absent from both', 'different']];
    for (const [label, id, sample] of [
      [`PMTiles, MVT (world z0-${VECTOR_ZOOM})`, 'vec', vectorSample()],
      [`MBTiles, PNG (world style, Europe z0-${RASTER_ZOOM})`, 'ras', rasterSample(raster)],
    ] as const) {
      let equal = 0;
      let absent = 0;
      const different: string[] = [];
      for (const { tile } of sample) {
        const [a, b] = [await tileBytes(`${tsBase}/data/${id}/${tile}`), await tileBytes(`${peerBase}/data/${id}/${tile}`)];
        if (a.status === 200 && b.status === 200 && a.body.equals(b.body)) equal++;
        else if (a.status !== 200 && b.status !== 200) absent++;
        else different.push(`${tile}: tileserver-ts ${a.status} (${a.body.length} B), peer ${b.status} (${b.body.length} B)`);
      }
      rows.push([label, fmt(sample.length), fmt(equal), fmt(absent), fmt(different.length)]);
      process.stdout.write(`tileserver-gl-light ${PEER_VERSION} served the seeded ${label}: ${equal} of ${sample.length} sampled tiles byte-equal to tileserver-ts, ${absent} absent from both, ${different.length} different\n`);
      for (const d of different.slice(0, 5)) process.stdout.write(`  ${d}\n`);
    }
    process.stdout.write(`\nthe seeded archives served by tileserver-gl-light ${PEER_VERSION}:\n${table(rows)}\n`);
  } finally {
    await Promise.all([ts.stop(), peer.stop()]);
  }
}

const runs: Run[] = [
  { name: `vector export, world z0-${VECTOR_ZOOM}, MVT`, args: ['--source', 'world', '--bbox', WORLD, '--zoom', `0-${VECTOR_ZOOM}`], out: 'world.pmtiles', keepAs: path.join(KEPT, 'vector.pmtiles') },
  { name: `vector export, world z0-${VECTOR_ZOOM}, MLT`, args: ['--source', 'world', '--format', 'mlt', '--bbox', WORLD, '--zoom', `0-${VECTOR_ZOOM}`], out: 'world-mlt.pmtiles' },
  { name: `raster, world style, Europe z0-${RASTER_ZOOM}`, args: ['--style', 'world', '--bbox', EUROPE, '--zoom', `0-${RASTER_ZOOM}`], out: 'world.mbtiles', keepAs: path.join(KEPT, 'raster.mbtiles') },
  { name: `raster, osm-liberty, Europe z0-${RASTER_ZOOM}`, args: ['--style', 'osm-liberty', '--bbox', EUROPE, '--zoom', `0-${RASTER_ZOOM}`], out: 'liberty.mbtiles' },
];

async function archiveRuns(): Promise<void> {
  const rows = [['run', 'tiles written', 'process seconds', 'tiles fetched/s (written + empty)', 'CPU s / 100 written']];
  for (const run of runs) {
    const o = await seed(run);
    rows.push([run.name, fmt(o.tiles), fmt(o.seconds, 1), fmt(o.tilesPerS, 1), o.cpuPer100 === undefined ? '-' : fmt(o.cpuPer100, 2)]);
    process.stdout.write(`${run.name}: ${fmt(o.tiles)} tiles written in ${fmt(o.seconds, 1)} s; ${fmt(o.tilesPerS, 1)} tiles fetched/s (written + empty, fetch phase)\n`);
  }
  process.stdout.write(`\n${table(rows)}\n`);
  if (PEER_CHECK) {
    try {
      await peerCheck();
    } finally {
      rmSync(KEPT, { recursive: true, force: true });
    }
  } else rmSync(KEPT, { recursive: true, force: true });
}

const CITY = (process.env.BENCH_SEED_CITY ?? 'on').toLowerCase();
const CITY_EDGE = envNumber('BENCH_SEED_CITY_EDGE', 2);
const CITY_ZOOMS = process.env.BENCH_SEED_CITY_ZOOMS ?? '12-16';
const FRAMES = (process.env.BENCH_SEED_FRAMES ?? '2,4,8').split(',').map(Number);
/** render.pool_size of the city's seeds (BENCH_SEED_POOL); unset: the seed's default (one worker's share). */
const SEED_POOL = process.env.BENCH_SEED_POOL ? envNumber('BENCH_SEED_POOL', 0) : undefined;
/** render.pages_per_browser of the city's seeds (BENCH_SEED_PAGES); unset: the default (2). With 1, each renderer has its own browser and GPU process. */
const SEED_PAGES = process.env.BENCH_SEED_PAGES ? envNumber('BENCH_SEED_PAGES', 2) : undefined;
/** render.seed_png_compression of the city's seeds (BENCH_SEED_PNG, a zlib level); unset: the default (8). */
const SEED_PNG = process.env.BENCH_SEED_PNG ? envNumber('BENCH_SEED_PNG', 8) : undefined;
/** A taskset CPU list the city's seeds run on (BENCH_SEED_CPUS, e.g. "0" for one core); unset: every core. */
const SEED_CPUS = process.env.BENCH_SEED_CPUS;
/** --concurrency of the city's seeds (BENCH_SEED_CONCURRENCY); unset: the seed's default. */
const SEED_CONCURRENCY = process.env.BENCH_SEED_CONCURRENCY ? envNumber('BENCH_SEED_CONCURRENCY', 0) : undefined;
/** BENCH_SEED_BROWSE=off leaves out the browse run and the ratios (a rate measured on fewer cores, for sizing). */
const CITY_BROWSE = (process.env.BENCH_SEED_BROWSE ?? 'on').toLowerCase() !== 'off';

/** The seeded square: CITY_EDGE tiles on an edge at z12, at the centre of the browse area; west, south, east, north. */
function cityBox(): string {
  const a = areaAt(BROWSE, 12);
  const x0 = a.x0 + Math.floor((a.size - CITY_EDGE) / 2);
  const y0 = a.y0 + Math.floor((a.size - CITY_EDGE) / 2);
  // A hair inside the square, so tiles that only touch its edges are not counted.
  const e = 1e-6;
  const [w, n] = unmercator(x0 / 4096 + e, y0 / 4096 + e);
  const [east, s] = unmercator((x0 + CITY_EDGE) / 4096 - e, (y0 + CITY_EDGE) / 4096 - e);
  return [w, s, east, n].map((v) => v.toFixed(7)).join(',');
}

interface CitySeed {
  frame: number;
  written: number;
  tilesPerS: number;
  /** Busy CPU seconds of the whole machine over the seed (/proc/stat), less this process's own sampling. */
  machine: number;
  split: CpuSplit;
  /** Peak PSS of the browser's processes, per browser (bytes). */
  peakPerBrowser: number;
  /** Size of the MBTiles archive written (bytes). */
  archiveBytes: number;
}

/**
 * PSS (bytes) of the Chromium processes under `root`, and how many browsers they are. Proportional, not resident:
 * a browser's processes share memory (the GPU process's buffers with the pages), which RSS would count in each.
 */
function browserPss(root: number): { pss: number; browsers: number } {
  let pss = 0;
  let browsers = 0;
  for (const pid of processTree(root).keys()) {
    let cmd = '';
    let rollup = '';
    try {
      cmd = readFileSync(`/proc/${pid}/cmdline`, 'utf8');
      rollup = readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8');
    } catch {
      continue;
    }
    if (!/chrom|headless_shell/.test(cmd.split(/[\0 ]/)[0] ?? '')) continue;
    if (!/--type=/.test(cmd)) browsers++;
    pss += Number(/^Pss:\s+(\d+) kB/m.exec(rollup)?.[1] ?? 0) * 1024;
  }
  return { pss, browsers };
}

/** One seed of the city at one bulk frame size, in a fresh scratch directory. */
function citySeed(cityFile: string, frame: number): Promise<CitySeed> {
  const scratch = mkdtempSync(path.join(os.tmpdir(), 'tsts-seed-city-'));
  const config = path.join(scratch, 'config.toml');
  writeFileSync(
    config,
    `fonts = "${path.join(ROOT, 'fixtures/fonts')}"\n[[sources]]\nid = "openmaptiles"\ntype = "mbtiles"\npath = "${cityFile}"\n[[sources]]\nid = "natural_earth"\ntype = "pmtiles"\npath = "${path.join(ROOT, 'fixtures/raster/natural-earth-png-z0-1.pmtiles')}"\n` +
      `[[styles]]\nid = "osm-liberty"\npath = "${path.join(ROOT, 'fixtures/styles/osm-liberty/style.json')}"\n[cache]\ndir = "${scratch}"\n[render]\nbulk_metatile = ${frame}\n${SEED_POOL ? `pool_size = ${SEED_POOL}\n` : ''}${SEED_PAGES ? `pages_per_browser = ${SEED_PAGES}\n` : ''}${SEED_PNG !== undefined ? `seed_png_compression = ${SEED_PNG}\n` : ''}`,
  );
  const seedArgs = [CLI, 'seed', '--config', config, '--style', 'osm-liberty', '--bbox', cityBox(), '--zoom', CITY_ZOOMS, '--out', path.join(scratch, 'city.mbtiles'), ...(SEED_CONCURRENCY ? ['--concurrency', String(SEED_CONCURRENCY)] : [])];
  // taskset execs the seed in its own process, so the pid sampled below is the seed's; its browsers inherit the CPUs.
  const child = spawn(SEED_CPUS ? 'taskset' : process.execPath, SEED_CPUS ? ['-c', SEED_CPUS, process.execPath, ...seedArgs] : seedArgs, {
    stdio: ['ignore', 'pipe', 'inherit'],
    env: { ...process.env, TMPDIR: scratch, LOG_LEVEL: 'warn' },
  });
  const busy0 = machineBusySeconds();
  // This process only samples while the seed runs: its CPU (reading /proc, the PSS of multi-gigabyte browsers
  // every 500 ms) is the bench's, not the seed's, and is taken off the machine's.
  const self0 = process.cpuUsage();
  const byKind = cpuByKind(child.pid!);
  let peak = 0;
  const sampler = setInterval(() => {
    const m = browserPss(child.pid!);
    if (m.browsers) peak = Math.max(peak, m.pss / m.browsers);
  }, 500);
  let stdout = '';
  child.stdout.on('data', (d) => (stdout += d));
  return new Promise((resolve, reject) => {
    child.once('exit', (code) => {
      clearInterval(sampler);
      const split = byKind.end();
      const self = process.cpuUsage(self0);
      const machine = machineBusySeconds() - busy0 - (self.user + self.system) / 1e6;
      let archiveBytes = 0;
      try {
        archiveBytes = statSync(path.join(scratch, 'city.mbtiles')).size;
      } catch {
        /* no archive: the exit code says why */
      }
      rmSync(scratch, { recursive: true, force: true, maxRetries: 10, retryDelay: 200 });
      const last = stdout.trim().split('\n').at(-1);
      if (code !== 0 || !last) return reject(new Error(`city seed at ${frame}x${frame}: exited ${code}\n${stdout}`));
      const line = JSON.parse(last) as { written: number; tiles_per_s: number };
      resolve({ frame, written: line.written, tilesPerS: line.tiles_per_s, machine, split, peakPerBrowser: peak, archiveBytes });
    });
    child.once('error', reject);
  });
}

const perTile = (seconds: number, tiles: number) => fmt((1000 * seconds) / Math.max(1, tiles));

async function cityRuns(): Promise<void> {
  const work = mkdtempSync(path.join(os.tmpdir(), 'tsts-seed-city-data-'));
  try {
    const cityFile = path.join(work, 'city.mbtiles');
    writeCityArchive(cityFile);
    process.stdout.write(
      `\ncity: OSM Liberty over the browse city archive, ${CITY_EDGE}x${CITY_EDGE} tiles at z12 (bbox ${cityBox()}), zooms ${CITY_ZOOMS}; frame sizes ${FRAMES.join(', ')}; ` +
        `seed_png_compression ${SEED_PNG ?? 'default'}; pool_size ${SEED_POOL ?? 'default'}; pages_per_browser ${SEED_PAGES ?? 'default'}; concurrency ${SEED_CONCURRENCY ?? 'default'}; the seed on ${SEED_CPUS ? `CPUs ${SEED_CPUS} (${cpuListSize(SEED_CPUS)} of ${os.cpus().length})` : `all ${os.cpus().length} cores`}\n`,
    );
    const seeds: CitySeed[] = [];
    for (const f of FRAMES) {
      const s = await citySeed(cityFile, f);
      seeds.push(s);
      process.stdout.write(`city seed ${f}x${f}: ${fmt(s.written)} tiles written, ${fmt(s.tilesPerS, 2)} tiles/s, ${perTile(s.machine, s.written)} ms machine CPU per tile\n`);
    }
    // The seed's own columns, in both tables (the second adds the archive, memory against 2x2 and the ratios).
    const seedHead = ['frame', 'tiles written', 'tiles/s', 'machine CPU ms/tile', 'renderer', 'gpu', 'browser', 'node', 'other', 'tree ms/tile'];
    const seedColumns = (s: CitySeed) => {
      const k = (v: number) => perTile(v, s.written);
      return [`${s.frame}x${s.frame}`, fmt(s.written), fmt(s.tilesPerS, 2), k(s.machine), k(s.split.renderer), k(s.split.gpu), k(s.split.browser), k(s.split.node), k(s.split.network + s.split.other), k(s.split.total)];
    };
    if (!CITY_BROWSE) {
      const rows = [[...seedHead, 'peak PSS MB/browser'], ...seeds.map((s) => [...seedColumns(s), fmt(s.peakPerBrowser / 1e6)])];
      process.stdout.write(`\n${table(rows)}\n(CPU ms per tile written; the split is the seed's process tree by kind; no browse run: BENCH_SEED_BROWSE=off)\n`);
      return;
    }
    const busy0 = machineBusySeconds();
    // The browse's clients run in this process: their CPU is the machine's but not the server's.
    const self0 = process.cpuUsage();
    const browse = await browseRun(4, cityFile);
    const browseMachine = machineBusySeconds() - busy0;
    const self = process.cpuUsage(self0);
    const browseServer = browseMachine - (self.user + self.system) / 1e6;
    const browseTree = (1000 * browse.cpu) / Math.max(1, browse.distinct);
    const browseMs = (1000 * browseMachine) / Math.max(1, browse.distinct);
    const browseServerMs = (1000 * browseServer) / Math.max(1, browse.distinct);
    process.stdout.write(
      `browse, 4 users: ${browse.distinct} distinct tiles; per distinct tile ${fmt(browseTree)} ms of CPU of the server's process tree, ${fmt(browseMs)} ms of the machine's, ` +
        `${fmt(browseServerMs)} ms of the machine's less the bench's own clients (the server's CPU counted as the seed's is)\n`,
    );
    const rows = [[...seedHead, 'archive KB/tile', 'peak PSS MB/browser', 'PSS vs 2x2', 'ratio (machine)', 'ratio (tree)', 'ratio (server)']];
    // The interactive route's frame: the memory a larger bulk frame is held to (at most 1.5x) is this one's.
    const interactive = seeds.find((s) => s.frame === 2);
    for (const s of seeds) {
      const seedMachine = s.machine / Math.max(1, s.written);
      rows.push([
        ...seedColumns(s),
        fmt(s.archiveBytes / 1024 / Math.max(1, s.written), 1),
        fmt(s.peakPerBrowser / 1e6),
        interactive ? `${fmt(s.peakPerBrowser / interactive.peakPerBrowser, 2)}x` : '-',
        `${fmt(browseMachine / browse.distinct / seedMachine, 2)}x`,
        `${fmt(browse.cpu / browse.distinct / (s.split.total / Math.max(1, s.written)), 2)}x`,
        `${fmt(browseServer / browse.distinct / seedMachine, 2)}x`,
      ]);
    }
    process.stdout.write(
      `\n${table(rows)}\n(CPU ms per tile written; the split is the seed's process tree by kind. Ratios: the browse's CPU per distinct tile over the seed's per tile written, ` +
        `the machine's over the machine's, the process trees' over each other, and the server's (the machine's less the bench's clients) over the seed's machine CPU: ` +
        `the issue's measure; the target 3x)\n`,
    );
    // No peer publishes a seeding rate for a MapLibre style; the nearest published figures are renderd's with
    // Mapnik, in 8x8 metatiles of 256 px tiles, converted here to 512 px tiles (four 256 px tiles each).
    const cores = SEED_CPUS ? cpuListSize(SEED_CPUS) : os.cpus().length;
    const rates = seeds.map((s) => `${s.frame}x${s.frame} ${fmt(s.tilesPerS, 2)} (${fmt(s.tilesPerS / cores, 2)} per core)`).join(', ');
    process.stdout.write(
      `seeding rate here, 512 px tiles/s on ${cores} cores: ${rates}\n` +
        `published (renderd + Mapnik 2.1, openstreetmap-carto, 4-core EC2 m2.2xlarge, tile-serving list 2013-05): 2.1-2.9 metatiles/s of 8x8 256 px tiles = ` +
        `34-47 tiles/s in 512 px tiles (8.4-11.7 per core); OSM's yevaud then 3.75 on average (60 in 512 px tiles). Another style, renderer, data store and machine: a scale, not a race\n`,
    );
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

if (CITY !== 'only') await archiveRuns();
else rmSync(KEPT, { recursive: true, force: true });
if (CITY !== 'off') await cityRuns();
