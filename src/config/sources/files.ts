// The data-file sources (`type = "geojson"`, `"geopackage"`, `"flatgeobuf"` or `"geoparquet"`, docs/files.md):
// features read from a file and served as vector tiles made on request. FlatGeobuf and GeoParquet are read by
// byte ranges, so from remote URLs too; GeoJSON and GeoPackage files are local.
import * as v from 'valibot';
import { nonEmpty, tileBuffer, tileExtent } from '../sections/common.js';
import { isRemotePath } from '../object-location.js';
import { COMMON_ENTRIES, sourcePath, STORAGE_ENTRIES, storageKeyProblems } from './common.js';
import type { KindConfig, Problem, SourceKind } from './kind.js';

/** Source types read from a data file and served as vector tiles made on request. */
export const FILE_SOURCE_TYPES = ['geojson', 'geopackage', 'flatgeobuf', 'geoparquet'] as const;

/** Data-file formats read by byte ranges, so also from http(s), s3://, gs:// and az:// URLs. */
const REMOTE_FILE_TYPES: readonly string[] = ['flatgeobuf', 'geoparquet'];

const FILE_ENTRIES = {
  type: v.picklist(FILE_SOURCE_TYPES),
  ...COMMON_ENTRIES,
  /** A file path; for FlatGeobuf and GeoParquet also an http(s), s3://, gs:// or az:// URL. */
  path: sourcePath,
  ...STORAGE_ENTRIES,
  /** GeoPackage: the feature tables served, each a layer; default: every feature table. */
  layers: v.optional(v.pipe(v.array(nonEmpty), v.minLength(1, 'list at least one table, or leave layers out for all'))),
  /** Properties carried in tiles and OGC API - Features; default: every property. */
  properties: v.optional(v.array(nonEmpty)),
  /** Tile extent (units per tile edge); default 4096. */
  extent: v.optional(tileExtent),
  /** Units beyond each tile edge that features are kept to (clipped there); default 64. */
  buffer: v.optional(tileBuffer),
  /** GeoJSON: the largest file held in memory, in MB; default 256. */
  max_size_mb: v.optional(v.pipe(v.number(), v.minValue(0.001))),
  /** GeoPackage, FlatGeobuf, GeoParquet: decoded features kept between requests, in MB (0: none); default 64. */
  feature_cache_mb: v.optional(v.pipe(v.number(), v.minValue(0))),
  /** Features read for one tile at most (each layer); the rest of a denser tile is left out. Default 200000. */
  max_features: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1))),
  /** Whether tile requests may carry `filter` (CQL2) and `properties` (docs/files.md); default true. */
  allow_filters: v.optional(v.boolean()),
  /** Longest `filter` a tile request may carry, in characters; default 2048 (as `[postgres] tile_filter_max_length`). */
  filter_max_length: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(16_384))),
  /** Most conditions, values and properties one tile filter may hold; default 64 (as `[postgres] tile_filter_max_terms`). */
  filter_max_terms: v.optional(v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(10_000))),
};

export const files = {
  types: FILE_SOURCE_TYPES,
  entries: FILE_ENTRIES,
  ownKeysElsewhere: (key) => `${key} applies to data-file sources (type = ${FILE_SOURCE_TYPES.map((t) => `"${t}"`).join(', ')}) only`,
  refuses: (key, type) => (key === 'resampling' || key === 'colormap' || key === 'dem' ? `${key} does not apply to a ${type} source (it serves vector tiles)` : undefined),
} satisfies SourceKind<typeof FILE_ENTRIES>;

export function fileProblems(s: KindConfig<typeof files>, problem: Problem): void {
  if (isRemotePath(s.path) && !REMOTE_FILE_TYPES.includes(s.type)) problem('path', `a ${s.type} source is read from a local file (FlatGeobuf and GeoParquet can be remote)`);
  if (s.type !== 'geopackage' && s.layers !== undefined) problem('layers', 'layers applies to geopackage sources (GeoJSON, FlatGeobuf and GeoParquet files are one layer)');
  if (s.type === 'geojson' && s.feature_cache_mb !== undefined) problem('feature_cache_mb', 'feature_cache_mb applies to geopackage, flatgeobuf and geoparquet sources (a GeoJSON file is in memory already)');
  if (s.type !== 'geojson' && s.max_size_mb !== undefined) problem('max_size_mb', 'max_size_mb applies to geojson sources (the other formats are read through their spatial index, not held in memory)');
  storageKeyProblems(s, problem);
}
