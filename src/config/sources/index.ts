// `[[sources]]`: one schema per kind of source under a variant on `type`, so a source's type is exactly its
// kind's keys and callers narrow on `type` instead of casting. The kinds' keys are read loosely (kind.ts), so
// that a key of another kind reaches the refusals rather than vanishing, and are then reduced to the declared
// ones: the parsed source holds what its type declares and nothing else.
import * as v from 'valibot';
import { issueMessage } from '../errors.js';
import { keyPath } from '../sections/common.js';
import { section } from '../sections/section.js';
import { files, fileProblems } from './files.js';
import { kindSchema, refusal, type Problem, type SourceKind } from './kind.js';
import { COMMON_ENTRIES, type StorageKeysConfig } from './common.js';
import { mbtiles, mbtilesProblems } from './mbtiles.js';
import { pmtiles, pmtilesProblems } from './pmtiles.js';
import { raster, rasterProblems } from './raster.js';
import { xyz, xyzProblems } from './xyz.js';

import { FILE_SOURCE_TYPES } from './files.js';

export { FILE_SOURCE_TYPES };
export { STORAGE_KEYS, type StorageKeysConfig } from './common.js';

const COMMON_SOURCE = v.looseObject(COMMON_ENTRIES);

/** In the order an unknown `type` lists them. */
const KINDS: readonly SourceKind[] = [pmtiles, mbtiles, raster, xyz, files];

/** The parsed source without the keys it does not declare (they were refused or warned about). */
type Declared<T> = T extends unknown ? { [K in keyof T as string extends K ? never : K]: T[K] } : never;

function declared<T extends { type: string }>(s: T): Declared<T> {
  const kind = KINDS.find((k) => k.types.includes(s.type))!;
  return Object.fromEntries(Object.entries(s).filter(([key]) => Object.hasOwn(kind.entries, key))) as Declared<T>;
}

/** Every source type, for the message of one that is missing or unknown. */
const TYPES = KINDS.flatMap((k) => k.types.map((t) => `"${t}"`));

function typeMessage(issue: v.VariantIssue): string {
  return issue.input === undefined ? `required key is missing (one of ${TYPES.join(', ')})` : `Invalid type: Expected ${TYPES.join(' | ')} but received ${issue.received}`;
}

export const SourceSchema = v.pipe(
  v.variant('type', [
    kindSchema(pmtiles),
    kindSchema(mbtiles),
    kindSchema(raster),
    kindSchema(xyz),
    kindSchema(files),
  ], typeMessage),
  // Runs on the loose value even when a key of the kind is invalid, so a refused key is reported along with it.
  v.rawCheck(({ dataset, addIssue }) => {
    const s = dataset.value as Record<string, unknown> | undefined;
    if (!s || typeof s !== 'object') return;
    const kind = KINDS.find((k) => k.types.includes(String(s.type)));
    if (!kind) {
      // No kind to check the source against: the keys every kind has are still checked, so that one round reports them too.
      const common = v.safeParse(COMMON_SOURCE, s);
      if (!common.success) for (const issue of common.issues) addIssue({ message: issueMessage(issue), path: issue.path as [v.ObjectPathItem] });
      return;
    }
    for (const key of Object.keys(s)) {
      const message = refusal(key, String(s.type), kind, KINDS);
      if (message) addIssue({ message, path: keyPath(s, key) });
    }
  }),
  v.rawCheck(({ dataset, addIssue }) => {
    if (!dataset.typed) return;
    const s = dataset.value;
    const problem: Problem = (key, message) => addIssue({ message, path: keyPath(s, key) });
    switch (s.type) {
      case 'pmtiles':
        return pmtilesProblems(s, problem);
      case 'mbtiles':
        return mbtilesProblems(s, problem);
      case 'cog':
      case 'vrt':
        return rasterProblems(s, problem);
      case 'xyz':
        return xyzProblems(s, problem);
      default:
        return fileProblems(s, problem);
    }
  }),
  // xyz sources keep their template in `path` too: every source has a path (a file or a URL) after parsing.
  v.transform((s) => (s.type === 'xyz' ? { ...declared(s), path: s.url } : declared(s))),
);

export const sources = section(v.optional(v.array(SourceSchema), []));

export type SourceConfig = v.InferOutput<typeof SourceSchema>;
export type PmtilesSourceConfig = Extract<SourceConfig, { type: 'pmtiles' }>;
export type MbtilesSourceConfig = Extract<SourceConfig, { type: 'mbtiles' }>;
export type RasterSourceConfig = Extract<SourceConfig, { type: 'cog' | 'vrt' }>;
export type XyzSourceConfig = Extract<SourceConfig, { type: 'xyz' }>;
export type FileSourceConfig = Extract<SourceConfig, { type: (typeof FILE_SOURCE_TYPES)[number] }>;
/** What a reader of a remote source needs: its id, its path and the storage keys that say how to reach it. */
export type StoredSourceConfig = Pick<SourceConfig, 'id' | 'path'> & StorageKeysConfig;
