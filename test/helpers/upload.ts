// Multipart uploads for the upload tests and bench: a body built by hand (so file names can be hostile and
// parts can be anything), one-shot uploads, and a streamed upload of many bytes that reports how much it had
// sent when the answer came.
import http, { type IncomingHttpHeaders } from 'node:http';
import { readFileSync } from 'node:fs';

export const BOUNDARY = '----tsts-upload-boundary-7d1f0c';

export interface Part {
  field: string;
  /** A file part when set (raw bytes in the header: NUL and `..` go through as they are). */
  fileName?: string;
  /** Send the file name percent-encoded (RFC 5987 `filename*`), as browsers do for names that need it. */
  encoded?: boolean;
  data: Uint8Array | string;
}

/** The head of one part (everything before its data). */
export function partHead(p: Pick<Part, 'field' | 'fileName' | 'encoded'>, boundary = BOUNDARY): Buffer {
  const name = p.fileName === undefined ? '' : p.encoded ? `; filename*=UTF-8''${encodeURIComponent(p.fileName)}` : `; filename="${p.fileName}"`;
  const disposition = `form-data; name="${p.field}"${name}`;
  const type = p.fileName !== undefined ? 'Content-Type: application/octet-stream\r\n' : '';
  return Buffer.from(`--${boundary}\r\nContent-Disposition: ${disposition}\r\n${type}\r\n`, 'latin1');
}

export const closing = (boundary = BOUNDARY) => Buffer.from(`\r\n--${boundary}--\r\n`, 'latin1');

/** A whole multipart/form-data body of `parts`. */
export function multipartBody(parts: Part[], boundary = BOUNDARY): Buffer {
  const chunks: Buffer[] = [];
  parts.forEach((p, i) => {
    if (i > 0) chunks.push(Buffer.from('\r\n', 'latin1'));
    chunks.push(partHead(p, boundary), Buffer.from(p.data));
  });
  chunks.push(closing(boundary));
  return Buffer.concat(chunks);
}

export interface UploadAnswer {
  status: number;
  headers: IncomingHttpHeaders;
  text: string;
  json: Record<string, unknown>;
}

/** POSTs `body` to /api/upload (or `path`) with a multipart Content-Type and waits for the whole answer. */
export function postMultipart(base: string, body: Buffer, path = '/api/upload', contentType = `multipart/form-data; boundary=${BOUNDARY}`): Promise<UploadAnswer> {
  const url = new URL(base);
  return new Promise((resolve, reject) => {
    const req = http.request(
      { host: url.hostname, port: url.port, method: 'POST', path, agent: false, headers: { 'content-type': contentType, 'content-length': String(body.length) } },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const text = Buffer.concat(chunks).toString('utf8');
          let json: Record<string, unknown> = {};
          try {
            json = text ? (JSON.parse(text) as Record<string, unknown>) : {};
          } catch {
            // Not JSON: the test looks at `text`.
          }
          resolve({ status: res.statusCode ?? 0, headers: res.headers, text, json });
        });
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    req.setTimeout(60_000, () => req.destroy(new Error('no answer to the upload within 60 s')));
    req.end(body);
  });
}

/** Uploads one file (its bytes, or a path to read) under `fileName` in the field `file`. */
export function uploadFile(base: string, fileName: string, data: Uint8Array | string): Promise<UploadAnswer> {
  const bytes = typeof data === 'string' ? readFileSync(data) : data;
  return postMultipart(base, multipartBody([{ field: 'file', fileName, data: bytes }]));
}

export interface StreamedAnswer {
  status: number;
  headers: IncomingHttpHeaders;
  body: string;
  /** File bytes written to the socket when the answer's head arrived. */
  sentWhenAnswered: number;
  /** Whether every byte of the body had been written by then. */
  finishedSending: boolean;
}

/**
 * Streams a file of `fileBytes` zero bytes under `fileName`, in chunks, respecting backpressure, and stops
 * sending as soon as the answer comes (as a browser does on an early 413) or the server closes the connection.
 */
export function streamUpload(base: string, fileName: string, fileBytes: number, chunkBytes = 256 * 1024): Promise<StreamedAnswer> {
  const url = new URL(base);
  const head = partHead({ field: 'file', fileName });
  const tail = closing();
  return new Promise((resolve, reject) => {
    let sent = 0;
    let answered = false;
    let finished = false;
    const req = http.request({
      host: url.hostname,
      port: url.port,
      method: 'POST',
      path: '/api/upload',
      agent: false,
      headers: { 'content-type': `multipart/form-data; boundary=${BOUNDARY}`, 'content-length': String(head.length + fileBytes + tail.length) },
    });
    req.on('response', (res) => {
      answered = true;
      const sentWhenAnswered = sent;
      const finishedSending = finished;
      let body = '';
      res.on('data', (c: Buffer) => (body += c.toString('utf8')));
      res.on('end', () => {
        resolve({ status: res.statusCode ?? 0, headers: res.headers, body, sentWhenAnswered, finishedSending });
        req.destroy();
      });
      res.on('error', reject);
    });
    // Writes after the server closed its side fail; the answer (already read, or coming) is what counts.
    req.on('error', (err) => {
      if (!answered) reject(err);
    });
    const chunk = Buffer.alloc(chunkBytes);
    req.write(head);
    const pump = () => {
      while (!answered && !req.destroyed && sent < fileBytes) {
        const n = Math.min(chunkBytes, fileBytes - sent);
        sent += n;
        if (!req.write(n === chunkBytes ? chunk : chunk.subarray(0, n))) return void req.once('drain', pump);
      }
      if (!answered && !req.destroyed && sent >= fileBytes) {
        finished = true;
        req.end(tail);
      }
    };
    pump();
  });
}

/** Resident set size now and its peak (kB), from /proc/<pid>/status. */
export function memoryOf(pid: number): { rssKb: number; peakKb: number } {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8');
  const field = (name: string) => Number(new RegExp(`^${name}:\\s+(\\d+) kB`, 'm').exec(status)?.[1] ?? NaN);
  return { rssKb: field('VmRSS'), peakKb: field('VmHWM') };
}
