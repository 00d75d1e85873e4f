// Rendered images: raster tiles of styles, static maps with overlays, social cards. The handlers validate
// (400 naming the bad part), look the style up (404) and ask the render service (src/render/service.ts);
// with server.disable_render they are not mounted (404, and absent from /openapi.json), and when no renderer
// can run they answer 503 saying why.
import type { Context } from 'hono';
import * as v from 'valibot';
import { fitBounds, MAX_LATITUDE } from '../../render/camera.js';
import type { RenderResult } from '../../render/service.js';
import { RenderError } from '../../render/renderer.js';
import { PEER_CLIENT_HEADER, PEER_HEADER } from '../../render/peers.js';
import {
  imageFormat,
  parseDimension,
  parseScale,
  parseSizeSegment,
  parseStaticQuery,
  parseViewSegment,
  staticCamera,
  withinPixelBudget,
  MAX_ZOOM,
  type Problem,
} from '../../render/static-params.js';
import { parseLonLat, parseNumber } from '../../render/overlays.js';
import { styleById } from '../../styles/generated.js';
import { rasterStylesOffered } from '../../styles/style-tilejson.js';
import { parseTileCoord, splitTileFile } from '../../tiles/coords.js';
import type { IncomingMessage } from 'node:http';
import { log } from '../../log.js';
import { requestIdOf } from '../access-log.js';
import type { ServerContext } from '../context.js';
import { problem } from '../problem.js';
import { problemBody } from '../../problem.js';
import { notModified } from '../respond.js';
import { param, type Absence, type Router } from '../router.js';

const PROBLEM = { 'application/problem+json': true as const };
const IMAGE = { 'image/png': true as const, 'image/jpeg': true as const, 'image/webp': true as const };
const RENDER_RESPONSES = {
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
const STYLE_PARAM = { style: { schema: v.string(), description: 'style id' } };

function invalid(c: Context, p: Problem): Response {
  return problem(c, 400, 'Invalid render request', p.detail, { parameter: p.parameter });
}

/**
 * The answer for a render that could not be made, and its log line. Clients get a stable detail; what went
 * wrong inside (a browser's own message, say) goes to the log only, with the style, the reason and the request.
 * Overload and unavailability details are the service's own words (they name the setting or the missing piece).
 */
function renderProblem(c: Context, style: string, err: unknown): Response {
  const e = err instanceof RenderError ? err : new RenderError('failed', (err as Error).message);
  const incoming = (c.env as { incoming?: IncomingMessage } | undefined)?.incoming;
  const request = { method: c.req.method, path: new URL(c.req.url).pathname, req_id: requestIdOf(incoming) };
  const fields = { style, reason: e.reason, err: e.message, ...request };
  if (e.reason === 'cancelled') log.info(fields, 'render dropped: the client went away');
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

/** Who asked, for the render queue's turns (fair-queue.ts): the address the request came from. */
function clientOf(c: Context): string | undefined {
  return (c.env as { incoming?: IncomingMessage } | undefined)?.incoming?.socket?.remoteAddress;
}

/** `Server-Timing` of a rendered answer: where the render's time went, or which cache answered. */
function serverTiming(r: RenderResult): string {
  if (r.from === 'peer') return r.peerTiming ? `${r.peerTiming}, peer;desc="owner"` : 'peer;desc="owner"';
  if (r.from !== 'render' || !r.timing) return `cache;desc="${r.from}"`;
  return Object.entries(r.timing)
    .map(([name, v]) => (name === 'tiles' || name === 'parts' ? `${name};desc="${v}"` : `${name};dur=${v.toFixed(1)}`))
    .join(', ');
}

function send(c: Context, r: RenderResult, cacheControl: string): Response {
  const img = r.image;
  const headers: Record<string, string> = { 'Cache-Control': cacheControl, ETag: img.etag, 'Server-Timing': serverTiming(r) };
  if (notModified(c, img.etag)) return c.body(null, 304, headers);
  headers['Content-Type'] = img.contentType;
  return c.body(img.body as Uint8Array<ArrayBuffer>, 200, headers);
}

/** A stable key of a request for the image cache: path and sorted query (without the forwarded `key`). */
function requestKey(c: Context): string {
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

export function registerRenderRoutes(r: Router, ctx: ServerContext): void {
  // A process without a render service has no render routes at all.
  const render = ctx.render;
  if (!render) return;
  /** Common start of every render route: the state and style, or the style's 404. */
  const begin = (c: Context) => {
    const state = ctx.holder.current;
    const id = param(c, 'style');
    const style = styleById(state, id);
    if (!style) return { res: problem(c, 404, 'Style not found', `no style with id "${id}"`) };
    return { state, style, render };
  };

  // Registered before the tile routes: `/styles/{style}/static/…` has as many segments as a tile path.
  r.add(
    {
      method: 'get',
      path: '/styles/{style}/static/{view}/{size}',
      hono: '/styles/:style/static/:view/:size',
      summary: 'Static map image with optional path, marker and GeoJSON overlays',
      tag: 'Rendering',
      description:
        '`view`: `lon,lat,zoom[@bearing[,pitch]]`, `minLon,minLat,maxLon,maxLat` or `auto` (fitted to the overlays). `size`: `{width}x{height}[@{scale}x].{png|jpg|jpeg|webp}`, width and height 1..4096, scale 1..3.',
      params: {
        ...STYLE_PARAM,
        view: { schema: v.string(), description: 'centre, bounding box or auto' },
        size: { schema: v.string(), description: '{width}x{height}[@{scale}x].{format}' },
      },
      query: {
        path: { schema: v.string(), description: 'path-{strokeWidth}+{strokeColor}[-{fillColor}]({lon},{lat}|…), several joined by ~; repeatable' },
        marker: { schema: v.string(), description: 'pin-{s|m|l}[-{label}]+{color}({lon},{lat}), several joined by ~; repeatable' },
        geojson: { schema: v.string(), description: 'URL-encoded GeoJSON geometry, Feature or FeatureCollection with simplestyle properties' },
        padding: { schema: v.number(), description: 'auto-fit padding, a fraction of the image on each side (default 0.1)' },
        maxzoom: { schema: v.number(), description: 'largest zoom of an auto-fit (default 18)' },
        latlng: { schema: v.boolean(), description: 'coordinates are lat,lng (default false)' },
      },
      responses: RENDER_RESPONSES,
    },
    async (c) => {
      const b = begin(c);
      if (b.res) return b.res;
      const size = parseSizeSegment(param(c, 'size'));
      if (!size.ok) return invalid(c, size.problem);
      const query = parseStaticQuery({ one: (n) => c.req.query(n), all: (n) => c.req.queries(n) ?? [] });
      if (!query.ok) return invalid(c, query.problem);
      const view = parseViewSegment(param(c, 'view'), query.value.latlng);
      if (!view.ok) return invalid(c, view.problem);
      const tooLarge = withinPixelBudget(size.value.width, size.value.height, size.value.scale, b.state.config.render.max_pixels);
      if (tooLarge) return invalid(c, tooLarge);
      const cam = staticCamera(view.value, query.value, size.value.width, size.value.height);
      if (!cam.ok) return invalid(c, cam.problem);
      try {
        const img = await b.render.image(b.state, b.style, cam.value, size.value.scale, size.value.format, query.value.overlays, requestKey(c), { signal: c.req.raw.signal, client: clientOf(c) });
        return send(c, img, b.state.config.server.tile_cache_control);
      } catch (err) {
        return renderProblem(c, b.style.id, err);
      }
    },
    renderAbsence,
  );

  const tileHandler = async (c: Context, sizeText: string | undefined) => {
    const b = begin(c);
    if (b.res) return b.res;
    let base: 256 | 512 = 512;
    if (sizeText !== undefined) {
      if (sizeText !== '256' && sizeText !== '512') return invalid(c, { parameter: 'tile_size', detail: `tile size "${sizeText}" is not 256 or 512` });
      base = Number(sizeText) as 256 | 512;
    }
    const file = splitTileFile(param(c, 'file'));
    if (!file) return invalid(c, { parameter: 'y', detail: `"${param(c, 'file')}" is not {y}[@{scale}x].{format}` });
    const format = imageFormat(file.ext);
    if (!format) return invalid(c, { parameter: 'format', detail: `format ".${file.ext}" is not png, jpg, jpeg or webp` });
    const scale = parseScale(file.scale);
    if (!scale.ok) return invalid(c, scale.problem);
    const coord = parseTileCoord(param(c, 'z'), param(c, 'x'), file.y);
    if (!coord.ok) return invalid(c, { parameter: 'z/x/y', detail: coord.problem });
    const tooLarge = withinPixelBudget(base, base, scale.value, b.state.config.render.max_pixels, 'scale');
    if (tooLarge) return invalid(c, tooLarge);
    try {
      const fromPeer = b.render.isPeerRequest(c.req.header(PEER_HEADER));
      const client = (fromPeer ? c.req.header(PEER_CLIENT_HEADER) : undefined) ?? clientOf(c);
      const img = await b.render.tile(b.state, b.style, { ...coord.coord, base, scale: scale.value }, format, { signal: c.req.raw.signal, fromPeer, client });
      return send(c, img, b.state.config.server.tile_cache_control);
    } catch (err) {
      return renderProblem(c, b.style.id, err);
    }
  };

  const tileParams = {
    ...STYLE_PARAM,
    z: { schema: v.pipe(v.number(), v.integer(), v.minValue(0), v.maxValue(22)) },
    x: { schema: v.pipe(v.number(), v.integer(), v.minValue(0)) },
    y: { schema: v.pipe(v.number(), v.integer(), v.minValue(0)) },
    scale: { schema: v.picklist(['', '@2x', '@3x']), description: 'optional @{scale}x, 1..3' },
    format: { schema: v.picklist(['png', 'jpg', 'jpeg', 'webp']) },
  };
  r.add(
    {
      method: 'get',
      path: '/styles/{style}/{z}/{x}/{y}{scale}.{format}',
      hono: '/styles/:style/:z/:x/:file',
      summary: 'Raster tile of a style (512 px base, times the scale)',
      tag: 'Rendering',
      params: tileParams,
      responses: RENDER_RESPONSES,
    },
    (c) => tileHandler(c, undefined),
    renderAbsence,
  );
  r.add(
    {
      method: 'get',
      path: '/styles/{style}/{tile_size}/{z}/{x}/{y}{scale}.{format}',
      hono: '/styles/:style/:size/:z/:x/:file',
      summary: 'Raster tile of a style with a 256 or 512 px base (a 256 px tile covers the area of the 512 px tile of the same z/x/y)',
      tag: 'Rendering',
      params: { ...tileParams, tile_size: { schema: v.picklist([256, 512]) } },
      responses: RENDER_RESPONSES,
    },
    (c) => tileHandler(c, param(c, 'size')),
    renderAbsence,
  );

  r.add(
    {
      method: 'get',
      path: '/og/{style}',
      hono: '/og/:style',
      summary: 'Social-card image of a style (1200x630 by default)',
      tag: 'Rendering',
      params: STYLE_PARAM,
      query: {
        center: { schema: v.string(), description: 'lat,lng; required when bounds is absent' },
        zoom: { schema: v.number(), description: 'zoom with center, 0..22 (default 10)' },
        bounds: { schema: v.string(), description: 'minLng,minLat,maxLng,maxLat; overrides center' },
        width: { schema: v.number(), description: '1..4096 (default 1200)' },
        height: { schema: v.number(), description: '1..4096 (default 630)' },
        format: { schema: v.picklist(['png', 'jpg', 'jpeg', 'webp']), description: 'default png' },
      },
      responses: RENDER_RESPONSES,
    },
    async (c) => {
      const b = begin(c);
      if (b.res) return b.res;
      const width = parseDimension(c.req.query('width') ?? '1200', 'width');
      if (!width.ok) return invalid(c, width.problem);
      const height = parseDimension(c.req.query('height') ?? '630', 'height');
      if (!height.ok) return invalid(c, height.problem);
      const formatText = c.req.query('format') ?? 'png';
      const format = imageFormat(formatText);
      if (!format) return invalid(c, { parameter: 'format', detail: `format "${formatText}" is not png, jpg, jpeg or webp` });
      const bounds = c.req.query('bounds');
      const center = c.req.query('center');
      let cam;
      if (bounds !== undefined) {
        const view = parseViewSegment(bounds, false);
        if (!view.ok || view.value.type !== 'bbox') return invalid(c, { parameter: 'bounds', detail: view.ok ? `"${bounds}" is not minLng,minLat,maxLng,maxLat` : view.problem.detail });
        cam = { ...fitBounds(view.value.bounds, width.value, height.value, 0, MAX_ZOOM), bearing: 0, pitch: 0 };
      } else if (center !== undefined) {
        const ll = parseLonLat(center, true);
        if (!ll.ok) return invalid(c, { parameter: 'center', detail: ll.problem });
        if (Math.abs(ll.value[1]) > MAX_LATITUDE) return invalid(c, { parameter: 'center', detail: `latitude ${ll.value[1]} cannot be a map centre (Web Mercator reaches ±${MAX_LATITUDE.toFixed(4)})` });
        const zoomText = c.req.query('zoom');
        const zoom = zoomText === undefined ? 10 : parseNumber(zoomText);
        if (zoom === undefined || zoom < 0 || zoom > MAX_ZOOM) return invalid(c, { parameter: 'zoom', detail: `zoom "${zoomText}" is not a number 0..${MAX_ZOOM}` });
        cam = { center: ll.value, zoom, bearing: 0, pitch: 0 };
      } else {
        return invalid(c, { parameter: 'center', detail: 'give center=lat,lng (with an optional zoom) or bounds=minLng,minLat,maxLng,maxLat' });
      }
      const tooLarge = withinPixelBudget(width.value, height.value, 1, b.state.config.render.max_pixels, 'width');
      if (tooLarge) return invalid(c, tooLarge);
      try {
        const img = await b.render.image(b.state, b.style, { ...cam, width: width.value, height: height.value }, 1, format, undefined, requestKey(c), { signal: c.req.raw.signal, client: clientOf(c) });
        return send(c, img, b.state.config.server.tile_cache_control);
      } catch (err) {
        return renderProblem(c, b.style.id, err);
      }
    },
    renderAbsence,
  );
}
