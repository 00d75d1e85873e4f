// The `dem` marking of an archive source: only an archive of PNG or WebP tiles can hold encoded elevations.
import type { MbtilesSourceConfig, PmtilesSourceConfig } from '../config/schema.js';
import type { TileFormat } from '../tiles/format.js';
import { SourceOpenError, type SourceInfo } from './source.js';

export function demOf(cfg: PmtilesSourceConfig | MbtilesSourceConfig, format: TileFormat): Pick<SourceInfo, 'dem'> {
  if (!cfg.dem) return {};
  if (format !== 'png' && format !== 'webp') throw new SourceOpenError(cfg.id, `dem needs an archive of PNG or WebP elevation tiles; ${cfg.path} holds ${format} tiles`);
  return { dem: cfg.dem.encoding };
}
