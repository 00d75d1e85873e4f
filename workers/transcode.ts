// Piscina worker entry of the vector pool (src/tiles/vector-work.ts): MVT<->MLT transcoding (and the content
// encoding of its output), composite merging, tile GeoJSON and feature queries, off the HTTP process's event loop.
// Bundled to dist/workers/transcode.js.
import { initCodecs } from '../src/tiles/encoding.js';
import { runVectorTask, type VectorTask } from '../src/tiles/vector-ops.js';

// zstd on Node 20 is WebAssembly, loaded once per thread; transcoded tiles leave the thread content-encoded.
await initCodecs();

export default function run(task: VectorTask) {
  return runVectorTask(task);
}
