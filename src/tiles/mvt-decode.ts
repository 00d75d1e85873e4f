// Decodes Mapbox Vector Tile (MVT 2.1) protobuf bytes into the shared vector model, on top of pbf's reader.
// Why not @mapbox/vector-tile: it reads 64-bit ids and integers as doubles (OpenMapTiles tiles carry OSM ids
// stored as uint64 two's complement, which it would change), and it allocates a Point per vertex.
import { PbfReader } from 'pbf';
import { DEFAULT_EXTENT, type GeomType, type PropValue, type TileFeature, type TileLayer, type VectorTileData } from './vector-model.js';

const TWO_POW_53 = 2n ** 53n;

/** Reads a varint as an unsigned 64-bit integer: a number when it is exact as one, else a bigint. */
function readUint64(pbf: PbfReader): number | bigint {
  const buf = pbf.buf;
  let pos = pbf.pos;
  let b = buf[pos++];
  let n = b & 0x7f;
  let shift = 7;
  // Up to 7 bytes (49 bits) a double is exact; most ids and values end here.
  while (b >= 0x80 && shift < 49) {
    b = buf[pos++];
    n += (b & 0x7f) * 2 ** shift;
    shift += 7;
  }
  if (b < 0x80) {
    pbf.pos = pos;
    return n;
  }
  let big = BigInt(n);
  while (b >= 0x80) {
    if (pos >= buf.length || shift > 63) throw new Error('malformed varint');
    b = buf[pos++];
    big |= BigInt(b & 0x7f) << BigInt(shift);
    shift += 7;
  }
  pbf.pos = pos;
  big = BigInt.asUintN(64, big);
  return big < TWO_POW_53 ? Number(big) : big;
}

const exact = (v: bigint): number | bigint => (v < TWO_POW_53 && v > -TWO_POW_53 ? Number(v) : v);

function readValue(pbf: PbfReader): PropValue | undefined {
  const end = pbf.readVarint() + pbf.pos;
  let value: PropValue | undefined;
  while (pbf.pos < end) {
    const tag = pbf.readVarint();
    switch (tag >> 3) {
      case 1:
        value = pbf.readString();
        break;
      case 2:
        value = pbf.readFloat();
        break;
      case 3:
        value = pbf.readDouble();
        break;
      case 4: {
        // int64: negative values are ten-byte two's complement varints.
        const u = readUint64(pbf);
        value = typeof u === 'number' ? u : exact(BigInt.asIntN(64, u));
        break;
      }
      case 5:
        value = readUint64(pbf);
        break;
      case 6: {
        const u = readUint64(pbf);
        value = typeof u === 'number' ? (u % 2 === 1 ? -(u + 1) / 2 : u / 2) : exact((u >> 1n) ^ -(u & 1n));
        break;
      }
      case 7:
        value = pbf.readVarint() !== 0;
        break;
      default:
        pbf.skip(tag);
    }
  }
  pbf.pos = end;
  return value;
}

function readGeometry(pbf: PbfReader, type: GeomType): number[][] {
  const end = pbf.readVarint() + pbf.pos;
  const parts: number[][] = [];
  let part: number[] | undefined;
  let x = 0;
  let y = 0;
  while (pbf.pos < end) {
    const cmdLen = pbf.readVarint();
    const cmd = cmdLen & 7;
    const count = cmdLen >> 3;
    if (cmd === 1 || cmd === 2) {
      for (let i = 0; i < count; i++) {
        x += pbf.readSVarint();
        y += pbf.readSVarint();
        // Every MoveTo starts a new part; for points each point is its own part.
        if (cmd === 1 || !part) {
          part = [];
          parts.push(part);
        }
        part.push(x, y);
      }
    } else if (cmd === 7) {
      // ClosePath: rings are kept open in the model.
      if (type !== 3) throw new Error('ClosePath in a non-polygon geometry');
    } else throw new Error(`unknown geometry command ${cmd}`);
  }
  pbf.pos = end;
  return parts;
}

function readFeature(pbf: PbfReader, end: number, keys: string[], values: (PropValue | undefined)[]): TileFeature {
  const feature: TileFeature = { id: undefined, type: 1, geometry: [], properties: Object.create(null) as Record<string, PropValue> };
  let geometryAt = -1;
  while (pbf.pos < end) {
    const tag = pbf.readVarint();
    switch (tag >> 3) {
      case 1:
        feature.id = readUint64(pbf);
        break;
      case 2: {
        const tagsEnd = pbf.readVarint() + pbf.pos;
        while (pbf.pos < tagsEnd) {
          const key = keys[pbf.readVarint()];
          const value = values[pbf.readVarint()];
          if (key !== undefined && value !== undefined) feature.properties[key] = value;
        }
        break;
      }
      case 3: {
        const t = pbf.readVarint();
        if (t < 1 || t > 3) throw new Error(`unsupported geometry type ${t}`);
        feature.type = t as GeomType;
        break;
      }
      case 4:
        geometryAt = pbf.pos;
        pbf.skip(tag);
        break;
      default:
        pbf.skip(tag);
    }
  }
  if (geometryAt >= 0) {
    // The type may follow the geometry in the message; read the geometry once the type is known.
    pbf.pos = geometryAt;
    feature.geometry = readGeometry(pbf, feature.type);
    pbf.pos = end;
  }
  return feature;
}

function readLayer(pbf: PbfReader, end: number): TileLayer {
  const layer: TileLayer = { name: '', extent: DEFAULT_EXTENT, version: 1, features: [] };
  const keys: string[] = [];
  const values: (PropValue | undefined)[] = [];
  const featureAt: number[] = [];
  // Keys and values usually come after the features: note where features are, decode them afterwards.
  while (pbf.pos < end) {
    const tag = pbf.readVarint();
    switch (tag >> 3) {
      case 15:
        layer.version = pbf.readVarint();
        break;
      case 1:
        layer.name = pbf.readString();
        break;
      case 2:
        featureAt.push(pbf.pos);
        pbf.skip(tag);
        break;
      case 3:
        keys.push(pbf.readString());
        break;
      case 4:
        values.push(readValue(pbf));
        break;
      case 5:
        layer.extent = pbf.readVarint();
        break;
      default:
        pbf.skip(tag);
    }
  }
  for (const at of featureAt) {
    pbf.pos = at;
    const len = pbf.readVarint();
    layer.features.push(readFeature(pbf, pbf.pos + len, keys, values));
  }
  pbf.pos = end;
  return layer;
}

/** Decodes uncompressed MVT bytes. Throws on bytes that are not a well-formed tile. */
export function decodeMvt(bytes: Uint8Array): VectorTileData {
  const pbf = new PbfReader(bytes);
  const layers: VectorTileData = [];
  while (pbf.pos < pbf.length) {
    const tag = pbf.readVarint();
    if (tag >> 3 === 3 && (tag & 7) === 2) {
      const len = pbf.readVarint();
      const end = pbf.pos + len;
      if (end > pbf.length) throw new Error('truncated layer');
      layers.push(readLayer(pbf, end));
    } else pbf.skip(tag);
  }
  if (pbf.pos !== pbf.length) throw new Error('trailing bytes after the last layer');
  return layers;
}
