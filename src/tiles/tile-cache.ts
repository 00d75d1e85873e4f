// In-memory cache of tile responses, bounded by bytes and by age (lru-cache). One entry per representation:
// the key includes the requested format and the content encoding, so a br and a gzip variant live side by side.
import { LRUCache } from 'lru-cache';
import type { CacheConfig } from '../config/schema.js';

export interface CachedTile {
  /** Bytes as sent on the wire (already content-encoded); empty for a cached "no tile". */
  body: Uint8Array;
  contentEncoding: string | undefined;
  etag: string;
  /** A remembered miss: the source has no tile here (served as 204). */
  empty: boolean;
  /**
   * When making it began (ms since the epoch), before its data was read: an expiry of its area at or after this
   * time makes it stale (src/expire/). A copy from another cache layer keeps the time of the first making.
   */
  madeAt: number;
}

/** Per-entry bookkeeping overhead counted against the byte budget, so millions of tiny entries stay bounded. */
const ENTRY_OVERHEAD = 96;

export class TileCache {
  private readonly lru: LRUCache<string, CachedTile> | undefined;

  constructor(cfg: CacheConfig) {
    const maxSize = Math.floor(cfg.max_size_mb * 1024 * 1024);
    if (!cfg.enabled || maxSize <= 0) return;
    this.lru = new LRUCache<string, CachedTile>({
      maxSize,
      sizeCalculation: (v, k) => v.body.byteLength + k.length + ENTRY_OVERHEAD,
      ttl: cfg.ttl_seconds > 0 ? cfg.ttl_seconds * 1000 : undefined,
      ttlAutopurge: false,
      // Entries bigger than an eighth of the budget would evict a large part of the cache at once.
      maxEntrySize: Math.max(1, Math.floor(maxSize / 8)),
    });
  }

  get enabled(): boolean {
    return this.lru !== undefined;
  }

  get(key: string): CachedTile | undefined {
    return this.lru?.get(key);
  }

  set(key: string, value: CachedTile): void {
    this.lru?.set(key, value);
  }

  clear(): void {
    this.lru?.clear();
  }

  get entries(): number {
    return this.lru?.size ?? 0;
  }

  get bytes(): number {
    return this.lru?.calculatedSize ?? 0;
  }
}
