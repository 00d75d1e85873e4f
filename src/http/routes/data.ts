// Source metadata (/data.json, /data/{id}.json, /index.json) and source tiles (/data/{id}/{z}/{x}/{y}.{format}).
import * as v from 'valibot';
import { sourceTileJson, type TileJson } from '../../sources/tilejson.js';
import { parseTileCoord, splitTileFile } from '../../tiles/coords.js';
import { formatFromExtension } from '../../tiles/format.js';
import { fetchTile } from '../../tiles/tile-service.js';
import { parseAcceptEncoding } from '../encoding.js';
import { urlContext, type ServerContext } from '../context.js';
import { problem } from '../problem.js';
import { notModified, sendJson } from '../respond.js';
import { KEY_QUERY, param, type Router } from '../router.js';
import type { AppState } from '../../state/app-state.js';
import type { Context } from 'hono';

const JSON_OK = { description: 'TileJSON 3.0.0', content: { 'application/json': true as const } };
const PROBLEM = { 'application/problem+json': true as const };

/** Extra TileJSON entries for /index.json (raster styles); capabilities that have them register a provider. */
export type IndexProvider = (c: Context, state: AppState) => TileJson[];
export const indexProviders: IndexProvider[] = [];

export function registerDataRoutes(r: Router, ctx: ServerContext): void {
  r.add(
    { method: 'get', path: '/data.json', hono: '/data.json', summary: 'TileJSON of every source', tag: 'Metadata', query: KEY_QUERY, responses: { 200: JSON_OK } },
    (c) => {
      const state = ctx.holder.current;
      const u = urlContext(c, state);
      return sendJson(c, state, [...state.sources.values()].map((s) => sourceTileJson(s.info, u, true)));
    },
  );

  r.add(
    {
      method: 'get',
      path: '/index.json',
      hono: '/index.json',
      summary: 'TileJSON of every source and every raster style',
      tag: 'Metadata',
      query: KEY_QUERY,
      responses: { 200: JSON_OK },
    },
    (c) => {
      const state = ctx.holder.current;
      const u = urlContext(c, state);
      const docs: TileJson[] = [...state.sources.values()].map((s) => sourceTileJson(s.info, u, true));
      for (const provide of indexProviders) docs.push(...provide(c, state));
      return sendJson(c, state, docs);
    },
  );

  r.add(
    {
      method: 'get',
      path: '/data/{source}.json',
      hono: '/data/:file{.+\\.json}',
      summary: 'TileJSON of one source',
      tag: 'Metadata',
      params: { source: { schema: v.string(), description: 'source id' } },
      query: KEY_QUERY,
      responses: { 200: JSON_OK, 404: { description: 'no such source', content: PROBLEM } },
    },
    (c) => {
      const state = ctx.holder.current;
      const id = param(c, 'file').slice(0, -'.json'.length);
      const source = state.sources.get(id);
      if (!source) return problem(c, 404, 'Source not found', `no source with id "${id}"`);
      return sendJson(c, state, sourceTileJson(source.info, urlContext(c, state)));
    },
  );

  r.add(
    {
      method: 'get',
      path: '/data/{source}/{z}/{x}/{y}.{format}',
      hono: '/data/:source/:z/:x/:file',
      summary: 'A tile of a source',
      tag: 'Tiles',
      description:
        'Stored gzip tiles pass through when the client accepts gzip; otherwise the tile is sent in the best encoding the client accepts (br, zstd, gzip) or as identity bytes.',
      params: {
        source: { schema: v.string(), description: 'source id' },
        z: { schema: v.pipe(v.number(), v.integer(), v.minValue(0), v.maxValue(22)) },
        x: { schema: v.pipe(v.number(), v.integer(), v.minValue(0)) },
        y: { schema: v.pipe(v.number(), v.integer(), v.minValue(0)) },
        format: { schema: v.picklist(['pbf', 'mvt', 'mlt', 'png', 'jpg', 'jpeg', 'webp']) },
      },
      responses: {
        200: {
          description: 'the tile',
          content: { 'application/x-protobuf': true, 'application/vnd.open-vector-tile': true, 'image/png': true, 'image/jpeg': true, 'image/webp': true },
          headers: { ETag: 'strong validator of the bytes sent', 'Cache-Control': 'from server.tile_cache_control', 'Content-Encoding': 'when compressed' },
        },
        204: { description: 'the source has no tile here (or the tile is outside its zoom range or bounds)' },
        304: { description: 'the If-None-Match ETag is current' },
        400: { description: 'invalid coordinates or format', content: PROBLEM },
        404: { description: 'no such source', content: PROBLEM },
      },
    },
    async (c) => {
      const state = ctx.holder.current;
      const file = splitTileFile(param(c, 'file'));
      if (!file || file.scale !== undefined) return problem(c, 400, 'Invalid tile path', `"${param(c, 'file')}" is not {y}.{format}`);
      const format = formatFromExtension(file.ext);
      if (!format) return problem(c, 400, 'Unknown tile format', `".${file.ext}" is not one of pbf, mvt, mlt, png, jpg, jpeg, webp`);
      const parsed = parseTileCoord(param(c, 'z'), param(c, 'x'), file.y);
      if (!parsed.ok) return problem(c, 400, 'Invalid tile coordinates', parsed.problem);
      const result = await fetchTile(state, {
        sourceId: param(c, 'source'),
        coord: parsed.coord,
        format,
        accepted: parseAcceptEncoding(c.req.header('accept-encoding')),
      });
      const cacheControl = state.config.server.tile_cache_control;
      switch (result.kind) {
        case 'problem':
          return problem(c, result.status, result.title, result.detail);
        case 'empty':
          return c.body(null, 204, { 'Cache-Control': cacheControl });
        case 'tile': {
          const headers: Record<string, string> = { 'Cache-Control': cacheControl, ETag: result.etag, Vary: 'Accept-Encoding' };
          if (notModified(c, result.etag)) return c.body(null, 304, headers);
          headers['Content-Type'] = result.contentType;
          if (result.contentEncoding !== 'identity') headers['Content-Encoding'] = result.contentEncoding;
          return c.body(result.body as Uint8Array<ArrayBuffer>, 200, headers);
        }
      }
    },
  );
}
