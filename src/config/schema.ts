// The whole configuration: one entry per section of the TOML file, each declared in its own module with its
// schema, its default and its restart-only keys (sections/*.ts, and sources/ for `[[sources]]` with one module
// per kind of source). Defaults live in the schemas, so the typed Config is complete. A new section is one line
// in SECTIONS; the unknown-key check, the restart-only keys and the types follow from it.
import * as v from 'valibot';
import { nonEmpty } from './sections/common.js';
import { section } from './sections/section.js';
import { server } from './sections/server.js';
import { sources } from './sources/index.js';
import { composites, styles } from './sections/styles.js';
import { cache, compression } from './sections/cache.js';
import { render } from './sections/render.js';
import { telemetry } from './sections/telemetry.js';
import { postgres } from './sections/postgres.js';
import { raster, storage } from './sections/raster.js';
import { terrain } from './sections/terrain.js';
import { mcp } from './sections/mcp.js';
import { auth } from './sections/auth.js';
import { rateLimits } from './sections/rate-limits.js';
import type { DEM_ENCODINGS, ACCESS_LEVELS, ColormapSchema, DemSchema, RESAMPLING } from './sections/common.js';
import type { ServerSchema } from './sections/server.js';
import type { CompositeSchema, StyleSchema } from './sections/styles.js';
import type { CacheSchema, CompressionSchema } from './sections/cache.js';
import type { RenderSchema } from './sections/render.js';
import type { TelemetrySchema } from './sections/telemetry.js';
import type { OutdbRasterSchema, PgFunctionSchema, PgTableSchema, PostgresSchema } from './sections/postgres.js';
import type { RasterSchema, StorageSchema } from './sections/raster.js';
import type { TerrainSchema } from './sections/terrain.js';
import type { McpOAuthSchema, McpSchema } from './sections/mcp.js';
import type { AuthJwtSchema, AuthKeySchema, AuthSchema } from './sections/auth.js';
import type { RateBudgetSchema, RateLimitsSchema } from './sections/rate-limits.js';

/** Every section of the file, in the order the documentation and error messages list them. */
export const SECTIONS = {
  fonts: section(v.optional(nonEmpty)),
  files: section(v.optional(nonEmpty)),
  server,
  sources,
  styles,
  composites,
  cache,
  compression,
  render,
  telemetry,
  postgres,
  raster,
  storage,
  terrain,
  mcp,
  auth,
  rate_limits: rateLimits,
};

type Sections = typeof SECTIONS;
export type SectionName = keyof Sections;

const entries = Object.fromEntries(Object.entries(SECTIONS).map(([name, s]) => [name, s.schema])) as { [K in SectionName]: Sections[K]['schema'] };
export const ConfigSchema = v.object(entries);

export { ServerSchema } from './sections/server.js';
export { SourceSchema, FILE_SOURCE_TYPES, STORAGE_KEYS } from './sources/index.js';
export { StyleSchema, CompositeSchema } from './sections/styles.js';
export { CacheSchema, CompressionSchema } from './sections/cache.js';
export { RenderSchema } from './sections/render.js';
export { TelemetrySchema } from './sections/telemetry.js';
export { PostgresSchema, PgTableSchema, PgFunctionSchema, OutdbRasterSchema } from './sections/postgres.js';
export { RasterSchema, StorageSchema } from './sections/raster.js';
export { TerrainSchema } from './sections/terrain.js';
export { McpSchema, McpOAuthSchema } from './sections/mcp.js';
export { AuthSchema, AuthKeySchema, AuthJwtSchema, JWT_ALGORITHMS } from './sections/auth.js';
export { RateLimitsSchema, RateBudgetSchema, RateClassSchema } from './sections/rate-limits.js';
export { ACCESS_LEVELS, ColormapSchema, DemSchema, DEM_ENCODINGS, RESAMPLING } from './sections/common.js';

export type Config = v.InferOutput<typeof ConfigSchema>;
export type ServerConfig = v.InferOutput<typeof ServerSchema>;
export type {
  SourceConfig,
  PmtilesSourceConfig,
  MbtilesSourceConfig,
  RasterSourceConfig,
  XyzSourceConfig,
  FileSourceConfig,
  StoredSourceConfig,
} from './sources/index.js';
export type StyleConfig = v.InferOutput<typeof StyleSchema>;
export type CompositeConfig = v.InferOutput<typeof CompositeSchema>;
export type CacheConfig = v.InferOutput<typeof CacheSchema>;
export type CompressionConfig = v.InferOutput<typeof CompressionSchema>;
export type RenderConfig = v.InferOutput<typeof RenderSchema>;
export type TelemetryConfig = v.InferOutput<typeof TelemetrySchema>;
export type ColormapConfig = v.InferOutput<typeof ColormapSchema>;
export type PostgresConfig = v.InferOutput<typeof PostgresSchema>;
export type PgTableConfig = v.InferOutput<typeof PgTableSchema>;
export type PgFunctionConfig = v.InferOutput<typeof PgFunctionSchema>;
export type OutdbRasterConfig = v.InferOutput<typeof OutdbRasterSchema>;
export type RasterConfig = v.InferOutput<typeof RasterSchema>;
export type StorageConfig = v.InferOutput<typeof StorageSchema>;
export type TerrainConfig = v.InferOutput<typeof TerrainSchema>;
export type DemConfig = v.InferOutput<typeof DemSchema>;
export type DemEncodingName = (typeof DEM_ENCODINGS)[number];
export type McpConfig = v.InferOutput<typeof McpSchema>;
export type AuthConfig = v.InferOutput<typeof AuthSchema>;
export type AuthKeyConfig = v.InferOutput<typeof AuthKeySchema>;
export type AuthJwtConfig = v.InferOutput<typeof AuthJwtSchema>;
export type AccessLevel = (typeof ACCESS_LEVELS)[number];
export type RateLimitsConfig = v.InferOutput<typeof RateLimitsSchema>;
export type RateBudgetConfig = v.InferOutput<typeof RateBudgetSchema>;
export type McpOAuthConfig = v.InferOutput<typeof McpOAuthSchema>;
export type Resampling = (typeof RESAMPLING)[number];
