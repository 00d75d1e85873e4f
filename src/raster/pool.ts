// The raster pool of one state: Piscina worker threads (workers/raster.ts) that do every GDAL call, so the HTTP
// process never blocks on a file read or a warp. The queue is bounded: full, a tile answers 503 with
// Retry-After. The pool belongs to a state; destroying it on a reload ends its threads, which closes the
// datasets they kept open.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Piscina } from 'piscina';
import { poolShare, workerCount } from '../cluster/sizing.js';
import type { Config } from '../config/schema.js';
import { SourceOpenError, TileUnavailableError } from '../sources/source.js';
import type { RasterInfo, RasterTask } from './warp-tile.js';

/** The built worker beside the bundle (dist/workers/raster.js). */
function workerFile(): string | undefined {
  const file = fileURLToPath(new URL('./workers/raster.js', import.meta.url));
  return existsSync(file) ? file : undefined;
}

export class RasterPool {
  private readonly pool: Piscina;
  readonly threads: number;

  constructor(config: Config) {
    const filename = workerFile();
    // Running from the TypeScript sources (not the build) there is no worker to start.
    if (!filename) throw new SourceOpenError('raster', 'the raster pool worker (dist/workers/raster.js) is missing: run make build');
    this.threads = config.raster.pool_size ?? poolShare(workerCount(config.server.workers));
    this.pool = new Piscina({ filename, minThreads: 1, maxThreads: this.threads, idleTimeout: 60_000, maxQueue: this.threads * config.raster.max_queue_per_thread });
  }

  async tile(task: RasterTask): Promise<Uint8Array | undefined> {
    try {
      const out = (await this.pool.run({ op: 'tile', task })) as Uint8Array | undefined;
      return out ? new Uint8Array(out.buffer, out.byteOffset, out.byteLength) : undefined;
    } catch (err) {
      if ((err as Error).message === 'Task queue is at limit') throw new TileUnavailableError(503, 'Busy', 'the raster queue is full; retry shortly', 1);
      throw err;
    }
  }

  describe(file: string): Promise<RasterInfo> {
    return this.pool.run({ op: 'describe', file }) as Promise<RasterInfo>;
  }

  async close(): Promise<void> {
    await this.pool.destroy();
  }
}
