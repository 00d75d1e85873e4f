// Hillshade and contour tiles of an elevation source: the parameters parsed, the zoom range and bounds checked,
// the tile looked up in the tile cache (memory), on disk (`[cache] dir`/terrain, shared by the processes) and in
// the fleet's shared cache (Redis), else made in the terrain pool from a window of elevations with a border, so
// adjacent tiles join without a seam. Answers are TileResults, sent by the same code as every other tile (ETag,
// 304, Cache-Control).
import { createHash } from 'node:crypto';
import path from 'node:path';
import type { AppState } from '../state/app-state.js';
import { resolvedCacheDir } from '../config/paths.js';
import { log } from '../log.js';
import { RenderCache } from '../shared-cache/render-cache.js';
import type { TileCoord } from '../tiles/coords.js';
import { terrainProductOf, type TerrainProduct } from '../sources/source-ids.js';
import { tileIntersectsBounds } from '../tiles/coords.js';
import { chooseEncoding, type ContentEncoding } from '../tiles/encoding.js';
import { CONTENT_TYPES } from '../tiles/format.js';
import { sharedCache } from '../shared-cache/client.js';
import { sourceIdentity } from '../shared-cache/identity.js';
import { elevationSource, elevationSources, keepDecodedTiles, type Elevation } from './elevation.js';
import type { SourceInfo, TileSource } from '../sources/source.js';
import { parseHillshadeQuery } from '../terrain/hillshade.js';
import { contourLimitProblem, parseContourQuery, type ContourOptions } from '../terrain/contours.js';
import { runTerrain } from '../terrain/work.js';
import { etagOf, type TileResult } from './tile-service.js';
import { sourceTileJson, withKey, type TileJson, type UrlContext } from '../sources/tilejson.js';
import { Freshness } from './freshness.js';

export type { TerrainProduct };

/** Window pixels around a hillshade tile: Horn's slope reads one neighbour each way. */
const HILLSHADE_BORDER = 1;
/** Contour tiles are traced on a 256 px grid (a line per pixel is finer than any DEM a tile shows); lines reach border - 0.5 px past the edge, so 5 px fill the 64-unit buffer (4 px of 256). */
export const CONTOUR_GRID = 256;
const CONTOUR_BORDER = 5;

export interface TerrainTileRequest {
  sourceId: string;
  product: TerrainProduct;
  coord: TileCoord;
  /** Pixel ratio of hillshade tiles (`@2x`). */
  scale: number;
  format: 'png' | 'webp' | 'pbf' | 'mlt';
  query: URLSearchParams;
  accepted: Map<string, number>;
}

/** Tiles being made, with when their making began (a request after an expiry of their area does not join one). */
const inflightByState = new WeakMap<AppState, Map<string, { result: Promise<TileResult>; madeAt: number }>>();

export async function fetchTerrainTile(state: AppState, req: TerrainTileRequest): Promise<TileResult> {
  const found = elevationSource(state, req.sourceId);
  if (!found.ok) return { kind: 'problem', status: found.status, title: found.title, detail: found.detail };
  const elevation = found.elevation;
  const { z, x, y } = req.coord;
  const parsed = req.product === 'hillshade' ? parseHillshadeQuery(req.query) : parseContourQuery(req.query, z);
  if (!parsed.ok) return { kind: 'problem', status: 400, title: `Invalid ${req.product} parameter`, detail: parsed.problem };
  const { info } = elevation;
  if (z < info.minzoom || z > elevation.productMaxzoom || !tileIntersectsBounds(req.coord, info.bounds)) return { kind: 'empty' };
  const vector = req.format === 'pbf' || req.format === 'mlt';
  const c = state.config.compression;
  const encoding: ContentEncoding = vector ? chooseEncoding(req.accepted, 'identity', c.enabled) : 'identity';
  const key = `terrain:${info.id}@${info.revision ?? ''}/${req.product}/${z}/${x}/${y}@${req.scale}.${req.format}:${encoding}?${JSON.stringify(parsed.options)}`;
  // An expiry of the elevation source reaches every product of it, in every layer below; the border a tile reads
  // lies in its neighbours, so their expiries reach it too. Computed products are made fresh, never served stale.
  const freshness = new Freshness(state, elevation.id, req.coord, true);
  const cached = state.tileCache.get(key);
  if (cached && freshness.fresh(cached.madeAt)) return cached.empty ? { kind: 'empty', cache: 'hit' } : tileResult(cached.body, req.format, encoding, cached.etag, 'hit');

  let inflight = inflightByState.get(state);
  if (!inflight) inflightByState.set(state, (inflight = new Map()));
  const pending = inflight.get(key);
  if (pending && freshness.fresh(pending.madeAt)) return pending.result;
  const madeAt = Date.now();
  const entry = { madeAt, result: produce(state, elevation, req, parsed.options, encoding, key, freshness, madeAt).finally(() => inflight.get(key) === entry && inflight.delete(key)) };
  inflight.set(key, entry);
  return entry.result;
}

/** The disk cache of terrain tiles under a cache directory and budget, kept while they stay the same. */
let disk: { key: string; cache: RenderCache } | undefined;

function diskCache(state: AppState): RenderCache | undefined {
  if (!state.config.cache.enabled || state.config.render.disk_cache_mb <= 0) return undefined;
  const dir = path.join(resolvedCacheDir(state), 'terrain');
  const key = `${dir}\n${state.config.render.disk_cache_mb}`;
  if (disk?.key !== key) disk = { key, cache: new RenderCache(0, dir, state.config.render.disk_cache_mb, (err) => log.warn({ err: err.message }, 'terrain disk cache')) };
  return disk.cache;
}

async function produce(state: AppState, elevation: Elevation, req: TerrainTileRequest, options: object, encoding: ContentEncoding, key: string, freshness: Freshness, madeAt: number): Promise<TileResult> {
  const { z, x, y } = req.coord;
  // The data's fingerprint (file sizes and ends, not paths): machines and processes with the same files share entries.
  const identity = sourceIdentity(state, elevation.id);
  const sharedKey = identity === undefined ? undefined : `terrain/${identity}/${key}`;
  // On disk: one file per tile under source/product/z/x, its parameters hashed into the name.
  const diskKey =
    identity === undefined
      ? undefined
      : `${identity}/${req.product}/${z}/${x}/${y}@${req.scale}.${req.format}.${encoding}.${createHash('sha256').update(JSON.stringify(options)).digest('hex').slice(0, 16)}`;
  const onDisk = diskKey === undefined ? undefined : diskCache(state);
  if (onDisk && diskKey !== undefined) {
    // A file's time is when its making began (kept across restarts): made before an expiry, it is made again.
    const hit = await onDisk.getDiskEntry(diskKey);
    if (hit && freshness.fresh(hit.madeAt)) {
      const body = new Uint8Array(hit.body.buffer, hit.body.byteOffset, hit.body.byteLength);
      const etag = etagOf(body);
      state.tileCache.set(key, { body, contentEncoding: encoding, etag, empty: false, madeAt: hit.madeAt });
      return tileResult(body, req.format, encoding, etag, 'miss');
    }
  }
  if (sharedKey !== undefined && sharedCache.enabled) {
    const hit = await sharedCache.get('terrain', sharedKey);
    if (hit && freshness.fresh(hit.madeAt)) {
      const body = new Uint8Array(hit.body.buffer, hit.body.byteOffset, hit.body.byteLength);
      const etag = etagOf(body);
      state.tileCache.set(key, { body, contentEncoding: encoding, etag, empty: false, madeAt: hit.madeAt });
      if (onDisk && diskKey !== undefined) void onDisk.setDisk(diskKey, body, hit.madeAt);
      return { ...tileResult(body, req.format, encoding, etag, 'miss'), fromShared: true };
    }
  }
  let body: Uint8Array | undefined;
  const config = state.config;
  if (req.product === 'hillshade') {
    const size = config.raster.tile_size * req.scale;
    const input = await elevation.input(z, x, y, size, HILLSHADE_BORDER);
    if (input) {
      // A window read by GDAL is not needed here again: its megabyte moves to the thread rather than being copied.
      const data = 'window' in input ? input.window.data : undefined;
      const transfer = data && data.byteOffset === 0 && data.byteLength === data.buffer.byteLength && data.buffer instanceof ArrayBuffer ? [data.buffer] : [];
      const { value: tile, decoded } = await runTerrain(
        { op: 'hillshade', input, options, format: req.format === 'webp' ? 'webp' : 'png', pngLevel: config.terrain.png_compression, webpQuality: config.render.webp_quality },
        config,
        transfer,
      );
      keepDecodedTiles(decoded, madeAt);
      // No bytes: the archive had tiles there, but none with data in the window.
      if (tile.byteLength > 0) body = tile;
    }
  } else {
    const window = await elevation.window(z, x, y, CONTOUR_GRID, CONTOUR_BORDER);
    // An interval far finer than the relief of this tile would trace thousands of lines: refused before any is.
    const tooMany = window && contourLimitProblem(window, (options as ContourOptions).interval, (options as ContourOptions).unit);
    if (tooMany) return { kind: 'problem', status: 400, title: 'Invalid contours parameter', detail: tooMany };
    if (window) {
      const levels = { brQuality: config.compression.br_quality, zstdLevel: config.compression.zstd_level };
      const tile = await runTerrain({ op: 'contours', window, options: options as never, format: req.format === 'mlt' ? 'mlt' : 'pbf', encoding, levels }, config);
      // A tile without a single line is an empty tile (204), as a vector source without data there answers.
      if (tile.byteLength > 0) body = tile;
    }
  }
  if (!body) {
    state.tileCache.set(key, { body: new Uint8Array(0), contentEncoding: undefined, etag: '', empty: true, madeAt });
    return { kind: 'empty', cache: 'miss' };
  }
  const etag = etagOf(body);
  state.tileCache.set(key, { body, contentEncoding: encoding, etag, empty: false, madeAt });
  if (sharedKey !== undefined && sharedCache.enabled) sharedCache.put(sharedKey, body, madeAt);
  if (onDisk && diskKey !== undefined) void onDisk.setDisk(diskKey, body, madeAt);
  return tileResult(body, req.format, encoding, etag, 'miss');
}

function tileResult(body: Uint8Array, format: TerrainTileRequest['format'], encoding: ContentEncoding, etag: string, cache: 'hit' | 'miss'): Extract<TileResult, { kind: 'tile' }> {
  return { kind: 'tile', body, contentType: CONTENT_TYPES[format], contentEncoding: encoding, etag, cache };
}

/** The TileJSON of an elevation source's hillshade or contour tiles; `query` (checked, with its `?`) goes into the tile URL. */
export function productTileJson(state: AppState, u: UrlContext, elevation: Elevation, product: TerrainProduct, query = ''): TileJson {
  const base = sourceTileJson(elevation.info, u);
  const id = encodeURIComponent(elevation.id);
  const hillshade = product === 'hillshade';
  const doc: TileJson = {
    tilejson: '3.0.0',
    name: `${elevation.info.name} ${product}`,
    tiles: [withKey(`${u.base}/data/${id}/${product}/{z}/{x}/{y}.${hillshade ? 'png' : 'pbf'}${query}`, u.key)],
    minzoom: elevation.info.minzoom,
    maxzoom: elevation.productMaxzoom,
    bounds: base.bounds,
    center: base.center,
    format: hillshade ? 'png' : 'pbf',
    scheme: 'xyz',
  };
  if (base.attribution) doc.attribution = base.attribution;
  if (hillshade) doc.tileSize = state.config.raster.tile_size;
  else {
    doc.vector_layers = [
      { id: 'contours', fields: { ele: 'Number', level: 'Number' }, minzoom: elevation.info.minzoom, maxzoom: elevation.productMaxzoom, description: 'contour lines: ele (elevation in the unit asked for), level (1 on major lines, else 0)' },
    ];
  }
  return doc;
}

/**
 * An elevation source's hillshade or contour tiles seen as a tile source of their own (id `{source}.hillshade`,
 * `{source}.contours`), so that catalogues listing tile sets (OGC API - Tiles collections) offer them beside the
 * source. Tiles are the default product (no parameters), cached like the route's.
 */
export class TerrainProductSource implements TileSource {
  readonly info: SourceInfo;
  constructor(
    private readonly state: AppState,
    readonly elevation: Elevation,
    readonly product: TerrainProduct,
  ) {
    const e = elevation.info;
    const hillshade = product === 'hillshade';
    this.info = {
      id: `${e.id}.${product}`,
      type: product,
      format: hillshade ? 'png' : 'pbf',
      compression: 'none',
      name: `${e.name} ${product}`,
      attribution: e.attribution,
      description: hillshade ? `shaded relief of ${e.id}` : `contour lines of ${e.id} (layer contours: ele, level)`,
      minzoom: e.minzoom,
      maxzoom: elevation.productMaxzoom,
      bounds: e.bounds,
      center: e.center,
      ...(hillshade ? { tileSize: state.config.raster.tile_size } : { vectorLayers: [{ id: 'contours', fields: { ele: 'Number', level: 'Number' } }] }),
    };
  }

  /** The tile as the product's route answers it with default parameters (identity bytes). */
  request(coord: TileCoord, accepted: Map<string, number>): TerrainTileRequest {
    return { sourceId: this.elevation.id, product: this.product, coord, scale: 1, format: this.info.format as 'png' | 'pbf', query: new URLSearchParams(), accepted };
  }

  async getTile(z: number, x: number, y: number): Promise<Uint8Array | undefined> {
    const r = await fetchTerrainTile(this.state, this.request({ z, x, y }, new Map()));
    if (r.kind === 'problem') throw new Error(r.detail);
    return r.kind === 'tile' ? r.body : undefined;
  }

  async close(): Promise<void> {}
}

/** The product sources of a state's elevation sources, leaving out any whose id a configured source already has. */
export function terrainProductSources(state: AppState): TerrainProductSource[] {
  const out: TerrainProductSource[] = [];
  for (const e of elevationSources(state)) {
    for (const product of ['hillshade', 'contours'] as const) {
      if (state.sources.has(`${e.id}.${product}`) || state.composites.has(`${e.id}.${product}`)) continue;
      out.push(new TerrainProductSource(state, e, product));
    }
  }
  return out;
}

/** The product source `{source}.hillshade` or `{source}.contours`, when `id` names one. */
export function terrainProductSource(state: AppState, id: string): TerrainProductSource | undefined {
  const named = terrainProductOf(id);
  if (!named || state.sources.has(id) || state.composites.has(id)) return undefined;
  const found = elevationSource(state, named.source);
  return found.ok ? new TerrainProductSource(state, found.elevation, named.product) : undefined;
}
