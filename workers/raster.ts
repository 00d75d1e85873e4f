// Piscina worker entry of the raster pool (src/raster/pool.ts): every GDAL call of the service runs here, off
// the HTTP process's event loop. Bundled to dist/workers/raster.js.
import { closeGeneration, describeRaster, warpTile, type GdalOptions, type RasterTask } from '../src/raster/warp-tile.js';

export type RasterJob = { op: 'tile'; task: RasterTask } | { op: 'describe'; file: string; storage?: GdalOptions } | { op: 'close'; generation: number };

export default async function run(job: RasterJob) {
  switch (job.op) {
    case 'tile':
      return warpTile(job.task);
    case 'describe':
      return describeRaster(job.file, job.storage);
    case 'close':
      return closeGeneration(job.generation);
  }
}
