// `type = "cog"` and `"vrt"`: rasters read through GDAL (local, or s3://, gs://, az:// and http(s) URLs), warped
// to web mercator in the raster pool; see docs/rasters.md.
import * as v from 'valibot';
import { ColormapSchema, DemSchema, RESAMPLING } from '../sections/common.js';
import { COMMON_ENTRIES, sourcePath, STORAGE_ENTRIES, storageKeyProblems } from './common.js';
import type { KindConfig, Problem, SourceKind } from './kind.js';

const RASTER_ENTRIES = {
  type: v.picklist(['cog', 'vrt']),
  ...COMMON_ENTRIES,
  /** A file path, or an s3://, gs://, az:// or http(s) URL read through GDAL. */
  path: sourcePath,
  ...STORAGE_ENTRIES,
  /** How pixels are resampled when warped to web mercator (default bilinear). */
  resampling: v.optional(v.picklist(RESAMPLING)),
  /** Single-band data: value-to-colour mapping. */
  colormap: v.optional(ColormapSchema),
  /** The raster holds elevation in metres (single band): its tiles are served in this encoding (docs/terrain.md). */
  dem: v.optional(DemSchema),
};

export const raster = { types: ['cog', 'vrt'], entries: RASTER_ENTRIES } satisfies SourceKind<typeof RASTER_ENTRIES>;

export function rasterProblems(s: KindConfig<typeof raster>, problem: Problem): void {
  if (s.dem && s.colormap) problem('dem', 'dem and colormap exclude each other: an elevation source serves encoded elevations (style its colours with a color-relief layer)');
  storageKeyProblems(s, problem);
}
