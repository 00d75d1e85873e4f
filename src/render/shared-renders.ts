// Renders in progress, by key, so that concurrent identical requests (the tiles of one metatile or batch, the same
// static map) wait for one render instead of each drawing it.
import type { CachedImage } from '../shared-cache/render-cache.js';
import { renderMetrics } from './metrics.js';
import type { RenderPriority } from './priority-queue.js';
import { RenderClass } from './render-class.js';
import { RenderError } from './renderer.js';

/** What one render produced: every image it made (a metatile makes several), and its phases in milliseconds. */
export interface Rendered {
  images: Map<string, CachedImage>;
  timing: Record<string, number>;
}

/** One render that concurrent identical requests share, and how many of them still wait for it. */
interface SharedRender {
  promise: Promise<Rendered>;
  /** Aborted when the last waiting request has gone: parts still queued are dropped. */
  abort: AbortController;
  waiters: number;
  /** Its queue class: the most urgent of its waiters' (a person joining a background re-render moves it up). */
  cls: RenderClass;
}

export class SharedRenders {
  private readonly inflight = new Map<string, SharedRender>();

  /** A render of `key` is under way. */
  has(key: string): boolean {
    return this.inflight.has(key);
  }

  /**
   * Runs `work` once for concurrent callers of the same key; counts failures for the metrics. A caller whose
   * request goes away stops waiting at once; when the last one has gone the work's signal is aborted, so parts
   * still queued are dropped (a frame already being drawn finishes and is cached), and a later request for the
   * same key starts afresh. `priority` is the caller's class: the work is handed the render's class, which a more
   * urgent caller joining later raises (the pool then moves the render up while it waits).
   */
  run(key: string, work: (signal: AbortSignal, cls: RenderClass) => Promise<Rendered>, styleId: string, signal: AbortSignal | undefined, priority: RenderPriority = 'interactive'): Promise<Rendered> {
    if (signal?.aborted) return Promise.reject(new RenderError('cancelled', 'the client went away'));
    let entry = this.inflight.get(key);
    if (entry) entry.cls.raise(priority);
    else {
      const abort = new AbortController();
      const created: SharedRender = { abort, waiters: 0, cls: new RenderClass(priority), promise: Promise.resolve(undefined as unknown as Rendered) };
      created.promise = work(abort.signal, created.cls)
        .catch((err: unknown) => {
          const e = err instanceof RenderError ? err : new RenderError('failed', (err as Error).message);
          if (e.reason !== 'cancelled') renderMetrics.countError(styleId, e.reason);
          throw e;
        })
        .finally(() => {
          if (this.inflight.get(key) === created) this.inflight.delete(key);
        });
      // Every waiter may have gone before it settles: its failure must not be an unhandled rejection.
      created.promise.catch(() => {});
      this.inflight.set(key, created);
      entry = created;
    }
    const e = entry;
    e.waiters++;
    if (!signal) return e.promise;
    return new Promise<Rendered>((resolve, reject) => {
      const onAbort = () => {
        if (--e.waiters === 0) {
          e.abort.abort();
          if (this.inflight.get(key) === e) this.inflight.delete(key);
        }
        reject(new RenderError('cancelled', 'the client went away'));
      };
      signal.addEventListener('abort', onAbort, { once: true });
      e.promise.then(
        (r) => {
          signal.removeEventListener('abort', onAbort);
          resolve(r);
        },
        (err: unknown) => {
          signal.removeEventListener('abort', onAbort);
          reject(err as Error);
        },
      );
    });
  }
}
