// Writers of the data files the FlatGeobuf and GeoParquet readers are tested (and benchmarked) on:
// - GeoParquet through hyparquet-writer (Debian 12's GDAL has no Parquet driver): a WKB geometry column, the
//   GeoParquet 1.1 `geo` metadata with a bbox covering column, the properties as typed columns, an INT64 `id`,
//   row groups of a chosen size; streamed row group by row group, so a file of gigabytes needs no such memory.
// - big indexed FlatGeobuf files of shifted copies of the city, written here with the flatgeobuf package's
//   feature and header encoders and a packed R-tree built in the same way the format's writers build theirs
//   (leaves in a spatial order, parents over runs of 16). GDAL writes the small files of the tests; for files of
//   hundreds of megabytes it would take most of a minute, this a few seconds, and `ogrinfo` checks the result.
import { randomBytes } from 'node:crypto';
import { closeSync, openSync, writeSync } from 'node:fs';
import * as flatbuffers from 'flatbuffers';
import type { Feature as GeoJsonFeature, FeatureCollection, Geometry } from 'geojson';
import { ColumnType } from 'flatgeobuf/lib/mjs/flat-geobuf/column-type.js';
import { Column } from 'flatgeobuf/lib/mjs/flat-geobuf/column.js';
import { Crs } from 'flatgeobuf/lib/mjs/flat-geobuf/crs.js';
import { GeometryType } from 'flatgeobuf/lib/mjs/flat-geobuf/geometry-type.js';
import { Header } from 'flatgeobuf/lib/mjs/flat-geobuf/header.js';
import { Feature } from 'flatgeobuf/lib/mjs/flat-geobuf/feature.js';
import type { Geometry as FgbGeometry } from 'flatgeobuf/lib/mjs/flat-geobuf/geometry.js';
import { buildFeature, type IProperties } from 'flatgeobuf/lib/mjs/generic/feature.js';
import { parseGeometry } from 'flatgeobuf/lib/mjs/geojson/geometry.js';
import type { HeaderMeta } from 'flatgeobuf/lib/mjs/header-meta.js';
import { calcTreeSize, generateLevelBounds } from 'flatgeobuf/lib/mjs/packedrtree.js';
import { fileWriter, geojsonToWkb, ParquetWriter } from 'hyparquet-writer';
import type { SchemaElement } from 'hyparquet';
import { geometryBox, shift } from './city-collection.js';

type Scalar = string | number | boolean;
export type ColumnKind = 'string' | 'int' | 'double' | 'boolean';

/** Each property's kind over all features (an integer column with one fraction becomes double; mixed: string). */
export function columnKinds(features: readonly GeoJsonFeature[]): Map<string, ColumnKind> {
  const kinds = new Map<string, ColumnKind>();
  for (const f of features) {
    for (const [k, v] of Object.entries(f.properties ?? {})) {
      if (v === null || v === undefined) continue;
      const kind: ColumnKind = typeof v === 'boolean' ? 'boolean' : typeof v === 'number' ? (Number.isInteger(v) ? 'int' : 'double') : 'string';
      const was = kinds.get(k);
      kinds.set(k, was === undefined || was === kind ? kind : (was === 'int' && kind === 'double') || (was === 'double' && kind === 'int') ? 'double' : 'string');
    }
  }
  return kinds;
}

/** A copy's move in degrees: copies on a grid of 10 columns, 0.12 by 0.08 degrees apart (the city's size). */
export const copyShift = (c: number): [number, number] => [(c % 10) * 0.12, Math.floor(c / 10) * 0.08];

/** A long text property that compresses poorly (random base64): what pads a file to hundreds of megabytes. */
export function noteText(length: number): string {
  return randomBytes(Math.ceil((length * 3) / 4)).toString('base64').slice(0, length);
}

export interface GeoParquetOptions {
  /** Rows per row group. */
  rowGroupSize: number;
  /** Write the GeoParquet 1.1 bbox covering column (default true). */
  covering?: boolean;
  /** The kinds of the properties (default: from the first batch). */
  kinds?: Map<string, ColumnKind>;
  /** The geometry column's `crs` (PROJJSON; default absent: OGC:CRS84). */
  crs?: unknown;
  /** The geometry column's `encoding` (default WKB; others make files the reader must refuse). */
  encoding?: string;
}

/**
 * Writes features as GeoParquet: `id` (INT64, the feature's id), `geometry` (WKB), `bbox` (the covering struct),
 * then one column per property. `batches` are written as they come (each at least one row group).
 */
export function writeGeoParquet(path: string, batches: Iterable<readonly GeoJsonFeature[]>, options: GeoParquetOptions): void {
  const covering = options.covering ?? true;
  let writer: ParquetWriter | undefined;
  let kinds = options.kinds;
  let extent = [Infinity, Infinity, -Infinity, -Infinity];
  const boxesOf = (fs: readonly GeoJsonFeature[]) => fs.map((f) => geometryBox(f.geometry as Geometry));
  for (const batch of batches) {
    if (batch.length === 0) continue;
    kinds ??= columnKinds(batch);
    const boxes = boxesOf(batch);
    for (const b of boxes) extent = [Math.min(extent[0], b[0]), Math.min(extent[1], b[1]), Math.max(extent[2], b[2]), Math.max(extent[3], b[3])];
    if (!writer) writer = new ParquetWriter({ writer: fileWriter(path), schema: schemaOf(kinds, covering) as never, kvMetadata: [] });
    const columnData: Array<{ name: string; data: unknown[] }> = [
      { name: 'id', data: batch.map((f) => (f.id === undefined ? null : BigInt(f.id))) },
      { name: 'geometry', data: batch.map((f) => geojsonToWkb(f.geometry as Parameters<typeof geojsonToWkb>[0])) },
    ];
    if (covering) columnData.push({ name: 'bbox', data: boxes.map(([xmin, ymin, xmax, ymax]) => ({ xmin, ymin, xmax, ymax })) });
    for (const [name, kind] of kinds) {
      columnData.push({
        name,
        data: batch.map((f) => {
          const v = f.properties?.[name] as Scalar | null | undefined;
          if (v === null || v === undefined) return null;
          return kind === 'int' ? BigInt(v as number) : kind === 'string' ? String(v) : v;
        }),
      });
    }
    void writer.write({ columnData: columnData as never, rowGroupSize: options.rowGroupSize });
  }
  if (!writer) throw new Error('writeGeoParquet: no features');
  const geo = {
    version: '1.1.0',
    primary_column: 'geometry',
    columns: {
      geometry: {
        encoding: options.encoding ?? 'WKB',
        geometry_types: [],
        ...(options.crs !== undefined ? { crs: options.crs } : {}),
        bbox: extent,
        ...(covering ? { covering: { bbox: { xmin: ['bbox', 'xmin'], ymin: ['bbox', 'ymin'], xmax: ['bbox', 'xmax'], ymax: ['bbox', 'ymax'] } } } : {}),
      },
    },
  };
  // The writer writes its key-value metadata at finish(): the extent is only known now.
  (writer as unknown as { kvMetadata: Array<{ key: string; value: string }> }).kvMetadata = [{ key: 'geo', value: JSON.stringify(geo) }];
  writer.finish();
}

function schemaOf(kinds: Map<string, ColumnKind>, covering: boolean): SchemaElement[] {
  const props: SchemaElement[] = [...kinds].map(([name, kind]) => {
    if (kind === 'string') return { name, type: 'BYTE_ARRAY', converted_type: 'UTF8', repetition_type: 'OPTIONAL' };
    if (kind === 'int') return { name, type: 'INT64', repetition_type: 'OPTIONAL' };
    if (kind === 'double') return { name, type: 'DOUBLE', repetition_type: 'OPTIONAL' };
    return { name, type: 'BOOLEAN', repetition_type: 'OPTIONAL' };
  });
  const box: SchemaElement[] = covering
    ? [
        { name: 'bbox', repetition_type: 'REQUIRED', num_children: 4 },
        ...['xmin', 'ymin', 'xmax', 'ymax'].map((name): SchemaElement => ({ name, type: 'DOUBLE', repetition_type: 'REQUIRED' })),
      ]
    : [];
  return [
    { name: 'root', num_children: 2 + (covering ? 1 : 0) + props.length },
    { name: 'id', type: 'INT64', repetition_type: 'OPTIONAL' },
    { name: 'geometry', type: 'BYTE_ARRAY', repetition_type: 'OPTIONAL' },
    ...box,
    ...props,
  ];
}

/** The features of `copies` shifted copies of `city`, one batch per copy, with `fid` and a `note` of noteBytes. */
export function* shiftedCopies(city: FeatureCollection, copies: number, noteBytes: number): Generator<GeoJsonFeature[]> {
  for (let c = 0; c < copies; c++) yield shiftedCopy(city, c, noteBytes);
}

/** Copy `c` of the city (ids and fids c * n + 1...). */
export function shiftedCopy(city: FeatureCollection, c: number, noteBytes: number): GeoJsonFeature[] {
  const n = city.features.length;
  const [dx, dy] = copyShift(c);
  return city.features.map((f, i) => ({
    type: 'Feature',
    id: c * n + i + 1,
    geometry: shift(f.geometry, dx, dy),
    properties: { ...f.properties, fid: c * n + i + 1, ...(noteBytes > 0 ? { note: noteText(noteBytes) } : {}) },
  }));
}

const FGB_TYPES: Record<ColumnKind, ColumnType> = { string: ColumnType.String, int: ColumnType.Long, double: ColumnType.Double, boolean: ColumnType.Bool };
const NODE_SIZE = 16;

/** Orders features along a Morton curve of their box centres, as the format's writers order them along Hilbert's. */
export function spatialOrder(features: readonly GeoJsonFeature[]): GeoJsonFeature[] {
  const boxes = features.map((f) => geometryBox(f.geometry as Geometry));
  const all = boxes.reduce((a, b) => [Math.min(a[0], b[0]), Math.min(a[1], b[1]), Math.max(a[2], b[2]), Math.max(a[3], b[3])]);
  const key = (b: number[]) => {
    const x = Math.floor((((b[0] + b[2]) / 2 - all[0]) / (all[2] - all[0] || 1)) * 65535);
    const y = Math.floor((((b[1] + b[3]) / 2 - all[1]) / (all[3] - all[1] || 1)) * 65535);
    let k = 0;
    for (let i = 15; i >= 0; i--) k = k * 4 + (((x >> i) & 1) << 1) + ((y >> i) & 1);
    return k;
  };
  const keys = boxes.map(key);
  return features.map((f, i) => ({ f, k: keys[i] })).sort((a, b) => a.k - b.k).map((e) => e.f);
}

/**
 * Writes `copies` shifted copies of `city` as one indexed FlatGeobuf (EPSG:4326), each feature with `fid` and a
 * `note` of `noteBytes` characters. Copies are laid out copy after copy, each in spatial order.
 */
export function writeBigFlatGeobuf(path: string, city: FeatureCollection, copies: number, noteBytes: number): { features: number } {
  const template = spatialOrder(city.features);
  const kinds = columnKinds(template);
  kinds.set('fid', 'int');
  if (noteBytes > 0) kinds.set('note', 'string');
  const meta: HeaderMeta = {
    geometryType: GeometryType.Unknown,
    columns: [...kinds].map(([name, kind]) => ({ name, type: FGB_TYPES[kind], title: null, description: null, width: -1, precision: -1, scale: -1, nullable: true, unique: false, primary_key: false })),
    envelope: null,
    featuresCount: template.length * copies,
    indexNodeSize: NODE_SIZE,
    crs: null,
    title: null,
    description: null,
    metadata: null,
  };
  // The encoder leaves out nulls only (an absent key would be written as a value).
  const names = [...kinds.keys()];
  const encoded = shiftedCopy({ type: 'FeatureCollection', features: template }, 0, noteBytes).map((f) =>
    // A copy of its own: the xy arrays are read as Float64Arrays, which need the buffer's start for alignment.
    buildFeature(parseGeometry(f.geometry as never), Object.fromEntries(names.map((k) => [k, f.properties?.[k] ?? null])) as IProperties, meta).slice(),
  );
  // Copies differ only in their coordinates: each is the first copy's bytes with the xy arrays moved in place
  // (encoding every copy anew costs about a millisecond a feature).
  const xyRanges = encoded.map(xyArraysOf);
  const sizes = encoded.map((e) => e.byteLength);
  const count = meta.featuresCount;
  const levels = generateLevelBounds(count, NODE_SIZE);
  const nodes = calcTreeSize(count, NODE_SIZE) / 40;
  const boxes = new Float64Array(nodes * 4);
  const offsets = new Float64Array(nodes);
  const leaf0 = levels[0][0];
  const templateBoxes = template.map((f) => geometryBox(f.geometry as Geometry));
  let offset = 0;
  for (let c = 0; c < copies; c++) {
    const [dx, dy] = copyShift(c);
    for (let i = 0; i < template.length; i++) {
      const node = leaf0 + c * template.length + i;
      const b = templateBoxes[i];
      boxes.set([b[0] + dx, b[1] + dy, b[2] + dx, b[3] + dy], node * 4);
      offsets[node] = offset;
      offset += sizes[i];
    }
  }
  for (let level = 1; level < levels.length; level++) {
    const [childFirst, childEnd] = levels[level - 1];
    const [first] = levels[level];
    for (let child = childFirst, node = first; child < childEnd; child += NODE_SIZE, node++) {
      const b = [Infinity, Infinity, -Infinity, -Infinity];
      for (let k = child; k < Math.min(child + NODE_SIZE, childEnd); k++) {
        b[0] = Math.min(b[0], boxes[k * 4]);
        b[1] = Math.min(b[1], boxes[k * 4 + 1]);
        b[2] = Math.max(b[2], boxes[k * 4 + 2]);
        b[3] = Math.max(b[3], boxes[k * 4 + 3]);
      }
      boxes.set(b, node * 4);
      offsets[node] = child;
    }
  }
  const fd = openSync(path, 'w');
  try {
    writeSync(fd, new Uint8Array([0x66, 0x67, 0x62, 0x03, 0x66, 0x67, 0x62, 0x00]));
    writeSync(fd, fgbHeader(meta));
    const tree = Buffer.alloc(nodes * 40);
    for (let i = 0; i < nodes; i++) {
      for (let k = 0; k < 4; k++) tree.writeDoubleLE(boxes[i * 4 + k], i * 40 + k * 8);
      tree.writeBigUInt64LE(BigInt(offsets[i]), i * 40 + 32);
    }
    writeSync(fd, tree);
    for (let c = 0; c < copies; c++) {
      const [dx, dy] = copyShift(c);
      const chunk = Buffer.concat(encoded);
      let at = 0;
      for (let i = 0; i < encoded.length; i++) {
        for (const [from, length] of xyRanges[i]) {
          for (let k = 0; k < length; k += 2) {
            chunk.writeDoubleLE(chunk.readDoubleLE(at + from + k * 8) + dx, at + from + k * 8);
            chunk.writeDoubleLE(chunk.readDoubleLE(at + from + k * 8 + 8) + dy, at + from + k * 8 + 8);
          }
        }
        at += sizes[i];
      }
      writeSync(fd, chunk);
    }
  } finally {
    closeSync(fd);
  }
  return { features: count };
}

/** The byte offsets (in the size-prefixed feature) and lengths (in doubles) of a feature's xy arrays. */
function xyArraysOf(bytes: Uint8Array): Array<[number, number]> {
  const feature = Feature.getSizePrefixedRootAsFeature(new flatbuffers.ByteBuffer(bytes));
  const out: Array<[number, number]> = [];
  const walk = (g: FgbGeometry | null) => {
    if (!g) return;
    const xy = g.xyArray();
    if (xy && xy.length) out.push([xy.byteOffset, xy.length]);
    for (let i = 0; i < g.partsLength(); i++) walk(g.parts(i));
  };
  walk(feature.geometry());
  return out;
}

/** A size-prefixed FlatGeobuf header for `meta` with its index node size and EPSG:4326. */
function fgbHeader(meta: HeaderMeta): Uint8Array {
  const b = new flatbuffers.Builder(1024);
  const columns = Header.createColumnsVector(
    b,
    (meta.columns ?? []).map((c) => {
      const name = b.createString(c.name);
      Column.startColumn(b);
      Column.addName(b, name);
      Column.addType(b, c.type);
      Column.addNullable(b, true);
      return Column.endColumn(b);
    }),
  );
  const org = b.createString('EPSG');
  Crs.startCrs(b);
  Crs.addOrg(b, org);
  Crs.addCode(b, 4326);
  const crs = Crs.endCrs(b);
  const name = b.createString('big');
  Header.startHeader(b);
  Header.addName(b, name);
  Header.addGeometryType(b, meta.geometryType);
  Header.addColumns(b, columns);
  Header.addFeaturesCount(b, BigInt(meta.featuresCount));
  Header.addIndexNodeSize(b, meta.indexNodeSize);
  Header.addCrs(b, crs);
  b.finishSizePrefixed(Header.endHeader(b));
  return b.asUint8Array();
}
