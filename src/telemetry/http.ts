// HTTP requests, seen where every request passes: the node:http 'request' listener, in front of the tile fast
// lane and Hono. Whoever answers names the route template the request matched (`setRoute`): the fast lane, or
// the Hono middleware below from Hono's matched route. A request nobody names is UNMATCHED_ROUTE.
import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import type { MiddlewareHandler } from 'hono';
import { matchedRoutes } from 'hono/route';
import { UNMATCHED_ROUTE } from './labels.js';
import type { Telemetry } from './recorder.js';

const ROUTE = Symbol('metrics route');
type Routed = ServerResponse & { [ROUTE]?: string };

/** Names the route template `res` answers (the label `route`). */
export function setRoute(res: ServerResponse, route: string): void {
  (res as Routed)[ROUTE] = route;
}

/**
 * Wraps the server's request listener: in-flight count, then on the end of the answer (or the client leaving)
 * the request counter, its duration and its span. `inner` unchanged when telemetry is off.
 */
export function instrumentListener(t: Telemetry, inner: RequestListener): RequestListener {
  if (!t.on) return inner;
  const otel = t.otel;
  return (req: IncomingMessage, res: ServerResponse) => {
    const started = performance.now();
    const method = req.method ?? 'GET';
    const span = otel?.startSpan(method, Date.now());
    t.requestStarted();
    res.once('close', () => {
      const route = (res as Routed)[ROUTE] ?? UNMATCHED_ROUTE;
      // A client that left before any answer: 499, as proxies log it (status_class 4xx).
      const status = res.headersSent ? res.statusCode : 499;
      t.requestDone(route, status, (performance.now() - started) / 1000);
      if (span) otel!.endSpan(span, method, route, pathOf(req.url), status);
    });
    inner(req, res);
  };
}

function pathOf(url: string | undefined): string {
  if (!url) return '/';
  const q = url.indexOf('?');
  return q < 0 ? url : url.slice(0, q);
}

/**
 * Hono middleware: after the handler, names the route template Hono matched (its registered path, e.g.
 * `/styles/:style/style.json`). Middleware (method ALL) is not a route: a request answered by middleware
 * (a CORS preflight) or by the not-found handler stays UNMATCHED_ROUTE. Requests a renderer makes in-process have no node response
 * and are not counted.
 */
export function routeTemplate(): MiddlewareHandler {
  return async (c, next) => {
    await next();
    const res = (c.env as { outgoing?: ServerResponse } | undefined)?.outgoing;
    if (!res) return;
    // The handler that answered: Hono leaves routeIndex at the last one it ran.
    const answered = matchedRoutes(c)[c.req.routeIndex];
    if (answered && answered.method !== 'ALL') setRoute(res, answered.path);
  };
}
