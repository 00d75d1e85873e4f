// A bounded cache of fixed-size blocks of a RangeFile, so the many small reads of a spatial index walk (R-tree
// nodes, feature length prefixes, Parquet page headers) cost one read per block, and a remote file is asked for
// 64 KiB at a time rather than 40 bytes. The cache is what a reader keeps between requests besides its
// metadata: at most `maxBlocks` blocks, least recently used first out. Reads much larger than a block (a whole
// Parquet column chunk) go straight to the file and are not kept, so one big read cannot evict the index.
import type { RangeFile } from './range-file.js';

export const BLOCK_SIZE = 64 * 1024;

export class RangeCache {
  /** Insertion order is recency order: a hit is deleted and set again. */
  private readonly blocks = new Map<number, Promise<Uint8Array>>();

  constructor(
    readonly file: RangeFile,
    private readonly maxBlocks = 64,
  ) {}

  get size(): number {
    return this.file.size;
  }

  /** Bytes held: full blocks, in flight or read. */
  memoryBytes(): number {
    return this.blocks.size * BLOCK_SIZE;
  }

  /** `length` bytes from `offset`; fewer only past the end of the file. */
  async read(offset: number, length: number): Promise<Uint8Array> {
    if (length <= 0 || offset >= this.file.size) return new Uint8Array(0);
    const end = Math.min(offset + length, this.file.size);
    if (end - offset > 4 * BLOCK_SIZE) return this.file.read(offset, end - offset);
    const first = Math.floor(offset / BLOCK_SIZE);
    const last = Math.floor((end - 1) / BLOCK_SIZE);
    if (first === last) {
      const block = await this.block(first);
      return block.subarray(offset - first * BLOCK_SIZE, end - first * BLOCK_SIZE);
    }
    this.fetchMissing(first, last);
    const out = new Uint8Array(end - offset);
    for (let b = first; b <= last; b++) {
      const block = await this.block(b);
      const from = Math.max(offset, b * BLOCK_SIZE);
      const to = Math.min(end, (b + 1) * BLOCK_SIZE);
      out.set(block.subarray(from - b * BLOCK_SIZE, to - b * BLOCK_SIZE), from - offset);
    }
    return out;
  }

  private block(b: number): Promise<Uint8Array> {
    const hit = this.blocks.get(b);
    if (hit) {
      this.blocks.delete(b);
      this.blocks.set(b, hit);
      return hit;
    }
    return this.remember(b, this.file.read(b * BLOCK_SIZE, BLOCK_SIZE));
  }

  /** Asks for the missing blocks among first..last in runs, one read per run, instead of one read per block. */
  private fetchMissing(first: number, last: number): void {
    for (let b = first; b <= last; b++) {
      if (this.blocks.has(b)) continue;
      let end = b;
      while (end + 1 <= last && !this.blocks.has(end + 1)) end++;
      const run = this.file.read(b * BLOCK_SIZE, (end - b + 1) * BLOCK_SIZE);
      for (let i = b; i <= end; i++) {
        const at = (i - b) * BLOCK_SIZE;
        this.remember(i, run.then((bytes) => bytes.slice(at, at + BLOCK_SIZE)));
      }
      b = end;
    }
  }

  private remember(b: number, read: Promise<Uint8Array>): Promise<Uint8Array> {
    this.blocks.set(b, read);
    // A failed read is not kept: the next request asks the file again.
    read.catch(() => {
      if (this.blocks.get(b) === read) this.blocks.delete(b);
    });
    while (this.blocks.size > this.maxBlocks) this.blocks.delete(this.blocks.keys().next().value as number);
    return read;
  }
}
