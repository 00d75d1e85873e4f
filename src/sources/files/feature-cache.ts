// Decoded features of a file read through its index (GeoPackage rows, FlatGeobuf features, small GeoParquet row
// groups), kept between requests up to a byte budget (`feature_cache_mb`) and dropped least recently used first:
// neighbouring tiles and zoom levels read many of the same features, and decoding one (a geometry blob or a
// flatbuffer to GeoJSON, to longitude/latitude) costs several times finding it. Each reader sizes its entries from
// the encoded bytes (an estimate, for the budget and the memory gauge); one cache implementation serves them all.
import { LRUCache } from 'lru-cache';

/** The budget of each reader's decoded features when the source sets no `feature_cache_mb`. */
export const DEFAULT_FEATURE_CACHE_BYTES = 64 * 1024 * 1024;

/** What a cache entry says it takes in memory. */
export interface Sized {
  bytes: number;
}

/**
 * A cache of decoded features within `budget` bytes (default DEFAULT_FEATURE_CACHE_BYTES). A budget of 0 keeps
 * none: lru-cache needs a positive bound, so it becomes one byte, which no decoded feature fits in.
 */
export function featureCache<K extends {}, V extends Sized>(budget: number = DEFAULT_FEATURE_CACHE_BYTES): LRUCache<K, V> {
  return new LRUCache<K, V>({ maxSize: Math.max(1, budget), sizeCalculation: (v) => Math.max(1, v.bytes) });
}
