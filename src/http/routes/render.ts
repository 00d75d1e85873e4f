// Rendered images: raster tiles of styles, static maps with overlays, social cards. The handlers validate
// (400 naming the bad part), look the style up (404) and ask the render service (src/render/service.ts);
// with server.disable_render they are not mounted (404, and absent from /openapi.json), and when no renderer
// can run they answer 503 saying why.
import type { Context } from 'hono';
import * as v from 'valibot';
import { fitBounds, MAX_LATITUDE } from '../../render/camera.js';
import { parseDimension, parseScale, parseViewSegment, requestedFormat, withinPixelBudget, FORMAT_WORDS, MAX_ZOOM, type RequestedFormat } from '../../render/static-params.js';
import { parseLonLat, parseNumber } from '../../render/overlays.js';
import { parseTileCoord, splitTileFile, type TileCoord } from '../../tiles/coords.js';
import type { ServerContext } from '../context.js';
import { param, type Router } from '../router.js';
import { PUBLIC } from '../../routes/public-routes.js';
import { beginRender, clientOf, invalid, priorityOf, renderAbsence, renderOutput, renderProblem, requestKey, send, staleCacheControl, RENDER_QUERY, RENDER_RESPONSES, STYLE_PARAM, type Begun } from './render-answer.js';
import { PEER_CLIENT_HEADER, PEER_HEADER, PEER_MADE_AT_HEADER } from '../../render/peers.js';
import { answerKeys } from '../../expire/surrogate-keys.js';
import { styleDependencies } from '../../expire/dependencies.js';
import type { AppState } from '../../state/app-state.js';
import type { LoadedStyle } from '../../styles/loaded-style.js';
import { registerStaticMapRoutes } from './static-map.js';

export { renderAbsence } from './render-answer.js';

export function registerRenderRoutes(r: Router, ctx: ServerContext): void {
  // A process without a render service has no render routes at all.
  const render = ctx.render;
  if (!render) return;
  const begin = beginRender(ctx, render);

  // The order in which routes match (static maps before the tiles: `/styles/{style}/static/…` has as many segments as
  // a tile path) is the route table's (src/routes/public-routes.ts), whatever the order they are bound here.
  registerStaticMapRoutes(r, begin);

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
    const format = requestedFormat(file.ext);
    if (!format) return invalid(c, { parameter: 'format', detail: `format ".${file.ext}" is not ${FORMAT_WORDS}` });
    const scale = parseScale(file.scale);
    if (!scale.ok) return invalid(c, scale.problem);
    const coord = parseTileCoord(param(c, 'z'), param(c, 'x'), file.y);
    if (!coord.ok) return invalid(c, { parameter: 'z/x/y', detail: coord.problem });
    return answerStyleTile(c, b, coord.coord, base, scale.value, format);
  };

  const tileParams = {
    ...STYLE_PARAM,
    z: { schema: v.pipe(v.number(), v.integer(), v.minValue(0), v.maxValue(22)) },
    x: { schema: v.pipe(v.number(), v.integer(), v.minValue(0)) },
    y: { schema: v.pipe(v.number(), v.integer(), v.minValue(0)) },
    scale: { schema: v.picklist(['', '@2x', '@3x']), description: 'optional @{scale}x, 1..3' },
    format: { schema: v.picklist(['png', 'jpg', 'jpeg', 'webp', 'avif', 'auto']), description: 'auto: negotiated from the Accept header (Vary: Accept)' },
  };
  r.add(
    PUBLIC.styleTile,
    {
      summary: 'Raster tile of a style (512 px base, times the scale)',
      tag: 'Rendering',
      params: tileParams,
      query: RENDER_QUERY,
      responses: RENDER_RESPONSES,
    },
    (c) => tileHandler(c, undefined),
    renderAbsence,
  );
  r.add(
    PUBLIC.sizedStyleTile,
    {
      summary: 'Raster tile of a style with a 256 or 512 px base (a 256 px tile covers the area of the 512 px tile of the same z/x/y)',
      tag: 'Rendering',
      params: { ...tileParams, tile_size: { schema: v.picklist([256, 512]) } },
      query: RENDER_QUERY,
      responses: RENDER_RESPONSES,
    },
    (c) => tileHandler(c, param(c, 'size')),
    renderAbsence,
  );

  r.add(
    PUBLIC.socialCard,
    {
      summary: 'Social-card image of a style (1200x630 by default)',
      tag: 'Rendering',
      params: STYLE_PARAM,
      query: {
        center: { schema: v.string(), description: 'lat,lng; required when bounds is absent' },
        zoom: { schema: v.number(), description: 'zoom with center, 0..22 (default 10)' },
        bounds: { schema: v.string(), description: 'minLng,minLat,maxLng,maxLat; overrides center' },
        width: { schema: v.number(), description: '1..4096 (default 1200)' },
        height: { schema: v.number(), description: '1..4096 (default 630)' },
        format: { schema: v.picklist(['png', 'jpg', 'jpeg', 'webp', 'avif', 'auto']), description: 'default png; auto: negotiated from the Accept header (Vary: Accept)' },
        ...RENDER_QUERY,
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
      const format = requestedFormat(formatText);
      if (!format) return invalid(c, { parameter: 'format', detail: `format "${formatText}" is not ${FORMAT_WORDS}` });
      const output = renderOutput(c, b, format);
      if (!output.ok) return output.res;
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
        const img = await b.render.image(b.state, b.style, { ...cam, width: width.value, height: height.value }, 1, output.out, undefined, requestKey(c), { signal: c.req.raw.signal, client: clientOf(c) });
        return send(c, img, b.state.config.server.tile_cache_control, output.headers);
      } catch (err) {
        return renderProblem(c, b.style.id, err);
      }
    },
    renderAbsence,
  );
}

/**
 * The answer for a raster tile of a style once the path is parsed: the same image, validators and problems
 * for /styles/{id}/... and OGC API - Tiles map tiles.
 */
/**
 * The edge cache's keys of a rendered tile (src/expire/surrogate-keys.ts): its style, and per source the style
 * draws the tile and its neighbours (labels and symbols placed across a tile's edge come from them).
 */
function styleTileKeys(state: AppState, style: LoadedStyle, coord: TileCoord): string {
  const keys = answerKeys(styleDependencies(state, style), coord.z, coord.x, coord.y, true);
  return keys ? `style:${style.id} ${keys}` : `style:${style.id}`;
}

export async function answerStyleTile(c: Context, b: Extract<Begun, { state: unknown }>, coord: TileCoord, base: 256 | 512, scale: number, format: RequestedFormat): Promise<Response> {
  const tooLarge = withinPixelBudget(base, base, scale, b.state.config.render.max_pixels, 'scale');
  if (tooLarge) return invalid(c, tooLarge);
  const output = renderOutput(c, b, format);
  if (!output.ok) return output.res;
  try {
    const fromPeer = b.render.isPeerRequest(c.req.header(PEER_HEADER));
    const client = (fromPeer ? c.req.header(PEER_CLIENT_HEADER) : undefined) ?? clientOf(c);
    const img = await b.render.tile(b.state, b.style, { ...coord, base, scale }, output.out, { signal: c.req.raw.signal, fromPeer, client, priority: priorityOf(c) });
    // The forwarding process checks the owner's image against its own expiries: it needs the time it was made.
    const keyed = { ...output.headers, 'Surrogate-Key': styleTileKeys(b.state, b.style, coord) };
    const extra = fromPeer ? { ...keyed, [PEER_MADE_AT_HEADER]: String(img.image.madeAt) } : keyed;
    const cacheControl = img.stale ? staleCacheControl(b.state.config.server.tile_cache_control, b.state.config.render.stale_max_age_seconds) : b.state.config.server.tile_cache_control;
    return send(c, img, cacheControl, extra);
  } catch (err) {
    return renderProblem(c, b.style.id, err);
  }
}
