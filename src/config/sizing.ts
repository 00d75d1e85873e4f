// How many HTTP worker processes, and how many pool threads each of them runs.
import os from 'node:os';

export const MAX_AUTO_WORKERS = 4;

export function cpuCount(): number {
  return Math.max(1, typeof os.availableParallelism === 'function' ? os.availableParallelism() : os.cpus().length);
}

/**
 * `"auto"`: one process per core, at most 4. More processes would each carry their own caches and, with
 * rendering, their own browsers; beyond a few, threads inside each process use the remaining cores better.
 */
export function workerCount(setting: 'auto' | number, cores = cpuCount()): number {
  return setting === 'auto' ? Math.min(cores, MAX_AUTO_WORKERS) : setting;
}

/** Default size of a per-process pool: this process's share of the cores, so that all processes use each core once. */
export function poolShare(workers: number, cores = cpuCount()): number {
  return Math.max(1, Math.floor(cores / Math.max(1, workers)));
}

/** The renderers of one process's render pool: `render.pool_size`, else its share of the cores by `server.workers`. */
export function renderersPerProcess(poolSize: number | undefined, workers: 'auto' | number): number {
  return poolSize ?? poolShare(workerCount(workers));
}
