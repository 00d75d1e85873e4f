// MapLibre Tile (MLT) to and from the shared vector model. Tiles are written by the compact encoder in ./mlt/
// (per-stream choice of encodings, built from @maplibre/mlt's stream encoders) and read with `decodeTile`.
// `encodeMltPlain` keeps the package's `encodeTile`, the plainest encoding the format allows, as the baseline the
// transcode benchmark compares against. The plain encoder infers one physical type per property column; MVT allows a key to hold values
// of different types across features, so such columns are pinned to the nested (map) column type, which
// holds scalars of any type and gives them back unchanged.
import { decodeTile, encodeTile, type EncodeOptions, type FeatureGeometry, type FeatureInput, type Layer, type PropertyType } from '@maplibre/mlt';
import { encodeCompactMlt } from './mlt/layer.js';
import { classifyRings, type GeomType, type PropValue, type TileFeature, type TileLayer, type VectorTileData } from './vector-model.js';

const INT64_MAX = 2n ** 63n - 1n;
const TWO_POW_53 = 2n ** 53n;

type Position = [number, number];

function positions(flat: number[]): Position[] {
  const out: Position[] = new Array(flat.length >> 1);
  for (let i = 0; i < flat.length; i += 2) out[i >> 1] = [flat[i], flat[i + 1]];
  return out;
}

/** MVT parts become the GeoJSON-like nesting the encoder takes; an empty geometry becomes an empty multi-part. */
function toMltGeometry(f: TileFeature): FeatureGeometry {
  const parts = f.geometry;
  switch (f.type) {
    case 1:
      if (parts.length === 1 && parts[0].length === 2) return { type: 'Point', coordinates: [parts[0][0], parts[0][1]] };
      return { type: 'MultiPoint', coordinates: parts.flatMap(positions) };
    case 2:
      if (parts.length === 1) return { type: 'LineString', coordinates: positions(parts[0]) };
      return { type: 'MultiLineString', coordinates: parts.map(positions) };
    case 3: {
      const polygons = classifyRings(parts);
      if (polygons.length === 1) return { type: 'Polygon', coordinates: polygons[0].map(positions) };
      return { type: 'MultiPolygon', coordinates: polygons.map((p) => p.map(positions)) };
    }
  }
}

/**
 * Column types the encoder cannot infer: a column mixing value types goes nested ("map"); integer columns
 * holding bigints go to the 64-bit column that fits them. Homogeneous columns are left to inference.
 */
function pinnedTypes(features: readonly TileFeature[]): Record<string, PropertyType> {
  const kinds = new Map<string, { types: Set<string>; big: boolean; neg: boolean; huge: boolean; frac: boolean }>();
  for (const f of features) {
    for (const key in f.properties) {
      const v = f.properties[key];
      let k = kinds.get(key);
      if (!k) kinds.set(key, (k = { types: new Set(), big: false, neg: false, huge: false, frac: false }));
      const t = typeof v;
      k.types.add(t === 'bigint' ? 'number' : t);
      if (t === 'bigint') {
        k.big = true;
        if ((v as bigint) > INT64_MAX) k.huge = true;
      }
      if ((t === 'number' || t === 'bigint') && (v as number | bigint) < 0) k.neg = true;
      if (t === 'number' && !Number.isSafeInteger(v)) k.frac = true;
    }
  }
  // Property names come from the tiles (an upload's too): `__proto__` must be a key like any other.
  const pinned: Record<string, PropertyType> = Object.create(null) as Record<string, PropertyType>;
  for (const [key, k] of kinds) {
    if (k.types.size > 1) pinned[key] = 'map';
    else if (k.big) pinned[key] = k.frac || (k.huge && k.neg) ? 'map' : k.huge ? 'uint64' : 'int64';
  }
  return pinned;
}

function toMltLayer(layer: TileLayer): Layer {
  const features: FeatureInput[] = new Array(layer.features.length);
  for (let i = 0; i < layer.features.length; i++) {
    const f = layer.features[i];
    features[i] = { id: f.id, geometry: toMltGeometry(f), properties: f.properties };
  }
  return { name: layer.name, extent: layer.extent, features };
}

/** Encodes the model as MLT with the compact encoder (see ./mlt/layer.ts). */
export function encodeMlt(tile: VectorTileData): Uint8Array {
  return encodeCompactMlt(tile);
}

/**
 * Encodes the model with the package's plain `encodeTile` (varints and plain strings only): the "before" of the
 * benchmark. Layers are encoded one by one: pinned column types are per layer.
 */
export function encodeMltPlain(tile: VectorTileData): Uint8Array {
  const blocks: Uint8Array[] = [];
  for (const layer of tile) {
    const options: EncodeOptions = { propertyTypes: pinnedTypes(layer.features), mapOptions: { singlePrecisionFloats: false } };
    blocks.push(encodeTile([toMltLayer(layer)], options));
  }
  if (blocks.length === 1) return blocks[0];
  const out = new Uint8Array(blocks.reduce((n, b) => n + b.length, 0));
  let at = 0;
  for (const b of blocks) {
    out.set(b, at);
    at += b.length;
  }
  return out;
}

/** MLT geometry type (POINT 0 … MULTIPOLYGON 5) to the MVT type. */
const MVT_TYPE: readonly GeomType[] = [1, 2, 3, 1, 2, 3];

function toPropValue(v: unknown): PropValue | undefined {
  switch (typeof v) {
    case 'string':
    case 'boolean':
      return v;
    case 'number':
      return v;
    case 'bigint':
      return v < TWO_POW_53 && v > -TWO_POW_53 ? Number(v) : v;
    case 'object':
      // Nested values have no MVT form: they travel as JSON text, as other MVT writers do.
      return v === null ? undefined : JSON.stringify(v, (_k, x: unknown) => (typeof x === 'bigint' ? x.toString() : x));
    default:
      return undefined;
  }
}

function toModelId(id: number | bigint | undefined): number | bigint | undefined {
  if (id === undefined) return undefined;
  // MVT ids are unsigned 64-bit; an MLT signed id keeps its bits as the two's complement.
  if (id < 0) return BigInt.asUintN(64, BigInt(id));
  if (typeof id === 'bigint') return id < TWO_POW_53 ? Number(id) : id;
  return id;
}

/**
 * Decodes uncompressed MLT bytes into the model. Columns are read directly (`getValue` per feature) rather than
 * through `getFeatures`, which would build a properties object per feature only for us to copy it.
 * Throws on bytes that are not a well-formed MLT tile.
 */
export function decodeMlt(bytes: Uint8Array): VectorTileData {
  const out: VectorTileData = [];
  for (const table of decodeTile(bytes, undefined, false)) {
    const geometryVector = table.geometryVector;
    const geometries = geometryVector.getGeometries();
    const ids = table.idVector;
    const columns = table.propertyVectors.filter((c) => !!c);
    const features: TileFeature[] = new Array(table.numFeatures);
    for (let i = 0; i < features.length; i++) {
      const type = MVT_TYPE[geometryVector.geometryType(i)];
      if (type === undefined) throw new Error(`unknown MLT geometry type ${geometryVector.geometryType(i)}`);
      const geometry: number[][] = [];
      for (const part of geometries[i]) {
        let n = part.length;
        // The decoder closes polygon rings; the model keeps them open.
        if (type === 3 && n > 1 && part[0].x === part[n - 1].x && part[0].y === part[n - 1].y) n--;
        const flat: number[] = new Array(n * 2);
        for (let j = 0; j < n; j++) {
          flat[2 * j] = part[j].x;
          flat[2 * j + 1] = part[j].y;
        }
        geometry.push(flat);
      }
      const properties = Object.create(null) as Record<string, PropValue>;
      for (const column of columns) {
        const v = toPropValue(column.getValue(i));
        if (v !== undefined) properties[column.name] = v;
      }
      features[i] = { id: toModelId((ids?.getValue(i) ?? undefined) as number | bigint | undefined), type, geometry, properties };
    }
    out.push({ name: table.name, extent: table.extent, version: 2, features });
  }
  return out;
}
