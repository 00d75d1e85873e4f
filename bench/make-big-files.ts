// Makes the big data files for the file-source bench (BENCH=files): a FlatGeobuf and a GeoParquet file of
// BENCH_FILES_GB gigabytes each (default 2) of real-shaped features, shifted copies of the Dortmund tile's
// features from the OpenMapTiles fixtures, each with a 16 KB text property so that the size comes cheaply
// (test/helpers/file-data.ts writes both, streaming: the files need no such memory). Files already of the size
// asked for are kept.
//
//   BENCH_FILES_GB=3 BENCH_FILES_DIR=/srv/bench node --import tsx bench/make-big-files.ts
//
// Prints one JSON line: the paths, sizes, feature counts and the extent the copies cover.
import { existsSync, mkdirSync, renameSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { cityFeatures } from '../test/helpers/city-collection.js';
import { shiftedCopies, writeBigFlatGeobuf, writeGeoParquet } from '../test/helpers/file-data.js';

const NOTE_BYTES = 16_000;

export interface BigFiles {
  flatgeobuf: string;
  geoparquet: string;
  copies: number;
  features: number;
  /** West, south, east, north of all copies. */
  bounds: [number, number, number, number];
}

/** Writes (or keeps) the two files of about `gb` gigabytes each in `dir`. */
export function makeBigFiles(dir: string, gb: number): BigFiles {
  mkdirSync(dir, { recursive: true });
  const city = cityFeatures();
  // One copy of the city with its notes is about 63 MB in either format.
  const copies = Math.max(1, Math.round((gb * 1e9) / (city.features.length * (NOTE_BYTES + 300))));
  const flatgeobuf = path.join(dir, `cities-${copies}.fgb`);
  const geoparquet = path.join(dir, `cities-${copies}.parquet`);
  // Written under a temporary name first: an interrupted run leaves no file that looks whole.
  if (!existsSync(flatgeobuf)) {
    writeBigFlatGeobuf(`${flatgeobuf}.part`, city, copies, NOTE_BYTES);
    renameSync(`${flatgeobuf}.part`, flatgeobuf);
  }
  if (!existsSync(geoparquet)) {
    writeGeoParquet(`${geoparquet}.part`, shiftedCopies(city, copies, NOTE_BYTES), { rowGroupSize: 1000 });
    renameSync(`${geoparquet}.part`, geoparquet);
  }
  // Copies lie on a grid of 10 columns, 0.12 by 0.08 degrees apart (file-data.ts, copyShift).
  const [w, s, e, n] = [7.3939919, 51.4822582, 7.5062585, 51.562045];
  const columns = Math.min(copies, 10);
  const rows = Math.ceil(copies / 10);
  return { flatgeobuf, geoparquet, copies, features: copies * city.features.length, bounds: [w, s, e + (columns - 1) * 0.12, n + (rows - 1) * 0.08] };
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const gb = Number(process.env.BENCH_FILES_GB ?? 2);
  const dir = process.env.BENCH_FILES_DIR ?? path.join(os.tmpdir(), 'tileserver-ts-bench-files');
  const started = Date.now();
  const out = makeBigFiles(dir, gb);
  const size = (f: string) => statSync(f).size;
  process.stdout.write(`${JSON.stringify({ ...out, flatgeobufBytes: size(out.flatgeobuf), geoparquetBytes: size(out.geoparquet), seconds: (Date.now() - started) / 1000 })}\n`);
}
