// `POST /__admin/expire`: an expire list (`z/x/y` a line, as osm2pgsql writes them) for one source, handed to the
// expiry hub as one batch (docs/live-data.md). A list with one bad line expires nothing.
import type { IncomingMessage } from 'node:http';
import type { Config } from '../../config/schema.js';
import { ALL_ZOOMS, unique, type ZoomBand } from '../../expire/area-times.js';
import { expiryHub } from '../../expire/hub.js';
import { expirySources } from '../../expire/targets.js';
import { MAX_KEY_ZOOM, tileKey, validTile } from '../../expire/tile-key.js';

export interface ExpireAnswer {
  status: number;
  body: { lines: number; tiles: number } | { title: string; detail: string };
}

const problem = (status: number, title: string, detail: string): ExpireAnswer => ({ status, body: { title, detail } });

const LINE = /^(\d{1,2})\/(\d{1,8})\/(\d{1,8})$/;

/** Largest list body read, for now (64 MiB: about four million lines). */
const MAX_BODY = 64 * 1024 * 1024;

function zoomParam(params: URLSearchParams, name: string): number | undefined | string {
  const raw = params.get(name);
  if (raw === null) return undefined;
  if (!/^\d{1,2}$/.test(raw) || Number(raw) > MAX_KEY_ZOOM) return `${name} must be a zoom from 0 to ${MAX_KEY_ZOOM}, not "${raw.slice(0, 20)}"`;
  return Number(raw);
}

export async function answerExpire(req: IncomingMessage, params: URLSearchParams, config: Config): Promise<ExpireAnswer> {
  const type = (req.headers['content-type'] ?? '').split(';')[0].trim().toLowerCase();
  if (type !== 'text/plain') {
    req.resume();
    return problem(415, 'Unsupported media type', 'send the expire list as text/plain, one z/x/y a line');
  }
  const id = params.get('source');
  if (!id) {
    req.resume();
    return problem(400, 'Invalid query parameter', 'source names the source whose data changed');
  }
  const named = expirySources(config, id);
  if (!named.ok) {
    req.resume();
    return problem(404, 'Unknown source', `no source "${named.unknown.slice(0, 100)}" is configured`);
  }
  const min = zoomParam(params, 'min_zoom');
  const max = zoomParam(params, 'max_zoom');
  for (const z of [min, max]) if (typeof z === 'string') return (req.resume(), problem(400, 'Invalid query parameter', z));
  const band: ZoomBand = min === undefined && max === undefined ? ALL_ZOOMS : { min: (min as number | undefined) ?? 0, max: (max as number | undefined) ?? Infinity };
  if (band.min > band.max) return (req.resume(), problem(400, 'Invalid query parameter', `min_zoom ${band.min} is above max_zoom ${band.max}`));

  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size > MAX_BODY) return problem(413, 'Payload too large', `an expire list may hold at most ${MAX_BODY} bytes`);
    chunks.push(chunk);
  }
  const text = Buffer.concat(chunks).toString('utf8');
  const lines = text.split('\n');
  if (lines.at(-1) === '') lines.pop();
  const keys = new Float64Array(lines.length);
  let n = 0;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i].endsWith('\r') ? lines[i].slice(0, -1) : lines[i];
    const m = LINE.exec(line);
    const [z, x, y] = m ? [Number(m[1]), Number(m[2]), Number(m[3])] : [NaN, NaN, NaN];
    if (!m) return problem(400, 'Invalid expire list', `line ${i + 1}: expected z/x/y, got "${line.slice(0, 40)}"`);
    if (!validTile(z, x, y)) return problem(400, 'Invalid expire list', `line ${i + 1}: ${z}/${x}/${y} is not a tile (zoom 0 to ${MAX_KEY_ZOOM}, x and y below 2^zoom)`);
    keys[n++] = tileKey(z, x, y);
  }
  const tiles = unique(keys.subarray(0, n).sort());
  await expiryHub().accept({ sources: named.sources, tiles: tiles.slice(), band, input: 'list', lines: lines.length, marked: tiles.length });
  return { status: 200, body: { lines: lines.length, tiles: tiles.length } };
}
