// Piscina worker entry of the terrain pool (src/terrain/work.ts): DEM tiles decoded and encoded, hillshade and
// contour tiles made, off the HTTP process's event loop. Bundled to dist/workers/terrain.js.
import { initCodecs } from '../src/tiles/encoding.js';
import { runTerrainTask, type TerrainTask } from '../src/terrain/terrain-ops.js';

// zstd on Node 20 is WebAssembly, loaded once per thread: contour tiles leave the thread content-encoded.
await initCodecs();

export default function run(task: TerrainTask) {
  return runTerrainTask(task);
}
