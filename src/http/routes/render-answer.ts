// What the render routes share: the documented answers, the 400 of a bad parameter, the answer of a render that
// could not be made (and its log line), the image answer with its validators and timing, the render cache key of
// a request, the style lookup every route starts with, and when the routes are absent.
import type { Context } from 'hono';
import * as v from 'valibot';
import type { IncomingMessage } from 'node:http';
import type { RenderOutput, RenderResult } from '../../render/render-result.js';
import type { RenderPriority } from '../../render/priority-queue.js';
import { requestEncoding } from '../../render/image-encoding.js';
import type { RequestedFormat } from '../../render/static-params.js';
import { languageHeaders, requestLanguage } from '../request-language.js';
import type { RenderService } from '../../render/service.js';
import { RenderError } from '../../render/renderer.js';
import type { Problem } from '../../render/static-params.js';
import { styleById } from '../../serve/generated.js';
import { rasterStylesOffered } from '../../serve/style-tilejson.js';
import type { AppState } from '../../state/app-state.js';
import type { LoadedStyle } from '../../styles/loaded-style.js';
import { log } from '../../log.js';
import { requestIdOf } from '../access-log.js';
import type { ServerContext } from '../context.js';
import { problem } from '../problem.js';
import { problemBody } from '../../problem.js';
import { notModified } from '../respond.js';
import { param, type Absence } from '../router.js';

export const PROBLEM = { 'application/problem+json': true as const };
const IMAGE = { 'image/png': true as const, 'image/jpeg': true as const, 'image/webp': true as const, 'image/avif': true as const };
export const RENDER_RESPONSES = {
  200: { description: 'the image', content: IMAGE, headers: { ETag: 'strong validator of the bytes', 'Cache-Control': 'from server.tile_cache_control' } },
  304: { description: 'the If-None-Match ETag is current' },
  400: { description: 'invalid parameters, or an image beyond render.max_pixels; the problem names the bad part', content: PROBLEM },
  404: { description: 'no such style', content: PROBLEM },
  500: { description: 'the render failed', content: PROBLEM },
  503: {
    description: 'no renderer can run here, the render queue is full, no renderer was free within render.queue_timeout_ms, the render timed out, or its renderer failed and is being replaced (Retry-After)',
    content: PROBLEM,
    headers: { 'Retry-After': 'seconds' },
  },
};
export const STYLE_PARAM = { style: { schema: v.string(), description: 'style id' } };
/** The query every render route takes: the encoding and the labels' language (docs/rendering.md, docs/styles.md). */
export const RENDER_QUERY = {
  quality: { schema: v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(100)), description: 'jpg, webp, avif: encoder quality 1..100 (default render.*_quality)' },
  lossless: { schema: v.boolean(), description: 'webp, avif: lossless encoding (default false)' },
  lang: { schema: v.string(), description: "BCP 47 tag: labels in this language (else Accept-Language when the style honours it, else its default_language)" },
};

export function invalid(c: Context, p: Problem): Response {
  return problem(c, 400, 'Invalid render request', p.detail, { parameter: p.parameter });
}

/**
 * The answer for a render that could not be made, and its log line. Clients get a stable detail; what went
 * wrong inside (a browser's own message, say) goes to the log only, with the style, the reason and the request.
 * Overload and unavailability details are the service's own words (they name the setting or the missing piece).
 */
export function renderProblem(c: Context, style: string, err: unknown): Response {
  const e = err instanceof RenderError ? err : new RenderError('failed', (err as Error).message);
  const incoming = (c.env as { incoming?: IncomingMessage } | undefined)?.incoming;
  const request = { method: c.req.method, path: new URL(c.req.url).pathname, req_id: requestIdOf(incoming) };
  const fields = { style, reason: e.reason, err: e.message, ...request };
  // A departed client is told once, by its access line (aborted, with the stage it reached); this is for debugging.
  if (e.reason === 'cancelled') log.debug(fields, 'render dropped: the client went away');
  else if (e.reason === 'overload' || e.reason === 'queue_timeout') log.warn(fields, 'render refused: overload');
  else log.error(fields, 'render failed');
  // 503s carry Retry-After. Headers are given at construction: @hono/node-server's Response may not see later changes.
  const unavailable = (title: string, detail: string, retryAfter: string) =>
    new Response(JSON.stringify({ ...problemBody(503, title, detail), reason: e.reason }), {
      status: 503,
      headers: { 'Content-Type': 'application/problem+json', 'Retry-After': retryAfter },
    });
  switch (e.reason) {
    case 'overload':
      return unavailable('Render queue full', e.message, '1');
    case 'queue_timeout':
      return unavailable('Render queue wait expired', e.message, '1');
    case 'timeout':
      return unavailable('Render timed out', 'render timed out', '1');
    case 'crash':
      return unavailable('Renderer restarted', 'renderer restarted: the renderer failed during this render and is being replaced; retry', '1');
    case 'unavailable':
      return unavailable('Rendering unavailable', e.message, '10');
    case 'cancelled':
      return unavailable('Render cancelled', 'render cancelled: the request went away', '1');
    default:
      return problem(c, 500, 'Render failed', 'render failed', { reason: e.reason });
  }
}

/** Who asked, for the render queue's turns (src/render/fair-queue.ts): the address the request came from. */
export function clientOf(c: Context): string | undefined {
  return (c.env as { incoming?: IncomingMessage } | undefined)?.incoming?.socket?.remoteAddress;
}

/**
 * The render queue's class of a request (src/render/priority-queue.ts): bulk for the in-process requests of a seed
 * (src/seed/service.ts says so in the request's env, which no network client can set), else interactive.
 */
export function priorityOf(c: Context): RenderPriority {
  return (c.env as { priority?: unknown } | undefined)?.priority === 'bulk' ? 'bulk' : 'interactive';
}

/**
 * `Cache-Control` of an expired tile's old image: the configured one with its lifetimes cut to
 * `render.stale_max_age_seconds` (mod_tile's dirty duration), so the client asks again soon for the new one.
 */
export function staleCacheControl(configured: string, maxAge: number): string {
  const directives = configured
    .split(',')
    .map((d) => d.trim())
    .filter((d) => d && !/^(max-age|s-maxage|immutable|stale-while-revalidate)\b/i.test(d));
  return [...directives, `max-age=${maxAge}`].join(', ');
}

/** `Server-Timing` of a rendered answer: where the render's time went, or which cache answered. */
function serverTiming(r: RenderResult): string {
  if (r.from === 'peer') return r.peerTiming ? `${r.peerTiming}, peer;desc="owner"` : 'peer;desc="owner"';
  if (r.from !== 'render' || !r.timing) return `cache;desc="${r.from}"`;
  return Object.entries(r.timing)
    .map(([name, v]) => (name === 'tiles' || name === 'parts' ? `${name};desc="${v}"` : `${name};dur=${v.toFixed(1)}`))
    .join(', ');
}

/** The output of a render request and the headers it adds to the answer (Vary, Content-Language). */
export type Output = { ok: true; out: RenderOutput; headers: Record<string, string> } | { ok: false; res: Response };

/**
 * What a render request asks to be made, besides its view: the encoding (`format` from the URL, `auto` negotiated
 * from Accept; `quality`, `lossless`) and the language of the labels (`lang`, or Accept-Language when the style
 * honours it). A bad value is the 400 naming its parameter.
 */
/**
 * How a render is encoded and in which language: `quality`, `lossless` and `lang` read through `from` (the query
 * string; a static map's POST body first), the format negotiated from `Accept` when it is `auto`.
 */
export function renderOutput(c: Context, b: Extract<Begun, { state: unknown }>, format: RequestedFormat, from: { one(name: string): string | undefined } = { one: (n) => c.req.query(n) }): Output {
  const cfg = b.state.config.render;
  const enc = requestEncoding(
    format === 'auto' ? undefined : format,
    { quality: from.one('quality'), lossless: from.one('lossless'), accept: c.req.header('accept') },
    { jpeg: cfg.jpeg_quality, webp: cfg.webp_quality, avif: cfg.avif_quality },
  );
  if (!enc.ok) return { ok: false, res: invalid(c, enc.problem) };
  const language = requestLanguage(c, b.style, from.one('lang'));
  if (!language.ok) return { ok: false, res: language.res };
  const headers = languageHeaders(language.value);
  const vary = [...(enc.value.negotiated ? ['Accept'] : []), ...(headers.Vary ? [headers.Vary] : [])];
  if (vary.length) headers.Vary = vary.join(', ');
  const out: RenderOutput = { encoding: enc.value.encoding };
  if (language.value.lang) out.lang = language.value.lang;
  return { ok: true, out, headers };
}

export function send(c: Context, r: RenderResult, cacheControl: string, extra: Record<string, string> = {}): Response {
  const img = r.image;
  const headers: Record<string, string> = { 'Cache-Control': cacheControl, ETag: img.etag, 'Server-Timing': serverTiming(r), ...extra };
  // An expired tile's old image, answered while its re-render runs (RFC 9211; RFC 9111 Age: since it was made).
  if (r.stale) {
    headers['Cache-Status'] = 'tileserver-ts; hit; fwd=stale';
    headers.Age = String(Math.max(0, Math.floor((Date.now() - img.madeAt) / 1000)));
  }
  if (notModified(c, img.etag)) return c.body(null, 304, headers);
  headers['Content-Type'] = img.contentType;
  return c.body(img.body as Uint8Array<ArrayBuffer>, 200, headers);
}

/** A stable key of a request for the image cache: path and sorted query (without the forwarded `key`). */
export function requestKey(c: Context): string {
  const url = new URL(c.req.url);
  url.searchParams.delete('key');
  url.searchParams.sort();
  return `${url.pathname}?${url.searchParams.toString()}`;
}

/**
 * Routes that exist only for server-side rendering (these, and the raster TileJSON and WMTS of styles) are not
 * mounted while server.disable_render is set (spec: 404, no raster rendering).
 */
export const renderAbsence: Absence = (state) => (rasterStylesOffered(state) ? undefined : 'server.disable_render is set');

/** The start of every render route: the state, the style and the render service, or the style's 404. */
export type Begun = { res: Response } | { res?: undefined; state: AppState; style: LoadedStyle; render: RenderService };

export function beginRender(ctx: ServerContext, render: RenderService): (c: Context) => Begun {
  return (c) => {
    const state = ctx.holder.current;
    const id = param(c, 'style');
    const style = styleById(state, id);
    if (!style) return { res: problem(c, 404, 'Style not found', `no style with id "${id}"`) };
    return { state, style, render };
  };
}
