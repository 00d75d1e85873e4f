// Stream-level building blocks of the compact MLT encoder: the stream header, present (nullability) streams and
// the choice of integer encoding. Every candidate is encoded with @maplibre/mlt's own stream encoders
// (`encodeSignedInt32Stream` / `encodeUnsignedInt32Stream` apply the logical technique named in the metadata,
// then the physical one); this module only decides which candidates to try and keeps the smallest.
// The package has no "exports" map, so its encoders are reached by their paths under dist/.
import { encodeSignedInt32Stream, encodeUnsignedInt32Stream } from '@maplibre/mlt/dist/encoding/integerStreamEncoder.js';
import { buildEncodedStream } from '@maplibre/mlt/dist/decoding/decodingTestUtils.js';
import { encodeBooleanRle } from '@maplibre/mlt/dist/encoding/encodingUtils.js';
import { encodeVarintInt32 } from '@maplibre/mlt/dist/encoding/integerEncodingUtils.js';
import { LogicalLevelTechnique } from '@maplibre/mlt/dist/metadata/tile/logicalLevelTechnique.js';
import { PhysicalLevelTechnique } from '@maplibre/mlt/dist/metadata/tile/physicalLevelTechnique.js';
import { PhysicalStreamType } from '@maplibre/mlt/dist/metadata/tile/physicalStreamType.js';
import type { LogicalStreamType } from '@maplibre/mlt/dist/metadata/tile/logicalStreamType.js';
import type { RleEncodedStreamMetadata, StreamMetadata } from '@maplibre/mlt/dist/metadata/tile/streamMetadataDecoder.js';

export { LogicalLevelTechnique, PhysicalLevelTechnique, PhysicalStreamType };

/** Logical integer encodings a stream may be written with. */
export type IntTechnique = 'none' | 'delta' | 'rle' | 'delta-rle' | 'componentwise-delta';

/** What a stream is (its physical type and logical subtype), independent of how its values are encoded. */
export interface StreamKind {
  readonly physical: PhysicalStreamType;
  readonly logical: LogicalStreamType;
}

/**
 * Which encodings the decoder accepts for a stream. Length streams, for instance, are turned into offsets by a
 * routine that reads DELTA as delta-of-delta on one path and plain delta on the other, so they are limited to
 * NONE and RLE; FastPFOR is never combined with delta-RLE because the decoder peeks at such streams as aligned
 * 32-bit words to spot sequences.
 */
export interface IntOptions {
  readonly techniques: readonly IntTechnique[];
  /** Whether FastPFOR may be tried. Below a few hundred values its block headers cost more than varints save. */
  readonly fastPfor?: boolean;
}

const FASTPFOR_MIN_VALUES = 256;

export const LENGTH_OPTIONS: IntOptions = { techniques: ['none', 'rle'], fastPfor: true };
export const VALUE_OPTIONS: IntOptions = { techniques: ['none', 'delta', 'rle', 'delta-rle'], fastPfor: true };

const LOGICAL: Record<IntTechnique, [LogicalLevelTechnique, LogicalLevelTechnique]> = {
  none: [LogicalLevelTechnique.NONE, LogicalLevelTechnique.NONE],
  delta: [LogicalLevelTechnique.DELTA, LogicalLevelTechnique.NONE],
  rle: [LogicalLevelTechnique.RLE, LogicalLevelTechnique.NONE],
  'delta-rle': [LogicalLevelTechnique.DELTA, LogicalLevelTechnique.RLE],
  'componentwise-delta': [LogicalLevelTechnique.COMPONENTWISE_DELTA, LogicalLevelTechnique.NONE],
};

/** Runs of equal values (after taking deltas when `delta`), as the package's RLE encoders will count them. */
export function countRuns(values: ArrayLike<number>, delta: boolean): number {
  if (values.length === 0) return 0;
  let runs = 1;
  let prev = values[0];
  let prevValue = values[0];
  for (let i = 1; i < values.length; i++) {
    // Deltas wrap to 32 bits, as the package computes them.
    const v = delta ? (values[i] - prevValue) | 0 : values[i];
    prevValue = values[i];
    if (v !== prev) {
      runs++;
      prev = v;
    }
  }
  return runs;
}

function metadataFor(kind: StreamKind, technique: IntTechnique, physical: PhysicalLevelTechnique, count: number, runs: number): StreamMetadata {
  const [l1, l2] = LOGICAL[technique];
  const base = {
    physicalStreamType: kind.physical,
    logicalStreamType: kind.logical,
    logicalLevelTechnique1: l1,
    logicalLevelTechnique2: l2,
    physicalLevelTechnique: physical,
    numValues: count,
    byteLength: 0,
    decompressedCount: count,
  };
  if (technique !== 'rle' && technique !== 'delta-rle') return base;
  const rle: RleEncodedStreamMetadata = { ...base, numValues: runs * 2, runs, numRleValues: count };
  return rle;
}

/**
 * The smallest encoding of `values` among the allowed candidates, as a complete stream (header and data).
 * `signed` selects zigzag coding of plain and RLE values (deltas are always zigzagged).
 */
export function encodeIntStream(kind: StreamKind, values: Int32Array | Uint32Array, signed: boolean, options: IntOptions): Uint8Array {
  const n = values.length;
  const physicals = options.fastPfor && n >= FASTPFOR_MIN_VALUES ? [PhysicalLevelTechnique.VARINT, PhysicalLevelTechnique.FAST_PFOR] : [PhysicalLevelTechnique.VARINT];
  let best: Uint8Array | undefined;
  for (const technique of options.techniques) {
    let runs = 0;
    if (technique === 'rle' || technique === 'delta-rle') {
      if (n === 0) continue;
      runs = countRuns(values, technique === 'delta-rle');
      // Each run costs a length and a value: RLE only pays when runs are long on average.
      if (runs * 2 > n && best) continue;
    }
    for (const physical of physicals) {
      if (physical === PhysicalLevelTechnique.FAST_PFOR && technique === 'delta-rle') continue;
      const metadata = metadataFor(kind, technique, physical, n, runs);
      const data = signed
        ? encodeSignedInt32Stream(values as Int32Array, metadata)
        : encodeUnsignedInt32Stream(values as Uint32Array, metadata);
      const stream = buildEncodedStream(metadata, data);
      if (!best || stream.length < best.length) best = stream;
    }
  }
  if (!best) throw new Error('no integer encoding candidate');
  return best;
}

/** A stream of raw bytes (string data, symbol tables). */
export function byteStream(kind: StreamKind, bytes: Uint8Array, count: number): Uint8Array {
  const metadata: StreamMetadata = {
    physicalStreamType: kind.physical,
    logicalStreamType: kind.logical,
    logicalLevelTechnique1: LogicalLevelTechnique.NONE,
    logicalLevelTechnique2: LogicalLevelTechnique.NONE,
    physicalLevelTechnique: PhysicalLevelTechnique.NONE,
    numValues: count,
    byteLength: bytes.length,
    decompressedCount: count,
  };
  return buildEncodedStream(metadata, bytes);
}

/** The PRESENT stream of a nullable column: one bit per feature, byte-RLE coded as the format requires. */
export function presentStream(present: readonly boolean[]): Uint8Array {
  const metadata: StreamMetadata = {
    physicalStreamType: PhysicalStreamType.PRESENT,
    logicalStreamType: {},
    logicalLevelTechnique1: LogicalLevelTechnique.NONE,
    logicalLevelTechnique2: LogicalLevelTechnique.NONE,
    physicalLevelTechnique: PhysicalLevelTechnique.VARINT,
    numValues: present.length,
    byteLength: 0,
    decompressedCount: present.length,
  };
  return buildEncodedStream(metadata, encodeBooleanRle(present as boolean[]));
}

export function varint(value: number): Uint8Array {
  return encodeVarintInt32(Uint32Array.of(value));
}

export function concat(parts: readonly Uint8Array[]): Uint8Array {
  let total = 0;
  for (const p of parts) total += p.length;
  const out = new Uint8Array(total);
  let at = 0;
  for (const p of parts) {
    out.set(p, at);
    at += p.length;
  }
  return out;
}
