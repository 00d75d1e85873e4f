// Piscina worker entry of the raster pool (src/raster/pool.ts): every GDAL call of the service runs here, off
// the HTTP process's event loop. Bundled to dist/workers/raster.js.
import { closeGeneration, describeRaster, warpTile } from '../src/raster/warp-tile.js';
import { readDemGrid, readDemPoints, readDemWindow } from '../src/raster/dem-read.js';
import type { RasterJob } from '../src/raster/job.js';
import { epsgAxes, readCrs } from '../src/raster/crs-read.js';
import { move } from 'piscina';

export default async function run(job: RasterJob) {
  switch (job.op) {
    case 'tile':
      return warpTile(job.task);
    case 'dem-window': {
      // A megabyte per 512 px window: handed over to the main thread rather than copied.
      const data = await readDemWindow(job.task);
      return data && move(data);
    }
    case 'dem-grid': {
      const read = await readDemGrid(job.task);
      return read instanceof Float32Array ? move(read) : read;
    }
    case 'dem-points':
      return readDemPoints(job.task);
    case 'describe':
      return describeRaster(job.file, job.storage);
    case 'crs':
      return readCrs(job.input, job.fallback);
    case 'epsg-axes':
      return epsgAxes(job.code);
    case 'close':
      return closeGeneration(job.generation);
  }
}
