// Streams the one file of a multipart/form-data upload to a file on disk with busboy, counting as it goes:
// nothing is held in memory beyond busboy's and the write stream's buffers (backpressure reaches the socket).
// Every outcome other than a complete file removes what was written before it is reported.
import busboy from 'busboy';
import { createWriteStream, type WriteStream } from 'node:fs';
import type { IncomingHttpHeaders, IncomingMessage } from 'node:http';
import type { Readable } from 'node:stream';
import { rm } from 'node:fs/promises';

/** The multipart field that carries the file (spec). */
export const FILE_FIELD = 'file';

export type Received =
  /** The whole file is at `dest`. */
  | { kind: 'file'; fileName: string; bytes: number }
  /** The file passed the limit; nothing is left at `dest`. */
  | { kind: 'too-large' }
  /** Not a usable upload body; `detail` says why in words for the client. */
  | { kind: 'bad-request'; detail: string }
  /** The client went away before the body was complete. */
  | { kind: 'aborted' }
  /** The file could not be written (disk full, directory gone). */
  | { kind: 'write-failed'; error: Error };

/** Limits on what may come besides the file: a few small fields are tolerated and ignored. */
const SIDE_LIMITS = { fields: 16, fieldSize: 4096, parts: 32, headerPairs: 64 };

/**
 * Reads `input` (the request body, with the request's `headers`) and writes the file of the field `file` to
 * `dest` (created; never overwritten). A file of more than `maxBytes` bytes, or one `refuse` names a reason
 * against, stops the reading at once.
 */
export function receiveUpload(
  input: Readable,
  headers: IncomingHttpHeaders,
  dest: string,
  maxBytes: number,
  /** Asked with the client's file name before anything is written: a reason to refuse it, or undefined. */
  refuse: (fileName: string) => string | undefined = () => undefined,
  /**
   * Ends the upload as `aborted` from outside: its answer went out without it (the body timeout's 408), its
   * response closed, or the server is stopping. The request stream alone does not always say so: once node:http
   * has finished the response it no longer reports the request's end, and a client may hold its side open.
   */
  signal?: AbortSignal,
): Promise<Received> {
  return new Promise((resolve) => {
    let parser: busboy.Busboy;
    try {
      // busboy reads urlencoded forms too; an upload is multipart only.
      if (!/^multipart\/form-data\s*;/i.test(headers['content-type'] ?? '')) throw new Error('not multipart');
      // One byte over the limit is what trips busboy's `limit`: a file of exactly maxBytes is accepted.
      parser = busboy({ headers, limits: { ...SIDE_LIMITS, files: 1, fileSize: maxBytes + 1 } });
    } catch {
      resolve({ kind: 'bad-request', detail: `the body must be multipart/form-data with one file in the field "${FILE_FIELD}"` });
      input.resume();
      return;
    }
    let out: WriteStream | undefined;
    let fileName: string | undefined;
    let bytes = 0;
    let settled = false;

    const settle = (result: Received) => {
      if (settled) return;
      settled = true;
      input.unpipe(parser);
      input.off('close', onInputClose);
      signal?.removeEventListener('abort', onAbort);
      if (result.kind === 'file') return resolve(result);
      // busboy may still report errors of the half-parsed body: expected now. It is destroyed on the next turn,
      // not from inside one of its own events (it goes on using its state after emitting `limit`).
      parser.on('error', () => {});
      setImmediate(() => parser.destroy());
      void discard().then(() => resolve(result));
    };

    /** Closes the write stream (waiting for an open still under way) and removes whatever it wrote. */
    const discard = async () => {
      if (out) {
        const stream = out;
        if (!stream.closed) {
          const closed = new Promise<void>((r) => stream.once('close', () => r()));
          stream.destroy();
          await closed;
        }
        await rm(dest, { force: true }).catch(() => {});
      }
    };

    const onInputClose = () => {
      // An IncomingMessage that closes before its end was cut off by the client.
      if ((input as IncomingMessage).complete === false || !input.readableEnded) settle({ kind: 'aborted' });
    };
    input.once('close', onInputClose);
    input.once('error', () => settle({ kind: 'aborted' }));
    const onAbort = () => settle({ kind: 'aborted' });
    if (signal?.aborted) return onAbort();
    signal?.addEventListener('abort', onAbort, { once: true });

    parser.on('file', (field, file, info) => {
      // Destroying the parser (any early outcome) destroys the file stream with an error: it is expected.
      file.on('error', () => {});
      if (settled) return void file.resume();
      if (field !== FILE_FIELD) {
        file.resume();
        return settle({ kind: 'bad-request', detail: `unexpected file field "${field}": the file goes in the field "${FILE_FIELD}"` });
      }
      const refused = refuse(info.filename ?? '');
      if (refused !== undefined) {
        file.resume();
        return settle({ kind: 'bad-request', detail: refused });
      }
      fileName = info.filename;
      out = createWriteStream(dest, { flags: 'wx' });
      out.once('error', (error) => settle({ kind: 'write-failed', error }));
      file.on('data', (chunk: Buffer) => (bytes += chunk.length));
      file.once('limit', () => settle({ kind: 'too-large' }));
      file.pipe(out);
    });
    parser.on('filesLimit', () => settle({ kind: 'bad-request', detail: `more than one file: send one file, in the field "${FILE_FIELD}"` }));
    parser.on('partsLimit', () => settle({ kind: 'bad-request', detail: 'too many parts in the multipart body' }));
    parser.on('error', (err: Error) => {
      if ((input as IncomingMessage).complete === false && input.destroyed) return settle({ kind: 'aborted' });
      settle({ kind: 'bad-request', detail: `the multipart body is malformed (${err.message})` });
    });
    parser.on('close', () => {
      if (settled) return;
      const stream = out;
      if (!stream || fileName === undefined) return settle({ kind: 'bad-request', detail: `missing the field "${FILE_FIELD}" with a file` });
      const name = fileName;
      // busboy is done with the body once the file stream ended; the bytes are on disk once the stream closes.
      const done = () => settle({ kind: 'file', fileName: name, bytes });
      if (stream.closed) done();
      else stream.once('close', () => (stream.errored ? undefined : done()));
    });
    input.pipe(parser);
  });
}
