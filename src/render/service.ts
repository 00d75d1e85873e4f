// The rendering service of one HTTP process: turns tile, static-map and social-card requests into images. A tile
// comes from memory, disk, its owner process (peers.ts) or the fleet's shared cache before it is drawn, with the
// other tiles of its metatile or batch, and cut; a static map is one frame with its overlays composited. Every
// result is cached and concurrent identical requests share one render (shared-renders.ts). The pool itself, across
// reloads, is pool-keeper.ts's; frames of any size are frame-drawing.ts's.
import { createHash } from 'node:crypto';
import path from 'node:path';
import { resolvedCacheDir } from '../config/paths.js';
import type { Logger } from '../log.js';
import type { RuntimeStatus } from '../runtime.js';
import type { AppState } from '../state/app-state.js';
import type { LoadedStyle } from '../styles/loaded-style.js';
import { etagOf } from '../serve/tile-service.js';
import { sharedCache, type SharedEntry } from '../shared-cache/client.js';
import { styleIdentity } from '../shared-cache/identity.js';
import type { Budget } from './budget.js';
import type { Camera } from './camera.js';
import { drawFrame, withinBudget, type DrawnFrame } from './frame-drawing.js';
import { encodeRegion, encodeWithOverlay, type EncodeOptions } from './image.js';
import { renderMetrics } from './metrics.js';
import type { RenderPeers } from './peers.js';
import { MAX_FRAME, RenderPoolKeeper, START_WAIT_MS, styleRef } from './pool-keeper.js';
import type { RenderPool } from './pool.js';
import { RenderCache, type CachedImage } from '../shared-cache/render-cache.js';
import { RenderError, type Frame, type FrameEncoding, type StyleRef } from './renderer.js';
import { MarkerIcons } from './marker-icons.js';
import type { AppFetch } from './resources.js';
import { SharedRenders, type Rendered } from './shared-renders.js';
import type { RenderClass } from './render-class.js';
import { tilePath, type RenderCaller, type RenderOutput, type RenderResult } from './render-result.js';
import { pagePngLevel, variantOf } from './image-encoding.js';
import { CONTENT_TYPES } from './static-params.js';
import { ExpiredTiles, isFresh, tileExpiredAt, type DirtyTile } from './expired-tiles.js';
import { expiries } from '../expire/expiries.js';
import type { ExpiryBatch } from '../expire/batch.js';
import type { ImageFormat } from './static-params.js';
import { opaqueAt } from './style-opacity.js';
import { hasOverlays, overlaySvg, type Overlays } from './svg.js';
import { GL_FRAME_LIMIT } from './backends/gl-stack.js';
import { batchEdge, planMetatile, tileRect, type MetatilePlan, type TileRequest } from './tile-render.js';
import { cells, TileBatches, type TileBatch } from './tile-batches.js';

/** A caller of a render others may join: the render's class (render-class.ts) decides its place in the queue. */
type SharedCaller = RenderCaller & { shared?: RenderClass };

/** Adaptive metatiles: how long a new batch waits for the rest of a view's requests before asking for a renderer. */
const GATHER_MS = 8;
/**
 * Bulk batches gather longer: nobody waits for them, and a seed's or an expiry's tiles reach the batch after cache
 * and lock look-ups of their own (a Redis round trip each); a fuller frame parses its source tiles for more tiles.
 */
const BULK_GATHER_MS = 50;

/**
 * A bulk frame that failed for one of these is drawn again as smaller ones (8 -> 4 -> 2 -> 1): a stack that cannot
 * draw the large frame (memory, a lost context, a frame past the time limit) still seeds. A full queue, a client
 * gone or a broken style would fail the smaller frames alike.
 */
const SMALLER_AFTER: ReadonlySet<RenderError['reason']> = new Set(['failed', 'crash', 'timeout']);

/** Bulk work: a seed's tiles and background re-renders of expired tiles (render.bulk_metatile). */
const isBulk = (caller: RenderCaller) => caller.priority === 'bulk' || caller.priority === 'expired';

export class RenderService {
  /** The render pool across reloads (pool-keeper.ts). */
  private readonly keeper: RenderPoolKeeper;
  private cache: RenderCache | undefined;
  private cacheKeyOfCache: string | undefined;
  private lastState: AppState | undefined;
  private readonly inflight = new SharedRenders();
  /** Adaptive metatiles: open batches per block and the tiles of batches being drawn (tile-batches.ts). */
  private readonly batches = new TileBatches();
  /**
   * Bulk work's batches, in blocks of render.bulk_metatile: apart from a person's, so that a person's tile never
   * joins a large frame still waiting (it opens its own batch, drawn first: interactive renders come first).
   */
  private readonly bulkBatches = new TileBatches();
  /** Bulk blocks drawn smaller than asked (the frame limit), already logged: once per process and size. */
  private readonly bulkLimitLogged = new Set<string>();
  /** The other worker processes, when this one is part of a cluster (tiles are drawn by their block's owner). */
  private peers: RenderPeers | undefined;
  private app: AppFetch | undefined;
  /** Images of static maps' icon markers (sprite, files, allowed hosts), fetched and cached per process. */
  readonly markerIcons = new MarkerIcons(() => this.app);
  /** Expired tiles: re-renders under way, and eager mode's variants and dirty queue (expired-tiles.ts). */
  /** Eager re-renders in flight: a bulk frame's tiles, so that they meet in one bulk batch. */
  private readonly expired = new ExpiredTiles(
    (tile) => this.redrawDirty(tile),
    () => Math.max(2, (this.lastState?.config.render.bulk_metatile ?? 1) ** 2),
  );
  private readonly onExpiry = (batch: ExpiryBatch) => {
    const cfg = this.lastState?.config.render;
    if (cfg?.rerender_expired === 'eager') this.expired.expired(this.lastState!, batch, cfg.rerender_max_zoom, cfg.dirty_queue_size);
  };

  /**
   * `reserveInteractive` false: background renders (bulk, expired) may hold every renderer. Only for a process that
   * answers no one interactively: `tileserver-ts seed` (src/seed/service.ts).
   */
  constructor(
    runtime: RuntimeStatus,
    private readonly log: Logger,
    o: { reserveInteractive?: boolean } = {},
  ) {
    this.keeper = new RenderPoolKeeper(runtime, log, o.reserveInteractive ?? true);
    expiries.on('batch', this.onExpiry);
  }

  /** The style as the renderers load it, with the last expiry of its sources (renderers reload the tiles it reached). */
  private styleRefOf(state: AppState, style: LoadedStyle, out: RenderOutput): StyleRef {
    return styleRef(state, style, out.lang, this.expired.lastExpiryOf(state, style));
  }

  /** Tiles waiting in the eager dirty queue, and those it dropped because it was full (the metrics read these). */
  get dirtyQueue(): { length: number; drops: number } {
    return { length: this.expired.dirtyLength, drops: this.expired.drops };
  }

  /**
   * Eager mode: one dirty tile drawn again, if this process holds an old image of it (mod_tile's render_expired
   * re-renders the tiles that exist; one nobody has is drawn when first asked for) and the load allows.
   */
  private async redrawDirty(d: DirtyTile): Promise<void> {
    const state = this.lastState;
    const style = state?.styles.get(d.variant.style);
    if (!state || !style || !this.cache) return;
    const t: TileRequest = { z: d.z, x: d.x, y: d.y, base: d.variant.base, scale: d.variant.scale };
    const out = d.variant.out;
    const lang = out.lang ? `/lang-${out.lang.tag}` : '';
    const base = `${style.id}/${this.contentKey(state, style)}${lang}/${t.base}@${t.scale}x`;
    const key = `${base}/${t.z}/${t.x}/${t.y}.${variantOf(out.encoding)}`;
    const expiredAt = tileExpiredAt(state, style, t.z, t.x, t.y);
    const held = this.cache.getMemory(key) ?? (await this.cache.getDiskEntry(key));
    if (!held || isFresh(held.madeAt, expiredAt)) return;
    const threshold = state.config.render.stale_threshold;
    if (threshold > 0 && this.load.queued >= threshold) return renderMetrics.countRerender(style.id, 'skipped');
    await this.expired.refresh(key, style.id, expiredAt, async () => ({ stored: !(await this.makeTile(state, style, t, out, base, key, { priority: 'expired' }, expiredAt, true)).stale }));
  }

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
    this.app = fetch;
    this.keeper.attach(fetch);
  }

  /** Follows the active state: the pool (pool-keeper.ts) and the image caches; drops memory-cached images on reload. */
  onState(state: AppState): void {
    if (this.lastState && this.lastState !== state) this.cache?.clearMemory();
    this.lastState = state;
    const cfg = state.config.render;
    const dir = resolvedCacheDir(state);
    const cacheKey = JSON.stringify([cfg.memory_cache_mb, cfg.disk_cache_mb, dir]);
    if (cacheKey !== this.cacheKeyOfCache) {
      this.cache = new RenderCache(cfg.memory_cache_mb, path.join(dir, 'render'), cfg.disk_cache_mb, (err) => this.log.warn({ err: err.message }, 'render cache'));
      this.cacheKeyOfCache = cacheKey;
    }
    this.keeper.follow(state);
  }

  /** Renderer replacements and failed starts since this process started. */
  get events(): RenderPoolKeeper['events'] {
    return this.keeper.events;
  }

  /** Renders waiting for a renderer and renders being drawn in this process now. */
  get load(): { queued: number; busy: number } {
    return this.keeper.load;
  }

  /** Counters of the current pool (renders done, failed, retried, dropped, expired in the queue). */
  get poolCounts(): RenderPool['counts'] | undefined {
    return this.keeper.counts;
  }

  close(): Promise<void> {
    expiries.off('batch', this.onExpiry);
    return this.keeper.close();
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
    const cfg = state.config.render;
    return { pngCompression: cfg.png_compression, jpegQuality: cfg.jpeg_quality, webpQuality: cfg.webp_quality, avifQuality: cfg.avif_quality };
  }

  /**
   * The frame with the renderer asked to encode the given regions itself (`render.tile_encoder = "browser"`): only
   * encoded bytes then leave the browser. A backend that cannot (native) returns pixels and sharp encodes them.
   */
  private withEncoding(state: AppState, style: LoadedStyle, frame: Frame, out: RenderOutput, tiles: FrameEncoding['tiles'], caller: SharedCaller): Frame {
    const cfg = state.config.render;
    const e = out.encoding;
    // The browser has no AVIF encoder and no lossless WebP switch: those frames come back as pixels for sharp.
    if (cfg.tile_encoder !== 'browser' || e.format === 'avif' || e.lossless) return frame;
    const format = e.format;
    const quality = (e.quality ?? (format === 'jpeg' ? cfg.jpeg_quality : cfg.webp_quality)) / 100;
    // A tile always lies within the world (only a frame's buffer may reach past its edges, where nothing is painted).
    const level = format === 'png' ? pagePngLevel(cfg, caller.shared?.priority ?? caller.priority) : undefined;
    return { ...frame, encode: { format, quality, opaque: opaqueAt(style.style, frame.zoom), level, tiles } };
  }

  /**
   * A raster tile of a style: from memory, disk, its owner process, the fleet's cache, or its metatile's render.
   * An entry an expiry reached (made before it) is answered at once, marked stale, while one re-render in the
   * background replaces it (expired-tiles.ts); a bulk request (seeding) waits for the fresh tile instead.
   */
  async tile(state: AppState, style: LoadedStyle, t: TileRequest, out: RenderOutput, caller: RenderCaller = {}): Promise<RenderResult> {
    const r = await this.findTile(state, style, t, out, caller);
    // A forwarded request's stale answer is counted by the process answering the client.
    if (r.stale && !caller.fromPeer) renderMetrics.countStale(style.id);
    return r;
  }

  private async findTile(state: AppState, style: LoadedStyle, t: TileRequest, out: RenderOutput, caller: RenderCaller): Promise<RenderResult> {
    const cache = this.cache!;
    const format = out.encoding.format;
    // The language and the encoding variant are part of every key: each is its own image in every cache.
    const lang = out.lang ? `/lang-${out.lang.tag}` : '';
    const base = `${style.id}/${this.contentKey(state, style)}${lang}/${t.base}@${t.scale}x`;
    const key = `${base}/${t.z}/${t.x}/${t.y}.${variantOf(out.encoding)}`;
    if (caller.priority !== 'bulk') this.expired.served({ style: style.id, base: t.base, scale: t.scale, out });
    const expiredAt = tileExpiredAt(state, style, t.z, t.x, t.y);
    let old: RenderResult | undefined;
    const hit = cache.getMemory(key);
    if (hit) {
      if (isFresh(hit.madeAt, expiredAt)) return { image: hit, from: 'memory', timing: undefined };
      old = { image: hit, from: 'memory', timing: undefined };
    } else {
      const fromDisk = await cache.getDiskEntry(key);
      if (fromDisk) {
        const image: CachedImage = { body: fromDisk.body, etag: etagOf(fromDisk.body), contentType: CONTENT_TYPES[format], madeAt: fromDisk.madeAt };
        if (isFresh(image.madeAt, expiredAt)) {
          cache.setMemory(key, image);
          return { image, from: 'disk', timing: undefined };
        }
        old = { image, from: 'disk', timing: undefined };
      }
    }
    if (old && caller.priority !== 'bulk') {
      const redraw = async () => ({ stored: !(await this.makeTile(state, style, t, out, base, key, { client: caller.client, priority: 'expired' }, expiredAt, true)).stale });
      return this.answerStale(state, style, key, old, expiredAt, redraw);
    }
    return this.makeTile(state, style, t, out, base, key, caller, expiredAt, false);
  }

  /**
   * The old image of an expired tile, marked stale, with its re-render started in the background (once per key in
   * this process; not above render.stale_threshold renders waiting, when the load is shed: `skipped`).
   * `dropped` runs when no re-render was started (a lock taken for it is released).
   */
  private answerStale(state: AppState, style: LoadedStyle, key: string, old: RenderResult, expiredAt: number, redraw: () => Promise<{ stored: boolean }>, dropped: () => void = () => {}): RenderResult {
    const threshold = state.config.render.stale_threshold;
    if (threshold > 0 && this.load.queued >= threshold) {
      renderMetrics.countRerender(style.id, 'skipped');
      dropped();
    } else if (!this.expired.refresh(key, style.id, expiredAt, redraw)) dropped();
    return { ...old, stale: true };
  }

  /**
   * A tile no layer of this process had fresh: from its owner process, the fleet's cache, or drawn. `background`:
   * the re-render of an expired tile whose old image was answered already (it never answers stale itself).
   */
  private async makeTile(state: AppState, style: LoadedStyle, t: TileRequest, out: RenderOutput, base: string, key: string, caller: RenderCaller, expiredAt: number, background: boolean): Promise<RenderResult> {
    const cache = this.cache!;
    const format = out.encoding.format;
    // Another process owns this tile's block: its pages hold the neighbourhood's parsed source tiles.
    // Always the owner, even when a renderer here is idle: drawing here would parse the neighbourhood's source tiles
    // a second time (measured: fewer tiles per CPU-second when idle processes drew for themselves).
    const owner = caller.fromPeer || !state.config.render.owner_routing ? undefined : this.peers?.ownerOf(t.z, t.x, t.y);
    if (owner !== undefined) {
      // The owner's own bounds (queue wait, render time, renderer start) come first; this is the backstop.
      const limit = state.config.render.queue_timeout_ms + state.config.render.timeout_ms + START_WAIT_MS;
      const got = await this.peers!.forward(owner, tilePath(style.id, t, out), caller.signal, caller.client, limit);
      if (got) {
        const image: CachedImage = { body: got.body, etag: got.etag, contentType: got.contentType, madeAt: got.madeAt };
        // The owner answers an expired tile stale while it draws it again; kept here, that answer would pass for
        // fresh. Left out, the next request here asks the owner again and gets the new tile.
        const stale = got.stale || !isFresh(got.madeAt, expiredAt);
        if (!stale) cache.setMemory(key, image);
        return { image, from: 'peer', timing: undefined, peerTiming: got.timing, stale };
      }
    }
    // The fleet's shared cache, and its lock: another machine drawing this tile is waited for, not repeated. An
    // entry made before the tile's expiry counts as absent for the lock (one re-render for the fleet).
    const claim = await sharedCache.claim('tile', key, state.config.render.queue_timeout_ms + state.config.render.timeout_ms, caller.signal, expiredAt);
    if (claim.kind === 'hit') return this.fromShared(key, claim, CONTENT_TYPES[format], true);
    // Another machine is drawing it again: its old bytes now.
    if (claim.kind === 'stale') return { image: this.imageOf(claim.body, format, claim.madeAt), from: 'shared', timing: undefined, stale: true };
    if (claim.stale && !background && caller.priority !== 'bulk') {
      // Only the fleet had it, expired: answered from there while this machine draws it again, holding the lock.
      const old: RenderResult = { image: this.imageOf(claim.stale.body, format, claim.stale.madeAt), from: 'shared', timing: undefined };
      const redraw = async () => {
        try {
          const r = await this.drawTile(state, style, t, out, base, key, { client: caller.client, priority: 'expired' });
          return { stored: isFresh(r.image.madeAt, expiredAt) };
        } finally {
          void claim.release();
        }
      };
      return this.answerStale(state, style, key, old, expiredAt, redraw, () => void claim.release());
    }
    try {
      return await this.drawTile(state, style, t, out, base, key, caller);
    } finally {
      // Not awaited: with Redis stopped mid-render, the unlock would cost the answer a `shared_timeout_ms`.
      void claim.release();
    }
  }

  private imageOf(body: Buffer, format: ImageFormat, madeAt: number): CachedImage {
    return { body, etag: etagOf(body), contentType: CONTENT_TYPES[format], madeAt };
  }

  /** An image found in the shared cache, kept in this machine's caches too (with the time it was made). */
  private fromShared(key: string, entry: SharedEntry, contentType: string, toDisk: boolean): RenderResult {
    const image: CachedImage = { body: entry.body, etag: etagOf(entry.body), contentType, madeAt: entry.madeAt };
    this.cache!.setMemory(key, image);
    // Tiles are kept on disk too (static images never are).
    if (toDisk) void this.cache!.setDisk(key, entry.body, entry.madeAt);
    return { image, from: 'shared', timing: undefined };
  }

  /** A tile no cache had: drawn in its metatile or batch. */
  private async drawTile(state: AppState, style: LoadedStyle, t: TileRequest, out: RenderOutput, base: string, key: string, caller: RenderCaller): Promise<RenderResult> {
    const cache = this.cache!;
    const cfg = state.config.render;
    const format = out.encoding.format;
    const variant = variantOf(out.encoding);
    // Seeding always draws in bulk batches; a re-render too with adaptive metatiles (with a fixed one it redraws that
    // metatile whole, sharing its key with the people who ask for its tiles meanwhile).
    if (cfg.metatile === 'auto' || caller.priority === 'bulk') return this.batchedTile(state, style, t, out, base, key, caller);
    const plan = planMetatile(t, cfg.metatile, cfg.tile_buffer, MAX_FRAME);
    const metaKey = `${base}/${t.z}/${plan.x0}/${plan.y0}/${plan.size}.${variant}`;
    const n = 2 ** t.z;
    const cells: [number, number][] = [];
    for (let y = plan.y0; y < Math.min(n, plan.y0 + plan.size); y++) for (let x = plan.x0; x < Math.min(n, plan.x0 + plan.size); x++) cells.push([x, y]);
    const cellKey = ([x, y]: [number, number]) => `${base}/${t.z}/${x}/${y}.${variant}`;
    const rendered = await this.inflight.run(
      metaKey,
      async (signal, cls) => {
        const started = performance.now();
        // Before any data is read: an expiry from now on makes these tiles stale.
        const madeAt = Date.now();
        // Worker processes share the disk cache: when another one is drawing this metatile, take its tiles (those
        // made after their expiry: a metatile left from before it is drawn again).
        let release = await cache.claim(metaKey, cfg.timeout_ms * 2);
        if (!release) {
          await cache.awaitRelease(metaKey, cfg.timeout_ms);
          const found = new Map<string, CachedImage>();
          for (const c of cells) {
            const entry = await cache.getDiskEntry(cellKey(c));
            if (entry && isFresh(entry.madeAt, tileExpiredAt(state, style, t.z, c[0], c[1]))) found.set(cellKey(c), this.imageOf(entry.body, format, entry.madeAt));
          }
          if (found.has(key)) return { images: found, timing: { wait: performance.now() - started } };
          release = (await cache.claim(metaKey, cfg.timeout_ms * 2)) ?? (async () => {});
        }
        try {
          return await withinBudget(cfg.timeout_ms, signal, (budget, cancel) => this.renderMetatile(state, style, plan, cells, cellKey, out, started, madeAt, budget, cancel, { ...caller, shared: cls }));
        } finally {
          await release();
        }
      },
      style.id,
      caller.signal,
      caller.priority,
    );
    const image = rendered.images.get(key);
    if (!image) throw new RenderError('failed', `the metatile render did not produce ${key}`);
    return { image, from: rendered.timing.wait !== undefined ? 'disk' : 'render', timing: rendered.timing };
  }

  /**
   * A tile drawn with the other tiles of its block asked for by the time a renderer is free (tile-batches.ts): joins
   * the batch already drawing it, or the block's open batch, or opens one.
   */
  private async batchedTile(state: AppState, style: LoadedStyle, t: TileRequest, out: RenderOutput, base: string, key: string, caller: RenderCaller): Promise<RenderResult> {
    if (!isBulk(caller)) return this.batchOnce(state, style, t, out, base, key, caller, undefined);
    const cfg = state.config.render;
    let largest = cfg.bulk_metatile;
    for (;;) {
      try {
        return await this.batchOnce(state, style, t, out, base, key, caller, largest);
      } catch (err) {
        // The waiters of a failed bulk frame each ask again in half its block: they meet in the same smaller batch.
        if (largest === 1 || !(err instanceof RenderError) || !SMALLER_AFTER.has(err.reason)) throw err;
        largest /= 2;
      }
    }
  }

  /** Bulk work's block edge for a tile: render.bulk_metatile or less, within the bulk frame limit (logged once when less). */
  private bulkEdgeOf(state: AppState, style: LoadedStyle, t: TileRequest, largest: number): { edge: number; limit: number; smaller: boolean } {
    const cfg = state.config.render;
    const limit = Math.min(cfg.bulk_max_frame, GL_FRAME_LIMIT);
    const edge = batchEdge(t, cfg.tile_buffer, limit, largest);
    const smaller = edge < Math.min(largest, 2 ** t.z);
    const seen = `${largest}/${edge}/${t.base}@${t.scale}`;
    if (smaller && !this.bulkLimitLogged.has(seen)) {
      this.bulkLimitLogged.add(seen);
      const px = (largest * t.base + 2 * cfg.tile_buffer) * t.scale;
      this.log.info({ style: style.id, asked: `${largest}x${largest}`, drawn: `${edge}x${edge}`, tile: `${t.base}@${t.scale}x`, frame_px: px, limit_px: limit }, 'bulk frames of this tile size pass the frame limit: drawn in smaller blocks');
    }
    return { edge, limit, smaller };
  }

  /**
   * One try at a batched tile: joins the batch already drawing it, or the block's open batch, or opens one.
   * `bulkLargest`: bulk work's largest block edge (bulk batches); undefined: a person's tile (4x4 blocks).
   */
  private async batchOnce(state: AppState, style: LoadedStyle, t: TileRequest, out: RenderOutput, base: string, key: string, caller: RenderCaller, bulkLargest: number | undefined): Promise<RenderResult> {
    const cfg = state.config.render;
    const ext = variantOf(out.encoding);
    const cellKey = (x: number, y: number) => `${base}/${t.z}/${x}/${y}.${ext}`;
    // Bulk work takes a tile from any batch drawing it; a person only from a person's batch (never a large frame).
    const drawing = [this.batches.coverOf(key), bulkLargest === undefined ? undefined : this.bulkBatches.coverOf(key)].find((k) => k !== undefined && this.inflight.has(k));
    let batchKey: string;
    let work: (signal: AbortSignal, cls: RenderClass) => Promise<Rendered>;
    if (drawing !== undefined) {
      batchKey = drawing;
      // Joining a render in progress: its work function is never called.
      work = () => Promise.reject(new RenderError('failed', 'the batch drawing this tile ended before it was joined'));
    } else if (bulkLargest !== undefined) {
      const { edge, limit, smaller } = this.bulkEdgeOf(state, style, t, bulkLargest);
      const bx = Math.floor(t.x / edge) * edge;
      const by = Math.floor(t.y / edge) * edge;
      const batch = this.bulkBatches.join(`${base}/${t.z}/bulk${edge}/${bx}/${by}.${ext}`, t, edge, cellKey);
      batchKey = batch.key;
      work = (signal, cls) => this.renderBatch(state, style, batch, out, signal, { ...caller, shared: cls }, { batches: this.bulkBatches, maxFrame: limit, smaller });
    } else {
      const edge = batchEdge(t, cfg.tile_buffer, MAX_FRAME);
      const bx = Math.floor(t.x / edge) * edge;
      const by = Math.floor(t.y / edge) * edge;
      const batch = this.batches.join(`${base}/${t.z}/${bx}/${by}.${ext}`, t, edge, cellKey);
      batchKey = batch.key;
      work = (signal, cls) => this.renderBatch(state, style, batch, out, signal, { ...caller, shared: cls });
    }
    const rendered = await this.inflight.run(batchKey, work, style.id, caller.signal, caller.priority);
    const image = rendered.images.get(key);
    if (!image) throw new RenderError('failed', `the tile batch did not produce ${key}`);
    return { image, from: rendered.timing.wait !== undefined ? 'disk' : 'render', timing: rendered.timing };
  }

  /**
   * Draws a batch once a renderer is free; its frame is decided then (TileBatches.close). `bulk`: a bulk batch, with
   * its own batches, frame limit, and whether its block is smaller than asked (counted).
   */
  private async renderBatch(
    state: AppState,
    style: LoadedStyle,
    batch: TileBatch,
    out: RenderOutput,
    signal: AbortSignal,
    caller: SharedCaller,
    bulk?: { batches: TileBatches; maxFrame: number; smaller: boolean },
  ): Promise<Rendered> {
    const batches = bulk?.batches ?? this.batches;
    const cache = this.cache!;
    const cfg = state.config.render;
    const format = out.encoding.format;
    const started = performance.now();
    // Before any data is read: an expiry from now on makes these tiles stale.
    const madeAt = Date.now();
    try {
      // A view's requests arrive within a few milliseconds of each other: let them join before asking for a renderer.
      await new Promise((resolve) => setTimeout(resolve, bulk ? BULK_GATHER_MS : GATHER_MS));
      // Worker processes share the disk cache: when another one is drawing in this block, take its tiles if they
      // are all the batch wants.
      let release = await cache.claim(batch.blockKey, cfg.timeout_ms * 2);
      if (!release) {
        await cache.awaitRelease(batch.blockKey, cfg.timeout_ms);
        const found = new Map<string, CachedImage>();
        let all = true;
        for (const w of batch.wanted) {
          const [x, y] = w.split(',').map(Number);
          const entry = await cache.getDiskEntry(batch.cellKey(x, y));
          if (entry && isFresh(entry.madeAt, tileExpiredAt(state, style, batch.tile.z, x, y))) found.set(batch.cellKey(x, y), this.imageOf(entry.body, format, entry.madeAt));
          else all = false;
        }
        if (all && !batch.plan) {
          batches.finish(batch);
          return { images: found, timing: { wait: performance.now() - started } };
        }
        release = (await cache.claim(batch.blockKey, cfg.timeout_ms * 2)) ?? (async () => {});
      }
      // A bulk frame's time limit is render.timeout_ms per 2x2 metatile's worth of its block: nobody waits for it, and
      // an 8x8 frame costs about 16 2x2 ones (on a loaded 2-core machine 8x8 frames passed the 30 s of one). Its wait
      // for a renderer likewise: it waits behind bulk frames (a 10 s wait behind one made a seed's tiles 503s).
      const scale = bulk ? Math.max(1, batch.edge ** 2 / 4) : 1;
      const timeoutMs = cfg.timeout_ms * scale;
      try {
        return await withinBudget(timeoutMs, signal, async (budget, cancel) => {
          const pool = await this.keeper.ready();
          const frameOf = () => {
            // Decided now: a person who joined meanwhile raised the batch out of the re-renders' class. (A bulk
            // batch, seeding's or a background re-render's, keeps its whole block: its neighbours are asked next.)
            const plan = batches.close(batch, cfg.tile_buffer, bulk?.maxFrame ?? MAX_FRAME, caller.shared?.priority === 'expired');
            return this.withEncoding(state, style, plan.frame, out, cells(plan).map(([x, y]) => tileRect(plan, x, y)), caller);
          };
          const f = await pool.render(this.styleRefOf(state, style, out), frameOf, { cancel, client: caller.client, shared: caller.shared, onStart: () => budget.start(), timeoutMs, queueTimeoutMs: cfg.queue_timeout_ms * scale });
          this.keeper.drew(pool);
          const plan = batch.plan!;
          if (bulk) {
            renderMetrics.countBulkFrame(style.id, bulk.smaller ? 'smaller' : 'drawn', cells(plan).length);
            this.log.debug({ style: style.id, frame: `${plan.cols}x${plan.rows}`, z: batch.tile.z, x: plan.x0, y: plan.y0, class: caller.shared?.priority }, 'bulk frame');
          }
          return this.storeTiles(state, style, { raw: f, tiles: f.tiles, timing: { ...f.timings } }, plan, cells(plan), ([x, y]) => batch.cellKey(x, y), out, started, madeAt);
        });
      } catch (err) {
        // Said once per frame here; each of its waiters asks again in a smaller block (batchedTile).
        if (bulk && batch.plan && batch.edge > 1 && err instanceof RenderError && SMALLER_AFTER.has(err.reason)) {
          renderMetrics.countBulkFrame(style.id, 'failed', cells(batch.plan).length);
          this.log.warn({ style: style.id, frame: `${batch.plan.cols}x${batch.plan.rows}`, z: batch.tile.z, x: batch.plan.x0, y: batch.plan.y0, err: err.message }, 'bulk frame failed: its tiles are drawn in smaller frames');
        }
        throw err;
      } finally {
        await release();
      }
    } finally {
      // Drawn, failed or dropped, the batch is over: a tile asked for later starts a new one.
      batches.finish(batch);
    }
  }

  private async renderMetatile(
    state: AppState,
    style: LoadedStyle,
    plan: ReturnType<typeof planMetatile>,
    cells: [number, number][],
    cellKey: (c: [number, number]) => string,
    out: RenderOutput,
    started: number,
    madeAt: number,
    budget: Budget,
    cancel: AbortSignal,
    caller: SharedCaller,
  ): Promise<Rendered> {
    const frame = this.withEncoding(state, style, plan.frame, out, cells.map(([x, y]) => tileRect(plan, x, y)), caller);
    const drawn = await this.renderFrame(state, style, out, frame, budget, cancel, caller);
    return this.storeTiles(state, style, drawn, plan, cells, cellKey, out, started, madeAt);
  }

  /**
   * Caches the tiles of a drawn metatile or batch: encoded by the renderer already, or cut out of its pixels and
   * encoded here.
   */
  private async storeTiles(
    state: AppState,
    style: LoadedStyle,
    drawn: DrawnFrame,
    plan: MetatilePlan,
    cells: [number, number][],
    cellKey: (c: [number, number]) => string,
    out: RenderOutput,
    started: number,
    madeAt: number,
  ): Promise<Rendered> {
    const cache = this.cache!;
    const format = out.encoding.format;
    const encodeStart = performance.now();
    const encode = this.encodeOptions(state);
    const timing = drawn.timing;
    if (drawn.tiles && drawn.tiles.length !== cells.length) throw new RenderError('failed', `the renderer encoded ${drawn.tiles.length} tiles, ${cells.length} were asked for`);
    // Each tile gets a buffer of its own (the renderer's arrive as views of one upload): the caches count and keep
    // tiles one by one. Tiles cut here are encoded concurrently: sharp runs each on a libvips thread.
    const bodies = drawn.tiles
      ? drawn.tiles.map((t) => Buffer.from(t))
      : await Promise.all(cells.map(([x, y]) => encodeRegion(drawn.raw, tileRect(plan, x, y), out.encoding, encode)));
    const images = new Map<string, CachedImage>();
    await Promise.all(
      cells.map(async (c, i) => {
        const body = bodies[i];
        const image = this.imageOf(body, format, madeAt);
        images.set(cellKey(c), image);
        cache.setMemory(cellKey(c), image);
        // The shared write goes on in the background (sent before the lock's release, so stored before it: client.ts).
        sharedCache.put(cellKey(c), body, madeAt);
        // Written before the claims are released: another process of this machine waiting on them finds the tiles.
        await cache.setDisk(cellKey(c), body, madeAt);
      }),
    );
    const done = performance.now();
    renderMetrics.observeDuration(style.id, format, (done - started) / 1000);
    // In-renderer encoding is timed by the renderer; `store` is what is left here (copies, caches).
    const stored: Record<string, number> = drawn.tiles ? { store: done - encodeStart } : { encode: done - encodeStart };
    return { images, timing: { ...timing, ...stored, tiles: cells.length, total: done - started } };
  }

  /** A static map or social card: one frame (in parts when large), overlays drawn over it, encoded. */
  async image(
    state: AppState,
    style: LoadedStyle,
    cam: Camera,
    ratio: number,
    out: RenderOutput,
    overlays: Overlays | undefined,
    requestKey: string,
    caller: RenderCaller = {},
  ): Promise<RenderResult> {
    const format = out.encoding.format;
    // The request's own key, plus what it was resolved to: a negotiated format and a language from Accept-Language
    // are not in its URL.
    const what = `${requestKey}\n${variantOf(out.encoding)}\n${out.lang?.tag ?? ''}`;
    const key = `${style.id}/${this.contentKey(state, style)}/image/${createHash('sha256').update(what).digest('hex').slice(0, 32)}`;
    // A static image is no tile of the index: any expiry of a source its style draws, after it was made, makes it
    // stale, and it is drawn again (nobody browses a static map for its old pixels).
    const expiredAt = this.expired.lastExpiryOf(state, style);
    const hit = this.cache!.getMemory(key);
    if (hit && isFresh(hit.madeAt, expiredAt)) return { image: hit, from: 'memory', timing: undefined };
    const claim = await sharedCache.claim('image', key, state.config.render.queue_timeout_ms + state.config.render.timeout_ms, caller.signal, expiredAt);
    if (claim.kind === 'hit') return this.fromShared(key, claim, CONTENT_TYPES[format], false);
    // 'stale': another machine is drawing it and Redis holds only an old one: drawn here too, not answered old.
    try {
      return await this.drawImage(state, style, cam, ratio, out, overlays, key, caller);
    } finally {
      if (claim.kind === 'render') void claim.release();
    }
  }

  /** A static map or social card no cache had. */
  private async drawImage(state: AppState, style: LoadedStyle, cam: Camera, ratio: number, out: RenderOutput, overlays: Overlays | undefined, key: string, caller: RenderCaller): Promise<RenderResult> {
    const format = out.encoding.format;
    const rendered = await this.inflight.run(
      key,
      (signal, cls) =>
        withinBudget(state.config.render.timeout_ms, signal, async (budget, cancel) => {
          const started = performance.now();
          const madeAt = Date.now();
          // Static maps come back as pixels and sharp composites and encodes them: encoding in the page (tried, with
          // the overlays drawn there) cost 67-72 ms per 800x600 map against sharp's 21-28 ms, more than the smaller
          // transfer saved (bench/RESULTS.md, "Render overhead").
          const drawn = await this.renderFrame(state, style, out, { ...cam, ratio }, budget, cancel, { ...caller, shared: cls });
          const encodeStart = performance.now();
          const svg = overlays && hasOverlays(overlays) ? overlaySvg(overlays, cam, ratio) : undefined;
          const body = await encodeWithOverlay(drawn.raw, svg, out.encoding, this.encodeOptions(state));
          const image = this.imageOf(body, format, madeAt);
          this.cache!.setMemory(key, image);
          // In the background: the answer does not wait for Redis.
          sharedCache.put(key, body, madeAt);
          const done = performance.now();
          renderMetrics.observeDuration(style.id, format, (done - started) / 1000);
          return { images: new Map([[key, image]]), timing: { ...drawn.timing, encode: done - encodeStart, total: done - started } };
        }),
      style.id,
      caller.signal,
      caller.priority,
    );
    return { image: rendered.images.get(key)!, from: 'render', timing: rendered.timing };
  }

  /** Pixels of a frame of any size (frame-drawing.ts) on this process's pool. */
  private async renderFrame(state: AppState, style: LoadedStyle, out: RenderOutput, frame: Frame, budget: Budget, signal: AbortSignal, caller: SharedCaller): Promise<DrawnFrame> {
    const pool = await this.keeper.ready();
    return drawFrame(pool, this.styleRefOf(state, style, out), frame, budget, signal, { client: caller.client, priority: caller.priority, shared: caller.shared }, (p) => this.keeper.drew(p));
  }

  get cacheStats(): { entries: number; bytes: number } {
    return { entries: this.cache?.entries ?? 0, bytes: this.cache?.bytes ?? 0 };
  }
}

