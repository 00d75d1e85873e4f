// `POST /api/spatial/query`: which tiles cover the bounding box at the (clamped) zoom, read them, and run the
// feature query over them in the vector pool. The number of tiles one query may decode is bounded.
import { HttpProblem } from '../problem.js';
import { isProblem, resolveSource, type SourceProblem } from '../serve/resolve.js';
import type { SourceInfo, TileSource } from '../sources/source.js';
import type { AppState } from '../state/app-state.js';
import { tileIntersectsBounds, tileToLonLat, type TileCoord } from '../tiles/coords.js';
import { isVector } from '../tiles/format.js';
import { runVector } from '../tiles/vector-work.js';
import { worldXY } from '../tiles/project.js';
import type { QueryBody } from './query-body.js';
import type { BBox, QueryFeature } from '../tiles/query-tiles.js';

/** At most this many tiles are decoded for one query (a 6x6 block plus its edges at any zoom). */
export const MAX_QUERY_TILES = 64;

export interface QueryResponse {
  source: string;
  /** The zoom the tiles were read at (the requested one, clamped to the source's range). */
  zoom: number;
  /** The bounding box queried (the tile at the source's center when the request gave none). */
  bbox: BBox;
  features: QueryFeature[];
  total: number;
  truncated: boolean;
}

export interface QueryPlan {
  zoom: number;
  bbox: BBox;
  tiles: TileCoord[];
}

/** The tiles that cover `bbox` at `zoom`; a box edge on a tile border does not pull in the neighbour. */
export function coveringTiles(bbox: BBox, zoom: number): { x0: number; y0: number; x1: number; y1: number } {
  const n = 2 ** zoom;
  const [wx0, wy0] = worldXY(bbox[0], bbox[3]);
  const [wx1, wy1] = worldXY(bbox[2], bbox[1]);
  const clamp = (v: number) => Math.min(n - 1, Math.max(0, v));
  const x0 = clamp(Math.floor(wx0 * n));
  const y0 = clamp(Math.floor(wy0 * n));
  return { x0, y0, x1: Math.max(x0, clamp(Math.ceil(wx1 * n) - 1)), y1: Math.max(y0, clamp(Math.ceil(wy1 * n) - 1)) };
}

export function planQuery(info: SourceInfo, body: QueryBody): QueryPlan | SourceProblem {
  const zoom = Math.min(info.maxzoom, Math.max(info.minzoom, body.zoom));
  let bbox: BBox;
  if (body.bbox) bbox = body.bbox;
  else {
    // No bbox: the tile holding the source's center at the query zoom.
    const [cx, cy] = worldXY(info.center[0], info.center[1]);
    const n = 2 ** zoom;
    const tx = Math.min(n - 1, Math.floor(cx * n));
    const ty = Math.min(n - 1, Math.floor(cy * n));
    const [w, north] = tileToLonLat(zoom, tx, ty);
    const [e, south] = tileToLonLat(zoom, tx + 1, ty + 1);
    bbox = [w, south, e, north];
  }
  const { x0, y0, x1, y1 } = coveringTiles(bbox, zoom);
  const count = (x1 - x0 + 1) * (y1 - y0 + 1);
  if (count > MAX_QUERY_TILES) {
    return {
      kind: 'problem',
      status: 400,
      title: 'Query area too large',
      detail: `the bbox covers ${count} tiles at zoom ${zoom}; a query reads at most ${MAX_QUERY_TILES}: use a smaller bbox or a lower zoom`,
    };
  }
  const tiles: TileCoord[] = [];
  for (let y = y0; y <= y1; y++) {
    for (let x = x0; x <= x1; x++) {
      const coord = { z: zoom, x, y };
      if (info.tilesOutsideBounds || tileIntersectsBounds(coord, info.bounds)) tiles.push(coord);
    }
  }
  return { zoom, bbox, tiles };
}

async function readTiles(source: TileSource, tiles: readonly TileCoord[]) {
  const read = await Promise.all(tiles.map((t) => source.getTile(t.z, t.x, t.y)));
  const format = source.info.format as 'pbf' | 'mlt';
  // A zero-byte tile (a composite where no member has data) holds nothing to query.
  return tiles.flatMap((t, i) => {
    const bytes = read[i];
    return bytes && bytes.byteLength > 0 ? [{ ...t, bytes, format }] : [];
  });
}

export async function runQuery(state: AppState, body: QueryBody): Promise<QueryResponse | SourceProblem> {
  const source = resolveSource(state, body.source);
  if (isProblem(source)) return source;
  const { info } = source;
  if (!isVector(info.format)) {
    return { kind: 'problem', status: 400, title: 'Not a vector source', detail: `source "${info.id}" serves ${info.format} tiles; feature queries need a vector source` };
  }
  const plan = planQuery(info, body);
  if ('kind' in plan) return plan;
  const tiles = await readTiles(source, plan.tiles);
  if (tiles.length === 0) {
    const where = plan.bbox.map((v) => Math.round(v * 1e6) / 1e6).join(',');
    return { kind: 'problem', status: 404, title: 'No tile at the location', detail: `source "${info.id}" has no tile covering [${where}] at zoom ${plan.zoom}` };
  }
  let result;
  try {
    result = await runVector({ op: 'query', tiles, bbox: plan.bbox, layers: body.layers, limit: body.limit }, state.config);
  } catch (err) {
    if (err instanceof HttpProblem) throw err;
    throw new HttpProblem(500, 'Tile not readable', `a tile of source "${info.id}" at zoom ${plan.zoom} could not be decoded: ${(err as Error).message}`);
  }
  return { source: info.id, zoom: plan.zoom, bbox: plan.bbox, features: result.features, total: result.total, truncated: result.total > result.features.length };
}
