// The raster pool: the Piscina worker thread (workers/raster.ts) that does every GDAL call of this process, so
// the HTTP process never blocks on a file read or a warp. One thread, kept for the life of the process:
// gdal-async is not context-aware and loads in only one thread per process, ever (a second thread, or a
// replacement for an ended one, fails with "Module did not self-register"; measured, see docs/rasters.md).
// Parallelism comes from gdal-async's *Async calls, which run on libuv's thread pool: `[raster] pool_size`
// tiles are in progress at once. The queue is bounded: full, a tile answers 503 with Retry-After.
//
// Each state gets a handle with its own generation; the datasets it opened are closed when it is closed.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Piscina } from 'piscina';
import { poolShare, workerCount } from '../../config/sizing.js';
import type { Config, RasterSourceConfig } from '../../config/schema.js';
import { startValues } from '../../config/restart-only.js';
import { BoundedPool, PoolFullError } from '../../tiles/bounded-pool.js';
import { gdalStorageOptions, type GdalOptions } from './gdal-storage.js';
import { isRemotePath } from '../../config/object-location.js';
import { RETRY_AFTER_STORAGE } from '../object-store/reader.js';
import { openChannel } from '../object-store/open.js';
import { StoreError } from '../object-store/store.js';
import { SourceOpenError, TileUnavailableError } from '../source.js';
import type { RasterInfo, RasterTask } from '../../raster/warp-tile.js';
import type { DemPointsTask, DemWindowTask } from '../../raster/dem-read.js';
import type { RasterJob } from '../../raster/job.js';
import type { CrsReading } from '../../raster/crs-read.js';
import type { GridSamples } from '../../grid/bilinear.js';

/** A remote raster file GDAL could not read now (its retries and timeout spent): the store's outage, 503. */
export class RasterStorageUnavailable extends TileUnavailableError {
  constructor(
    readonly file: string,
    /** GDAL's message, one line. */
    readonly reason: string,
  ) {
    super(503, 'Storage unavailable', `cannot read ${file}: ${reason}`, RETRY_AFTER_STORAGE);
    this.name = 'RasterStorageUnavailable';
  }
}

/** The built worker beside the bundle (dist/workers/raster.js). */
function workerFile(): string | undefined {
  const file = fileURLToPath(new URL('./workers/raster.js', import.meta.url));
  return existsSync(file) ? file : undefined;
}

let shared: { piscina: Piscina; bounded: BoundedPool } | undefined;
let generations = 0;

/** Tiles in progress at once in this process: `[raster] pool_size`, else this process's share of the cores. */
export function rasterConcurrency(config: Config): number {
  const start = startValues(config);
  return start.raster.pool_size ?? poolShare(workerCount(start.server.workers));
}

function piscina(config: Config): { piscina: Piscina; bounded: BoundedPool } {
  if (shared) return shared;
  const filename = workerFile();
  // Running from the TypeScript sources (not the build) there is no worker to start.
  if (!filename) throw new SourceOpenError('raster', 'the raster pool worker (dist/workers/raster.js) is missing: run make build');
  const concurrency = rasterConcurrency(config);
  const pool = new Piscina({
    filename,
    minThreads: 1,
    maxThreads: 1,
    idleTimeout: Number.POSITIVE_INFINITY,
    concurrentTasksPerWorker: concurrency,
    // The thread awaits GDAL's async calls: it must keep its event loop running between tasks.
    atomics: 'disabled',
  });
  // The tiles in progress plus those waiting; past it a tile is refused (bounded-pool.ts says why the count is ours).
  shared = { piscina: pool, bounded: new BoundedPool(pool, concurrency * (1 + startValues(config).raster.max_queue_per_thread), 'raster pool') };
  return shared;
}

export class RasterPool {
  private readonly pool: BoundedPool;
  /** The same pool without the bound, for closing datasets: a full queue must not keep them open. */
  private readonly unbounded: Piscina;
  readonly generation = ++generations;

  /** GDAL's options for rasters on object storage, from the environment and the raster sources' storage keys. */
  private readonly storage: GdalOptions;

  /** Sizing is read when the process's pool starts; a reload keeps it (docs/rasters.md). */
  constructor(private readonly config: Config) {
    this.storage = gdalStorageOptions(config);
    ({ bounded: this.pool, piscina: this.unbounded } = piscina(config));
  }

  async tile(task: Omit<RasterTask, 'generation' | 'datasetCache'>): Promise<Uint8Array | undefined> {
    const full: RasterTask = { ...task, generation: this.generation, datasetCache: this.config.raster.dataset_cache, storage: this.storage };
    const out = (await this.run({ op: 'tile', task: full }, task.files)) as Uint8Array | undefined;
    return out ? new Uint8Array(out.buffer, out.byteOffset, out.byteLength) : undefined;
  }

  /**
   * Elevations of single-band files over a tile's web-mercator window with `border` pixels around it
   * ((size + 2 * border)² values, NaN without data), or undefined when the window has no data at all.
   */
  demWindow(files: string[], z: number, x: number, y: number, size: number, border: number): Promise<Float32Array | undefined> {
    const task: DemWindowTask = { files, z, x, y, size, border, generation: this.generation, datasetCache: this.config.raster.dataset_cache, storage: this.storage };
    return this.run({ op: 'dem-window', task }, files) as Promise<Float32Array | undefined>;
  }

  /** The same window, or for a file read directly its pixels and where the window samples them (src/raster/dem-read.ts). */
  demGrid(files: string[], z: number, x: number, y: number, size: number, border: number): Promise<Float32Array | GridSamples | undefined> {
    const task: DemWindowTask = { files, z, x, y, size, border, generation: this.generation, datasetCache: this.config.raster.dataset_cache, storage: this.storage };
    return this.run({ op: 'dem-grid', task }, files) as Promise<Float32Array | GridSamples | undefined>;
  }

  /** Elevations at lon/lat pairs at the files' own resolution (bilinear; later files over earlier ones; NaN outside them or without data). */
  demPoints(files: string[], points: Float64Array): Promise<Float64Array> {
    const task: DemPointsTask = { files, points, generation: this.generation, datasetCache: this.config.raster.dataset_cache, storage: this.storage };
    return this.run({ op: 'dem-points', task }, files) as Promise<Float64Array>;
  }

  private async run(job: RasterJob, files: readonly string[]): Promise<unknown> {
    try {
      return await this.pool.run(job);
    } catch (err) {
      if (err instanceof PoolFullError) throw new TileUnavailableError(503, 'Busy', 'the raster queue is full; retry shortly', 1);
      // A remote file that GDAL could not read now (its retries and timeout spent) is the store's outage, not a
      // bug; a file the store serves but GDAL cannot decode is not, and fails as a local file would.
      const remote = files.find(isRemotePath);
      if (remote && (await this.storeFails(remote))) throw new RasterStorageUnavailable(remote, String((err as Error).message).split('\n')[0]);
      throw err;
    }
  }

  /**
   * Whether the store of a remote file fails now. GDAL's message cannot tell: an outage in the middle of a tile
   * reads as "TIFFReadEncodedTile() failed", as a corrupt file does, and a timed-out open as a missing file. So
   * after a failed tile (only then: no cost on success) one byte of the file is read through the same reader as
   * remote PMTiles, with the COG source's own storage keys, else the environment's (as GDAL's). Only a failure
   * of the store itself (network, 5xx, throttling, timeout) counts.
   */
  private async storeFails(file: string): Promise<boolean> {
    const cfg = this.config.sources.find((s): s is RasterSourceConfig => (s.type === 'cog' || s.type === 'vrt') && s.path === file) ?? { id: 'raster', path: file };
    try {
      const channel = await openChannel(cfg, this.config.storage);
      try {
        await channel.read(0, 1, undefined);
        return false;
      } finally {
        channel.close();
      }
    } catch (err) {
      return err instanceof StoreError && err.kind === 'unavailable';
    }
  }

  /**
   * A data file's CRS as GDAL reads it (src/raster/crs-read.ts), for src/sources/files/crs.ts: through this
   * thread because no other thread of the process may load gdal-async. Not a tile: never refused for a full queue.
   */
  readCrs(input: string, fallback?: string): Promise<CrsReading> {
    return this.unbounded.run({ op: 'crs', input, fallback } satisfies RasterJob) as Promise<CrsReading>;
  }

  /** The axis order of an EPSG code as GDAL knows it (src/raster/crs-read.ts), or null for a code it does not know. */
  epsgAxes(code: number): Promise<{ swap: boolean } | null> {
    return this.unbounded.run({ op: 'epsg-axes', code } satisfies RasterJob) as Promise<{ swap: boolean } | null>;
  }

  describe(file: string): Promise<RasterInfo> {
    return this.pool.run({ op: 'describe', file, storage: this.storage }) as Promise<RasterInfo>;
  }

  /** Closes the datasets this state opened; the thread stays for the next state. */
  async close(): Promise<void> {
    await this.unbounded.run({ op: 'close', generation: this.generation }).catch(() => {});
  }
}
