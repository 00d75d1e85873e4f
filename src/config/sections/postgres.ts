// `[postgres]`: the connection pool of each process and the tables, functions and out-of-database rasters it serves.
import * as v from 'valibot';
import { access, bounds, ColormapSchema, DemSchema, id, nonEmpty, RESAMPLING, tileBuffer, tileExtent, zoom } from './common.js';
import { section } from './section.js';

const pgIdent = nonEmpty;

/** `[[postgres.tables]]`: a PostGIS table served as MVT. */
export const PgTableSchema = v.object({
  id,
  schema: v.optional(pgIdent, 'public'),
  table: pgIdent,
  /** Detected (the first geometry column) when omitted. */
  geometry_column: v.optional(pgIdent),
  id_column: v.optional(pgIdent),
  /** Columns carried as feature properties; default: every column other than the geometry (and id) column. */
  properties: v.optional(v.array(pgIdent)),
  extent: v.optional(tileExtent, 4096),
  buffer: v.optional(tileBuffer, 64),
  minzoom: v.optional(zoom, 0),
  maxzoom: v.optional(zoom, 22),
  /** Computed from the data when omitted. */
  bounds: v.optional(bounds),
  max_features: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1))),
  /** Whether tile requests may carry `filter` (CQL2) and `properties` (docs/postgres.md, "Filtered tiles"); default true. */
  allow_filters: v.optional(v.boolean()),
  name: v.optional(v.string()),
  attribution: v.optional(v.string()),
  description: v.optional(v.string()),
  /** Who may read it (docs/access.md); default: auth.default_access. */
  access: v.optional(access),
  /** Whether OGC API - Features Part 4 may create, replace, update and delete its rows (docs/editing.md); default false. */
  writable: v.optional(v.boolean()),
  /** Whether PUT, PATCH and DELETE must carry If-Match (428 without); default false. Only with writable. */
  require_if_match: v.optional(v.boolean()),
});

/** What every source served by a database function has: where the function is and the tiles it covers. */
const functionSourceEntries = {
  id,
  schema: v.optional(pgIdent, 'public'),
  function: v.optional(pgIdent),
  name: v.optional(v.string()),
  minzoom: v.optional(zoom, 0),
  maxzoom: v.optional(zoom, 22),
  bounds: v.optional(bounds),
  /** Who may read it (docs/access.md); default: auth.default_access. */
  access: v.optional(access),
};

/** `[[postgres.functions]]`: a function of (z, x, y) or (z, x, y, query json) returning an MVT bytea. */
export const PgFunctionSchema = v.object({
  ...functionSourceEntries,
  attribution: v.optional(v.string()),
  description: v.optional(v.string()),
});

/** `[[postgres.outdb_rasters]]`: a function returning raster file paths for a tile (spec: out-of-database raster source). */
export const OutdbRasterSchema = v.object({
  ...functionSourceEntries,
  resampling: v.optional(v.picklist(RESAMPLING), 'bilinear'),
  colormap: v.optional(ColormapSchema),
  /** The catalogue's files hold elevation in metres: tiles are encoded elevations, with the terrain products (docs/terrain.md). */
  dem: v.optional(DemSchema),
});

/** `[postgres]`: one connection pool per process; see docs/postgres.md. */
export const PostgresSchema = v.object({
  connection_string: nonEmpty,
  /** Connections per process. */
  pool_size: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(1000)), 10),
  /** A query waiting longer than this for a free connection fails with 503. */
  pool_wait_timeout_ms: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1)), 5000),
  /** Queries running longer are cancelled by the server (503); 0 leaves the server's own setting. */
  statement_timeout_ms: v.optional(v.pipe(v.number(), v.integer(), v.minValue(0)), 10_000),
  /** Open every connection of the pool at start-up rather than on demand. */
  pool_pre_warm: v.optional(v.boolean(), false),
  ssl_mode: v.optional(v.picklist(['disable', 'prefer', 'require', 'verify-ca', 'verify-full'])),
  ssl_root_cert: v.optional(nonEmpty),
  /** Publish every readable table with a geometry column and every function with a tile signature. */
  auto_publish: v.optional(v.boolean(), false),
  /** Longest `filter` a tile request may carry, in characters (filters of OGC items are capped by the parser alone). */
  tile_filter_max_length: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(16_384)), 2048),
  /** Most conditions, values and properties one tile filter may hold: each makes every tile's query dearer. */
  tile_filter_max_terms: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(10_000)), 64),
  /**
   * The channel the primary process LISTENs on for expiries sent by the database (NOTIFY; docs/live-data.md).
   * Lower case, as PostgreSQL folds an unquoted `NOTIFY Name` to lower case: the name the trigger sends to and
   * the one listened on can then never differ by case alone.
   */
  expire_channel: v.optional(v.pipe(v.string(), v.regex(/^[a-z_][a-z0-9_]{0,62}$/, 'must be a lower-case PostgreSQL identifier: a-z, 0-9 and _, not starting with a digit, at most 63 characters'))),
  /** Largest body of a feature write (POST, PUT, PATCH) in bytes; a larger one is 413 (docs/editing.md). */
  write_max_bytes: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1024), v.maxValue(64 * 1024 * 1024)), 4 * 1024 * 1024),
  tables: v.optional(v.array(PgTableSchema), []),
  functions: v.optional(v.array(PgFunctionSchema), []),
  outdb_rasters: v.optional(v.array(OutdbRasterSchema), []),
});

export const postgres = section(v.optional(PostgresSchema));
