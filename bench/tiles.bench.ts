// Tile serving: tileserver-ts against tileserver-gl-light 5.6.0 (the peer, from npm) on the same archive, one
// server at a time, autocannon at 64 connections: one hot tile, then a spread of 2,000 distinct tiles.
// Prints req/s, p50 and p99 of both and the ratio; the issue's target is 3x the peer on each scenario.
// Also printed: server CPU time per request (all processes of the server, from /proc), and its ratio. The load
// generator runs on the same machine, and the machine is shared: req/s moves with whatever else runs, CPU time
// per request much less, so the CPU ratio says what the servers cost when req/s is disturbed.
// Before measuring, every tile of both scenarios is fetched once from each server: status 200 with bytes, and the
// decoded MVT compared between the two servers.
//
//   node --import tsx bench/tiles.bench.ts        (make bench runs it; build first: node scripts/build.mjs)
//
// Environment: BENCH_DURATION (s per measured run, 10), BENCH_WARMUP (s per warm-up run, 3), BENCH_CONNECTIONS (64),
// BENCH_WORKERS (tileserver-ts worker processes; default: one per core), BENCH_ARCHIVE (pmtiles | mbtiles),
// BENCH_TILE_SERVERS (ts,peer), BENCH_TS_CACHE (on | off: tileserver-ts's in-memory tile cache).
import type { AutocannonResult } from 'autocannon';
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { gunzipSync } from 'node:zlib';
import { buildBenchData, MBTILES, PMTILES, type BenchTileList } from '../scripts/build-bench-data.js';
import { ChildServer, cores, cycleLoad, ensurePeer, envNumber, fmt, freePort, httpGet, PEER_MAIN, PEER_VERSION, ROOT, table } from './lib.js';

const DURATION = envNumber('BENCH_DURATION', 10);
const WARMUP = envNumber('BENCH_WARMUP', 3);
const CONNECTIONS = envNumber('BENCH_CONNECTIONS', 64);
const WORKERS = envNumber('BENCH_WORKERS', cores());
const ARCHIVE = (process.env.BENCH_ARCHIVE ?? 'pmtiles').toLowerCase();
const SERVERS = (process.env.BENCH_TILE_SERVERS ?? 'ts,peer').split(',').map((s) => s.trim());
const TS_CACHE = (process.env.BENCH_TS_CACHE ?? 'on').toLowerCase() !== 'off';
/** What a map client sends (MapLibre in Chrome); both servers get the same header. */
const HEADERS = { 'accept-encoding': 'gzip, deflate, br, zstd' };
const TARGET = 3;

const CLI = path.join(ROOT, 'dist/cli.js');

interface Scenario {
  name: string;
  paths: string[];
}

interface Measured {
  scenario: string;
  server: string;
  result: AutocannonResult;
  /** Server CPU time (all its processes) per answered request, in microseconds; undefined off Linux. */
  cpuPerRequest: number | undefined;
}

interface ServerKind {
  key: 'ts' | 'peer';
  label: string;
  start(port: number, archive: string, dir: string): ChildServer;
}

const tileserverTs: ServerKind = {
  key: 'ts',
  label: `tileserver-ts (${WORKERS} worker${WORKERS > 1 ? 's' : ''})`,
  start(port, archive, dir) {
    const config = path.join(dir, 'tileserver-ts.toml');
    writeFileSync(
      config,
      [
        '[server]',
        'host = "127.0.0.1"',
        `port = ${port}`,
        `workers = ${WORKERS}`,
        '',
        '[cache]',
        `enabled = ${TS_CACHE}`,
        '',
        '[[sources]]',
        'id = "world"',
        `type = "${ARCHIVE}"`,
        `path = ${JSON.stringify(archive)}`,
        '',
      ].join('\n'),
    );
    return ChildServer.start('tileserver-ts', process.execPath, [CLI, '--config', config], { env: { LOG_LEVEL: 'warn' } });
  },
};

const peer: ServerKind = {
  key: 'peer',
  label: `tileserver-gl-light ${PEER_VERSION}`,
  start(port, archive, dir) {
    const config = path.join(dir, 'tileserver-gl-light.json');
    const folder = path.dirname(archive);
    writeFileSync(
      config,
      JSON.stringify(
        {
          options: { paths: { root: folder, mbtiles: folder, pmtiles: folder } },
          data: { world: { [ARCHIVE]: path.basename(archive) } },
        },
        null,
        2,
      ),
    );
    // --silent: no access log line for 200 and 304 answers (every answer of the benchmark).
    return ChildServer.start('tileserver-gl-light', process.execPath, [PEER_MAIN, '--config', config, '--port', String(port), '--bind', '127.0.0.1', '--silent'], {
      cwd: dir,
    });
  },
};

const tilePath = (zxy: string) => `/data/world/${zxy}.pbf`;

interface Check {
  ok: number;
  bad: Map<string, number>;
  digests: Map<string, string>;
  bytes: number;
}

/** Fetches every tile of the scenarios once: status 200 with tile bytes, and the digest of the decoded MVT. */
async function verify(base: string, zxys: string[]): Promise<Check> {
  const check: Check = { ok: 0, bad: new Map(), digests: new Map(), bytes: 0 };
  let next = 0;
  const one = async () => {
    while (next < zxys.length) {
      const zxy = zxys[next++];
      const r = await httpGet(base + tilePath(zxy), HEADERS);
      const body = r.headers['content-encoding'] === 'gzip' ? gunzipSync(r.body) : r.body;
      if (r.status === 200 && body.length > 0) {
        check.ok++;
        check.bytes += r.body.length;
        check.digests.set(zxy, createHash('sha1').update(body).digest('hex'));
      } else {
        const key = `${r.status}${r.status === 200 ? ' (empty)' : ''}`;
        check.bad.set(key, (check.bad.get(key) ?? 0) + 1);
      }
    }
  };
  await Promise.all(Array.from({ length: 8 }, one));
  return check;
}

const load = (base: string, paths: string[], duration: number) =>
  cycleLoad(base, paths.map(tilePath), { connections: CONNECTIONS, duration, timeout: 20, headers: HEADERS });

async function benchServer(kind: ServerKind, archive: string, scenarios: Scenario[], dir: string): Promise<{ measured: Measured[]; check: Check }> {
  const port = await freePort();
  const base = `http://127.0.0.1:${port}`;
  const server = kind.start(port, archive, dir);
  try {
    await server.waitReady(base + tilePath(scenarios[0].paths[0]), HEADERS);
    const check = await verify(base, [...new Set(scenarios.flatMap((s) => s.paths))]);
    const measured: Measured[] = [];
    for (const s of scenarios) {
      await load(base, s.paths, WARMUP);
      const cpuBefore = server.cpuSeconds();
      const result = await load(base, s.paths, DURATION);
      const cpuAfter = server.cpuSeconds();
      if (!server.alive) throw new Error(`${kind.label} died during "${s.name}":\n${server.output()}`);
      const cpuPerRequest = cpuBefore !== undefined && cpuAfter !== undefined ? ((cpuAfter - cpuBefore) * 1e6) / Math.max(1, result.requests.total) : undefined;
      measured.push({ scenario: s.name, server: kind.label, result, cpuPerRequest });
      process.stdout.write(`  ${kind.label}, ${s.name}: ${fmt(result.requests.average)} req/s\n`);
    }
    return { measured, check };
  } finally {
    await server.stop();
  }
}

const failures = (r: AutocannonResult) => r.non2xx + r.errors + r.timeouts;
/** autocannon's latency histogram counts whole milliseconds: no invented decimals. */
const ms = (v: number) => `${fmt(v, Number.isInteger(v) ? 0 : 2)} ms`;

async function main(): Promise<void> {
  if (ARCHIVE !== 'pmtiles' && ARCHIVE !== 'mbtiles') throw new Error(`BENCH_ARCHIVE: pmtiles or mbtiles, not "${ARCHIVE}"`);
  if (!existsSync(CLI)) throw new Error('dist/cli.js is missing: build first (node scripts/build.mjs, or make bench)');
  const list: BenchTileList = buildBenchData();
  const archive = ARCHIVE === 'pmtiles' ? PMTILES : MBTILES;
  const kinds = [tileserverTs, peer].filter((k) => SERVERS.includes(k.key));
  if (kinds.some((k) => k.key === 'peer')) ensurePeer();

  const scenarios: Scenario[] = [
    { name: `hot tile ${list.hot}`, paths: [list.hot] },
    { name: `spread of ${fmt(list.spread.length)} tiles`, paths: list.spread },
  ];
  const dir = mkdtempSync(path.join(os.tmpdir(), 'tiles-bench-'));
  process.stdout.write(
    `tile serving: ${kinds.map((k) => k.label).join(' vs ')}\n` +
      `  archive ${path.relative(ROOT, archive)} (${fmt(list.tiles)} tiles; ${list.description}), served by both\n` +
      `  ${CONNECTIONS} connections, ${DURATION} s per run after ${WARMUP} s of warm-up, one server at a time, Accept-Encoding: ${HEADERS['accept-encoding']}\n` +
      `  node ${process.version}, ${cores()} cores${TS_CACHE ? '' : ', tileserver-ts tile cache OFF'}\n`,
  );

  const measured: Measured[] = [];
  const checks = new Map<string, Check>();
  try {
    for (const kind of kinds) {
      const r = await benchServer(kind, archive, scenarios, dir);
      measured.push(...r.measured);
      checks.set(kind.key, r.check);
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }

  const rows: string[][] = [['scenario', 'server', 'req/s', 'p50', 'p99', 'non-2xx/errors', 'MB/s', 'CPU/req', 'ratio ts/peer', 'CPU ratio']];
  const ratios: { scenario: string; ratio: number }[] = [];
  for (const s of scenarios) {
    const ts = measured.find((m) => m.scenario === s.name && m.server === tileserverTs.label);
    const gl = measured.find((m) => m.scenario === s.name && m.server === peer.label);
    const ratio = ts && gl ? ts.result.requests.average / gl.result.requests.average : undefined;
    const cpuRatio = ts?.cpuPerRequest && gl?.cpuPerRequest ? gl.cpuPerRequest / ts.cpuPerRequest : undefined;
    if (ratio !== undefined) ratios.push({ scenario: s.name, ratio });
    for (const m of [ts, gl]) {
      if (!m) continue;
      const r = m.result;
      rows.push([
        s.name,
        m.server,
        fmt(r.requests.average),
        ms(r.latency.p50),
        ms(r.latency.p99),
        fmt(failures(r)),
        fmt(r.throughput.average / 1e6, 1),
        m.cpuPerRequest === undefined ? '-' : `${fmt(m.cpuPerRequest)} us`,
        m === ts && ratio !== undefined ? `${fmt(ratio, 2)}x` : '',
        m === ts && cpuRatio !== undefined ? `${fmt(cpuRatio, 2)}x` : '',
      ]);
    }
  }
  process.stdout.write(`\n${table(rows)}\n\n`);

  for (const kind of kinds) {
    const c = checks.get(kind.key)!;
    const bad = [...c.bad].map(([status, n]) => `${n} x ${status}`).join(', ');
    process.stdout.write(`check ${kind.label}: ${c.ok} of ${c.ok + [...c.bad.values()].reduce((a, b) => a + b, 0)} tiles 200 with bytes${bad ? `; ${bad}` : ''}\n`);
  }
  const a = checks.get('ts');
  const b = checks.get('peer');
  if (a && b) {
    const differ = [...a.digests].filter(([zxy, d]) => b.digests.get(zxy) !== d).length;
    process.stdout.write(`check: decoded tiles ${differ === 0 ? 'identical on both servers' : `differ on ${differ} tiles`}\n`);
  }
  for (const { scenario, ratio } of ratios) {
    process.stdout.write(`target ${TARGET}x on "${scenario}": ${fmt(ratio, 2)}x, ${ratio >= TARGET ? 'met' : 'NOT met'}\n`);
  }
  writeFileSync(
    path.join(ROOT, 'bench/data/tiles-bench.json'),
    JSON.stringify(
      measured.map((m) => ({
        scenario: m.scenario,
        server: m.server,
        rps: m.result.requests.average,
        p50: m.result.latency.p50,
        p99: m.result.latency.p99,
        cpuPerRequestUs: m.cpuPerRequest,
        failures: failures(m.result),
        statusCodes: m.result.statusCodeStats,
      })),
      null,
      1,
    ),
  );
}

main().catch((err: unknown) => {
  process.stderr.write(`tiles.bench: ${(err as Error)?.stack ?? String(err)}\n`);
  process.exit(1);
});
