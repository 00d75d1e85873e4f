// Decoded features of a file read through its index (GeoPackage), kept between requests up to a byte budget and
// dropped least recently used first: neighbouring tiles and zoom levels read many of the same rows, and decoding a
// row (its geometry blob and its values) costs more than finding it. The sizes are estimates from the encoded
// row, for the budget and the memory gauge.
import type { FileFeature } from './reader.js';

export class FeatureCache {
  private readonly items = new Map<number, { feature: FileFeature; bytes: number }>();
  private used = 0;

  constructor(private readonly budget: number) {}

  /** The feature with this id, marked as used now; undefined when it is not kept. */
  get(id: number): FileFeature | undefined {
    const item = this.items.get(id);
    if (!item) return undefined;
    // A Map iterates in insertion order: re-inserting makes the entry the most recently used.
    this.items.delete(id);
    this.items.set(id, item);
    return item.feature;
  }

  set(id: number, feature: FileFeature, bytes: number): void {
    if (bytes > this.budget) return;
    const old = this.items.get(id);
    if (old) {
      this.used -= old.bytes;
      this.items.delete(id);
    }
    this.items.set(id, { feature, bytes });
    this.used += bytes;
    for (const [key, item] of this.items) {
      if (this.used <= this.budget) break;
      this.items.delete(key);
      this.used -= item.bytes;
    }
  }

  get bytes(): number {
    return this.used;
  }
}
