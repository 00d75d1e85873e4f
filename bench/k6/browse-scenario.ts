// The browse scenario: people looking at a city map, the way a k6 test of a rendering host would model them. Shared by
// bench/browse.bench.ts (Node, `BENCH=browse make bench`) and bench/k6/browse.ts (k6, against any deployment), so
// that the two measure the same thing. Plain TypeScript with no Node or k6 import: both runtimes load it.
//
// Each virtual user has a 1920x1080 screen, covered by 4 x 3 tiles of 512 px (every fourth user has a @2x screen).
// For each view it asks for the tiles it has not seen yet, 6 at a time (a browser's connections to one host), and
// the time from its first request to its last answer is the view's screen fill. Then it looks for a second and
// moves: one tile of pan (north, south, east or west, half of the moves) or one zoom level in or out (a quarter
// each), staying inside the data's area and zoom range. Six views per user.

export interface BrowseSettings {
  /** Tiles across and down one screen. */
  cols: number;
  rows: number;
  /** Concurrent requests of one user. */
  connections: number;
  /** Time a user looks at a full screen before moving. */
  thinkMs: number;
  /** Views per user (the first one included). */
  views: number;
  minZoom: number;
  maxZoom: number;
  startZoom: number;
  /** Every n-th user has a @2x screen (user n-1, 2n-1, ...). */
  hiDpiEvery: number;
  /** The area users browse, in tiles of `area.z`: x0, y0 of its north-west corner and its edge in tiles. */
  area: { z: number; x0: number; y0: number; size: number };
}

/** The defaults: central Paris, z12-z15, the area the bench's archive covers (bench/browse.bench.ts). */
export const BROWSE: BrowseSettings = {
  cols: 4,
  rows: 3,
  connections: 6,
  thinkMs: 1000,
  views: 6,
  minZoom: 12,
  maxZoom: 15,
  startZoom: 14,
  hiDpiEvery: 4,
  area: { z: 14, x0: 8272, y0: 5608, size: 64 },
};

/** One screen: the tile at its north-west corner, its zoom, and its pixel ratio. */
export interface View {
  z: number;
  x: number;
  y: number;
  scale: 1 | 2;
}

/** A small seeded generator (mulberry32): the same seed gives the same users in every run and in k6. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** The area at zoom z: first tile and edge in tiles (the area's corners scale with the zoom). */
export function areaAt(s: BrowseSettings, z: number): { x0: number; y0: number; size: number } {
  const f = 2 ** (z - s.area.z);
  return { x0: Math.floor(s.area.x0 * f), y0: Math.floor(s.area.y0 * f), size: Math.max(1, Math.floor(s.area.size * f)) };
}

function clampView(s: BrowseSettings, v: View): View {
  const a = areaAt(s, v.z);
  const x = Math.min(Math.max(v.x, a.x0), a.x0 + a.size - s.cols);
  const y = Math.min(Math.max(v.y, a.y0), a.y0 + a.size - s.rows);
  return { ...v, x, y };
}

/** User u's first view: a seeded place in the area at the start zoom. */
export function firstView(s: BrowseSettings, user: number, rnd: () => number): View {
  const a = areaAt(s, s.startZoom);
  const scale = (user + 1) % s.hiDpiEvery === 0 ? 2 : 1;
  const x = a.x0 + Math.floor(rnd() * (a.size - s.cols + 1));
  const y = a.y0 + Math.floor(rnd() * (a.size - s.rows + 1));
  return { z: s.startZoom, x, y, scale };
}

/** The move after a view: pan one tile (half of the moves) or zoom one level about the screen's centre. */
export function nextView(s: BrowseSettings, v: View, rnd: () => number): View {
  const r = rnd();
  let zoom = 0;
  if (r >= 0.5) zoom = r < 0.75 ? 1 : -1;
  if (v.z + zoom > s.maxZoom || v.z + zoom < s.minZoom) zoom = -zoom;
  // A single zoom level: every move is a pan.
  if (v.z + zoom > s.maxZoom || v.z + zoom < s.minZoom) zoom = 0;
  if (zoom === 0) {
    const d = Math.floor(rnd() * 4);
    const dx = d === 0 ? 1 : d === 1 ? -1 : 0;
    const dy = d === 2 ? 1 : d === 3 ? -1 : 0;
    const moved = clampView(s, { ...v, x: v.x + dx, y: v.y + dy });
    // At the area's edge the pan goes the other way.
    if (moved.x === v.x && moved.y === v.y) return clampView(s, { ...v, x: v.x - dx, y: v.y - dy });
    return moved;
  }
  const f = 2 ** zoom;
  const cx = (v.x + s.cols / 2) * f;
  const cy = (v.y + s.rows / 2) * f;
  return clampView(s, { ...v, z: v.z + zoom, x: Math.round(cx - s.cols / 2), y: Math.round(cy - s.rows / 2) });
}

/** Paths (below /styles/{style}/) of a view's tiles, rows from the top, as a map client orders them. */
export function viewTiles(s: BrowseSettings, v: View): string[] {
  const out: string[] = [];
  const suffix = v.scale === 2 ? '@2x' : '';
  for (let y = v.y; y < v.y + s.rows; y++) for (let x = v.x; x < v.x + s.cols; x++) out.push(`${v.z}/${x}/${y}${suffix}.png`);
  return out;
}

/** Every view of user u, in order: the whole walk is fixed by the seed and the user's number. */
export function userWalk(s: BrowseSettings, user: number, seed: number): View[] {
  const rnd = seededRandom(seed * 1000 + user + 1);
  const views = [firstView(s, user, rnd)];
  while (views.length < s.views) views.push(nextView(s, views[views.length - 1], rnd));
  return views;
}

/** Nearest-rank percentile of an ascending list. */
export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return NaN;
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1))];
}
