// Serving one source tile: source lookup, range checks, cache, stored-gzip handling and content encoding.
// The HTTP route is a thin shell around `fetchTile`; render workers use the same function for their resources.
import { FILE_SOURCE_TYPES } from '../config/schema.js';
import { createHash } from 'node:crypto';
import type { AppState } from '../state/app-state.js';
import { TileUnavailableError, type TileFilter, type TileParams, type TileSource } from '../sources/source.js';
import { chooseEncoding, decodeGzip, encode, type ContentEncoding } from '../tiles/encoding.js';
import { CONTENT_TYPES, isGzip, isVector, type TileFormat } from '../tiles/format.js';
import { tileIntersectsBounds, type TileCoord } from '../tiles/coords.js';
import { isProblem, resolveSource } from './resolve.js';
import { transcodeStored } from './transcode.js';
import { LRUCache } from 'lru-cache';
import { decodeMvt } from '../tiles/mvt-decode.js';
import { encodeMvt } from '../tiles/mvt-encode.js';
import { cutTile, RENDER_MAXZOOM } from '../tiles/overzoom.js';
import type { VectorTileData } from '../tiles/vector-model.js';
import { sharedCache } from '../shared-cache/client.js';
import { sourceIdentity } from '../shared-cache/identity.js';
import { Freshness } from './freshness.js';

/** Whether an answer came from the tile cache (`hit`) or was produced now (`miss`); absent when no lookup was made. */
export type CacheOutcome = 'hit' | 'miss';

export type TileResult =
  | {
      kind: 'tile';
      body: Uint8Array;
      contentType: string;
      contentEncoding: ContentEncoding;
      etag: string;
      cache?: CacheOutcome;
      /** Read from the fleet's shared cache (a transcoded tile another process or a seed put there). */
      fromShared?: true;
      /** The source's last good copy, answered because its upstream failed now (remote XYZ sources); never cached. */
      stale?: true;
    }
  | { kind: 'empty'; cache?: CacheOutcome }
  | { kind: 'problem'; status: 400 | 404; title: string; detail: string };

export interface TileRequest {
  sourceId: string;
  coord: TileCoord;
  format: TileFormat;
  /** Parsed Accept-Encoding of the client. */
  accepted: Map<string, number>;
  /** The request's query parameters; they reach sources with `info.takesParams` (database functions). */
  params?: TileParams;
  /** A CQL2 filter and a choice of properties (`filter`, `properties`): only for sources with `info.filterable`. */
  filter?: TileFilter;
}

/** The query parameters as part of a cache key: sorted, so the order in the URL does not matter. */
function paramsKey(params: TileParams | undefined): string {
  if (!params) return '';
  const keys = Object.keys(params).sort();
  return keys.length ? `?${JSON.stringify(keys.map((k) => [k, params[k]]))}` : '';
}

/** A strong validator over the exact bytes sent. */
export function etagOf(body: Uint8Array): string {
  return `"${createHash('sha1').update(body).digest('base64url').slice(0, 22)}"`;
}

/** A production under way: its result, and when it began (before its data was read). */
interface Inflight {
  result: Promise<TileResult>;
  madeAt: number;
}

/**
 * Tiles being produced, per state snapshot: concurrent requests for one tile share one read. Per snapshot,
 * because after a reload a request must not be handed a tile read from the previous configuration's source.
 */
const inflightByState = new WeakMap<AppState, Map<string, Inflight>>();

export async function fetchTile(state: AppState, req: TileRequest): Promise<TileResult> {
  // Composites (named, or ad hoc `a+b`) are resolved only when no plain source has the id.
  const source = state.sources.get(req.sourceId) ?? resolveSource(state, req.sourceId);
  if (isProblem(source)) return source;
  const { info } = source;
  // Vector tiles are transcoded between MVT and MLT on request; raster formats are what they are.
  if (req.format !== info.format && !(isVector(req.format) && isVector(info.format)) && !info.formats?.includes(req.format)) {
    return {
      kind: 'problem',
      status: 400,
      title: 'Format not available',
      detail: `source "${info.id}" serves ${info.format} tiles; ${req.format} was requested`,
    };
  }
  const { z, x, y } = req.coord;
  if (z < info.minzoom || z > info.maxzoom || (!info.tilesOutsideBounds && !tileIntersectsBounds(req.coord, info.bounds))) return { kind: 'empty' };

  const vector = isVector(info.format);
  const compression = state.config.compression;
  const encoding: ContentEncoding = vector
    ? chooseEncoding(req.accepted, info.compression === 'gzip' ? 'gzip' : 'identity', compression.enabled)
    : 'identity';
  if (req.filter && !info.filterable) {
    const why = info.type === 'postgres-table' || (FILE_SOURCE_TYPES as readonly string[]).includes(info.type) ? 'its configuration has allow_filters = false' : 'only PostGIS tables and data-file sources take filter and properties';
    return { kind: 'problem', status: 400, title: 'Filters not available', detail: `source "${info.id}" does not take filter or properties: ${why}` };
  }
  const key = `${info.id}${info.revision ? `@${info.revision}` : ''}/${z}/${x}/${y}.${req.format}:${encoding}${info.takesParams ? paramsKey(req.params) : ''}${req.filter ? `|${req.filter.key}` : ''}`;
  // A tile of a source whose data changed here since it was made is made again (a database tile is cheap to make).
  const freshness = new Freshness(state, req.sourceId, req.coord);
  const cached = state.tileCache.get(key);
  if (cached && freshness.fresh(cached.madeAt)) return cached.empty ? { kind: 'empty', cache: 'hit' } : tileResult(cached.body, req.format, encoding, cached.etag, 'hit');

  return shared(state, key, freshness, (madeAt) => produce(state, source, req, encoding, key, freshness, madeAt));
}

/**
 * One production of `key` per state snapshot, shared by the requests that ask while it runs; except that a
 * request is never handed a production that began before an expiry of its area (it reads the data anew).
 */
function shared(state: AppState, key: string, freshness: Freshness, work: (madeAt: number) => Promise<TileResult>): Promise<TileResult> {
  let inflight = inflightByState.get(state);
  if (!inflight) inflightByState.set(state, (inflight = new Map()));
  const pending = inflight.get(key);
  if (pending && freshness.fresh(pending.madeAt)) return pending.result;
  const madeAt = Date.now();
  const entry: Inflight = { madeAt, result: work(madeAt).finally(() => inflight.get(key) === entry && inflight.delete(key)) };
  inflight.set(key, entry);
  return entry.result;
}

async function produce(state: AppState, source: TileSource, req: TileRequest, encoding: ContentEncoding, key: string, freshness: Freshness, madeAt: number): Promise<TileResult> {
  const { z, x, y } = req.coord;
  // Transcoding costs far more than a read: the fleet's shared cache is asked first (configured file sources only).
  const id = isVector(req.format) && req.format !== source.info.format && sharedCache.enabled ? sourceIdentity(state, source.info.id) : undefined;
  const sharedKey = id === undefined ? undefined : `transcoded/${id}/${key}`;
  if (sharedKey !== undefined) {
    const entry = await sharedCache.get('transcoded', sharedKey);
    // Transcoded by some machine before an expiry of its area: made again from the source here.
    if (entry && freshness.fresh(entry.madeAt)) {
      const found = entry.body;
      const etag = etagOf(found);
      state.tileCache.set(key, { body: found, contentEncoding: encoding, etag, empty: false, madeAt: entry.madeAt });
      return { ...tileResult(found, req.format, encoding, etag, 'miss'), fromShared: true };
    }
  }
  let stored: Uint8Array | undefined;
  let stale = false;
  try {
    stored = await source.getTile(z, x, y, source.info.takesParams ? (req.params ?? {}) : undefined, req.format, req.filter);
  } catch (err) {
    // A remote source whose upstream failed hands over its last good copy: answered, marked stale, cached nowhere.
    if (!(err instanceof TileUnavailableError) || err.stale === undefined) throw err;
    stored = err.stale;
    stale = true;
  }
  if (!stored) {
    state.tileCache.set(key, { body: new Uint8Array(0), contentEncoding: undefined, etag: '', empty: true, madeAt });
    return { kind: 'empty', cache: 'miss' };
  }
  let body: Uint8Array | undefined;
  let format = req.format;
  if (isVector(format) && format !== source.info.format) {
    // Transcoded and content-encoded off the event loop. A failed transcode serves the stored tile as it is
    // (spec); that answer is not cached, so a later request retries.
    body = await transcodeStored(state, source.info, req.coord, stored, format as 'pbf' | 'mlt', encoding);
    if (!body) format = source.info.format;
  }
  if (body) {
    // already in the requested format and encoding
  } else if (!isVector(source.info.format)) body = stored;
  else {
    const gz = isGzip(stored);
    if (gz && encoding === 'gzip') body = stored;
    else {
      const raw = gz ? decodeGzip(stored) : stored;
      const c = state.config.compression;
      body = encode(raw, encoding, { brQuality: c.br_quality, zstdLevel: c.zstd_level });
    }
  }
  const etag = etagOf(body);
  if (stale) return { ...tileResult(body, format, encoding, etag, 'miss'), stale: true };
  if (format === req.format) state.tileCache.set(key, { body, contentEncoding: encoding, etag, empty: false, madeAt });
  if (sharedKey !== undefined && format === req.format) sharedCache.put(sharedKey, body, madeAt);
  return tileResult(body, format, encoding, etag, 'miss');
}

function tileResult(body: Uint8Array, format: TileFormat, encoding: ContentEncoding, etag: string, cache?: CacheOutcome): Extract<TileResult, { kind: 'tile' }> {
  return { kind: 'tile', body, contentType: CONTENT_TYPES[format], contentEncoding: encoding, etag, cache };
}

/** Geometry kept beyond a cut tile's edges, as a fraction of its extent (128 units of 4096). */
const CUT_BUFFER = 1 / 32;
/** Decoded ancestor tiles kept per state snapshot: a render asks for a handful of cuts of the same ancestors. */
const ANCESTORS_KEPT = 8;
const ancestorsByState = new WeakMap<AppState, LRUCache<string, { tile: Promise<VectorTileData | undefined>; madeAt: number }>>();

/**
 * A vector tile below its source's maxzoom, cut from the ancestor tile at maxzoom (overzoom.ts), as identity
 * MVT bytes. For renderers only: public tile URLs answer the archive's own zoom range (spec). Tiles within the
 * range, and raster sources, are answered as `fetchTile` answers them.
 */
export async function fetchRenderTile(state: AppState, req: TileRequest): Promise<TileResult> {
  const source = state.sources.get(req.sourceId) ?? resolveSource(state, req.sourceId);
  if (isProblem(source)) return source;
  const { info } = source;
  const { z, x, y } = req.coord;
  if (!isVector(info.format) || !isVector(req.format) || z <= info.maxzoom || z > RENDER_MAXZOOM) return fetchTile(state, req);
  const dz = z - info.maxzoom;
  const ancestor = { z: info.maxzoom, x: Math.floor(x / 2 ** dz), y: Math.floor(y / 2 ** dz) };
  const key = `render-cut:${info.id}${info.revision ? `@${info.revision}` : ''}/${z}/${x}/${y}`;
  // The index answers by area: an expiry of the ancestor (or of any tile inside this one) reaches the cut.
  const freshness = new Freshness(state, req.sourceId, req.coord);
  const cached = state.tileCache.get(key);
  if (cached && freshness.fresh(cached.madeAt)) return cached.empty ? { kind: 'empty' } : tileResult(cached.body, 'pbf', 'identity', cached.etag);
  return shared(state, key, freshness, async (madeAt) => {
    const ancestorReq = { ...req, coord: ancestor, format: 'pbf' as const, accepted: new Map() };
    const decoded = await decodedAncestor(state, ancestorReq, new Freshness(state, req.sourceId, ancestor), madeAt);
    const cut = decoded && cutTile(decoded, dz, x - ancestor.x * 2 ** dz, y - ancestor.y * 2 ** dz, CUT_BUFFER);
    if (!cut || cut.length === 0) {
      state.tileCache.set(key, { body: new Uint8Array(0), contentEncoding: undefined, etag: '', empty: true, madeAt });
      return { kind: 'empty' };
    }
    const body = encodeMvt(cut);
    const etag = etagOf(body);
    state.tileCache.set(key, { body, contentEncoding: 'identity', etag, empty: false, madeAt });
    return tileResult(body, 'pbf', 'identity', etag);
  });
}

/**
 * The ancestor tile decoded, from a small per-snapshot LRU; undefined when the source has no tile there. A kept
 * one decoded before an expiry of its area is read again.
 */
function decodedAncestor(state: AppState, req: TileRequest, freshness: Freshness, madeAt: number): Promise<VectorTileData | undefined> {
  let kept = ancestorsByState.get(state);
  if (!kept) ancestorsByState.set(state, (kept = new LRUCache({ max: ANCESTORS_KEPT })));
  const key = `${req.sourceId}/${req.coord.z}/${req.coord.x}/${req.coord.y}`;
  const hit = kept.get(key);
  if (hit && freshness.fresh(hit.madeAt)) return hit.tile;
  const tile = fetchTile(state, req).then((r) => (r.kind === 'tile' && r.body.byteLength ? decodeMvt(r.body) : undefined));
  const entry = { tile, madeAt };
  // A failed read is not kept: the next render retries.
  tile.catch(() => kept.get(key) === entry && kept.delete(key));
  kept.set(key, entry);
  return tile;
}
