// Which budget a request spends: cheap (answers read from storage or a cache: stored tiles, TileJSON, styles,
// fonts, sprites, pages) or expensive (answers made on request: renders, static maps, social cards, transcodes,
// composites, raster and database tiles, hillshade and contours, elevation batches and profiles, uploads, spatial
// queries, MCP calls). The route decides, before the answer is made: whether a render or transcode will be found
// in a cache is known only once it has been served, and a limiter that charged by outcome would let a client
// probe uncached tiles for the price of cached ones. So a render route is expensive even when its tile comes from
// the cache, and a stored tile is cheap. The table is in docs/rate-limits.md; keep the two together.
import type { AppState } from '../state/app-state.js';
import { formatFromExtension } from '../tiles/format.js';

export type Kind = 'cheap' | 'expensive';

/** `/data/{id}/{z}/{x}/{y}.{ext}` (ext with a scale is not a data tile). */
const DATA_TILE = /^\/data\/([^/]+)\/\d+\/\d+\/\d+\.([a-z]+)$/;
/** `/data/{id}/hillshade/...` and `/data/{id}/contours/...` tiles (not their `.json` or `wmts.xml`). */
const TERRAIN_TILE = /^\/data\/[^/]+\/(hillshade|contours)\/\d+\/\d+\/\d+/;
/** Raster tiles rendered from a style: `/styles/{id}/{z}/{x}/{y}[@2x].{fmt}` and `/styles/{id}/256/...`. */
const STYLE_TILE = /^\/styles\/[^/]+\/(?:256\/)?\d+\/\d+\/\d+(?:@\d+(?:\.\d+)?x)?\.[a-z]+$/;
/** OGC tiles: `/ogc/collections/{id}/tiles/{tms}/{z}/{row}/{col}` (a data tile) and rendered map tiles. */
const OGC_TILE = /^\/ogc\/collections\/([^/]+)\/tiles\/[^/]+\/\d+\/\d+\/\d+$/;
const OGC_MAP_TILE = /^\/ogc\/(?:styles\/[^/]+\/)?map\/tiles\/[^/]+\/\d+\/\d+\/\d+$/;

/** Stored tiles of an archive served in the format they are stored in: the cheap tile. */
const ARCHIVES = new Set(['pmtiles', 'mbtiles']);

/** `ext` undefined: the tile in the source's own format (OGC tiles). */
function dataTileKind(state: AppState, id: string, ext: string | undefined): Kind {
  if (ext === 'geojson' || id.includes('+')) return 'expensive';
  const source = state.sources.get(id);
  if (!source) return state.composites.has(id) ? 'expensive' : 'cheap';
  if (!ARCHIVES.has(source.info.type)) return 'expensive';
  // pbf of an MLT archive, mlt of an MVT archive: transcoded on the fly.
  return ext === undefined || formatFromExtension(ext) === source.info.format ? 'cheap' : 'expensive';
}

/** The budget `method path` spends under `state`. `path` is the request target without its query. */
export function classify(state: AppState, method: string, path: string): Kind {
  switch (path.charCodeAt(1)) {
    case 100: {
      // 'd': /data/...
      if (!path.startsWith('/data/')) return 'cheap';
      const m = DATA_TILE.exec(path);
      if (m) return dataTileKind(state, decodeId(m[1]), m[2]);
      if (TERRAIN_TILE.test(path)) return 'expensive';
      // tileserver-gl's elevation batch (POST /data/{id}/elevation); its single point (GET) is a lookup.
      if (method === 'POST') return 'expensive';
      return 'cheap';
    }
    case 115: // 's': /styles/...
      if (!path.startsWith('/styles/')) return 'cheap';
      if (path.includes('/static/')) return 'expensive';
      return STYLE_TILE.test(path) ? 'expensive' : 'cheap';
    case 111: {
      // 'o': /og/..., /ogc/...
      if (path.startsWith('/og/')) return 'expensive';
      if (!path.startsWith('/ogc/')) return 'cheap';
      if (OGC_MAP_TILE.test(path)) return 'expensive';
      const m = OGC_TILE.exec(path);
      if (m) return dataTileKind(state, decodeId(m[1]), undefined);
      // Features of a PostGIS table: a query per page.
      return /^\/ogc\/collections\/[^/]+\/items/.test(path) ? 'expensive' : 'cheap';
    }
    case 97: // 'a': /api/...
      if (path.startsWith('/api/elevation/')) return method === 'POST' ? 'expensive' : 'cheap';
      if (path === '/api/upload' || path.startsWith('/api/upload/')) return method === 'POST' ? 'expensive' : 'cheap';
      if (path === '/api/spatial/query' || path.startsWith('/api/spatial/stats/')) return 'expensive';
      return 'cheap';
    case 109: // 'm': /mcp (tools render, query and sample)
      return path === '/mcp' && method === 'POST' ? 'expensive' : 'cheap';
    default:
      return 'cheap';
  }
}

function decodeId(raw: string): string {
  if (!raw.includes('%')) return raw;
  try {
    return decodeURIComponent(raw);
  } catch {
    return raw;
  }
}
