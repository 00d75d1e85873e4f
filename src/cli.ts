#!/usr/bin/env node
// Command line: `tileserver-ts --config FILE`, `tileserver-ts ARCHIVE|FOLDER|URL ...`, or nothing (a config.toml
// in the working directory). Usage errors are one line and exit 2; start-up failures one line and exit 1.
import cluster from 'node:cluster';
import { parseArgs, type RunArgs } from './cli/args.js';
import { AUTO_CONFIG_FILES, configFromInputs, findDefaultConfig } from './cli/inputs.js';
import { ConfigError } from './config/errors.js';
import { loadConfigFile, type LoadedConfig } from './config/load.js';
import { runMcpStdio } from './cli/mcp-stdio.js';
import { runSeedCommand } from './cli/seed.js';
import { runKeyCommand } from './cli/key.js';
import { runExpireCommand } from './cli/expire.js';
import { runMbtilesCommand } from './cli/mbtiles.js';
import { listenErrorLine } from './cluster/listen-error.js';
import { runPrimary, WorkerStartError } from './cluster/primary.js';
import { workerCount } from './config/sizing.js';
import { startValues } from './config/restart-only.js';
import { FileWatch } from './cluster/file-watch.js';
import { runSingle, runWorker } from './cluster/worker.js';
import { EdgePurger } from './expire/edge-purge.js';
import { expiries } from './expire/expiries.js';
import { startAdminListener } from './http/admin/listener.js';
import { openAuthorizationServer } from './http/routes/mcp.js';
import { log } from './log.js';
import { NotifyListener } from './expire/notify.js';
import type { Reloader } from './state/reload-result.js';
import { buildAppState } from './state/build.js';
import { SourceOpenError } from './sources/source.js';
import { VERSION } from './version.js';
import { removeLeftovers } from './uploads/store.js';
import { telemetry } from './telemetry/recorder.js';
import { clusterMetrics, SCRAPE_ACTIVE_ENV, startScrapeListener } from './telemetry/scrape-listener.js';

const USAGE = `Usage:
  tileserver-ts --config FILE          serve what a TOML configuration file describes
  tileserver-ts PATH|URL ...           serve archives with default settings: FILE.pmtiles, FILE.mbtiles,
                                       a folder (every .pmtiles and .mbtiles in it), a PMTiles URL:
                                       http(s)://, s3://bucket/key, gs://bucket/key or az://container/blob
                                       (credentials from each provider's standard environment variables)
  tileserver-ts                        serve ${AUTO_CONFIG_FILES.join(' or ')} from the working directory
  tileserver-ts mcp-stdio [--config FILE | PATH|URL ...]
                                       the MCP tools over stdin/stdout for a local agent (docs/mcp.md)
  tileserver-ts key new [--name NAME]  a new API key and the [[auth.keys]] entry with its hash (docs/access.md)
  tileserver-ts seed --config FILE ...  render or copy the tiles of an area into a PMTiles/MBTiles archive
                                       or into the caches (tileserver-ts seed --help; docs/seeding.md)
  tileserver-ts mbtiles VERB ...       validate, diff, apply-patch, copy, meta-get, meta-set, summary of MBTiles
                                       files, as martin's mbtiles tool (tileserver-ts mbtiles --help; docs/mbtiles.md)
  tileserver-ts convert IN OUT         MBTiles to PMTiles or back, streaming, with the metadata
  tileserver-ts expire --admin URL --source ID [FILE|-]
                                       send an expire list to a running server's admin listener
                                       (tileserver-ts expire --help; docs/live-data.md)
Options:
  -c, --config FILE   configuration file (TOML)
      --host HOST     listen address (overrides server.host)
  -p, --port PORT     listen port (overrides server.port)
      --workers N     HTTP worker processes, or "auto" (overrides server.workers)
  -h, --help          show this help
  -v, --version       print the version
Environment: LOG_LEVEL (default info), LOG_FORMAT (json or pretty; default pretty on a terminal)
`;

/** A usage error: one line and a pointer to the help, exit 2. */
function usageError(message: string): never {
  process.stderr.write(`tileserver-ts: ${message} (see tileserver-ts --help)\n`);
  process.exit(2);
}

async function main(): Promise<void> {
  if (cluster.isWorker) return runWorker();
  // Set by this process once its metrics listener is bound (workers inherit it); never taken from outside.
  delete process.env[SCRAPE_ACTIVE_ENV];
  const argv = process.argv.slice(2);
  if (argv[0] === 'seed') {
    const code = await runSeedCommand(argv.slice(1));
    // Exits once stdout has taken the last progress line (a pipe may still hold it); handles a closed renderer
    // pool or cache client leave behind must not keep the command alive.
    return void process.stdout.write('', () => process.exit(code));
  }
  if (argv[0] === 'expire') {
    const code = await runExpireCommand(argv.slice(1));
    return void process.stdout.write('', () => process.exit(code));
  }
  if (argv[0] === 'mbtiles' || argv[0] === 'convert') {
    const code = await runMbtilesCommand(argv[0] === 'convert' ? argv : argv.slice(1));
    return void process.stdout.write('', () => process.exit(code));
  }
  if (argv[0] === 'key') {
    const code = await runKeyCommand(argv.slice(1));
    return void process.stdout.write('', () => process.exit(code));
  }
  const stdio = argv[0] === 'mcp-stdio';
  const args = parseArgs(stdio ? argv.slice(1) : argv);
  if (args.kind === 'help') return void process.stdout.write(USAGE);
  if (args.kind === 'version') return void process.stdout.write(`${VERSION}\n`);
  if (args.kind === 'usage') return usageError(args.message);
  if (stdio) return runStdio(args);
  await run(args);
}

/** The configuration named by the arguments: --config FILE, archives, or a config file in the working directory. */
function loadFromArgs(args: RunArgs): LoadedConfig {
  let configFile = args.config;
  if (configFile === undefined && args.inputs.length === 0) {
    configFile = findDefaultConfig(process.cwd());
    if (configFile === undefined) {
      process.stderr.write(`tileserver-ts: give --config FILE or archives, folders or URLs to serve (no ${AUTO_CONFIG_FILES.join(' or ')} here)\n\n${USAGE}`);
      process.exit(2);
    }
  }
  const loaded = configFile !== undefined ? loadConfigFile(configFile) : configFromInputs(args.inputs);
  for (const w of loaded.warnings) log.warn(w);
  return loaded;
}

async function runStdio(args: RunArgs): Promise<void> {
  if (args.host !== undefined || args.port !== undefined || args.workers !== undefined) usageError('mcp-stdio takes --config FILE or archives, folders and URLs; it listens on no port');
  await runMcpStdio(loadFromArgs(args), log);
}

async function run(args: RunArgs): Promise<void> {
  const loaded = loadFromArgs(args);
  const server = loaded.config.server;
  if (args.host !== undefined) server.host = args.host;
  if (args.port !== undefined) server.port = args.port;
  if (args.workers !== undefined) server.workers = args.workers;
  loaded.overrides = {
    ...(args.host !== undefined ? { host: args.host } : {}),
    ...(args.port !== undefined ? { port: args.port } : {}),
    ...(args.workers !== undefined ? { workers: args.workers } : {}),
  };

  // Open every source once here, so a broken one stops start-up with one line instead of crashing each worker.
  const probe = await buildAppState(loaded);
  await probe.close();

  // Uploads live as long as the process (spec): whatever an earlier run left under the upload names goes, once,
  // here in the process that owns the directory (the single process, or the primary before any worker).
  removeLeftovers(server.upload_dir, log);

  // Read once here: the processes, the listeners and telemetry are set up at start (config/restart-only.ts).
  const start = startValues(loaded.config);
  const count = workerCount(start.server.workers);
  // The metrics pull listener: in the primary, summing every worker; alone, this process's own registry. Bound
  // before the workers start, so that each of them reports it in /ping.
  await startScrapeListener(start.telemetry, count > 1 ? clusterMetrics() : () => telemetry.metricsText(), log);
  // The admin listener (off unless server.admin_bind names a port) is bound before any worker starts, so that a
  // taken address stops start-up with one line; it answers 503 until the processes it reloads are up.
  let reloader: Reloader | undefined;
  // With [mcp.oauth], the admin listener manages its clients and sessions; opening the store here also makes the
  // signing key and the tables once, before any worker races to.
  const oauthStore = loaded.config.mcp.enabled && loaded.config.mcp.oauth.enabled ? (await openAuthorizationServer(loaded.config)).store : undefined;
  await startAdminListener(start.server.admin_bind, () => reloader, log, oauthStore);
  // The edge caches in front of this machine are purged from here, the process that applies every expiry of it.
  const c = start.cache;
  new EdgePurger({ urls: c.purge_urls, timeoutMs: c.purge_timeout_ms, maxKeys: c.purge_max_keys, soft: c.purge_soft }, log).follow(expiries);
  const service = count <= 1 ? (await runSingle(loaded)).reloader : await runPrimary(loaded, count);
  reloader = service;
  // server.watch: changed files reload the service from here, the process that runs every reload.
  new FileWatch(service, log);
  // [postgres] expire_channel: one LISTEN for the machine, here where the expiry hub is, following reloads.
  const notify = new NotifyListener(log);
  await notify.configure(loaded.config);
  service.onActive((active) => void notify.configure(active.config));
  process.stdout.write(`tileserver-ts ${VERSION} listening on http://${start.server.host}:${start.server.port} (${count} process${count > 1 ? 'es' : ''})\n`);
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
