// The expiries this process knows (the `expiries` singleton, like `sharedCache`): applied from every batch that
// reaches the process, asked by every cache layer whether an entry is still fresh. A product depends on one or
// more sources (dependencies.ts); it is stale when one of them expired its area at or after the time it was made.
import { EventEmitter } from 'node:events';
import { ALL_ZOOMS, AreaTimes, type ZoomBand } from './area-times.js';
import type { ExpiryBatch } from './batch.js';

/** Batch ids remembered to drop a batch that arrives twice (IPC and Redis, or a journal replayed over). */
const SEEN_IDS = 10_000;

const bandKey = (b: ZoomBand) => `${b.min}-${b.max}`;

interface SourceExpiries {
  bands: Map<string, { band: ZoomBand; times: AreaTimes }>;
}

type Events = { batch: [ExpiryBatch] };

export class Expiries extends EventEmitter<Events> {
  private readonly bySource = new Map<string, SourceExpiries>();
  private readonly seen = new Set<string>();
  /** The time of each source's last expiry, whatever its area (products that are no tile compare with it). */
  private readonly latest = new Map<string, number>();
  /** Bound on the entries of one source's band before it is coarsened (`[cache] expiry_max_tiles`). */
  maxTiles = 4_000_000;

  /** No expiry known: every lookup answers 0 without work (the common case of a static service). */
  get empty(): boolean {
    return this.bySource.size === 0;
  }

  /** Entries held, over every source and band (a memory figure). */
  get tiles(): number {
    let n = 0;
    for (const s of this.bySource.values()) for (const b of s.bands.values()) n += b.times.size;
    return n;
  }

  /** Bytes the index's arrays hold, over every source and band (`expire_index_bytes`). */
  get bytes(): number {
    let n = 0;
    for (const s of this.bySource.values()) for (const b of s.bands.values()) n += b.times.bytes;
    return n;
  }

  /** Applies a batch once (false: this process had it already). Listeners hear every new batch. */
  apply(batch: ExpiryBatch): boolean {
    if (this.seen.has(batch.id)) return false;
    this.seen.add(batch.id);
    if (this.seen.size > SEEN_IDS) this.seen.delete(this.seen.values().next().value!);
    const band = batch.band ?? ALL_ZOOMS;
    for (const source of batch.sources) {
      this.latest.set(source, Math.max(batch.at, this.latest.get(source) ?? 0));
      let s = this.bySource.get(source);
      if (!s) this.bySource.set(source, (s = { bands: new Map() }));
      const k = bandKey(band);
      let b = s.bands.get(k);
      if (!b) s.bands.set(k, (b = { band, times: new AreaTimes() }));
      b.times.add(batch.tiles, batch.at);
      b.times.coarsen(this.maxTiles);
    }
    this.emit('batch', batch);
    return true;
  }

  /** The time of the last expiry of one of `sources` touching tile z/x/y's area (0: none). */
  expiredAt(sources: readonly string[], z: number, x: number, y: number): number {
    if (this.bySource.size === 0) return 0;
    let t = 0;
    for (const id of sources) {
      const s = this.bySource.get(id);
      if (!s) continue;
      for (const { band, times } of s.bands.values()) {
        if (z < band.min || z > band.max) continue;
        const at = times.expiredAt(z, x, y);
        if (at > t) t = at;
      }
    }
    return t;
  }

  /** Whether a product of `sources` at z/x/y made at `madeAt` (ms) is stale: an expiry came at or after it. */
  isStale(sources: readonly string[], z: number, x: number, y: number, madeAt: number): boolean {
    return this.bySource.size !== 0 && this.expiredAt(sources, z, x, y) >= madeAt;
  }

  /**
   * What the index holds, as the direct entries of each source and band: applied again (grouped by time into
   * batches), they rebuild the same lookups. The journal's compaction writes them instead of every batch.
   */
  *snapshot(): Generator<{ source: string; band: ZoomBand; keys: Float64Array; times: Float64Array }> {
    for (const [source, s] of this.bySource) for (const { band, times } of s.bands.values()) yield { source, band, ...times.directEntries() };
  }

  /** The time of the last expiry of any of `sources`, whatever area it touched (0: none). */
  lastAt(sources: readonly string[]): number {
    if (this.latest.size === 0) return 0;
    let t = 0;
    for (const id of sources) t = Math.max(t, this.latest.get(id) ?? 0);
    return t;
  }

  /** Forgets everything (tests; a process never forgets an expiry while it runs). */
  reset(): void {
    this.bySource.clear();
    this.seen.clear();
    this.latest.clear();
  }
}

export const expiries = new Expiries();
