// An encoded batch cut into parts of bounded size for the pipes it travels through (the IPC channel to a worker,
// a Redis stream entry), and put together again at the other end. A million-tile batch is 8 MB: one IPC message
// or one stream entry that large blocks the receiving event loop while it is parsed, and a stream trimmed by
// MAXLEN would keep or drop it whole. Parts of a batch travel in order on one channel and share its id.
import { decodeBatch, type ExpiryBatch } from './batch.js';

/** Bytes of one part (the batch's JSON header and about 128,000 tile keys). */
export const PART_BYTES = 1 << 20;

/** `bytes` as consecutive slices of at most `size` bytes (one, possibly empty, at least). */
export function splitParts(bytes: Buffer, size = PART_BYTES): Buffer[] {
  const out: Buffer[] = [];
  for (let i = 0; i < bytes.length; i += size) out.push(bytes.subarray(i, i + size));
  return out.length ? out : [bytes];
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

export class PartAssembler {
  private readonly open = new Map<string, Buffer[]>();

  /** The batch once its last part is in; undefined while parts are missing, or when the parts did not fit. */
  add(p: Part): ExpiryBatch | undefined {
    if (p.parts === 1) return p.part === 0 ? decodeBatch(p.data).batch : undefined;
    let got = this.open.get(p.id);
    if (p.part === 0) {
      got = [];
      this.open.set(p.id, got);
      if (this.open.size > OPEN_MAX) this.open.delete(this.open.keys().next().value!);
    }
    if (!got || got.length !== p.part) {
      this.open.delete(p.id);
      return undefined;
    }
    got.push(p.data);
    if (got.length < p.parts) return undefined;
    this.open.delete(p.id);
    return decodeBatch(Buffer.concat(got)).batch;
  }
}
