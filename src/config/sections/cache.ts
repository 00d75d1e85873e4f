// `[cache]` (the tile cache of each process, the scratch directory, the fleet's shared Redis) and `[compression]`.
import * as v from 'valibot';
import { nonEmpty, redisUrl } from './common.js';

/** A purge target: an http(s) URL without credentials, query or fragment. */
const purgeUrl = v.pipe(
  v.string(),
  v.check((s) => {
    try {
      const u = new URL(s);
      return (u.protocol === 'http:' || u.protocol === 'https:') && !u.username && !u.password && !u.search && !u.hash;
    } catch {
      return false;
    }
  }, 'an http:// or https:// URL (host and port, an optional path; no credentials, query or fragment)'),
);
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
  /**
   * Entries the expiry index keeps per source and zoom band before it coarsens (the deepest zoom's expired
   * tiles replaced by their parents: more tiles found stale, never fewer); about 12 bytes each, in every process (src/expire/key-times.ts).
   */
  expiry_max_tiles: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1_000), v.maxValue(100_000_000)), 4_000_000),
  /** The expiry journal (`<dir>/expire/journal`) is rewritten from the index once it grows past this (MB). */
  expiry_journal_max_mb: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(65_536)), 64),
  /**
   * Edge caches in front of this machine (Varnish with the xkey vmod) that each expiry batch is purged from:
   * `http://host:port` base URLs, sent `PURGE /` with `xkey` (or `xkey-softpurge`) headers (docs/live-data.md).
   */
  purge_urls: v.optional(v.pipe(v.array(purgeUrl), v.maxLength(64, 'at most 64 purge targets')), []),
  /** Longest wait for one PURGE request; a target that does not answer in time is logged and counted, never waited for again. */
  purge_timeout_ms: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(60_000)), 2_000),
  /** Keys one batch is purged with, per source, at most: a larger batch is purged at a coarser grid (more than changed, never less). */
  purge_max_keys: v.optional(v.pipe(v.number(), v.integer(), v.minValue(16), v.maxValue(1_000_000)), 4_096),
  /** Soft purges (xkey.softpurge): the edge keeps the old answer for its grace time while it fetches the new one. */
  purge_soft: v.optional(v.boolean(), false),
});

export const CompressionSchema = v.object({
  enabled: v.optional(v.boolean(), true),
  br_quality: v.optional(v.pipe(v.number(), v.integer(), v.minValue(0), v.maxValue(11)), 4),
  zstd_level: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(22)), 3),
});

// The journal's bound is read once, by the process that owns the journal (src/expire/machine.ts); the purge
// targets once, by the process that holds the admin listener (src/cli.ts).
export const cache = section(v.optional(CacheSchema, {}), ['expiry_journal_max_mb', 'purge_urls', 'purge_timeout_ms', 'purge_max_keys', 'purge_soft']);
export const compression = section(v.optional(CompressionSchema, {}));
