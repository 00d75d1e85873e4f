// Stored tile bytes against the machine's limit: tileserver-ts serving the bench archive, and nginx serving the
// very same bytes as plain files (each tile written out as it is stored, gzip, with `Content-Encoding: gzip`
// added). nginx does no work per tile beyond a file lookup and sendfile, so its figure is what this machine can
// answer at all with this load generator; tileserver-ts's share of it says what the archive lookup, the tile
// cache and Node's HTTP cost.
//
// The load generator is wrk (C, event loop per thread): autocannon runs in Node and saturates near the server's
// own rate on 2 cores, which would hide the difference. Two scenarios, the tiles bench's: one hot tile, and a
// spread of 2,000 distinct tiles (a Lua script walks the list, each connection from its own place). Both
// servers get `Accept-Encoding: gzip`, so both send the stored bytes unchanged; before measuring, every tile is
// fetched from both and the bodies compared byte for byte. Also printed: the CPU time per request of each
// server's processes and of wrk itself (the load generator shares the cores: if it is the limit, nginx and
// tileserver-ts would come out alike).
//
//   BENCH=stored make bench     (or node --import tsx bench/stored.bench.ts after node scripts/build.mjs)
//
// Environment: BENCH_DURATION (s per run, 10), BENCH_WARMUP (s, 3), BENCH_CONNECTIONS (64), BENCH_THREADS (wrk
// threads, 2), BENCH_WORKERS (processes of each server; default one per core).
import Database from 'better-sqlite3';
import { spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { buildBenchData, MBTILES, PMTILES } from '../scripts/build-bench-data.js';
import { ChildServer, cores, envNumber, fmt, freePort, httpGet, ROOT, table, wrk, wrkPathList, type WrkRun } from './lib.js';

const DURATION = envNumber('BENCH_DURATION', 10);
const WARMUP = envNumber('BENCH_WARMUP', 3);
const CONNECTIONS = envNumber('BENCH_CONNECTIONS', 64);
const THREADS = envNumber('BENCH_THREADS', 2);
const WORKERS = envNumber('BENCH_WORKERS', cores());
const CLI = path.join(ROOT, 'dist/cli.js');
const ACCEPT = 'gzip';
const tilePath = (zxy: string) => `/data/world/${zxy}.pbf`;

interface Scenario {
  name: string;
  zxys: string[];
}

interface Server {
  label: string;
  start(port: number, dir: string): ChildServer;
}

/** Writes each tile of `zxys` as it is stored in the MBTiles copy of the archive, under `root/data/world/z/x/y.pbf`. */
function writeTileFiles(root: string, zxys: string[]): number {
  const db = new Database(MBTILES, { readonly: true });
  const get = db.prepare('SELECT tile_data FROM tiles WHERE zoom_level = ? AND tile_column = ? AND tile_row = ?');
  let bytes = 0;
  try {
    for (const zxy of zxys) {
      const [z, x, y] = zxy.split('/').map(Number);
      const row = get.get(z, x, 2 ** z - 1 - y) as { tile_data: Buffer } | undefined;
      if (!row) throw new Error(`tile ${zxy} is not in ${MBTILES}`);
      const file = path.join(root, tilePath(zxy));
      mkdirSync(path.dirname(file), { recursive: true });
      writeFileSync(file, row.tile_data);
      bytes += row.tile_data.length;
    }
  } finally {
    db.close();
  }
  return bytes;
}

const tileserverTs: Server = {
  label: `tileserver-ts (${WORKERS} worker${WORKERS > 1 ? 's' : ''})`,
  start(port, dir) {
    const config = path.join(dir, 'tileserver-ts.toml');
    writeFileSync(
      config,
      `[server]\nhost = "127.0.0.1"\nport = ${port}\nworkers = ${WORKERS}\n\n[[sources]]\nid = "world"\ntype = "pmtiles"\npath = ${JSON.stringify(PMTILES)}\n`,
    );
    return ChildServer.start('tileserver-ts', process.execPath, [CLI, '--config', config], { env: { LOG_LEVEL: 'warn' } });
  },
};

/** nginx as a static file server of the written tiles: no access log, sendfile, unlimited keep-alive requests. */
const nginx: Server = {
  label: `nginx (${WORKERS} worker${WORKERS > 1 ? 's' : ''}, files)`,
  start(port, dir) {
    const temp = path.join(dir, 'nginx-temp');
    mkdirSync(temp, { recursive: true });
    const conf = path.join(dir, 'nginx.conf');
    writeFileSync(
      conf,
      [
        `worker_processes ${WORKERS};`,
        'daemon off;',
        // The bench may run as root; the files are in a private temp dir that only their owner can read.
        ...(process.getuid?.() === 0 ? ['user root;'] : []),
        `pid ${path.join(dir, 'nginx.pid')};`,
        `error_log ${path.join(dir, 'nginx-error.log')} warn;`,
        'events { worker_connections 4096; }',
        'http {',
        '  access_log off;',
        '  sendfile on;',
        '  tcp_nopush on;',
        '  keepalive_requests 10000000;',
        '  keepalive_timeout 120s;',
        `  client_body_temp_path ${temp}/client; proxy_temp_path ${temp}/proxy; fastcgi_temp_path ${temp}/fastcgi;`,
        `  uwsgi_temp_path ${temp}/uwsgi; scgi_temp_path ${temp}/scgi;`,
        '  types { application/x-protobuf pbf; }',
        '  server {',
        `    listen 127.0.0.1:${port};`,
        `    root ${path.join(dir, 'www')};`,
        '    add_header Content-Encoding gzip;',
        '  }',
        '}',
        '',
      ].join('\n'),
    );
    return ChildServer.start('nginx', 'nginx', ['-c', conf, '-p', dir]);
  },
};

/** Every tile from both servers: status 200 and the same bytes, gzip-encoded as stored. */
async function compare(bases: string[], zxys: string[]): Promise<string> {
  let same = 0;
  const problems: string[] = [];
  for (const zxy of zxys) {
    const bodies: Buffer[] = [];
    for (const base of bases) {
      const r = await httpGet(base + tilePath(zxy), { 'accept-encoding': ACCEPT });
      if (r.status !== 200 || r.headers['content-encoding'] !== 'gzip') problems.push(`${base}${tilePath(zxy)}: ${r.status} ${r.headers['content-encoding'] ?? 'identity'}`);
      bodies.push(r.body);
    }
    if (bodies.every((b) => b.equals(bodies[0]))) same++;
    else problems.push(`${zxy}: bodies differ`);
  }
  if (problems.length) throw new Error(`the servers do not answer alike:\n${problems.slice(0, 10).join('\n')}`);
  return `${same} of ${zxys.length} tiles 200, gzip, byte for byte the same on both servers`;
}

async function main(): Promise<void> {
  if (!existsSync(CLI)) throw new Error('dist/cli.js is missing: build first (node scripts/build.mjs, or make bench)');
  if (spawnSync('nginx', ['-v']).error) throw new Error("nginx is missing: make bench installs Debian's nginx");
  const list = buildBenchData();
  const scenarios: Scenario[] = [
    { name: `hot tile ${list.hot}`, zxys: [list.hot] },
    { name: `spread of ${fmt(list.spread.length)} tiles`, zxys: list.spread },
  ];
  const all = [...new Set(scenarios.flatMap((s) => s.zxys))];
  const dir = mkdtempSync(path.join(os.tmpdir(), 'tsts-bench-stored-'));
  const nginxVersion = spawnSync('nginx', ['-v'], { encoding: 'utf8' }).stderr.trim().replace(/^nginx version: /, '');
  try {
    const bytes = writeTileFiles(path.join(dir, 'www'), all);
    const scripts = new Map(scenarios.map((s, i) => [s.name, wrkPathList(dir, `scenario-${i}`, s.zxys.map(tilePath))]));
    process.stdout.write(
      `stored bytes: tileserver-ts vs ${nginxVersion} serving the same ${fmt(all.length)} tiles (${fmt(bytes / 1e6, 1)} MB as stored) as files\n` +
        `  wrk ${THREADS} threads x ${CONNECTIONS} connections, ${DURATION} s per run after ${WARMUP} s of warm-up, one server at a time, Accept-Encoding: ${ACCEPT}\n` +
        `  node ${process.version}, ${cores()} cores; load generator and servers share them\n`,
    );
    const ports = { ts: await freePort(), nginx: await freePort() };
    const bases = { ts: `http://127.0.0.1:${ports.ts}`, nginx: `http://127.0.0.1:${ports.nginx}` };
    // Both up for the comparison of bodies, then measured one at a time.
    let check: string;
    {
      const a = tileserverTs.start(ports.ts, dir);
      const b = nginx.start(ports.nginx, dir);
      try {
        await a.waitReady(bases.ts + tilePath(list.hot));
        await b.waitReady(bases.nginx + tilePath(list.hot));
        check = await compare([bases.ts, bases.nginx], all);
      } finally {
        await a.stop();
        await b.stop();
      }
    }
    const results: { scenario: string; server: Server; run: WrkRun; serverCpuUs: number }[] = [];
    for (const server of [nginx, tileserverTs]) {
      const port = await freePort();
      const base = `http://127.0.0.1:${port}`;
      const child = server.start(port, dir);
      try {
        await child.waitReady(base + tilePath(list.hot));
        for (const s of scenarios) {
          const script = scripts.get(s.name)!;
          if (WARMUP > 0) wrk(base, script, { threads: THREADS, connections: CONNECTIONS, seconds: WARMUP, headers: { 'Accept-Encoding': ACCEPT } });
          const before = child.cpuSeconds();
          const run = wrk(base, script, { threads: THREADS, connections: CONNECTIONS, seconds: DURATION, headers: { 'Accept-Encoding': ACCEPT } });
          const after = child.cpuSeconds();
          if (!child.alive) throw new Error(`${server.label} died during "${s.name}":\n${child.output()}`);
          const serverCpuUs = before !== undefined && after !== undefined ? ((after - before) * 1e6) / Math.max(1, run.requests) : NaN;
          results.push({ scenario: s.name, server, run, serverCpuUs });
          process.stdout.write(`  ${server.label}, ${s.name}: ${fmt(run.rps)} req/s\n`);
        }
      } finally {
        await child.stop();
      }
    }
    const rows: string[][] = [['scenario', 'server', 'req/s', 'p50', 'p99', 'errors', 'MB/s', 'server CPU/req', 'wrk CPU/req', 'share of nginx']];
    for (const r of results) {
      const ref = results.find((x) => x.scenario === r.scenario && x.server === nginx)!;
      const perReq = (us: number) => `${fmt(us, 1)} us`;
      rows.push([
        r.scenario,
        r.server.label,
        fmt(r.run.rps),
        `${fmt(r.run.p50Ms, 2)} ms`,
        `${fmt(r.run.p99Ms, 2)} ms`,
        fmt(r.run.errors),
        fmt(r.run.mbPerSec, 1),
        perReq(r.serverCpuUs),
        perReq((r.run.wrkCpu * 1e6) / Math.max(1, r.run.requests)),
        r.server === nginx ? '' : `${fmt(r.run.rps / ref.run.rps, 2)}x`,
      ]);
    }
    process.stdout.write(`\n${table(rows)}\n\ncheck: ${check}\n`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

main().catch((err: unknown) => {
  process.stderr.write(`stored.bench: ${(err as Error)?.stack ?? String(err)}\n`);
  process.exit(1);
});
