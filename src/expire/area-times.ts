// The expiries of one source within one zoom band: for any tile, the time of the last expiry that touched its
// area. mod_tile's way, not an enumeration of cache entries: a cached product (a vector tile, a rendered tile at
// any zoom, scale or format, a hillshade tile) compares the time it was made with this time, and is stale when
// it is not newer. An expired tile covers every tile inside it (its descendants, looked up through their
// ancestors) and makes every tile around it partly changed (its ancestors, recorded as "within" entries).
import { KeyTimes } from './key-times.js';
import { MAX_KEY_ZOOM, keyZoom, parentKey, tileKey, zoomStart } from './tile-key.js';

/** Zooms of the products an expiry reaches (render_expired's --min-zoom and --max-zoom); bounds included. */
export interface ZoomBand {
  min: number;
  max: number;
}

export const ALL_ZOOMS: ZoomBand = { min: 0, max: Infinity };

/** Unique parents of sorted keys of one zoom, sorted (Z-order keeps them in order: no sort needed). */
function parentsOf(keys: Float64Array, z: number): Float64Array {
  const out = new Float64Array(keys.length);
  for (let i = 0; i < keys.length; i++) out[i] = parentKey(keys[i], z);
  return unique(out);
}

/** A sorted array without repeats (in place, returned as a view). */
export function unique(sorted: Float64Array): Float64Array {
  let n = 0;
  for (let i = 0; i < sorted.length; i++) if (i === 0 || sorted[i] !== sorted[n - 1]) sorted[n++] = sorted[i];
  return sorted.subarray(0, n);
}

/** Sorted keys split by zoom (sorted keys come zoom by zoom: each zoom's keys follow all of the zoom before). */
function byZoom(sorted: Float64Array): Map<number, Float64Array> {
  const out = new Map<number, Float64Array>();
  let start = 0;
  while (start < sorted.length) {
    const z = keyZoom(sorted[start]);
    const next = z + 1 > MAX_KEY_ZOOM ? Infinity : zoomStart(z + 1);
    let end = start;
    while (end < sorted.length && sorted[end] < next) end++;
    out.set(z, sorted.subarray(start, end));
    start = end;
  }
  return out;
}

export class AreaTimes {
  /** The whole tile's area changed. */
  private readonly direct = new KeyTimes();
  /** Part of the tile's area changed: it is an ancestor of a directly expired tile. */
  private readonly within = new KeyTimes();
  /** Bit z set: some direct entry has zoom z (a lookup asks only those zooms for ancestors). */
  private zoomMask = 0;

  get size(): number {
    return this.direct.size + this.within.size;
  }

  /** Records an expiry at `at` of the tiles `sorted` (ascending keys, no repeats, any mix of zooms). */
  add(sorted: Float64Array, at: number): void {
    if (!sorted.length) return;
    this.direct.addSorted(sorted, at);
    const levels = byZoom(sorted);
    for (const z of levels.keys()) this.zoomMask |= 2 ** z;
    // From the deepest zoom up: the parents of a zoom's tiles (direct or not) are partly changed.
    // Each zoom's parents fill a key range of their own below the zoom before: gathered, then merged in once.
    let carried: Float64Array | undefined;
    const parents: Float64Array[] = [];
    let total = 0;
    for (let z = Math.max(...levels.keys()); z > 0; z--) {
      const own = levels.get(z);
      const here = own && carried ? unique(mergeSorted(own, carried)) : (own ?? carried);
      if (!here?.length) continue;
      carried = parentsOf(here, z);
      parents.push(carried);
      total += carried.length;
    }
    const all = new Float64Array(total);
    let n = 0;
    for (const p of parents.reverse()) {
      all.set(p, n);
      n += p.length;
    }
    this.within.addSorted(all, at);
  }

  /** The time of the last expiry touching tile z/x/y's area (0: none). Tiles deeper than the keys' are read coarser. */
  expiredAt(z: number, x: number, y: number): number {
    if (z > MAX_KEY_ZOOM) {
      const shift = z - MAX_KEY_ZOOM;
      x = Math.floor(x / 2 ** shift);
      y = Math.floor(y / 2 ** shift);
      z = MAX_KEY_ZOOM;
    }
    const own = tileKey(z, x, y);
    let t = Math.max(this.direct.get(own), this.within.get(own));
    for (let a = 0; a < z; a++) {
      if (!(this.zoomMask & (2 ** a))) continue;
      const shift = z - a;
      const at = this.direct.get(tileKey(a, Math.floor(x / 2 ** shift), Math.floor(y / 2 ** shift)));
      if (at > t) t = at;
    }
    return t;
  }

  /**
   * Bounds the memory: while more than `maxTiles` entries are held, the deepest zoom's direct entries are replaced
   * by their parents (a coarser area, expired at the latest of their times). Lookups then find more tiles stale,
   * never fewer.
   */
  coarsen(maxTiles: number): void {
    while (this.size > maxTiles) {
      const { keys, times } = this.direct.entries();
      if (!keys.length) return;
      const deepest = keyZoom(keys[keys.length - 1]);
      if (deepest === 0) return;
      const first = zoomStart(deepest);
      let start = keys.length;
      while (start > 0 && keys[start - 1] >= first) start--;
      const moved = new Map<number, number>();
      for (let i = start; i < keys.length; i++) {
        const parent = parentKey(keys[i], deepest);
        moved.set(parent, Math.max(moved.get(parent) ?? 0, times[i]));
      }
      const kept = new Map<number, number>();
      for (let i = 0; i < start; i++) kept.set(keys[i], times[i]);
      for (const [k, t] of moved) kept.set(k, Math.max(kept.get(k) ?? 0, t));
      const outKeys = Float64Array.from(kept.keys()).sort();
      const outTimes = outKeys.map((k) => kept.get(k)!);
      this.direct.replace(outKeys, outTimes);
      this.zoomMask &= ~(2 ** deepest);
      this.zoomMask |= 2 ** (deepest - 1);
      // "Within" entries of the coarsened zoom are covered by their direct parents now.
      const w = this.within.entries();
      let end = w.keys.length;
      while (end > 0 && w.keys[end - 1] >= first) end--;
      this.within.replace(w.keys.slice(0, end), w.times.slice(0, end));
    }
  }
}

/** Two sorted arrays as one sorted array (repeats kept). */
export function mergeSorted(a: Float64Array, b: Float64Array): Float64Array {
  const out = new Float64Array(a.length + b.length);
  let i = 0;
  let j = 0;
  let n = 0;
  while (i < a.length && j < b.length) out[n++] = a[i] <= b[j] ? a[i++] : b[j++];
  while (i < a.length) out[n++] = a[i++];
  while (j < b.length) out[n++] = b[j++];
  return out;
}
