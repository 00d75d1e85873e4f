// PMTiles from object storage: tileserver-ts serving the bench archive from an S3 server (s3rver, the one the
// tests use, checking the SigV4 signature of every request) against the same archive as a local file, both
// with the tile cache off so that every tile is read from its store. autocannon at BENCH_CONNECTIONS over the
// spread of 2,000 distinct tiles of the tiles bench. Printed per setup: tiles/s, p50, p99, and from the
// server's own metrics the storage requests per tile (storage_reads_total over tile requests): with the header
// and directories cached per archive, close to one; the first pass (directories still cold) is shown apart from
// the measured run, which follows a warm-up over the same tiles. The measured figure can dip below one: requests
// for a tile that is being read already share that read (tile-service.ts), and a read is counted when it ends.
//
//   BENCH=storage make bench     (or node --import tsx bench/storage.bench.ts after node scripts/build.mjs)
//
// Environment: BENCH_DURATION (s per run, 10), BENCH_WARMUP (s, 3), BENCH_CONNECTIONS (32), BENCH_WORKERS
// (processes of the server; default one per core), BENCH_MAX_READS (storage.max_concurrent_reads, 16).
// s3rver runs on the same cores as the server and the load generator: its request handling (one Node process,
// objects read from files) is the ceiling of the remote figures here, as a remote store's latency would be in
// production.
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { buildBenchData, PMTILES } from '../scripts/build-bench-data.js';
import { startS3Server, type S3Server } from '../test/helpers/object-storage.js';
import { parseScrape } from '../test/helpers/prom-text.js';
import { ChildServer, cores, cycleLoad, envNumber, fmt, freePort, httpGet, ROOT, table } from './lib.js';

// The AWS SDK's once-per-process note that its 2027 releases will need Node 22: noise here, as in the server.
process.env.AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED ??= 'true';

const DURATION = envNumber('BENCH_DURATION', 10);
const WARMUP = envNumber('BENCH_WARMUP', 3);
const CONNECTIONS = envNumber('BENCH_CONNECTIONS', 32);
const WORKERS = envNumber('BENCH_WORKERS', cores());
const MAX_READS = envNumber('BENCH_MAX_READS', 16);
const CLI = path.join(ROOT, 'dist/cli.js');
const HEADERS = { 'accept-encoding': 'gzip' };

interface Setup {
  label: string;
  sourceToml: (store: S3Server) => string;
}

const SETUPS: Setup[] = [
  {
    label: 's3:// (s3rver)',
    sourceToml: (store) =>
      `path = "s3://bench/world.pmtiles"\nendpoint = "${store.endpoint}"\nregion = "us-east-1"\naccess_key_id = "${store.accessKeyId}"\nsecret_access_key = "${store.secretAccessKey}"`,
  },
  { label: 'local file', sourceToml: () => `path = "${PMTILES}"` },
];

/** Sum of a counter over every sample of `name` for the source `world`. */
async function counter(metricsUrl: string, name: string): Promise<number> {
  const r = await httpGet(metricsUrl, {}, 10_000);
  return parseScrape(r.body.toString()).find(name, { source: 'world' }).reduce((n, s) => n + s.value, 0);
}

const ms = (n: number) => `${fmt(n)} ms`;

async function main(): Promise<void> {
  if (!existsSync(CLI)) throw new Error('dist/cli.js is missing: run node scripts/build.mjs first');
  const list = buildBenchData();
  const paths = list.spread.map((zxy) => `/data/world/${zxy}.pbf`);
  const store = await startS3Server(['bench']);
  const dir = mkdtempSync(path.join(os.tmpdir(), 'tsts-bench-storage-'));
  const rows: string[][] = [['setup', 'tiles/s', 'p50', 'p99', 'non-2xx/errors', 'storage requests/tile (cold pass)', 'storage requests/tile (measured)']];
  try {
    await store.put('bench', 'world.pmtiles', new Uint8Array(readFileSync(PMTILES)));
    for (const setup of SETUPS) {
      const port = await freePort();
      const metricsPort = await freePort();
      const config = path.join(dir, `${setup.label.replace(/\W+/g, '-')}.toml`);
      writeFileSync(
        config,
        `[server]\ndisable_render = true\n[cache]\nenabled = false\n[storage]\nmax_concurrent_reads = ${MAX_READS}\n[telemetry]\nscrape_bind = "127.0.0.1:${metricsPort}"\n[[sources]]\nid = "world"\ntype = "pmtiles"\n${setup.sourceToml(store)}\n`,
      );
      const server = ChildServer.start(setup.label, process.execPath, [CLI, '--config', config, '--host', '127.0.0.1', '--port', String(port), '--workers', String(WORKERS)], {
        env: { LOG_LEVEL: 'warn', AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' },
      });
      const base = `http://127.0.0.1:${port}`;
      const metrics = `http://127.0.0.1:${metricsPort}/metrics`;
      try {
        await server.waitReady(`${base}/health`);
        // One pass over every tile: each must be there, and the storage requests of a cold pass are counted.
        const before = await counter(metrics, 'storage_reads_total');
        for (const p of paths) {
          const r = await httpGet(`${base}${p}`, HEADERS, 30_000);
          if (r.status !== 200) throw new Error(`${setup.label}: ${p} answered ${r.status}`);
        }
        const cold = (await counter(metrics, 'storage_reads_total')) - before;
        await cycleLoad(base, paths, { connections: CONNECTIONS, duration: WARMUP, timeout: 30, headers: HEADERS });
        const readsBefore = await counter(metrics, 'storage_reads_total');
        const tilesBefore = await counter(metrics, 'tile_requests_total');
        const run = await cycleLoad(base, paths, { connections: CONNECTIONS, duration: DURATION, timeout: 30, headers: HEADERS });
        const reads = (await counter(metrics, 'storage_reads_total')) - readsBefore;
        const tiles = (await counter(metrics, 'tile_requests_total')) - tilesBefore;
        const remote = setup.label.startsWith('s3');
        rows.push([
          setup.label,
          fmt(run.requests.average),
          ms(run.latency.p50),
          ms(run.latency.p99),
          fmt(run.non2xx + run.errors + run.timeouts),
          remote ? fmt(cold / paths.length, 3) : '-',
          remote ? fmt(reads / Math.max(1, tiles), 3) : '-',
        ]);
      } finally {
        await server.stop();
      }
    }
  } finally {
    await store.stop();
    rmSync(dir, { recursive: true, force: true });
  }
  process.stdout.write(`\nPMTiles from S3 (s3rver) against a local file, tile cache off, ${fmt(paths.length)} distinct tiles, ${CONNECTIONS} connections, ${WORKERS} process(es), ${DURATION} s\n`);
  process.stdout.write(`${table(rows)}\n`);
}

main().catch((err) => {
  process.stderr.write(`${(err as Error).stack ?? err}\n`);
  process.exit(1);
});
