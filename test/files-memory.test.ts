// Bounded memory of the FlatGeobuf and GeoParquet readers: files of about 300 MB of real-shaped features (five
// shifted copies of the Dortmund tile's features, each with a 16 KB text property, so that the size comes
// cheaply) are read by boxes in a child process with a 48 MB heap, and its peak RSS must stay far below the
// file's size, though one of the boxes holds a whole copy of the city (about 60 MB of features).
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { rmSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { cityFeatures } from './helpers/city-collection.js';
import { shiftedCopies, writeBigFlatGeobuf, writeGeoParquet } from './helpers/file-data.js';
import { tempDir } from './helpers/foundation.js';

const dir = tempDir('tsts-files-memory-');
const CHILD = path.join(path.dirname(fileURLToPath(import.meta.url)), 'helpers', 'file-memory-child.ts');
const COPIES = 5;
const NOTE = 16_000;
/** A small box in copy 0, the same in copy 3, and the whole of copy 1 (the city's extent moved 0.12 degrees east). */
const BOXES = [
  [7.45, 51.5, 7.46, 51.51],
  [7.81, 51.5, 7.82, 51.51],
  [7.51399, 51.48225, 7.62626, 51.56205],
];

const files = { flatgeobuf: path.join(dir, 'big.fgb'), geoparquet: path.join(dir, 'big.parquet') };

before(() => {
  const city = cityFeatures();
  writeBigFlatGeobuf(files.flatgeobuf, city, COPIES, NOTE);
  writeGeoParquet(files.geoparquet, shiftedCopies(city, COPIES, NOTE), { rowGroupSize: 1000 });
});

after(() => {
  rmSync(dir, { recursive: true, force: true });
});

for (const kind of ['flatgeobuf', 'geoparquet'] as const) {
  test(`${kind}: reading boxes of a ${COPIES}-copy file of about 300 MB keeps the RSS far below its size`, () => {
    const size = statSync(files[kind]).size;
    assert.ok(size > 250e6, `the file is ${size} bytes`);
    const r = spawnSync(process.execPath, ['--max-old-space-size=48', '--max-semi-space-size=2', '--import', 'tsx', CHILD, kind, files[kind], JSON.stringify(BOXES)], {
      encoding: 'utf8',
      timeout: 60_000,
    });
    assert.equal(r.status, 0, r.stderr);
    const out = JSON.parse(r.stdout) as { counts: number[]; baseRss: number; peakRss: number; memoryBytes: number };
    const mb = (n: number) => `${Math.round(n / 1e6)} MB`;
    // The city has 3869 features, 85 of them meet the small box.
    assert.deepEqual(out.counts, [85, 85, 3869]);
    const note = `file ${mb(size)}, RSS ${mb(out.baseRss)} at start, peak ${mb(out.peakRss)}, memoryBytes ${mb(out.memoryBytes)}`;
    process.stdout.write(`# ${kind}: ${note}\n`);
    // The bound is on what reading adds. The RSS at start (Node, tsx and the libraries, 83 to 95 MB here) is not
    // the reader's and moves by run: a bound on the peak alone (below half the file) failed 1 run in 3 with the
    // reader unchanged, at 156 MB against 155.
    assert.ok(out.peakRss - out.baseRss < size / 4, note);
    // The range cache (4 MiB), the decoded features (8 MiB, as feature_cache_mb = 8 sets) and the metadata.
    assert.ok(out.memoryBytes < 16e6, note);
  });
}
