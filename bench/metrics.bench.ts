// What metrics cost on the hot tile path: one cached tile asked again and again with wrk, against
//   baseline   the server as it was before telemetry (built from git, BENCH_BASELINE_REF),
//   off        this server without [telemetry] (recording is a no-op),
//   pull       this server with the pull listener (scrape_bind) and strict labels,
//   pull+otlp  pull listener plus OTLP push of metrics and a span per request (sample_rate 1) to a gRPC
//              receiver run by this benchmark.
// The variants take turns, BENCH_ROUNDS times, so a disturbance on the shared machine hits them alike; printed:
// the median tiles/s of each, server CPU time per request, and each against `off`.
//
//   BENCH=metrics make bench      or   node --import tsx bench/metrics.bench.ts   (after node scripts/build.mjs)
//
// Environment: BENCH_DURATION (s per run, 10), BENCH_WARMUP (s, 3), BENCH_CONNECTIONS (64), BENCH_THREADS (wrk
// threads, 2), BENCH_ROUNDS (3), BENCH_WORKERS (server processes, 1: the cost per request shows best in one),
// BENCH_BASELINE_REF (git commit of the code before telemetry; "none" skips the baseline).
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { buildBenchData, PMTILES } from '../scripts/build-bench-data.js';
import { startOtlpReceiver } from '../test/helpers/otlp-receiver.js';
import { ChildServer, envNumber, fmt, freePort, ROOT, table } from './lib.js';

const DURATION = envNumber('BENCH_DURATION', 10);
const WARMUP = envNumber('BENCH_WARMUP', 3);
const CONNECTIONS = envNumber('BENCH_CONNECTIONS', 64);
const THREADS = envNumber('BENCH_THREADS', 2);
const ROUNDS = envNumber('BENCH_ROUNDS', 3);
const WORKERS = envNumber('BENCH_WORKERS', 1);
/** main just before telemetry was added (issue 15). */
const BASELINE_REF = process.env.BENCH_BASELINE_REF ?? '77d6227';
const HEADERS = ['accept-encoding: gzip, deflate, br, zstd'];

interface Variant {
  name: string;
  cli: string;
  telemetry: string;
}

/** Builds the baseline commit into a temporary directory (sharing node_modules); undefined, with why, when it cannot. */
function buildBaseline(dir: string): { cli?: string; why?: string } {
  if (BASELINE_REF === 'none') return { why: 'BENCH_BASELINE_REF=none' };
  const out = path.join(dir, 'baseline');
  mkdirSync(out);
  const archive = spawnSync('sh', ['-c', 'git -C "$0" archive --format=tar "$1" | tar -x -C "$2"', ROOT, BASELINE_REF, out], { encoding: 'utf8' });
  if (archive.status !== 0 || !existsSync(path.join(out, 'package.json'))) return { why: `git archive ${BASELINE_REF} failed: ${archive.stderr.trim().split('\n')[0]}` };
  symlinkSync(path.join(ROOT, 'node_modules'), path.join(out, 'node_modules'));
  const build = spawnSync(process.execPath, ['scripts/build.mjs'], { cwd: out, encoding: 'utf8' });
  if (build.status !== 0) return { why: `building ${BASELINE_REF} failed: ${build.stderr.trim().split('\n')[0]}` };
  return { cli: path.join(out, 'dist/cli.js') };
}

function wrk(url: string, seconds: number): number {
  const args = [`-t${THREADS}`, `-c${CONNECTIONS}`, `-d${seconds}s`, ...HEADERS.flatMap((h) => ['-H', h]), url];
  const r = spawnSync('wrk', args, { encoding: 'utf8' });
  if (r.error) throw new Error(`wrk did not run (${r.error.message}); make installs Debian's wrk (APT_PACKAGES)`);
  const m = /Requests\/sec:\s+([\d.]+)/.exec(r.stdout);
  if (r.status !== 0 || !m) throw new Error(`wrk failed:\n${r.stdout}${r.stderr}`);
  const errors = /Non-2xx or 3xx responses: (\d+)/.exec(r.stdout);
  if (errors) throw new Error(`the server answered ${errors[1]} requests with an error:\n${r.stdout}`);
  return Number(m[1]);
}

async function main(): Promise<void> {
  const list = buildBenchData();
  const dir = mkdtempSync(path.join(os.tmpdir(), 'tsts-bench-metrics-'));
  const receiver = await startOtlpReceiver();
  const cli = path.join(ROOT, 'dist/cli.js');
  const variants: Variant[] = [];
  const baseline = buildBaseline(dir);
  if (baseline.cli) variants.push({ name: `baseline (${BASELINE_REF})`, cli: baseline.cli, telemetry: '' });
  else process.stdout.write(`baseline skipped: ${baseline.why}\n`);
  variants.push({ name: 'off', cli, telemetry: '' });
  variants.push({ name: 'pull', cli, telemetry: 'scrape_bind = "127.0.0.1:0"' });
  variants.push({ name: 'pull+otlp', cli, telemetry: `scrape_bind = "127.0.0.1:0"\nenabled = true\nendpoint = "http://127.0.0.1:${receiver.port}"\nsample_rate = 1.0\nmetrics_export_interval_secs = 5` });

  const hot = `/data/world/${list.hot}.pbf`;
  process.stdout.write(`hot tile ${hot}, wrk ${THREADS} threads x ${CONNECTIONS} connections, ${DURATION} s per run, ${ROUNDS} rounds, ${WORKERS} server process(es)\n`);
  const results = new Map<string, { rps: number[]; cpuUs: number[] }>(variants.map((v) => [v.name, { rps: [], cpuUs: [] }]));
  try {
    for (let round = 1; round <= ROUNDS; round++) {
      for (const v of variants) {
        const port = await freePort();
        const config = path.join(dir, `${v.name.replace(/\W+/g, '-')}.toml`);
        writeFileSync(config, `[server]\nhost = "127.0.0.1"\nport = ${port}\nworkers = ${WORKERS}\n\n[[sources]]\nid = "world"\ntype = "pmtiles"\npath = ${JSON.stringify(PMTILES)}\n${v.telemetry ? `\n[telemetry]\n${v.telemetry}\n` : ''}`);
        const server = ChildServer.start(`tileserver-ts ${v.name}`, process.execPath, [v.cli, '--config', config], { env: { LOG_LEVEL: 'warn' } });
        try {
          const url = `http://127.0.0.1:${port}${hot}`;
          await server.waitReady(url);
          if (WARMUP > 0) wrk(url, WARMUP);
          const cpu0 = server.cpuSeconds();
          const rps = wrk(url, DURATION);
          const cpu1 = server.cpuSeconds();
          const r = results.get(v.name)!;
          r.rps.push(rps);
          if (cpu0 !== undefined && cpu1 !== undefined) r.cpuUs.push(((cpu1 - cpu0) * 1e6) / (rps * DURATION));
          process.stdout.write(`round ${round}: ${v.name.padEnd(22)} ${fmt(rps)} tiles/s\n`);
        } finally {
          await server.stop();
        }
      }
    }
  } finally {
    await receiver.close();
    rmSync(dir, { recursive: true, force: true });
  }

  const median = (xs: number[]) => (xs.length ? [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)] : NaN);
  const off = median(results.get('off')!.rps);
  const rows = [['variant', 'tiles/s (median)', 'vs off', 'CPU µs/request (median)']];
  for (const v of variants) {
    const r = results.get(v.name)!;
    const rps = median(r.rps);
    rows.push([v.name, fmt(rps), `${fmt(rps / off, 3)}x`, r.cpuUs.length ? fmt(median(r.cpuUs), 1) : 'n/a']);
  }
  process.stdout.write(`\n${table(rows)}\n`);
  process.stdout.write(`spans received by the benchmark's OTLP receiver: ${fmt(receiver.spans.length)}\n`);
}

main().catch((err: unknown) => {
  process.stderr.write(`${(err as Error)?.stack ?? String(err)}\n`);
  process.exit(1);
});
