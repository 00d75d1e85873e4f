// Encodes the shared vector model as MVT 2.1 protobuf bytes with pbf's writer. Keys and values are
// deduplicated per layer; 64-bit ids and integers are written exactly (bigints included), which
// @maplibre/vt-pbf cannot do (it takes ids and values as doubles).
import { PbfWriter } from 'pbf';
import type { PropValue, TileFeature, TileLayer, VectorTileData } from './vector-model.js';

const TWO_POW_64 = 2n ** 64n;

/** Writes a varint of an unsigned 64-bit bigint (pbf's own varint writer takes doubles only). */
function writeBigVarint(pbf: PbfWriter, value: bigint): void {
  let v = value < 0n ? value + TWO_POW_64 : value;
  pbf.realloc(10);
  while (v >= 0x80n) {
    pbf.buf[pbf.pos++] = Number(v & 0x7fn) | 0x80;
    v >>= 7n;
  }
  pbf.buf[pbf.pos++] = Number(v);
}

function writeValue(value: PropValue, pbf: PbfWriter): void {
  switch (typeof value) {
    case 'string':
      pbf.writeStringField(1, value);
      return;
    case 'boolean':
      pbf.writeBooleanField(7, value);
      return;
    case 'bigint':
      // Negative values go out as sint64 (zigzag), others as uint64: the shortest exact forms.
      pbf.writeTag(value < 0n ? 6 : 5, 0);
      writeBigVarint(pbf, value < 0n ? (-value << 1n) - 1n : value);
      return;
    case 'number':
      if (Number.isSafeInteger(value)) {
        if (value >= 0) pbf.writeVarintField(5, value);
        // pbf's zigzag doubles the value, which stops being exact below -2^52.
        else if (value >= -(2 ** 52)) pbf.writeSVarintField(6, value);
        else {
          pbf.writeTag(6, 0);
          writeBigVarint(pbf, (-BigInt(value) << 1n) - 1n);
        }
      } else if (Math.fround(value) === value) pbf.writeFloatField(2, value);
      else pbf.writeDoubleField(3, value);
  }
}

const command = (cmd: number, count: number) => (count << 3) | cmd;
const zigzag = (n: number) => (n << 1) ^ (n >> 31);

/** Geometry commands; rings are open in the model, so every ring ends with ClosePath. */
function writeGeometry(feature: TileFeature, pbf: PbfWriter): void {
  let x = 0;
  let y = 0;
  const parts = feature.geometry;
  if (feature.type === 1) {
    // All points of a feature under one MoveTo, as the specification recommends for multi-points.
    let count = 0;
    for (const p of parts) count += p.length >> 1;
    if (count === 0) return;
    pbf.writeVarint(command(1, count));
    for (const p of parts) {
      for (let i = 0; i < p.length; i += 2) {
        pbf.writeVarint(zigzag(p[i] - x));
        pbf.writeVarint(zigzag(p[i + 1] - y));
        x = p[i];
        y = p[i + 1];
      }
    }
    return;
  }
  for (const p of parts) {
    const n = p.length >> 1;
    if (n === 0) continue;
    pbf.writeVarint(command(1, 1));
    pbf.writeVarint(zigzag(p[0] - x));
    pbf.writeVarint(zigzag(p[1] - y));
    x = p[0];
    y = p[1];
    if (n > 1) {
      pbf.writeVarint(command(2, n - 1));
      for (let i = 2; i < p.length; i += 2) {
        pbf.writeVarint(zigzag(p[i] - x));
        pbf.writeVarint(zigzag(p[i + 1] - y));
        x = p[i];
        y = p[i + 1];
      }
    }
    if (feature.type === 3) pbf.writeVarint(command(7, 1));
  }
}

interface LayerTables {
  keys: string[];
  keyIndex: Map<string, number>;
  values: PropValue[];
  /** Map keys compare by SameValueZero: 1, "1", 1n and true stay distinct entries, as MVT values must. */
  valueIndex: Map<PropValue, number>;
}

function valueSlot(t: LayerTables, value: PropValue): number {
  let i = t.valueIndex.get(value);
  if (i === undefined) {
    i = t.values.length;
    t.values.push(value);
    t.valueIndex.set(value, i);
  }
  return i;
}

function writeFeature(ctx: { feature: TileFeature; tables: LayerTables }, pbf: PbfWriter): void {
  const { feature, tables } = ctx;
  if (feature.id !== undefined) {
    if (typeof feature.id === 'bigint') {
      pbf.writeTag(1, 0);
      writeBigVarint(pbf, feature.id);
    } else pbf.writeVarintField(1, feature.id);
  }
  const tags: number[] = [];
  for (const key in feature.properties) {
    const value = feature.properties[key];
    if (value === undefined || value === null) continue;
    let k = tables.keyIndex.get(key);
    if (k === undefined) {
      k = tables.keys.length;
      tables.keys.push(key);
      tables.keyIndex.set(key, k);
    }
    tags.push(k, valueSlot(tables, value));
  }
  if (tags.length) pbf.writePackedVarint(2, tags);
  pbf.writeVarintField(3, feature.type);
  pbf.writeMessage(4, writeGeometry, feature);
}

function writeLayer(layer: TileLayer, pbf: PbfWriter): void {
  pbf.writeVarintField(15, 2);
  pbf.writeStringField(1, layer.name);
  const tables: LayerTables = { keys: [], keyIndex: new Map(), values: [], valueIndex: new Map() };
  const ctx = { feature: undefined as unknown as TileFeature, tables };
  for (const feature of layer.features) {
    ctx.feature = feature;
    pbf.writeMessage(2, writeFeature, ctx);
  }
  for (const key of tables.keys) pbf.writeStringField(3, key);
  for (const value of tables.values) pbf.writeMessage(4, writeValue, value);
  pbf.writeVarintField(5, layer.extent);
}

/** Encodes layers as uncompressed MVT bytes. Layers without features are kept (they carry a name). */
export function encodeMvt(tile: VectorTileData): Uint8Array {
  const pbf = new PbfWriter();
  for (const layer of tile) pbf.writeMessage(3, writeLayer, layer);
  return pbf.finish();
}
