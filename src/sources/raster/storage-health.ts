// Whether a raster source's files on object storage can be read now, for `/ready`. GDAL reads them itself
// (/vsis3/, /vsigs/, /vsiaz/), so there is no shared reader to watch the store as for PMTiles: the source
// watches its own tiles instead. A tile that fails with the store's outage (RasterStorageUnavailable, a 503) marks
// the source unreachable with GDAL's reason, and readiness names it as it names a remote PMTiles source; the next
// tile drawn from a remote file clears it. While it is marked, the failed tile is tried again every few seconds,
// so readiness turns back by itself even when no traffic reaches an unready instance.
import { isRemotePath } from '../../config/object-location.js';
import { log } from '../../log.js';
import { RasterStorageUnavailable } from './pool.js';

/** How often a source that lost its store tries the failed tile again without traffic. */
const PROBE_INTERVAL_MS = 3000;

export class RasterStorageHealth {
  private problem: string | undefined;
  private probe: NodeJS.Timeout | undefined;
  private closed = false;

  constructor(private readonly sourceId: string) {}

  /** Why the source's store is unreachable now (GDAL's reason), or undefined. */
  get unreachable(): string | undefined {
    return this.problem;
  }

  /** Draws a tile from `files` with `draw`, noting the store's outage or its end. */
  watch<T>(files: readonly string[], draw: () => Promise<T>): Promise<T> {
    return this.run(files.some(isRemotePath), draw);
  }

  private async run<T>(remote: boolean, draw: () => Promise<T>): Promise<T> {
    try {
      const out = await draw();
      if (remote) this.recovered();
      return out;
    } catch (err) {
      if (err instanceof RasterStorageUnavailable) this.failed(err, draw);
      throw err;
    }
  }

  private recovered(): void {
    if (this.problem === undefined) return;
    log.info(`source "${this.sourceId}": its raster files on storage can be read again`);
    this.problem = undefined;
    clearTimeout(this.probe);
    this.probe = undefined;
  }

  private failed(err: RasterStorageUnavailable, draw: () => Promise<unknown>): void {
    if (this.problem === undefined) log.warn(`source "${this.sourceId}": ${err.detail}`);
    this.problem = err.detail;
    this.scheduleProbe(draw);
  }

  private scheduleProbe(draw: () => Promise<unknown>): void {
    if (this.closed || this.probe) return;
    this.probe = setTimeout(() => {
      this.probe = undefined;
      if (this.problem === undefined) return;
      // The outcome is noted by run(); a failure schedules the next try.
      this.run(true, draw).catch(() => {});
    }, PROBE_INTERVAL_MS);
    this.probe.unref();
  }

  close(): void {
    this.closed = true;
    clearTimeout(this.probe);
  }
}
