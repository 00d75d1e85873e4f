// The terrain kernels alone, in this process, without a server: what hillshade (three methods) and contours (two
// intervals) cost in CPU on one 512 px tile of a real DEM, the window test/terrain-gdal.test.ts compares with GDAL
// (fixtures/cog/dem-small.cog.tif around San Francisco, tile 12/655/1582 with a 4 px border, cut by gdalwarp in
// EPSG:3857). bench/terrain.bench.ts measures whole tiles through the server against GDAL's tools; this one says how
// much of a tile the kernels themselves take, and moves when they change. Each figure is the mean of its runs after
// one unmeasured run, from process.cpuUsage (this process's CPU: the kernels run on the calling thread).
//   BENCH=terrain-kernels make bench          (or: node --import tsx bench/terrain-kernels.bench.ts after a build)
// Environment: BENCH_TERRAIN_KERNEL_RUNS (runs of each hillshade; contours take half as many, 20).
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { contourLayer } from '../src/terrain/contours.js';
import { hillshade } from '../src/terrain/hillshade.js';
import { BORDER, SIZE, warpWindow, X, Y, Z } from '../test/helpers/dem-fixture-window.js';
import { envNumber, fmt } from './lib.js';

const RUNS = envNumber('BENCH_TERRAIN_KERNEL_RUNS', 20);

/** Mean CPU milliseconds of `fn` over `n` runs, after one unmeasured run (code compiled, buffers made). */
function cpuMs(fn: () => void, n: number): number {
  fn();
  const start = process.cpuUsage();
  for (let i = 0; i < n; i++) fn();
  const used = process.cpuUsage(start);
  return (used.user + used.system) / 1000 / n;
}

function main(): void {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'tsts-bench-terrain-kernels-'));
  try {
    const win = warpWindow(X, Y, path.join(dir, 'window.tif'));
    process.stdout.write(`Terrain kernels: node ${process.version}, one ${SIZE} px tile (z${Z}/${X}/${Y} of fixtures/cog/dem-small.cog.tif, border ${BORDER}), ${RUNS} runs of each hillshade, ${Math.max(1, RUNS / 2)} of each contour interval\n`);
    const standard = cpuMs(() => hillshade(win), RUNS);
    const grey = cpuMs(() => hillshade(win, { method: 'basic', mode: 'grey' }), RUNS);
    const multi = cpuMs(() => hillshade(win, { method: 'multidirectional' }), RUNS);
    const contours10 = cpuMs(() => contourLayer(win, { interval: 10, major: 5, unit: 'm' }), Math.max(1, RUNS / 2));
    const contours50 = cpuMs(() => contourLayer(win, { interval: 50, major: 5, unit: 'm' }), Math.max(1, RUNS / 2));
    process.stdout.write(
      `CPU ms per ${SIZE} px tile: hillshade standard ${fmt(standard, 2)}, basic grey ${fmt(grey, 2)}, multidirectional colour ${fmt(multi, 2)}; contours 10 m ${fmt(contours10, 2)}, 50 m ${fmt(contours50, 2)}\n`,
    );
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

main();
