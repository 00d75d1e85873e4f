// Source metadata (/data.json, /data/{id}.json, /index.json) and source tiles (/data/{id}/{z}/{x}/{y}.{format}).
import { FILE_SOURCE_TYPES } from '../../config/schema.js';
import type { Context } from 'hono';
import * as v from 'valibot';
import type { AppState } from '../../state/app-state.js';
import type { TileCoord } from '../../tiles/coords.js';
import { sourceTileJson, type TileJson } from '../../sources/tilejson.js';
import { rasterStylesOffered, styleTileJson } from '../../serve/style-tilejson.js';
import { parseTileCoord, splitTileFile } from '../../tiles/coords.js';
import { formatFromExtension, type TileFormat } from '../../tiles/format.js';
import { fetchRenderTile, fetchTile, type TileResult } from '../../serve/tile-service.js';
import { isProblem, resolveSource } from '../../serve/resolve.js';
import { sendTileGeoJson } from './tile-geojson.js';
import { productTileJson } from '../../serve/terrain-tiles.js';
import { elevationSources } from '../../serve/elevation.js';
import { acceptedEncodings } from '../../tiles/encoding.js';
import { isRenderRequest, urlContext, type ServerContext } from '../context.js';
import { visibleTo } from '../access-gate.js';
import { problem } from '../problem.js';
import { sendJson } from '../respond.js';
import { tileAnswer } from '../tile-fast-lane.js';
import { telemetry } from '../../telemetry/recorder.js';
import { FILTER_QUERY, KEY_QUERY, param, type Router } from '../router.js';
import { PUBLIC } from '../../routes/public-routes.js';
import { FILTER_PARAMS, filterQuery, parseTileFilter } from '../../serve/tile-filter.js';
import type { SourceInfo, TileFilter } from '../../sources/source.js';
import { answerKeys } from '../../expire/surrogate-keys.js';
import { sourceDependencies } from '../../expire/dependencies.js';

const JSON_OK = { description: 'TileJSON 3.0.0', content: { 'application/json': true as const } };
const PROBLEM = { 'application/problem+json': true as const };

/** Every query parameter of the request, verbatim (the first value of a repeated name): database functions get them as JSON. */
function queryParams(url: string): Record<string, string> {
  // No prototype: a parameter named `__proto__` is a parameter like any other.
  const out: Record<string, string> = Object.create(null);
  for (const [k, v] of new URL(url).searchParams) if (!(k in out)) out[k] = v;
  return out;
}

export function registerDataRoutes(r: Router, ctx: ServerContext): void {
  r.add(
    PUBLIC.dataList,
    { summary: 'TileJSON of every source', tag: 'Metadata', query: KEY_QUERY, responses: { 200: JSON_OK } },
    (c) => {
      const state = ctx.holder.current;
      const u = urlContext(c, state);
      const see = visibleTo(c, state);
      return sendJson(c, state, [...state.sources.values(), ...state.composites.values()].filter((s) => see('source', s.info.id)).map((s) => sourceTileJson(s.info, u, true)));
    },
  );

  r.add(
    PUBLIC.index,
    {
      summary: 'TileJSON of every source and every raster style',
      tag: 'Metadata',
      query: KEY_QUERY,
      responses: { 200: JSON_OK },
    },
    (c) => {
      const state = ctx.holder.current;
      const u = urlContext(c, state);
      // Only what the request may read is listed (docs/access.md).
      const see = visibleTo(c, state);
      const docs: TileJson[] = [...state.sources.values(), ...state.composites.values()].filter((s) => see('source', s.info.id)).map((s) => sourceTileJson(s.info, u, true));
      // An elevation source's hillshade and contour tiles are tile sets of their own, listed after it.
      for (const e of elevationSources(state)) if (see('source', e.id)) for (const product of ['hillshade', 'contours'] as const) docs.push({ ...productTileJson(state, u, e, product), id: `${e.id}/${product}` });
      if (rasterStylesOffered(state)) for (const style of state.styles.values()) if (see('style', style.id)) docs.push(styleTileJson(state, style, u, true));
      return sendJson(c, state, docs);
    },
  );

  r.add(
    PUBLIC.tileJson,
    {
      summary: 'TileJSON of one source',
      tag: 'Metadata',
      params: { source: { schema: v.string(), description: 'source id, composite id, or source ids joined by "+" (ad-hoc composite)' } },
      query: FILTER_QUERY,
      responses: {
        200: JSON_OK,
        400: { description: 'an ad-hoc composite with a raster member or without a common zoom range', content: PROBLEM },
        404: { description: 'no such source', content: PROBLEM },
      },
    },
    (c) => {
      const state = ctx.holder.current;
      const id = param(c, 'file').slice(0, -'.json'.length);
      const source = resolveSource(state, id);
      if (isProblem(source)) return problem(c, source.status, source.title, source.detail);
      const query = new URL(c.req.url).searchParams;
      const filtered = requestFilter(c, state, source.info, query);
      if (filtered instanceof Response) return filtered;
      const doc = sourceTileJson(source.info, urlContext(c, state), false, filtered ? filterQuery(query) : '');
      // A view with chosen properties describes only those.
      const chosen = filtered?.properties;
      if (chosen && source.info.vectorLayers) doc.vector_layers = source.info.vectorLayers.map((l) => ({ ...l, fields: Object.fromEntries(Object.entries(l.fields).filter(([k]) => chosen.includes(k))) }));
      return sendJson(c, state, doc);
    },
  );

  r.add(
    PUBLIC.dataTile,
    {
      summary: 'A tile of a source',
      tag: 'Tiles',
      description:
        'Stored gzip tiles pass through when the client accepts gzip; otherwise the tile is sent in the best encoding the client accepts (br, zstd, gzip) or as identity bytes. ' +
        'Vector tiles are transcoded between MVT (pbf) and MLT on request; `geojson` gives the tile as a GeoJSON FeatureCollection in tile coordinates (each feature with `_layer`). ' +
        'Composites, named or ad hoc (`a+b+c`), serve the merged MVT of their members; 200 with an empty MVT where no member has the tile.',
      query: FILTER_QUERY,
      params: {
        source: { schema: v.string(), description: 'source id, composite id, or source ids joined by "+" (ad-hoc composite)' },
        z: { schema: v.pipe(v.number(), v.integer(), v.minValue(0), v.maxValue(22)) },
        x: { schema: v.pipe(v.number(), v.integer(), v.minValue(0)) },
        y: { schema: v.pipe(v.number(), v.integer(), v.minValue(0)) },
        format: { schema: v.picklist(['pbf', 'mvt', 'mlt', 'png', 'jpg', 'jpeg', 'webp', 'geojson']) },
      },
      responses: {
        200: {
          description: 'the tile',
          content: { 'application/x-protobuf': true, 'application/vnd.open-vector-tile': true, 'image/png': true, 'image/jpeg': true, 'image/webp': true, 'application/geo+json': true },
          headers: { ETag: 'strong validator of the bytes sent', 'Cache-Control': 'from server.tile_cache_control', 'Content-Encoding': 'when compressed', Warning: 'xyz sources: `110 - "Response is Stale"` when the upstream failed and its last good copy is answered' },
        },
        204: { description: 'the source has no tile here (or the tile is outside its zoom range or bounds)' },
        304: { description: 'the If-None-Match ETag is current' },
        400: { description: 'invalid coordinates or format; a raster member of a composite; geojson of a raster source', content: PROBLEM },
        404: { description: 'no such source (or composite member)', content: PROBLEM },
        502: { description: 'xyz sources: the upstream tile server failed (5xx, refused or broken connection, other 4xx) and no stale copy is kept', content: PROBLEM },
        503: { description: 'the vector transcoding or raster queue is full, or the database is unreachable or too slow; xyz sources: the upstream queue is full or the upstream throttles (Retry-After)', content: PROBLEM },
        504: { description: 'xyz sources: the upstream tile server did not answer within timeout_ms and no stale copy is kept', content: PROBLEM },
      },
    },
    async (c) => {
      const state = ctx.holder.current;
      const file = splitTileFile(param(c, 'file'));
      if (!file || file.scale !== undefined) return problem(c, 400, 'Invalid tile path', `"${param(c, 'file')}" is not {y}.{format}`);
      const format = formatFromExtension(file.ext);
      if (!format && file.ext !== 'geojson') return problem(c, 400, 'Unknown tile format', `".${file.ext}" is not one of pbf, mvt, mlt, png, jpg, jpeg, webp, geojson`);
      const parsed = parseTileCoord(param(c, 'z'), param(c, 'x'), file.y);
      if (!parsed.ok) return problem(c, 400, 'Invalid tile coordinates', parsed.problem);
      if (!format) return sendTileGeoJson(c, state, param(c, 'source'), parsed.coord);
      return answerSourceTile(c, state, param(c, 'source'), parsed.coord, format);
    },
  );
}

/**
 * The filter of a request (`filter`, `filter-lang`, `properties`), undefined without one, or the 400 answer: a bad
 * filter names its parameter; a source that takes none says so.
 */
function requestFilter(c: Context, state: AppState, info: SourceInfo | undefined, query: URLSearchParams): TileFilter | undefined | Response {
  if (!FILTER_PARAMS.some((p) => query.has(p))) return undefined;
  const pg = state.config.postgres;
  // A data-file source has its own limits (it may be served with no [postgres] section to set them in).
  const parsed = parseTileFilter(query, info?.filterLimits ?? { maxLength: pg?.tile_filter_max_length ?? 2048, maxTerms: pg?.tile_filter_max_terms ?? 64 });
  if (!parsed.ok) return problem(c, 400, parsed.title, parsed.detail, { parameter: parsed.parameter });
  if (parsed.filter && info && !info.filterable) {
    const why = info.type === 'postgres-table' || (FILE_SOURCE_TYPES as readonly string[]).includes(info.type) ? 'its configuration has allow_filters = false' : 'only PostGIS tables and data-file sources take filter and properties';
    return problem(c, 400, 'Filters not available', `source "${info.id}" does not take filter or properties: ${why}`);
  }
  return parsed.filter;
}

/**
 * The answer for a tile of a source, once the path is parsed: the bytes, headers, 204s and encodings every tile
 * route gives (/data/... and OGC API - Tiles), the same rules as the tile fast lane (http/tile-fast-lane.ts).
 */
export async function answerSourceTile(c: Context, state: AppState, sourceId: string, coord: TileCoord, format: TileFormat): Promise<Response> {
  const source = state.sources.get(sourceId);
  // Only a plain source can take a filter; any other id with filter parameters is refused by the tile service.
  const filtered = requestFilter(c, state, source?.info, new URL(c.req.url).searchParams);
  if (filtered instanceof Response) return filtered;
  const filter = filtered;
  // Tile metrics count client requests; a renderer's own lookups in-process are not tile requests.
  const metered = telemetry.on && !isRenderRequest(c);
  const started = metered ? performance.now() : 0;
  const labels = { source: sourceId, format, z: coord.z };
  let result;
  try {
    result = await (isRenderRequest(c) ? fetchRenderTile : fetchTile)(state, {
      sourceId,
      coord,
      format,
      accepted: acceptedEncodings(c.req.header('accept-encoding')),
      params: queryParams(c.req.url),
      filter,
    });
  } catch (err) {
    // Only a resolved source gets this far (unknown ids are problems, not exceptions): its id is a bounded label.
    if (metered) telemetry.tile(labels, 'error', started, undefined);
    throw err;
  }
  const keys = result.kind === 'problem' ? undefined : answerKeys(sourceDependencies(state, sourceId), coord.z, coord.x, coord.y);
  return sendTileResult(c, state, result, metered && result.kind !== 'problem' ? (sent) => telemetry.tile(labels, result, started, sent) : undefined, keys);
}

/**
 * A tile answer sent: problem+json, or the tile (or 204) with its ETag, Cache-Control, encoding and 304 rules,
 * and `surrogateKeys` (the edge cache's keys of the answer) when given.
 */
export function sendTileResult(c: Context, state: AppState, result: TileResult, sent?: (bytes: number | undefined) => void, surrogateKeys?: string): Response {
  const cacheControl = state.config.server.tile_cache_control;
  switch (result.kind) {
    case 'problem':
      return problem(c, result.status, result.title, result.detail);
    case 'empty':
    case 'tile': {
      const a = tileAnswer(result, cacheControl, c.req.header('if-none-match'), surrogateKeys);
      sent?.(a.body?.byteLength);
      if (a.body) return c.body(a.body as Uint8Array<ArrayBuffer>, 200, a.headers);
      // @hono/node-server gives a body-less answer `text/plain` unless told otherwise, and a cache updates its
      // stored tile's headers from a 304: name the tile's real type there.
      if (a.status === 304 && result.kind === 'tile') a.headers['content-type'] = result.contentType;
      return c.body(null, a.status, a.headers);
    }
  }
}
