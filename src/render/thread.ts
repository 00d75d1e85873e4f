// One render thread of the pool (Piscina worker, entry workers/render.ts): it owns one renderer (a browser with
// its pages, or a set of native maps), starts it lazily, replaces it when it breaks or has done `max_renders`
// renders, and runs the tasks the pool sends. Resources and frames travel over each task's MessagePort.
import { BroadcastChannel, threadId, type MessagePort } from 'node:worker_threads';
import { ChromiumRenderer } from './backends/chromium.js';
import type { GlStack } from './backends/gl-stack.js';
import { NativeRenderer } from './backends/native.js';
import { RenderError, renderErrorFrom, type BackendName, type Frame, type Renderer, type RendererEvent, type Resource, type ResourceFetcher, type StyleRef } from './renderer.js';

export interface ThreadConfig {
  backend: BackendName;
  /** Concurrent frames of this thread (Chromium pages of its browser). */
  pages: number;
  maxRenders: number;
  maxFrame: number;
  chromiumPath: string | undefined;
  flatExtrusions: boolean;
  gl: GlStack | undefined;
  /** Prefix of the browser markers of this pool (processes.ts); the thread adds its id and a sequence number. */
  markerPrefix: string;
  /** BroadcastChannel name the pool uses to tell every thread to close its renderer. */
  controlChannel: string;
}

/**
 * `cancelled` is one Int32 the pool sets to 1 to drop the task (a sibling part of its frame failed); the thread
 * reads it before it starts the work. The pool never aborts a task through Piscina: Piscina would end the whole
 * thread, with the other renders it is running, and ending a thread while it reads a socket aborts the process.
 */
export type ThreadTask =
  | { kind: 'render'; style: StyleRef; frame: Frame; timeoutMs: number; port: MessagePort; cancelled: Int32Array }
  | { kind: 'warmup'; style: StyleRef | undefined; timeoutMs: number; port: MessagePort; cancelled: Int32Array };

export type ThreadResult = { ok: true; backend: BackendName } | { ok: false; reason: RenderError['reason']; message: string };

/** Messages from a thread to the pool on a task's port. */
export type ThreadMessage =
  | { type: 'started'; threadId: number }
  | { type: 'drawing' }
  | { type: 'resource'; id: number; path: string; base: string }
  | { type: 'frame'; data: Uint8Array; tiles: Uint8Array[] | undefined; width: number; height: number; opaque: boolean | undefined; timings: Record<string, number> };

/** Messages on the pool's control channel: the pool's close order, and the threads' answers and reports. */
export type ControlMessage = { type: 'close' } | { type: 'closed'; threadId: number } | { type: 'event'; threadId: number; event: RendererEvent };

/** Messages from the pool to a thread on a task's port. */
export type PoolMessage = { type: 'resource'; id: number; status: number; contentType: string | undefined; body: Uint8Array };

const CANCELLED = 'cancelled before it started';

export function marker(prefix: string, thread: number, seq: number): string {
  return `${prefix}-t${thread}-${seq}`;
}

/** Marker prefix of every browser a given thread starts. */
export const threadMarkerPrefix = (prefix: string, thread: number) => `${prefix}-t${thread}-`;

/** Wait before the n-th consecutive failed renderer is replaced: 1 s, 2 s, 4 s … at most 30 s. */
export function backoffMs(failures: number): number {
  return failures <= 0 ? 0 : Math.min(30_000, 1000 * 2 ** (failures - 1));
}

export class RenderThread {
  private current: Renderer | undefined;
  private starting: Promise<Renderer> | undefined;
  private readonly inUse = new Map<Renderer, number>();
  private seq = 0;
  /** Renderers of this thread that failed in a row (did not start, or broke before a single good frame). */
  private failures = 0;
  private readonly control: BroadcastChannel;

  constructor(private readonly cfg: ThreadConfig) {
    const control = new BroadcastChannel(cfg.controlChannel);
    this.control = control;
    control.unref();
    control.onmessage = (ev) => {
      const msg = (ev as unknown as { data: { type?: string } | undefined }).data;
      if (msg?.type !== 'close') return;
      void this.closeAll().finally(() => control.postMessage({ type: 'closed', threadId }));
    };
  }

  /** Tells the pool (which logs and counts it) what happened to a renderer of this thread. */
  private report(e: RendererEvent): void {
    this.control.postMessage({ type: 'event', threadId, event: e } satisfies ControlMessage);
  }

  async run(task: ThreadTask): Promise<ThreadResult> {
    const port = task.port;
    port.postMessage({ type: 'started', threadId } satisfies ThreadMessage);
    const fetcher = portFetcher(port);
    let renderer: Renderer | undefined;
    const cancelled = () => Atomics.load(task.cancelled, 0) !== 0;
    if (cancelled()) return { ok: false, reason: 'cancelled', message: CANCELLED };
    try {
      renderer = await this.acquire();
      // Starting a browser takes a while: the task may have been cancelled meanwhile.
      if (cancelled()) return { ok: false, reason: 'cancelled', message: CANCELLED };
      if (task.kind === 'render') {
        // The service's clock of this render starts with the frame's own (a browser start, a page replacement or a
        // style load are not counted).
        const drawing = () => port.postMessage({ type: 'drawing' } satisfies ThreadMessage);
        const out = await renderer.render(task.style, task.frame, fetcher, Date.now() + task.timeoutMs, drawing);
        const msg: ThreadMessage = { type: 'frame', data: out.data, tiles: out.tiles, width: out.width, height: out.height, opaque: out.opaque, timings: { ...out.timings } };
        // Encoded tiles are views of one upload buffer: its memory moves once, with the (empty) pixels'.
        const moved = new Set<ArrayBuffer>([out.data.buffer as ArrayBuffer, ...(out.tiles ?? []).map((t) => t.buffer as ArrayBuffer)]);
        port.postMessage(msg, [...moved]);
      } else if (task.style) {
        // Warm-up: start the renderer, load the style and draw once, so shaders and code are compiled.
        await renderer.render(task.style, { width: 256, height: 256, ratio: 1, zoom: 0, center: [0, 0], bearing: 0, pitch: 0 }, fetcher, Date.now() + task.timeoutMs);
      }
      this.failures = 0;
      return { ok: true, backend: renderer.backend };
    } catch (err) {
      const e = renderErrorFrom(err);
      // A renderer broken as a whole (its browser exited, a frame timed out) is destroyed now, with the renders it
      // still runs (they fail as crashes and are retried); the next task starts a new one. A page or map that
      // failed alone is replaced by the renderer itself before its next frame.
      if (renderer?.brokenReason !== undefined) this.retire(renderer, true, renderer.brokenReason);
      return { ok: false, reason: e.reason, message: e.message };
    } finally {
      // The pool closes the port once it has the result: a message posted just before a close could be lost.
      if (renderer) this.release(renderer);
    }
  }

  private async acquire(): Promise<Renderer> {
    const cur = this.current;
    if (cur?.brokenReason !== undefined) this.retire(cur, true, cur.brokenReason);
    else if (cur && cur.renders >= this.cfg.maxRenders) {
      this.retire(cur, false);
      this.report({ kind: 'renderer-recycled', reason: `${cur.renders} renders (render.max_renders)` });
    }
    if (!this.current) {
      this.starting ??= this.start().finally(() => (this.starting = undefined));
      this.current = await this.starting;
    }
    const r = this.current;
    this.inUse.set(r, (this.inUse.get(r) ?? 0) + 1);
    return r;
  }

  private release(r: Renderer): void {
    const n = (this.inUse.get(r) ?? 1) - 1;
    if (n > 0) return void this.inUse.set(r, n);
    this.inUse.delete(r);
    if (r !== this.current) void r.close();
  }

  /**
   * Takes `r` out of service; it is closed at once (`now`) or when its last render ends. A renderer retired as
   * broken is reported; one that broke before drawing a single frame counts towards the crash-loop back-off.
   */
  private retire(r: Renderer, now: boolean, broken?: string): void {
    if (this.current !== r) return void (now && r.close());
    this.current = undefined;
    if (broken !== undefined) {
      if (r.renders === 0) this.failures++;
      this.report({ kind: 'renderer-replaced', reason: broken, failures: this.failures, backoffMs: backoffMs(this.failures) });
    }
    if (now || !this.inUse.has(r)) void r.close();
  }

  /** Starts a renderer, after the back-off a crash loop has earned; a failed start is reported and rethrown. */
  private async start(): Promise<Renderer> {
    const wait = backoffMs(this.failures);
    if (wait > 0) await new Promise((resolve) => setTimeout(resolve, wait));
    const c = this.cfg;
    try {
      if (c.backend === 'native') return await NativeRenderer.start({ maxFrame: c.maxFrame, onEvent: (e) => this.report(e) });
      if (!c.chromiumPath) throw new RenderError('unavailable', 'no Chromium executable');
      return await ChromiumRenderer.start({
        executablePath: c.chromiumPath,
        pages: c.pages,
        marker: marker(c.markerPrefix, threadId, ++this.seq),
        maxFrame: c.maxFrame,
        flatExtrusions: c.flatExtrusions,
        gl: c.gl,
        onEvent: (e) => this.report(e),
      });
    } catch (err) {
      this.failures++;
      this.report({ kind: 'renderer-start-failed', reason: (err as Error).message, failures: this.failures, backoffMs: backoffMs(this.failures) });
      throw err;
    }
  }

  private async closeAll(): Promise<void> {
    const all = new Set<Renderer>(this.inUse.keys());
    if (this.current) all.add(this.current);
    if (this.starting) await this.starting.then((r) => all.add(r), () => {});
    this.current = undefined;
    await Promise.all([...all].map((r) => r.close().catch(() => {})));
  }
}

/** Resources asked of the pool over a task's port; all answers of a closed port are "missing". */
function portFetcher(port: MessagePort): ResourceFetcher {
  let next = 0;
  const pending = new Map<number, (r: Resource) => void>();
  let closed = false;
  port.on('message', (msg: PoolMessage) => {
    if (msg.type !== 'resource') return;
    const done = pending.get(msg.id);
    pending.delete(msg.id);
    done?.({ status: msg.status, contentType: msg.contentType, body: msg.body });
  });
  port.on('close', () => {
    closed = true;
    for (const done of pending.values()) done({ status: 503, contentType: undefined, body: new Uint8Array(0) });
    pending.clear();
  });
  return (path, base) =>
    new Promise<Resource>((resolve) => {
      if (closed) return resolve({ status: 503, contentType: undefined, body: new Uint8Array(0) });
      const id = ++next;
      pending.set(id, resolve);
      port.postMessage({ type: 'resource', id, path, base } satisfies ThreadMessage);
    });
}
