// One font of a font collection (.ttc / .otc) as a font file of its own. The canvas registers a file's first
// font only, so each other font of a collection is cut out and registered from memory: the collection's table
// directory of that font, its tables copied after a fresh directory whose offsets point at the copies. Tables
// shared by several fonts of the collection are simply copied into each. Checksums are carried over as they
// are (the tables' bytes do not change); rasterisers do not verify the head table's whole-file adjustment.

const TTC_TAG = 0x74746366; // 'ttcf'

/** Whether `bytes` are a font collection rather than a single font. */
export function isCollection(bytes: Uint8Array): boolean {
  return bytes.length >= 12 && new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength).getUint32(0) === TTC_TAG;
}

/** The font at `index` of a collection, as the bytes of a single-font file; throws when there is none. */
export function collectionFace(bytes: Uint8Array, index: number): Buffer {
  const src = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  if (!isCollection(bytes)) throw new Error('not a font collection');
  const count = src.getUint32(8);
  if (!Number.isInteger(index) || index < 0 || index >= count) throw new Error(`the collection has no font ${index}`);
  const dir = src.getUint32(12 + 4 * index);
  const numTables = src.getUint16(dir + 4);
  const headerLength = 12 + 16 * numTables;
  const tables: { tag: number; checksum: number; offset: number; length: number }[] = [];
  for (let i = 0; i < numTables; i++) {
    const r = dir + 12 + 16 * i;
    const offset = src.getUint32(r + 8);
    const length = src.getUint32(r + 12);
    if (offset + length > bytes.byteLength) throw new Error('a table of the collection lies past its end');
    tables.push({ tag: src.getUint32(r), checksum: src.getUint32(r + 4), offset, length });
  }
  // Tables start on 4-byte boundaries, as the format asks.
  const padded = (n: number) => (n + 3) & ~3;
  const out = Buffer.alloc(headerLength + tables.reduce((sum, t) => sum + padded(t.length), 0));
  // The directory header (sfnt version and the binary-search fields) is the collection's own for this font.
  Buffer.from(bytes.buffer, bytes.byteOffset + dir, 12).copy(out, 0);
  let at = headerLength;
  tables.forEach((t, i) => {
    const r = 12 + 16 * i;
    out.writeUInt32BE(t.tag, r);
    out.writeUInt32BE(t.checksum, r + 4);
    out.writeUInt32BE(at, r + 8);
    out.writeUInt32BE(t.length, r + 12);
    Buffer.from(bytes.buffer, bytes.byteOffset + t.offset, t.length).copy(out, at);
    at += padded(t.length);
  });
  return out;
}
