// Adaptive metatiles (render.metatile = "auto"): the raster tiles asked for together are drawn in one frame.
// A map client asks for a whole view at once; a frame drawn per 2x2 metatile parses the source tiles around each
// metatile's edges again and again (a 32 px buffer reaches into every neighbour), while one frame over the view's
// tiles parses each source tile once. So requests join a *batch* per block of tiles (tile-render.ts, batchEdge):
// the batch waits for a renderer like any render, and what it draws is decided only when the renderer is granted:
// the bounding box of the tiles asked for in that block by then. A lone tile is drawn as its 2x2 metatile (as with
// metatile = 2: a client asking tile by tile gets its neighbours from the cache); two or more tiles are a view in
// progress, drawn exactly (rounding a view out to 2x2 units drew 196 tiles for 142 asked for on the browse bench,
// each extra one pulling in its own ring of source tiles). Tiles asked for after the frame was decided, and inside
// it, wait for it; others start the next batch.
import { planBlock, type MetatilePlan, type TileRequest } from './tile-render.js';

export interface TileBatch {
  /** Unique key (the shared-render key of its waiters). */
  key: string;
  /** The block this batch draws in: cache-key prefix, zoom and origin. */
  blockKey: string;
  tile: TileRequest;
  bx: number;
  by: number;
  edge: number;
  /** Tiles "x,y" asked for so far. */
  wanted: Set<string>;
  /** Decided when a renderer is granted; from then on the batch takes no more tiles. */
  plan: MetatilePlan | undefined;
  /** Cache key of tile (x, y) of this batch's zoom, style and format. */
  cellKey: (x: number, y: number) => string;
}

export class TileBatches {
  /** The open batch of each block (waiting for a renderer). */
  private readonly open = new Map<string, TileBatch>();
  /** Tiles of started batches (by their cell key) → the batch drawing them. */
  private readonly covered = new Map<string, string>();
  private seq = 0;

  /** The open batch of the tile's block (created when there is none), with the tile's unit added. */
  join(blockKey: string, t: TileRequest, edge: number, cellKey: (x: number, y: number) => string): TileBatch {
    let batch = this.open.get(blockKey);
    if (!batch) {
      batch = { key: `${blockKey}#${++this.seq}`, blockKey, tile: t, bx: Math.floor(t.x / edge) * edge, by: Math.floor(t.y / edge) * edge, edge, wanted: new Set(), plan: undefined, cellKey };
      this.open.set(blockKey, batch);
    }
    batch.wanted.add(`${t.x},${t.y}`);
    return batch;
  }

  /** The batch already drawing this tile, if one is. */
  coverOf(cellKey: string): string | undefined {
    return this.covered.get(cellKey);
  }

  /**
   * Decides the batch's frame: the bounding box of its tiles, or a lone tile's 2x2 metatile (within the block and
   * the world). No more tiles join it. `background`: only re-renders of expired tiles wait for it: a lone one is
   * drawn alone, as its neighbours are cached and fresh (drawing them too made a replaced archive draw 2.5 tiles
   * per tile that changed, bench/live.bench.ts `archive`).
   */
  close(batch: TileBatch, buffer: number, maxFrame: number, background = false): MetatilePlan {
    if (this.open.get(batch.blockKey) === batch) this.open.delete(batch.blockKey);
    const n = 2 ** batch.tile.z;
    const unit = batch.wanted.size === 1 && !background ? Math.min(2, batch.edge) : 1;
    let x0 = Infinity;
    let y0 = Infinity;
    let x1 = -Infinity;
    let y1 = -Infinity;
    for (const w of batch.wanted) {
      const [tx, ty] = w.split(',').map(Number);
      const ux = Math.floor(tx / unit) * unit;
      const uy = Math.floor(ty / unit) * unit;
      x0 = Math.min(x0, ux);
      y0 = Math.min(y0, uy);
      x1 = Math.max(x1, Math.min(n, ux + unit) - 1);
      y1 = Math.max(y1, Math.min(n, uy + unit) - 1);
    }
    const plan = planBlock(batch.tile, x0, y0, x1 - x0 + 1, y1 - y0 + 1, buffer, maxFrame);
    batch.plan = plan;
    for (const [x, y] of cells(plan)) this.covered.set(batch.cellKey(x, y), batch.key);
    return plan;
  }

  /** The batch is done (drawn or failed): its tiles are in the cache, or must be asked for afresh. */
  finish(batch: TileBatch): void {
    if (this.open.get(batch.blockKey) === batch) this.open.delete(batch.blockKey);
    if (!batch.plan) return;
    for (const [x, y] of cells(batch.plan)) {
      const k = batch.cellKey(x, y);
      if (this.covered.get(k) === batch.key) this.covered.delete(k);
    }
  }

  /** Batches waiting for a renderer and tiles of batches being drawn (for the tests' and /ping's view). */
  get sizes(): { open: number; covered: number } {
    return { open: this.open.size, covered: this.covered.size };
  }
}

/** The tiles a plan draws. */
export function cells(plan: MetatilePlan): [number, number][] {
  const out: [number, number][] = [];
  for (let y = plan.y0; y < plan.y0 + (plan.rows ?? plan.size); y++) for (let x = plan.x0; x < plan.x0 + (plan.cols ?? plan.size); x++) out.push([x, y]);
  return out;
}
