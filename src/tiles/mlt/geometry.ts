// The geometry column: a stream of geometry types, the nested length streams the types call for, and the vertex
// stream. Vertices are written componentwise-delta coded (each x and y minus the previous vertex's, across the
// whole layer), which is what makes MLT geometry smaller than MVT's command stream; the physical coding (varint
// or FastPFOR) is chosen per stream by size.
import { GEOMETRY_TYPE } from '@maplibre/mlt/dist/vector/geometry/geometryType.js';
import { LengthType } from '@maplibre/mlt/dist/metadata/tile/lengthType.js';
import { DictionaryType } from '@maplibre/mlt/dist/metadata/tile/dictionaryType.js';
import { OffsetType } from '@maplibre/mlt/dist/metadata/tile/offsetType.js';
import { classifyRings, type TileFeature } from '../vector-model.js';
import { concat, encodeIntStream, LENGTH_OPTIONS, PhysicalStreamType, VALUE_OPTIONS, varint, type IntOptions, type StreamKind } from './streams.js';

/** Geometry types: RLE collapses a layer of one type to a constant, which the decoder then reads as such. */
const TYPE_OPTIONS: IntOptions = { techniques: ['none', 'rle'], fastPfor: false };
const VERTEX_OPTIONS: IntOptions = { techniques: ['componentwise-delta'], fastPfor: true };

const TYPES_KIND: StreamKind = { physical: PhysicalStreamType.LENGTH, logical: {} };
const VERTEX_KIND: StreamKind = { physical: PhysicalStreamType.DATA, logical: { dictionaryType: DictionaryType.VERTEX } };
const VERTEX_OFFSET_KIND: StreamKind = { physical: PhysicalStreamType.OFFSET, logical: { offsetType: OffsetType.VERTEX } };
/** Coordinates of a dictionary key: tile coordinates (with buffers) are far inside ±2^25. */
const KEY_SPAN = 2 ** 26;
const KEY_HALF = 2 ** 25;
const lengthKind = (lengthType: LengthType): StreamKind => ({ physical: PhysicalStreamType.LENGTH, logical: { lengthType } });

/** One feature normalised to polygons → rings → flat x,y pairs, with its MLT geometry type. */
interface Shape {
  type: number;
  polygons: number[][][];
}

function openRing(ring: number[]): number[] {
  const n = ring.length;
  return n >= 4 && ring[0] === ring[n - 2] && ring[1] === ring[n - 1] ? ring.slice(0, n - 2) : ring;
}

function shapeOf(f: TileFeature): Shape {
  const parts = f.geometry;
  switch (f.type) {
    case 1: {
      if (parts.length === 1 && parts[0].length === 2) return { type: GEOMETRY_TYPE.POINT, polygons: [[parts[0]]] };
      const polygons: number[][][] = [];
      for (const part of parts) for (let i = 0; i + 1 < part.length; i += 2) polygons.push([[part[i], part[i + 1]]]);
      return { type: GEOMETRY_TYPE.MULTIPOINT, polygons };
    }
    case 2:
      return { type: parts.length === 1 ? GEOMETRY_TYPE.LINESTRING : GEOMETRY_TYPE.MULTILINESTRING, polygons: parts.map((p) => [p]) };
    case 3: {
      const polygons = classifyRings(parts).map((rings) => rings.map(openRing));
      return { type: polygons.length === 1 ? GEOMETRY_TYPE.POLYGON : GEOMETRY_TYPE.MULTIPOLYGON, polygons };
    }
  }
}

/**
 * The vertex dictionary form: each distinct vertex once (in order of first use, componentwise-delta coded like the
 * plain form), and per vertex an index into it. Low-zoom tiles repeat many vertices (polygons of adjacent areas
 * share their borders), where this is smaller; undefined when no vertex repeats or a coordinate is out of range.
 */
function vertexDictionaryStreams(vertices: Int32Array): Uint8Array[] | undefined {
  const n = vertices.length >> 1;
  const index = new Map<number, number>();
  const offsets = new Uint32Array(n);
  const dictionary: number[] = [];
  for (let i = 0; i < n; i++) {
    const x = vertices[2 * i];
    const y = vertices[2 * i + 1];
    if (x <= -KEY_HALF || x >= KEY_HALF || y <= -KEY_HALF || y >= KEY_HALF) return undefined;
    const key = (x + KEY_HALF) * KEY_SPAN + (y + KEY_HALF);
    let at = index.get(key);
    if (at === undefined) {
      at = dictionary.length >> 1;
      index.set(key, at);
      dictionary.push(x, y);
    }
    offsets[i] = at;
  }
  if (dictionary.length === vertices.length) return undefined;
  return [encodeIntStream(VERTEX_OFFSET_KIND, offsets, false, VALUE_OPTIONS), encodeIntStream(VERTEX_KIND, Int32Array.from(dictionary), true, VERTEX_OPTIONS)];
}

/**
 * Writes the geometry column (stream count, then streams). Which length streams exist depends on the types in the
 * layer, because the decoder reads each combination differently:
 * multi + polygon: GEOMETRIES, PARTS (rings per polygon), RINGS (vertices per ring);
 * multi without polygons: GEOMETRIES, PARTS (vertices per line);
 * polygons without multi: PARTS (rings per polygon), RINGS (vertices per ring and per line);
 * lines only: PARTS (vertices per line); points only: none.
 */
export function encodeGeometryColumn(features: readonly TileFeature[]): Uint8Array {
  const shapes = features.map(shapeOf);
  let hasMulti = false;
  let hasPolygon = false;
  let hasLine = false;
  let numVertices = 0;
  for (const s of shapes) {
    if (s.type > GEOMETRY_TYPE.POLYGON) hasMulti = true;
    if (s.type === GEOMETRY_TYPE.POLYGON || s.type === GEOMETRY_TYPE.MULTIPOLYGON) hasPolygon = true;
    if (s.type === GEOMETRY_TYPE.LINESTRING || s.type === GEOMETRY_TYPE.MULTILINESTRING) hasLine = true;
    for (const rings of s.polygons) for (const ring of rings) numVertices += ring.length;
  }
  const types = new Uint32Array(shapes.length);
  const geometryLengths: number[] = [];
  const partLengths: number[] = [];
  const ringLengths: number[] = [];
  const vertices = new Int32Array(numVertices);
  let v = 0;
  for (let i = 0; i < shapes.length; i++) {
    const { type, polygons } = shapes[i];
    types[i] = type;
    const polygonal = type === GEOMETRY_TYPE.POLYGON || type === GEOMETRY_TYPE.MULTIPOLYGON;
    const linear = type === GEOMETRY_TYPE.LINESTRING || type === GEOMETRY_TYPE.MULTILINESTRING;
    if (hasMulti && type > GEOMETRY_TYPE.POLYGON) geometryLengths.push(polygons.length);
    for (const rings of polygons) {
      if (hasPolygon) {
        if (polygonal) partLengths.push(rings.length);
        if (polygonal || linear) for (const ring of rings) ringLengths.push(ring.length >> 1);
      } else if (hasMulti || hasLine) {
        if (linear) partLengths.push(rings[0].length >> 1);
      }
      for (const ring of rings) {
        vertices.set(ring, v);
        v += ring.length;
      }
    }
  }
  const streams = [encodeIntStream(TYPES_KIND, types, false, TYPE_OPTIONS)];
  if (hasMulti) streams.push(encodeIntStream(lengthKind(LengthType.GEOMETRIES), Uint32Array.from(geometryLengths), false, LENGTH_OPTIONS));
  if (hasMulti || hasPolygon || hasLine) streams.push(encodeIntStream(lengthKind(LengthType.PARTS), Uint32Array.from(partLengths), false, LENGTH_OPTIONS));
  if (hasPolygon) streams.push(encodeIntStream(lengthKind(LengthType.RINGS), Uint32Array.from(ringLengths), false, LENGTH_OPTIONS));
  const plain = encodeIntStream(VERTEX_KIND, vertices, true, VERTEX_OPTIONS);
  const dictionary = vertexDictionaryStreams(vertices);
  if (dictionary && dictionary[0].length + dictionary[1].length < plain.length) streams.push(...dictionary);
  else streams.push(plain);
  return concat([varint(streams.length), ...streams]);
}
