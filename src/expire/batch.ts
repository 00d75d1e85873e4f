// One expiry as it travels: accepted once (admin listener, CLI, NOTIFY, a replaced archive), applied in every
// process of every machine, written to the journal that restarts read. Tiles travel as sorted keys (tile-key.ts).
import type { ZoomBand } from './area-times.js';

/** Where an expiry came from (a metric label and a log field); `edit`: a feature written through OGC API - Features (docs/editing.md). */
export type ExpiryInput = 'list' | 'bbox' | 'geometry' | 'notify' | 'archive' | 'reconnect' | 'edit';

export interface ExpiryBatch {
  /** Unique across the fleet (machine, process, counter): a batch that reaches a process twice is applied once. */
  id: string;
  /** When the change was accepted (ms since the epoch): anything made at or before it from these sources is stale. */
  at: number;
  /** The configured source ids whose data changed. */
  sources: string[];
  /** The changed tiles as ascending keys without repeats, any mix of zooms; the key 0 (tile 0/0/0) is everything. */
  tiles: Float64Array;
  /** Zooms of the products reached (default: every zoom). */
  band: ZoomBand;
  input: ExpiryInput;
  /** Lines read (an expire list) or tiles given, for the answer and the log. */
  lines?: number;
  /** Tiles marked over the band after expansion (the admin answer's `tiles`); default: the keys given. */
  marked?: number;
}

/** What precedes a batch's keys in its encoding. */
export interface BatchHeader {
  id: string;
  at: number;
  sources: string[];
  band: [number, number | null];
  input: ExpiryInput;
  lines?: number;
  marked?: number;
  n: number;
}

/** A batch as bytes: a length, a JSON header padded to 8 bytes, then the keys as little-endian doubles. */
export function encodeBatch(b: ExpiryBatch): Buffer {
  const header: BatchHeader = { id: b.id, at: b.at, sources: b.sources, band: [b.band.min, Number.isFinite(b.band.max) ? b.band.max : null], input: b.input, lines: b.lines, marked: b.marked, n: b.tiles.length };
  let json = Buffer.from(JSON.stringify(header));
  const pad = (8 - ((4 + json.length) % 8)) % 8;
  json = Buffer.concat([json, Buffer.alloc(pad, 0x20)]);
  const out = Buffer.alloc(4 + json.length + b.tiles.length * 8);
  out.writeUInt32LE(json.length, 0);
  json.copy(out, 4);
  const keys = new Float64Array(out.buffer, out.byteOffset + 4 + json.length, b.tiles.length);
  keys.set(b.tiles);
  return out;
}

/** A batch's header and where its keys start, read from the first bytes of its encoding (throws when they are not one). */
export function decodeBatchHeader(buf: Buffer, offset = 0): { header: BatchHeader; start: number } {
  if (buf.length < offset + 4) throw new Error('truncated expiry batch');
  const len = buf.readUInt32LE(offset);
  if (buf.length < offset + 4 + len) throw new Error('truncated expiry batch');
  const header = JSON.parse(buf.subarray(offset + 4, offset + 4 + len).toString()) as BatchHeader;
  if (!Array.isArray(header.sources) || typeof header.at !== 'number' || !Number.isInteger(header.n) || header.n < 0) throw new Error('malformed expiry batch');
  return { header, start: offset + 4 + len };
}

/** The batch of a decoded header and its keys. */
export function batchOf(h: BatchHeader, tiles: Float64Array): ExpiryBatch {
  return { id: h.id, at: h.at, sources: h.sources, tiles, band: { min: h.band[0], max: h.band[1] ?? Infinity }, input: h.input, lines: h.lines, marked: h.marked };
}

/** The batch `encodeBatch` wrote, and the bytes it took; throws on bytes that are not one. */
export function decodeBatch(buf: Buffer, offset = 0): { batch: ExpiryBatch; bytes: number } {
  const { header: h, start } = decodeBatchHeader(buf, offset);
  const end = start + h.n * 8;
  if (buf.length < end) throw new Error('truncated or malformed expiry batch');
  // Copied: the keys must be 8-byte aligned and must not pin the buffer they were read from.
  const tiles = new Float64Array(h.n);
  Buffer.from(tiles.buffer).set(buf.subarray(start, end));
  return { batch: batchOf(h, tiles), bytes: end - offset };
}
