// The uploads this process serves, by id. One registry per process, outside every AppState: a reload builds a
// new state over the same registry (state/sources-view.ts), and a state's close() never reaches an upload.
// A removed upload leaves the registry at once but is closed only after a grace period, so a tile request that
// took the source a moment before still finishes.
import { UPLOAD_ID_PREFIX } from '../config/load.js';
import type { Config } from '../config/schema.js';
import type { Logger } from '../log.js';
import { RasterPool } from '../sources/raster/pool.js';
import type { TileSource } from '../sources/source.js';
import type { ExtraSources } from '../state/sources-view.js';
import { sourceIdOf, type UploadFormat } from './names.js';
import { openUpload } from './validate.js';

/** An upload as every process knows it (also what the cluster relays and hands to a new worker). */
export interface UploadRecord {
  /** The UUID. */
  id: string;
  /** The client's file name, for display only. */
  fileName: string;
  format: UploadFormat;
  /** Where the file is stored (a name the server generated). */
  filePath: string;
}

interface Entry {
  record: UploadRecord;
  source: TileSource;
  /** The GeoTIFF's own handle on the raster thread: closing it closes the datasets it opened. */
  raster?: RasterPool;
}

export const REMOVE_GRACE_MS = 5_000;

export class UploadRegistry implements ExtraSources {
  private readonly entries = new Map<string, Entry>();
  /** Removed uploads waiting out their grace period, with the timer that closes each. */
  private readonly closing = new Map<Entry, NodeJS.Timeout>();

  constructor(
    /** The configuration the process started with: raster sizing and encoder settings of GeoTIFF uploads. */
    private readonly config: Config,
    private readonly log: Logger,
    private readonly graceMs = REMOVE_GRACE_MS,
  ) {}

  /**
   * Opens `file` as an upload of `format` (validating it), or throws InvalidUploadError. The caller owns the
   * result: register it with `add`, or close it with `discard`.
   */
  async open(record: UploadRecord, file = record.filePath): Promise<Entry> {
    let raster: RasterPool | undefined;
    try {
      const source = await openUpload(record.format, file, sourceIdOf(record.id), () => (raster = new RasterPool(this.config)), this.config);
      return { record, source, raster };
    } catch (err) {
      await raster?.close();
      throw err;
    }
  }

  /** Closes an opened upload that is not (or no longer) registered. */
  async discard(entry: Entry): Promise<void> {
    await entry.source.close().catch(() => {});
    await entry.raster?.close();
  }

  /** Serves an opened upload from now on. */
  add(entry: Entry): void {
    this.entries.set(entry.record.id, entry);
  }

  /** Opens the record's file and serves it: how other processes take on an upload one of them received. */
  async openAndAdd(record: UploadRecord): Promise<void> {
    if (this.entries.has(record.id)) return;
    this.add(await this.open(record));
  }

  has(id: string): boolean {
    return this.entries.has(id);
  }

  list(): UploadRecord[] {
    return [...this.entries.values()].map((e) => e.record);
  }

  /** Stops serving an upload; its source is closed after the grace period. Undefined when there is no such upload. */
  remove(id: string): UploadRecord | undefined {
    const entry = this.entries.get(id);
    if (!entry) return undefined;
    this.entries.delete(id);
    const timer = setTimeout(() => {
      this.closing.delete(entry);
      void this.discard(entry);
    }, this.graceMs);
    timer.unref();
    this.closing.set(entry, timer);
    this.log.info({ upload: id }, 'upload removed');
    return entry.record;
  }

  // ExtraSources: looked up by source id (`upload-<uuid>`).
  get(sourceId: string): TileSource | undefined {
    if (!sourceId.startsWith(UPLOAD_ID_PREFIX)) return undefined;
    return this.entries.get(sourceId.slice(UPLOAD_ID_PREFIX.length))?.source;
  }

  values(): Iterable<TileSource> {
    return [...this.entries.values()].map((e) => e.source);
  }

  /** Closes every upload (the process is stopping); their files are left for the next start to remove. */
  async close(): Promise<void> {
    const all = [...this.entries.values(), ...this.closing.keys()];
    for (const timer of this.closing.values()) clearTimeout(timer);
    this.entries.clear();
    this.closing.clear();
    await Promise.all(all.map((e) => this.discard(e)));
  }
}
