// `type = "pmtiles"`: a PMTiles archive, a local file or read by byte ranges from http(s), s3://, gs:// or az://.
import * as v from 'valibot';
import { DemSchema } from '../sections/common.js';
import { COMMON_ENTRIES, sourcePath, STORAGE_ENTRIES, storageKeyProblems } from './common.js';
import type { KindConfig, Problem, SourceKind } from './kind.js';

const PMTILES_ENTRIES = {
  type: v.literal('pmtiles'),
  ...COMMON_ENTRIES,
  /** A file path (relative to the config file), or an http(s), s3://, gs:// or az:// URL read with range requests. */
  path: sourcePath,
  ...STORAGE_ENTRIES,
  /** The archive holds encoded DEM tiles (docs/terrain.md): hillshade, contours and the elevation API come with it. */
  dem: v.optional(DemSchema),
};

export const pmtiles = { types: ['pmtiles'], entries: PMTILES_ENTRIES } satisfies SourceKind<typeof PMTILES_ENTRIES>;

export function pmtilesProblems(s: KindConfig<typeof pmtiles>, problem: Problem): void {
  storageKeyProblems(s, problem);
}
