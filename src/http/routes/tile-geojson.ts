// The HTTP answer of `/data/{id}/{z}/{x}/{y}.geojson` (the route itself is the tile route in data.ts).
import type { Context } from 'hono';
import type { AppState } from '../../state/app-state.js';
import type { TileCoord } from '../../tiles/coords.js';
import { fetchTileGeoJson } from '../../serve/tile-geojson.js';
import { problem } from '../problem.js';
import { notModified, sendBytes } from '../respond.js';

export async function sendTileGeoJson(c: Context, state: AppState, sourceId: string, coord: TileCoord): Promise<Response> {
  const result = await fetchTileGeoJson(state, sourceId, coord);
  const cacheControl = state.config.server.tile_cache_control;
  switch (result.kind) {
    case 'problem':
      return problem(c, result.status, result.title, result.detail);
    case 'empty':
      return c.body(null, 204, { 'Cache-Control': cacheControl });
    case 'json': {
      // Weak: the validator is of the JSON text, which may go out in several content encodings.
      const etag = `W/${result.etag}`;
      if (notModified(c, result.etag)) return c.body(null, 304, { 'Cache-Control': cacheControl, ETag: etag, Vary: 'Accept-Encoding' });
      const res = sendBytes(c, state, result.body, 'application/geo+json', cacheControl);
      res.headers.set('ETag', etag);
      return res;
    }
  }
}
