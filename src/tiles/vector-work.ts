// Runs vector operations (vector-ops.ts) off the event loop: a Piscina pool of worker threads, one per
// process, created on first use. Transcoding the 900 KB Paris tile takes a few hundred milliseconds; inline,
// that would stall every other request of the process. Small inputs run inline, where a thread hop would
// cost more than the work itself.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Piscina } from 'piscina';
import type { Config } from '../config/schema.js';
import { poolShare, workerCount } from '../config/sizing.js';
import { startValues } from '../config/restart-only.js';
import { HttpProblem } from '../problem.js';
import { BoundedPool, PoolFullError } from './bounded-pool.js';
import { runVectorTask, type VectorTask, type VectorTaskResult } from './vector-ops.js';

/**
 * Inputs below this many bytes run inline. Measured here (2 busy cores): a pool round trip costs about 2 ms
 * whatever the tile; inline MVT -> MLT takes 0.5 ms at 0.4 KB, 1.5 ms at 2 KB, 3 ms at 8 KB. Above ~4 KB
 * the thread hop is cheaper than holding up every other request of the process.
 */
export const INLINE_MAX_BYTES = 4 * 1024;
/** Queued tasks per thread before callers are told to come back later (503). */
const QUEUE_PER_THREAD = 64;

let pool: BoundedPool | undefined;
let poolUnavailable = false;

/** The built worker beside the bundle (dist/workers/transcode.js); absent when running from sources. */
function workerFile(): string | undefined {
  const file = fileURLToPath(new URL('./workers/transcode.js', import.meta.url));
  return existsSync(file) ? file : undefined;
}

/**
 * Pool threads for this process: `server.transcode_threads`, else this process's share of the cores. Read when the
 * pool is made, once per process (piscina cannot resize a pool): both keys are restart-only.
 */
export function transcodeThreads(config: Config): number {
  const { transcode_threads, workers } = startValues(config).server;
  return transcode_threads ?? poolShare(workerCount(workers));
}

function getPool(config: Config): BoundedPool | undefined {
  if (pool || poolUnavailable) return pool;
  const filename = workerFile();
  if (!filename) {
    poolUnavailable = true;
    return undefined;
  }
  const threads = transcodeThreads(config);
  // The pool's threads run at a lower priority (nice +10, through piscina's niceIncrement and @napi-rs/nice on
  // Linux): a transcode of a dense tile takes hundreds of milliseconds of CPU, and the event loop serving cached
  // tiles meanwhile must get the core first.
  const piscina = new Piscina({ filename, minThreads: 0, maxThreads: threads, idleTimeout: 30_000, niceIncrement: 10 });
  pool = new BoundedPool(piscina, threads * (1 + QUEUE_PER_THREAD), 'vector pool');
  return pool;
}

function inputBytes(task: VectorTask): number {
  switch (task.op) {
    case 'transcode':
    case 'geojson':
      return task.input.bytes.byteLength;
    case 'merge':
      return task.members.reduce((n, m) => n + m.bytes.byteLength, 0);
    case 'query':
      return task.tiles.reduce((n, t) => n + t.bytes.byteLength, 0);
  }
}

/** Runs a vector task inline or in the pool. Throws HttpProblem 503 when the pool's queue is full. */
export async function runVector<T extends VectorTask>(task: T, config: Config): Promise<VectorTaskResult<T>> {
  const p = inputBytes(task) < INLINE_MAX_BYTES ? undefined : getPool(config);
  if (!p) return runVectorTask(task) as VectorTaskResult<T>;
  try {
    return (await p.run(task)) as VectorTaskResult<T>;
  } catch (err) {
    if (err instanceof PoolFullError) {
      throw new HttpProblem(503, 'Busy', 'the vector transcoding queue is full; retry shortly', {}, { 'Retry-After': '1' });
    }
    throw err;
  }
}
