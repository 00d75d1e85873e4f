// The access gate on the wire (rules: src/auth/gate.ts, docs/access.md). At the node:http level, in front of the
// tile fast lane and Hono, so every route is covered, the fast lane's tiles included; its refusals are problem
// JSON with CORS headers (a browser client must be able to read a 401) and, for 401 and 403, the
// `WWW-Authenticate` challenge. Beside it, for what the node:http level cannot see: the Hono middleware that
// holds in-process calls of the MCP tools to what the /mcp request's key allows, the filter of listings, and
// the check of sources a route reads from a request body.
import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import type { Context, MiddlewareHandler } from 'hono';
import { checkPath, checkRequest, checkSources, grantOf, visible, type Refusal, type Verdict } from '../auth/gate.js';
import type { AppState } from '../state/app-state.js';
import { problemBody } from '../problem.js';
import { markUnseen, unseenOf } from '../auth/unseen.js';
import type { ServerContext, RenderRequestEnv } from './context.js';
import { simpleCorsHeaders } from './cors.js';
import { noteRoute } from './access-log.js';
import { problem } from './problem.js';

/** `public` in a Cache-Control value made `private`; other values as they are. */
export function privateCacheControl(value: string): string {
  return /\bpublic\b/i.test(value) ? value.replace(/\bpublic\b/gi, 'private') : value;
}

/**
 * An answer a key or token opened must not be kept by a shared cache for everybody (RFC 9111 3.5: `public` lets a
 * CDN store an answer to a request with Authorization). Its `Cache-Control: public` (server.tile_cache_control)
 * becomes `private` however the route writes its head (setHeader, or writeHead with an object or a list).
 */
function keepPrivate(res: ServerResponse): void {
  const writeHead = res.writeHead;
  res.writeHead = function (this: ServerResponse, ...args: unknown[]) {
    const set = this.getHeader('cache-control');
    if (typeof set === 'string') this.setHeader('cache-control', privateCacheControl(set));
    const headers = args.find((a, i) => i > 0 && a !== null && typeof a === 'object');
    if (Array.isArray(headers)) {
      // A flat [name, value, name, value, ...] list, or a list of pairs.
      for (let i = 0; i < headers.length; i++) {
        const h = headers[i] as unknown;
        if (Array.isArray(h) && String(h[0]).toLowerCase() === 'cache-control') h[1] = privateCacheControl(String(h[1]));
        else if (typeof h === 'string' && i % 2 === 0 && h.toLowerCase() === 'cache-control' && typeof headers[i + 1] === 'string') headers[i + 1] = privateCacheControl(headers[i + 1] as string);
      }
    } else if (headers) {
      const o = headers as Record<string, unknown>;
      for (const k of Object.keys(o)) if (k.toLowerCase() === 'cache-control' && typeof o[k] === 'string') o[k] = privateCacheControl(o[k] as string);
    }
    return (writeHead as (...a: unknown[]) => ServerResponse).apply(this, args);
  } as typeof res.writeHead;
}

function refusalHeaders(r: Refusal): Record<string, string> {
  const h: Record<string, string> = { 'cache-control': 'no-store' };
  if (r.challenge) h['www-authenticate'] = r.challenge;
  return h;
}

type CorsFor = ReturnType<typeof simpleCorsHeaders>;

/**
 * Writes a refusal: problem JSON, the CORS headers of the request's origin, `Cache-Control: no-store`, and for a 401
 * or 403 the challenge. Headers already set on `res` (the RateLimit headers of an unseen answer) go out with it.
 */
function writeRefusal(corsFor: CorsFor, req: IncomingMessage, res: ServerResponse, r: Refusal): void {
  if (res.headersSent || res.destroyed) return;
  const body = JSON.stringify(problemBody(r.status, r.title, r.detail));
  const cors = corsFor(req.headers.origin);
  const headers: Record<string, string> = {
    ...cors.headers,
    ...refusalHeaders(r),
    'content-type': 'application/problem+json',
    'content-length': String(Buffer.byteLength(body)),
  };
  if (cors.varyOrigin) headers.vary = 'Origin';
  noteRoute(res, 'access gate');
  res.writeHead(r.status, headers);
  res.end(req.method === 'HEAD' ? undefined : body);
}

/**
 * Wraps the listener of every request: a request the gate refuses is answered here; the others go on to `next`
 * with their principal recorded, an unseen one (a closed or absent id) with its 404 marked for `answerUnseen`,
 * which stands behind the rate limiter. The CORS allow-list is read once, as the Hono middleware does.
 */
export function accessGate(ctx: ServerContext, next: RequestListener): RequestListener {
  const corsFor = simpleCorsHeaders(ctx.holder.current.config.server.cors_origins);
  const refuse = (req: IncomingMessage, res: ServerResponse, r: Refusal) => writeRefusal(corsFor, req, res, r);
  const unchecked: Refusal = { ok: false, status: 401, title: 'Unauthorized', detail: 'the credentials could not be checked' };
  const go = (req: IncomingMessage, res: ServerResponse, v: Verdict) => {
    if (!v.ok) {
      if (!v.unseen) return refuse(req, res, v);
      markUnseen(req, v);
    } else if (v.protected) keepPrivate(res);
    next(req, res);
  };
  return (req, res) => {
    let verdict: Verdict | Promise<Verdict>;
    try {
      verdict = checkRequest(ctx.holder.current, req);
    } catch {
      // The gate never throws on what a client sends; should it throw on anything else, nothing is let through.
      verdict = unchecked;
    }
    // The usual case, synchronous (no JWT to verify): no closure, no promise.
    if (!(verdict instanceof Promise)) return go(req, res, verdict);
    verdict
      .then(
        (v) => go(req, res, v),
        () => refuse(req, res, unchecked),
      )
      .catch((err: Error) => res.destroy(err));
  };
}

/**
 * Stands behind the rate limiter: a request the gate marked unseen is answered here, its 404 written as the gate
 * writes refusals, with the RateLimit headers the limiter set, so a closed id's answer and an unknown id's are one
 * (docs/access.md, "Closed means unseen"). Other requests go on to `next`.
 */
export function answerUnseen(corsOrigins: readonly string[], next: RequestListener): RequestListener {
  const corsFor = simpleCorsHeaders(corsOrigins);
  return (req, res) => {
    const u = unseenOf(req);
    if (u === undefined) return next(req, res);
    writeRefusal(corsFor, req, res, u);
  };
}

const incomingOf = (c: Context): IncomingMessage | undefined => (c.env as { incoming?: IncomingMessage } | undefined)?.incoming;

/** A refusal inside Hono (an MCP tool's in-process call, a source named in a body): the gate's headers. */
function refusalResponse(c: Context, r: Refusal): Response {
  const headers: Record<string, string> = { 'Cache-Control': 'no-store' };
  if (r.challenge) headers['WWW-Authenticate'] = r.challenge;
  return problem(c, r.status, r.title, r.detail, {}, headers);
}

/**
 * Requests made in-process on behalf of a client (the MCP tools, src/mcp/tools.ts) never pass the node:http gate:
 * each is held to what the credentials of the /mcp request that made it allow. A renderer's own requests
 * (src/render/resources.ts) are not checked: the render they serve was allowed when it was asked for.
 */
export function inProcessAccess(ctx: ServerContext): MiddlewareHandler {
  return async (c, next) => {
    const env = c.env as ({ incoming?: IncomingMessage; outgoing?: ServerResponse } & RenderRequestEnv) | undefined;
    if (env?.outgoing === undefined && env?.renderBase === undefined && env?.incoming !== undefined) {
      const url = new URL(c.req.url);
      const v = checkPath(ctx.holder.current, c.req.method, url.pathname, grantOf(env.incoming));
      if (!v.ok) return refusalResponse(c, v);
    }
    await next();
  };
}

/** For a listing: whether the request may see a source or style (public ones, and key ones its credentials allow). */
export function visibleTo(c: Context, state: AppState): (kind: 'source' | 'style', id: string) => boolean {
  return visible(state, grantOf(incomingOf(c)));
}

/** The refusal for sources a route read from the request body, or undefined when the request may read them. */
export function refuseSources(c: Context, state: AppState, ids: readonly string[]): Response | undefined {
  const v = checkSources(state, ids, grantOf(incomingOf(c)));
  return v.ok ? undefined : refusalResponse(c, v);
}
