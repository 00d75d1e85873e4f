// `type = "mbtiles"`: an MBTiles archive, a SQLite file and so always local.
import * as v from 'valibot';
import { DemSchema } from '../sections/common.js';
import { isRemotePath } from '../object-location.js';
import { COMMON_ENTRIES, sourcePath, STORAGE_ENTRIES } from './common.js';
import type { KindConfig, Problem, SourceKind } from './kind.js';

const MBTILES_ENTRIES = {
  type: v.literal('mbtiles'),
  ...COMMON_ENTRIES,
  /** A file path, relative to the config file. */
  path: sourcePath,
  /** The archive holds encoded DEM tiles (docs/terrain.md). */
  dem: v.optional(DemSchema),
};

export const mbtiles = {
  types: ['mbtiles'],
  entries: MBTILES_ENTRIES,
  refuses: (key) => (Object.hasOwn(STORAGE_ENTRIES, key) ? `${key} does not apply to an mbtiles source (it is read from a local file only)` : undefined),
} satisfies SourceKind<typeof MBTILES_ENTRIES>;

export function mbtilesProblems(s: KindConfig<typeof mbtiles>, problem: Problem): void {
  if (isRemotePath(s.path)) problem('path', 'MBTiles is SQLite and is read from a local file only; serve a remote archive as PMTiles');
}
