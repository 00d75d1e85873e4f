// Piscina worker entry of the raster pool (src/raster/pool.ts): every GDAL call of the service runs here, off
// the HTTP process's event loop. Bundled to dist/workers/raster.js.
import { describeRaster, warpTile, type RasterTask } from '../src/raster/warp-tile.js';

export type RasterJob = { op: 'tile'; task: RasterTask } | { op: 'describe'; file: string };

export default async function run(job: RasterJob) {
  return job.op === 'tile' ? warpTile(job.task) : describeRaster(job.file);
}
