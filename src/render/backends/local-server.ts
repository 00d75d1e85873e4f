// The Chromium renderer's own little HTTP server on 127.0.0.1: the page, maplibre-gl's files from the npm
// package, the resources the page asks for (answered in-process by the front through the renderer's
// ResourceFetcher: this is no loopback to the public listener), and the upload of finished frames.
//
// Why a server rather than Playwright's request interception: interception sends every request and its body
// through the DevTools protocol and turns off the browser's HTTP cache; with a real origin the browser caches
// resources (URLs carry the style key, so a reload never serves stale bytes) and a frame comes back as one
// Blob upload, several times cheaper than a CDP message of the same size. After an expiry, tile URLs also carry
// the last expiry's time (TILE_REVISION_PARAM), so a tile fetched again is not answered from the browser's cache.
// Every path starts with a random token, so nothing else on the machine can use the server.
import { randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createRequire } from 'node:module';
import path from 'node:path';
import type { Resource, ResourceFetcher, StyleRef } from '../renderer.js';
import type { StyleSpecification } from '@maplibre/maplibre-gl-style-spec';
import { flattenExtrusions } from '../flat-extrusions.js';
import { EXPIRED_TILES_PATH, TILE_REVISION_PARAM, emptyResource } from '../resources.js';
import { pageHtml, type PageOptions } from './chromium-page.js';

const IMMUTABLE = 'public, max-age=31536000, immutable';
/** Query parameter of a style URL asking for its flat-extrusion form (flat-extrusions.ts), made here, not by the app. */
export const FLAT_PARAM = 'flat-extrusions';

/** The query of a style's URL in the page: its labels' language (answered by the app) and the flat form. */
export function styleQuery(style: StyleRef, flat: boolean): string {
  const q = new URLSearchParams();
  if (style.lang) q.set('lang', style.lang);
  if (flat) q.set(FLAT_PARAM, '1');
  const text = q.toString();
  return text ? `?${text}` : '';
}
/** Bytes of a page's expired-tiles question at most. */
const QUESTION_MAX = 4 << 20;
/**
 * Files of npm packages the page may load, by the path it asks for: maplibre-gl, and the deflate of its PNG writer
 * (chromium-page.ts, DEFLATE_MODULE: libdeflate's WebAssembly build, one self-contained ES module). Nothing else
 * of node_modules is reachable.
 */
const ASSETS: Record<string, { pkg: string; file: string }> = {
  'maplibre/maplibre-gl.mjs': { pkg: 'maplibre-gl', file: 'dist/maplibre-gl.mjs' },
  'maplibre/maplibre-gl-worker.mjs': { pkg: 'maplibre-gl', file: 'dist/maplibre-gl-worker.mjs' },
  'encoder/libdeflate.mjs': { pkg: 'libdeflate', file: 'dist/libdeflate.wasm.mjs' },
};

const assetCache = new Map<string, Promise<Buffer>>();

/**
 * The folder of an installed package. Found from its package.json where the package lets that be resolved, else
 * from its main module: libdeflate's `exports` name only its entry, which sits at the package's top.
 */
function packageDir(pkg: string): string {
  const require = createRequire(import.meta.url);
  try {
    return path.dirname(require.resolve(`${pkg}/package.json`));
  } catch {
    return path.dirname(require.resolve(pkg));
  }
}

/** The bytes of a page asset (read once per process). Exported for the floor bench, which serves the same files. */
export function pageAsset(name: string): Promise<Buffer> | undefined {
  const a = ASSETS[name];
  if (!a) return undefined;
  let p = assetCache.get(name);
  if (!p) {
    p = readFile(path.join(packageDir(a.pkg), a.file));
    assetCache.set(name, p);
  }
  return p;
}

interface PixelsWaiter {
  kind: 'pixels';
  width: number;
  height: number;
  resolve: (b: Buffer) => void;
  reject: (e: Error) => void;
}

interface TilesWaiter {
  kind: 'tiles';
  width: number;
  height: number;
  count: number;
  resolve: (tiles: Buffer[]) => void;
  reject: (e: Error) => void;
}

type FrameWaiter = PixelsWaiter | TilesWaiter;

export class LocalServer {
  private readonly server: http.Server;
  private readonly token = randomBytes(16).toString('hex');
  private readonly frames = new Map<string, FrameWaiter>();
  private port = 0;
  /** Answers resource requests; undefined while no render is running (requests then get empty answers). */
  fetcher: ResourceFetcher | undefined;

  constructor(private readonly page: PageOptions) {
    this.server = http.createServer((req, res) => void this.handle(req, res));
    this.server.keepAliveTimeout = 60_000;
  }

  async listen(): Promise<void> {
    await new Promise<void>((resolve, reject) => {
      this.server.once('error', reject);
      this.server.listen(0, '127.0.0.1', () => resolve());
    });
    this.port = (this.server.address() as AddressInfo).port;
  }

  get origin(): string {
    return `http://127.0.0.1:${this.port}/${this.token}`;
  }

  pageUrl(): string {
    return `${this.origin}/page.html`;
  }

  /** The base URL of resources of one style key (the key makes the browser cache safe across reloads). */
  resourceBase(styleKey: string): string {
    return `${this.origin}/r/${styleKey}`;
  }

  /**
   * A URL the page uploads a frame of width x height RGBA pixels to, as `readPixels` gives them (rows bottom to
   * top), and the promise of the pixels with rows top to bottom. The rows are put in place as the upload arrives:
   * one buffer, one copy.
   */
  /** Where a page asks which of its source tiles an expiry reached (expired-source-tiles.ts). */
  get expiredTilesUrl(): string {
    return `${this.origin}/expired-tiles`;
  }

  expectFrame(id: string, width: number, height: number): { url: string; bytes: Promise<Buffer> } {
    const bytes = new Promise<Buffer>((resolve, reject) => this.frames.set(id, { kind: 'pixels', width, height, resolve, reject }));
    // A render that fails before uploading must not leave an unhandled rejection behind.
    bytes.catch(() => {});
    return { url: `${this.origin}/frame/${id}`, bytes };
  }

  /**
   * A URL the page uploads `count` encoded tiles of a width x height frame to (one body, the tiles one after the
   * other, their sizes in `X-Tile-Sizes`), and the promise of the tiles: views of one buffer, in the order sent.
   * The body may not pass the frame's raw size plus 64 KiB per tile (an encoder's worst case on noise).
   */
  expectTiles(id: string, width: number, height: number, count: number): { url: string; tiles: Promise<Buffer[]> } {
    const tiles = new Promise<Buffer[]>((resolve, reject) => this.frames.set(id, { kind: 'tiles', width, height, count, resolve, reject }));
    tiles.catch(() => {});
    return { url: `${this.origin}/frame/${id}`, tiles };
  }

  cancelFrame(id: string, err: Error): void {
    this.frames.get(id)?.reject(err);
    this.frames.delete(id);
  }

  close(): Promise<void> {
    for (const [id] of this.frames) this.cancelFrame(id, new Error('renderer closed'));
    this.server.closeAllConnections();
    return new Promise((resolve) => this.server.close(() => resolve()));
  }

  private async handle(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    const prefix = `/${this.token}/`;
    if (!url.pathname.startsWith(prefix)) return void res.writeHead(404).end();
    const rest = url.pathname.slice(prefix.length);
    try {
      if (req.method === 'POST' && rest.startsWith('frame/')) return await this.receiveFrame(rest.slice(6), req, res);
      if (req.method === 'POST' && rest === 'expired-tiles') return await this.expiredTiles(req, res);
      if (req.method !== 'GET') return void res.writeHead(405).end();
      if (rest === 'page.html') {
        return void res.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8', 'Cache-Control': 'no-store' }).end(pageHtml(this.page));
      }
      const file = pageAsset(rest);
      if (file) return void res.writeHead(200, { 'Content-Type': 'text/javascript; charset=utf-8', 'Cache-Control': IMMUTABLE }).end(await file);
      const m = /^r\/[^/]+(\/.*)$/.exec(rest);
      if (m) return await this.resource(m[1] + url.search, `${this.origin}/${rest.slice(0, rest.length - m[1].length)}`, res);
      res.writeHead(404).end();
    } catch (err) {
      if (!res.headersSent) res.writeHead(500, { 'Content-Type': 'text/plain' });
      res.end(String((err as Error).message));
    }
  }

  /** The page asks which of its source tiles an expiry reached (expired-source-tiles.ts): the question goes to the service. */
  private async expiredTiles(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    let size = 0;
    for await (const chunk of req as AsyncIterable<Buffer>) {
      size += chunk.length;
      // A page holds a few thousand tiles at most: a question this large is no page's.
      if (size > QUESTION_MAX) return void res.writeHead(413, { 'Cache-Control': 'no-store' }).end();
      chunks.push(chunk);
    }
    const fetcher = this.fetcher;
    const answer = fetcher ? await fetcher(`${EXPIRED_TILES_PATH}?${Buffer.concat(chunks).toString('utf8')}`, this.origin).catch(() => undefined) : undefined;
    if (!answer) return void res.writeHead(503, { 'Cache-Control': 'no-store' }).end();
    res.writeHead(answer.status, { 'Content-Type': answer.contentType ?? 'application/json', 'Cache-Control': 'no-store' }).end(answer.body);
  }

  private async resource(pathAndQuery: string, base: string, res: http.ServerResponse): Promise<void> {
    const [pathname, search = ''] = pathAndQuery.split('?');
    const fetcher = this.fetcher;
    // The style with flat extrusions (flat-extrusions.ts) is made here from the style as served.
    const query = new URLSearchParams(search);
    const flat = query.get(FLAT_PARAM) === '1' && /^\/styles\/[^/]+\/style\.json$/.test(pathname);
    if (flat) query.delete(FLAT_PARAM);
    // A tile's revision only keeps the browser's cache from answering for it after an expiry: the app never sees it.
    const revised = query.has(TILE_REVISION_PARAM);
    if (revised) query.delete(TILE_REVISION_PARAM);
    const rest = query.toString();
    let answer: Resource;
    if (!fetcher) answer = emptyResource(pathname, 503);
    else {
      try {
        answer = await fetcher(flat || revised ? `${pathname}${rest ? `?${rest}` : ''}` : pathAndQuery, base);
        if (flat && answer.status === 200) {
          const style = JSON.parse(Buffer.from(answer.body).toString('utf8')) as StyleSpecification;
          answer = { ...answer, body: Buffer.from(JSON.stringify(flattenExtrusions(style))) };
        }
      } catch {
        answer = emptyResource(pathname, 503);
      }
      if (answer.status !== 200) answer = emptyResource(pathname, answer.status);
    }
    res.writeHead(answer.status, {
      'Content-Type': answer.contentType ?? 'application/octet-stream',
      'Content-Length': answer.body.byteLength,
      'Cache-Control': answer.status === 200 && fetcher ? IMMUTABLE : 'no-store',
    });
    res.end(answer.body);
  }

  private async receiveFrame(id: string, req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const waiter = this.frames.get(id);
    if (!waiter) return void res.writeHead(404).end();
    this.frames.delete(id);
    if (waiter.kind === 'tiles') return this.receiveTiles(waiter, req, res);
    const size = waiter.width * 4 * waiter.height;
    // Never from Node's shared pool: the render thread transfers this buffer's memory to the pool thread.
    const out = Buffer.allocUnsafeSlow(size);
    let at: number;
    try {
      at = await this.readFrame(req, out, waiter);
    } catch (err) {
      // The browser went away mid-upload (a timed-out renderer is closed): the render fails, nothing waits on.
      waiter.reject(new Error(`frame upload broke off: ${(err as Error).message}`));
      throw err;
    }
    if (at < 0) {
      waiter.reject(new Error(`frame upload is larger than ${waiter.width}x${waiter.height} pixels`));
      return void res.writeHead(413).end();
    }
    if (at !== size) {
      waiter.reject(new Error(`frame upload has ${at} bytes, expected ${size}`));
      return void res.writeHead(400).end();
    }
    waiter.resolve(out);
    res.writeHead(204).end();
  }

  private async receiveTiles(waiter: TilesWaiter, req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const sizes = String(req.headers['x-tile-sizes'] ?? '').split(',').map(Number);
    const total = sizes.reduce((a, b) => a + b, 0);
    const limit = waiter.width * waiter.height * 4 + waiter.count * 65_536;
    if (sizes.length !== waiter.count || !sizes.every((n) => Number.isInteger(n) && n > 0) || total > limit) {
      waiter.reject(new Error(`tile upload announced ${sizes.length} tiles of ${total} bytes, expected ${waiter.count} tiles of at most ${limit}`));
      req.resume();
      return void res.writeHead(400).end();
    }
    // Never from Node's shared pool: the render thread transfers this buffer's memory to the pool thread.
    const body = Buffer.allocUnsafeSlow(total);
    let at = 0;
    try {
      for await (const chunk of req as AsyncIterable<Buffer>) {
        if (at + chunk.length > total) {
          waiter.reject(new Error(`tile upload is longer than the ${total} bytes announced`));
          return void res.writeHead(413).end();
        }
        chunk.copy(body, at);
        at += chunk.length;
      }
    } catch (err) {
      waiter.reject(new Error(`tile upload broke off: ${(err as Error).message}`));
      throw err;
    }
    if (at !== total) {
      waiter.reject(new Error(`tile upload has ${at} bytes, ${total} announced`));
      return void res.writeHead(400).end();
    }
    const tiles: Buffer[] = [];
    let from = 0;
    for (const n of sizes) {
      tiles.push(body.subarray(from, from + n));
      from += n;
    }
    waiter.resolve(tiles);
    res.writeHead(204).end();
  }

  /** Streams an upload into `out`, rows flipped; the bytes read, or -1 when the upload is too large. */
  private async readFrame(req: http.IncomingMessage, out: Buffer, waiter: PixelsWaiter): Promise<number> {
    const row = waiter.width * 4;
    const size = out.length;
    let at = 0;
    for await (const chunk of req as AsyncIterable<Buffer>) {
      if (at + chunk.length > size) return -1;
      // Byte `at` of the upload is in GL row r (from the bottom): it goes to row height-1-r of the image.
      for (let i = 0; i < chunk.length; ) {
        const r = Math.floor(at / row);
        const col = at - r * row;
        const n = Math.min(row - col, chunk.length - i);
        chunk.copy(out, (waiter.height - 1 - r) * row + col, i, i + n);
        i += n;
        at += n;
      }
    }
    return at;
  }
}
