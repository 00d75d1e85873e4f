// Child process of test/files-memory.test.ts (started with a small heap): opens a FlatGeobuf or GeoParquet file,
// reads the features of the boxes given, and prints one JSON line: how many features, the RSS before opening,
// the peak RSS while reading (sampled every few milliseconds and at every feature) and the reader's memoryBytes().
import { openFlatGeobuf } from '../../src/sources/files/flatgeobuf.js';
import { openGeoParquet } from '../../src/sources/files/geoparquet.js';
import type { Bounds } from '../../src/sources/source.js';
import { STORAGE } from './file-readers.js';

const [kind, file, boxesJson] = process.argv.slice(2);
const boxes = JSON.parse(boxesJson) as Bounds[];
const baseRss = process.memoryUsage.rss();
let peakRss = baseRss;
const sample = () => {
  peakRss = Math.max(peakRss, process.memoryUsage.rss());
};
const timer = setInterval(sample, 5);
const reader = await (kind === 'flatgeobuf' ? openFlatGeobuf : openGeoParquet)(file, { sourceId: 'big', storage: STORAGE, cacheBytes: 8 * 1024 * 1024 }); // feature_cache_mb = 8
const counts: number[] = [];
let memoryBytes = 0;
for (const box of boxes) {
  let n = 0;
  for await (const f of reader.features('big', box)) {
    if (f.geometry) n++;
    sample();
  }
  counts.push(n);
  memoryBytes = Math.max(memoryBytes, reader.memoryBytes());
}
await reader.close();
clearInterval(timer);
sample();
process.stdout.write(`${JSON.stringify({ counts, baseRss, peakRss, memoryBytes })}\n`);
