// `POST /__admin/expire` (admin listener only): an expiry handed over by an operator, osm2pgsql's replication
// script (through `tileserver-ts expire`) or any other writer. Three body forms: a `text/plain` expire list read
// as it streams (never buffered whole), or a JSON object with a bbox or a GeoJSON geometry. Everything is checked
// before the batch goes to the hub, so a refused request expires nothing. The answer counts the lines read and
// the tiles marked over the band (src/expire/marked-count.ts).
import type { IncomingMessage } from 'node:http';
import type { Config } from '../../config/schema.js';
import type { Logger } from '../../log.js';
import { problemBody, type Problem } from '../../problem.js';
import { areaTiles, areaZoom } from '../../expire/area-tiles.js';
import type { ZoomBand } from '../../expire/area-times.js';
import type { ExpiryInput } from '../../expire/batch.js';
import { readExpireList } from '../../expire/expire-list.js';
import { areaRequest, deepestOf, expiredSources, zoomBand, type Refusal } from '../../expire/expire-request.js';
import { expiryHub } from '../../expire/hub.js';
import { markedTiles } from '../../expire/marked-count.js';

/** The largest JSON body read (a GeoJSON geometry of about 100,000 positions); beyond it 413. */
export const EXPIRE_JSON_MAX_BYTES = 4 * 1024 * 1024;

/** The answer of the route: 200 with the counts, or a problem. */
export type ExpireAnswer = { status: 200; body: { lines: number; tiles: number } } | { status: number; body: Problem; headers?: Record<string, string>; close?: boolean };

const QUERY_KEYS = new Set(['source', 'table', 'min_zoom', 'max_zoom']);

const TITLES: Record<number, string> = { 400: 'Invalid expiry', 404: 'Not found', 413: 'Body too large', 415: 'Unsupported media type', 503: 'Starting' };

const problem = (status: number, detail: string, extra: Record<string, unknown> = {}): ExpireAnswer => ({ status, body: problemBody(status, TITLES[status], detail, extra) });
const refused = (r: Refusal): ExpireAnswer => problem(r.status, r.detail);

/** The media type of a Content-Type header, lower case, without parameters. */
function mediaType(header: string | undefined): string {
  return (header ?? '').split(';')[0].trim().toLowerCase();
}

/**
 * The whole body up to `max` bytes (undefined: it is longer, and the rest is left unread). Read through the
 * iterator's `next` only: leaving a `for await` early would destroy the request, and its socket with the answer.
 */
async function bodyUpTo(req: IncomingMessage, max: number): Promise<Buffer | undefined> {
  const it = (req as AsyncIterable<Buffer>)[Symbol.asyncIterator]();
  const parts: Buffer[] = [];
  let size = 0;
  for (let r = await it.next(); !r.done; r = await it.next()) {
    size += r.value.length;
    if (size > max) return undefined;
    parts.push(r.value);
  }
  return Buffer.concat(parts);
}

interface Prepared {
  sources: string[];
  tiles: Float64Array;
  band: ZoomBand;
  input: ExpiryInput;
  lines: number;
}

/** Reads and checks a request into a batch, or the problem that refuses it. */
async function prepare(req: IncomingMessage, query: URLSearchParams, config: Config): Promise<Prepared | ExpireAnswer> {
  const type = mediaType(req.headers['content-type']);
  if (type === 'text/plain') {
    const stray = [...query.keys()].find((k) => !QUERY_KEYS.has(k));
    if (stray !== undefined) return problem(400, `unknown query parameter ${JSON.stringify(stray).slice(0, 60)} (expected source or table, min_zoom, max_zoom)`);
    const target = { source: query.get('source') ?? undefined, table: query.get('table') ?? undefined };
    const reached = expiredSources(config, target);
    if (!reached.ok) return refused(reached);
    const band = zoomBand(query.get('min_zoom') ?? undefined, query.get('max_zoom') ?? undefined);
    if (!band.ok) return refused(band);
    const length = req.headers['content-length'];
    const list = await readExpireList(req, deepestOf(config, reached.sources), length === undefined ? undefined : Number(length));
    if (!list.ok) return problem(400, `line ${list.line}: ${list.problem}`, { line: list.line });
    return { sources: reached.sources, tiles: list.tiles, band: band.band, input: 'list', lines: list.lines };
  }
  if (type === 'application/json') {
    if (query.size) return problem(400, 'a JSON body carries source or table and the zooms itself; the query string must be empty');
    const body = await bodyUpTo(req, EXPIRE_JSON_MAX_BYTES);
    if (!body) return { ...problem(413, `a JSON expiry is at most ${EXPIRE_JSON_MAX_BYTES} bytes; send a tile list (text/plain, streamed) for larger areas`), close: true };
    let doc: unknown;
    try {
      doc = JSON.parse(body.toString('utf8'));
    } catch {
      return problem(400, 'the body is not JSON');
    }
    const parsed = areaRequest(doc);
    if (!parsed.ok) return refused(parsed);
    const { target, area, band, input } = parsed.request;
    const reached = expiredSources(config, target);
    if (!reached.ok) return refused(reached);
    const tiles = areaTiles(area, areaZoom(area, Math.min(band.max, deepestOf(config, reached.sources))));
    return { sources: reached.sources, tiles, band, input, lines: tiles.length };
  }
  return { ...problem(415, `send an expire list as text/plain or a bbox or geometry as application/json, not ${JSON.stringify(type || 'no Content-Type')}`), close: true };
}

/**
 * Answers one expiry request. `config` is the configuration the listener's process has loaded (undefined while
 * it starts: 503). The batch is handed to the hub and the answer waits until this process has applied it.
 */
export async function answerExpire(req: IncomingMessage, query: URLSearchParams, config: Config | undefined, log: Logger, reqId: string): Promise<ExpireAnswer> {
  if (!config) return { ...problem(503, 'the service is still starting; retry shortly'), headers: { 'retry-after': '1' }, close: true };
  const started = performance.now();
  const p = await prepare(req, query, config);
  if ('status' in p) return p;
  // One count for every source reached (the counter adds it per source), to the deepest zoom any of them is served at.
  const tiles = markedTiles(p.tiles, p.band, deepestOf(config, p.sources));
  if (p.tiles.length) await expiryHub().accept({ sources: p.sources, tiles: p.tiles, band: p.band, input: p.input, lines: p.lines, marked: tiles });
  const band = Number.isFinite(p.band.max) ? `${p.band.min}-${p.band.max}` : `${p.band.min}-`;
  log.info({ req_id: reqId, sources: p.sources, input: p.input, lines: p.lines, tiles, keys: p.tiles.length, band, duration_ms: Math.round(performance.now() - started) }, 'expiry accepted');
  return { status: 200, body: { lines: p.lines, tiles } };
}
