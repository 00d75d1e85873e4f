// How many tiles an expiry marks, as its answer reports (`tiles`): the tiles of every zoom of its band, down to
// the deepest zoom the source is served at, that are one of the given tiles, an ancestor of one, or a descendant
// of one. The index never lists them (a lookup walks up instead, area-times.ts), so they are counted here
// arithmetically: a tile nested in another given tile is dropped first (its area is counted with the outer one),
// then each zoom counts the distinct ancestors-or-selves of the tiles at or below it plus 4^dz descendants of
// each tile above it. Those two sets never overlap once nested tiles are gone, so the sum is exact.
import type { ZoomBand } from './area-times.js';
import { MAX_KEY_ZOOM, parentKey, zoomStart } from './tile-key.js';

/** Sorted keys split by zoom: index z holds zoom z's keys (a view, possibly empty). */
function byZoom(sorted: Float64Array): Float64Array[] {
  const out: Float64Array[] = [];
  let start = 0;
  for (let z = 0; z <= MAX_KEY_ZOOM; z++) {
    const next = z === MAX_KEY_ZOOM ? Infinity : zoomStart(z + 1);
    let end = start;
    while (end < sorted.length && sorted[end] < next) end++;
    out.push(sorted.subarray(start, end));
    start = end;
  }
  return out;
}

function has(sorted: Float64Array, key: number): boolean {
  let lo = 0;
  let hi = sorted.length - 1;
  while (lo <= hi) {
    const mid = (lo + hi) >>> 1;
    if (sorted[mid] < key) lo = mid + 1;
    else if (sorted[mid] > key) hi = mid - 1;
    else return true;
  }
  return false;
}

/** Each zoom's keys without those inside a coarser given key. */
function outermost(levels: Float64Array[]): Float64Array[] {
  const present = levels.map((l, z) => (l.length ? z : -1)).filter((z) => z >= 0);
  return levels.map((keys, z) => {
    const coarser = present.filter((a) => a < z);
    if (!coarser.length) return keys;
    const kept = new Float64Array(keys.length);
    let n = 0;
    for (const key of keys) {
      let inside = false;
      for (const a of coarser) {
        // The ancestor at zoom a: z - a parent steps, done as one division of the Z-order index.
        const ancestor = zoomStart(a) + Math.floor((key - zoomStart(z)) / 4 ** (z - a));
        if (has(levels[a], ancestor)) {
          inside = true;
          break;
        }
      }
      if (!inside) kept[n++] = key;
    }
    return kept.subarray(0, n);
  });
}

/**
 * The tiles marked by an expiry of `sorted` (ascending unique keys) over `band`, for a source served down to
 * `deepest`. A double: a world expiry over every zoom is about 2.3e13 tiles, still exact.
 */
export function markedTiles(sorted: Float64Array, band: ZoomBand, deepest: number): number {
  if (!sorted.length) return 0;
  const top = Math.min(band.max, deepest, MAX_KEY_ZOOM);
  const levels = outermost(byZoom(sorted));
  let total = 0;
  // Ancestors-or-selves, from the deepest zoom up: each zoom's own keys with the parents of the zoom below. They
  // are never more than the keys given, so two buffers of that length serve every zoom (a million-line list made
  // about 40 MB of short-lived arrays here when each zoom had arrays of its own).
  const carried = new Float64Array(sorted.length);
  let carriedLength = 0;
  const here = new Float64Array(sorted.length);
  for (let z = MAX_KEY_ZOOM; z >= band.min; z--) {
    const n = mergeInto(levels[z], carried, carriedLength, here);
    if (z <= top) total += n;
    // The parents of sorted keys of one zoom come out sorted (Z-order): repeats are neighbours.
    let m = 0;
    if (z > 0) {
      for (let i = 0; i < n; i++) {
        const p = parentKey(here[i], z);
        if (m === 0 || carried[m - 1] !== p) carried[m++] = p;
      }
    }
    carriedLength = m;
  }
  // Descendants of each coarser key at every zoom of the band below it.
  for (let a = 0; a < top; a++) {
    if (!levels[a].length) continue;
    for (let z = Math.max(a + 1, band.min); z <= top; z++) total += levels[a].length * 4 ** (z - a);
  }
  return total;
}

/** Sorted `a` and the first `bLength` of sorted `b` written into `out` as one sorted run; its length. */
function mergeInto(a: Float64Array, b: Float64Array, bLength: number, out: Float64Array): number {
  let i = 0;
  let j = 0;
  let n = 0;
  while (i < a.length && j < bLength) out[n++] = a[i] <= b[j] ? a[i++] : b[j++];
  while (i < a.length) out[n++] = a[i++];
  while (j < bLength) out[n++] = b[j++];
  return n;
}
