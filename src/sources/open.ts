// Opens a configured source by its type. New source kinds register here.
import * as v from 'valibot';
import { StorageSchema, type SourceConfig, type StorageConfig } from '../config/schema.js';
import { MbtilesSource } from './mbtiles.js';
import { PmtilesSource } from './pmtiles.js';
import { SourceOpenError, type TileSource } from './source.js';
import { FileSource } from './files/source.js';
import type { CrsReader } from './files/crs.js';
import { XyzSource } from './xyz/source.js';

/** `[storage]` as an empty section gives it: for callers without a whole config (tests, tools). */
const DEFAULT_STORAGE: StorageConfig = v.parse(StorageSchema, {});

/** `readCrs`: how a data file in a projected CRS has GDAL read it (the state's raster pool; files/crs.ts). */
export function openSource(cfg: SourceConfig, storage: StorageConfig = DEFAULT_STORAGE, readCrs?: CrsReader): Promise<TileSource> {
  switch (cfg.type) {
    case 'pmtiles':
      return PmtilesSource.open(cfg, storage);
    case 'mbtiles':
      return MbtilesSource.open(cfg);
    case 'xyz':
      return XyzSource.open(cfg);
    case 'geojson':
    case 'geopackage':
    case 'flatgeobuf':
    case 'geoparquet':
      return FileSource.open(cfg, storage, readCrs);
    case 'cog':
    case 'vrt':
      return Promise.reject(new SourceOpenError(cfg.id, 'raster sources are opened by the state'));
  }
}
