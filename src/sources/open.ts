// Opens a configured source by its type. New source kinds register here.
import type { SourceConfig } from '../config/schema.js';
import { MbtilesSource } from './mbtiles.js';
import { PmtilesSource } from './pmtiles.js';
import { SourceOpenError, type TileSource } from './source.js';

export function openSource(cfg: SourceConfig): Promise<TileSource> {
  switch (cfg.type) {
    case 'pmtiles':
      return PmtilesSource.open(cfg);
    case 'mbtiles':
      return MbtilesSource.open(cfg);
    case 'cog':
    case 'vrt':
      return Promise.reject(new SourceOpenError(cfg.id, 'raster sources are opened by the state'));
  }
}
