// The rendering host under a long run and a flood (BENCH=render-host make bench).
//
// Soak: BENCH_SOAK_RENDERS (1,000) distinct static maps (512x512 OSM Liberty, a new centre each, so nothing comes
// from a cache), two clients per core; the proportional memory (PSS) of the server and every process it started
// (browsers included) is sampled every 100 renders and printed, to show that it levels off.
//
// Flood: ten times render.max_queue distinct renders at once, from clients that hang up after
// BENCH_FLOOD_HANGUP_MS (1,000 ms); then the time of one new render against an idle render measured before the
// flood. A server that keeps drawing for departed clients makes that next render wait for all of them.
//
// One worker process (the queue and the /ping counters are per process); BENCH_RENDER_EXTRA adds [render] lines.
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { osmLibertyToml } from '../test/helpers/server.js';
import { ChildServer, cores, envNumber, fmt, freePort, httpGet, ROOT, table, treePss } from './lib.js';

const CLI = path.join(ROOT, 'dist/cli.js');
const RENDERS = envNumber('BENCH_SOAK_RENDERS', 1000);
const MAX_QUEUE = envNumber('BENCH_FLOOD_QUEUE', 32);
const HANGUP_MS = envNumber('BENCH_FLOOD_HANGUP_MS', 1000);

interface RenderStats {
  rendered: number;
  failed: number;
  dropped: number;
  expired: number;
  retried: number;
  queued: number;
}

async function stats(url: string): Promise<RenderStats> {
  return (JSON.parse((await httpGet(`${url}/ping`)).body.toString()) as { render_stats: RenderStats }).render_stats;
}

let seq = 0;
/** A static map nobody asked for before. */
function distinctMap(size = 512): string {
  const n = ++seq;
  const lon = (((n * 7.31) % 340) - 170).toFixed(3);
  const lat = (((n * 3.17) % 120) - 60).toFixed(3);
  return `/styles/osm-liberty/static/${lon},${lat},${(1 + (n % 3)).toString()}/${size}x${size}.png`;
}

async function timed(url: string): Promise<{ ms: number; status: number }> {
  const t = performance.now();
  const r = await httpGet(url, {}, 120_000);
  return { ms: performance.now() - t, status: r.status };
}

async function main(): Promise<void> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'tsts-render-host-bench-'));
  const port = await freePort();
  const toml = osmLibertyToml(`[server]
host = "127.0.0.1"
port = ${port}
workers = 1
[cache]
dir = "${dir}"
[render]
max_queue = ${MAX_QUEUE}
memory_cache_mb = 0
disk_cache_mb = 0
${(process.env.BENCH_RENDER_EXTRA ?? '').replace(/;/g, '\n')}`);
  writeFileSync(path.join(dir, 'config.toml'), toml);
  const child = ChildServer.start('tileserver-ts (render host)', process.execPath, [CLI, '--config', path.join(dir, 'config.toml')], { env: { LOG_LEVEL: 'warn' } });
  const url = `http://127.0.0.1:${port}`;
  try {
    await child.waitReady(`${url}/ready`, {}, 120_000);
    const pid = child.proc.pid!;

    // Soak.
    const clients = 2 * Math.max(1, cores());
    const rows: string[][] = [['renders', 'PSS MB', 'seconds', 'renders/s', 'errors']];
    const started = performance.now();
    let done = 0;
    let errors = 0;
    rows.push(['0', fmt(treePss(pid) / 2 ** 20), '0', '-', '0']);
    let lastMark = started;
    let lastDone = 0;
    let nextRow = Math.min(100, RENDERS);
    const worker = async () => {
      while (done + errors < RENDERS) {
        const r = await httpGet(url + distinctMap(), {}, 120_000).catch(() => ({ status: 0 }));
        if (r.status === 200) done++;
        else errors++;
        const total = done + errors;
        if (total >= nextRow) {
          nextRow += 100;
          const now = performance.now();
          rows.push([fmt(total), fmt(treePss(pid) / 2 ** 20), fmt((now - started) / 1000, 1), fmt((total - lastDone) / ((now - lastMark) / 1000), 2), fmt(errors)]);
          lastMark = now;
          lastDone = total;
        }
      }
    };
    await Promise.all(Array.from({ length: clients }, worker));
    process.stdout.write(`soak: ${fmt(RENDERS)} distinct 512x512 static maps, ${clients} clients, PSS of the server and its browsers:\n${table(rows)}\n`);

    // Flood.
    const idle: number[] = [];
    for (let i = 0; i < 5; i++) idle.push((await timed(url + distinctMap())).ms);
    idle.sort((a, b) => a - b);
    const before = await stats(url);
    const flood = 10 * MAX_QUEUE;
    const statuses = new Map<string, number>();
    const floodStart = performance.now();
    await Promise.all(
      Array.from({ length: flood }, async () => {
        const ac = new AbortController();
        const timer = setTimeout(() => ac.abort(), HANGUP_MS);
        let key: string;
        try {
          key = String((await fetch(url + distinctMap(1024), { signal: ac.signal })).status);
        } catch {
          key = 'hung up';
        } finally {
          clearTimeout(timer);
        }
        statuses.set(key, (statuses.get(key) ?? 0) + 1);
      }),
    );
    const hungUpAt = performance.now();
    const next = await timed(url + distinctMap());
    const after = await stats(url);
    const answers = [...statuses.entries()].map(([k, v]) => `${k}: ${v}`).join(', ');
    process.stdout.write(
      `flood: ${flood} distinct 1024x1024 renders at once (10 x max_queue ${MAX_QUEUE}), clients hang up after ${HANGUP_MS} ms (${fmt((hungUpAt - floodStart) / 1000, 1)} s)\n` +
        `  answers: ${answers}\n` +
        `  drawn during the flood: ${after.rendered - before.rendered - 1}, dropped from the queue: ${after.dropped - before.dropped}, refused (queue full): ${statuses.get('503') ?? 0}\n` +
        `  next render after the flood: ${fmt(next.ms)} ms (status ${next.status}); idle render: median ${fmt(idle[2])} ms (min ${fmt(idle[0])}, max ${fmt(idle[4])})\n`,
    );
  } finally {
    await child.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
