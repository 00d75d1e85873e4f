// Which of the source tiles a renderer page holds an expiry has reached since the page last asked. A page keeps
// the tiles it parsed (MapLibre's tile caches) for as long as its style stays loaded, so after an expiry it must
// drop or reload the tiles whose data changed before drawing a re-render, else it draws the old data. Loading the
// whole style again does that too, but refetches and re-parses every tile, sprite and glyph of the page (the
// four-user browse drew 2.5x the CPU per answer that way): here the page lists what it holds and reloads only the
// tiles this answer names.
//
// The question travels as a resource request of the page (local-server.ts) with the list in its path, never
// reaching the app's routes: the render pool's fetcher (pool-keeper.ts) answers it from this process's expiries.
import type { AppState } from '../state/app-state.js';
import { sourceDependencies, styleDependencies } from '../expire/dependencies.js';
import { Freshness } from '../serve/freshness.js';
import { expiries } from '../expire/expiries.js';
import type { Resource, ResourceFetcher } from './renderer.js';
import { EXPIRED_TILES_PATH } from './resources.js';

/** What a page asks: the tiles it holds per source, as their URL template and [z, x, y] each. */
export interface ExpiredTilesQuestion {
  /** The style's id: a template naming no source of ours is checked against every source the style draws. */
  style: string;
  /** The last expiry the page knew of when it last asked (0: none); expiries at or after it count. */
  since: number;
  sources: { template: string; tiles: [number, number, number][] }[];
}

/** For each source of the question, the indexes of its tiles that an expiry reached. */
export interface ExpiredTilesAnswer {
  stale: number[][];
}

/** A tile template of the app's data routes: `/data/{source}/{z}/...`, or a terrain product's `/data/{source}/hillshade/{z}/...`. */
const DATA_TILE = /\/data\/([^/?]+)\/(?:(hillshade|contours)\/)?\{z\}\//;

/**
 * The source id a tile template of the page names (as a route names it: a source, a composite, a terrain product),
 * and whether its tiles read their neighbours (terrain products); undefined when it names no source of ours.
 */
function templateSource(template: string): { id: string; neighbours: boolean } | undefined {
  const m = DATA_TILE.exec(template);
  if (!m) return undefined;
  let id: string;
  try {
    id = decodeURIComponent(m[1]);
  } catch {
    return undefined;
  }
  return { id: m[2] ? `${id}.${m[2]}` : id, neighbours: m[2] !== undefined };
}

/** The answer to a page's question, from this process's expiries. */
export function expiredTiles(state: AppState, q: ExpiredTilesQuestion): ExpiredTilesAnswer {
  const stale: number[][] = [];
  // Freshness compares with the time a product was made; `since` plays that part (an expiry at 0 is none).
  const madeAt = Math.max(1, q.since);
  const style = state.styles.get(q.style);
  for (const s of q.sources) {
    const found = templateSource(s.template);
    const ids = found ? [found.id] : style ? [...styleDependencies(state, style)] : [];
    const neighbours = found?.neighbours ?? false;
    const out: number[] = [];
    // Nothing to look up unless one of the sources expired since the page last asked.
    const sources = ids.flatMap((id) => sourceDependencies(state, id));
    if (!expiries.empty && expiries.lastAt(sources) >= madeAt) {
      for (let i = 0; i < s.tiles.length; i++) {
        const [z, x, y] = s.tiles[i];
        if (ids.some((id) => !new Freshness(state, id, { z, x, y }, neighbours).fresh(madeAt))) out.push(i);
      }
    }
    stale.push(out);
  }
  return { stale };
}

/** Whether a value is a well-formed question (it comes from a page: checked, never trusted). */
function isQuestion(v: unknown): v is ExpiredTilesQuestion {
  if (typeof v !== 'object' || v === null) return false;
  const q = v as Partial<ExpiredTilesQuestion>;
  return (
    typeof q.style === 'string' &&
    typeof q.since === 'number' &&
    Array.isArray(q.sources) &&
    q.sources.every(
      (s) => typeof s?.template === 'string' && Array.isArray(s.tiles) && s.tiles.every((t) => Array.isArray(t) && t.length === 3 && t.every((n) => Number.isInteger(n) && n >= 0) && t[1] < 2 ** t[0] && t[2] < 2 ** t[0]),
    )
  );
}

/** `fetch` answering the question itself (from `state()`), and every other resource as before. */
export function withExpiredTiles(fetch: ResourceFetcher, state: () => AppState | undefined): ResourceFetcher {
  const prefix = `${EXPIRED_TILES_PATH}?`;
  return async (path, base): Promise<Resource> => {
    if (!path.startsWith(prefix)) return fetch(path, base);
    const current = state();
    let q: unknown;
    try {
      q = JSON.parse(path.slice(prefix.length));
    } catch {
      q = undefined;
    }
    if (!current || !isQuestion(q)) return { status: 400, contentType: 'text/plain', body: Buffer.from('malformed expired-tiles question') };
    return { status: 200, contentType: 'application/json', body: Buffer.from(JSON.stringify(expiredTiles(current, q))) };
  };
}
