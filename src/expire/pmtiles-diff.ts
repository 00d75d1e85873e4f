// Which tiles differ between two PMTiles v3 archives (an archive replaced by a newer build of the same data), so
// that a replaced archive expires only those (archives.ts). The directories decide most tiles without reading
// them: a tile in one archive only, or stored with another length, changed. A tile stored with the same length in
// both can only be judged by its bytes (offsets in two files say nothing about each other), so those pairs are
// read, in offset order, in spans of bounded size, each distinct (old offset, new offset) pair once.
//
// Memory: both archives are walked in tile-id order, one directory per level at a time (the root and the leaf
// being read, never all leaves), plus one span of pending byte comparisons (SPAN_BYTES a side) and the changed
// tiles found (stopped at `maxTiles`: beyond it the caller expires the whole source).
import { gunzipSync } from 'node:zlib';
import { bytesToHeader, Compression, tileIdToZxy, type Header, type Source } from 'pmtiles';
import { unique } from './area-times.js';
import { tileKey } from './tile-key.js';

/** The 127-byte header is all a reader needs first; the root directory follows within the first 16 KiB. */
const HEADER_READ = 16_384;
/** Bytes of tile data read at once from each archive while comparing equal-length tiles. */
const SPAN_BYTES = 4 * 1024 * 1024;
/** A gap between two tiles of a span that is read through rather than split into two reads. */
const GAP_BYTES = 64 * 1024;
/** Pairs remembered as compared (archives store repeated contents once: an ocean tile is compared once). */
const PAIRS_REMEMBERED = 65_536;

/** One directory entry: tiles `id` to `id + run - 1` stored at `offset` (run 0: a leaf directory there). */
export interface DirEntry {
  id: number;
  offset: number;
  length: number;
  run: number;
}

/** What a diff found: the changed tiles as sorted tile keys, or why only the whole source can be expired. */
export type ArchiveDiff = { kind: 'tiles'; tiles: Float64Array; read: number } | { kind: 'whole'; reason: string };

export interface DiffOptions {
  /** More changed tiles than this: give up and expire the whole source (the index would coarsen them anyway). */
  maxTiles: number;
  /** Steps between two turns given to the event loop, so that a long diff lets the process serve meanwhile. */
  yieldEvery?: number;
  /** MBTiles rows read at once from each archive (tests make it small to cross page boundaries). */
  pageRows?: number;
}

async function bytes(source: Source, offset: number, length: number, etag: string | undefined): Promise<Uint8Array> {
  if (length === 0) return new Uint8Array(0);
  const { data } = await source.getBytes(offset, length, undefined, etag);
  if (data.byteLength < length) throw new Error(`short read at ${offset} (${data.byteLength} of ${length} bytes)`);
  return new Uint8Array(data, 0, length);
}

export async function readHeader(source: Source): Promise<Header> {
  const { data, etag } = await source.getBytes(0, HEADER_READ);
  const view = new Uint8Array(data);
  if (view.length < 127 || String.fromCharCode(...view.subarray(0, 7)) !== 'PMTiles') throw new Error('not a PMTiles archive');
  return bytesToHeader(data, etag);
}

function varint(buf: Uint8Array, pos: { at: number }): number {
  let value = 0;
  let scale = 1;
  for (;;) {
    if (pos.at >= buf.length) throw new Error('truncated PMTiles directory');
    const b = buf[pos.at++];
    value += (b & 0x7f) * scale;
    if (b < 0x80) return value;
    scale *= 0x80;
  }
}

/** A directory's entries from its stored bytes (count, then id deltas, run lengths, lengths, offsets). */
export function parseDirectory(stored: Uint8Array, compression: Compression): DirEntry[] {
  let buf = stored;
  if (compression === Compression.Gzip) buf = gunzipSync(stored);
  else if (compression !== Compression.None && compression !== Compression.Unknown) throw new Error(`unsupported directory compression ${Compression[compression]}`);
  const pos = { at: 0 };
  const n = varint(buf, pos);
  const out: DirEntry[] = new Array<DirEntry>(n);
  let id = 0;
  for (let i = 0; i < n; i++) {
    id += varint(buf, pos);
    out[i] = { id, offset: 0, length: 0, run: 1 };
  }
  for (let i = 0; i < n; i++) out[i].run = varint(buf, pos);
  for (let i = 0; i < n; i++) out[i].length = varint(buf, pos);
  for (let i = 0; i < n; i++) {
    const v = varint(buf, pos);
    // 0: right after the previous entry's bytes.
    out[i].offset = v === 0 && i > 0 ? out[i - 1].offset + out[i - 1].length : v - 1;
  }
  return out;
}

/** Every tile entry of an archive in tile-id order (offsets absolute in the file), reading one leaf at a time. */
export async function* tileEntries(source: Source, header: Header): AsyncGenerator<DirEntry> {
  const etag = header.etag;
  async function* walk(offset: number, length: number, depth: number): AsyncGenerator<DirEntry> {
    if (depth > 4) throw new Error('PMTiles directories nested too deep');
    const dir = parseDirectory(await bytes(source, offset, length, etag), header.internalCompression);
    for (const e of dir) {
      if (e.run === 0) yield* walk(header.leafDirectoryOffset + e.offset, e.length, depth + 1);
      else yield { id: e.id, offset: header.tileDataOffset + e.offset, length: e.length, run: e.run };
    }
  }
  yield* walk(header.rootDirectoryOffset, header.rootDirectoryLength, 0);
}

/** A tile id as an expiry key. */
function keyOf(id: number): number {
  const [z, x, y] = tileIdToZxy(id);
  return tileKey(z, x, y);
}

class TooMany extends Error {}

/** Tile ids found changed, as keys; throws TooMany past the bound. */
class Changed {
  private keys: number[] = [];
  constructor(private readonly max: number) {}
  addRange(from: number, to: number): void {
    if (this.keys.length + (to - from) > this.max) throw new TooMany();
    for (let id = from; id < to; id++) this.keys.push(keyOf(id));
  }
  sorted(): Float64Array {
    return unique(Float64Array.from(this.keys).sort());
  }
}

/** A range of tiles stored with the same length in both archives, whose bytes decide. */
interface Pair {
  from: number;
  to: number;
  oldOffset: number;
  newOffset: number;
  length: number;
}

/** Compares the bytes of pending pairs: each archive read in offset order, nearby tiles in one read. */
class ByteCompare {
  private pending: Pair[] = [];
  private pendingBytes = 0;
  private readonly same = new Map<string, boolean>();
  read = 0;

  constructor(
    private readonly oldSrc: Source,
    private readonly oldEtag: string | undefined,
    private readonly newSrc: Source,
    private readonly newEtag: string | undefined,
    private readonly changed: Changed,
  ) {}

  async add(p: Pair): Promise<void> {
    const known = this.same.get(`${p.oldOffset}:${p.newOffset}`);
    if (known !== undefined) {
      if (!known) this.changed.addRange(p.from, p.to);
      return;
    }
    this.pending.push(p);
    this.pendingBytes += p.length;
    if (this.pendingBytes >= SPAN_BYTES) await this.flush();
  }

  async flush(): Promise<void> {
    if (!this.pending.length) return;
    const pairs = this.pending;
    this.pending = [];
    this.pendingBytes = 0;
    const oldBytes = await this.readAll(this.oldSrc, this.oldEtag, pairs.map((p) => p.oldOffset), pairs);
    const newBytes = await this.readAll(this.newSrc, this.newEtag, pairs.map((p) => p.newOffset), pairs);
    for (let i = 0; i < pairs.length; i++) {
      const p = pairs[i];
      const equal = Buffer.compare(oldBytes[i], newBytes[i]) === 0;
      if (this.same.size >= PAIRS_REMEMBERED) this.same.clear();
      this.same.set(`${p.oldOffset}:${p.newOffset}`, equal);
      if (!equal) this.changed.addRange(p.from, p.to);
    }
  }

  /** The bytes of each pair at `offsets`, read in ascending offset order with neighbours merged into one read. */
  private async readAll(src: Source, etag: string | undefined, offsets: number[], pairs: Pair[]): Promise<Uint8Array[]> {
    const order = offsets.map((_, i) => i).sort((a, b) => offsets[a] - offsets[b]);
    const out = new Array<Uint8Array>(pairs.length);
    let i = 0;
    while (i < order.length) {
      const start = offsets[order[i]];
      let end = start + pairs[order[i]].length;
      let j = i + 1;
      while (j < order.length && offsets[order[j]] <= end + GAP_BYTES && offsets[order[j]] + pairs[order[j]].length - start <= SPAN_BYTES) {
        end = Math.max(end, offsets[order[j]] + pairs[order[j]].length);
        j++;
      }
      const span = await bytes(src, start, end - start, etag);
      this.read += span.length;
      for (let k = i; k < j; k++) {
        const at = offsets[order[k]] - start;
        out[order[k]] = span.subarray(at, at + pairs[order[k]].length);
      }
      i = j;
    }
    return out;
  }
}

/**
 * The tiles that differ between two archives: present in one only, or stored with different bytes. Archives
 * whose tiles are of another type or compression differ everywhere: the whole source.
 */
export async function diffPmtiles(oldSrc: Source, newSrc: Source, options: DiffOptions): Promise<ArchiveDiff> {
  const [oldHeader, newHeader] = await Promise.all([readHeader(oldSrc), readHeader(newSrc)]);
  if (oldHeader.tileType !== newHeader.tileType) return { kind: 'whole', reason: 'the tile type changed' };
  if (oldHeader.tileCompression !== newHeader.tileCompression) return { kind: 'whole', reason: 'the tile compression changed' };
  const changed = new Changed(options.maxTiles);
  const compare = new ByteCompare(oldSrc, oldHeader.etag, newSrc, newHeader.etag, changed);
  const olds = tileEntries(oldSrc, oldHeader);
  const news = tileEntries(newSrc, newHeader);
  const yieldEvery = options.yieldEvery ?? 4096;
  let steps = 0;
  try {
    let a = (await olds.next()).value as DirEntry | undefined;
    let b = (await news.next()).value as DirEntry | undefined;
    // `aFrom`/`bFrom`: the first id of the current entry not yet judged (a run is consumed piece by piece).
    let aFrom = a?.id ?? 0;
    let bFrom = b?.id ?? 0;
    while (a || b) {
      if (++steps % yieldEvery === 0) await new Promise((r) => setImmediate(r));
      const aTo = a ? a.id + a.run : Infinity;
      const bTo = b ? b.id + b.run : Infinity;
      if (!b || (a && aTo <= bFrom)) {
        // Old tiles before anything the new archive has here: removed.
        changed.addRange(aFrom, aTo);
        a = (await olds.next()).value as DirEntry | undefined;
        aFrom = a?.id ?? 0;
        continue;
      }
      if (!a || bTo <= aFrom) {
        changed.addRange(bFrom, bTo);
        b = (await news.next()).value as DirEntry | undefined;
        bFrom = b?.id ?? 0;
        continue;
      }
      // Overlapping ranges: the part before the overlap is in one archive only.
      if (aFrom < bFrom) {
        changed.addRange(aFrom, bFrom);
        aFrom = bFrom;
      } else if (bFrom < aFrom) {
        changed.addRange(bFrom, aFrom);
        bFrom = aFrom;
      }
      const to = Math.min(aTo, bTo);
      if (a.length !== b.length) changed.addRange(aFrom, to);
      else await compare.add({ from: aFrom, to, oldOffset: a.offset, newOffset: b.offset, length: a.length });
      aFrom = bFrom = to;
      if (aFrom >= aTo) {
        a = (await olds.next()).value as DirEntry | undefined;
        aFrom = a?.id ?? 0;
      }
      if (bFrom >= bTo) {
        b = (await news.next()).value as DirEntry | undefined;
        bFrom = b?.id ?? 0;
      }
    }
    await compare.flush();
  } catch (err) {
    if (err instanceof TooMany) return { kind: 'whole', reason: `more than ${options.maxTiles} tiles changed` };
    throw err;
  }
  return { kind: 'tiles', tiles: changed.sorted(), read: compare.read };
}
