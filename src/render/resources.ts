// Resources of a render: tiles, glyphs, sprites, TileJSON and the style itself, answered in-process by the
// front's own Hono app (`app.fetch`), so renders use the same code and caches as HTTP clients, with no socket.
import type { RenderRequestEnv } from '../runtime.js';
import type { Resource, ResourceFetcher } from './renderer.js';

/** Origin of in-process requests; it never reaches a network. */
const INTERNAL_ORIGIN = 'http://render.internal';

export type AppFetch = (request: Request, env: RenderRequestEnv) => Response | Promise<Response>;

/**
 * A fetcher over the app. `base` is handed to the app as the base of every URL it writes (TileJSON tile URLs,
 * the style's sources, glyphs and sprite), so those URLs come back to the renderer that asked.
 * No Accept-Encoding is sent: answers are identity bytes.
 */
export function inProcessFetcher(fetch: AppFetch): ResourceFetcher {
  return async (path, base) => {
    const res = await fetch(new Request(INTERNAL_ORIGIN + path), { renderBase: base });
    const body = new Uint8Array(await res.arrayBuffer());
    return { status: res.status, contentType: res.headers.get('content-type') ?? undefined, body };
  };
}

/**
 * The path of a renderer page's question "which of the source tiles I hold has an expiry reached?"; what follows
 * the `?` is the question as JSON (expired-source-tiles.ts answers it). No route of the app has this path.
 */
export const EXPIRED_TILES_PATH = '/.tsts/expired-tiles';

/**
 * A query parameter renderer pages add to tile URLs: the last expiry they know of, so that a tile fetched again
 * after an expiry misses the browser's cache. The renderer's server removes it before the app sees the request.
 */
export const TILE_REVISION_PARAM = 'tsts-rev';

/** A 1x1 transparent PNG: the answer for a missing sprite sheet or raster tile. */
/** One pixel, RGBA 0,0,0,0: draws nothing. */
const EMPTY_PNG = Buffer.from('iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAACXBIWXMAAAPoAAAD6AG1e1JrAAAADUlEQVQImWNgYGBgAAAABQABh6FO1AAAAABJRU5ErkJggg==', 'base64');

/**
 * What a missing resource becomes, so that a render never waits on it: empty glyphs and vector tiles, an empty
 * sprite index and a transparent image. Anything else (a TileJSON, a style) keeps its status: MapLibre marks
 * that source as failed and carries on.
 */
export function emptyResource(pathname: string, status: number): Resource {
  if (/\.(pbf|mvt|mlt)$/.test(pathname)) return { status: 200, contentType: 'application/x-protobuf', body: new Uint8Array(0) };
  if (/\/sprite[^/]*\.json$/.test(pathname)) return { status: 200, contentType: 'application/json', body: Buffer.from('{}') };
  if (/\.(png|jpe?g|webp)$/.test(pathname)) return { status: 200, contentType: 'image/png', body: EMPTY_PNG };
  return { status, contentType: 'text/plain', body: Buffer.from(`not found (${status})`) };
}
