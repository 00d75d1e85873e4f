// `[cache]` (the tile cache of each process, the scratch directory, the fleet's shared Redis) and `[compression]`.
import * as v from 'valibot';
import { nonEmpty, redisUrl } from './common.js';
import { section } from './section.js';

export const CacheSchema = v.object({
  enabled: v.optional(v.boolean(), true),
  max_size_mb: v.optional(v.pipe(v.number(), v.minValue(0)), 256),
  ttl_seconds: v.optional(v.pipe(v.number(), v.minValue(0)), 3600),
  /** Scratch and state directory (rendered-tile disk cache and friends); default: the OS temp dir. */
  dir: v.optional(nonEmpty),
  /**
   * A Redis server the machines of a fleet share rendered images and transcoded tiles through
   * (`redis://[:password@]host:port/db`, `rediss://` for TLS); see docs/deployment.md.
   */
  shared: v.optional(redisUrl),
  /** Shared entries expire after this many seconds (Redis's own maxmemory policy caps the size). */
  shared_ttl_seconds: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(365 * 86_400)), 86_400),
  /** Longest wait for one shared-cache command; past it the machine renders (or reads) on its own. */
  shared_timeout_ms: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(10_000)), 100),
});

export const CompressionSchema = v.object({
  enabled: v.optional(v.boolean(), true),
  br_quality: v.optional(v.pipe(v.number(), v.integer(), v.minValue(0), v.maxValue(11)), 4),
  zstd_level: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(22)), 3),
});

export const cache = section(v.optional(CacheSchema, {}));
export const compression = section(v.optional(CompressionSchema, {}));
