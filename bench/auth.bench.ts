// Access control and rate limits (issue 37): what they cost on the hottest path, and whether a budget holds.
//   1. Overhead: the hot cached tile (the tiles bench's Paris tile, fast lane, tile cache on), asked for with an API
//      key, from a server with access control and rate limits on (`[auth] default_access = "key"`, the key's hash
//      in `[[auth.keys]]`, and a rate class so generous that nothing is refused: every request's key is checked,
//      counted and gets the RateLimit headers) against the same server with neither (the key then ignored), in the
//      same run, alternating off/on/off/on so that drift of a shared machine hits both sides. Target: on >= 0.95x
//      off in req/s.
//   2. Accuracy: one client (one address) with a budget of BENCH_AUTH_RATE per second (burst = rate: a window of
//      one second) hammering the hot tile from 64 connections for BENCH_AUTH_ACCURACY_SECONDS: the 200 answers per
//      second must stay within 5 % of the budget. With fixed windows the edges of the measurement may catch one
//      window more or less: that is at most one window of BENCH_AUTH_RATE over the run (3.3 % at 30 s).
// Both with server.workers = cores (a per-machine budget counted by the cluster's primary) and no Redis.
// Load: wrk (C, one thread, 64 connections, keep-alive, Accept-Encoding of Chrome), run as a child so its CPU is
// measured apart (cutime/cstime of this process once it is reaped): the client's CPU share is printed beside the
// server's CPU per request, so a saturated load generator shows.
//
//   BENCH=auth make bench          (or: node --import tsx bench/auth.bench.ts after a build)
//
// Environment: BENCH_DURATION (10 s per overhead run), BENCH_WARMUP (3 s), BENCH_CONNECTIONS (64), BENCH_WORKERS
// (cores), BENCH_AUTH_ROUNDS (2 off/on pairs), BENCH_AUTH_RATE (200), BENCH_AUTH_ACCURACY_SECONDS (30),
// BENCH_AUTH_REDIS=1 (both sides with a local redis-server as `[cache] shared`: the "on" side counts every request
// in Redis, as a fleet does).
import { spawnSync } from 'node:child_process';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { buildBenchData, PMTILES } from '../scripts/build-bench-data.js';
import { ChildServer, cores, envNumber, fmt, freePort, httpGet, ROOT, table } from './lib.js';

const DURATION = envNumber('BENCH_DURATION', 10);
const WARMUP = envNumber('BENCH_WARMUP', 3);
const CONNECTIONS = envNumber('BENCH_CONNECTIONS', 64);
const WORKERS = envNumber('BENCH_WORKERS', cores());
const ROUNDS = envNumber('BENCH_AUTH_ROUNDS', 2);
const RATE = envNumber('BENCH_AUTH_RATE', 200);
const ACCURACY_SECONDS = envNumber('BENCH_AUTH_ACCURACY_SECONDS', 30);
const TARGET_RATIO = 0.95;
const TARGET_ACCURACY = 0.05;
const ACCEPT_ENCODING = 'gzip, deflate, br, zstd';
const CLI = path.join(ROOT, 'dist/cli.js');
const WITH_REDIS = process.env.BENCH_AUTH_REDIS === '1';
/** `[cache] shared = …` when BENCH_AUTH_REDIS=1 (set once the redis-server runs). */
let cacheSection = '';

/** The key every overhead request carries (`?key=`), and the access control that checks it on the "on" side. */
const KEY = `tsk_${randomBytes(32).toString('base64url')}`;
const GENEROUS = `[auth]
default_access = "key"
[[auth.keys]]
name = "bench"
hash = "${createHash('sha256').update(KEY).digest('hex')}"
rate_class = "generous"
[rate_limits]
anonymous_class = "generous"
[rate_limits.classes.generous]
cheap = { rate = 1000000, burst = 1000000 }
expensive = { rate = 1000000, burst = 1000000 }
`;
const BUDGET = `[rate_limits]
anonymous_class = "one"
[rate_limits.classes.one]
cheap = { rate = ${RATE}, burst = ${RATE} }
`;

interface Wrk {
  requests: number;
  seconds: number;
  rps: number;
  non2xx: number;
  p50: string;
  p99: string;
  /** CPU seconds wrk used. */
  clientCpu: number;
}

const CLK = Number(spawnSync('getconf', ['CLK_TCK'], { encoding: 'utf8' }).stdout.trim()) || 100;

/** CPU seconds of this process's reaped children (cutime + cstime). */
function childrenCpu(): number {
  const stat = readFileSync('/proc/self/stat', 'utf8');
  const f = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(f[13]) + Number(f[14])) / CLK;
}

function wrk(url: string, seconds: number): Wrk {
  const before = childrenCpu();
  const r = spawnSync('wrk', ['-t1', `-c${CONNECTIONS}`, `-d${seconds}s`, '--latency', '-H', `Accept-Encoding: ${ACCEPT_ENCODING}`, url], { encoding: 'utf8' });
  const clientCpu = childrenCpu() - before;
  if (r.status !== 0) throw new Error(`wrk failed (${r.error?.message ?? `exit ${r.status}`}): ${r.stderr}${r.stdout}`);
  const out = r.stdout;
  const total = /(\d+) requests in ([\d.]+)(m?s)/.exec(out);
  if (!total) throw new Error(`cannot read wrk's output:\n${out}`);
  const secs = Number(total[2]) / (total[3] === 'ms' ? 1000 : 1);
  return {
    requests: Number(total[1]),
    seconds: secs,
    rps: Number(/Requests\/sec:\s+([\d.]+)/.exec(out)?.[1] ?? NaN),
    non2xx: Number(/Non-2xx or 3xx responses: (\d+)/.exec(out)?.[1] ?? 0),
    p50: /\s50%\s+(\S+)/.exec(out)?.[1] ?? '?',
    p99: /\s99%\s+(\S+)/.exec(out)?.[1] ?? '?',
    clientCpu,
  };
}

async function withServer<T>(name: string, dir: string, limits: string, run: (base: string, server: ChildServer) => Promise<T>): Promise<T> {
  const port = await freePort();
  const config = path.join(dir, `${name}.toml`);
  writeFileSync(config, `[[sources]]\nid = "world"\ntype = "pmtiles"\npath = "${PMTILES}"\n${cacheSection}${limits}`);
  const server = ChildServer.start(name, process.execPath, [CLI, '--config', config, '--host', '127.0.0.1', '--port', String(port), '--workers', String(WORKERS)], { env: { LOG_LEVEL: 'warn' } });
  try {
    const base = `http://127.0.0.1:${port}`;
    await server.waitReady(`${base}/health`);
    return await run(base, server);
  } finally {
    await server.stop();
  }
}

interface Measured {
  side: 'off' | 'on';
  w: Wrk;
  cpuPerRequestUs: number;
}

async function overhead(dir: string, tile: string): Promise<Measured[]> {
  const out: Measured[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    for (const side of ['off', 'on'] as const) {
      const m = await withServer(`auth-${side}`, dir, side === 'on' ? GENEROUS : '', async (base, server) => {
        // Access control is really on: without the key the tile is refused.
        const bare = await httpGet(base + tile.slice(0, tile.indexOf('?')), { 'accept-encoding': ACCEPT_ENCODING });
        if ((side === 'on') !== (bare.status === 401)) throw new Error(`${side}: the hot tile without a key answered ${bare.status}`);
        const first = await httpGet(base + tile, { 'accept-encoding': ACCEPT_ENCODING });
        if (first.status !== 200) throw new Error(`${side}: the hot tile answered ${first.status}`);
        if ((side === 'on') !== (first.headers['ratelimit-policy'] !== undefined)) throw new Error(`${side}: RateLimit-Policy is ${first.headers['ratelimit-policy'] ?? 'absent'}`);
        wrk(base + tile, WARMUP);
        const cpu0 = server.cpuSeconds() ?? NaN;
        const w = wrk(base + tile, DURATION);
        const cpu1 = server.cpuSeconds() ?? NaN;
        if (w.non2xx > 0) throw new Error(`${side}: ${w.non2xx} answers were not 2xx/3xx (the generous class refused some?)`);
        return { side, w, cpuPerRequestUs: ((cpu1 - cpu0) * 1e6) / Math.max(1, w.requests) };
      });
      process.stdout.write(`  round ${round + 1}, limits ${m.side}: ${fmt(m.w.rps)} req/s\n`);
      out.push(m);
    }
  }
  return out;
}

async function main(): Promise<void> {
  if (!existsSync(CLI)) throw new Error('dist/cli.js is missing: build first (node scripts/build.mjs, or make bench)');
  if (spawnSync('wrk', ['--version']).error) throw new Error('wrk is missing (apt-get install wrk)');
  const list = buildBenchData();
  const tile = `/data/world/${list.hot}.pbf`;
  const dir = mkdtempSync(path.join(os.tmpdir(), 'auth-bench-'));
  let redis: ChildServer | undefined;
  if (WITH_REDIS) {
    const port = await freePort();
    redis = ChildServer.start('redis-server', 'redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no']);
    await new Promise((r) => setTimeout(r, 500));
    cacheSection = `[cache]\nshared = "redis://127.0.0.1:${port}/0"\n`;
  }
  const load = os.loadavg().map((l) => l.toFixed(2)).join(' ');
  process.stdout.write(
    `access control and rate limits (issue 37): hot tile ${list.hot}, ${WORKERS} worker process(es), wrk -t1 -c${CONNECTIONS}, ${DURATION} s per run after ${WARMUP} s of warm-up,\n` +
      `  ${ROUNDS} rounds of off/on${WITH_REDIS ? ', both with a local redis-server as [cache] shared (the "on" side counts in Redis)' : ', no Redis'}; node ${process.version}, ${cores()} cores, load average before: ${load}\n`,
  );
  try {
    const measured = await overhead(dir, `${tile}?key=${KEY}`);
    const rows = [['run', 'limits', 'req/s', 'p50', 'p99', 'server CPU/req', 'client CPU']];
    measured.forEach((m, i) =>
      rows.push([String(Math.floor(i / 2) + 1), m.side, fmt(m.w.rps), m.w.p50, m.w.p99, `${fmt(m.cpuPerRequestUs)} us`, `${fmt((100 * m.w.clientCpu) / m.w.seconds)} % of a core`]),
    );
    process.stdout.write(`\n${table(rows)}\n`);
    const mean = (side: 'off' | 'on', f: (m: Measured) => number) => {
      const xs = measured.filter((m) => m.side === side).map(f);
      return xs.reduce((a, b) => a + b, 0) / xs.length;
    };
    const ratio = mean('on', (m) => m.w.rps) / mean('off', (m) => m.w.rps);
    const cpuRatio = mean('on', (m) => m.cpuPerRequestUs) / mean('off', (m) => m.cpuPerRequestUs);
    process.stdout.write(
      `mean req/s: off ${fmt(mean('off', (m) => m.w.rps))}, on ${fmt(mean('on', (m) => m.w.rps))}: on/off ${ratio.toFixed(3)}x (target >= ${TARGET_RATIO}x: ${ratio >= TARGET_RATIO ? 'met' : 'NOT met'})\n` +
        `mean server CPU per request: off ${fmt(mean('off', (m) => m.cpuPerRequestUs))} us, on ${fmt(mean('on', (m) => m.cpuPerRequestUs))} us (${cpuRatio.toFixed(3)}x)\n`,
    );

    // Accuracy: one client, one budget.
    const acc = await withServer('auth-budget', dir, BUDGET, async (base, server) => {
      const cpu0 = server.cpuSeconds() ?? NaN;
      const w = wrk(base + tile, ACCURACY_SECONDS);
      const cpu1 = server.cpuSeconds() ?? NaN;
      return { w, cpuPerRequestUs: ((cpu1 - cpu0) * 1e6) / Math.max(1, w.requests) };
    });
    const allowed = acc.w.requests - acc.w.non2xx;
    const perSecond = allowed / acc.w.seconds;
    const error = Math.abs(perSecond - RATE) / RATE;
    process.stdout.write(
      `\naccuracy: budget ${RATE}/s (burst ${RATE}), one client, ${CONNECTIONS} connections, ${fmt(acc.w.seconds, 1)} s: ${fmt(acc.w.requests)} requests (${fmt(acc.w.rps)} req/s), ` +
        `${fmt(allowed)} answered 200 = ${fmt(perSecond, 1)}/s, ${fmt(acc.w.non2xx)} refused 429; ` +
        `server CPU/req ${fmt(acc.cpuPerRequestUs)} us, client CPU ${fmt((100 * acc.w.clientCpu) / acc.w.seconds)} % of a core\n` +
        `accuracy: ${(error * 100).toFixed(2)} % off the budget (target within ${TARGET_ACCURACY * 100} %: ${error <= TARGET_ACCURACY ? 'met' : 'NOT met'})\n`,
    );
    process.stdout.write(`load average after: ${os.loadavg().map((l) => l.toFixed(2)).join(' ')}\n`);
  } finally {
    await redis?.stop();
    rmSync(dir, { recursive: true, force: true });
  }
}

await main();
