// A PMTiles v3 writer (https://github.com/protomaps/PMTiles/blob/main/spec/v3/spec.md) for generated archives:
// tiles sorted by Hilbert tile id (clustered), identical contents stored once, consecutive repeats run-length
// encoded, directories varint-encoded in columns and gzip-compressed, leaf directories when the root would not
// fit in the first 16,384 bytes. buildPmtiles makes the whole archive in memory (fixtures, bench data);
// writePmtilesFile streams tiles given in tile-id order to a file, keeping only the directories in memory
// (`tileserver-ts seed` turns its journal of seeded tiles into the finished archive with it).
import { createHash } from 'node:crypto';
import { closeSync, openSync, readSync, rmSync, writeSync } from 'node:fs';
import { gzipSync } from 'node:zlib';
import { Compression, TileType, zxyToTileId } from 'pmtiles';

export interface PmtilesTileInput {
  z: number;
  x: number;
  y: number;
  /** Tile bytes exactly as stored (already compressed with `tileCompression`). */
  data: Uint8Array;
}

export interface PmtilesWriteOptions {
  tileType: TileType;
  tileCompression: Compression;
  /** West, south, east, north in degrees. */
  bounds: [number, number, number, number];
  /** Longitude, latitude, zoom. */
  center: [number, number, number];
  /** JSON metadata (vector_layers, name, attribution, ...). */
  metadata: Record<string, unknown>;
  /** First number of entries per leaf directory to try when the root alone does not fit (doubles until it does). */
  leafSize?: number;
  /** Largest header + root directory in bytes; the spec's limit unless a test wants leaves on a small archive. */
  maxRootBytes?: number;
}

export interface PmtilesEntry {
  tileId: number;
  offset: number;
  length: number;
  runLength: number;
}

export const HEADER_BYTES = 127;
const ROOT_LIMIT = 16_384;

/** Unsigned LEB128 varint of a non-negative safe integer (arithmetic, so values above 2^32 work too). */
function pushVarint(out: number[], value: number): void {
  let v = value;
  while (v >= 0x80) {
    out.push((v % 0x80) | 0x80);
    v = Math.floor(v / 0x80);
  }
  out.push(v);
}

/** Serializes a directory: entry count, then tile-id deltas, run lengths, lengths and offsets, each as varints. */
export function serializeDirectory(entries: readonly PmtilesEntry[]): Buffer {
  const out: number[] = [];
  pushVarint(out, entries.length);
  let lastId = 0;
  for (const e of entries) {
    pushVarint(out, e.tileId - lastId);
    lastId = e.tileId;
  }
  for (const e of entries) pushVarint(out, e.runLength);
  for (const e of entries) pushVarint(out, e.length);
  for (let i = 0; i < entries.length; i++) {
    const e = entries[i];
    const prev = entries[i - 1];
    // 0 means "right after the previous entry's bytes"; otherwise the offset plus one.
    pushVarint(out, i > 0 && e.offset === prev.offset + prev.length ? 0 : e.offset + 1);
  }
  return gzipSync(Uint8Array.from(out), { level: 9 });
}

interface Directories {
  root: Buffer;
  leaves: Buffer;
}

/** The root alone if it fits, else leaves of `leafSize` entries (doubling) under a root that fits. */
function buildDirectories(entries: readonly PmtilesEntry[], leafSize: number, maxRootBytes: number): Directories {
  const root = serializeDirectory(entries);
  if (HEADER_BYTES + root.length <= maxRootBytes) return { root, leaves: Buffer.alloc(0) };
  for (let size = leafSize; ; size *= 2) {
    const leafParts: Buffer[] = [];
    const rootEntries: PmtilesEntry[] = [];
    let offset = 0;
    for (let i = 0; i < entries.length; i += size) {
      const leaf = serializeDirectory(entries.slice(i, i + size));
      rootEntries.push({ tileId: entries[i].tileId, offset, length: leaf.length, runLength: 0 });
      leafParts.push(leaf);
      offset += leaf.length;
    }
    const candidate = serializeDirectory(rootEntries);
    if (HEADER_BYTES + candidate.length <= maxRootBytes) return { root: candidate, leaves: Buffer.concat(leafParts) };
    if (size >= entries.length) throw new Error('PMTiles writer: the root directory does not fit in the first 16 KiB');
  }
}

function writeUint64(buf: Buffer, value: number, at: number): void {
  buf.writeUInt32LE(value % 2 ** 32, at);
  buf.writeUInt32LE(Math.floor(value / 2 ** 32), at + 4);
}

const e7 = (deg: number) => Math.round(deg * 1e7);

/**
 * The layout of an archive as its tiles arrive in tile-id order: directory entries (identical contents stored
 * once, consecutive repeats as runs), the data section's length, the zoom range; then everything that precedes
 * the tile data in the file.
 */
class ArchiveLayout {
  readonly entries: PmtilesEntry[] = [];
  private readonly offsets = new Map<string, number>();
  private dataLength = 0;
  private minZoom = 255;
  private maxZoom = 0;
  private addressed = 0;
  private lastId = -1;

  /** Places a tile; answers its bytes when they are new (to be appended to the data section), else undefined. */
  add(id: number, tile: PmtilesTileInput): Uint8Array | undefined {
    if (id === this.lastId) throw new Error(`PMTiles writer: tile ${tile.z}/${tile.x}/${tile.y} given twice`);
    if (id < this.lastId) throw new Error(`PMTiles writer: tile ${tile.z}/${tile.x}/${tile.y} is out of tile-id order`);
    if (tile.data.byteLength === 0) throw new Error(`PMTiles writer: tile ${tile.z}/${tile.x}/${tile.y} is empty`);
    this.lastId = id;
    this.addressed++;
    this.minZoom = Math.min(this.minZoom, tile.z);
    this.maxZoom = Math.max(this.maxZoom, tile.z);
    const hash = createHash('sha256').update(tile.data).digest('hex');
    let offset = this.offsets.get(hash);
    let fresh: Uint8Array | undefined;
    if (offset === undefined) {
      offset = this.dataLength;
      this.offsets.set(hash, offset);
      this.dataLength += tile.data.byteLength;
      fresh = tile.data;
    }
    const last = this.entries[this.entries.length - 1];
    if (last && last.offset === offset && last.tileId + last.runLength === id) last.runLength++;
    else this.entries.push({ tileId: id, offset, length: tile.data.byteLength, runLength: 1 });
    return fresh;
  }

  /** Header, root directory, JSON metadata and leaf directories: the bytes before the tile data. */
  prefix(opts: PmtilesWriteOptions): Buffer {
    if (this.addressed === 0) throw new Error('PMTiles writer: an archive needs at least one tile');
    const { root, leaves } = buildDirectories(this.entries, opts.leafSize ?? 4096, Math.min(ROOT_LIMIT, opts.maxRootBytes ?? ROOT_LIMIT));
    const metadata = gzipSync(Buffer.from(JSON.stringify(opts.metadata)), { level: 9 });

    const rootOffset = HEADER_BYTES;
    const metadataOffset = rootOffset + root.length;
    const leavesOffset = metadataOffset + metadata.length;
    const dataOffset = leavesOffset + leaves.length;

    const header = Buffer.alloc(HEADER_BYTES);
    header.write('PMTiles', 0, 'latin1');
    header.writeUInt8(3, 7);
    writeUint64(header, rootOffset, 8);
    writeUint64(header, root.length, 16);
    writeUint64(header, metadataOffset, 24);
    writeUint64(header, metadata.length, 32);
    writeUint64(header, leavesOffset, 40);
    writeUint64(header, leaves.length, 48);
    writeUint64(header, dataOffset, 56);
    writeUint64(header, this.dataLength, 64);
    writeUint64(header, this.addressed, 72); // addressed tiles: the sum of run lengths
    writeUint64(header, this.entries.length, 80); // tile entries
    writeUint64(header, this.offsets.size, 88); // distinct contents
    header.writeUInt8(1, 96); // clustered: data in tile-id order
    header.writeUInt8(Compression.Gzip, 97); // internal compression
    header.writeUInt8(opts.tileCompression, 98);
    header.writeUInt8(opts.tileType, 99);
    header.writeUInt8(this.minZoom, 100);
    header.writeUInt8(this.maxZoom, 101);
    const [w, s, e, n] = opts.bounds;
    header.writeInt32LE(e7(w), 102);
    header.writeInt32LE(e7(s), 106);
    header.writeInt32LE(e7(e), 110);
    header.writeInt32LE(e7(n), 114);
    header.writeUInt8(opts.center[2], 118);
    header.writeInt32LE(e7(opts.center[0]), 119);
    header.writeInt32LE(e7(opts.center[1]), 123);
    return Buffer.concat([header, root, metadata, leaves]);
  }
}

/** Builds a complete archive in memory. Tiles must have distinct coordinates and non-empty data. */
export function buildPmtiles(tiles: readonly PmtilesTileInput[], opts: PmtilesWriteOptions): Buffer {
  if (tiles.length === 0) throw new Error('PMTiles writer: an archive needs at least one tile');
  const sorted = tiles.map((t) => ({ id: zxyToTileId(t.z, t.x, t.y), tile: t })).sort((a, b) => a.id - b.id);
  const layout = new ArchiveLayout();
  const parts: Uint8Array[] = [];
  for (const { id, tile } of sorted) {
    const fresh = layout.add(id, tile);
    if (fresh) parts.push(fresh);
  }
  return Buffer.concat([layout.prefix(opts), ...parts]);
}

/**
 * Writes an archive to `file` with only the directories in memory: tiles, given in tile-id order (`tileId`
 * ascending), go to a data file beside it as they come; the header and directories are written once all are
 * known, followed by the data file's bytes, and the data file is removed.
 */
export function writePmtilesFile(file: string, tiles: Iterable<PmtilesTileInput>, opts: PmtilesWriteOptions): void {
  const dataFile = `${file}.data`;
  const layout = new ArchiveLayout();
  const data = openSync(dataFile, 'w');
  try {
    for (const t of tiles) {
      const fresh = layout.add(zxyToTileId(t.z, t.x, t.y), t);
      if (fresh) writeSync(data, fresh);
    }
  } finally {
    closeSync(data);
  }
  const out = openSync(file, 'w');
  try {
    writeSync(out, layout.prefix(opts));
    const input = openSync(dataFile, 'r');
    try {
      const chunk = Buffer.allocUnsafe(1 << 20);
      for (let n; (n = readSync(input, chunk, 0, chunk.length, null)) > 0; ) writeSync(out, chunk, 0, n);
    } finally {
      closeSync(input);
    }
  } finally {
    closeSync(out);
    rmSync(dataFile, { force: true });
  }
}
