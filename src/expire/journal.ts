// The expiries of a machine on its disk, so that they survive a restart: a cached product on disk (a rendered
// tile, a terrain tile) outlives the process, and one drawn before an expiry must stay stale after it. The file
// `<cache dir>/expire/journal` is the encoded batches one after another (batch.ts), appended by the process that
// accepts them (the cluster's primary, or the single process) and read by every process when it starts.
//
// A crash can leave half a batch at the end: reading stops at the first batch that does not decode, and the
// owner cuts the file there (logged). The file grows by every batch until it passes its bound (`[cache]
// expiry_journal_max_mb`); it is then rewritten as what the index holds (Expiries.snapshot: one batch per source,
// band and expiry time), which the coarsening bound (`[cache] expiry_max_tiles`) keeps small, and the bound
// rises to twice the rewritten size when that is larger, so that a large index is not rewritten at every batch.
// Beside it, `stream-position` holds the id of the last fleet stream entry this machine applied (fleet.ts).
import { mkdirSync, readFileSync, renameSync, truncateSync, writeFileSync } from 'node:fs';
import { open, type FileHandle } from 'node:fs/promises';
import path from 'node:path';
import type { Logger } from '../log.js';
import { decodeBatch, encodeBatch, encodeBatchPieces, encodedLength, type EncodedBatch, type ExpiryBatch } from './batch.js';
import type { Expiries } from './expiries.js';
import { unique } from './area-times.js';

export function journalDir(cacheDir: string): string {
  return path.join(cacheDir, 'expire');
}

/** The batches a journal file holds, and where the last whole one ends. */
export function readJournal(file: string): { batches: ExpiryBatch[]; end: number; size: number } {
  let bytes: Buffer;
  try {
    bytes = readFileSync(file);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return { batches: [], end: 0, size: 0 };
    throw err;
  }
  const batches: ExpiryBatch[] = [];
  let end = 0;
  while (end < bytes.length) {
    try {
      const { batch, bytes: n } = decodeBatch(bytes, end);
      batches.push(batch);
      end += n;
    } catch {
      break;
    }
  }
  return { batches, end, size: bytes.length };
}

/**
 * Applies what the machine's journal holds to `into` (every process, before it serves). Read-only: a worker reads
 * while the primary appends, and a tail it cannot decode yet is the primary's write under way.
 */
export function replayJournal(cacheDir: string, into: Expiries): number {
  const { batches } = readJournal(path.join(journalDir(cacheDir), 'journal'));
  for (const b of batches) into.apply(b);
  return batches.length;
}

/** Batches of the snapshot carry this id prefix; their time is their entries' own. */
let snapshots = 0;

/** The journal's owner: reads it at start (cutting a torn tail), appends each accepted batch, compacts it. */
export class ExpiryJournal {
  readonly file: string;
  private readonly positionFile: string;
  private handle: Promise<FileHandle>;
  /** Appends and rewrites run one after another, in the order they were asked. */
  private queue: Promise<unknown> = Promise.resolve();
  private bytes = 0;
  private bound: number;

  /** Opens (creating) the journal under `cacheDir`, applying what it holds to `into`. */
  constructor(
    cacheDir: string,
    private readonly into: Expiries,
    private readonly maxBytes: number,
    private readonly log: Logger,
    private readonly onSize: (bytes: number) => void = () => {},
  ) {
    const dir = journalDir(cacheDir);
    mkdirSync(dir, { recursive: true });
    this.file = path.join(dir, 'journal');
    this.positionFile = path.join(dir, 'stream-position');
    const { batches, end, size } = readJournal(this.file);
    if (end < size) {
      log.warn({ file: this.file, kept_bytes: end, dropped_bytes: size - end }, 'expiry journal: its end is not a whole batch (the process stopped while writing it); that part is dropped');
      truncateSync(this.file, end);
    }
    for (const b of batches) into.apply(b);
    if (batches.length) log.info({ batches: batches.length, bytes: end }, 'expiry journal read');
    this.bytes = end;
    this.bound = maxBytes;
    this.handle = open(this.file, 'a');
    onSize(this.bytes);
  }

  get size(): number {
    return this.bytes;
  }

  /**
   * Appends a batch (in the background, in order); compacts once the file passes its bound. Resolves true once
   * the batch is in the file (a process reading the journal from then on finds it), false when it could not be.
   */
  append(batch: ExpiryBatch, encoded: EncodedBatch = encodeBatchPieces(batch)): Promise<boolean> {
    this.bytes += encodedLength(encoded);
    this.onSize(this.bytes);
    // Two writes, its header then its keys: a reader meanwhile sees a batch cut short, as during one large write.
    const written = this.run(async () => {
      const file = await this.handle;
      await file.appendFile(encoded.head);
      await file.appendFile(encoded.keys);
    });
    if (this.bytes > this.bound) this.compact();
    return written;
  }

  /** Rewrites the file as the index's snapshot (atomically: a reader sees the old file or the new one). */
  compact(): void {
    void this.run(async () => {
      const parts: Buffer[] = [];
      for (const { source, band, keys, times } of this.into.snapshot()) {
        // One batch per expiry time: its keys stay ascending, as a batch's must.
        const byTime = new Map<number, number[]>();
        for (let i = 0; i < keys.length; i++) {
          let list = byTime.get(times[i]);
          if (!list) byTime.set(times[i], (list = []));
          list.push(keys[i]);
        }
        for (const [at, list] of byTime) {
          parts.push(encodeBatch({ id: `snapshot:${process.pid}:${Date.now()}:${++snapshots}`, at, sources: [source], tiles: unique(Float64Array.from(list)), band, input: 'list' }));
        }
      }
      const body = Buffer.concat(parts);
      const tmp = `${this.file}.tmp`;
      writeFileSync(tmp, body);
      await (await this.handle).close();
      renameSync(tmp, this.file);
      this.handle = open(this.file, 'a');
      this.log.info({ bytes_before: this.bytes, bytes: body.length, batches: parts.length }, 'expiry journal compacted');
      this.bytes = body.length;
      this.bound = Math.max(this.maxBytes, 2 * body.length);
      this.onSize(this.bytes);
    });
  }

  /** The id of the last fleet stream entry applied here (undefined: none yet). */
  get streamPosition(): string | undefined {
    try {
      return readFileSync(this.positionFile, 'utf8').trim() || undefined;
    } catch {
      return undefined;
    }
  }

  set streamPosition(id: string) {
    const tmp = `${this.positionFile}.tmp`;
    writeFileSync(tmp, id);
    renameSync(tmp, this.positionFile);
  }

  /** Lets the writes under way end. */
  async close(): Promise<void> {
    await this.queue;
    await (await this.handle).close().catch(() => {});
  }

  /** Queues a step after the others; resolves true when it ran without failing. */
  private run(step: () => Promise<void>): Promise<boolean> {
    const done = this.queue.then(step).then(
      () => true,
      (err: Error) => {
        this.log.error({ file: this.file, err: err.message }, 'expiry journal: cannot write');
        return false;
      },
    );
    this.queue = done;
    return done;
  }
}
