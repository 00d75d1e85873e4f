// Piscina worker entry of the vector pool (src/tiles/vector-work.ts): MVT<->MLT transcoding, composite merging,
// tile GeoJSON and feature queries, off the HTTP process's event loop. Bundled to dist/workers/transcode.js.
import { runVectorTask, type VectorTask } from '../src/tiles/vector-ops.js';

export default function run(task: VectorTask) {
  return runVectorTask(task);
}
