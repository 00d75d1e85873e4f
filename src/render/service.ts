// The rendering service of one HTTP process: starts the render pool in the background (warm) when there is
// something to render, follows reloads, and turns tile, static-map and social-card requests into images —
// metatiles drawn once and cut, large frames drawn in parts, overlays composited, every result cached and
// concurrent identical requests sharing one render.
import { createHash } from 'node:crypto';
import path from 'node:path';
import { setMaxListeners } from 'node:events';
import type { RenderConfig } from '../config/schema.js';
import { poolShare, workerCount } from '../config/sizing.js';
import { resolvedCacheDir } from '../config/paths.js';
import type { Logger } from '../log.js';
import type { RuntimeStatus } from '../runtime.js';
import type { AppState } from '../state/app-state.js';
import { firstRenderableStyle } from '../styles/generated.js';
import type { LoadedStyle } from '../styles/loaded-style.js';
import { etagOf } from '../tiles/tile-service.js';
import { sharedCache } from '../shared-cache/client.js';
import { styleIdentity } from '../shared-cache/identity.js';
import { backendCandidates } from './backends/select.js';
import type { Camera } from './camera.js';
import { cropRaw, encodeRegion, encodeWithOverlay, pasteRaw, resizeRaw, type EncodeOptions, type RawImage } from './image.js';
import { renderMetrics } from './metrics.js';
import type { RenderPeers } from './peers.js';
import { RenderPool } from './pool.js';
import { RenderCache, type CachedImage } from './render-cache.js';
import { Budget } from './budget.js';
import { RenderError, type Frame, type RenderedFrame, type RendererEvent, type StyleRef } from './renderer.js';
import { inProcessFetcher, type AppFetch } from './resources.js';
import { CONTENT_TYPES, type ImageFormat } from './static-params.js';
import { hasOverlays, overlaySvg, type Overlays } from './svg.js';
import { batchEdge, planMetatile, splitFrame, tileRect, type MetatilePlan, type TileRequest } from './tile-render.js';
import { cells, TileBatches, type TileBatch } from './tile-batches.js';

/** Largest frame edge a renderer draws at once (SwiftShader allows 8192; memory per frame stays bounded). */
const MAX_FRAME = 4096;
/** Overlap of the parts of a split frame, CSS pixels. */
const SPLIT_BUFFER = 64;
/** Adaptive metatiles: how long a new batch waits for the rest of a view's requests before asking for a renderer. */
const GATHER_MS = 8;
/** How long a request waits for renderers that are still starting. */
const START_WAIT_MS = 60_000;

const extOf = (f: ImageFormat) => (f === 'jpeg' ? 'jpg' : f);

/** The public path of a rendered tile (what a forwarded request asks the owner process for). */
function tilePath(styleId: string, t: TileRequest, format: ImageFormat): string {
  const size = t.base === 256 ? '256/' : '';
  const scale = t.scale > 1 ? `@${t.scale}x` : '';
  return `/styles/${encodeURIComponent(styleId)}/${size}${t.z}/${t.x}/${t.y}${scale}.${extOf(format)}`;
}

/** An image and how it was obtained; `timing` (milliseconds per phase) when this request rendered it. */
export interface RenderResult {
  image: CachedImage;
  /** `peer`: drawn (or found cached) by the process that owns the tile's block (peers.ts); `shared`: from the fleet's cache. */
  from: 'memory' | 'disk' | 'shared' | 'render' | 'peer';
  timing: Record<string, number> | undefined;
  /** For `peer`: the owner's own Server-Timing header. */
  peerTiming?: string;
}

interface Rendered {
  images: Map<string, CachedImage>;
  timing: Record<string, number>;
}

/** One render that concurrent identical requests share, and how many of them still wait for it. */
interface SharedRender {
  promise: Promise<Rendered>;
  /** Aborted when the last waiting request has gone: parts still queued are dropped. */
  abort: AbortController;
  waiters: number;
}

/** Where a render's answer goes: the request's own cancel signal, for dropping work no one waits for. */
export interface RenderCaller {
  signal?: AbortSignal;
  /** Forwarded by another process of the cluster as this tile's owner: drawn here, never forwarded again. */
  fromPeer?: boolean;
  /** Who asked (the client's address): the render queue gives clients turns (fair-queue.ts). */
  client?: string;
}

interface DrawnFrame {
  raw: RawImage;
  timing: Record<string, number>;
}

export class RenderService {
  private pool: RenderPool | undefined;
  private starting: Promise<void> | undefined;
  private reason: string | undefined = 'rendering has not started';
  private poolKey: string | undefined;
  /** Starts the pool of the current state when the first render asks for it (only generated styles to render). */
  private deferredStart: (() => void) | undefined;
  /** Counts pool changes: a pool that finishes starting after a newer change closes itself. */
  private generation = 0;
  private workers: AppState['config']['server']['workers'] | undefined;
  /** The pool being warmed up, so that a stop does not wait for its browsers to start. */
  private warming: RenderPool | undefined;
  private fetcher: AppFetch | undefined;
  private cache: RenderCache | undefined;
  private cacheKeyOfCache: string | undefined;
  private lastState: AppState | undefined;
  private readonly inflight = new Map<string, SharedRender>();
  /** Adaptive metatiles: open batches per block and the tiles of batches being drawn (tile-batches.ts). */
  private readonly batches = new TileBatches();
  /** The other worker processes, when this one is part of a cluster (tiles are drawn by their block's owner). */
  private peers: RenderPeers | undefined;
  /** Renderer replacements and failed starts since this process started (logged as they happen). */
  readonly events = { pagesReplaced: 0, renderersReplaced: 0, renderersRecycled: 0, startFailures: 0 };
  private closed = false;

  constructor(
    private readonly runtime: RuntimeStatus,
    private readonly log: Logger,
  ) {}

  /** Render ownership across the cluster's processes (peers.ts); without it every process draws what it is asked. */
  attachPeers(peers: RenderPeers): void {
    this.peers = peers;
  }

  /** The request carries the cluster's token: another process forwarded it here as the tile's owner. */
  isPeerRequest(header: string | null | undefined): boolean {
    return this.peers?.isPeerRequest(header) ?? false;
  }

  /** This process's slot among the render owners of its cluster, when it has peers. */
  get ownerSlot(): number | undefined {
    return this.peers?.link.slot;
  }

  /** Tiles forwarded to their owner process, and drawn here because the owner did not answer. */
  get peerCounts(): RenderPeers['counts'] | undefined {
    return this.peers?.counts;
  }

  /** The app whose routes answer the renderers' resource requests (in-process). */
  attach(fetch: AppFetch): void {
    this.fetcher = fetch;
  }

  /** Follows the active state: starts, keeps, restarts or stops the pool; drops memory-cached images on reload. */
  onState(state: AppState): void {
    if (this.closed) return;
    if (this.lastState && this.lastState !== state) this.cache?.clearMemory();
    this.lastState = state;
    const cfg = state.config.render;
    const dir = resolvedCacheDir(state);
    const cacheKey = JSON.stringify([cfg.memory_cache_mb, cfg.disk_cache_mb, dir]);
    if (cacheKey !== this.cacheKeyOfCache) {
      this.cache = new RenderCache(cfg.memory_cache_mb, path.join(dir, 'render'), cfg.disk_cache_mb, (err) => this.log.warn({ err: err.message }, 'render cache'));
      this.cacheKeyOfCache = cacheKey;
    }
    this.runtime.renderRoutesMounted = !state.config.server.disable_render;
    // Generated styles are rendered too: a vector source is something to render even without a configured style.
    const firstStyle = firstRenderableStyle(state);
    const wanted = !state.config.server.disable_render && firstStyle !== undefined;
    // The number of worker processes cannot change without a restart: size pools by the one the process began with.
    this.workers ??= state.config.server.workers;
    const key = JSON.stringify(cfg);
    if (!wanted) {
      this.reason = state.config.server.disable_render ? 'server.disable_render is set' : 'no styles are configured and no vector source has a generated style';
      void this.stopPool();
      this.runtime.rendererState = 'unavailable';
      this.runtime.rendererWanted = false;
      return;
    }
    if (key === this.poolKey && (this.pool || this.starting)) return;
    // The old pool (if any) is closed before the new one starts: never two sets of browsers at once.
    const previous = this.stopPool();
    this.poolKey = key;
    const generation = this.generation;
    const start = () => {
      const starting = previous.then(() => this.startPool(cfg, state, firstStyle!, generation));
      this.starting = starting;
      const done = () => {
        if (this.starting === starting) this.starting = undefined;
      };
      starting.then(done, done);
    };
    // With generated styles only (archives served without a config, say), browsers start with the first render
    // request instead of in every server that may never render.
    // Readiness waits only for a pool that starts with the process; one started on demand is reported by
    // renderer_state (idle until asked, then starting and ready) but never holds the service back.
    this.runtime.rendererWanted = state.styles.size > 0;
    if (state.styles.size > 0) {
      this.runtime.rendererState = 'starting';
      start();
    } else {
      // Rendering works (the first request starts the browsers): enabled, and idle until asked.
      this.runtime.rendererEnabled = true;
      this.runtime.rendererState = 'idle';
      this.deferredStart = start;
    }
  }

  private async startPool(cfg: RenderConfig, state: AppState, warmStyle: LoadedStyle, generation: number): Promise<void> {
    const fetcher = this.fetcher;
    if (!fetcher) throw new Error('RenderService.attach was not called');
    this.runtime.rendererEnabled = false;
    this.runtime.renderer = undefined;
    this.runtime.rendererState = 'starting';
    const renderers = cfg.pool_size ?? poolShare(workerCount(this.workers ?? 'auto'));
    const choice = await backendCandidates(cfg);
    const reasons = [...choice.reasons];
    /** GL stacks passed over because their canary failed (only these make a slower start worth a warning). */
    const glPassedOver: string[] = [];
    for (const [i, c] of choice.candidates.entries()) {
      // A candidate with another after it is a trial: its failed starts are the next candidate's business.
      const trial = i < choice.candidates.length - 1;
      const pages = c.backend === 'chromium' ? Math.min(cfg.pages_per_browser, renderers) : 1;
      const pool = new RenderPool({
        backend: c.backend,
        threads: Math.ceil(renderers / pages),
        pages,
        timeoutMs: cfg.timeout_ms,
        maxQueue: cfg.max_queue,
        queueTimeoutMs: cfg.queue_timeout_ms,
        maxRenders: cfg.max_renders,
        maxFrame: MAX_FRAME,
        chromiumPath: c.chromiumPath,
        flatExtrusions: cfg.flat_extrusions,
        gl: c.gl,
        fetch: inProcessFetcher(fetcher),
        onThreadError: (err) => this.log.error({ err: err.message }, 'render thread error'),
        onEvent: (e, thread) => this.onRendererEvent(e, thread, trial && this.pool !== pool),
      });
      this.warming = pool;
      try {
        // The warm-up loads a style and draws a frame: allow it more than one render's time (browser start).
        await pool.warmUp(this.styleRef(state, warmStyle), Math.max(cfg.timeout_ms, START_WAIT_MS));
      } catch (err) {
        await pool.close();
        if (generation !== this.generation) return;
        reasons.push(`${c.backend}${c.gl ? ` (${c.gl})` : ''}: ${(err as Error).message}`);
        if (c.gl) glPassedOver.push(`${c.gl}: ${(err as Error).message}`);
        continue;
      } finally {
        if (this.warming === pool) this.warming = undefined;
      }
      // Stopped or replaced while starting (a reload, a shutdown): this pool is not wanted any more.
      if (this.closed || generation !== this.generation) return void (await pool.close());
      this.pool = pool;
      this.reason = undefined;
      this.runtime.rendererEnabled = true;
      this.runtime.renderer = c.backend;
      this.runtime.rendererGl = c.gl;
      this.runtime.rendererState = 'ready';
      // A GL stack passed over (its canary failed) is worth a warning: this host renders slower than it could.
      if (glPassedOver.length) this.log.warn({ gl: c.gl, passed_over: glPassedOver }, 'renderer started on a slower GL stack');
      this.log.info({ backend: c.backend, gl: c.gl, threads: Math.ceil(renderers / pages), pages }, 'renderer ready');
      return;
    }
    if (generation !== this.generation) return;
    this.reason = `no renderer could start: ${reasons.join('; ')}`;
    this.runtime.rendererState = 'unavailable';
    this.log.warn(this.reason);
  }

  /** Logs and counts what happened to a renderer; a crash loop is an error, routine recycling is info. */
  private onRendererEvent(e: RendererEvent, thread: number, trial = false): void {
    const fields = { thread, reason: e.reason, failures: e.failures, backoff_ms: e.backoffMs };
    // A GL stack (or backend) being tried that does not start: the next candidate starts at once, no back-off, and
    // the outcome is logged once by startPool (a warning naming what was passed over).
    if (trial && e.kind === 'renderer-start-failed') return this.log.info(fields, 'renderer candidate did not start; trying the next');
    switch (e.kind) {
      case 'page-replaced':
      case 'map-replaced':
        this.events.pagesReplaced++;
        return this.log.warn(fields, e.kind === 'page-replaced' ? 'renderer page failed and was replaced' : 'native map failed and was replaced');
      case 'renderer-replaced':
        this.events.renderersReplaced++;
        return (e.failures ?? 0) > 1
          ? this.log.error(fields, 'renderer crash loop: renderers keep failing before their first frame; backing off')
          : this.log.warn(fields, 'renderer failed and is being replaced');
      case 'renderer-recycled':
        this.events.renderersRecycled++;
        return this.log.info(fields, 'renderer recycled');
      case 'renderer-start-failed':
        this.events.startFailures++;
        // Not ready until a renderer draws again (renderFrame flips it back): a load balancer should look elsewhere.
        if (this.pool) this.runtime.rendererState = 'unavailable';
        return this.log.error(fields, 'renderer did not start; backing off before the next try');
    }
  }

  /** Renders waiting for a renderer and renders being drawn in this process now. */
  get load(): { queued: number; busy: number } {
    return { queued: this.pool?.queued ?? 0, busy: this.pool?.busy ?? 0 };
  }

  /** Counters of the current pool (renders done, failed, retried, dropped, expired in the queue). */
  get poolCounts(): RenderPool['counts'] | undefined {
    return this.pool?.counts;
  }

  /** Takes the pool out of service now; resolves when it (and any pool still starting) is closed. */
  private stopPool(): Promise<void> {
    this.generation++;
    const pool = this.pool;
    const starting = this.starting;
    // A pool still warming up is closed now, not after its browsers have finished starting.
    void this.warming?.close();
    this.warming = undefined;
    this.pool = undefined;
    this.starting = undefined;
    this.poolKey = undefined;
    this.deferredStart = undefined;
    this.runtime.rendererEnabled = false;
    this.runtime.renderer = undefined;
    this.runtime.rendererGl = undefined;
    this.runtime.rendererState = 'unavailable';
    return Promise.all([pool?.close(), starting?.catch(() => {})]).then(() => {});
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.stopPool();
  }

  /** The pool, waiting for it while it starts; RenderError 'unavailable' when there is none. */
  private async ready(): Promise<RenderPool> {
    const deferred = this.deferredStart;
    this.deferredStart = undefined;
    deferred?.();
    if (this.starting) await Promise.race([this.starting.catch(() => {}), new Promise((r) => setTimeout(r, START_WAIT_MS).unref())]);
    if (this.pool) return this.pool;
    throw new RenderError('unavailable', this.starting ? 'the renderer is still starting' : (this.reason ?? 'rendering is not available'));
  }

  /** Renderer identity of a style in this state (changes with the style, the configuration, or any reload). */
  private styleRef(state: AppState, style: LoadedStyle): StyleRef {
    const key = createHash('sha256').update(`${style.hash}\n${state.configHash}\n${state.loadedAt}`).digest('hex').slice(0, 16);
    return { id: style.id, key };
  }

  /**
   * Cache identity of a style's images: the same in every process and on every machine serving the same files
   * with the same image settings and server version (shared-cache/identity.ts); the disk and shared caches
   * outlive the process.
   */
  private contentKey(state: AppState, style: LoadedStyle): string {
    return styleIdentity(state, style);
  }

  private encodeOptions(state: AppState): EncodeOptions {
    return { pngCompression: state.config.render.png_compression, jpegQuality: state.config.render.jpeg_quality, webpQuality: state.config.render.webp_quality };
  }

  /** A raster tile of a style: from memory, disk, or its metatile's render. */
  async tile(state: AppState, style: LoadedStyle, t: TileRequest, format: ImageFormat, caller: RenderCaller = {}): Promise<RenderResult> {
    const cache = this.cache!;
    const base = `${style.id}/${this.contentKey(state, style)}/${t.base}@${t.scale}x`;
    const key = `${base}/${t.z}/${t.x}/${t.y}.${extOf(format)}`;
    const hit = cache.getMemory(key);
    if (hit) return { image: hit, from: 'memory', timing: undefined };
    const fromDisk = await cache.getDisk(key);
    if (fromDisk) {
      const image: CachedImage = { body: fromDisk, etag: etagOf(fromDisk), contentType: CONTENT_TYPES[format] };
      cache.setMemory(key, image);
      return { image, from: 'disk', timing: undefined };
    }
    // Another process owns this tile's block: its pages hold the neighbourhood's parsed source tiles.
    // Always the owner, even when a renderer here is idle: drawing here would parse the neighbourhood's source tiles
    // a second time (measured: fewer tiles per CPU-second when idle processes drew for themselves).
    const owner = caller.fromPeer || !state.config.render.owner_routing ? undefined : this.peers?.ownerOf(t.z, t.x, t.y);
    if (owner !== undefined) {
      // The owner's own bounds (queue wait, render time, renderer start) come first; this is the backstop.
      const limit = state.config.render.queue_timeout_ms + state.config.render.timeout_ms + START_WAIT_MS;
      const got = await this.peers!.forward(owner, tilePath(style.id, t, format), caller.signal, caller.client, limit);
      if (got) {
        const image: CachedImage = { body: got.body, etag: got.etag, contentType: got.contentType };
        cache.setMemory(key, image);
        return { image, from: 'peer', timing: undefined, peerTiming: got.timing };
      }
    }
    // The fleet's shared cache, and its lock: another machine drawing this tile is waited for, not repeated.
    const claim = await sharedCache.claim('tile', key, state.config.render.queue_timeout_ms + state.config.render.timeout_ms, caller.signal);
    if (claim.kind === 'hit') return this.fromShared(key, claim.body, CONTENT_TYPES[format], true);
    try {
      return await this.drawTile(state, style, t, format, base, key, caller);
    } finally {
      await claim.release();
    }
  }

  /** An image found in the shared cache, kept in this machine's caches too. */
  private fromShared(key: string, body: Buffer, contentType: string, toDisk: boolean): RenderResult {
    const image: CachedImage = { body, etag: etagOf(body), contentType };
    this.cache!.setMemory(key, image);
    // Tiles are kept on disk too (static images never are).
    if (toDisk) void this.cache!.setDisk(key, body);
    return { image, from: 'shared', timing: undefined };
  }

  /** A tile no cache had: drawn in its metatile or batch. */
  private async drawTile(state: AppState, style: LoadedStyle, t: TileRequest, format: ImageFormat, base: string, key: string, caller: RenderCaller): Promise<RenderResult> {
    const cache = this.cache!;
    const cfg = state.config.render;
    if (cfg.metatile === 'auto') return this.batchedTile(state, style, t, format, base, key, caller);
    const plan = planMetatile(t, cfg.metatile, cfg.tile_buffer, MAX_FRAME);
    const metaKey = `${base}/${t.z}/${plan.x0}/${plan.y0}/${plan.size}.${extOf(format)}`;
    const n = 2 ** t.z;
    const cells: [number, number][] = [];
    for (let y = plan.y0; y < Math.min(n, plan.y0 + plan.size); y++) for (let x = plan.x0; x < Math.min(n, plan.x0 + plan.size); x++) cells.push([x, y]);
    const cellKey = ([x, y]: [number, number]) => `${base}/${t.z}/${x}/${y}.${extOf(format)}`;
    const rendered = await this.shared(
      metaKey,
      async (signal) => {
        const started = performance.now();
        // Worker processes share the disk cache: when another one is drawing this metatile, take its tiles.
        let release = await cache.claim(metaKey, cfg.timeout_ms * 2);
        if (!release) {
          await cache.awaitRelease(metaKey, cfg.timeout_ms);
          const found = new Map<string, CachedImage>();
          for (const c of cells) {
            const body = await cache.getDisk(cellKey(c));
            if (body) found.set(cellKey(c), { body, etag: etagOf(body), contentType: CONTENT_TYPES[format] });
          }
          if (found.has(key)) return { images: found, timing: { wait: performance.now() - started } };
          release = (await cache.claim(metaKey, cfg.timeout_ms * 2)) ?? (async () => {});
        }
        try {
          return await this.withinBudget(cfg.timeout_ms, signal, (budget, cancel) => this.renderMetatile(state, style, plan, cells, cellKey, format, started, budget, cancel, caller.client));
        } finally {
          await release();
        }
      },
      style.id,
      caller.signal,
    );
    const image = rendered.images.get(key);
    if (!image) throw new RenderError('failed', `the metatile render did not produce ${key}`);
    return { image, from: rendered.timing.wait !== undefined ? 'disk' : 'render', timing: rendered.timing };
  }

  /**
   * A tile drawn with the other tiles of its block asked for by the time a renderer is free (tile-batches.ts): joins
   * the batch already drawing it, or the block's open batch, or opens one.
   */
  private async batchedTile(state: AppState, style: LoadedStyle, t: TileRequest, format: ImageFormat, base: string, key: string, caller: RenderCaller): Promise<RenderResult> {
    const cfg = state.config.render;
    const ext = extOf(format);
    const cellKey = (x: number, y: number) => `${base}/${t.z}/${x}/${y}.${ext}`;
    const drawing = this.batches.coverOf(key);
    let batchKey: string;
    let work: (signal: AbortSignal) => Promise<Rendered>;
    if (drawing !== undefined && this.inflight.has(drawing)) {
      batchKey = drawing;
      // Joining a render in progress: its work function is never called.
      work = () => Promise.reject(new RenderError('failed', 'the batch drawing this tile ended before it was joined'));
    } else {
      const edge = batchEdge(t, cfg.tile_buffer, MAX_FRAME);
      const bx = Math.floor(t.x / edge) * edge;
      const by = Math.floor(t.y / edge) * edge;
      const batch = this.batches.join(`${base}/${t.z}/${bx}/${by}.${ext}`, t, edge, cellKey);
      batchKey = batch.key;
      work = (signal) => this.renderBatch(state, style, batch, format, signal, caller.client);
    }
    const rendered = await this.shared(batchKey, work, style.id, caller.signal);
    const image = rendered.images.get(key);
    if (!image) throw new RenderError('failed', `the tile batch did not produce ${key}`);
    return { image, from: rendered.timing.wait !== undefined ? 'disk' : 'render', timing: rendered.timing };
  }

  /** Draws a batch once a renderer is free; its frame is decided then (TileBatches.close). */
  private async renderBatch(state: AppState, style: LoadedStyle, batch: TileBatch, format: ImageFormat, signal: AbortSignal, client: string | undefined): Promise<Rendered> {
    const cache = this.cache!;
    const cfg = state.config.render;
    const started = performance.now();
    try {
      // A view's requests arrive within a few milliseconds of each other: let them join before asking for a renderer.
      await new Promise((resolve) => setTimeout(resolve, GATHER_MS));
      // Worker processes share the disk cache: when another one is drawing in this block, take its tiles if they
      // are all the batch wants.
      let release = await cache.claim(batch.blockKey, cfg.timeout_ms * 2);
      if (!release) {
        await cache.awaitRelease(batch.blockKey, cfg.timeout_ms);
        const found = new Map<string, CachedImage>();
        let all = true;
        for (const w of batch.wanted) {
          const [x, y] = w.split(',').map(Number);
          const body = await cache.getDisk(batch.cellKey(x, y));
          if (body) found.set(batch.cellKey(x, y), { body, etag: etagOf(body), contentType: CONTENT_TYPES[format] });
          else all = false;
        }
        if (all && !batch.plan) {
          this.batches.finish(batch);
          return { images: found, timing: { wait: performance.now() - started } };
        }
        release = (await cache.claim(batch.blockKey, cfg.timeout_ms * 2)) ?? (async () => {});
      }
      try {
        return await this.withinBudget(cfg.timeout_ms, signal, async (budget, cancel) => {
          const pool = await this.ready();
          const f = await pool.render(this.styleRef(state, style), () => this.batches.close(batch, cfg.tile_buffer, MAX_FRAME).frame, { cancel, client, onStart: () => budget.start() });
          if (this.pool === pool) this.runtime.rendererState = 'ready';
          const plan = batch.plan!;
          return this.storeTiles(state, style, f, plan, cells(plan), ([x, y]) => batch.cellKey(x, y), format, started, { ...f.timings });
        });
      } finally {
        await release();
      }
    } finally {
      // Drawn, failed or dropped, the batch is over: a tile asked for later starts a new one.
      this.batches.finish(batch);
    }
  }

  private async renderMetatile(
    state: AppState,
    style: LoadedStyle,
    plan: ReturnType<typeof planMetatile>,
    cells: [number, number][],
    cellKey: (c: [number, number]) => string,
    format: ImageFormat,
    started: number,
    budget: Budget,
    cancel: AbortSignal,
    client: string | undefined,
  ): Promise<Rendered> {
    const drawn = await this.renderFrame(state, style, plan.frame, budget, cancel, client);
    return this.storeTiles(state, style, drawn.raw, plan, cells, cellKey, format, started, drawn.timing);
  }

  /** Cuts the tiles of a drawn metatile or batch out of its pixels, encodes them and caches them. */
  private async storeTiles(
    state: AppState,
    style: LoadedStyle,
    raw: RawImage,
    plan: MetatilePlan,
    cells: [number, number][],
    cellKey: (c: [number, number]) => string,
    format: ImageFormat,
    started: number,
    timing: Record<string, number>,
  ): Promise<Rendered> {
    const cache = this.cache!;
    const encodeStart = performance.now();
    const encode = this.encodeOptions(state);
    // Tiles are encoded concurrently: sharp runs each on a libvips thread.
    const bodies = await Promise.all(cells.map(([x, y]) => encodeRegion(raw, tileRect(plan, x, y), format, encode)));
    const images = new Map<string, CachedImage>();
    await Promise.all(
      cells.map(async (c, i) => {
        const body = bodies[i];
        const image: CachedImage = { body, etag: etagOf(body), contentType: CONTENT_TYPES[format] };
        images.set(cellKey(c), image);
        cache.setMemory(cellKey(c), image);
        // Written before the claims are released: a process (or another machine) waiting on them finds the tiles.
        await Promise.all([cache.setDisk(cellKey(c), body), sharedCache.put(cellKey(c), body)]);
      }),
    );
    const done = performance.now();
    renderMetrics.observeDuration(style.id, format, (done - started) / 1000);
    return { images, timing: { ...timing, encode: done - encodeStart, tiles: cells.length, total: done - started } };
  }

  /** A static map or social card: one frame (in parts when large), overlays drawn over it, encoded. */
  async image(
    state: AppState,
    style: LoadedStyle,
    cam: Camera,
    ratio: number,
    format: ImageFormat,
    overlays: Overlays | undefined,
    requestKey: string,
    caller: RenderCaller = {},
  ): Promise<RenderResult> {
    const key = `${style.id}/${this.contentKey(state, style)}/image/${createHash('sha256').update(requestKey).digest('hex').slice(0, 32)}`;
    const hit = this.cache!.getMemory(key);
    if (hit) return { image: hit, from: 'memory', timing: undefined };
    const claim = await sharedCache.claim('image', key, state.config.render.queue_timeout_ms + state.config.render.timeout_ms, caller.signal);
    if (claim.kind === 'hit') return this.fromShared(key, claim.body, CONTENT_TYPES[format], false);
    try {
      return await this.drawImage(state, style, cam, ratio, format, overlays, key, caller);
    } finally {
      await claim.release();
    }
  }

  /** A static map or social card no cache had. */
  private async drawImage(state: AppState, style: LoadedStyle, cam: Camera, ratio: number, format: ImageFormat, overlays: Overlays | undefined, key: string, caller: RenderCaller): Promise<RenderResult> {
    const rendered = await this.shared(
      key,
      (signal) =>
        this.withinBudget(state.config.render.timeout_ms, signal, async (budget, cancel) => {
          const started = performance.now();
          const drawn = await this.renderFrame(state, style, { ...cam, ratio }, budget, cancel, caller.client);
          const encodeStart = performance.now();
          const svg = overlays && hasOverlays(overlays) ? overlaySvg(overlays, cam, ratio) : undefined;
          const body = await encodeWithOverlay(drawn.raw, svg, format, this.encodeOptions(state));
          const image: CachedImage = { body, etag: etagOf(body), contentType: CONTENT_TYPES[format] };
          this.cache!.setMemory(key, image);
          await sharedCache.put(key, body);
          const done = performance.now();
          renderMetrics.observeDuration(style.id, format, (done - started) / 1000);
          return { images: new Map([[key, image]]), timing: { ...drawn.timing, encode: done - encodeStart, total: done - started } };
        }),
      style.id,
      caller.signal,
    );
    return { image: rendered.images.get(key)!, from: 'render', timing: rendered.timing };
  }

  /**
   * Runs `work` once for concurrent callers of the same key; counts failures for the metrics. A caller whose
   * request goes away stops waiting at once; when the last one has gone the work's signal is aborted, so parts
   * still queued are dropped (a frame already being drawn finishes and is cached), and a later request for the
   * same key starts afresh.
   */
  private shared(key: string, work: (signal: AbortSignal) => Promise<Rendered>, styleId: string, signal: AbortSignal | undefined): Promise<Rendered> {
    if (signal?.aborted) return Promise.reject(new RenderError('cancelled', 'the client went away'));
    let entry = this.inflight.get(key);
    if (!entry) {
      const abort = new AbortController();
      const created: SharedRender = { abort, waiters: 0, promise: Promise.resolve(undefined as unknown as Rendered) };
      created.promise = work(abort.signal)
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

  /**
   * Runs one render within `render.timeout_ms`: the clock starts when its first frame begins on a renderer (a
   * browser start, a page replacement or a style load before it are not counted, as in the render thread's own
   * limit) and covers drawing, joining parts, overlays and encoding. Past it the answer is a timeout at once and
   * parts still queued are dropped; work already under way finishes in the background and is cached.
   */
  private async withinBudget<T>(timeoutMs: number, signal: AbortSignal, run: (budget: Budget, cancel: AbortSignal) => Promise<T>): Promise<T> {
    const expired = new AbortController();
    const budget = new Budget(timeoutMs, () => expired.abort());
    try {
      return await budget.race(run(budget, AbortSignal.any([signal, expired.signal])));
    } finally {
      budget.clear();
    }
  }

  /** Pixels of a frame of any size: parts drawn concurrently and joined, or a pitched view drawn smaller and scaled. */
  private async renderFrame(state: AppState, style: LoadedStyle, frame: Frame, budget: Budget, signal: AbortSignal, client?: string): Promise<DrawnFrame> {
    const pool = await this.ready();
    const ref = this.styleRef(state, style);
    const call = (cancel: AbortSignal) => ({ cancel, client, onStart: () => budget.start() });
    const drawnBy = (f: RenderedFrame) => {
      // A renderer draws again after failed starts: ready again.
      if (this.pool === pool) this.runtime.rendererState = 'ready';
      return f;
    };
    const parts = splitFrame(frame, pool.maxFrame, SPLIT_BUFFER);
    const pw = Math.round(frame.width * frame.ratio);
    const ph = Math.round(frame.height * frame.ratio);
    const timing = (t: RenderedFrame['timings']): Record<string, number> => ({ ...t });
    if (parts.length === 1) {
      if (pw <= pool.maxFrame && ph <= pool.maxFrame) {
        const f = drawnBy(await pool.render(ref, frame, call(signal)));
        return { raw: f, timing: timing(f.timings) };
      }
      const ratio = pool.maxFrame / Math.max(frame.width, frame.height);
      const smaller = drawnBy(await pool.render(ref, { ...frame, ratio }, call(signal)));
      return { raw: await resizeRaw(smaller, pw, ph), timing: timing(smaller.timings) };
    }
    // When one part fails the answer is an error: parts still waiting in the queue are dropped.
    const cancel = new AbortController();
    // One listener per part (and per retry): not a leak.
    setMaxListeners(2 * parts.length, cancel.signal);
    const either = AbortSignal.any([signal, cancel.signal]);
    setMaxListeners(2 * parts.length + 2, either);
    const drawn = await Promise.all(
      parts.map((p) =>
        pool.render(ref, p.frame, call(either)).then(drawnBy, (err: unknown) => {
          cancel.abort();
          throw err;
        }),
      ),
    );
    const whole: RawImage = { data: new Uint8Array(pw * ph * 4), width: pw, height: ph, opaque: drawn.every((d) => d.opaque === true) };
    parts.forEach((p, i) => pasteRaw(whole, cropRaw(drawn[i], { left: p.cropLeft, top: p.cropTop, width: p.width, height: p.height }), p.left, p.top));
    // Parts run concurrently: report the slowest part's phases.
    const slowest = drawn.reduce((a, b) => (sum(b.timings) > sum(a.timings) ? b : a));
    return { raw: whole, timing: { ...timing(slowest.timings), parts: parts.length } };
  }

  get cacheStats(): { entries: number; bytes: number } {
    return { entries: this.cache?.entries ?? 0, bytes: this.cache?.bytes ?? 0 };
  }
}

const sum = (t: RenderedFrame['timings']) => t.resources + t.draw + t.readback + t.transfer + t.style;
