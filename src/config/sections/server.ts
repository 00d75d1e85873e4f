// `[server]`: the listeners, the processes and their pools, uploads, and what every answer carries.
import * as v from 'valibot';
import { bindAddress, nonEmpty, port, threadCount } from './common.js';
import { section } from './section.js';

export const ServerSchema = v.object({
  host: v.optional(nonEmpty, '0.0.0.0'),
  port: v.optional(port, 8080),
  /** Base URL used in every URL the service hands out; default: the request's own scheme, host and port. */
  public_url: v.optional(v.pipe(v.string(), v.url('an absolute http(s) URL'))),
  cors_origins: v.optional(v.array(nonEmpty), ['*']),
  /** "auto": one HTTP worker process per core, at most 4; 1: a single process. */
  workers: v.optional(v.union([v.literal('auto'), threadCount]), 'auto'),
  /** `host:port` of the admin listener (POST /__admin/reload); port 0, the default, means no admin listener. */
  admin_bind: v.optional(bindAddress, '127.0.0.1:0'),
  upload_dir: v.optional(nonEmpty),
  upload_max_size_mb: v.optional(v.pipe(v.number(), v.minValue(1)), 500),
  disable_render: v.optional(v.boolean(), false),
  /** No OGC API routes under /ogc (404, and absent from /openapi.json). */
  disable_ogc: v.optional(v.boolean(), false),
  /** Where the embed page, home page and viewers load maplibre-gl from: a pinned script host ("cdn") or this service ("local"). */
  embed_assets: v.optional(v.picklist(['cdn', 'local']), 'cdn'),
  /** Cache-Control of tiles and tile metadata. */
  tile_cache_control: v.optional(nonEmpty, 'public, max-age=86400'),
  /**
   * Threads of this process's vector pool (MVT<->MLT transcoding, composites, queries) and of its terrain pool;
   * default: its share of the cores.
   */
  transcode_threads: v.optional(threadCount),
  /** Time for a request's whole body to arrive, from its start; past it 408 and the connection ends. */
  request_timeout_ms: v.optional(v.pipe(v.number(), v.integer(), v.minValue(100), v.maxValue(3_600_000)), 60_000),
  /**
   * Largest request line plus headers (node:http's maxHeaderSize); past it 431. Node's own default, 16 KiB, unless
   * raised: a static map's overlays in its URL count against it (the POST form takes them in the body).
   */
  max_header_bytes: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1024), v.maxValue(1_048_576)), 16_384),
  /** Reload when an archive, style, sprite or font file of the configuration changes on disk (as SIGHUP does). */
  watch: v.optional(v.boolean(), false),
  /**
   * V8's largest semi-space in MiB for each forked worker process (`--max-semi-space-size`); 0 leaves Node's own
   * (16). A request's short-lived objects die in the young generation when it is large enough, instead of being
   * copied and promoted (docs/operations.md).
   */
  semi_space_mb: v.optional(v.pipe(v.number(), v.integer(), v.minValue(0), v.maxValue(1024)), 64),
});

export const server = section(v.optional(ServerSchema, {}), [
  // The listeners' addresses and CORS: the spec's list ("Moves that need a restart").
  'host',
  'port',
  'admin_bind',
  'cors_origins',
  // Read once when a process starts: the number of processes, the HTTP server's body timeout and header limit
  // (node:http options), V8's flag for each forked process.
  'workers',
  'request_timeout_ms',
  'max_header_bytes',
  'semi_space_mb',
  // The vector and terrain pools are made on first use with this many threads; piscina cannot change a pool's
  // thread count, and replacing a pool would drop its queued work, so a new value waits for a restart.
  'transcode_threads',
]);
