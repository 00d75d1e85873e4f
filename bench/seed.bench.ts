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
import { spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { envNumber, fmt, groupCpuSeconds, ROOT, table } from './lib.js';

const CLI = path.join(ROOT, 'dist/cli.js');
const CONFIG = path.join(ROOT, 'config/default.toml');
const VECTOR_ZOOM = envNumber('BENCH_SEED_VECTOR_ZOOM', 6);
const RASTER_ZOOM = envNumber('BENCH_SEED_RASTER_ZOOM', 6);
const EUROPE = '-12,35,32,61';
const WORLD = '-180,-85,180,85';

interface Run {
  name: string;
  args: string[];
  out: string;
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

const runs: Run[] = [
  { name: `vector export, world z0-${VECTOR_ZOOM}, MVT`, args: ['--source', 'world', '--bbox', WORLD, '--zoom', `0-${VECTOR_ZOOM}`], out: 'world.pmtiles' },
  { name: `vector export, world z0-${VECTOR_ZOOM}, MLT`, args: ['--source', 'world', '--format', 'mlt', '--bbox', WORLD, '--zoom', `0-${VECTOR_ZOOM}`], out: 'world-mlt.pmtiles' },
  { name: `raster, world style, Europe z0-${RASTER_ZOOM}`, args: ['--style', 'world', '--bbox', EUROPE, '--zoom', `0-${RASTER_ZOOM}`], out: 'world.mbtiles' },
  { name: `raster, osm-liberty, Europe z0-${RASTER_ZOOM}`, args: ['--style', 'osm-liberty', '--bbox', EUROPE, '--zoom', `0-${RASTER_ZOOM}`], out: 'liberty.mbtiles' },
];

const rows = [['run', 'tiles written', 'process seconds', 'tiles fetched/s (written + empty)', 'CPU s / 100 written']];
for (const run of runs) {
  const o = await seed(run);
  rows.push([run.name, fmt(o.tiles), fmt(o.seconds, 1), fmt(o.tilesPerS, 1), o.cpuPer100 === undefined ? '-' : fmt(o.cpuPer100, 2)]);
  process.stdout.write(`${run.name}: ${fmt(o.tiles)} tiles written in ${fmt(o.seconds, 1)} s; ${fmt(o.tilesPerS, 1)} tiles fetched/s (written + empty, fetch phase)\n`);
}
process.stdout.write(`\n${table(rows)}\n`);
