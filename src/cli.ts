#!/usr/bin/env node
// Command line: `tileserver-ts --config FILE` or `tileserver-ts FILE.pmtiles FILE.mbtiles ...`.
import cluster from 'node:cluster';
import { createHash } from 'node:crypto';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { ConfigError } from './config/errors.js';
import { loadConfigFile, validateConfig, type LoadedConfig } from './config/load.js';
import { listenErrorLine } from './cluster/listen-error.js';
import { runPrimary, WorkerStartError } from './cluster/primary.js';
import { workerCount } from './cluster/sizing.js';
import { runSingle, runWorker } from './cluster/worker.js';
import { log } from './log.js';
import { buildAppState } from './state/app-state.js';
import { SourceOpenError } from './sources/source.js';
import { VERSION } from './version.js';
import { telemetry } from './telemetry/recorder.js';
import { clusterMetrics, SCRAPE_ACTIVE_ENV, startScrapeListener } from './telemetry/scrape-listener.js';

const USAGE = `Usage:
  tileserver-ts --config FILE          serve what a TOML configuration file describes
  tileserver-ts FILE.pmtiles|FILE.mbtiles ...
                                       serve these archives with default settings
Options:
  -c, --config FILE   configuration file (TOML)
      --host HOST     listen address (overrides server.host)
  -p, --port PORT     listen port (overrides server.port)
      --workers N     HTTP worker processes, or "auto" (overrides server.workers)
  -h, --help          show this help
  -v, --version       print the version
`;

/** A config for archives given on the command line: one source each, id from the file name. */
export function configFromFiles(files: string[]): LoadedConfig {
  const used = new Set<string>();
  const sources = files.map((file) => {
    const ext = path.extname(file).toLowerCase();
    if (ext !== '.pmtiles' && ext !== '.mbtiles') throw new ConfigError(`${file}: not a .pmtiles or .mbtiles file`);
    let id = path.basename(file, path.extname(file)).replace(/[^A-Za-z0-9_.-]/g, '_').replace(/^[.-]+/, '') || 'source';
    for (let n = 2; used.has(id); n++) id = `${id.replace(/-\d+$/, '')}-${n}`;
    used.add(id);
    return { id, type: ext.slice(1), path: path.resolve(file) };
  });
  const raw = { sources };
  const { config, warnings } = validateConfig(raw, '(command line)', process.cwd());
  return { config, hash: createHash('sha256').update(JSON.stringify(raw)).digest('hex'), file: undefined, warnings };
}

async function main(): Promise<void> {
  if (cluster.isWorker) return runWorker();
  // Set by this process once its metrics listener is bound (workers inherit it); never taken from outside.
  delete process.env[SCRAPE_ACTIVE_ENV];
  const { values, positionals } = parseArgs({
    allowPositionals: true,
    options: {
      config: { type: 'string', short: 'c' },
      host: { type: 'string' },
      port: { type: 'string', short: 'p' },
      workers: { type: 'string' },
      help: { type: 'boolean', short: 'h' },
      version: { type: 'boolean', short: 'v' },
    },
  });
  if (values.help) return void process.stdout.write(USAGE);
  if (values.version) return void process.stdout.write(`${VERSION}\n`);
  if (!values.config && positionals.length === 0) {
    process.stderr.write(`tileserver-ts: give --config FILE or archive files\n\n${USAGE}`);
    process.exit(2);
  }
  if (values.config && positionals.length > 0) {
    process.stderr.write('tileserver-ts: give either --config FILE or archive files, not both\n');
    process.exit(2);
  }

  const loaded = values.config ? loadConfigFile(values.config) : configFromFiles(positionals);
  for (const w of loaded.warnings) log.warn(w);
  const server = loaded.config.server;
  if (values.host) server.host = values.host;
  if (values.port !== undefined) {
    const port = Number(values.port);
    if (!/^\d+$/.test(values.port) || port > 65535) throw new ConfigError(`--port: expected an integer 0..65535, got "${values.port}"`);
    server.port = port;
  }
  if (values.workers !== undefined) {
    const n = values.workers === 'auto' ? 'auto' : Number(values.workers);
    if (n !== 'auto' && (!Number.isInteger(n) || n < 1)) throw new ConfigError(`--workers: expected "auto" or an integer >= 1, got "${values.workers}"`);
    server.workers = n;
  }

  // Open every source once here, so a broken one stops start-up with one line instead of crashing each worker.
  const probe = await buildAppState(loaded);
  await probe.close();

  const count = workerCount(server.workers);
  // The metrics pull listener: in the primary, summing every worker; alone, this process's own registry. Bound
  // before the workers start, so that each of them reports it in /ping.
  await startScrapeListener(loaded.config.telemetry, count > 1 ? clusterMetrics() : () => telemetry.metricsText(), log);
  if (count <= 1) {
    await runSingle(loaded);
  } else {
    await runPrimary(loaded, count);
  }
  process.stdout.write(`tileserver-ts ${VERSION} listening on http://${server.host}:${server.port} (${count} process${count > 1 ? 'es' : ''})\n`);
}

main().catch((err: unknown) => {
  const listenError = listenErrorLine(err);
  if (listenError) {
    process.stderr.write(`tileserver-ts: ${listenError}\n`);
  } else if (err instanceof ConfigError || err instanceof SourceOpenError || err instanceof WorkerStartError) {
    process.stderr.write(`tileserver-ts: ${err.message}\n`);
  } else {
    process.stderr.write(`tileserver-ts: ${(err as Error)?.stack ?? String(err)}\n`);
  }
  process.exit(1);
});
