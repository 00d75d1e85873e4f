// The packed Hilbert R-tree of a FlatGeobuf file, searched by range reads. The flatgeobuf package has a search
// of its own (streamSearch), but it writes a console.debug line for every node it visits (stdout, in a server)
// and merges reads by a process-wide setting; this walk is the same format read depth-first, so the features
// come out in file order and what is held at once is one node's children per level, besides the block cache.
//
// Layout (FlatGeobuf spec): nodes of 40 bytes (minX, minY, maxX, maxY as float64, then a uint64 offset), the
// root first and the leaves last. An inner node's offset is the index of its first child; a leaf's is the byte
// offset of its feature in the features section.
import { generateLevelBounds } from 'flatgeobuf/lib/mjs/packedrtree.js';
import type { RangeCache } from './range-cache.js';

export const NODE_BYTES = 40;

/** A feature the search found: its byte offset in the features section and its index in file order. */
export interface IndexHit {
  offset: number;
  index: number;
}

export class PackedRTree {
  /** [first, end) node indices of each level, leaves (level 0) first. */
  private readonly levels: Array<[number, number]>;

  constructor(
    private readonly cache: RangeCache,
    /** The tree's byte offset in the file. */
    private readonly start: number,
    readonly featureCount: number,
    private readonly nodeSize: number,
  ) {
    this.levels = generateLevelBounds(featureCount, nodeSize);
  }

  /** The extent of every feature (the root node's box): minX, minY, maxX, maxY in the file's CRS. */
  async extent(): Promise<[number, number, number, number]> {
    const root = await this.cache.read(this.start, NODE_BYTES);
    const v = new DataView(root.buffer, root.byteOffset, root.byteLength);
    return [v.getFloat64(0, true), v.getFloat64(8, true), v.getFloat64(16, true), v.getFloat64(24, true)];
  }

  /** The features whose box meets `box` (minX, minY, maxX, maxY), in file order. */
  search(box: readonly number[], signal?: AbortSignal): AsyncGenerator<IndexHit> {
    const root = this.levels.length - 1;
    return this.visit(root, this.levels[root][0], this.levels[root][1], box, signal);
  }

  private async *visit(level: number, first: number, end: number, box: readonly number[], signal?: AbortSignal): AsyncGenerator<IndexHit> {
    const bytes = await this.cache.read(this.start + first * NODE_BYTES, (end - first) * NODE_BYTES);
    if (bytes.byteLength < (end - first) * NODE_BYTES) throw new Error('the spatial index is cut short (truncated file)');
    const v = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    const leafStart = this.levels[0][0];
    for (let i = first; i < end; i++) {
      if (signal?.aborted) return;
      const at = (i - first) * NODE_BYTES;
      if (v.getFloat64(at, true) > box[2] || v.getFloat64(at + 8, true) > box[3] || v.getFloat64(at + 16, true) < box[0] || v.getFloat64(at + 24, true) < box[1]) continue;
      const offset = Number(v.getBigUint64(at + 32, true));
      if (level === 0) {
        yield { offset, index: i - leafStart };
      } else {
        const [, levelEnd] = this.levels[level - 1];
        yield* this.visit(level - 1, offset, Math.min(offset + this.nodeSize, levelEnd), box, signal);
      }
    }
  }
}
