// An upload from request body to served source, and its removal: receive to a temporary name, check the file by
// opening it, give it its generated name, serve it here, then have every other process serve it (cluster).
// Each step that fails undoes the ones before it, so a failed upload leaves no file and no source anywhere.
import { mkdir, rename } from 'node:fs/promises';
import type { IncomingHttpHeaders } from 'node:http';
import type { Readable } from 'node:stream';
import type { Logger } from '../log.js';
import { ALLOWED_EXTENSIONS_TEXT, displayName, newUploadId, partPath, storedPath, uploadKind } from './names.js';
import { receiveUpload } from './receive.js';
import type { UploadRecord, UploadRegistry } from './registry.js';
import { removeFile } from './store.js';
import { InvalidUploadError } from './validate.js';

/** How the other processes of a cluster learn of uploads; absent in a single process. */
export interface UploadPeers {
  /** Resolves once every other process serves `record`; rejects when one could not (they have dropped it again). */
  added(record: UploadRecord): Promise<void>;
  /** Resolves once every other process has stopped serving the upload. */
  removed(id: string): Promise<void>;
}

export type UploadOutcome =
  | { kind: 'ok'; record: UploadRecord }
  | { kind: 'bad-request'; detail: string }
  | { kind: 'too-large' }
  | { kind: 'aborted' }
  /** The server is stopping: the upload was ended (its file removed) so that the stop need not wait for it. */
  | { kind: 'stopped' }
  /** A write or registration failure; `error` is for the log only. */
  | { kind: 'failed'; error: Error };

export const BYTES_PER_MB = 1024 * 1024;

export class Uploads {
  /** Uploads still receiving their body, each ended by its controller when the server stops. */
  private readonly receiving = new Set<AbortController>();
  private stopping = false;

  constructor(
    readonly registry: UploadRegistry,
    private readonly log: Logger,
    /** The cluster's relay; undefined when this process is the only one. */
    private readonly peers?: UploadPeers,
  ) {}

  /**
   * Receives the upload in `body` into `dir` and serves it; `maxMb` is the size limit. `signal` ends it as
   * aborted (the request's answer went out or its connection closed), its partial file removed.
   */
  async upload(body: Readable, headers: IncomingHttpHeaders, dir: string, maxMb: number, signal?: AbortSignal): Promise<UploadOutcome> {
    if (this.stopping) return { kind: 'stopped' };
    const stop = new AbortController();
    this.receiving.add(stop);
    try {
      const ended = signal ? AbortSignal.any([signal, stop.signal]) : stop.signal;
      const outcome = await this.receiveAndServe(body, headers, dir, maxMb, ended);
      return outcome.kind === 'aborted' && stop.signal.aborted ? { kind: 'stopped' } : outcome;
    } finally {
      this.receiving.delete(stop);
    }
  }

  /**
   * Ends every upload still receiving its body (each removes its partial file) and refuses new ones: a server
   * that is stopping does not wait for clients that may take minutes, nor leaves their files behind.
   */
  stop(): void {
    this.stopping = true;
    for (const c of this.receiving) c.abort();
  }

  private async receiveAndServe(body: Readable, headers: IncomingHttpHeaders, dir: string, maxMb: number, signal: AbortSignal): Promise<UploadOutcome> {
    try {
      await mkdir(dir, { recursive: true });
    } catch (err) {
      return { kind: 'failed', error: err as Error };
    }
    const id = newUploadId();
    const part = partPath(dir, id);
    const received = await receiveUpload(body, headers, part, Math.floor(maxMb * BYTES_PER_MB), (name) =>
      uploadKind(name) ? undefined : `unsupported file type ${JSON.stringify(displayName(name))}: allowed are ${ALLOWED_EXTENSIONS_TEXT}`,
      signal,
    );
    if (received.kind === 'write-failed') return { kind: 'failed', error: received.error };
    if (received.kind !== 'file') return received;
    const kind = uploadKind(received.fileName)!;
    const record: UploadRecord = { id, fileName: displayName(received.fileName), format: kind.format, filePath: storedPath(dir, id, kind.ext) };

    // Checked under the temporary name: opening it is the check.
    let opened: Awaited<ReturnType<UploadRegistry['open']>>;
    try {
      opened = await this.registry.open(record, part);
    } catch (err) {
      await removeFile(part, this.log);
      if (err instanceof InvalidUploadError) return { kind: 'bad-request', detail: err.reason };
      return { kind: 'failed', error: err as Error };
    }
    try {
      await rename(part, record.filePath);
      // An open SQLite handle follows its file through the rename (the check's full scans are not run twice);
      // a GeoTIFF is read by path, so it is opened again under the final name.
      if (record.format === 'cog') {
        await this.registry.discard(opened);
        opened = await this.registry.open(record);
      }
      this.registry.add(opened);
    } catch (err) {
      await this.registry.discard(opened);
      await removeFile(part, this.log);
      await removeFile(record.filePath, this.log);
      return { kind: 'failed', error: err as Error };
    }
    try {
      await this.peers?.added(record);
    } catch (err) {
      this.registry.remove(record.id);
      await removeFile(record.filePath, this.log);
      return { kind: 'failed', error: err as Error };
    }
    this.log.info({ upload: id, format: record.format, bytes: received.bytes }, 'upload registered');
    return { kind: 'ok', record };
  }

  /**
   * Stops serving upload `id` in every process, then deletes its file. False when there is no such upload.
   * Throws when another process did not confirm (the file is kept then: that process may still read it).
   */
  async remove(id: string): Promise<boolean> {
    const record = this.registry.remove(id);
    if (!record) return false;
    await this.peers?.removed(id);
    await removeFile(record.filePath, this.log);
    return true;
  }

  list(): UploadRecord[] {
    return this.registry.list();
  }

  close(): Promise<void> {
    return this.registry.close();
  }
}
