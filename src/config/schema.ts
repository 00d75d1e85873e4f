// The configuration schema. Every key of the TOML file is declared here with valibot; later capabilities add
// their sections to `ConfigSchema` below. Defaults live in the schema so that the typed Config is complete.
import * as v from 'valibot';

const port = v.pipe(v.number(), v.integer(), v.minValue(0), v.maxValue(65535));
const zoom = v.pipe(v.number(), v.integer(), v.minValue(0), v.maxValue(22));
const nonEmpty = v.pipe(v.string(), v.minLength(1));
/** Ids appear in URL paths: keep them to characters that need no escaping and cannot mean a path or a composite. */
const id = v.pipe(
  v.string(),
  v.regex(/^[A-Za-z0-9_][A-Za-z0-9_.-]*$/, 'an id of letters, digits, "_", "-" and "." (not starting with "." or "-")'),
);

export const ServerSchema = v.object({
  host: v.optional(nonEmpty, '0.0.0.0'),
  port: v.optional(port, 8080),
  /** Base URL used in every URL the service hands out; default: the request's own scheme, host and port. */
  public_url: v.optional(v.pipe(v.string(), v.url('an absolute http(s) URL'))),
  cors_origins: v.optional(v.array(nonEmpty), ['*']),
  /** "auto": one HTTP worker process per core, at most 4; 1: a single process. */
  workers: v.optional(v.union([v.literal('auto'), v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(256))]), 'auto'),
  admin_bind: v.optional(nonEmpty, '127.0.0.1:0'),
  upload_dir: v.optional(nonEmpty),
  upload_max_size_mb: v.optional(v.pipe(v.number(), v.minValue(1)), 500),
  disable_render: v.optional(v.boolean(), false),
  /** Cache-Control of tiles and tile metadata. */
  tile_cache_control: v.optional(nonEmpty, 'public, max-age=86400'),
});

export const SourceSchema = v.object({
  id,
  type: v.picklist(['pmtiles', 'mbtiles']),
  /** A file path (relative to the config file), or for PMTiles an http(s) URL read with range requests. */
  path: nonEmpty,
  name: v.optional(v.string()),
  attribution: v.optional(v.string()),
  description: v.optional(v.string()),
  minzoom: v.optional(zoom),
  maxzoom: v.optional(zoom),
});

export const StyleSchema = v.object({
  id,
  path: nonEmpty,
  name: v.optional(v.string()),
});

export const CacheSchema = v.object({
  enabled: v.optional(v.boolean(), true),
  max_size_mb: v.optional(v.pipe(v.number(), v.minValue(0)), 256),
  ttl_seconds: v.optional(v.pipe(v.number(), v.minValue(0)), 3600),
  /** Scratch and state directory (rendered-tile disk cache and friends); default: the OS temp dir. */
  dir: v.optional(nonEmpty),
});

export const CompressionSchema = v.object({
  enabled: v.optional(v.boolean(), true),
  br_quality: v.optional(v.pipe(v.number(), v.integer(), v.minValue(0), v.maxValue(11)), 4),
  zstd_level: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(22)), 3),
});

export const ConfigSchema = v.object({
  fonts: v.optional(nonEmpty),
  files: v.optional(nonEmpty),
  server: v.optional(ServerSchema, {}),
  sources: v.optional(v.array(SourceSchema), []),
  styles: v.optional(v.array(StyleSchema), []),
  cache: v.optional(CacheSchema, {}),
  compression: v.optional(CompressionSchema, {}),
});

export type Config = v.InferOutput<typeof ConfigSchema>;
export type ServerConfig = v.InferOutput<typeof ServerSchema>;
export type SourceConfig = v.InferOutput<typeof SourceSchema>;
export type StyleConfig = v.InferOutput<typeof StyleSchema>;
export type CacheConfig = v.InferOutput<typeof CacheSchema>;
export type CompressionConfig = v.InferOutput<typeof CompressionSchema>;
