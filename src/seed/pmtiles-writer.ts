// A PMTiles v3 writer (https://github.com/protomaps/PMTiles/blob/main/spec/v3/spec.md) for generated archives:
// tiles sorted by Hilbert tile id (clustered), identical contents stored once, consecutive repeats run-length
// encoded, directories varint-encoded in columns and gzip-compressed, leaf directories when the root would not
// fit in the first 16,384 bytes. The whole archive is built in memory: used for fixtures and bench data, and by
// `tileserver-ts seed` to turn its journal of seeded tiles into the finished archive.
import { createHash } from 'node:crypto';
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

/** Builds a complete archive. Tiles must have distinct coordinates and non-empty data. */
export function buildPmtiles(tiles: readonly PmtilesTileInput[], opts: PmtilesWriteOptions): Buffer {
  if (tiles.length === 0) throw new Error('PMTiles writer: an archive needs at least one tile');
  const sorted = tiles.map((t) => ({ id: zxyToTileId(t.z, t.x, t.y), tile: t })).sort((a, b) => a.id - b.id);

  const entries: PmtilesEntry[] = [];
  const parts: Uint8Array[] = [];
  const offsets = new Map<string, number>();
  let dataLength = 0;
  let minZoom = 255;
  let maxZoom = 0;
  for (let i = 0; i < sorted.length; i++) {
    const { id, tile } = sorted[i];
    if (i > 0 && sorted[i - 1].id === id) throw new Error(`PMTiles writer: tile ${tile.z}/${tile.x}/${tile.y} given twice`);
    if (tile.data.byteLength === 0) throw new Error(`PMTiles writer: tile ${tile.z}/${tile.x}/${tile.y} is empty`);
    minZoom = Math.min(minZoom, tile.z);
    maxZoom = Math.max(maxZoom, tile.z);
    const hash = createHash('sha256').update(tile.data).digest('hex');
    let offset = offsets.get(hash);
    if (offset === undefined) {
      offset = dataLength;
      offsets.set(hash, offset);
      parts.push(tile.data);
      dataLength += tile.data.byteLength;
    }
    const last = entries[entries.length - 1];
    if (last && last.offset === offset && last.tileId + last.runLength === id) last.runLength++;
    else entries.push({ tileId: id, offset, length: tile.data.byteLength, runLength: 1 });
  }

  const { root, leaves } = buildDirectories(entries, opts.leafSize ?? 4096, Math.min(ROOT_LIMIT, opts.maxRootBytes ?? ROOT_LIMIT));
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
  writeUint64(header, dataLength, 64);
  writeUint64(header, sorted.length, 72); // addressed tiles: the sum of run lengths
  writeUint64(header, entries.length, 80); // tile entries
  writeUint64(header, offsets.size, 88); // distinct contents
  header.writeUInt8(1, 96); // clustered: data in tile-id order
  header.writeUInt8(Compression.Gzip, 97); // internal compression
  header.writeUInt8(opts.tileCompression, 98);
  header.writeUInt8(opts.tileType, 99);
  header.writeUInt8(minZoom, 100);
  header.writeUInt8(maxZoom, 101);
  const [w, s, e, n] = opts.bounds;
  header.writeInt32LE(e7(w), 102);
  header.writeInt32LE(e7(s), 106);
  header.writeInt32LE(e7(e), 110);
  header.writeInt32LE(e7(n), 114);
  header.writeUInt8(opts.center[2], 118);
  header.writeInt32LE(e7(opts.center[0]), 119);
  header.writeInt32LE(e7(opts.center[1]), 123);

  return Buffer.concat([header, root, metadata, leaves, ...parts]);
}
