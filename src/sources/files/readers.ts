// The reader of each data-file source type. A new format adds its line here (and its type to the config schema).
import { openGeoJson } from './geojson.js';
import { openGeoPackage } from './geopackage.js';
import type { OpenReader } from './reader.js';

export const FILE_READERS = {
  geojson: openGeoJson,
  geopackage: openGeoPackage,
} satisfies Record<string, OpenReader>;

export type FileSourceType = keyof typeof FILE_READERS;

export const isFileSourceType = (t: string): t is FileSourceType => Object.hasOwn(FILE_READERS, t);
