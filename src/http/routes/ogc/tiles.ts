// OGC API - Tiles: collections (every source), their tilesets in WebMercatorQuad and the tiles themselves, and
// the rendered map tiles of styles. Tiles are answered by the same code as /data/... and /styles/{id}/...
// (answerSourceTile, answerStyleTile): same bytes, headers, 204s and encodings.
import type { Context } from 'hono';
import * as v from 'valibot';
import { collection, collections, datasetMapTilesets, Hrefs, layerCollection, mapStyles, sourceLimits, stylesList, tileset, tilesetList, type TilesetOf } from '../../../ogc/documents.js';
import { findLayerCollection } from '../../../ogc/feature-collections.js';
import { tileMatrixLimits, TMS_ID, TMS_MAX_MATRIX, withinLimits } from '../../../ogc/tms.js';
import type { TileSource } from '../../../sources/source.js';
import type { AppState } from '../../../state/app-state.js';
import { MAX_ZOOM, type TileCoord } from '../../../tiles/coords.js';
import { urlContext, type ServerContext } from '../../context.js';
import { visibleTo } from '../../access-gate.js';
import { problem } from '../../problem.js';
import { param, type Router } from '../../router.js';
import { PUBLIC } from '../../../routes/public-routes.js';
import { answerSourceTile, sendTileResult } from '../data.js';
import { answerKeys } from '../../../expire/surrogate-keys.js';
import { fetchTerrainTile, TerrainProductSource, terrainProductSource } from '../../../serve/terrain-tiles.js';
import { acceptedEncodings } from '../../../tiles/encoding.js';
import { answerStyleTile } from '../render.js';
import { beginRender, RENDER_RESPONSES } from '../render-answer.js';
import { DOC_QUERY, ogcAbsence, ogcMapAbsence, PROBLEM, sendDoc } from './negotiate.js';

const DOC = (description: string) => ({ description, content: { 'application/json': true as const, 'text/html': true as const } });
const COLLECTION = { collectionId: { schema: v.string(), description: 'source id (a `{source}:{layer}` collection of a data file of several layers has features only: its tiles are its source\'s)' } };
const STYLE = { styleId: { schema: v.string(), description: 'style id' } };
const TMS = { tileMatrixSetId: { schema: v.literal(TMS_ID) } };
const TILE = {
  tileMatrix: { schema: v.pipe(v.string(), v.regex(/^\d+$/)), description: 'zoom level, 0..24 in WebMercatorQuad (limited to the tileset)' },
  tileRow: { schema: v.pipe(v.number(), v.integer(), v.minValue(0)), description: 'row (y), from the top' },
  tileCol: { schema: v.pipe(v.number(), v.integer(), v.minValue(0)), description: 'column (x), from the left' },
};
const DOC_ERRORS = { 400: { description: 'an unknown f', content: PROBLEM }, 404: { description: 'no such collection, style or tile matrix set', content: PROBLEM } };

/** The source a collection id names (configured sources and named composites), or undefined. */
const sourceOf = (state: AppState, id: string): TileSource | undefined => state.sources.get(id) ?? state.composites.get(id) ?? terrainProductSource(state, id);

/**
 * A tile address of WebMercatorQuad within `limits`: row and column that are not integers are 400; a tile matrix
 * the set does not have, or a tile outside the matrix or the tileset's limits, is 404 (no such tile resource).
 */
function tileAddress(c: Context, limits: ReturnType<typeof tileMatrixLimits>): TileCoord | Response {
  const [m, row, col] = [param(c, 'z'), param(c, 'row'), param(c, 'col')];
  if (!/^\d{1,3}$/.test(m) || Number(m) > TMS_MAX_MATRIX) return problem(c, 404, 'Tile matrix not found', `"${m}" is not a tile matrix of ${TMS_ID} (0..${TMS_MAX_MATRIX})`);
  for (const [name, value] of [['tileRow', row], ['tileCol', col]] as const) {
    if (!/^\d+$/.test(value)) return problem(c, 400, 'Invalid tile coordinates', `${name} "${value}" is not a non-negative integer`, { parameter: name });
  }
  const z = Number(m);
  // However many digits, an integer is an address: one past the matrix is a tile that does not exist (404).
  const y = Number(row);
  const x = Number(col);
  const shown = (t: string) => (t.length > 24 ? `${t.slice(0, 24)}…` : t);
  if (y >= 2 ** z || x >= 2 ** z) return problem(c, 404, 'Tile not found', `tile matrix ${z} has rows and columns 0..${2 ** z - 1}; row ${shown(row)}, column ${shown(col)} is outside it`);
  if (!withinLimits(limits, z, y, x)) return problem(c, 404, 'Tile not found', `tile ${z}/${y}/${x} is outside the tileset's tileMatrixSetLimits`);
  return { z, x, y };
}

const noTms = (c: Context) => problem(c, 404, 'Tile matrix set not found', `no tile matrix set "${param(c, 'tms')}" (offered: ${TMS_ID})`);
/** The 404 of a collection without tiles: none of that id, or a file layer's, whose tiles are its source's. */
function noCollection(c: Context, state: AppState, id: string): Response {
  const layer = findLayerCollection(id, (sid) => sourceOf(state, sid));
  if (layer && 'found' in layer) {
    const { source, layer: name } = layer.found;
    return problem(c, 404, 'Not found', `collection "${id}" has features only; its tiles are layer "${name}" of the tiles of collection "${source.info.id}"`);
  }
  return problem(c, 404, 'Collection not found', `no collection "${id}"`);
}

export function registerOgcTileRoutes(r: Router, ctx: ServerContext): void {
  r.add(
    PUBLIC.ogcCollections,
    { summary: 'Collections: every source, and each layer of a data file of several layers (`{source}:{layer}`)', tag: 'OGC API', query: DOC_QUERY, responses: { 200: DOC('the collections'), 400: DOC_ERRORS[400] } },
    (c) => {
      const state = ctx.holder.current;
      const see = visibleTo(c, state);
      return sendDoc(c, state, 'Collections', collections(new Hrefs(urlContext(c, state)), state, (s) => see('source', s.info.id)));
    },
    ogcAbsence,
  );
  r.add(
    PUBLIC.ogcCollection,
    { summary: 'A collection (a source, or a layer `{source}:{layer}` of a data file of several layers): extent and links', tag: 'OGC API', params: COLLECTION, query: DOC_QUERY, responses: { 200: DOC('the collection'), ...DOC_ERRORS } },
    (c) => {
      const state = ctx.holder.current;
      const id = param(c, 'id');
      const s = sourceOf(state, id);
      if (s) return sendDoc(c, state, s.info.name, collection(new Hrefs(urlContext(c, state)), s));
      // `{source}:{layer}`: a layer of a data file of several layers, a collection of features only.
      const layer = findLayerCollection(id, (sid) => sourceOf(state, sid));
      if (layer && 'found' in layer) return sendDoc(c, state, layer.found.title, layerCollection(new Hrefs(urlContext(c, state)), layer.found));
      return problem(c, 404, 'Collection not found', `no collection "${id}"`);
    },
    ogcAbsence,
  );
  r.add(
    PUBLIC.ogcTilesets,
    { summary: 'Tilesets of a collection', tag: 'OGC API', params: COLLECTION, query: DOC_QUERY, responses: { 200: DOC('the tileset list'), ...DOC_ERRORS } },
    (c) => {
      const state = ctx.holder.current;
      const s = sourceOf(state, param(c, 'id'));
      if (!s) return noCollection(c, state, param(c, 'id'));
      return sendDoc(c, state, `${s.info.name} tilesets`, tilesetList(new Hrefs(urlContext(c, state)), { kind: 'source', source: s }));
    },
    ogcAbsence,
  );
  r.add(
    PUBLIC.ogcTileset,
    {
      summary: 'Tileset metadata of a collection (templated tile link, tiling scheme, limits)',
      tag: 'OGC API',
      params: { ...COLLECTION, ...TMS },
      query: DOC_QUERY,
      responses: { 200: DOC('the tileset'), ...DOC_ERRORS },
    },
    (c) => {
      const state = ctx.holder.current;
      const s = sourceOf(state, param(c, 'id'));
      if (!s) return noCollection(c, state, param(c, 'id'));
      if (param(c, 'tms') !== TMS_ID) return noTms(c);
      return sendDoc(c, state, `${s.info.name} tileset`, tileset(new Hrefs(urlContext(c, state)), { kind: 'source', source: s }));
    },
    ogcAbsence,
  );
  r.add(
    PUBLIC.ogcTile,
    {
      summary: 'A tile of a collection (row before column); the same answer as /data/{source}/{z}/{x}/{y}',
      tag: 'OGC API',
      description: 'The source\'s own format (MVT for vector sources). 204 where the source has no tile inside the tileset\'s limits.',
      params: { ...COLLECTION, ...TMS, ...TILE },
      responses: {
        200: {
          description: 'the tile',
          content: { 'application/x-protobuf': true, 'application/vnd.open-vector-tile': true, 'image/png': true, 'image/jpeg': true, 'image/webp': true },
          headers: { ETag: 'strong validator of the bytes sent', 'Cache-Control': 'from server.tile_cache_control', 'Content-Encoding': 'when compressed' },
        },
        204: { description: 'no tile here' },
        304: { description: 'the If-None-Match ETag is current' },
        400: { description: 'tileRow or tileCol is not an integer', content: PROBLEM },
        404: { description: 'no such collection or tile matrix set; a tile matrix not in the set; a tile outside the matrix or the tileset limits', content: PROBLEM },
        503: { description: 'the source cannot answer now (Retry-After)', content: PROBLEM },
      },
    },
    (c) => {
      const state = ctx.holder.current;
      const s = sourceOf(state, param(c, 'id'));
      if (!s) return noCollection(c, state, param(c, 'id'));
      if (param(c, 'tms') !== TMS_ID) return noTms(c);
      const at = tileAddress(c, sourceLimits(s));
      if (at instanceof Response) return at;
      if (s instanceof TerrainProductSource) {
        const keys = answerKeys([s.elevation.id], at.z, at.x, at.y, true);
        return fetchTerrainTile(state, s.request(at, acceptedEncodings(c.req.header('accept-encoding')))).then((r) => sendTileResult(c, state, r, undefined, keys));
      }
      return answerSourceTile(c, state, s.info.id, at, s.info.format);
    },
    ogcAbsence,
  );

  // Rendered map tiles of styles: only where this process renders.
  const render = ctx.render;
  if (!render) return;
  const begin = beginRender(ctx, render);
  /** The map tileset of the style a request names (matrices 0..22, where rendering goes), or its 404. */
  const styleTileset = (c: Context): Extract<TilesetOf, { kind: 'style' }> | Response => {
    const b = begin(c);
    if (b.res) return b.res;
    return { kind: 'style', style: b.style, minzoom: 0, maxzoom: MAX_ZOOM };
  };
  r.add(
    PUBLIC.ogcStyles,
    { summary: 'Styles whose rendered map tiles are offered', tag: 'OGC API', query: DOC_QUERY, responses: { 200: DOC('the styles'), 400: DOC_ERRORS[400] } },
    (c) => {
      const state = ctx.holder.current;
      const see = visibleTo(c, state);
      return sendDoc(c, state, 'Styles', stylesList(new Hrefs(urlContext(c, state)), mapStyles(state, true).filter((s) => see('style', s.id))));
    },
    ogcMapAbsence,
  );
  r.add(
    PUBLIC.ogcMapTilesets,
    { summary: 'Map tilesets of the dataset: the rendered tileset of every style', tag: 'OGC API', query: DOC_QUERY, responses: { 200: DOC('the tileset list'), 400: DOC_ERRORS[400] } },
    (c) => {
      const state = ctx.holder.current;
      const see = visibleTo(c, state);
      const styles = mapStyles(state, true).filter((s) => see('style', s.id)).map((style) => ({ kind: 'style' as const, style, minzoom: 0, maxzoom: MAX_ZOOM }));
      return sendDoc(c, state, 'Map tilesets', datasetMapTilesets(new Hrefs(urlContext(c, state)), styles));
    },
    ogcMapAbsence,
  );
  r.add(
    PUBLIC.ogcStyleMapTilesets,
    { summary: 'Map tilesets of a style', tag: 'OGC API', params: STYLE, query: DOC_QUERY, responses: { 200: DOC('the tileset list'), ...DOC_ERRORS } },
    (c) => {
      const t = styleTileset(c);
      if (t instanceof Response) return t;
      const state = ctx.holder.current;
      return sendDoc(c, state, `${t.style.name} map tilesets`, tilesetList(new Hrefs(urlContext(c, state)), t));
    },
    ogcMapAbsence,
  );
  r.add(
    PUBLIC.ogcStyleMapTileset,
    {
      summary: 'Map tileset metadata of a style',
      tag: 'OGC API',
      params: { ...STYLE, ...TMS },
      query: DOC_QUERY,
      responses: { 200: DOC('the tileset'), ...DOC_ERRORS },
    },
    (c) => {
      const t = styleTileset(c);
      if (t instanceof Response) return t;
      if (param(c, 'tms') !== TMS_ID) return noTms(c);
      const state = ctx.holder.current;
      return sendDoc(c, state, `${t.style.name} map tileset`, tileset(new Hrefs(urlContext(c, state)), t));
    },
    ogcMapAbsence,
  );
  r.add(
    PUBLIC.ogcStyleMapTile,
    {
      summary: 'A rendered 256 px PNG map tile of a style (row before column); the same image as /styles/{style}/256/{z}/{x}/{y}.png',
      tag: 'OGC API',
      params: { ...STYLE, ...TMS, ...TILE },
      responses: { ...RENDER_RESPONSES, 404: { description: 'no such style or tile matrix set; a tile matrix not in the set; a tile outside the matrix', content: PROBLEM } },
    },
    (c) => {
      const b = begin(c);
      if (b.res) return b.res;
      if (param(c, 'tms') !== TMS_ID) return noTms(c);
      const at = tileAddress(c, tileMatrixLimits(undefined, 0, MAX_ZOOM));
      if (at instanceof Response) return at;
      return answerStyleTile(c, b, at, 256, 1, 'png');
    },
    ogcMapAbsence,
  );
}
