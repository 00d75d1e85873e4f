// The shared range reader of one remote source. It owns what every provider needs and none should repeat:
// - at most `max_concurrent_reads` requests to the store at once (limiter.ts);
// - a timeout per request (`read_timeout_ms`), counted from when the read asks for a slot, so the time queued
//   behind other reads is inside it: a slow store answers 503 instead of holding the client;
// - bounded retries with exponential back-off and jitter on 5xx, throttling and network errors (`read_retries`);
// - ETag pinning: an archive generation reads every range with If-Match on the ETag its header came with, and
//   a different ETag fails as 'changed', so the PMTiles source re-opens the archive rather than mixing the old
//   header and directories with the new object's bytes;
// - the source's health: a read that fails for good marks it unreachable (503 with Retry-After, `/ready` names
//   it) and a background probe notices the store coming back, so the source recovers without a restart;
// - metrics: each request, its bytes and its failures, per source (metrics.ts).
import type { RangeResponse, Source } from 'pmtiles';
import { log } from '../../log.js';
import { Limiter } from './limiter.js';
import type { ObjectLocation } from '../../config/object-location.js';
import { storageMetrics } from './metrics.js';
import { StoreError, type ObjectStore, type RangeRead } from './store.js';

export interface ReadSettings {
  /** Milliseconds one request to the store may take, its wait for a slot and its body included. */
  timeoutMs: number;
  /** Further attempts after a retryable failure. */
  retries: number;
  /** Requests to the store in flight at once, for this source. */
  maxConcurrent: number;
}

/** Seconds a client is told to wait while the store of a source is unreachable. */
export const RETRY_AFTER_STORAGE = 5;
/** How often a source that lost its store tries it again without traffic. */
const PROBE_INTERVAL_MS = 2000;
const BACKOFF_BASE_MS = 100;
const BACKOFF_CAP_MS = 2000;

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

export class StorageChannel {
  private readonly limiter: Limiter;
  private unreachableSince: number | undefined;
  private lastProblem = '';
  private probe: NodeJS.Timeout | undefined;
  private closed = false;
  /** Before the source has opened, a failure is the open's error (one start-up line), not an outage to watch. */
  private live = false;

  constructor(
    readonly sourceId: string,
    readonly location: ObjectLocation,
    private readonly store: ObjectStore,
    private readonly settings: ReadSettings,
  ) {
    this.limiter = new Limiter(settings.maxConcurrent);
  }

  /** False while the last read failed for good and no read (or probe) has succeeded since. */
  get reachable(): boolean {
    return this.unreachableSince === undefined;
  }

  /** Why the store is unreachable, one line (the provider's reason). */
  get problem(): string {
    return this.lastProblem;
  }

  /**
   * One range, with retries and a timeout per attempt. Throws StoreError: 'changed' at once (retrying cannot
   * help), 'missing'/'denied'/'invalid' at once, 'unavailable' after the retries.
   */
  async read(offset: number, length: number, ifMatch: string | undefined): Promise<RangeRead> {
    for (let attempt = 0; ; attempt++) {
      try {
        const deadline = AbortSignal.timeout(this.settings.timeoutMs);
        const out = await this.limiter.run(() => this.attempt(offset, length, ifMatch, deadline), deadline).catch((err: unknown) => {
          // Still queued when the time ran out: as much a timeout as a store that did not answer.
          throw err instanceof StoreError || !deadline.aborted ? err : this.timedOut();
        });
        this.markReachable();
        // A store that ignores If-Match (s3rver, some S3-compatible servers) answers from a replaced object with its
        // new ETag: the ETag in the answer is what tells the two objects apart.
        if (ifMatch !== undefined && out.etag !== undefined && out.etag !== ifMatch) throw new StoreError('changed', `the object changed (ETag ${out.etag}, opened as ${ifMatch})`);
        return out;
      } catch (err) {
        const e = err instanceof StoreError ? err : new StoreError('unavailable', String((err as Error)?.message ?? err));
        const retryable = e.kind === 'unavailable' && !e.timedOut;
        if (retryable && attempt < this.settings.retries) {
          const ms = Math.min(BACKOFF_CAP_MS, BACKOFF_BASE_MS * 2 ** attempt);
          await sleep(ms / 2 + Math.random() * (ms / 2));
          continue;
        }
        if (e.kind !== 'changed') this.markUnreachable(e);
        throw e;
      }
    }
  }

  private timedOut(): StoreError {
    storageMetrics.emit('failure', { source: this.sourceId, provider: this.location.provider, kind: 'timeout' });
    return new StoreError('unavailable', `no answer within ${this.settings.timeoutMs} ms (read_timeout_ms)`, false, true);
  }

  /** One request to the store, aborted by `timeout` (which started before the wait for a slot). */
  private async attempt(offset: number, length: number, ifMatch: string | undefined, timeout: AbortSignal): Promise<RangeRead> {
    const provider = this.location.provider;
    try {
      const out = await this.store.read(offset, length, timeout, ifMatch);
      storageMetrics.emit('read', { source: this.sourceId, provider, bytes: out.data.byteLength });
      return out;
    } catch (err) {
      if (timeout.aborted) throw this.timedOut();
      const e = err instanceof StoreError ? err : new StoreError('unavailable', String((err as Error)?.message ?? err));
      storageMetrics.emit('failure', { source: this.sourceId, provider, kind: e.kind });
      throw e;
    }
  }

  private markReachable(): void {
    if (this.unreachableSince === undefined) return;
    log.info(`source "${this.sourceId}": storage at ${this.location.url} answers again`);
    this.unreachableSince = undefined;
    this.lastProblem = '';
    clearTimeout(this.probe);
    this.probe = undefined;
  }

  /** The source opened: from now on a failed read is an outage (logged, readiness told, probed). */
  activate(): void {
    this.live = true;
  }

  private markUnreachable(e: StoreError): void {
    if (!this.live) return;
    this.lastProblem = e.reason;
    if (this.unreachableSince !== undefined || this.closed) return;
    this.unreachableSince = Date.now();
    log.warn(`source "${this.sourceId}": storage at ${this.location.url} failed: ${e.reason}`);
    this.scheduleProbe();
  }

  private scheduleProbe(): void {
    if (this.closed || this.probe) return;
    this.probe = setTimeout(() => {
      this.probe = undefined;
      // One byte, no ETag condition: the question is only whether the store answers for this object.
      this.read(0, 1, undefined).catch(() => this.scheduleProbe());
    }, PROBE_INTERVAL_MS);
    this.probe.unref();
  }

  close(): void {
    this.closed = true;
    clearTimeout(this.probe);
    this.store.close();
  }
}

/**
 * A pmtiles `Source` for one generation of an archive: every range it reads must come from the object with
 * the ETag of the generation's first read (the header). The pmtiles package passes the header's ETag with each
 * read too; both say the same, and a mismatch (the channel's check) throws StoreError 'changed', which the package
 * does not catch.
 */
export class PinnedSource implements Source {
  private etag: string | undefined;

  constructor(
    private readonly channel: StorageChannel,
    /** Distinguishes generations in the pmtiles caches. */
    private readonly key: string,
  ) {}

  getKey(): string {
    return this.key;
  }

  /** The ETag this generation is pinned to (undefined before the first read, or for a store without ETags). */
  get pinnedEtag(): string | undefined {
    return this.etag;
  }

  async getBytes(offset: number, length: number, _signal?: AbortSignal, etag?: string): Promise<RangeResponse> {
    const expected = this.etag ?? etag;
    // The channel throws StoreError 'changed' when the answer's ETag is not the expected one.
    const out = await this.channel.read(offset, length, expected);
    if (expected === undefined && this.etag === undefined) this.etag = out.etag;
    const { data } = out;
    return { data: data.buffer.slice(data.byteOffset, data.byteOffset + data.byteLength) as ArrayBuffer, etag: this.etag };
  }
}
