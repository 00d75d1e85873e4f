// The tile fast lane: GET and HEAD of `/data/{source}/{z}/{x}/{y}.{format}` answered straight on node:http,
// in front of Hono. Profiling the tile route under load showed most of a cache hit's CPU in the Fetch-API layer
// (a Request per request, a Response whose Uint8Array body becomes a ReadableStream that @hono/node-server
// reads back, Headers objects copied between middleware and handler); the tile bytes themselves cost nothing.
//
// The lane takes only what it answers exactly as the Hono route would: a well-formed tile path of a plain
// configured source in a tile format, whose result is a tile (200 or 304) or no tile (204). Everything else -
// malformed paths, percent-encoded segments, composites, `.geojson`, problems, errors - is handed to Hono
// unchanged, so problem details, logging and the error handler stay in one place. The one exception: a tile
// a source cannot make now (TileUnavailableError: 503 with Retry-After, 400, or an xyz upstream's 502/504) is
// answered here, since handing it on would run the failed database query, raster job or upstream fetch a second time. Both paths use `tileAnswer`
// for the header rules and `simpleCorsHeaders` for CORS. Anything that must see every request (metrics,
// access logs) belongs at the node:http level (the server's 'request' event), not in a Hono middleware.
import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import { parseTileCoord } from '../tiles/coords.js';
import { formatFromExtension } from '../tiles/format.js';
import { fetchTile, type TileResult } from '../serve/tile-service.js';
import type { ServerContext } from './context.js';
import { noteRoute } from './access-log.js';
import { simpleCorsHeaders } from './cors.js';
import { acceptedEncodings } from '../tiles/encoding.js';
import { ifNoneMatchHits } from './respond.js';
import { telemetry } from '../telemetry/recorder.js';
import { problemBody } from '../problem.js';
import { TileUnavailableError } from '../sources/source.js';
import { FILTER_PARAMS } from '../serve/tile-filter.js';
import { answerKeys } from '../expire/surrogate-keys.js';
import { sourceDependencies } from '../expire/dependencies.js';


/** Whether a query string names a parameter of filtered tiles (serve/tile-filter.ts), as a URL parser reads the names. */
function filtered(query: string): boolean {
  const params = new URLSearchParams(query);
  return FILTER_PARAMS.some((p) => params.has(p));
}

/** A tile request's successful answer, without CORS (added by the middleware or the lane). Header names in lower case. */
export interface TileAnswer {
  status: 200 | 204 | 304;
  headers: Record<string, string>;
  body: Uint8Array | undefined;
}

type Answerable = Extract<TileResult, { kind: 'tile' }> | { kind: 'empty' };

/**
 * The header rules of decisions.md for a tile: Cache-Control on every answer; ETag and `Vary: Accept-Encoding`
 * on a tile; 304 when If-None-Match names its ETag; Content-Type, and Content-Encoding unless identity, on a 200
 * (and `Server-Timing: cache;desc="shared"` when the tile came from the shared cache). `surrogateKeys`: the
 * edge cache's keys of the answer (src/expire/surrogate-keys.ts), on every answer, 204 included.
 */
export function tileAnswer(result: Answerable, cacheControl: string, ifNoneMatch: string | undefined, surrogateKeys?: string): TileAnswer {
  const keys: Record<string, string> = surrogateKeys ? { 'surrogate-key': surrogateKeys } : {};
  if (result.kind === 'empty') return { status: 204, headers: { 'cache-control': cacheControl, ...keys }, body: undefined };
  const headers: Record<string, string> = { 'cache-control': cacheControl, etag: result.etag, vary: 'Accept-Encoding', ...keys };
  // The upstream of a remote source failed and its last good copy is answered (docs/xyz.md): said so, and not
  // to be kept by the client or a CDN as if fresh.
  if (result.stale) {
    headers.warning = '110 - "Response is Stale"';
    headers['cache-status'] = 'tileserver-ts; hit; detail=stale';
    headers['cache-control'] = 'no-cache';
  }
  if (ifNoneMatchHits(ifNoneMatch, result.etag)) return { status: 304, headers, body: undefined };
  headers['content-type'] = result.contentType;
  if (result.contentEncoding !== 'identity') headers['content-encoding'] = result.contentEncoding;
  // As rendered tiles say it: this answer was found in the shared cache, not transcoded here.
  if (result.fromShared) headers['server-timing'] = 'cache;desc="shared"';
  return { status: 200, headers, body: result.body };
}

/** The template of the Hono route this lane answers for (src/http/routes/data.ts), for the access log. */
const TILE_ROUTE = '/data/{source}/{z}/{x}/{y}.{format}';

/** `/data/{id}/{z}/{x}/{y}.{ext}` with an id of the configured-id alphabet and digits only; no `%`, no `@2x`. */
const TILE_PATH = /^\/data\/([A-Za-z0-9_][A-Za-z0-9_.-]*)\/(\d{1,2})\/(\d{1,9})\/(\d{1,9})\.([a-z]{3,4})$/;

/**
 * Wraps the Hono request listener: tile requests the lane can answer are answered here, all others (and any
 * the lane gives up on) go to `fallback`. The CORS allow-list is read once, as the Hono middleware does.
 */
export function tileFastLane(ctx: ServerContext, fallback: RequestListener): RequestListener {
  const corsFor = simpleCorsHeaders(ctx.holder.current.config.server.cors_origins);

  const send = (req: IncomingMessage, res: ServerResponse, a: TileAnswer) => {
    const cors = corsFor(req.headers.origin);
    const headers = Object.assign(a.headers, cors.headers);
    if (cors.varyOrigin) headers.vary = headers.vary ? `${headers.vary}, Origin` : 'Origin';
    // HEAD gets the length of the body a GET would get; node:http sends no body for HEAD.
    if (a.body) headers['content-length'] = String(a.body.byteLength);
    noteRoute(res, TILE_ROUTE);
    res.writeHead(a.status, headers);
    res.end(a.body);
  };

  return (req, res) => {
    const { method, url } = req;
    if ((method !== 'GET' && method !== 'HEAD') || url === undefined || !url.startsWith('/data/')) return fallback(req, res);
    const q = url.indexOf('?');
    const m = TILE_PATH.exec(q < 0 ? url : url.slice(0, q));
    const state = ctx.holder.current;
    if (!m) return fallback(req, res);
    const source = state.sources.get(m[1]);
    // Sources whose tiles depend on the query string, and filtered tiles, get it from the Hono route.
    if (!source || (q >= 0 && (source.info.takesParams || filtered(url.slice(q + 1))))) return fallback(req, res);
    const format = formatFromExtension(m[5]);
    const parsed = format ? parseTileCoord(m[2], m[3], m[4]) : undefined;
    if (!format || !parsed?.ok) return fallback(req, res);

    const started = telemetry.on ? performance.now() : 0;
    fetchTile(state, { sourceId: m[1], coord: parsed.coord, format, accepted: acceptedEncodings(req.headers['accept-encoding']) }).then(
      (result) => {
        if (result.kind !== 'tile' && result.kind !== 'empty') return fallback(req, res);
        try {
          const { z, x, y } = parsed.coord;
          const keys = answerKeys(sourceDependencies(state, m[1]), z, x, y);
          const answer = tileAnswer(result, state.config.server.tile_cache_control, req.headers['if-none-match'], keys);
          if (telemetry.on) telemetry.tile({ source: m[1], format, z: parsed.coord.z }, result, started, answer.body?.byteLength);
          send(req, res, answer);
        } catch (err) {
          // Writing failed (the socket is gone): nothing left to answer.
          res.destroy(err as Error);
        }
      },
      (err: unknown) => {
        // A tile that cannot be made now (database down or too slow, raster queue full) is answered here: run
        // again by Hono it would cost a second slow query. Other errors are Hono's to report (it runs the request again).
        if (!(err instanceof TileUnavailableError)) return fallback(req, res);
        noteRoute(res, TILE_ROUTE);
        if (telemetry.on) telemetry.tile({ source: m[1], format, z: parsed.coord.z }, 'error', started, undefined);
        const cors = corsFor(req.headers.origin);
        const headers: Record<string, string> = { 'content-type': 'application/problem+json', ...cors.headers };
        if (err.retryAfter !== undefined) headers['retry-after'] = String(err.retryAfter);
        if (cors.varyOrigin) headers.vary = 'Origin';
        res.writeHead(err.status, headers);
        res.end(method === 'HEAD' ? undefined : JSON.stringify(problemBody(err.status, err.title, err.detail)));
      },
    );
  };
}
