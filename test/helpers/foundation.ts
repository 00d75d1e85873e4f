// Helpers of the foundation tests: raw HTTP requests (no automatic Accept-Encoding, no decompression, no
// path normalisation), decoding vector tiles, reading stored tiles straight from the archives, a local
// HTTP range server for remote PMTiles, and building MBTiles files in a temp dir.
import Database from 'better-sqlite3';
import { VectorTile } from '@mapbox/vector-tile';
import { PbfReader } from 'pbf';
import { PMTiles, type RangeResponse, type Source } from 'pmtiles';
import http, { type IncomingHttpHeaders } from 'node:http';
import { createHash } from 'node:crypto';
import { mkdtempSync, openSync, readFileSync, readSync, rmSync, statSync } from 'node:fs';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { gunzipSync } from 'node:zlib';

export interface RawResponse {
  status: number;
  headers: IncomingHttpHeaders;
  /** The bytes on the wire: still content-encoded. */
  body: Buffer;
}

/**
 * One HTTP request exactly as given: node:http sends no Accept-Encoding unless told, decodes nothing and
 * leaves `..` in the path alone (fetch would normalise it away before a traversal test could send it).
 */
export function request(
  base: string,
  pathAndQuery: string,
  opts: { method?: string; headers?: Record<string, string>; timeoutMs?: number; body?: string | Uint8Array } = {},
): Promise<RawResponse> {
  const url = new URL(base);
  const method = opts.method ?? 'GET';
  return new Promise((resolve, reject) => {
    const req = http.request(
      { host: url.hostname, port: url.port, method, path: pathAndQuery, headers: opts.headers ?? {}, agent: false },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
        res.on('error', reject);
      },
    );
    req.on('error', reject);
    // A hung answer fails the test that waits for it instead of stalling the whole run.
    req.setTimeout(opts.timeoutMs ?? 30_000, () => req.destroy(new Error(`no answer to ${method} ${pathAndQuery} within ${opts.timeoutMs ?? 30_000} ms`)));
    req.end(opts.body);
  });
}

export async function getJson<T = unknown>(base: string, pathAndQuery: string, headers: Record<string, string> = {}): Promise<{ status: number; headers: IncomingHttpHeaders; json: T }> {
  const res = await request(base, pathAndQuery, { headers });
  return { status: res.status, headers: res.headers, json: JSON.parse(res.body.toString('utf8')) as T };
}

export const sha256 = (bytes: Uint8Array | string) => createHash('sha256').update(bytes).digest('hex');

export const isGzip = (b: Uint8Array) => b.length >= 2 && b[0] === 0x1f && b[1] === 0x8b;
export const ungzipIfNeeded = (b: Uint8Array): Buffer => Buffer.from(isGzip(b) ? gunzipSync(b) : b);

/** Feature count per layer name of an uncompressed (or gzip) MVT. */
export function layerCounts(bytes: Uint8Array): Record<string, number> {
  const tile = new VectorTile(new PbfReader(ungzipIfNeeded(bytes)));
  return Object.fromEntries(Object.entries(tile.layers).map(([name, layer]) => [name, layer.length]));
}

/** The values of one property of every feature of one layer. */
export function layerProperty(bytes: Uint8Array, layerName: string, property: string): unknown[] {
  const layer = new VectorTile(new PbfReader(ungzipIfNeeded(bytes))).layers[layerName];
  if (!layer) return [];
  const out: unknown[] = [];
  for (let i = 0; i < layer.length; i++) out.push(layer.feature(i).properties[property]);
  return out;
}

/** Reads ranges of a local file for the pmtiles package: the test's own, independent view of an archive. */
class FileRanges implements Source {
  private readonly fd: number;
  constructor(private readonly file: string) {
    this.fd = openSync(file, 'r');
  }
  getKey() {
    return this.file;
  }
  getBytes(offset: number, length: number): Promise<RangeResponse> {
    const buf = Buffer.alloc(length);
    const n = readSync(this.fd, buf, 0, length, offset);
    return Promise.resolve({ data: buf.buffer.slice(0, n) });
  }
}

/** Tile bytes exactly as stored in a PMTiles archive (still gzip when the archive stores gzip). */
export async function storedPmtilesTile(file: string, z: number, x: number, y: number): Promise<Buffer | undefined> {
  const archive = new PMTiles(new FileRanges(file), undefined, (buf) => Promise.resolve(buf));
  const found = await archive.getZxy(z, x, y);
  return found ? Buffer.from(found.data) : undefined;
}

/** Tile bytes exactly as stored in an MBTiles file, addressed in XYZ (the row flip is done here, independently). */
export function storedMbtilesTile(file: string, z: number, x: number, y: number): Buffer | undefined {
  const db = new Database(file, { readonly: true });
  try {
    const row = db.prepare('SELECT tile_data FROM tiles WHERE zoom_level = ? AND tile_column = ? AND tile_row = ?').get(z, x, 2 ** z - 1 - y) as
      | { tile_data: Buffer }
      | undefined;
    return row?.tile_data;
  } finally {
    db.close();
  }
}

/** Temp dirs of this test process, removed when it exits. */
const tempDirs: string[] = [];
process.once('exit', () => {
  for (const dir of tempDirs) rmSync(dir, { recursive: true, force: true });
});

export function tempDir(prefix = 'tsts-foundation-'): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), prefix));
  tempDirs.push(dir);
  return dir;
}

export interface MbtilesTile {
  /** XYZ coordinates; the file gets the TMS row. */
  z: number;
  x: number;
  y: number;
  data: Uint8Array;
}

/**
 * Writes an MBTiles file. `layout: 'tiles'` is the plain table; `'map-images'` is the deduplicated layout
 * (identical tile bytes stored once in `images`, referenced from `map`) with a `tiles` view absent, so the
 * server has to read map JOIN images itself.
 */
export function writeMbtiles(file: string, metadata: Record<string, string>, tiles: MbtilesTile[], layout: 'tiles' | 'map-images' = 'tiles'): string {
  const db = new Database(file);
  try {
    db.exec('CREATE TABLE metadata (name TEXT, value TEXT)');
    const meta = db.prepare('INSERT INTO metadata (name, value) VALUES (?, ?)');
    for (const [k, val] of Object.entries(metadata)) meta.run(k, val);
    if (layout === 'tiles') {
      db.exec('CREATE TABLE tiles (zoom_level INTEGER, tile_column INTEGER, tile_row INTEGER, tile_data BLOB)');
      const ins = db.prepare('INSERT INTO tiles VALUES (?, ?, ?, ?)');
      for (const t of tiles) ins.run(t.z, t.x, 2 ** t.z - 1 - t.y, Buffer.from(t.data));
    } else {
      db.exec('CREATE TABLE map (zoom_level INTEGER, tile_column INTEGER, tile_row INTEGER, tile_id TEXT)');
      db.exec('CREATE TABLE images (tile_id TEXT, tile_data BLOB)');
      const insMap = db.prepare('INSERT INTO map VALUES (?, ?, ?, ?)');
      const insImage = db.prepare('INSERT INTO images VALUES (?, ?)');
      const stored = new Set<string>();
      for (const t of tiles) {
        const id = sha256(t.data);
        if (!stored.has(id)) insImage.run(id, Buffer.from(t.data));
        stored.add(id);
        insMap.run(t.z, t.x, 2 ** t.z - 1 - t.y, id);
      }
    }
  } finally {
    db.close();
  }
  return file;
}

export interface RangeServer {
  url: string;
  /** Every Range header received, in order (undefined for a request without one). */
  ranges: (string | undefined)[];
  /** Bytes sent in response bodies so far. */
  bytesSent(): number;
  /** Delay before answering requests for ranges that start at or after `fromOffset` (0: all). */
  setDelay(ms: number, fromOffset?: number): void;
  /** Serves other bytes from now on, with a new ETag (the archive replaced at the URL). */
  replace(file: string): void;
  /** Answers the next `n` requests with `status` (a 5xx, or 429 with Retry-After) instead of the bytes. */
  failNext(n: number, status: number): void;
  /** Requests answered with the file's bytes so far (206 or 200), and with a failure status. */
  answered(): { ok: number; failed: number };
  /** The most requests that were being answered at once. */
  maxActive(): number;
  close(): Promise<void>;
}

/**
 * Serves one file over HTTP at `/<name>` with byte ranges (206, Content-Range), as object storage does.
 * `honourRange: false` makes it a naive server that always sends the whole file with 200; `honourIfMatch: false`
 * one that answers If-Match with the bytes it has now (as some servers and S3-compatible stores do).
 */
export function startRangeServer(file: string, opts: { honourRange?: boolean; honourIfMatch?: boolean; keepVersions?: boolean } = {}): Promise<RangeServer> {
  let current = readFileSync(file);
  const tagOf = (b: Buffer) => `"${sha256(b).slice(0, 16)}"`;
  let currentTag = tagOf(current);
  // `keepVersions`: a store that keeps replaced objects readable by their ETag (a versioned bucket): a read with
  // If-Match on an older ETag is answered from that version.
  const versions = new Map<string, Buffer>([[currentTag, current]]);
  const name = path.basename(file);
  const ranges: (string | undefined)[] = [];
  let sent = 0;
  let delay = { ms: 0, fromOffset: 0 };
  let failing = { n: 0, status: 503 };
  const counts = { ok: 0, failed: 0 };
  let active = 0;
  let maxActive = 0;
  const server = http.createServer((req, res) => {
    if (req.url !== `/${name}`) {
      res.writeHead(404).end('not found');
      return;
    }
    const range = req.headers.range;
    ranges.push(range);
    const m = range ? /^bytes=(\d+)-(\d*)$/.exec(range) : null;
    const start = m ? Number(m[1]) : 0;
    active++;
    maxActive = Math.max(maxActive, active);
    res.on('close', () => active--);
    const answer = () => {
      if (failing.n > 0) {
        failing.n--;
        counts.failed++;
        res.writeHead(failing.status, failing.status === 429 ? { 'Retry-After': '1' } : {}).end('try again');
        return;
      }
      const ifMatch = req.headers['if-match'];
      const kept = ifMatch && opts.keepVersions ? versions.get(ifMatch) : undefined;
      if (ifMatch && ifMatch !== currentTag && !kept && opts.honourIfMatch !== false) {
        counts.failed++;
        res.writeHead(412, { ETag: currentTag }).end();
        return;
      }
      const [bytes, etag] = kept && ifMatch ? [kept, ifMatch] : [current, currentTag];
      counts.ok++;
      if (!m || opts.honourRange === false) {
        sent += bytes.length;
        res.writeHead(200, { 'Content-Length': bytes.length, 'Accept-Ranges': 'bytes', ETag: etag }).end(bytes);
        return;
      }
      const end = Math.min(bytes.length - 1, m[2] ? Number(m[2]) : bytes.length - 1);
      if (start >= bytes.length) {
        res.writeHead(416, { 'Content-Range': `bytes */${bytes.length}` }).end();
        return;
      }
      const part = bytes.subarray(start, end + 1);
      sent += part.length;
      res
        .writeHead(206, { 'Content-Length': part.length, 'Content-Range': `bytes ${start}-${end}/${bytes.length}`, 'Accept-Ranges': 'bytes', ETag: etag })
        .end(part);
    };
    if (delay.ms > 0 && start >= delay.fromOffset) setTimeout(answer, delay.ms);
    else answer();
  });
  return new Promise((resolve) => {
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo;
      resolve({
        url: `http://127.0.0.1:${port}/${name}`,
        ranges,
        bytesSent: () => sent,
        setDelay(ms, fromOffset = 0) {
          delay = { ms, fromOffset };
        },
        replace(other) {
          current = readFileSync(other);
          currentTag = tagOf(current);
          versions.set(currentTag, current);
        },
        failNext(n, status) {
          failing = { n, status };
        },
        answered: () => ({ ...counts }),
        maxActive: () => maxActive,
        close: () =>
          new Promise<void>((done) => {
            server.closeAllConnections();
            server.close(() => done());
          }),
      });
    });
  });
}

export const fileSize = (file: string) => statSync(file).size;

/** Polls `check` until it returns a value other than undefined, or fails after `timeoutMs`. */
export async function waitFor<T>(what: string, check: () => Promise<T | undefined> | T | undefined, timeoutMs = 15_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}
