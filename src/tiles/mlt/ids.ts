// The id column. Ids that fit 32 bits go through the integer stream chooser (OpenMapTiles ids mostly climb
// feature by feature, so delta and delta-RLE usually win). Wider ids are 64-bit: plain or delta-coded varints,
// whichever is smaller, both written by the package's 64-bit encoders. Features keep the source's order: the
// order of features in a layer is their drawing order, so sorting them by id would change the map.
import { ColumnTypeCode } from '@maplibre/mlt/dist/metadata/tileset/typeMap.js';
import { encodeInt64SignedDelta, encodeInt64UnsignedNone } from '@maplibre/mlt/dist/encoding/integerStreamEncoder.js';
import { encodeUint64sLE } from '@maplibre/mlt/dist/encoding/encodingUtils.js';
import { buildEncodedStream } from '@maplibre/mlt/dist/decoding/decodingTestUtils.js';
import { DictionaryType } from '@maplibre/mlt/dist/metadata/tile/dictionaryType.js';
import type { StreamMetadata } from '@maplibre/mlt/dist/metadata/tile/streamMetadataDecoder.js';
import type { TileFeature } from '../vector-model.js';
import { concat, encodeIntStream, LogicalLevelTechnique, PhysicalLevelTechnique, PhysicalStreamType, presentStream, VALUE_OPTIONS, type StreamKind } from './streams.js';

const UINT32_MAX = 2 ** 32 - 1;
const FLOAT_EXACT = 2n ** 52n;
const INT64_SIGN = 2n ** 63n;
const ID_KIND: StreamKind = { physical: PhysicalStreamType.DATA, logical: { dictionaryType: DictionaryType.NONE } };

export interface IdColumn {
  typeCode: number;
  data: Uint8Array;
}

function int64Stream(values: BigUint64Array): Uint8Array {
  const meta = (technique: LogicalLevelTechnique, physical = PhysicalLevelTechnique.VARINT): StreamMetadata => ({
    physicalStreamType: PhysicalStreamType.DATA,
    logicalStreamType: { dictionaryType: DictionaryType.NONE },
    logicalLevelTechnique1: technique,
    logicalLevelTechnique2: LogicalLevelTechnique.NONE,
    physicalLevelTechnique: physical,
    numValues: values.length,
    byteLength: 0,
    decompressedCount: values.length,
  });
  // The package's 64-bit encoders take signed arrays; unsigned ids keep their bits through the view, and wrapped
  // deltas decode back to the same bits.
  // Ids past 2^63 (MVT's unsigned form of negative ids) are written as fixed 8-byte words: decoders that read ids as
  // doubles (maplibre-gl's does) take such a varint for a negative number, but read the fixed form right. A varint
  // of that size takes 10 bytes anyway.
  if (values.some((v) => v >= INT64_SIGN)) return buildEncodedStream(meta(LogicalLevelTechnique.NONE, PhysicalLevelTechnique.NONE), encodeUint64sLE(values));
  const bits = new BigInt64Array(values.buffer, values.byteOffset, values.length);
  const plain = buildEncodedStream(meta(LogicalLevelTechnique.NONE), encodeInt64UnsignedNone(bits));
  // Decoders that read 64-bit ids as doubles (maplibre-gl's does) undo the deltas in floating point: that is exact
  // only while every id, and so every delta and its zigzag code, stays below 2^52.
  if (values.length < 2 || values.some((v) => v >= FLOAT_EXACT)) return plain;
  const delta = buildEncodedStream(meta(LogicalLevelTechnique.DELTA), encodeInt64SignedDelta(bits));
  return delta.length < plain.length ? delta : plain;
}

/** The id column of a layer, or undefined when no feature has an id. */
export function encodeIdColumn(features: readonly TileFeature[]): IdColumn | undefined {
  let present = 0;
  let wide = false;
  for (const f of features) {
    if (f.id === undefined) continue;
    present++;
    if (typeof f.id === 'bigint' ? f.id > BigInt(UINT32_MAX) : f.id > UINT32_MAX) wide = true;
  }
  if (present === 0) return undefined;
  const nullable = present < features.length;
  const parts: Uint8Array[] = [];
  if (nullable) parts.push(presentStream(features.map((f) => f.id !== undefined)));
  let typeCode = ColumnTypeCode.ID | (nullable ? ColumnTypeCode.ID_NULLABLE : 0);
  if (wide) {
    typeCode |= ColumnTypeCode.ID_LONG;
    const ids = new BigUint64Array(present);
    let i = 0;
    for (const f of features) if (f.id !== undefined) ids[i++] = BigInt(f.id);
    parts.push(int64Stream(ids));
  } else {
    const ids = new Uint32Array(present);
    let i = 0;
    for (const f of features) if (f.id !== undefined) ids[i++] = Number(f.id);
    parts.push(encodeIntStream(ID_KIND, ids, false, VALUE_OPTIONS));
  }
  return { typeCode, data: concat(parts) };
}
