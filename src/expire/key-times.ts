// A map from tile keys to expiry times for millions of tiles: two sorted typed arrays (16 bytes a tile) with a
// small Map in front for the tiles of recent small batches, merged into the arrays once it grows. A JS Map of
// numbers costs about four times as much per entry, and a batch of a million tiles is merged in one sort.

/** Tiles kept in the Map before they are merged into the arrays. */
const PENDING_MAX = 32_768;

export class KeyTimes {
  private keys: Float64Array = new Float64Array(0);
  private times: Float64Array = new Float64Array(0);
  private readonly pending = new Map<number, number>();

  get size(): number {
    return this.keys.length + this.pending.size;
  }

  /** The time stored for `key`, 0 when there is none. */
  get(key: number): number {
    const p = this.pending.get(key) ?? 0;
    const keys = this.keys;
    let lo = 0;
    let hi = keys.length - 1;
    while (lo <= hi) {
      const mid = (lo + hi) >>> 1;
      const k = keys[mid];
      if (k < key) lo = mid + 1;
      else if (k > key) hi = mid - 1;
      else return Math.max(p, this.times[mid]);
    }
    return p;
  }

  /** Sets each key's time to `at` unless it holds a later one. `sorted` is ascending and without repeats. */
  addSorted(sorted: Float64Array, at: number): void {
    if (sorted.length + this.pending.size <= PENDING_MAX) {
      for (const k of sorted) if ((this.pending.get(k) ?? 0) < at) this.pending.set(k, at);
      if (this.pending.size < PENDING_MAX) return;
    } else {
      this.merge(sorted, new Float64Array(sorted.length).fill(at));
    }
    this.flushPending();
  }

  private flushPending(): void {
    if (!this.pending.size) return;
    const keys = Float64Array.from(this.pending.keys()).sort();
    const times = new Float64Array(keys.length);
    for (let i = 0; i < keys.length; i++) times[i] = this.pending.get(keys[i])!;
    this.pending.clear();
    this.merge(keys, times);
  }

  /** Merges sorted keys with their times into the arrays; a key in both keeps the later time. */
  private merge(keys: Float64Array, times: Float64Array): void {
    const a = this.keys;
    const at = this.times;
    const outKeys = new Float64Array(a.length + keys.length);
    const outTimes = new Float64Array(outKeys.length);
    let i = 0;
    let j = 0;
    let n = 0;
    while (i < a.length || j < keys.length) {
      if (j >= keys.length || (i < a.length && a[i] < keys[j])) {
        outKeys[n] = a[i];
        outTimes[n++] = at[i++];
      } else if (i >= a.length || keys[j] < a[i]) {
        outKeys[n] = keys[j];
        outTimes[n++] = times[j++];
      } else {
        outKeys[n] = a[i];
        outTimes[n++] = Math.max(at[i++], times[j++]);
      }
    }
    this.keys = outKeys.slice(0, n);
    this.times = outTimes.slice(0, n);
  }

  /** Every key and its time, in key order (the pending ones merged first). */
  entries(): { keys: Float64Array; times: Float64Array } {
    this.flushPending();
    return { keys: this.keys, times: this.times };
  }

  /** Replaces the whole content (after coarsening). */
  replace(keys: Float64Array, times: Float64Array): void {
    this.pending.clear();
    this.keys = keys;
    this.times = times;
  }
}
