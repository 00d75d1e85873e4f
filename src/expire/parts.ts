// An encoded batch cut into parts of bounded size for the pipes it travels through (the IPC channel to a worker,
// a Redis stream entry), and put together again at the other end. A million-tile batch is 8 MB: one IPC message
// or one stream entry that large blocks the receiving event loop while it is parsed, and a stream trimmed by
// MAXLEN would keep or drop it whole. Parts of a batch travel in order on one channel and share its id.
import { batchOf, decodeBatch, decodeBatchHeader, encodedLength, type BatchHeader, type EncodedBatch, type ExpiryBatch } from './batch.js';

/** Bytes of one part (the batch's JSON header and about 128,000 tile keys). */
export const PART_BYTES = 1 << 20;

/** `bytes` as consecutive slices of at most `size` bytes (one, possibly empty, at least). */
export function splitParts(bytes: Buffer, size = PART_BYTES): Buffer[] {
  const out: Buffer[] = [];
  for (let i = 0; i < bytes.length; i += size) out.push(bytes.subarray(i, i + size));
  return out.length ? out : [bytes];
}

/**
 * An encoded batch's parts, none a copy of its keys: a batch that fits one part is one buffer (a part of one is
 * decoded whole); a larger one is its header's slices, then its keys' slices (the first part holds the header
 * alone, which the assembler takes as a first part with no keys yet).
 */
export function batchParts(e: EncodedBatch, size = PART_BYTES): Buffer[] {
  if (encodedLength(e) <= size) return [Buffer.concat([e.head, e.keys])];
  return [...splitParts(e.head, size), ...splitParts(e.keys, size)];
}

/** One part as it arrives: the batch it belongs to, its place and the number of parts. */
export interface Part {
  id: string;
  part: number;
  parts: number;
  data: Buffer;
}

/** Batches whose parts are still arriving; a part out of place (one was lost) drops the batch. */
const OPEN_MAX = 64;

/**
 * A batch being put together: its keys' array, allocated once from the header in its first part, and filled as the
 * parts arrive, so that no part is kept (a million-key batch would otherwise be held three times: its parts, their
 * concatenation and the decoded keys). A header longer than a part keeps the parts and decodes them at the end.
 */
type Open =
  | { kind: 'keys'; next: number; header: BatchHeader; keys: Uint8Array; tiles: Float64Array; filled: number }
  | { kind: 'chunks'; next: number; chunks: Buffer[] };

export class PartAssembler {
  private readonly open = new Map<string, Open>();

  /** The batch once its last part is in; undefined while parts are missing, or when the parts did not fit. */
  add(p: Part): ExpiryBatch | undefined {
    if (p.parts === 1) return p.part === 0 ? decodeBatch(p.data).batch : undefined;
    if (p.part === 0) {
      this.open.set(p.id, opened(p.data));
      if (this.open.size > OPEN_MAX) this.open.delete(this.open.keys().next().value!);
      return undefined;
    }
    const o = this.open.get(p.id);
    if (!o || o.next !== p.part) {
      this.open.delete(p.id);
      return undefined;
    }
    o.next++;
    if (o.kind === 'chunks') o.chunks.push(p.data);
    else {
      if (o.filled + p.data.length > o.keys.length) {
        this.open.delete(p.id);
        throw new Error('expiry batch parts longer than its keys');
      }
      o.keys.set(p.data, o.filled);
      o.filled += p.data.length;
    }
    if (o.next < p.parts) return undefined;
    this.open.delete(p.id);
    if (o.kind === 'chunks') return decodeBatch(Buffer.concat(o.chunks)).batch;
    if (o.filled !== o.keys.length) throw new Error('truncated expiry batch');
    return batchOf(o.header, o.tiles);
  }
}

/** What the first part of a batch of several starts. */
function opened(first: Buffer): Open {
  let decoded: ReturnType<typeof decodeBatchHeader>;
  try {
    decoded = decodeBatchHeader(first);
  } catch {
    return { kind: 'chunks', next: 1, chunks: [first] };
  }
  const { header, start } = decoded;
  const tiles = new Float64Array(header.n);
  const keys = new Uint8Array(tiles.buffer);
  const own = first.subarray(start);
  if (own.length > keys.length) throw new Error('expiry batch parts longer than its keys');
  keys.set(own, 0);
  return { kind: 'keys', next: 1, header, keys, tiles, filled: own.length };
}
