// The bytes of a data file read by ranges, wherever it lives: a local file through a file handle, or a remote
// object (http(s)://, s3://, gs://, az://) through the shared range reader of src/sources/object-store/, with its
// retries, timeouts, concurrency bound, metrics and health. The FlatGeobuf and GeoParquet readers read through
// this, so a tile's read costs the ranges that hold its features, never the whole file.
//
// A remote file is pinned to the ETag of its first read: a file replaced in the store fails its later reads with
// FileChangedError rather than mixing two files' bytes, and the file source reads the new file from its start
// (src/sources/files/source.ts). Each read asks for that ETag (If-Match) and checks the one in the answer, for
// stores that do not honour If-Match.
import { open, type FileHandle } from 'node:fs/promises';
import { isRemotePath } from '../../config/object-location.js';
import { openChannel } from '../object-store/open.js';
import { RETRY_AFTER_STORAGE, type StorageChannel } from '../object-store/reader.js';
import { StoreError } from '../object-store/store.js';
import { SourceOpenError, TileUnavailableError } from '../source.js';
import type { ReaderOptions } from './reader.js';

/** The options of the readers that read byte ranges (FlatGeobuf, GeoParquet): ReaderOptions, `source` included. */
export type RangeReaderOptions = ReaderOptions;

/**
 * A read of a remote file found the object replaced since the file was opened. A 503 for whoever does not handle
 * it; the file source handles it by reading the new object from its start and answering from that.
 */
export class FileChangedError extends TileUnavailableError {}

export interface RangeFile {
  /** The file's size in bytes. */
  readonly size: number;
  /** `length` bytes from `offset` (fewer only at the end of the file). Remote failures throw TileUnavailableError (503). */
  read(offset: number, length: number): Promise<Uint8Array>;
  /** Bytes read from the disk or the store so far (the tests compare it with the file's size). */
  readonly bytesRead: number;
  close(): Promise<void>;
}

class LocalFile implements RangeFile {
  bytesRead = 0;
  constructor(
    private readonly handle: FileHandle,
    readonly size: number,
  ) {}

  async read(offset: number, length: number): Promise<Uint8Array> {
    const n = Math.max(0, Math.min(length, this.size - offset));
    const buf = new Uint8Array(n);
    let done = 0;
    while (done < n) {
      const { bytesRead } = await this.handle.read(buf, done, n - done, offset + done);
      if (bytesRead === 0) break;
      done += bytesRead;
    }
    this.bytesRead += done;
    return done === n ? buf : buf.subarray(0, done);
  }

  close(): Promise<void> {
    return this.handle.close();
  }
}

/** How much a remote file's first read asks for: the header or footer of small files comes with it. */
const FIRST_READ = 64 * 1024;

class RemoteFile implements RangeFile {
  bytesRead = 0;
  constructor(
    private readonly channel: StorageChannel,
    private readonly sourceId: string,
    readonly size: number,
    private readonly etag: string | undefined,
  ) {}

  async read(offset: number, length: number): Promise<Uint8Array> {
    const n = Math.max(0, Math.min(length, this.size - offset));
    if (n === 0) return new Uint8Array(0);
    try {
      // Pinned to the ETag of the first read: the channel throws StoreError 'changed' for another object.
      const { data } = await this.channel.read(offset, n, this.etag);
      this.bytesRead += data.byteLength;
      return data;
    } catch (err) {
      if (!(err instanceof StoreError)) throw err;
      const detail = `source "${this.sourceId}": cannot read ${this.channel.location.url}: `;
      if (err.kind === 'changed') throw new FileChangedError(503, 'Storage unavailable', `${detail}the object changed since the source opened it (${err.reason})`, RETRY_AFTER_STORAGE);
      throw new TileUnavailableError(503, 'Storage unavailable', `${detail}${err.reason}`, RETRY_AFTER_STORAGE);
    }
  }

  async close(): Promise<void> {
    this.channel.close();
  }
}

/**
 * Opens `location` for range reads. `what` names the format in messages ("FlatGeobuf"). Throws SourceOpenError
 * (missing file, empty file, store refused, object missing).
 */
export async function openRangeFile(location: string, options: RangeReaderOptions, what: string): Promise<RangeFile> {
  const { sourceId } = options;
  if (!isRemotePath(location)) {
    let handle: FileHandle | undefined;
    try {
      handle = await open(location, 'r');
      const { size } = await handle.stat();
      if (size === 0) throw new Error('the file is empty');
      return new LocalFile(handle, size);
    } catch (err) {
      await handle?.close().catch(() => {});
      const msg = err instanceof Error ? err.message : String(err);
      throw new SourceOpenError(sourceId, `cannot open ${what} ${location}: ${/ENOENT/.test(msg) ? 'no such file' : /EISDIR/.test(msg) ? 'a directory, not a file' : msg}`);
    }
  }
  let channel: StorageChannel | undefined;
  try {
    // openChannel reads the id, the path and the storage keys (endpoint, credentials) of a source's configuration.
    const cfg = { ...options.source, id: sourceId, path: location };
    channel = await openChannel(cfg, options.storage);
    const first = await channel.read(0, FIRST_READ, undefined);
    const size = first.size ?? (first.data.byteLength < FIRST_READ ? first.data.byteLength : undefined);
    if (size === undefined) throw new StoreError('invalid', 'the store did not say the object\'s size (no Content-Range in its answer)');
    if (size === 0) throw new StoreError('invalid', 'the object is empty');
    channel.activate();
    const file = new RemoteFile(channel, sourceId, size, first.etag);
    file.bytesRead = first.data.byteLength;
    return file;
  } catch (err) {
    channel?.close();
    throw new SourceOpenError(sourceId, `cannot open ${what} ${location}: ${err instanceof StoreError ? err.reason : err instanceof Error ? err.message : String(err)}`);
  }
}
