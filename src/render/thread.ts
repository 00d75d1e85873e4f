// One render thread of the pool (Piscina worker, entry workers/render.ts): it owns one renderer (a browser with
// its pages, or a set of native maps), starts it lazily, replaces it when it breaks or has done `max_renders`
// renders, and runs the tasks the pool sends. Resources and frames travel over each task's MessagePort.
import { BroadcastChannel, threadId, type MessagePort } from 'node:worker_threads';
import { ChromiumRenderer } from './backends/chromium.js';
import { NativeRenderer } from './backends/native.js';
import { RenderError, renderErrorFrom, type BackendName, type Frame, type Renderer, type Resource, type ResourceFetcher, type StyleRef } from './renderer.js';

export interface ThreadConfig {
  backend: BackendName;
  /** Concurrent frames of this thread (Chromium pages of its browser). */
  pages: number;
  maxRenders: number;
  maxFrame: number;
  chromiumPath: string | undefined;
  flatExtrusions: boolean;
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
  | { type: 'resource'; id: number; path: string; base: string }
  | { type: 'frame'; data: Uint8Array; width: number; height: number; opaque: boolean | undefined; timings: Record<string, number> };

/** Messages from the pool to a thread on a task's port. */
export type PoolMessage = { type: 'resource'; id: number; status: number; contentType: string | undefined; body: Uint8Array };

const CANCELLED = 'cancelled before it started';

export function marker(prefix: string, thread: number, seq: number): string {
  return `${prefix}-t${thread}-${seq}`;
}

/** Marker prefix of every browser a given thread starts. */
export const threadMarkerPrefix = (prefix: string, thread: number) => `${prefix}-t${thread}-`;

export class RenderThread {
  private current: Renderer | undefined;
  private starting: Promise<Renderer> | undefined;
  private readonly inUse = new Map<Renderer, number>();
  private seq = 0;

  constructor(private readonly cfg: ThreadConfig) {
    const control = new BroadcastChannel(cfg.controlChannel);
    control.unref();
    control.onmessage = (ev) => {
      const msg = (ev as unknown as { data: { type?: string } | undefined }).data;
      if (msg?.type !== 'close') return;
      void this.closeAll().finally(() => control.postMessage({ type: 'closed', threadId }));
    };
  }

  async run(task: ThreadTask): Promise<ThreadResult> {
    const port = task.port;
    port.postMessage({ type: 'started', threadId } satisfies ThreadMessage);
    const fetcher = portFetcher(port);
    let renderer: Renderer | undefined;
    const cancelled = () => Atomics.load(task.cancelled, 0) !== 0;
    if (cancelled()) return { ok: false, reason: 'failed', message: CANCELLED };
    try {
      renderer = await this.acquire();
      // Starting a browser takes a while: the task may have been cancelled meanwhile.
      if (cancelled()) return { ok: false, reason: 'failed', message: CANCELLED };
      if (task.kind === 'render') {
        const out = await renderer.render(task.style, task.frame, fetcher, Date.now() + task.timeoutMs);
        const msg: ThreadMessage = { type: 'frame', data: out.data, width: out.width, height: out.height, opaque: out.opaque, timings: { ...out.timings } };
        port.postMessage(msg, [out.data.buffer as ArrayBuffer]);
      } else if (task.style) {
        // Warm-up: start the renderer, load the style and draw once, so shaders and code are compiled.
        await renderer.render(task.style, { width: 256, height: 256, ratio: 1, zoom: 0, center: [0, 0], bearing: 0, pitch: 0 }, fetcher, Date.now() + task.timeoutMs);
      }
      return { ok: true, backend: renderer.backend };
    } catch (err) {
      const e = renderErrorFrom(err);
      // A timed-out or crashed renderer is destroyed now; the next task starts a new one.
      if (renderer && (e.reason === 'timeout' || e.reason === 'crash')) this.retire(renderer, true);
      return { ok: false, reason: e.reason, message: e.message };
    } finally {
      // The pool closes the port once it has the result: a message posted just before a close could be lost.
      if (renderer) this.release(renderer);
    }
  }

  private async acquire(): Promise<Renderer> {
    const cur = this.current;
    if (cur && (cur.brokenReason !== undefined || cur.renders >= this.cfg.maxRenders)) this.retire(cur, cur.brokenReason !== undefined);
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

  /** Takes `r` out of service; it is closed at once (`now`) or when its last render ends. */
  private retire(r: Renderer, now: boolean): void {
    if (this.current === r) this.current = undefined;
    if (now || !this.inUse.has(r)) void r.close();
  }

  private start(): Promise<Renderer> {
    const c = this.cfg;
    if (c.backend === 'native') return NativeRenderer.start({ maxFrame: c.maxFrame });
    if (!c.chromiumPath) throw new RenderError('unavailable', 'no Chromium executable');
    return ChromiumRenderer.start({ executablePath: c.chromiumPath, pages: c.pages, marker: marker(c.markerPrefix, threadId, ++this.seq), maxFrame: c.maxFrame, flatExtrusions: c.flatExtrusions });
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
