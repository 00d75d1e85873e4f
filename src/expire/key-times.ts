// A map from tile keys to expiry times for millions of tiles, that also answers "the latest time of any key in
// [a, b)" (the expiry index asks that for a tile's descendants: with keys in Z-order within a zoom, the
// descendants of a tile at one deeper zoom are one key range).
//
// An entry is 12 bytes: its key (a double: keys of zoom 17 and deeper pass 2^32) and a Uint32 rank into a sorted
// table of the distinct times (most entries share their batch's time, so the table stays short). Ranks order as
// their times do, so the largest rank of a range is its latest time; the largest rank of every 64 entries, and of
// every 64 such blocks, lets a range of a million entries be read in a few hundred steps, and the first key of
// every block keeps a key's search within the CPU's cache but for its last block. A JS Map of numbers
// costs about four times as much per entry, and a Float64 time per entry a third more.
//
// Two levels, as a log-structured merge: a small one that each small batch is merged into (cost: the small
// level's size), and the large one, rebuilt once the small one passes PENDING_MAX or a large batch arrives.
// A rebuild allocates the result at its exact size, so the old arrays and the new ones are all it holds at once.

/** Entries of the small level before it is merged into the large one. */
const PENDING_MAX = 32_768;

/** Entries under one block maximum (a power of two), and blocks under one maximum of the second level. */
const BLOCK_BITS = 6;
const SUPER_BITS = 12;

/** One immutable sorted level: keys, ranks into its time table, and the maxima of its ranks by block. */
class Level {
  readonly blockMax: Uint32Array;
  readonly superMax: Uint32Array;
  /** The first key of each block. */
  readonly blockFirst: Float64Array;

  constructor(
    readonly keys: Float64Array,
    readonly ranks: Uint32Array,
    /** Distinct times, ascending: rank r stands for times[r]. */
    readonly times: Float64Array,
  ) {
    this.blockMax = maxima(ranks, BLOCK_BITS);
    this.superMax = maxima(ranks, SUPER_BITS);
    this.blockFirst = new Float64Array(this.blockMax.length);
    for (let b = 0; b < this.blockFirst.length; b++) this.blockFirst[b] = keys[b << BLOCK_BITS];
  }

  static readonly EMPTY = new Level(new Float64Array(0), new Uint32Array(0), new Float64Array(0));

  get length(): number {
    return this.keys.length;
  }

  /** The latest time held (0: none). */
  get latest(): number {
    return this.times.length ? this.times[this.times.length - 1] : 0;
  }

  get bytes(): number {
    return this.keys.byteLength + this.ranks.byteLength + this.times.byteLength + this.blockMax.byteLength + this.superMax.byteLength + this.blockFirst.byteLength;
  }

  /** The first index whose key is at least `key`. */
  lowerBound(key: number): number {
    // Searched first among the blocks' first keys (an array a 64th of the keys' size, which stays in the CPU's
    // cache), then within one block of 64 keys: a search over the keys themselves misses the cache at each step.
    const firsts = this.blockFirst;
    let lo = 0;
    let hi = firsts.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (firsts[mid] < key) lo = mid + 1;
      else hi = mid;
    }
    if (lo === 0) return 0;
    const keys = this.keys;
    hi = Math.min(lo << BLOCK_BITS, keys.length);
    lo = ((lo - 1) << BLOCK_BITS) + 1;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (keys[mid] < key) lo = mid + 1;
      else hi = mid;
    }
    return lo;
  }

  /** The time of `key`, 0 when it has none. */
  get(key: number): number {
    const i = this.lowerBound(key);
    return i < this.keys.length && this.keys[i] === key ? this.times[this.ranks[i]] : 0;
  }

  /** The latest time of the keys in [from, to), 0 when there is none. */
  rangeMax(from: number, to: number): number {
    const lo = this.lowerBound(from);
    if (lo >= this.keys.length || this.keys[lo] >= to) return 0;
    const hi = this.lowerBound(to);
    const ranks = this.ranks;
    const top = this.times.length - 1;
    let m = 0;
    let i = lo;
    // Single entries up to a block's start, whole blocks up to a second-level block's start, then the largest
    // steps that fit, back down to single entries at the end. The latest time of all ends the walk early.
    while (i < hi && i & ((1 << BLOCK_BITS) - 1) && m < top) m = Math.max(m, ranks[i++]);
    while (i + (1 << BLOCK_BITS) <= hi && i & ((1 << SUPER_BITS) - 1) && m < top) {
      m = Math.max(m, this.blockMax[i >>> BLOCK_BITS]);
      i += 1 << BLOCK_BITS;
    }
    while (i + (1 << SUPER_BITS) <= hi && m < top) {
      m = Math.max(m, this.superMax[i >>> SUPER_BITS]);
      i += 1 << SUPER_BITS;
    }
    while (i + (1 << BLOCK_BITS) <= hi && m < top) {
      m = Math.max(m, this.blockMax[i >>> BLOCK_BITS]);
      i += 1 << BLOCK_BITS;
    }
    while (i < hi && m < top) m = Math.max(m, ranks[i++]);
    return this.times[m];
  }
}

/** The largest value of each run of 2^bits values (the last run may be shorter). */
function maxima(values: Uint32Array, bits: number): Uint32Array {
  const out = new Uint32Array(Math.ceil(values.length / 2 ** bits));
  for (let i = 0; i < values.length; i++) {
    const b = i >>> bits;
    if (values[i] > out[b]) out[b] = values[i];
  }
  return out;
}

/** Sorted keys with their ranks into a time table (ranks undefined: every key has rank 0). */
interface Run {
  keys: Float64Array;
  ranks: Uint32Array | undefined;
  times: Float64Array;
}

/** Distinct values of two ascending tables as one, with where each old rank went. */
function unionTimes(a: Float64Array, b: Float64Array): { times: Float64Array; fromA: Uint32Array; fromB: Uint32Array } {
  const times = new Float64Array(a.length + b.length);
  const fromA = new Uint32Array(a.length);
  const fromB = new Uint32Array(b.length);
  let i = 0;
  let j = 0;
  let n = 0;
  while (i < a.length || j < b.length) {
    const t = j >= b.length || (i < a.length && a[i] <= b[j]) ? a[i] : b[j];
    if (i < a.length && a[i] === t) fromA[i++] = n;
    if (j < b.length && b[j] === t) fromB[j++] = n;
    times[n++] = t;
  }
  return { times: times.slice(0, n), fromA, fromB };
}

/** `times` without the times no rank points at, `ranks` renumbered to match (in place). */
function withoutUnused(ranks: Uint32Array, times: Float64Array): Float64Array {
  const used = new Uint8Array(times.length);
  for (let i = 0; i < ranks.length; i++) used[ranks[i]] = 1;
  const to = new Uint32Array(times.length);
  let n = 0;
  for (let r = 0; r < times.length; r++) if (used[r]) to[r] = n++;
  if (n === times.length) return times;
  for (let i = 0; i < ranks.length; i++) ranks[i] = to[ranks[i]];
  return times.filter((_, r) => used[r] === 1);
}

/** Two runs as one level; a key in both keeps the later time. Times no entry holds any more are dropped. */
function merge(a: Run, b: Run): Level {
  const { times, fromA, fromB } = unionTimes(a.times, b.times);
  const ak = a.keys;
  const bk = b.keys;
  // Counted first: the result is allocated once, at its size.
  let n = 0;
  for (let i = 0, j = 0; i < ak.length || j < bk.length; n++) {
    if (j >= bk.length || (i < ak.length && ak[i] < bk[j])) i++;
    else if (i >= ak.length || bk[j] < ak[i]) j++;
    else (i++, j++);
  }
  const keys = new Float64Array(n);
  const ranks = new Uint32Array(n);
  const rankA = (i: number) => fromA[a.ranks ? a.ranks[i] : 0];
  const rankB = (j: number) => fromB[b.ranks ? b.ranks[j] : 0];
  for (let i = 0, j = 0, o = 0; o < n; o++) {
    if (j >= bk.length || (i < ak.length && ak[i] < bk[j])) {
      keys[o] = ak[i];
      ranks[o] = rankA(i++);
    } else if (i >= ak.length || bk[j] < ak[i]) {
      keys[o] = bk[j];
      ranks[o] = rankB(j++);
    } else {
      keys[o] = ak[i];
      ranks[o] = Math.max(rankA(i++), rankB(j++));
    }
  }
  return new Level(keys, ranks, withoutUnused(ranks, times));
}

export class KeyTimes {
  private large: Level = Level.EMPTY;
  private small: Level = Level.EMPTY;

  get size(): number {
    return this.large.length + this.small.length;
  }

  /** Bytes of the arrays held (the index's own memory). */
  get bytes(): number {
    return this.large.bytes + this.small.bytes;
  }

  /** The latest time held (0: none): a lookup that found it need look no further. */
  get latest(): number {
    return Math.max(this.large.latest, this.small.latest);
  }

  /** The time stored for `key`, 0 when there is none. */
  get(key: number): number {
    return Math.max(this.large.get(key), this.small.get(key));
  }

  /** The latest time stored for a key in [from, to), 0 when there is none. */
  rangeMax(from: number, to: number): number {
    return Math.max(this.large.rangeMax(from, to), this.small.rangeMax(from, to));
  }

  /** Sets each key's time to `at` unless it holds a later one. `sorted` is ascending and without repeats. */
  addSorted(sorted: Float64Array, at: number): void {
    const run: Run = { keys: sorted, ranks: undefined, times: Float64Array.of(at) };
    if (sorted.length + this.small.length <= PENDING_MAX) {
      this.small = merge(this.small, run);
      if (this.small.length < PENDING_MAX) return;
      this.flushSmall();
    } else {
      this.large = merge(this.large, run);
    }
  }

  private flushSmall(): void {
    if (!this.small.length) return;
    this.large = merge(this.large, this.small);
    this.small = Level.EMPTY;
  }

  /** Every key and its time, in key order (the small level merged first). The times are made for the call. */
  entries(): { keys: Float64Array; times: Float64Array } {
    this.flushSmall();
    const { keys, ranks, times } = this.large;
    return { keys, times: Float64Array.from(ranks, (r) => times[r]) };
  }

  /**
   * Replaces the keys from index `start` on (in key order, after the small level is merged) by `keys`, which
   * sort after the keys kept (or among them: a key in both keeps the later time); each new key takes the time
   * of `ranks` in the current table. Coarsening's step: a zoom's entries replaced by their parents.
   */
  replaceTail(start: number, keys: Float64Array, ranks: Uint32Array): void {
    this.flushSmall();
    const l = this.large;
    this.large = merge({ keys: l.keys.subarray(0, start), ranks: l.ranks.subarray(0, start), times: l.times }, { keys, ranks, times: l.times });
  }

  /** The entries in key order with their ranks into `times` (the small level merged first). */
  levelView(): { keys: Float64Array; ranks: Uint32Array; times: Float64Array } {
    this.flushSmall();
    return { keys: this.large.keys, ranks: this.large.ranks, times: this.large.times };
  }
}
