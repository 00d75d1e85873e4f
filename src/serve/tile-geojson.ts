// `/data/{id}/{z}/{x}/{y}.geojson`: a vector tile (MVT, MLT or composite) as a GeoJSON FeatureCollection in
// tile coordinates. Same range rules as the tile itself (204 outside the zoom range or bounds, or when the
// source has no tile); the JSON is cached in the tile cache beside the tile's other representations.
import { HttpProblem } from '../problem.js';
import { isProblem, resolveSource, type SourceProblem } from './resolve.js';
import type { AppState } from '../state/app-state.js';
import { tileIntersectsBounds, type TileCoord } from '../tiles/coords.js';
import { isVector } from '../tiles/format.js';
import { etagOf } from './tile-service.js';
import { runVector } from '../tiles/vector-work.js';
import { Freshness } from './freshness.js';

export type GeoJsonResult = { kind: 'json'; body: Uint8Array; etag: string } | { kind: 'empty' } | SourceProblem;

export async function fetchTileGeoJson(state: AppState, sourceId: string, coord: TileCoord): Promise<GeoJsonResult> {
  const source = resolveSource(state, sourceId);
  if (isProblem(source)) return source;
  const { info } = source;
  if (!isVector(info.format)) {
    return { kind: 'problem', status: 400, title: 'Not a vector source', detail: `source "${info.id}" serves ${info.format} tiles; GeoJSON is made from vector tiles` };
  }
  const { z, x, y } = coord;
  if (z < info.minzoom || z > info.maxzoom || (!info.tilesOutsideBounds && !tileIntersectsBounds(coord, info.bounds))) return { kind: 'empty' };
  const key = `${info.id}${info.revision ? `@${info.revision}` : ''}/${z}/${x}/${y}.geojson:identity`;
  const cached = state.tileCache.get(key);
  if (cached && new Freshness(state, sourceId, coord).fresh(cached.madeAt)) return cached.empty ? { kind: 'empty' } : { kind: 'json', body: cached.body, etag: cached.etag };

  const madeAt = Date.now();
  const stored = await source.getTile(z, x, y);
  if (!stored) {
    state.tileCache.set(key, { body: new Uint8Array(0), contentEncoding: undefined, etag: '', empty: true, madeAt });
    return { kind: 'empty' };
  }
  let json: string;
  try {
    json = await runVector({ op: 'geojson', input: { bytes: stored, format: info.format as 'pbf' | 'mlt' } }, state.config);
  } catch (err) {
    if (err instanceof HttpProblem) throw err;
    throw new HttpProblem(500, 'Tile not readable', `tile ${z}/${x}/${y} of source "${info.id}" could not be decoded: ${(err as Error).message}`);
  }
  const body = Buffer.from(json);
  const etag = etagOf(body);
  state.tileCache.set(key, { body, contentEncoding: 'identity', etag, empty: false, madeAt });
  return { kind: 'json', body, etag };
}
