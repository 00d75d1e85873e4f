// CORS (decisions.md: `server.cors_origins`, default ["*"], preflight answered). One set of settings for the Hono
// middleware and for the tile fast lane (tile-fast-lane.ts), which answers tiles without going through Hono.
import type { MiddlewareHandler } from 'hono';
import { cors } from 'hono/cors';
import { publicRoutes } from '../routes/request-route.js';

// PUT and PATCH: feature writes (docs/editing.md), which a browser editor sends after a preflight.
export const CORS_ALLOW_METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'];
// WWW-Authenticate: a browser-based MCP client reads `resource_metadata` from a 401 of /mcp to find where it can get
// a token (RFC 9728); a header not listed here is hidden from scripts of other origins.
// RateLimit, RateLimit-Policy: a browser client reads its budget (limits/limits.ts) from any answer, a 429 included.
export const CORS_EXPOSE_HEADERS = ['ETag', 'Location', 'Allow', 'Content-Encoding', 'Content-Length', 'Retry-After', 'WWW-Authenticate', 'RateLimit', 'RateLimit-Policy'];
export const CORS_MAX_AGE = 86400;

export function corsMiddleware(origins: readonly string[]): MiddlewareHandler {
  const answer = cors({
    origin: origins.includes('*') ? '*' : [...origins],
    allowMethods: CORS_ALLOW_METHODS,
    exposeHeaders: CORS_EXPOSE_HEADERS,
    maxAge: CORS_MAX_AGE,
  });
  // Hono's middleware answers every OPTIONS as a preflight. A plain OPTIONS (no Access-Control-Request-Method) of a
  // path with an OPTIONS route of its own (the items of OGC collections: which methods they take) goes to that
  // route, with the CORS headers of a simple answer; everywhere else OPTIONS is answered as before.
  const simple = simpleCorsHeaders(origins);
  return async (c, next) => {
    if (c.req.method === 'OPTIONS' && c.req.header('access-control-request-method') === undefined && publicRoutes.match('OPTIONS', c.req.path)) {
      await next();
      const s = simple(c.req.header('origin'));
      for (const [k, v] of Object.entries(s.headers)) c.res.headers.set(k, v);
      if (s.varyOrigin) c.res.headers.append('Vary', 'Origin');
      return;
    }
    return answer(c, next);
  };
}

/**
 * The headers `corsMiddleware` adds to an answer that is not a preflight, as a function of the request's Origin:
 * Allow-Origin (`*`, or the origin when it is on the list), Expose-Headers, and for an allow-list `Vary: Origin`
 * (to be appended to any Vary the answer has). Header names in lower case; the returned objects are shared: copy
 * from them, never change them.
 */
export function simpleCorsHeaders(origins: readonly string[]): (origin: string | undefined) => SimpleCors {
  const expose = CORS_EXPOSE_HEADERS.join(',');
  if (origins.includes('*')) {
    const any: SimpleCors = { headers: { 'access-control-allow-origin': '*', 'access-control-expose-headers': expose }, varyOrigin: false };
    return () => any;
  }
  const allowed = new Set(origins);
  const refused: SimpleCors = { headers: { 'access-control-expose-headers': expose }, varyOrigin: true };
  return (origin) =>
    origin && allowed.has(origin) ? { headers: { 'access-control-allow-origin': origin, 'access-control-expose-headers': expose }, varyOrigin: true } : refused;
}

export interface SimpleCors {
  headers: Readonly<Record<string, string>>;
  varyOrigin: boolean;
}
