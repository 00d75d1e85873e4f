// Serving: the configuration the arguments name, the processes, listeners and watchers of a running server, and
// `mcp-stdio`. Loaded by cli.ts only when the command line asks for these (the other subcommands never load the
// server's modules: their start is Node's own plus what they use).
import { AUTO_CONFIG_FILES, type RunArgs } from './args.js';
import { configFromInputs, findDefaultConfig } from './inputs.js';
import { USAGE, usageError } from './usage.js';
import { loadConfigFile, type LoadedConfig } from '../config/load.js';
import { runMcpStdio } from './mcp-stdio.js';
import { runPrimary } from '../cluster/primary.js';
import { workerCount } from '../config/sizing.js';
import { startValues } from '../config/restart-only.js';
import { FileWatch } from '../cluster/file-watch.js';
import { runSingle } from '../cluster/worker.js';
import { EdgePurger } from '../expire/edge-purge.js';
import { expiries } from '../expire/expiries.js';
import { startAdminListener } from '../http/admin/listener.js';
import { openAuthorizationServer } from '../http/routes/mcp.js';
import { log } from '../log.js';
import { NotifyListener } from '../expire/notify.js';
import type { Reloader } from '../state/reload-result.js';
import { buildAppState } from '../state/build.js';
import { VERSION } from '../version.js';
import { removeLeftovers } from '../uploads/store.js';
import { telemetry } from '../telemetry/recorder.js';
import { clusterMetrics, SCRAPE_ACTIVE_ENV, startScrapeListener } from '../telemetry/scrape-listener.js';

/** Set by this process once its metrics listener is bound (workers inherit it); never taken from outside. */
const forgetInheritedScrapeFlag = () => delete process.env[SCRAPE_ACTIVE_ENV];

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

export async function runStdio(args: RunArgs): Promise<void> {
  forgetInheritedScrapeFlag();
  if (args.host !== undefined || args.port !== undefined || args.workers !== undefined) usageError('mcp-stdio takes --config FILE or archives, folders and URLs; it listens on no port');
  await runMcpStdio(loadFromArgs(args), log);
}

export async function runServer(args: RunArgs): Promise<void> {
  forgetInheritedScrapeFlag();
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
