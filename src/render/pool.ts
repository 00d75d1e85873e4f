// The render pool of one HTTP process: Piscina worker threads (entry workers/render.ts), one renderer each.
// The pool bounds the queue (full: overload, 503 with Retry-After), answers the threads' resource requests
// in-process, enforces the render time limit as a backstop to the thread's own (a thread stuck past it has its
// browser killed, and is ended if it still does not answer), retries a render once when its renderer crashed
// under it, and closes every browser it started.
import { randomBytes } from 'node:crypto';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { BroadcastChannel, MessageChannel } from 'node:worker_threads';
import { Piscina } from 'piscina';
import type { GlStack } from './backends/gl-stack.js';
import { PriorityQueue, type RenderPriority } from './priority-queue.js';
import type { RenderClass } from './render-class.js';
import { renderMetrics } from './metrics.js';
import { killMarked } from './processes.js';
import { RenderError, type BackendName, type Frame, type RenderedFrame, type RendererEvent, type ResourceFetcher, type StyleRef } from './renderer.js';
import { threadMarkerPrefix, type ControlMessage, type PoolMessage, type ThreadConfig, type ThreadMessage, type ThreadResult, type ThreadTask } from './thread.js';

export interface PoolOptions {
  backend: BackendName;
  threads: number;
  /** Concurrent frames per thread (Chromium pages per browser). */
  pages: number;
  timeoutMs: number;
  maxQueue: number;
  /** Longest wait for a renderer (render.queue_timeout_ms); then the render fails ('queue_timeout'). */
  queueTimeoutMs: number;
  maxRenders: number;
  maxFrame: number;
  chromiumPath: string | undefined;
  flatExtrusions: boolean;
  /** Chromium: the GL stack (gl-stack.ts). */
  gl?: GlStack;
  /** Answers the threads' resource requests (in-process, src/render/resources.ts). */
  fetch: ResourceFetcher;
  onThreadError?: (err: Error) => void;
  /** What happened to the threads' renderers (replaced, recycled, failed to start), to log and count. */
  onEvent?: (e: RendererEvent, threadId: number) => void;
  /**
   * Keep one renderer for interactive renders when background work (expired, bulk) could take them all; false only
   * where no one asks interactively (`tileserver-ts seed`). Default true.
   */
  reserveInteractive?: boolean;
}

/** A render waiting for a free renderer. */
interface Waiter {
  grant: () => void;
  fail: (err: RenderError) => void;
}

/** Per render: what the caller may cancel with, and hear about. */
export interface RenderCall {
  /** Aborted when no one wants the render any more: a waiting render is dropped, one already drawn finishes. */
  cancel?: AbortSignal;
  /** Who asked (the client's address): waiting renders are handed renderers in turns per client (fair-queue.ts). */
  client?: string;
  /** Its class in the queue (priority-queue.ts): interactive (default), expired (a re-render), bulk (seeding). */
  priority?: RenderPriority;
  /** The class of a render other requests may join (render-class.ts): overrides `priority`, and a raise while it waits moves it up. */
  shared?: RenderClass;
  /** Called when a renderer begins the frame (after any browser start, page replacement or style load): the frame's time limit starts then. */
  onStart?: () => void;
  /** The frame's time limit when not render.timeout_ms (a bulk frame of many tiles gets more: service.ts). */
  timeoutMs?: number;
  /** The longest wait for a renderer when not render.queue_timeout_ms (a bulk frame waits behind bulk frames). */
  queueTimeoutMs?: number;
}

/** A task as the pool builds it; the port is added per run. */
type TaskWithoutPort = ThreadTask extends infer T ? (T extends ThreadTask ? Omit<T, 'port' | 'cancelled'> : never) : never;

/**
 * Time a thread gets beyond the render limit before the pool terminates it: enough to start a browser and load
 * a style (which the frame limit does not count); the thread's own limit ends a hung frame well before.
 */
const BACKSTOP_GRACE_MS = 90_000;
/** Time a thread gets to answer once the backstop killed its browser, before the pool ends the thread. */
const THREAD_END_GRACE_MS = 10_000;

/** The built thread entry: beside the bundle (dist/cli.js), or dist/ when running from the sources. */
export function workerFile(): string {
  const candidates = [new URL('./workers/render.js', import.meta.url), new URL('../../dist/workers/render.js', import.meta.url)];
  const found = candidates.map((u) => fileURLToPath(u)).find((f) => existsSync(f));
  if (!found) throw new RenderError('unavailable', 'the render thread entry dist/workers/render.js is missing (run the build)');
  return found;
}

export class RenderPool {
  private readonly piscina: Piscina<ThreadTask, ThreadResult>;
  private readonly markerPrefix = `p${process.pid}-${randomBytes(4).toString('hex')}`;
  private readonly control: BroadcastChannel;
  private closed = false;
  /**
   * Renders handed to Piscina at most: one per renderer. The rest wait here, in order, where a wait can be
   * bounded in time and a render whose client left can be taken out (Piscina's own queue can do neither
   * without ending a thread).
   */
  private readonly capacity: number;
  private running = 0;
  private readonly waiting: PriorityQueue<Waiter>;
  /** Renders done, failed and dropped since the pool started (for /ping-style reports and the tests). */
  readonly counts = { rendered: 0, failed: 0, dropped: 0, expired: 0, retried: 0 };

  constructor(private readonly o: PoolOptions) {
    this.capacity = o.threads * o.pages;
    this.waiting = new PriorityQueue<Waiter>(o.reserveInteractive ?? true);
    const cfg: ThreadConfig = {
      backend: o.backend,
      pages: o.pages,
      maxRenders: o.maxRenders,
      maxFrame: o.maxFrame,
      chromiumPath: o.chromiumPath,
      flatExtrusions: o.flatExtrusions,
      gl: o.gl,
      markerPrefix: this.markerPrefix,
      controlChannel: `tileserver-ts-render-${this.markerPrefix}`,
    };
    this.control = new BroadcastChannel(cfg.controlChannel);
    this.control.unref();
    this.control.onmessage = (ev) => {
      const msg = (ev as unknown as { data: ControlMessage | undefined }).data;
      if (msg?.type === 'event') o.onEvent?.(msg.event, msg.threadId);
    };
    this.piscina = new Piscina<ThreadTask, ThreadResult>({
      filename: workerFile(),
      minThreads: o.threads,
      maxThreads: o.threads,
      idleTimeout: Number.POSITIVE_INFINITY,
      concurrentTasksPerWorker: o.pages,
      workerData: cfg,
      // Not Atomics.wait: it freezes an idle thread's event loop, and a render thread has work between tasks
      // (closing or killing a retired browser, the pool's close message, browser events). Frozen, a timed-out
      // browser lived on until the thread's next task.
      atomics: 'disabled',
      // The pool never gives Piscina more tasks than it has renderers (see `capacity`).
      maxQueue: Number.POSITIVE_INFINITY,
    });
    // A thread that ends (terminated after a hung render, or crashed) leaves its browser behind: end it.
    this.piscina.on('workerDestroy', (w: { id: number }) => void killMarked(threadMarkerPrefix(this.markerPrefix, w.id)));
    this.piscina.on('error', (err: Error) => o.onThreadError?.(err));
  }

  get backend(): BackendName {
    return this.o.backend;
  }

  get maxFrame(): number {
    return this.o.maxFrame;
  }

  /** Renders waiting for a renderer now. */
  get queued(): number {
    return this.waiting.size;
  }

  /** Renders being drawn now (at most one per renderer). */
  get busy(): number {
    return this.running;
  }

  /**
   * Starts every renderer and draws one frame of `style` on each, so the first request does not pay for the
   * browser start. Resolves when at least one renderer works; rejects with the reason when none does.
   */
  async warmUp(style: StyleRef | undefined, timeoutMs: number): Promise<void> {
    const runs = Array.from({ length: this.capacity }, () => this.run({ kind: 'warmup', style, timeoutMs }, timeoutMs));
    const results = await Promise.allSettled(runs);
    if (results.some((r) => r.status === 'fulfilled')) return;
    const first = results.find((r): r is PromiseRejectedResult => r.status === 'rejected');
    throw first?.reason instanceof RenderError ? first.reason : new RenderError('unavailable', String(first?.reason));
  }

  /**
   * Renders a frame once a renderer is free. Fails with 'overload' when `max_queue` renders are already waiting,
   * 'queue_timeout' when the wait passes `queue_timeout_ms`, and 'cancelled' when `call.cancel` fires first.
   * A frame given as a function is decided when the renderer is granted: a batch of tiles keeps growing while it
   * waits (service.ts, adaptive metatiles).
   */
  async render(style: StyleRef, frameOf: Frame | (() => Frame), call: RenderCall = {}): Promise<RenderedFrame> {
    await this.admit(call.cancel, call.client ?? '', call.shared?.priority ?? call.priority ?? 'interactive', call.shared, call.queueTimeoutMs ?? this.o.queueTimeoutMs);
    let frame: Frame;
    try {
      frame = typeof frameOf === 'function' ? frameOf() : frameOf;
    } catch (err) {
      this.leave();
      throw err;
    }
    try {
      try {
        const out = await this.renderOnce(style, frame, call);
        this.counts.rendered++;
        return out;
      } catch (err) {
        // The renderer died under this render (not because of it: timeouts are not retried). Once more, on a
        // renderer proven good (a new page or browser that passed its canary), keeping this render's place.
        if (err instanceof RenderError && err.reason === 'crash' && !this.closed && !call.cancel?.aborted) {
          this.counts.retried++;
          const out = await this.renderOnce(style, frame, call);
          this.counts.rendered++;
          return out;
        }
        throw err;
      }
    } catch (err) {
      if (err instanceof RenderError && err.reason === 'cancelled') this.counts.dropped++;
      else this.counts.failed++;
      throw err;
    } finally {
      this.leave();
    }
  }

  /** Waits for a free renderer, within the queue's bounds in length and time; moves up a class when `shared` is raised meanwhile. */
  private admit(cancel: AbortSignal | undefined, client: string, priority: RenderPriority, shared: RenderClass | undefined, queueTimeoutMs: number): Promise<void> {
    if (this.closed) return Promise.reject(new RenderError('unavailable', 'the renderer is shutting down'));
    if (cancel?.aborted) return Promise.reject(new RenderError('cancelled', 'no one waits for this render any more'));
    if (this.waiting.mayStart(priority, this.running, this.capacity)) {
      this.running++;
      return Promise.resolve();
    }
    // Bounded per class: a flood of re-renders or seeding never makes an interactive render an overload.
    if (this.waiting.sizeOf(priority) >= this.o.maxQueue) {
      return Promise.reject(new RenderError('overload', `${this.waiting.sizeOf(priority)} renders are waiting (render.max_queue = ${this.o.maxQueue})`));
    }
    return new Promise<void>((resolve, reject) => {
      let queuedAs = priority;
      const done = () => {
        clearTimeout(timer);
        cancel?.removeEventListener('abort', onCancel);
        stopHearing?.();
        this.waiting.remove(queuedAs, client, waiter);
      };
      const waiter: Waiter = {
        grant: () => {
          done();
          resolve();
        },
        fail: (err) => {
          done();
          reject(err);
        },
      };
      const timer = setTimeout(() => {
        this.counts.expired++;
        waiter.fail(new RenderError('queue_timeout', `no renderer was free within ${queueTimeoutMs} ms (render.queue_timeout_ms)`));
      }, queueTimeoutMs);
      const onCancel = () => {
        this.counts.dropped++;
        waiter.fail(new RenderError('cancelled', 'no one waits for this render any more'));
      };
      // Joined by a more urgent request: queued again in its class (last of its client there), and started at
      // once if that class may take a renderer now (an interactive render may take the one kept from background work).
      const stopHearing = shared?.onRaise((to) => {
        if (!this.waiting.remove(queuedAs, client, waiter)) return;
        queuedAs = to;
        this.waiting.push(to, client, waiter);
        this.grantWaiting();
      });
      cancel?.addEventListener('abort', onCancel, { once: true });
      this.waiting.push(priority, client, waiter);
    });
  }

  /**
   * A renderer is free again: the highest class with a render allowed to start gives it to its next client in turn
   * (priority-queue.ts). A background render may leave it idle for an interactive one to come.
   */
  private leave(): void {
    this.running--;
    this.grantWaiting();
  }

  /** Starts every waiting render that may start now, highest class first. */
  private grantWaiting(): void {
    if (this.closed) return;
    for (let next = this.waiting.shift(this.running, this.capacity); next; next = this.waiting.shift(this.running, this.capacity)) {
      this.running++;
      next.grant();
    }
  }

  private async renderOnce(style: StyleRef, frame: Frame, call: RenderCall): Promise<RenderedFrame> {
    if (call.cancel?.aborted) throw new RenderError('cancelled', 'no one waits for this render any more');
    let out: RenderedFrame | undefined;
    const ms = call.timeoutMs ?? this.o.timeoutMs;
    await this.run({ kind: 'render', style, frame, timeoutMs: ms }, ms, (f) => (out = f), call.cancel, call.onStart);
    if (!out) throw new RenderError('failed', 'the render thread reported success without a frame');
    return out;
  }

  /** Runs one task with its own MessagePort for resources and the frame. */
  private async run(task: TaskWithoutPort, timeoutMs: number, onFrame?: (f: RenderedFrame) => void, cancel?: AbortSignal, onDrawing?: () => void): Promise<void> {
    const { port1, port2 } = new MessageChannel();
    const cancelled = new Int32Array(new SharedArrayBuffer(4));
    // Read by the thread before it starts: a task it has begun finishes (or times out) there.
    const onCancel = () => Atomics.store(cancelled, 0, 1);
    if (cancel?.aborted) onCancel();
    cancel?.addEventListener('abort', onCancel, { once: true });
    // Aborted only by the backstop, and only after the thread's browser was killed and the thread still did not
    // answer: Piscina then ends the thread.
    const terminate = new AbortController();
    let backstop: NodeJS.Timeout | undefined;
    let backstopFired = false;
    let threadId: number | undefined;
    const queuedAt = performance.now();
    let queueMs = 0;
    let frameArrived: () => void = () => {};
    const frame = new Promise<void>((resolve) => (frameArrived = resolve));
    port1.on('message', (msg: ThreadMessage) => {
      if (msg.type === 'started') {
        threadId = msg.threadId;
        queueMs = performance.now() - queuedAt;
        backstop = setTimeout(() => {
          backstopFired = true;
          // Killing the browser ends a hung render in a thread that still runs its event loop; ending the thread
          // while it reads from the browser's sockets could abort the process, so that is the last resort.
          void killMarked(threadMarkerPrefix(this.markerPrefix, msg.threadId));
          backstop = setTimeout(() => terminate.abort(), THREAD_END_GRACE_MS);
        }, timeoutMs + BACKSTOP_GRACE_MS);
      } else if (msg.type === 'drawing') {
        onDrawing?.();
      } else if (msg.type === 'resource') {
        void this.answer(port1, msg);
      } else if (msg.type === 'frame') {
        // A frame that began by loading its style (what expiries no longer cause: expired-source-tiles.ts).
        if ((msg.timings as unknown as RenderedFrame['timings']).style > 0 && task.kind === 'render') renderMetrics.countStyleLoad(task.style.id);
        onFrame?.({ data: msg.data, tiles: msg.tiles, width: msg.width, height: msg.height, opaque: msg.opaque, timings: { ...(msg.timings as unknown as RenderedFrame['timings']), queue: queueMs } });
        frameArrived();
      }
    });
    const timedOut = () => new RenderError('timeout', `the render did not finish within ${timeoutMs} ms; its renderer was replaced`);
    try {
      let result: ThreadResult;
      try {
        result = await this.piscina.run({ ...task, port: port2, cancelled } as ThreadTask, { transferList: [port2], signal: terminate.signal });
      } catch (err) {
        if (terminate.signal.aborted) {
          if (threadId !== undefined) await killMarked(threadMarkerPrefix(this.markerPrefix, threadId));
          throw timedOut();
        }
        // The thread itself died (Piscina starts a new one): treat as a crash of the renderer.
        throw new RenderError(this.closed ? 'unavailable' : 'crash', `render thread failed: ${(err as Error).message}`);
      }
      // A render whose browser the backstop killed reports a crash: it is a timeout, and is not retried.
      if (backstopFired && !result.ok) throw timedOut();
      if (!result.ok) throw new RenderError(result.reason, result.message);
      // The frame travels on the port, the result through Piscina: the frame may come a moment later.
      if (task.kind === 'render') await Promise.race([frame, new Promise((r) => setTimeout(r, 10_000).unref())]);
    } finally {
      clearTimeout(backstop);
      cancel?.removeEventListener('abort', onCancel);
      port1.close();
    }
  }

  private async answer(port: import('node:worker_threads').MessagePort, msg: Extract<ThreadMessage, { type: 'resource' }>): Promise<void> {
    let reply: PoolMessage;
    try {
      const r = await this.o.fetch(msg.path, msg.base);
      reply = { type: 'resource', id: msg.id, status: r.status, contentType: r.contentType, body: r.body };
    } catch {
      reply = { type: 'resource', id: msg.id, status: 500, contentType: undefined, body: new Uint8Array(0) };
    }
    const b = reply.body;
    // Transfer only a buffer the body owns entirely (a slice of a shared buffer would be detached for everyone).
    const own = b.byteOffset === 0 && b.byteLength === b.buffer.byteLength && !(b.buffer instanceof SharedArrayBuffer);
    try {
      port.postMessage(reply, own ? [b.buffer as ArrayBuffer] : []);
    } catch {
      /* the task is over and its port closed: the renderer answers the request empty */
    }
  }

  /** Closes every renderer (each thread closes its browser), ends the threads and kills anything left. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    for (const w of this.waiting.items()) w.fail(new RenderError('unavailable', 'the renderer is shutting down'));
    const threads = this.piscina.threads.length;
    const acks = new BroadcastChannel(this.control.name);
    acks.unref();
    let closedCount = 0;
    const allClosed = new Promise<void>((resolve) => {
      acks.onmessage = (ev) => {
        if ((ev as unknown as { data: { type?: string } }).data?.type === 'closed' && ++closedCount >= threads) resolve();
      };
    });
    this.control.postMessage({ type: 'close' });
    // Browsers still starting may not answer soon: they are killed below by their marker.
    // This timer is not unref'd: a process that is stopping must wait for its browsers to close.
    let giveUp: NodeJS.Timeout | undefined;
    await Promise.race([allClosed, new Promise((r) => (giveUp = setTimeout(r, 3_000)))]);
    clearTimeout(giveUp);
    acks.close();
    this.control.close();
    // Browsers go first: a thread ended while it reads from a browser's socket or pipe can abort the process.
    await killMarked(this.markerPrefix);
    await this.piscina.destroy().catch(() => {});
    await killMarked(this.markerPrefix);
  }
}
