// The expiries of one source within one zoom band: for any tile, the time of the last expiry that touched its
// area. mod_tile's way, not an enumeration of cache entries: a cached product (a vector tile, a rendered tile at
// any zoom, scale or format, a hillshade tile) compares the time it was made with this time, and is stale when
// it is not newer. An expired tile covers every tile inside it (its descendants, looked up through their
// ancestors) and makes every tile around it partly changed (its ancestors, looked up through their descendants).
//
// Only the expired tiles are held (12 bytes each, key-times.ts). A lookup asks, for each zoom that holds
// entries (zoomMask), the one key of the tile's ancestor there, or, for a deeper zoom, the one key range of its
// descendants there (keys run zoom by zoom, in Z-order within a zoom: tile-key.ts). Holding the ancestors
// instead ("within" entries) cost 2.6 entries per listed tile for an osm2pgsql list with a fifth of its tiles
// scattered (each brings about 15 ancestors of its own), 41 MB a process for a million lines against 12 now.
import { KeyTimes } from './key-times.js';
import { MAX_KEY_ZOOM, keyZoom, parentKey, tileKey, zoomStart } from './tile-key.js';

/** Zooms of the products an expiry reaches (render_expired's --min-zoom and --max-zoom); bounds included. */
export interface ZoomBand {
  min: number;
  max: number;
}

export const ALL_ZOOMS: ZoomBand = { min: 0, max: Infinity };

/** A sorted array without repeats (in place, returned as a view). */
export function unique(sorted: Float64Array): Float64Array {
  let n = 0;
  for (let i = 0; i < sorted.length; i++) if (i === 0 || sorted[i] !== sorted[n - 1]) sorted[n++] = sorted[i];
  return sorted.subarray(0, n);
}

export class AreaTimes {
  /** The expired tiles: the whole tile's area changed. */
  private readonly direct = new KeyTimes();
  /** Bit z set: some entry has zoom z (a lookup asks only those zooms). */
  private zoomMask = 0;

  get size(): number {
    return this.direct.size;
  }

  /** Bytes of the arrays held. */
  get bytes(): number {
    return this.direct.bytes;
  }

  /** Records an expiry at `at` of the tiles `sorted` (ascending keys, no repeats, any mix of zooms). */
  add(sorted: Float64Array, at: number): void {
    if (!sorted.length) return;
    this.direct.addSorted(sorted, at);
    // Keys run zoom by zoom: one step per zoom present.
    for (let i = 0; i < sorted.length; ) {
      const z = keyZoom(sorted[i]);
      this.zoomMask |= 1 << z;
      if (z === MAX_KEY_ZOOM) break;
      i = lowerBound(sorted, zoomStart(z + 1), i);
    }
  }

  /** The time of the last expiry touching tile z/x/y's area (0: none). Tiles deeper than the keys' are read coarser. */
  expiredAt(z: number, x: number, y: number): number {
    if (z > MAX_KEY_ZOOM) {
      const shift = z - MAX_KEY_ZOOM;
      x = Math.floor(x / 2 ** shift);
      y = Math.floor(y / 2 ** shift);
      z = MAX_KEY_ZOOM;
    }
    const mask = this.zoomMask;
    const latest = this.direct.latest;
    // The tile's place within its zoom (its Z-order index): an ancestor's is it divided by 4 per zoom up, the
    // first descendant's it times 4 per zoom down. Most entries share a few times: the latest one ends the search.
    const place = tileKey(z, x, y) - zoomStart(z);
    let t = 0;
    for (let a = 0; a <= z && t < latest; a++) {
      if (!(mask & (1 << a))) continue;
      const at = this.direct.get(zoomStart(a) + Math.floor(place / 4 ** (z - a)));
      if (at > t) t = at;
    }
    for (let d = z + 1; d <= MAX_KEY_ZOOM && mask >>> d && t < latest; d++) {
      if (!(mask & (1 << d))) continue;
      const span = 4 ** (d - z);
      const first = zoomStart(d) + place * span;
      const at = this.direct.rangeMax(first, first + span);
      if (at > t) t = at;
    }
    return t;
  }

  /** The expired tiles and their times, in key order. */
  directEntries(): { keys: Float64Array; times: Float64Array } {
    return this.direct.entries();
  }

  /**
   * Bounds the memory: while more than `maxTiles` entries are held, the deepest zoom's entries are replaced by
   * their parents (a coarser area, expired at the latest of their times). Lookups then find more tiles stale,
   * never fewer, and never at an earlier time.
   */
  coarsen(maxTiles: number): void {
    while (this.size > maxTiles) {
      const { keys, ranks } = this.direct.levelView();
      if (!keys.length) return;
      const deepest = keyZoom(keys[keys.length - 1]);
      if (deepest === 0) return;
      const start = lowerBound(keys, zoomStart(deepest), 0);
      // Parents of sorted keys of one zoom come out sorted (Z-order): repeats are neighbours.
      const parents = new Float64Array(keys.length - start);
      const parentRanks = new Uint32Array(parents.length);
      let n = 0;
      for (let i = start; i < keys.length; i++) {
        const p = parentKey(keys[i], deepest);
        if (n > 0 && parents[n - 1] === p) parentRanks[n - 1] = Math.max(parentRanks[n - 1], ranks[i]);
        else {
          parents[n] = p;
          parentRanks[n++] = ranks[i];
        }
      }
      this.direct.replaceTail(start, parents.subarray(0, n), parentRanks.subarray(0, n));
      this.zoomMask &= ~(1 << deepest);
      this.zoomMask |= 1 << (deepest - 1);
    }
  }
}

/** The first index from `from` on whose key is at least `key`. */
function lowerBound(sorted: Float64Array, key: number, from: number): number {
  let lo = from;
  let hi = sorted.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (sorted[mid] < key) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

