// Two machines sharing one Redis render cache against one machine alone (BENCH=fleet make bench).
//
// Workload: BENCH_FLEET_TILES (200) distinct OSM Liberty raster tiles nobody asked for before. Each instance
// gets the whole list from BENCH_FLEET_CONNECTIONS (4) clients of its own, in the same order, at the same time,
// as a load balancer spreading the same popular tiles over a fleet would. Three runs, each with fresh servers
// (memory cache on, disk cache off, so the only thing machines share is Redis) and an empty Redis:
//
// - one:        one instance, the list once;
// - pair alone: two instances without a shared cache, the list asked of both;
// - pair shared: two instances with `[cache] shared`, the list asked of both.
//
// Printed per run: wall time, distinct tiles per second, renders per instance (/ping render_stats), CPU seconds
// of the servers, and the shared-cache hits; then what sharing saved (renders and CPU seconds against the pair
// alone). On a machine whose cores both instances share, distinct-tile throughput is bounded by CPU: what the
// shared cache saves shows as renders and CPU not spent.
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { osmLibertyToml } from '../test/helpers/server.js';
import { startRedis, type RedisServer } from '../test/helpers/redis.js';
import { ChildServer, envNumber, fmt, freePort, httpGet, ROOT, table } from './lib.js';

const CLI = path.join(ROOT, 'dist/cli.js');
const TILES = envNumber('BENCH_FLEET_TILES', 200);
const CONNECTIONS = envNumber('BENCH_FLEET_CONNECTIONS', 4);

interface Instance {
  child: ChildServer;
  url: string;
}

interface PingBody {
  render_stats: { rendered: number };
  shared_cache: { hits: number; misses: number; errors: number };
}

const ping = async (i: Instance) => JSON.parse((await httpGet(`${i.url}/ping`)).body.toString()) as PingBody;

/** Distinct tiles at z7-z9, spread over the world so that few share a 4x4 block. */
function tileList(n: number): string[] {
  const out: string[] = [];
  for (let i = 0; i < n; i++) {
    const z = 7 + (i % 3);
    const size = 2 ** z;
    const x = (i * 37 + 11) % size;
    const y = (i * 53 + 7) % size;
    out.push(`/styles/osm-liberty/${z}/${x}/${y}.png`);
  }
  return [...new Set(out)];
}

async function startInstance(name: string, shared: string | undefined): Promise<Instance> {
  const dir = mkdtempSync(path.join(os.tmpdir(), `tsts-fleet-bench-${name}-`));
  const port = await freePort();
  const toml = osmLibertyToml(`[server]
host = "127.0.0.1"
port = ${port}
workers = 1
[cache]
dir = "${dir}"
${shared ? `shared = "${shared}"` : ''}
[render]
memory_cache_mb = 64
disk_cache_mb = 0
queue_timeout_ms = 120000
`);
  writeFileSync(path.join(dir, 'config.toml'), toml);
  const child = ChildServer.start(`tileserver-ts (${name})`, process.execPath, [CLI, '--config', path.join(dir, 'config.toml')], { env: { LOG_LEVEL: 'warn' } });
  const url = `http://127.0.0.1:${port}`;
  await child.waitReady(`${url}/ready`, {}, 120_000);
  return { child, url };
}

/** Every path of `list` asked of `i` by `connections` clients taking the next path in turn; counts failures. */
async function askAll(i: Instance, list: string[], connections: number): Promise<number> {
  let next = 0;
  let failed = 0;
  await Promise.all(
    Array.from({ length: connections }, async () => {
      while (next < list.length) {
        const p = list[next++];
        const r = await httpGet(`${i.url}${p}`, {}, 180_000).catch(() => undefined);
        if (r?.status !== 200) failed++;
      }
    }),
  );
  return failed;
}

interface RunResult {
  name: string;
  seconds: number;
  renders: number[];
  cpu: number;
  hits: number;
  failed: number;
}

async function run(name: string, count: number, redis: RedisServer | undefined, list: string[]): Promise<RunResult> {
  if (redis) await redis.client.flushall();
  const instances: Instance[] = [];
  try {
    for (let k = 0; k < count; k++) instances.push(await startInstance(`${name}-${k}`, redis?.url));
    const cpu0 = instances.map((i) => i.child.cpuSeconds() ?? 0);
    const r0 = await Promise.all(instances.map(async (i) => (await ping(i)).render_stats.rendered));
    const started = performance.now();
    const failed = (await Promise.all(instances.map((i) => askAll(i, list, CONNECTIONS)))).reduce((a, b) => a + b, 0);
    const seconds = (performance.now() - started) / 1000;
    const pings = await Promise.all(instances.map(ping));
    const cpu = instances.reduce((sum, i, k) => sum + (i.child.cpuSeconds() ?? 0) - cpu0[k], 0);
    return { name, seconds, renders: pings.map((p, k) => p.render_stats.rendered - r0[k]), cpu, hits: pings.reduce((a, p) => a + p.shared_cache.hits, 0), failed };
  } finally {
    await Promise.all(instances.map((i) => i.child.stop()));
  }
}

async function main(): Promise<void> {
  const list = tileList(TILES);
  const redis = await startRedis();
  try {
    const results = [await run('one', 1, undefined, list), await run('pair alone', 2, undefined, list), await run('pair shared', 2, redis, list)];
    const rows = [['run', 'distinct tiles', 'seconds', 'distinct tiles/s', 'renders per instance', 'renders', 'server CPU s', 'shared hits', 'failed']];
    for (const r of results) {
      const total = r.renders.reduce((a, b) => a + b, 0);
      rows.push([r.name, fmt(list.length), fmt(r.seconds, 1), fmt(list.length / r.seconds, 1), r.renders.map((n) => fmt(n)).join(' + '), fmt(total), fmt(r.cpu, 1), fmt(r.hits), fmt(r.failed)]);
    }
    process.stdout.write(`${table(rows)}\n`);
    const alone = results[1];
    const shared = results[2];
    const sum = (r: RunResult) => r.renders.reduce((a, b) => a + b, 0);
    process.stdout.write(
      `sharing saved ${fmt(sum(alone) - sum(shared))} of ${fmt(sum(alone))} renders and ${fmt(alone.cpu - shared.cpu, 1)} of ${fmt(alone.cpu, 1)} server CPU seconds; ` +
        `the shared pair served the ${fmt(list.length)} tiles to both clients in ${fmt(shared.seconds, 1)} s against ${fmt(alone.seconds, 1)} s alone and ${fmt(results[0].seconds, 1)} s for one instance asked once\n`,
    );
    if (results.some((r) => r.failed > 0)) process.exitCode = 1;
  } finally {
    await redis.stop();
  }
}

await main();
