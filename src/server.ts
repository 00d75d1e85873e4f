// One HTTP serving process: builds the AppState, serves the Hono app, reloads on request and drains on stop.
// Runs as a cluster worker, or alone when server.workers = 1.
import { serve, type ServerType } from '@hono/node-server';
import { createServer as createHttpServer, type RequestListener, type Server, type ServerOptions } from 'node:http';
import { loadConfigFile, type LoadedConfig } from './config/load.js';
import { createApp } from './http/app.js';
import type { RuntimeStatus, ServerContext } from './http/context.js';
import { initCodecs } from './http/encoding.js';
import { tileFastLane } from './http/tile-fast-lane.js';
import { log } from './log.js';
import { RenderService } from './render/service.js';
import { buildAppState } from './state/app-state.js';
import { StateHolder } from './state/holder.js';
import { VERSION } from './version.js';

export interface RunningServer {
  ctx: ServerContext;
  /** Replaces the active state with one built from `loaded`; throws (and keeps the old state) when building fails. */
  reload(loaded: LoadedConfig, flush?: boolean): Promise<{ reloaded: boolean }>;
  /** Stops accepting connections, lets in-flight requests finish, then releases the state. */
  drain(timeoutMs?: number): Promise<void>;
  address: { host: string; port: number };
}

export async function startServer(loaded: LoadedConfig): Promise<RunningServer> {
  await initCodecs();
  const holder = new StateHolder(await buildAppState(loaded));
  const runtime: RuntimeStatus = { rendererEnabled: false, renderer: undefined, renderRoutesMounted: false, scrapeListenerActive: false, ogcEnabled: false };
  // Rendering: the pool starts in the background (browsers take seconds) and follows every reload.
  const render = new RenderService(runtime, log);
  const ctx: ServerContext = { holder, version: VERSION, runtime, render };
  const { app } = createApp(ctx, log);
  render.attach((req, env) => app.fetch(req, env));
  render.onState(holder.current);
  const { host, port } = loaded.config.server;

  const server: ServerType = await new Promise((resolve, reject) => {
    // Tile requests go through the fast lane in front of Hono (http/tile-fast-lane.ts); everything else to Hono.
    const createServer = ((options: ServerOptions, honoListener: RequestListener) => createHttpServer(options, tileFastLane(ctx, honoListener))) as typeof createHttpServer;
    const s = serve({ fetch: app.fetch, hostname: host, port, createServer }, () => resolve(s));
    s.once('error', reject);
  });
  const http = server as Server;
  http.keepAliveTimeout = 65_000;

  return {
    ctx,
    address: { host, port },
    async reload(next, flush = false) {
      if (!flush && next.hash === holder.current.configHash) return { reloaded: false };
      const state = await buildAppState(next, { previous: holder.current, flush });
      holder.swap(state);
      render.onState(state);
      log.info({ config_hash: next.hash }, 'configuration reloaded');
      return { reloaded: true };
    },
    drain(timeoutMs = 30_000) {
      return new Promise<void>((resolve) => {
        const force = setTimeout(() => {
          http.closeAllConnections();
        }, timeoutMs);
        force.unref();
        http.close(() => {
          clearTimeout(force);
          void Promise.all([render.close(), holder.current.close()]).finally(resolve);
        });
        // Idle keep-alive sockets would hold close() open until they time out.
        http.closeIdleConnections();
      });
    },
  };
}

/** Re-reads the config file a server was started from (SIGHUP), or undefined when it was started from file arguments. */
export function rereadConfig(current: LoadedConfig): LoadedConfig | undefined {
  if (!current.file) return undefined;
  const next = loadConfigFile(current.file);
  for (const w of next.warnings) log.warn(w);
  // host, port and the number of processes are not reloadable: keep the ones the server runs with (and any CLI
  // override of them).
  const { host, port, workers } = current.config.server;
  next.config = { ...next.config, server: { ...next.config.server, host, port, workers } };
  return next;
}
