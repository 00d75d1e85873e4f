// `[raster]` (the GDAL thread pool of each process) and `[storage]` (how remote sources read their store).
import * as v from 'valibot';
import { threadCount } from './common.js';
import { section } from './section.js';

/** `[raster]`: the GDAL worker-thread pool (COG/VRT and out-of-database raster tiles). */
export const RasterSchema = v.object({
  /** Threads of this process; default: its share of the cores. */
  pool_size: v.optional(threadCount),
  /** Tiles waiting for a thread, per thread; beyond this, 503 with Retry-After. */
  max_queue_per_thread: v.optional(v.pipe(v.number(), v.integer(), v.minValue(0), v.maxValue(10_000)), 64),
  /** Opened datasets kept per thread (closed on eviction and on reload). */
  dataset_cache: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(10_000)), 64),
  /** Edge of a raster tile in pixels. */
  tile_size: v.optional(v.picklist([256, 512]), 256),
});

/** `[storage]`: how remote sources (s3://, gs://, az://, http(s) PMTiles) read their store; docs/storage-s3.md. */
export const StorageSchema = v.object({
  /** One request to the store may take this long, body included; past it the tile answers 503. */
  read_timeout_ms: v.optional(v.pipe(v.number(), v.integer(), v.minValue(50), v.maxValue(600_000)), 10_000),
  /** Further attempts, with exponential back-off, after a 5xx, throttling or a network error. */
  read_retries: v.optional(v.pipe(v.number(), v.integer(), v.minValue(0), v.maxValue(10)), 3),
  /** Requests to the store in flight at once, per source; more wait their turn. */
  max_concurrent_reads: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(1024)), 16),
});

// The pool is made once per process with this many concurrent tasks and this queue (src/sources/raster/pool.ts).
export const raster = section(v.optional(RasterSchema, {}), ['pool_size', 'max_queue_per_thread']);
export const storage = section(v.optional(StorageSchema, {}));
