// The Hono application: middleware (CORS, errors) and one module of routes per area.
import type { IncomingMessage } from 'node:http';
import { Hono } from 'hono';
import { clientGone, requestIdOf } from './access-log.js';
import type { ServerContext } from './context.js';
import { corsMiddleware } from './cors.js';
import { inProcessAccess } from './access-gate.js';
import { headContentLength } from './head.js';
import { problem } from './problem.js';
import { HttpProblem } from '../problem.js';
import { Router } from './router.js';
import { registerDataRoutes } from './routes/data.js';
import { registerEmbedRoutes } from './routes/embed.js';
import { registerFileRoutes } from './routes/files.js';
import { registerFontRoutes } from './routes/fonts.js';
import { registerOgcRoutes } from './routes/ogc/index.js';
import { registerOperationalRoutes } from './routes/operational.js';
import { registerMcpRoutes } from './routes/mcp.js';
import { registerPageRoutes } from './routes/pages.js';
import { registerRenderRoutes } from './routes/render.js';
import { registerSpatialRoutes } from './routes/spatial.js';
import { registerStyleRoutes } from './routes/styles.js';
import { registerTerrainRoutes } from './routes/terrain.js';
import { registerUploadRoutes } from './routes/uploads.js';
import type { Logger } from '../log.js';
import { TileUnavailableError } from '../sources/source.js';

export function createApp(ctx: ServerContext, log: Logger): { app: Hono; router: Router } {
  const app = new Hono();
  // CORS is not reloadable (spec): read the allow-list once, from the configuration the process started with.
  const origins = ctx.holder.current.config.server.cors_origins;
  app.use('*', corsMiddleware(origins));
  app.use('*', headContentLength());
  // Client requests passed the access gate on node:http (server.ts); the MCP tools' in-process calls are checked here.
  app.use('*', inProcessAccess(ctx));

  app.onError((err, c) => {
    if (err instanceof HttpProblem) {
      return problem(c, err.status, err.title, err.detail, err.extra, err.headers);
    }
    if (err instanceof TileUnavailableError) {
      return problem(c, err.status, err.title, err.detail, err.extra, err.retryAfter !== undefined ? { 'Retry-After': String(err.retryAfter) } : {});
    }
    const incoming = (c.env as { incoming?: IncomingMessage } | undefined)?.incoming;
    // A client that hung up makes its body read fail ("aborted"): not a fault of the server, and its access line
    // (aborted, with the stage it reached) already says so. An error alert must not fire for every lost phone.
    if (clientGone(incoming)) {
      log.debug({ err: (err as Error).message, path: c.req.path, req_id: requestIdOf(incoming) }, 'request ended: the client went away');
      return problem(c, 400, 'Request incomplete', 'the client closed the connection before the request was complete');
    }
    log.error({ err, path: c.req.path, req_id: requestIdOf(incoming) }, 'request failed');
    return problem(c, 500, 'Internal error', 'the request could not be completed; the error is in the server log');
  });
  app.notFound((c) => problem(c, 404, 'Not found', `no route for ${c.req.method} ${c.req.path}`));

  const router = new Router(app, () => ctx.holder.current);
  registerOperationalRoutes(router, ctx);
  registerTerrainRoutes(router, ctx);
  registerDataRoutes(router, ctx);
  registerFileRoutes(router, ctx);
  registerSpatialRoutes(router, ctx);
  registerUploadRoutes(router, ctx, log);
  registerStyleRoutes(router, ctx);
  registerFontRoutes(router, ctx);
  registerEmbedRoutes(router, ctx);
  registerPageRoutes(router, ctx);
  registerOgcRoutes(router, ctx);
  registerMcpRoutes(router, ctx, log);
  registerRenderRoutes(router, ctx);
  // In the table's order (src/routes/public-routes.ts), the order the access gate and the rate limiter match in.
  router.mount();
  return { app, router };
}
