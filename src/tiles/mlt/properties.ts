// Property columns other than strings. The column type comes from the values (as the package's own encoder infers
// it, with MVT's freedom to mix types in one key handled by the nested "map" column). 32-bit integers go through
// the integer stream chooser; doubles that survive a round trip through float32 are written as floats (half the
// bytes, same values back); 64-bit integers, booleans and nested columns use the package's column encoders.
import { ColumnTypeCode } from '@maplibre/mlt/dist/metadata/tileset/typeMap.js';
import { ScalarType } from '@maplibre/mlt/dist/metadata/tileset/tilesetMetadata.js';
import { DictionaryType } from '@maplibre/mlt/dist/metadata/tile/dictionaryType.js';
import { encodeChildCount, encodeFieldName, encodeTypeCode, scalarTypeCode } from '@maplibre/mlt/dist/encoding/embeddedTilesetMetadataEncoder.js';
import { encodeMapPropertyColumn } from '@maplibre/mlt/dist/encoding/mapPropertyEncoder.js';
import {
  encodeBooleanColumn,
  encodeBooleanNullableColumn,
  encodeDoubleColumn,
  encodeDoubleNullableColumn,
  encodeFloatColumn,
  encodeFloatNullableColumn,
  encodeInt64DeltaColumn,
  encodeInt64NoneColumn,
  encodeInt64NullableColumn,
  encodeUint64Column,
  encodeUint64NullableColumn,
} from '@maplibre/mlt/dist/encoding/propertyEncoder.js';
import type { PropValue, TileFeature } from '../vector-model.js';
import { stringColumn } from './strings.js';
import { concat, encodeIntStream, PhysicalStreamType, presentStream, VALUE_OPTIONS, varint, type StreamKind } from './streams.js';

const INT32_MIN = -(2 ** 31);
const INT32_MAX = 2 ** 31 - 1;
const INT64_MAX = 2n ** 63n - 1n;

export type ColumnType = 'string' | 'boolean' | 'int32' | 'int64' | 'uint64' | 'float' | 'double' | 'map';

const DATA_KIND: StreamKind = { physical: PhysicalStreamType.DATA, logical: { dictionaryType: DictionaryType.NONE } };

/** The column type that holds every value of the column unchanged. */
export function columnType(values: readonly (PropValue | null)[]): ColumnType {
  let kinds = 0;
  let bigint = false;
  let huge = false;
  let negative = false;
  let fraction = false;
  let wide = false;
  let single = true;
  for (const v of values) {
    if (v === null) continue;
    switch (typeof v) {
      case 'string':
        kinds |= 1;
        break;
      case 'boolean':
        kinds |= 2;
        break;
      case 'bigint':
        kinds |= 4;
        bigint = true;
        if (v > INT64_MAX) huge = true;
        if (v < 0n) negative = true;
        break;
      case 'number':
        kinds |= 4;
        if (v < 0) negative = true;
        if (!Number.isSafeInteger(v)) {
          fraction = true;
          if (Math.fround(v) !== v) single = false;
        } else if (v < INT32_MIN || v > INT32_MAX) wide = true;
        break;
    }
  }
  if (kinds === 0 || kinds === 1) return 'string';
  if (kinds === 2) return 'boolean';
  if (kinds !== 4) return 'map';
  if (fraction) return bigint ? 'map' : single ? 'float' : 'double';
  if (huge) return negative ? 'map' : 'uint64';
  return bigint || wide ? 'int64' : 'int32';
}

export interface PropertyColumn {
  metadata: Uint8Array;
  data: Uint8Array;
}

function int32Column(values: readonly (PropValue | null)[], nullable: boolean): Uint8Array {
  const present: number[] = [];
  for (const v of values) if (v !== null) present.push(Number(v));
  const data = encodeIntStream(DATA_KIND, Int32Array.from(present), true, VALUE_OPTIONS);
  return nullable ? concat([presentStream(values.map((v) => v !== null)), data]) : data;
}

function int64Column(values: readonly (PropValue | null)[], nullable: boolean, unsigned: boolean): Uint8Array {
  const bigints = values.map((v) => (v === null ? null : BigInt(v)));
  if (unsigned) return nullable ? encodeUint64NullableColumn(bigints) : encodeUint64Column(BigUint64Array.from(bigints as bigint[]));
  if (nullable) return encodeInt64NullableColumn(bigints);
  const all = BigInt64Array.from(bigints as bigint[]);
  const plain = encodeInt64NoneColumn(all);
  if (all.length < 2) return plain;
  const delta = encodeInt64DeltaColumn(all);
  return delta.length < plain.length ? delta : plain;
}

const SCALAR: Record<Exclude<ColumnType, 'map'>, number> = {
  string: ScalarType.STRING,
  boolean: ScalarType.BOOLEAN,
  int32: ScalarType.INT_32,
  int64: ScalarType.INT_64,
  uint64: ScalarType.UINT_64,
  float: ScalarType.FLOAT,
  double: ScalarType.DOUBLE,
};

/** One property column of a layer: its metadata entry and its data. */
export function encodePropertyColumn(name: string, features: readonly TileFeature[]): PropertyColumn {
  const values = features.map((f) => (Object.hasOwn(f.properties, name) ? f.properties[name] : null));
  const type = columnType(values);
  if (type === 'map') {
    const { data, numStreams } = encodeMapPropertyColumn([values], { singlePrecisionFloats: false });
    return { metadata: concat([encodeTypeCode(ColumnTypeCode.MAP), encodeFieldName(name), encodeChildCount(0)]), data: concat([varint(numStreams), data]) };
  }
  const nullable = values.some((v) => v === null);
  const metadata = concat([encodeTypeCode(scalarTypeCode(SCALAR[type], nullable)), encodeFieldName(name)]);
  let data: Uint8Array;
  switch (type) {
    case 'string':
      data = stringColumn(values.map((v) => (v === null ? null : String(v))), nullable).data;
      break;
    case 'boolean': {
      const booleans = values.map((v) => (v === null ? null : Boolean(v)));
      data = nullable ? encodeBooleanNullableColumn(booleans) : encodeBooleanColumn(booleans as boolean[]);
      break;
    }
    case 'int32':
      data = int32Column(values, nullable);
      break;
    case 'int64':
    case 'uint64':
      data = int64Column(values, nullable, type === 'uint64');
      break;
    case 'float': {
      const numbers = values.map((v) => (v === null ? null : Number(v)));
      data = nullable ? encodeFloatNullableColumn(numbers) : encodeFloatColumn(Float32Array.from(numbers as number[]));
      break;
    }
    case 'double': {
      const numbers = values.map((v) => (v === null ? null : Number(v)));
      data = nullable ? encodeDoubleNullableColumn(numbers) : encodeDoubleColumn(Float64Array.from(numbers as number[]));
      break;
    }
  }
  return { metadata, data };
}
