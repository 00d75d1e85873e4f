// Purging the edge: each expiry batch this process applies is sent as PURGE requests to the edge caches named in
// `[cache] purge_urls` (Varnish with the xkey vmod), naming the batch's surrogate keys (surrogate-keys.ts) in
// `xkey` headers, or `xkey-softpurge` with `purge_soft`. It runs in one process per machine: the one holding the
// admin listener (the cluster's primary, or the single process), where every batch of the machine is applied
// whether it entered here or came from another machine; the edge in front of each machine is purged by that
// machine. A batch is bounded before it is sent (`purge_max_keys` per source, a few hundred keys a request), and
// a purge never holds an expiry up: requests go out after the batch is applied, one target's failure or silence
// (`purge_timeout_ms`) is logged and counted, and the next batch is sent all the same.
import { EventEmitter } from 'node:events';
import type { Logger } from '../log.js';
import type { ExpiryBatch } from './batch.js';
import type { Expiries } from './expiries.js';
import { purgeKeys } from './surrogate-keys.js';

export interface PurgeSettings {
  urls: readonly string[];
  timeoutMs: number;
  maxKeys: number;
  soft: boolean;
}

/** How one PURGE request ended: `ok` (2xx), `refused` (another status), `failed` (no answer: refused connection, timeout). */
export type PurgeOutcome = 'ok' | 'refused' | 'failed';

/** Counts for the metrics (telemetry/recorder.ts subscribes). */
export const purgeMetrics = new EventEmitter<{ request: [PurgeOutcome] }>();

/** Bytes of keys in one request's header: Varnish refuses request headers over 8 KB (`http_req_hdr_len`). */
const HEADER_BYTES = 6_000;

/** The keys in header values of at most HEADER_BYTES each. */
export function keyChunks(keys: readonly string[]): string[] {
  const out: string[] = [];
  let current = '';
  for (const k of keys) {
    if (current && current.length + 1 + k.length > HEADER_BYTES) {
      out.push(current);
      current = '';
    }
    current = current ? `${current} ${k}` : k;
  }
  if (current) out.push(current);
  return out;
}

/** The keys that purge every answer a batch reaches, over its sources. */
export function batchPurgeKeys(batch: ExpiryBatch, maxKeys: number): string[] {
  const out: string[] = [];
  for (const source of batch.sources) out.push(...purgeKeys(source, batch.tiles, batch.band, maxKeys));
  return out;
}

export class EdgePurger {
  /** Batches are sent one after another (a burst of expiries must not open a thousand connections). */
  private queue: Promise<void> = Promise.resolve();

  constructor(
    private readonly settings: PurgeSettings,
    private readonly log: Logger,
  ) {}

  /** Purges each batch `source` applies from now on. */
  follow(source: Expiries): void {
    if (this.settings.urls.length === 0) return;
    source.on('batch', (batch) => {
      this.queue = this.queue.then(() => this.purge(batch));
    });
  }

  /** Sends one batch's keys to every target; resolves when each has answered or failed (never rejects). */
  async purge(batch: ExpiryBatch): Promise<void> {
    const chunks = keyChunks(batchPurgeKeys(batch, this.settings.maxKeys));
    if (chunks.length === 0) return;
    const header = this.settings.soft ? 'xkey-softpurge' : 'xkey';
    await Promise.all(
      this.settings.urls.map(async (url) => {
        let purged = 0;
        for (const keys of chunks) {
          const outcome = await this.send(url, header, keys);
          purgeMetrics.emit('request', outcome.result);
          if (outcome.result !== 'ok') {
            this.log.warn({ target: url, batch: batch.id, status: outcome.status, err: outcome.err }, 'edge purge failed; the edge serves those tiles until its own TTL');
            return;
          }
          purged++;
        }
        this.log.info({ target: url, batch: batch.id, sources: batch.sources, requests: purged }, 'edge purged');
      }),
    );
  }

  private async send(url: string, header: string, keys: string): Promise<{ result: PurgeOutcome; status?: number; err?: string }> {
    try {
      const res = await fetch(url, { method: 'PURGE', headers: { [header]: keys }, signal: AbortSignal.timeout(this.settings.timeoutMs) });
      // The answer's body (Varnish's synthetic page) is not needed.
      await res.body?.cancel();
      return res.ok ? { result: 'ok', status: res.status } : { result: 'refused', status: res.status };
    } catch (err) {
      const e = err as Error;
      return { result: 'failed', err: e.name === 'TimeoutError' ? `no answer within ${this.settings.timeoutMs} ms` : e.message };
    }
  }
}
