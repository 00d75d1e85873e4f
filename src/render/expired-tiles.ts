// What the render service does with a tile an expiry reached (src/expire/), as mod_tile does it: the old image is
// answered at once, marked stale, while one re-render in the background replaces it in every cache layer. This
// module holds the parts that are not about finding or drawing a tile: whether an entry is stale, the re-renders
// under way (one per tile key in this process), the load above which a stale tile is answered without a re-render,
// and, for `render.rerender_expired = "eager"`, the variants recently served and the bounded dirty queue that
// re-renders tiles right after their expiry.
import type { ExpiryBatch } from '../expire/batch.js';
import { styleDependencies } from '../expire/dependencies.js';
import { expiries } from '../expire/expiries.js';
import { keyTile } from '../expire/tile-key.js';
import type { AppState } from '../state/app-state.js';
import type { LoadedStyle } from '../styles/loaded-style.js';
import { variantOf } from './image-encoding.js';
import { renderMetrics } from './metrics.js';
import type { RenderOutput } from './render-result.js';

/** The last expiry touching a rendered tile's area (0: none). A style tile z/x/y, 256 or 512 px, any scale, shows the area of tile z/x/y (tile-render.ts), so it is looked up as z/x/y. */
export function tileExpiredAt(state: AppState, style: LoadedStyle, z: number, x: number, y: number): number {
  if (expiries.empty) return 0;
  return expiries.expiredAt(styleDependencies(state, style), z, x, y);
}

/** An entry made at `madeAt` is fresh unless an expiry at or after that time touched it (`expiredAt` 0: none did). */
export function isFresh(madeAt: number, expiredAt: number): boolean {
  return expiredAt === 0 || madeAt > expiredAt;
}

/** What a tile is drawn as besides its place: enough to draw it again without a request. */
export interface TileVariant {
  style: string;
  base: 256 | 512;
  scale: number;
  out: RenderOutput;
}

/** A variant's identity: its style, size, encoding and language. */
const variantId = (v: TileVariant) => `${v.style}|${v.base}@${v.scale}|${variantOf(v.out.encoding)}|${v.out.lang?.tag ?? ''}`;

/** Variants remembered per process for eager re-rendering: the ones clients asked for lately. */
const RECENT_VARIANTS = 32;

/** A tile waiting in the dirty queue. */
export interface DirtyTile {
  variant: TileVariant;
  z: number;
  x: number;
  y: number;
}

/** How the service re-renders one dirty tile (eager mode): resolves once it is done or found not worth doing. */
export type Redraw = (tile: DirtyTile) => Promise<void>;


export class ExpiredTiles {
  /** Tile keys with a re-render under way in this process: a second request for the same stale tile starts none. */
  private readonly refreshing = new Set<string>();
  /** Most recent last (a Map keeps insertion order). */
  private readonly variants = new Map<string, TileVariant>();
  private readonly dirty: DirtyTile[] = [];
  private readonly dirtyKeys = new Set<string>();
  private running = 0;
  /** Dirty tiles dropped because the queue was full, since the process started. */
  drops = 0;

  /**
   * `concurrency`: eager re-renders run at most this many at once per process (the service: a bulk frame's tiles,
   * which then meet in one frame); each takes its place in the render queue's `expired` class.
   */
  constructor(
    private readonly redraw: Redraw,
    private readonly concurrency: () => number = () => 2,
  ) {}

  /** Dirty tiles waiting for an eager re-render. */
  get dirtyLength(): number {
    return this.dirty.length;
  }

  /**
   * Starts `work` (a re-render of `key`) unless one is under way (then undefined); the promise never rejects. `style` labels
   * the metrics: done or failed, and the freshness lag (the tile's expiry to its fresh image being stored).
   */
  refresh(key: string, style: string, expiredAt: number, work: () => Promise<{ stored: boolean }>): Promise<void> | undefined {
    if (this.refreshing.has(key)) return undefined;
    this.refreshing.add(key);
    return work()
      .then(
        ({ stored }) => {
          renderMetrics.countRerender(style, 'done');
          if (stored && expiredAt > 0) renderMetrics.observeLag(style, (Date.now() - expiredAt) / 1000);
        },
        () => renderMetrics.countRerender(style, 'failed'),
      )
      .finally(() => this.refreshing.delete(key));
  }

  /**
   * The time of the last expiry of any source a style draws (0: none). A static map or social card is not a tile
   * of the index: an image made at or before it is stale whatever area the expiry touched.
   */
  lastExpiryOf(state: AppState, style: LoadedStyle): number {
    // Known to the process's expiries, including those read from the journal before this service started.
    return expiries.lastAt(styleDependencies(state, style));
  }

  /** Notes a variant a client asked for (eager mode draws these after an expiry). */
  served(variant: TileVariant): void {
    const k = variantId(variant);
    this.variants.delete(k);
    this.variants.set(k, variant);
    if (this.variants.size > RECENT_VARIANTS) this.variants.delete(this.variants.keys().next().value!);
  }

  /**
   * Eager mode: queues the tiles of `batch` up to `maxZoom` for every recently served variant of a style drawing one
   * of its sources (tile by tile, the latest variant first); a tile this process holds no old image of is skipped
   * when its turn comes (redrawDirty). A full queue drops (counted): those tiles wait for their next request, answered stale meanwhile.
   */
  expired(state: AppState, batch: ExpiryBatch, maxZoom: number, capacity: number): void {
    const sources = new Set(batch.sources);
    // Most recently served first: with a short queue, the variants clients use now are drawn.
    const reached = [...this.variants.values()].reverse().filter((v) => {
      const style = state.styles.get(v.style);
      return style !== undefined && styleDependencies(state, style).some((d) => sources.has(d));
    });
    if (!reached.length) return;
    for (const key of batch.tiles) {
      const [z, x, y] = keyTile(key);
      if (z > maxZoom || z < batch.band.min || z > batch.band.max) continue;
      for (const variant of reached) {
        const id = `${variantId(variant)}|${z}/${x}/${y}`;
        if (this.dirtyKeys.has(id)) continue;
        if (this.dirty.length >= capacity) {
          this.drops++;
          renderMetrics.countDirtyDrop();
          continue;
        }
        this.dirtyKeys.add(id);
        this.dirty.push({ variant, z, x, y });
      }
    }
    this.drain();
  }

  private drain(): void {
    while (this.running < this.concurrency() && this.dirty.length) {
      const tile = this.dirty.shift()!;
      // Out of the set once started: an expiry arriving during this redraw queues the tile again.
      this.dirtyKeys.delete(`${variantId(tile.variant)}|${tile.z}/${tile.x}/${tile.y}`);
      this.running++;
      void this.redraw(tile)
        .catch(() => {})
        .finally(() => {
          this.running--;
          this.drain();
        });
    }
  }
}
