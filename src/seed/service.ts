// The tile service a seed asks: the server's own state, render service and Hono app, built from the same
// configuration and run in this process without a listener. A tile is asked for with the path a client would
// use, so a seeded tile is exactly the tile the server answers — the same render pool and [render] settings, the
// same render cache on disk and the same shared (Redis) cache when [cache] names one, which is what --warm fills.
// `tileserver-ts mcp-stdio` (src/cli/mcp-stdio.ts) answers its tools with the same in-process service.
import type { LoadedConfig } from '../config/load.js';
import { createApp } from '../http/app.js';
import type { ServerContext } from '../http/context.js';
import type { Logger } from '../log.js';
import { RenderService } from '../render/service.js';
import type { RuntimeStatus } from '../runtime.js';
import { sharedCache } from '../shared-cache/client.js';
import { buildAppState } from '../state/build.js';
import { StateHolder } from '../state/holder.js';
import { initCodecs } from '../tiles/encoding.js';
import { VERSION } from '../version.js';

export interface InProcessService {
  /** Answers a request for a path of the service (`/data/…`, `/styles/…`), as the HTTP server would. */
  get(path: string, headers?: Record<string, string>, signal?: AbortSignal): Promise<Response>;
  /** Answers any request (its URL's origin is only a base for absolute URLs in the answer), as the HTTP server would. */
  fetch(req: Request): Promise<Response>;
  /** Render figures (renders made, cache hits) for the progress report. */
  ctx: ServerContext;
  close(): Promise<void>;
}

/** Where the in-process requests say they come from: only a base for absolute URLs, never contacted. */
const ORIGIN = 'http://seed.invalid';

/**
 * `render`: whether this seed draws a style. A source's tiles never need the renderers, so an export of a source
 * starts no browser (and leaves none behind starting up when it finishes in a second).
 */
export async function startInProcess(loaded: LoadedConfig, log: Logger, o: { render: boolean }): Promise<InProcessService> {
  await initCodecs();
  const holder = new StateHolder(await buildAppState(loaded));
  const runtime: RuntimeStatus = { rendererEnabled: false, renderer: undefined, rendererState: 'unavailable', rendererWanted: false, peersNotReady: [], renderRoutesMounted: false, scrapeListenerActive: false };
  // The seed's own app answers only the seed and its renderers: no person waits, so bulk frames may use every
  // renderer (a server keeps one back for interactive renders: src/render/priority-queue.ts).
  const render = new RenderService(runtime, log, { reserveInteractive: false });
  const ctx: ServerContext = { holder, version: VERSION, runtime, render };
  const { app } = createApp(ctx, log);
  // The renderers fetch their styles, sources, sprites and glyphs from the same app, in-process (server.ts does the same).
  render.attach((req, env) => holder.hold(async () => app.fetch(req, env)));
  if (o.render) render.onState(holder.current);
  sharedCache.configure(holder.current.config.cache, log);
  return {
    ctx,
    get(path, headers = {}, signal) {
      // Seeding is bulk work: its renders wait behind interactive and expired ones (src/render/priority-queue.ts).
      return holder.hold(async () => app.fetch(new Request(ORIGIN + path, { headers, signal }), { priority: 'bulk' }));
    },
    fetch(req) {
      return holder.hold(async () => app.fetch(req, {}));
    },
    async close() {
      await render.close();
      await sharedCache.close();
      await holder.closeAll();
    },
  };
}
