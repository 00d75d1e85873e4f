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
import { spawn } from 'node:child_process';
import { copyFileSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { gunzipSync } from 'node:zlib';
import Database from 'better-sqlite3';
import { bboxCoverage, tilesOf } from '../src/seed/coverage.js';
import { ChildServer, ensurePeer, envNumber, fmt, freePort, groupCpuSeconds, PEER_MAIN, PEER_VERSION, ROOT, table } from './lib.js';

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
