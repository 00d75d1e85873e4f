// The public route a request is routed to, matched once per request: the access gate asks first, the rate
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

const matched = new WeakMap<IncomingMessage, RouteMatch | null>();

/** `matchPublic` of a request, remembered for the rest of its way through node:http. */
export function routeOf(req: IncomingMessage): RouteMatch | undefined {
  const known = matched.get(req);
  if (known !== undefined) return known ?? undefined;
  const m = matchPublic(req.method ?? 'GET', req.url ?? '');
  matched.set(req, m ?? null);
  return m;
}
