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

  /**
   * The byte offsets of the features whose box meets `box` (minX, minY, maxX, maxY), in file order. Collected into
   * one array by an explicit depth-first walk: a generator per level cost a promise per hit per level, which was a
   * tenth of a tile's CPU and much of its garbage.
   */
  async search(box: readonly number[], signal?: AbortSignal): Promise<number[]> {
    const out: number[] = [];
    const leafStart = this.levels[0][0];
    // Nodes still to visit, last pushed first: [level, first child, end]; children are pushed in reverse so that
    // they are visited, and leaves found, in file order.
    const stack: [number, number, number][] = [[this.levels.length - 1, ...this.levels[this.levels.length - 1]]];
    while (stack.length > 0) {
      if (signal?.aborted) return out;
      const [level, first, end] = stack.pop()!;
      const bytes = await this.cache.read(this.start + first * NODE_BYTES, (end - first) * NODE_BYTES);
      if (bytes.byteLength < (end - first) * NODE_BYTES) throw new Error('the spatial index is cut short (truncated file)');
      const v = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
      const children: [number, number, number][] = [];
      for (let i = first; i < end; i++) {
        const at = (i - first) * NODE_BYTES;
        if (v.getFloat64(at, true) > box[2] || v.getFloat64(at + 8, true) > box[3] || v.getFloat64(at + 16, true) < box[0] || v.getFloat64(at + 24, true) < box[1]) continue;
        const offset = Number(v.getBigUint64(at + 32, true));
        if (level === 0) {
          if (i >= leafStart) out.push(offset);
        } else {
          const [, levelEnd] = this.levels[level - 1];
          children.push([level - 1, offset, Math.min(offset + this.nodeSize, levelEnd)]);
        }
      }
      for (let c = children.length - 1; c >= 0; c--) stack.push(children[c]);
    }
    return out;
  }
}
