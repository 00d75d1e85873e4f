// Response helpers shared by route modules: JSON with negotiated compression, and conditional requests.
import type { Context } from 'hono';
import type { AppState } from '../state/app-state.js';
import { chooseEncoding, encode, parseAcceptEncoding } from '../tiles/encoding.js';

/** Metadata documents change on reload; clients may reuse them briefly. */
export const METADATA_CACHE_CONTROL = 'public, max-age=300';

/** Bodies below this size are sent as they are: compressing them saves nothing worth the CPU. */
const MIN_COMPRESS_BYTES = 1024;

export function sendBytes(c: Context, state: AppState, body: Uint8Array, contentType: string, cacheControl: string, status = 200, extra: Record<string, string> = {}): Response {
  // An answer that varies on more than its encoding (Accept-Language) names both.
  const headers: Record<string, string> = { 'Content-Type': contentType, 'Cache-Control': cacheControl, ...extra, Vary: extra.Vary ? `Accept-Encoding, ${extra.Vary}` : 'Accept-Encoding' };
  let out = body;
  const cfg = state.config.compression;
  if (cfg.enabled && body.byteLength >= MIN_COMPRESS_BYTES) {
    const enc = chooseEncoding(parseAcceptEncoding(c.req.header('accept-encoding')), 'identity', true);
    if (enc !== 'identity') {
      out = encode(body, enc, { brQuality: cfg.br_quality, zstdLevel: cfg.zstd_level });
      headers['Content-Encoding'] = enc;
    }
  }
  return c.body(out as Uint8Array<ArrayBuffer>, status as 200, headers);
}

export function sendJson(c: Context, state: AppState, value: unknown, cacheControl = METADATA_CACHE_CONTROL, status = 200, extra: Record<string, string> = {}): Response {
  return sendBytes(c, state, Buffer.from(JSON.stringify(value)), 'application/json; charset=utf-8', cacheControl, status, extra);
}

/** True when If-None-Match names `etag` (or is `*`): the client's copy is current. */
export function notModified(c: Context, etag: string): boolean {
  return ifNoneMatchHits(c.req.header('if-none-match'), etag);
}

/** The If-None-Match rule on the header's value (weak comparison, as RFC 9110 asks for If-None-Match). */
export function ifNoneMatchHits(header: string | undefined, etag: string): boolean {
  if (!header) return false;
  if (header.trim() === '*') return true;
  return header.split(',').some((t) => t.trim().replace(/^W\//, '') === etag);
}
