// One HTTP serving process: builds the AppState, serves the Hono app, reloads on request and drains on stop.
// Runs as a cluster worker, or alone when server.workers = 1.
import { serve, type ServerType } from '@hono/node-server';
import { createServer as createHttpServer, type RequestListener, type Server, type ServerOptions } from 'node:http';
import { loadConfigFile, type LoadedConfig } from './config/load.js';
import { keepRestartOnly, restartOnlyChanges, startValues } from './config/restart-only.js';
import { accessLog, targetPath } from './http/access-log.js';
import { createApp } from './http/app.js';
import type { ServerContext } from './http/context.js';
import { initCodecs } from './tiles/encoding.js';
import { answerConnect, front, requireHost } from './http/front.js';
import { answerClientErrors } from './http/client-errors.js';
import { tileFastLane } from './http/tile-fast-lane.js';
import { accessGate, answerUnseen } from './http/access-gate.js';
import { policyOf } from './auth/policy.js';
import { log } from './log.js';
import type { RuntimeStatus } from './runtime.js';
import { sharedCache } from './shared-cache/client.js';
import { expiries } from './expire/expiries.js';
import { RenderService } from './render/service.js';
import { peerLinkFromEnv, RenderPeers } from './render/peers.js';
import { getRequestListener } from '@hono/node-server';
import { buildAppState } from './state/build.js';
import { archiveChanges, archivesChangedWhileDown, followRemoteArchives, recordArchives } from './expire/archives.js';
import { expiryHub, type NewBatch } from './expire/hub.js';
import { StateHolder } from './state/holder.js';
import type { AppState } from './state/app-state.js';
import { stateFigures, type StateFigures } from './state/reload-result.js';
import { VERSION } from './version.js';
import { instrumentListener } from './http/request-metrics.js';
import { telemetry } from './telemetry/recorder.js';
import { UploadRegistry, type UploadRecord } from './uploads/registry.js';
import { Uploads, type UploadPeers } from './uploads/service.js';
import { scrapeListenerActive } from './telemetry/scrape-listener.js';
import { rateLimits } from './limits/limits.js';
import { simpleCorsHeaders } from './http/cors.js';

export interface RunningServer {
  ctx: ServerContext;
  /**
   * Replaces the active state with one built from `loaded` (unless its hash is the active one and `flush` is not
   * asked); throws (and keeps the old state) when building fails. Answers with the figures of the state now active.
   */
  reload(loaded: LoadedConfig, flush?: boolean): Promise<{ reloaded: boolean; figures: StateFigures }>;
  /** The figures of the active state. */
  figures(): StateFigures;
  /** Stops accepting connections, lets in-flight requests finish, then releases the state. */
  drain(timeoutMs?: number): Promise<void>;
  address: { host: string; port: number };
}

/** What a process starts with besides its configuration (a cluster worker's share of the cluster's uploads). */
export interface StartOptions {
  /** Uploads the other processes serve already: opened before the first request. */
  uploads?: UploadRecord[];
  /** How uploads reach the other processes of a cluster; absent in a single process. */
  uploadPeers?: UploadPeers;
}

export async function startServer(loaded: LoadedConfig, options: StartOptions = {}): Promise<RunningServer> {
  await initCodecs();
  // Telemetry settings need a restart (spec): started once, from the configuration the process starts with.
  await telemetry.start(loaded.config.telemetry, log);
  // Uploads belong to the process: every state, the first and each reloaded one, serves the same registry.
  const registry = new UploadRegistry(loaded.config, log);
  for (const record of options.uploads ?? []) {
    await registry.openAndAdd(record).catch((err: Error) => log.error({ upload: record.id, err: err.message }, 'uploads: cannot open an upload the cluster serves'));
  }
  const uploads = new Uploads(registry, log, options.uploadPeers);
  const holder = new StateHolder(await buildAppState(loaded, { uploads: registry }));
  // The access rules of a state are compiled before its first request (auth/policy.ts), not by it.
  policyOf(holder.current);
  const runtime: RuntimeStatus = { rendererEnabled: false, renderer: undefined, rendererState: 'unavailable', rendererWanted: false, peersNotReady: [], renderRoutesMounted: false, scrapeListenerActive: scrapeListenerActive() };
  // Rendering: the pool starts in the background (browsers take seconds) and follows every reload.
  const render = new RenderService(runtime, log);
  telemetry.watchRender(render);
  const ctx: ServerContext = { holder, version: VERSION, runtime, render, uploads };
  const { app } = createApp(ctx, log);
  // A renderer's in-process requests hold the state they read, as client requests do (see the listener below).
  render.attach((req, env) => holder.hold(async () => app.fetch(req, env)));
  render.onState(holder.current);
  // The fleet's shared cache (docs/deployment.md): connected in the background, followed on every reload.
  sharedCache.configure(holder.current.config.cache, log);
  // The expiry index's bound (src/expire/): follows every reload.
  expiries.maxTiles = holder.current.config.cache.expiry_max_tiles;
  // Rate limits (limits/limits.ts): budgets and the Redis they are shared through follow every reload too.
  await rateLimits.configure(holder.current.config.rate_limits, holder.current.config.cache, log);
  // Archives replaced while the server was down are expired before the first request (expire/archives.ts).
  await acceptAll(await archivesChangedWhileDown(holder.current, log));
  followArchives(holder.current);
  // In a cluster, tiles are drawn by the process owning their block; the others forward to it (render/peers.ts).
  const link = peerLinkFromEnv();
  let peers: RenderPeers | undefined;
  if (link) {
    peers = new RenderPeers(link, log);
    const listening = peers.listen(
      getRequestListener((req, env) => holder.hold(async () => app.fetch(req, env))),
    );
    // Without its socket this process still serves everything; it only draws what it is asked for itself.
    if (await listening.then(() => true, (err: Error) => (log.warn({ err: err.message }, 'render peers: cannot listen; drawing every tile here'), false))) render.attachPeers(peers);
  }
  const { host, port } = loaded.config.server;

  const server: ServerType = await new Promise((resolve, reject) => {
    // Every request is seen by the access log first, then by the metrics (telemetry/http.ts), then by the access
    // gate (http/access-gate.ts: keys, tokens, what each may read); tile requests go through the fast lane in front of Hono (http/tile-fast-lane.ts); the rest through the front's checks (http/front.ts) to Hono. The CORS list and
    // the body timeout are not reloadable: read from the configuration the process started with.
    const { cors_origins: corsOrigins, request_timeout_ms: bodyTimeoutMs, max_header_bytes: maxHeaderSize } = loaded.config.server;
    const createServer = ((options: ServerOptions, honoListener: RequestListener) =>
      createHttpServer(
        // requireHostHeader off: node:http's bare 400 for an HTTP/1.1 request without Host becomes requireHost's
        // problem JSON (http/front.ts).
        { ...options, maxHeaderSize, requireHostHeader: false },
        holdState(
          holder,
          accessLog(
            log,
            instrumentListener(
              telemetry,
              requireHost(
                corsOrigins,
                // The access gate first (it refuses what the request may not reach, and records its principal), then
                // the rate limits (per principal, else per client address) before the fast lane, so that tiles
                // answered without Hono spend their budget too (limits/limits.ts); then the answer to a closed or
                // absent id, after the limiter so that it carries the same RateLimit headers either way.
                accessGate(ctx, rateLimits.listener(() => holder.current, simpleCorsHeaders(corsOrigins), answerUnseen(corsOrigins, tileFastLane(ctx, front({ corsOrigins, bodyTimeoutMs }, honoListener))))),
              ),
            ),
          ),
        ),
      )) as typeof createHttpServer;
    const s = serve({ fetch: app.fetch, hostname: host, port, createServer }, () => resolve(s));
    s.once('error', reject);
  });
  const http = server as Server;
  http.keepAliveTimeout = 65_000;
  // Node's own whole-request limit stays a backstop behind the front's body timeout, never in front of it.
  const start = startValues(loaded.config).server;
  http.requestTimeout = Math.max(http.requestTimeout, start.request_timeout_ms + 5_000);
  answerConnect(http, start.cors_origins, (req, id, status, bytes) =>
    log.info({ method: req.method, path: targetPath(req.url), route: null, status, bytes, duration_ms: 0, req_id: id }, 'request'),
  );
  answerClientErrors(http, start.cors_origins, start.max_header_bytes, (a) =>
    log.info({ method: null, path: null, route: null, status: a.status, bytes: a.bytes, duration_ms: 0, req_id: a.reqId, refused: a.code }, 'request'),
  );

  return {
    ctx,
    address: { host, port },
    figures: () => stateFigures(holder.current, runtime.rendererEnabled),
    async reload(next, flush = false) {
      if (!flush && next.hash === holder.current.configHash) {
        // Nothing to rebuild, but a remote archive replaced in its bucket is re-opened now, not at its next tile.
        await Promise.all([...holder.current.sources.values()].map((s) => s.refresh?.()));
        return { reloaded: false, figures: stateFigures(holder.current, runtime.rendererEnabled) };
      }
      const state = await buildAppState(next, { previous: holder.current, flush, uploads: registry });
      // Replaced archives are compared while the old state still serves and holds the old files open.
      const replaced = await archiveChanges(holder.current, state, log);
      // The new rules take over what the old ones fetched and the new configuration still names (a JWKS URL).
      policyOf(state, policyOf(holder.current));
      holder.swap(state);
      // Accepted at the swap: what the old state makes from now on is older than the expiry, hence stale.
      await acceptAll(replaced);
      followArchives(state);
      render.onState(state);
      sharedCache.configure(state.config.cache, log);
      expiries.maxTiles = state.config.cache.expiry_max_tiles;
      await rateLimits.configure(state.config.rate_limits, state.config.cache, log);
      log.info({ config_hash: next.hash, flush }, 'configuration reloaded');
      return { reloaded: true, figures: stateFigures(state, runtime.rendererEnabled) };
    },
    drain(timeoutMs = 30_000) {
      // Uploads still arriving end now (503, their files removed): a slow client must not hold the stop open.
      uploads.stop();
      return new Promise<void>((resolve) => {
        const force = setTimeout(() => {
          http.closeAllConnections();
        }, timeoutMs);
        force.unref();
        http.close(() => {
          clearTimeout(force);
          void Promise.all([peers?.close(), render.close().finally(() => sharedCache.close()), rateLimits.close(), holder.closeAll(), uploads.close(), telemetry.close()]).finally(resolve);
        });
        // Idle keep-alive sockets would hold close() open until they time out.
        http.closeIdleConnections();
      });
    },
  };
}

/** Hands batches found by this process to the hub; a failure is logged (the change is expired nowhere then). */
async function acceptAll(batches: NewBatch[]): Promise<void> {
  for (const b of batches) await expiryHub().accept(b).catch((err: Error) => log.error({ sources: b.sources, err: err.message }, 'expire: a batch could not be accepted'));
}

/** Follows a new state's archives: remote objects replaced later, and the versions served, kept for the next start. */
function followArchives(state: AppState): void {
  followRemoteArchives(state, log, () => recordArchives(state));
  recordArchives(state).catch((err: Error) => log.warn({ err: err.message }, 'archives: cannot keep the versions served in the cache directory'));
}

/**
 * Counts every request against the state active when it arrived, until its response is finished or its
 * connection gone: the state a reload replaces is closed once those requests have ended (state/holder.ts).
 */
function holdState(holder: StateHolder, next: RequestListener): RequestListener {
  return (req, res) => {
    const s = holder.enter();
    res.once('close', () => holder.leave(s));
    next(req, res);
  };
}

/** A configuration file read again for a reload, and the restart-only settings it changes (not applied). */
export interface Reread {
  loaded: LoadedConfig;
  restartRequired: string[];
}

/**
 * Re-reads the config file a server was started from (SIGHUP, the admin reload). Started from file arguments
 * there is no file: the running configuration is read "again" as it is (a flush still rebuilds it). Throws
 * ConfigError when the file is now invalid.
 */
export function rereadConfig(current: LoadedConfig): Reread {
  if (!current.file) return { loaded: current, restartRequired: [] };
  const next = loadConfigFile(current.file);
  for (const w of next.warnings) log.warn(w);
  // Command-line overrides of the file (--host, --port, --workers) hold for the file read again too.
  next.overrides = current.overrides;
  next.config.server = { ...next.config.server, ...current.overrides };
  const restartRequired = restartOnlyChanges(current.config, next.config);
  next.config = keepRestartOnly(current.config, next.config);
  return { loaded: next, restartRequired };
}
