// The reader of each data-file source type. A new format adds its line here (and its type to the config schema).
import { openFlatGeobuf } from './flatgeobuf.js';
import { openGeoJson } from './geojson.js';
import { openGeoPackage } from './geopackage.js';
import { openGeoParquet } from './geoparquet.js';
import type { OpenReader } from './reader.js';

export const FILE_READERS = {
  geojson: openGeoJson,
  geopackage: openGeoPackage,
  flatgeobuf: openFlatGeobuf,
  geoparquet: openGeoParquet,
} satisfies Record<string, OpenReader>;

export type FileSourceType = keyof typeof FILE_READERS;

export const isFileSourceType = (t: string): t is FileSourceType => Object.hasOwn(FILE_READERS, t);
