// Content-Encoding negotiation and the codecs behind it: br and gzip from node:zlib, zstd from node:zlib
// where Node has it (22.15+) and otherwise from the WebAssembly build of libzstd (@bokuweb/zstd-wasm).
import zlib from 'node:zlib';
import { createRequire } from 'node:module';

export type ContentEncoding = 'br' | 'zstd' | 'gzip' | 'identity';

/** Server preference when the client ranks several encodings equally: smallest output first. */
const SERVER_ORDER: ContentEncoding[] = ['br', 'zstd', 'gzip'];

/**
 * Parses Accept-Encoding into q-values. A missing header means identity only (decisions.md: plain curl and
 * most load tools send none). `*` covers encodings not named.
 */
export function parseAcceptEncoding(header: string | undefined): Map<string, number> {
  const out = new Map<string, number>();
  if (!header) return out;
  for (const part of header.split(',')) {
    const [name, ...params] = part.trim().toLowerCase().split(';');
    if (!name) continue;
    let q = 1;
    for (const p of params) {
      const m = /^\s*q\s*=\s*([0-9.]+)\s*$/.exec(p);
      if (m) q = Math.min(1, Math.max(0, Number(m[1]) || 0));
    }
    out.set(name.trim(), q);
  }
  return out;
}

const parsedHeaders = new Map<string, Map<string, number>>();
const PARSED_HEADERS_MAX = 256;

/**
 * `parseAcceptEncoding`, memoised per header value: clients send a handful of distinct strings, and the tile
 * lane should not split and regex-match the same one on every request. The map is shared: read it, never change it.
 */
export function acceptedEncodings(header: string | undefined): Map<string, number> {
  const key = header ?? '';
  let parsed = parsedHeaders.get(key);
  if (parsed === undefined) {
    if (parsedHeaders.size >= PARSED_HEADERS_MAX) parsedHeaders.clear();
    parsed = parseAcceptEncoding(header);
    parsedHeaders.set(key, parsed);
  }
  return parsed;
}

export function acceptsEncoding(accepted: Map<string, number>, enc: ContentEncoding): boolean {
  if (enc === 'identity') return true;
  const q = accepted.get(enc) ?? accepted.get('*');
  return q !== undefined && q > 0;
}

/**
 * Picks the encoding to send. `stored` is how the bytes already are: when the client accepts it, it wins,
 * since passing stored gzip through costs nothing. `allowed` lists what the server may produce.
 */
export function chooseEncoding(accepted: Map<string, number>, stored: ContentEncoding, recompress: boolean): ContentEncoding {
  if (stored !== 'identity' && acceptsEncoding(accepted, stored)) return stored;
  if (!recompress) return 'identity';
  let best: ContentEncoding = 'identity';
  let bestQ = 0;
  for (const enc of SERVER_ORDER) {
    const q = accepted.get(enc) ?? accepted.get('*') ?? 0;
    if (q > bestQ) {
      best = enc;
      bestQ = q;
    }
  }
  return best;
}

export interface CompressionLevels {
  brQuality: number;
  zstdLevel: number;
}

type ZstdWasm = { init(): Promise<void>; compress(b: Uint8Array, level: number): Uint8Array; decompress(b: Uint8Array): Uint8Array };
const nodeZstd = (zlib as unknown as { zstdCompressSync?: (b: Uint8Array, o: object) => Buffer }).zstdCompressSync;
let wasm: ZstdWasm | undefined;

/** Loads the zstd codec; call once at start-up (the WebAssembly module initialises asynchronously). */
export async function initCodecs(): Promise<void> {
  if (nodeZstd || wasm) return;
  const mod = createRequire(import.meta.url)('@bokuweb/zstd-wasm') as ZstdWasm;
  await mod.init();
  wasm = mod;
}

export function encode(data: Uint8Array, enc: ContentEncoding, levels: CompressionLevels): Uint8Array {
  switch (enc) {
    case 'identity':
      return data;
    case 'gzip':
      return zlib.gzipSync(data, { level: 6 });
    case 'br':
      return zlib.brotliCompressSync(data, {
        params: { [zlib.constants.BROTLI_PARAM_QUALITY]: levels.brQuality, [zlib.constants.BROTLI_PARAM_SIZE_HINT]: data.byteLength },
      });
    case 'zstd':
      if (nodeZstd) return nodeZstd(data, { params: { [(zlib.constants as Record<string, number>).ZSTD_c_compressionLevel]: levels.zstdLevel } });
      if (!wasm) throw new Error('zstd codec not initialised (initCodecs)');
      return wasm.compress(data, levels.zstdLevel);
  }
}

export function decodeGzip(data: Uint8Array): Uint8Array {
  return zlib.gunzipSync(data);
}
