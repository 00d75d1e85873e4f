// Reloads under load (BENCH=reload make bench): 64 connections (60 asking for vector tiles and TileJSON, 4 for
// rendered static maps) against two worker processes, first for BENCH_RELOAD_BASE_S seconds without reloads (the
// reference, in the same run), then while the configuration file alternates between two versions that differ
// in their sources and is reloaded BENCH_RELOADS (50) times through the admin listener. Every answer is checked
// (status and bytes: tiles against the archive, maps as PNGs); afterwards the open descriptors and memory of
// every process (the primary, the workers, each worker's browsers) are compared with before.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { gunzipSync } from 'node:zlib';
import { storedPmtilesTile } from '../test/helpers/foundation.js';
import { descendants, fds, pssMb, reloadUnderLoad, serviceProcesses, writeWaterStyle, type Expected, type ReloadLoadReport } from '../test/helpers/reload-load.js';
import { ChildServer, fmt, freePort, ROOT, table } from './lib.js';

const CLI = path.join(ROOT, 'dist/cli.js');
const fixture = (...p: string[]) => path.join(ROOT, 'fixtures', ...p);
const RELOADS = Number(process.env.BENCH_RELOADS ?? 50);
const BASE_S = Number(process.env.BENCH_RELOAD_BASE_S ?? 20);
const OMT = fixture('vector/omt-planet-z0-1.pmtiles');

/** Per service process (primary, workers): descriptors, its own PSS, and the PSS of the browsers under it. */
function snapshot(root: number): Map<number, { role: string; fds: number; pss: number; browsersPss: number }> {
  const out = new Map<number, { role: string; fds: number; pss: number; browsersPss: number }>();
  const workers = serviceProcesses(root).slice(1);
  out.set(root, { role: 'primary', fds: fds(root).total, pss: pssMb([root]), browsersPss: 0 });
  for (const w of workers) out.set(w, { role: 'worker', fds: fds(w).total, pss: pssMb([w]), browsersPss: pssMb(descendants(w)) });
  return out;
}

const pct = (xs: number[], p: number) => {
  const s = [...xs].sort((a, b) => a - b);
  return s.length ? s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))] : 0;
};

function line(name: string, r: ReloadLoadReport): string[] {
  const secs = r.durationMs / 1000;
  const [tiles, maps] = r.latencies;
  return [
    name,
    fmt(tiles.length / secs),
    fmt(pct(tiles, 50), 1),
    fmt(pct(tiles, 99), 1),
    fmt(maps.length / secs, 1),
    fmt(pct(maps, 99), 0),
    String(r.wrong),
    r.reloadMs.length ? `${fmt(pct(r.reloadMs, 50))} / ${fmt(Math.max(...r.reloadMs))}` : '-',
  ];
}

async function main(): Promise<void> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'bench-reload-'));
  const style = writeWaterStyle(dir);
  const port = await freePort();
  const adminPort = await freePort();
  const head = `[server]\nhost = "127.0.0.1"\nport = ${port}\nworkers = 2\nadmin_bind = "127.0.0.1:${adminPort}"\n[cache]\ndir = "${path.join(dir, 'cache')}"\n[[styles]]\nid = "water"\npath = "${style}"\n`;
  const src = (id: string, type: string, file: string) => `[[sources]]\nid = "${id}"\ntype = "${type}"\npath = "${file}"\n`;
  const A = head + src('omt', 'pmtiles', OMT) + src('cities', 'mbtiles', fixture('vector/world_cities.mbtiles'));
  const B = head + src('omt', 'pmtiles', OMT) + src('raster', 'pmtiles', fixture('raster/natural-earth-png-z0-1.pmtiles'));
  const file = path.join(dir, 'config.toml');
  writeFileSync(file, A);
  const url = `http://127.0.0.1:${port}`;
  const server = ChildServer.start('tileserver-ts', process.execPath, [CLI, '--config', file], { env: { LOG_LEVEL: 'warn' } });
  try {
    await server.waitReady(`${url}/ready`, {}, 180_000);
    const tiles: Expected[] = [];
    for (const [z, x, y] of [[0, 0, 0], [1, 0, 0], [1, 1, 0], [1, 0, 1], [1, 1, 1]]) {
      const bytes = gunzipSync((await storedPmtilesTile(OMT, z, x, y))!);
      tiles.push({ path: `/data/omt/${z}/${x}/${y}.pbf`, check: (s, b) => (s !== 200 ? `status ${s}` : b.equals(bytes) ? undefined : 'not the stored tile') });
    }
    tiles.push({ path: '/data/omt.json', check: (s, b) => (s === 200 && b.includes('"tilejson":"3.0.0"') ? undefined : `status ${s}`) });
    const maps: Expected[] = [0, 10, 20, 30].map((lon) => ({
      path: `/styles/water/static/${lon},0,1/256x256.png`,
      check: (s, b) => (s !== 200 ? `status ${s}: ${b.toString().slice(0, 160)}` : b.subarray(1, 4).toString() === 'PNG' ? undefined : 'not a PNG'),
    }));
    const groups = [
      { connections: 60, requests: tiles },
      { connections: 4, requests: maps },
    ];
    const load = { url, adminUrl: `http://127.0.0.1:${adminPort}`, configFile: file, configs: [A, B] as [string, string], groups };
    // Warm-up: every path once per process.
    await reloadUnderLoad({ ...load, reloads: 0, durationMs: 3_000 });
    const before = snapshot(server.proc.pid!);
    const base = await reloadUnderLoad({ ...load, reloads: 0, durationMs: BASE_S * 1000 });
    const reloading = await reloadUnderLoad({ ...load, reloads: RELOADS });
    // Old states close when their last request ends; give the last ones a moment, then look.
    await new Promise((r) => setTimeout(r, 3_000));
    const after = snapshot(server.proc.pid!);

    process.stdout.write(`64 connections (60 tiles/TileJSON, 4 static maps), 2 worker processes, ${os.cpus().length} cores\n`);
    process.stdout.write(
      table([
        ['phase', 'tiles/s', 'tile p50 ms', 'tile p99 ms', 'maps/s', 'map p99 ms', 'wrong', 'reload ms (median / max)'],
        line(`no reloads (${BASE_S} s)`, base),
        line(`${RELOADS} reloads (${fmt(reloading.durationMs / 1000, 1)} s)`, reloading),
      ]) + '\n',
    );
    process.stdout.write(`throughput while reloading: ${fmt(reloading.latencies[0].length / reloading.durationMs / (base.latencies[0].length / base.durationMs), 2)}x the run without reloads; failed reloads: ${reloading.failedReloads}\n`);
    if (reloading.reasons.length) process.stdout.write(`first wrong answers:\n  ${reloading.reasons.join('\n  ')}\n`);
    const rows = [['process', 'fds before', 'fds after', 'PSS MB before', 'PSS MB after', 'browsers PSS MB before', 'after']];
    for (const [pid, b] of before) {
      const a = after.get(pid);
      rows.push([`${b.role} ${pid}`, String(b.fds), a ? String(a.fds) : 'gone', fmt(b.pss), a ? fmt(a.pss) : '-', fmt(b.browsersPss), a ? fmt(a.browsersPss) : '-']);
    }
    process.stdout.write(table(rows) + '\n');
  } finally {
    await server.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`${(err as Error)?.stack ?? String(err)}\n`);
  process.exit(1);
});
