// The public route a request is routed to: the access gate asks first, the rate
// limiter after it, both on node:http before the tile fast lane and Hono (src/server.ts).
import type { IncomingMessage } from 'node:http';
import type { RouteMatch } from './match.js';
import { RouteMatcher, routedPath } from './match.js';
import { PUBLIC_ROUTES } from './public-routes.js';

export const publicRoutes = new RouteMatcher(PUBLIC_ROUTES);

/** The public route `method target` is routed to; undefined when none (answered 404) or not a target at all. */
export function matchPublic(method: string, target: string): RouteMatch | undefined {
  const path = routedPath(target);
  return path === undefined ? undefined : publicRoutes.match(method, path);
}

// The match is kept for the request that asked last, not in a WeakMap keyed by every request: the limiter asks
// right after the gate, on the same request, and a WeakMap entry per request (holding the match's groups) doubled
// the tail latency of the hot tile with access control and rate limits on (auth bench, p99 8 -> 16 ms, the young
// generation tracing one ephemeron per request). A request whose JWT is checked asynchronously may find another in
// the slot when the limiter asks: it is matched again, the same answer. The slot keeps one request reachable until
// the next one comes, which is all it costs.
let lastRequest: IncomingMessage | undefined;
let lastMatch: RouteMatch | undefined;

/** `matchPublic` of a request, kept while it is the last one asked about. */
export function routeOf(req: IncomingMessage): RouteMatch | undefined {
  if (req === lastRequest) return lastMatch;
  const m = matchPublic(req.method ?? 'GET', req.url ?? '');
  lastRequest = req;
  lastMatch = m;
  return m;
}
