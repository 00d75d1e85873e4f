// Users of the live bench (bench/live.bench.ts): the browse scenario of bench/k6/browse-scenario.ts over the
// Dortmund city tile, each screen filled with the tiles the user has not got, then re-asked every `pollMs` while
// the user looks at it (as MapLibre's refreshExpiredTiles re-asks a tile whose short max-age has passed: the
// answers of a stale tile carry one). Each answer is sorted by what the server did: a stale answer
// (`Cache-Status: ...; fwd=stale`), a render the user waited for (a Server-Timing with render phases), or a
// cached copy. The freshness lag is measured per tile on screen that a commit touched, from the commit to the
// first answer made after it.
import http from 'node:http';
import { BROWSE, userWalk, viewTiles, type BrowseSettings } from './k6/browse-scenario.js';
import { serverTimings } from './lib.js';
import type { Commit } from './live-city.js';

/** z15-z17 over the city tile (4 x 4 tiles at z15, 16 x 16 at z17), starting at z16. */
export function cityBrowse(city: { z: number; x: number; y: number }, thinkMs: number): BrowseSettings {
  return { ...BROWSE, thinkMs, views: 10_000, minZoom: 15, maxZoom: 17, startZoom: 16, area: { z: city.z, x0: city.x, y0: city.y, size: 1 } };
}

/** The zooms the users see: the writer computes the tiles each commit touched at these. */
export const zoomsOf = (s: BrowseSettings) => Array.from({ length: s.maxZoom - s.minZoom + 1 }, (_, i) => s.minZoom + i);

export interface Answer {
  status: number;
  ms: number;
  /** Date.now() when the answer ended. */
  end: number;
  stale: boolean;
  /** Made by a render while this request waited. */
  rendered: boolean;
  etag: string | undefined;
}

function get(agent: http.Agent, url: string): Promise<Answer> {
  const t = performance.now();
  return new Promise((resolve) => {
    const failed = () => resolve({ status: 0, ms: performance.now() - t, end: Date.now(), stale: false, rendered: false, etag: undefined });
    const req = http.get(url, { agent, timeout: 120_000 }, (res) => {
      res.resume();
      res.on('end', () => {
        const cs = res.headers['cache-status'];
        const stale = /fwd=stale/.test(Array.isArray(cs) ? cs.join(',') : (cs ?? ''));
        resolve({
          status: res.statusCode ?? 0,
          ms: performance.now() - t,
          end: Date.now(),
          stale,
          rendered: !stale && serverTimings(res.headers['server-timing']) !== undefined,
          etag: typeof res.headers.etag === 'string' ? res.headers.etag : undefined,
        });
      });
      res.on('error', failed);
    });
    req.on('timeout', () => req.destroy(new Error('timed out')));
    req.on('error', failed);
  });
}

/** What the users of one run saw. */
export interface BrowseRecord {
  fills: number[];
  /** Every answer's time (fills and polls). */
  tiles: number[];
  answers: number;
  errors: number;
  stale: number;
  /** Renders the users waited for, and those among them of a tile the user had an answer for before a commit's box touched it. */
  rendered: number;
  waitedExpired: number;
  /** Renders waited for on a tile the user had an answer for before any commit (the server may expire more than the rows' own tiles). */
  waitedAfterCommit: number;
  /** Failed answers by status (0: no answer). */
  statuses: Record<number, number>;
  /** Freshness lags (ms) of the (commit, tile on screen) pairs that closed; pairs whose tile left the screen first. */
  lags: number[];
  leftScreen: number;
  distinct: Set<string>;
  /** Path -> the ETag of its last answer. */
  etags: Map<string, string | undefined>;
}

export const emptyRecord = (): BrowseRecord => ({ fills: [], tiles: [], answers: 0, errors: 0, stale: 0, rendered: 0, waitedExpired: 0, waitedAfterCommit: 0, statuses: {}, lags: [], leftScreen: 0, distinct: new Set(), etags: new Map() });

/** The tile of a path below /styles/{id}/: `z/x/y`, without the scale and format. */
const tileOf = (p: string) => p.replace(/(@2x)?\.png$/, '');

/**
 * One user: walks views until `until` (Date.now()), fills each screen with the tiles it has not got, then
 * re-asks the screen every `pollMs` for the think time (0: only looks). `commits` grows while it runs (the writer's); the user
 * opens a lag for each tile on its screen that a new commit touched and closes it with the first fresh answer
 * (not stale, and rendered now, or with an ETag other than the one the tile had at the commit, or after a stale one).
 */
export async function browseUser(base: string, style: string, s: BrowseSettings, u: number, seed: number, until: number, pollMs: number, commits: Commit[], rec: BrowseRecord): Promise<void> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: s.connections });
  /** Tile -> the last answer's ETag and time. */
  const have = new Map<string, { etag: string | undefined; end: number }>();
  /** Tile -> commits not yet seen fresh: the commit's time and the tile's ETag then. */
  const open = new Map<string, { at: number; etag: string | undefined; staleSeen: boolean }[]>();
  let screen = new Set<string>();
  let commitsSeen = 0;
  const noteCommits = () => {
    for (; commitsSeen < commits.length; commitsSeen++) {
      const c = commits[commitsSeen];
      for (const t of screen) {
        // A tile not answered yet is being filled: its first answer may predate the commit, nothing to compare with.
        if (!c.tiles.has(t) || !have.has(t)) continue;
        const list = open.get(t) ?? [];
        list.push({ at: c.at, etag: have.get(t)?.etag, staleSeen: false });
        open.set(t, list);
      }
    }
  };
  const touchedSince = (t: string, since: number) => commits.some((c) => c.at > since && c.tiles.has(t));
  const ask = async (paths: string[]) => {
    let next = 0;
    await Promise.all(
      Array.from({ length: Math.min(s.connections, paths.length) }, async () => {
        while (next < paths.length) {
          const p = paths[next++];
          const t = tileOf(p);
          const a = await get(agent, `${base}/styles/${style}/${p}`);
          rec.answers++;
          rec.tiles.push(a.ms);
          rec.distinct.add(p);
          if (a.status !== 200) {
            rec.errors++;
            rec.statuses[a.status] = (rec.statuses[a.status] ?? 0) + 1;
            continue;
          }
          noteCommits();
          const before = have.get(t);
          if (a.stale) rec.stale++;
          if (a.rendered) {
            rec.rendered++;
            if (before && touchedSince(t, before.end)) rec.waitedExpired++;
            if (before && commits.some((c) => c.at > before.end)) rec.waitedAfterCommit++;
          }
          const pending = open.get(t);
          if (pending && a.stale) for (const o of pending) o.staleSeen = true;
          if (pending && !a.stale) {
            // Made after the commit: drawn now, other bytes, or no longer marked stale after the server said it was.
            const still = pending.filter((o) => !(a.rendered || a.etag !== o.etag || o.staleSeen));
            for (const o of pending) if (!still.includes(o)) rec.lags.push(a.end - o.at);
            if (still.length) open.set(t, still);
            else open.delete(t);
          }
          have.set(t, { etag: a.etag, end: a.end });
          rec.etags.set(p, a.etag);
        }
      }),
    );
  };
  const walk = userWalk(s, u, seed);
  for (let i = 0; i < walk.length && Date.now() < until; i++) {
    const paths = viewTiles(s, walk[i]);
    noteCommits();
    const next = new Set(paths.map(tileOf));
    for (const [t, list] of open) {
      if (next.has(t)) continue;
      rec.leftScreen += list.length;
      open.delete(t);
    }
    screen = next;
    const missing = paths.filter((p) => !have.has(tileOf(p)));
    if (missing.length) {
      const started = performance.now();
      await ask(missing);
      rec.fills.push(performance.now() - started);
    }
    const leave = Date.now() + s.thinkMs;
    if (pollMs === 0 && i < walk.length - 1) await new Promise((r) => setTimeout(r, s.thinkMs));
    while (pollMs > 0 && Date.now() < Math.min(leave, until)) {
      await new Promise((r) => setTimeout(r, Math.min(pollMs, Math.max(0, leave - Date.now()))));
      if (Date.now() >= until) break;
      await ask(paths);
    }
  }
  for (const list of open.values()) rec.leftScreen += list.length;
  agent.destroy();
}

