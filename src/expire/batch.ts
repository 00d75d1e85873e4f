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

/**
 * A batch's encoding in two pieces, as it is written and sent: its length and header, then its keys. The keys are
 * a view of the batch's own array, not a copy: a million-tile batch is 8 MB of keys, and a copy of them was the
 * third 8 MB the primary held at once (the parsed list, its index, the copy).
 */
export interface EncodedBatch {
  head: Buffer;
  keys: Buffer;
}

/** A batch as bytes: a length, a JSON header padded to 8 bytes, then the keys as little-endian doubles. */
export function encodeBatchPieces(b: ExpiryBatch): EncodedBatch {
  const header: BatchHeader = { id: b.id, at: b.at, sources: b.sources, band: [b.band.min, Number.isFinite(b.band.max) ? b.band.max : null], input: b.input, lines: b.lines, marked: b.marked, n: b.tiles.length };
  const json = Buffer.from(JSON.stringify(header));
  const pad = (8 - ((4 + json.length) % 8)) % 8;
  const head = Buffer.alloc(4 + json.length + pad, 0x20);
  head.writeUInt32LE(json.length + pad, 0);
  json.copy(head, 4);
  // A Float64Array holds its doubles in the machine's byte order, little-endian on every platform Node runs on
  // here (x64, arm64), as the decoder's Float64Array reads them.
  return { head, keys: Buffer.from(b.tiles.buffer, b.tiles.byteOffset, b.tiles.byteLength) };
}

/** Bytes of an encoded batch. */
export function encodedLength(e: EncodedBatch): number {
  return e.head.length + e.keys.length;
}

/** A batch as one buffer (the journal's compaction, tests): `encodeBatchPieces` put together. */
export function encodeBatch(b: ExpiryBatch): Buffer {
  const { head, keys } = encodeBatchPieces(b);
  return Buffer.concat([head, keys]);
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
