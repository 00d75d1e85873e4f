// The terrain pool: worker threads (workers/terrain.ts) that decode and encode DEM tiles and make hillshade and
// contour tiles, so that none of it runs on the HTTP process's event loop. One pool per process, created on first
// use, sized like the vector pool (`server.transcode_threads`, else the process's share of the cores; restart-only,
// as piscina cannot resize a pool), at a lower priority than the event loop; its queue is bounded and a full queue
// answers 503 with Retry-After.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Piscina } from 'piscina';
import type { Config } from '../config/schema.js';
import { transcodeThreads } from '../tiles/vector-work.js';
import { HttpProblem } from '../problem.js';
import { BoundedPool, PoolFullError } from '../tiles/bounded-pool.js';
import type { TerrainTask, TerrainTaskResult } from './terrain-ops.js';

const QUEUE_PER_THREAD = 64;

let pool: BoundedPool | undefined;

function workerFile(): string {
  const file = fileURLToPath(new URL('./workers/terrain.js', import.meta.url));
  if (!existsSync(file)) throw new Error('the terrain pool worker (dist/workers/terrain.js) is missing: run make build');
  return file;
}

function getPool(config: Config): BoundedPool {
  if (pool) return pool;
  const threads = transcodeThreads(config);
  const piscina = new Piscina({ filename: workerFile(), minThreads: 0, maxThreads: threads, idleTimeout: 30_000, niceIncrement: 10 });
  pool = new BoundedPool(piscina, threads * (1 + QUEUE_PER_THREAD), 'terrain pool');
  return pool;
}

/**
 * Runs a terrain task in the pool. Throws HttpProblem 503 when the pool's queue is full. Buffers in `transfer` move
 * to the thread instead of being copied, and are unusable here afterwards.
 */
export async function runTerrain<T extends TerrainTask>(task: T, config: Config, transfer: ArrayBuffer[] = []): Promise<TerrainTaskResult<T>> {
  try {
    return (await getPool(config).run(task, { transferList: transfer })) as TerrainTaskResult<T>;
  } catch (err) {
    if (err instanceof PoolFullError) {
      throw new HttpProblem(503, 'Busy', 'the terrain queue is full; retry shortly', {}, { 'Retry-After': '1' });
    }
    throw err;
  }
}
