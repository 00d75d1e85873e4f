// FlatGeobuf files (https://flatgeobuf.org) as a FeatureReader, local or remote, read by ranges: the header once,
// then for a box the nodes of the packed Hilbert R-tree that meet it (fgb-index.ts) and the features they point
// at, through a bounded block cache (range-cache.ts). The flatgeobuf package decodes the header and features
// (its deep modules: the package's entry point would bring OpenLayers along); its own readers are not used,
// since they read a whole batch of neighbouring features in one buffer (unbounded for a large box) and log to
// stdout.
//
// Files without an index: up to UNINDEXED_MAX_BYTES they are scanned once at open into an in-memory index of
// feature boxes and offsets (40 bytes a feature, in memoryBytes()); larger ones are an open error that says how
// to add the index, since every tile would otherwise read the whole file.
import * as flatbuffers from 'flatbuffers';
import type { LRUCache } from 'lru-cache';
import type { Feature as GeoJsonFeature, Geometry } from 'geojson';
import { ColumnType } from 'flatgeobuf/lib/mjs/flat-geobuf/column-type.js';
import { Feature } from 'flatgeobuf/lib/mjs/flat-geobuf/feature.js';
import { fromFeature } from 'flatgeobuf/lib/mjs/geojson/feature.js';
import { fromByteBuffer, type HeaderMeta } from 'flatgeobuf/lib/mjs/header-meta.js';
import { calcTreeSize } from 'flatgeobuf/lib/mjs/packedrtree.js';
import type { Bounds } from '../source.js';
import { SourceOpenError } from '../source.js';
import { boxesMeet, transformBox, crsTransform, geometryBounds, transformGeometry, type CrsTransform } from './crs.js';
import { featureCache } from './feature-cache.js';
import { PackedRTree } from './fgb-index.js';
import { featureId, idColumn, propertyValue } from './property-value.js';
import { RangeCache } from './range-cache.js';
import { openRangeFile, type RangeReaderOptions } from './range-file.js';
import type { FeatureReader, FieldType, FileFeature, FileLayer, PropertyValue } from './reader.js';

/** Unindexed files up to this size are indexed in memory at open; larger ones are refused. */
export const UNINDEXED_MAX_BYTES = 128 * 1024 * 1024;

/** A decoded feature's memory over its encoded bytes (GeoJSON arrays of numbers, property objects), roughly. */
const DECODED_FACTOR = 4;

interface DecodedFeature {
  /** Undefined for a feature without geometry or with a curve type (not served). */
  feature: FileFeature | undefined;
  box: readonly number[] | undefined;
  bytes: number;
}

const MAGIC = [0x66, 0x67, 0x62, 0x03]; // "fgb" and major version 3
const HEADER_MAX_BYTES = 10 * 1024 * 1024; // the package's own bound on a header

const NUMBER_TYPES = new Set([ColumnType.Byte, ColumnType.UByte, ColumnType.Short, ColumnType.UShort, ColumnType.Int, ColumnType.UInt, ColumnType.Long, ColumnType.ULong, ColumnType.Float, ColumnType.Double]);
const INTEGER_TYPES = new Set([ColumnType.Byte, ColumnType.UByte, ColumnType.Short, ColumnType.UShort, ColumnType.Int, ColumnType.UInt, ColumnType.Long, ColumnType.ULong]);

function fieldType(t: ColumnType): FieldType | undefined {
  if (t === ColumnType.Bool) return 'Boolean';
  if (NUMBER_TYPES.has(t)) return 'Number';
  if (t === ColumnType.Binary) return undefined;
  return 'String';
}

/** Where the features are, for a file without an index: boxes (4 doubles each) and offsets, in file order. */
interface MemoryIndex {
  boxes: Float64Array;
  offsets: Float64Array;
  count: number;
}

class FlatGeobufReader implements FeatureReader {
  constructor(
    private readonly cache: RangeCache,
    private readonly header: HeaderMeta,
    private readonly layer: FileLayer,
    /** Byte offset of the features section. */
    private readonly featuresStart: number,
    private readonly tree: PackedRTree | undefined,
    private readonly memoryIndex: MemoryIndex | undefined,
    private readonly crs: CrsTransform | undefined,
    private readonly idField: string | undefined,
    private readonly metadataBytes: number,
    /**
     * Decoded features by offset, with their boxes, kept up to a byte budget (`feature_cache_mb`): neighbouring tiles
     * and zooms read many of the same features, and decoding one (flatbuffer to GeoJSON, to longitude/latitude)
     * costs several times finding it. Sizes are the encoded feature's bytes times DECODED_FACTOR.
     */
    private readonly decoded: LRUCache<number, DecodedFeature>,
  ) {}

  get layers(): readonly FileLayer[] {
    return [this.layer];
  }

  memoryBytes(): number {
    const index = this.memoryIndex ? this.memoryIndex.boxes.byteLength + this.memoryIndex.offsets.byteLength : 0;
    return this.metadataBytes + index + this.cache.memoryBytes() + this.decoded.calculatedSize;
  }

  async close(): Promise<void> {
    await this.cache.file.close();
  }

  heldInMemory(): undefined {
    return undefined;
  }

  async *features(layer: string, bbox: Bounds | undefined, signal?: AbortSignal): AsyncIterable<FileFeature> {
    if (layer !== this.layer.name) return;
    // With the tree, the offsets come as one array (the common case: no generator between the index and here).
    const query = bbox && this.tree && transformBox(bbox, this.crs?.fromLonLat);
    const offsets = query && this.tree ? await this.tree.search(query, signal) : this.offsets(bbox, signal);
    for await (const offset of offsets) {
      if (signal?.aborted) return;
      const d = this.decoded.get(offset) ?? (await this.decode(offset));
      if (!d.feature) continue;
      if (bbox && (!d.box || !boxesMeet(d.box, bbox))) continue;
      yield d.feature;
    }
  }

  async featuresInBox(layer: string, bbox: Bounds, limit: number): Promise<FileFeature[]> {
    const out: FileFeature[] = [];
    if (layer !== this.layer.name) return out;
    if (!this.tree) {
      for await (const f of this.features(layer, bbox)) if (out.push(f) >= limit) break;
      return out;
    }
    for (const offset of await this.tree.search(transformBox(bbox, this.crs?.fromLonLat))) {
      const d = this.decoded.get(offset) ?? (await this.decode(offset));
      if (!d.feature || !d.box || !boxesMeet(d.box, bbox)) continue;
      if (out.push(d.feature) >= limit) break;
    }
    return out;
  }

  /** The feature at `offset` decoded, with its box, and kept in the decoded-feature cache. */
  private async decode(offset: number): Promise<DecodedFeature> {
    const len = await this.lengthAt(offset);
    const feature = await this.readFeature(offset);
    const d = { feature, box: feature ? geometryBounds(feature.geometry) : undefined, bytes: (4 + len) * DECODED_FACTOR };
    this.decoded.set(offset, d);
    return d;
  }

  /** Offsets (in the features section) of the features that may meet `bbox`, in file order. */
  private async *offsets(bbox: Bounds | undefined, signal?: AbortSignal): AsyncGenerator<number> {
    const query = bbox && transformBox(bbox, this.crs?.fromLonLat);
    if (this.memoryIndex) {
      const { boxes, offsets, count } = this.memoryIndex;
      for (let i = 0; i < count; i++) {
        if (!query || boxesMeet(boxes.subarray(i * 4, i * 4 + 4), query)) yield offsets[i];
      }
      return;
    }
    if (query && this.tree) {
      yield* await this.tree.search(query, signal);
      return;
    }
    // Everything, in file order: one feature after the other.
    const end = this.cache.size - this.featuresStart;
    for (let at = 0; at < end; ) {
      const len = await this.lengthAt(at);
      yield at;
      at += 4 + len;
    }
  }

  private async lengthAt(at: number): Promise<number> {
    const prefix = await this.cache.read(this.featuresStart + at, 4);
    if (prefix.byteLength < 4) throw new Error(`a feature at byte ${this.featuresStart + at} is cut short (truncated file)`);
    return new DataView(prefix.buffer, prefix.byteOffset, 4).getUint32(0, true);
  }

  /** The raw feature at `at`: copied to a buffer of its own, whose start the format's 8-byte alignment is relative to. */
  private async rawFeature(at: number): Promise<Feature> {
    const len = await this.lengthAt(at);
    const body = await this.cache.read(this.featuresStart + at + 4, len);
    if (body.byteLength < len) throw new Error(`a feature at byte ${this.featuresStart + at} is cut short (truncated file)`);
    const bytes = new Uint8Array(4 + len);
    new DataView(bytes.buffer).setUint32(0, len, true);
    bytes.set(body, 4);
    return Feature.getSizePrefixedRootAsFeature(new flatbuffers.ByteBuffer(bytes));
  }

  /** A feature in longitude/latitude, or undefined for one without geometry or with a curve type. */
  private async readFeature(at: number): Promise<FileFeature | undefined> {
    const raw = await this.rawFeature(at);
    if (!raw.geometry()) return undefined;
    let parsed: GeoJsonFeature;
    try {
      parsed = fromFeature(0, raw, this.header) as GeoJsonFeature;
    } catch {
      return undefined;
    }
    return this.toFileFeature(parsed);
  }

  private toFileFeature(parsed: GeoJsonFeature): FileFeature | undefined {
    const geometry = lonLatGeometry(parsed.geometry, this.crs);
    if (!geometry) return undefined;
    const properties: Record<string, PropertyValue> = {};
    for (const [k, v] of Object.entries(parsed.properties ?? {})) {
      const value = propertyValue(v);
      if (value !== undefined) properties[k] = value;
    }
    const id = this.idField === undefined ? undefined : featureId(parsed.properties?.[this.idField]);
    return id === undefined ? { geometry, properties } : { id, geometry, properties };
  }

  /** Scans an unindexed file once: each feature's box in the file's CRS and its offset. */
  static async scan(cache: RangeCache, header: HeaderMeta, featuresStart: number): Promise<MemoryIndex> {
    let boxes = new Float64Array(4 * Math.max(16, header.featuresCount));
    let offsets = new Float64Array(Math.max(16, header.featuresCount));
    let count = 0;
    // A reader of nothing but raw features, for their lengths and geometries: it decodes none, so keeps none.
    const probe = new FlatGeobufReader(cache, header, { name: '', fields: {}, bounds: undefined }, featuresStart, undefined, undefined, undefined, undefined, 0, featureCache(0));
    const end = cache.size - featuresStart;
    for (let at = 0; at < end; ) {
      const raw = await probe.rawFeature(at);
      const box = raw.geometry() ? geometryBounds(fromFeature(0, raw, header).geometry as Geometry) : undefined;
      if (box) {
        if (count === offsets.length) {
          const grown = new Float64Array(offsets.length * 2);
          grown.set(offsets);
          offsets = grown;
          const grownBoxes = new Float64Array(boxes.length * 2);
          grownBoxes.set(boxes);
          boxes = grownBoxes;
        }
        boxes.set(box, count * 4);
        offsets[count++] = at;
      }
      at += 4 + (await probe.lengthAt(at));
    }
    return { boxes: boxes.slice(0, count * 4), offsets: offsets.slice(0, count), count };
  }
}

/** A geometry as [longitude, latitude] positions: transformed, or only stripped of Z/M when it already is. */
function lonLatGeometry(g: Geometry | null, crs: CrsTransform | undefined): Geometry | undefined {
  if (!g) return undefined;
  if (crs) return transformGeometry(g, crs.toLonLat);
  return hasExtraDimensions(g) ? transformGeometry(g, (x, y) => [x, y]) : g;
}

function hasExtraDimensions(g: Geometry): boolean {
  switch (g.type) {
    case 'Point':
      return g.coordinates.length > 2;
    case 'MultiPoint':
    case 'LineString':
      return (g.coordinates[0]?.length ?? 2) > 2;
    case 'MultiLineString':
    case 'Polygon':
      return (g.coordinates[0]?.[0]?.length ?? 2) > 2;
    case 'MultiPolygon':
      return (g.coordinates[0]?.[0]?.[0]?.length ?? 2) > 2;
    case 'GeometryCollection':
      return true;
  }
}

async function readHeader(cache: RangeCache): Promise<{ header: HeaderMeta; headerLength: number }> {
  const start = await cache.read(0, 12);
  if (start.byteLength < 12 || MAGIC.some((b, i) => start[i] !== b)) {
    throw new Error(start[0] === MAGIC[0] && start[1] === MAGIC[1] && start[2] === MAGIC[2] && start.byteLength >= 4 ? `unsupported FlatGeobuf version ${start[3]} (3 is read)` : 'not a FlatGeobuf file (no "fgb" signature)');
  }
  const headerLength = new DataView(start.buffer, start.byteOffset, 12).getUint32(8, true);
  if (headerLength < 8 || headerLength > HEADER_MAX_BYTES) throw new Error(`the header length ${headerLength} is not a FlatGeobuf header's`);
  const bytes = await cache.read(8, 4 + headerLength);
  if (bytes.byteLength < 4 + headerLength) throw new Error('the header is cut short (truncated file)');
  try {
    return { header: fromByteBuffer(new flatbuffers.ByteBuffer(bytes.slice())), headerLength };
  } catch (err) {
    throw new Error(`the header cannot be read (${err instanceof Error ? err.message : String(err)})`);
  }
}

function layerBounds(extent: readonly number[] | undefined, crs: CrsTransform | undefined): Bounds | undefined {
  if (!extent || !(extent[0] <= extent[2] && extent[1] <= extent[3])) return undefined;
  const [w, s, e, n] = transformBox(extent, crs?.toLonLat);
  return Number.isFinite(w + s + e + n) ? [w, s, e, n] : undefined;
}

/**
 * Opens a FlatGeobuf file (a local path or an http(s)/s3/gs/az URL). Its one layer is named after the source.
 * Throws SourceOpenError with a one-line reason.
 */
export async function openFlatGeobuf(location: string, options: RangeReaderOptions): Promise<FeatureReader> {
  const { sourceId } = options;
  const file = await openRangeFile(location, options, 'FlatGeobuf');
  const cache = new RangeCache(file);
  try {
    const { header, headerLength } = await readHeader(cache);
    const crs = await crsTransform(
      header.crs && (header.crs.code !== 0 || header.crs.wkt || header.crs.code_string)
        ? { authority: header.crs.org ?? 'EPSG', code: header.crs.code || header.crs.code_string || undefined, definition: header.crs.wkt ?? undefined }
        : undefined,
      options.readCrs,
    );
    const indexed = header.indexNodeSize > 0 && header.featuresCount > 0;
    const treeStart = 8 + 4 + headerLength;
    const featuresStart = treeStart + (indexed ? calcTreeSize(header.featuresCount, header.indexNodeSize) : 0);
    if (featuresStart > file.size) throw new Error('the spatial index is cut short (truncated file)');
    const fields: Record<string, FieldType> = {};
    for (const c of header.columns ?? []) {
      const t = fieldType(c.type);
      if (t) fields[c.name] = t;
    }
    const idField = idColumn((header.columns ?? []).filter((c) => INTEGER_TYPES.has(c.type)).map((c) => c.name));
    let tree: PackedRTree | undefined;
    let memoryIndex: MemoryIndex | undefined;
    let extent: number[] | undefined = header.envelope && header.envelope.length >= 4 ? Array.from(header.envelope.subarray(0, 4)) : undefined;
    if (indexed) {
      tree = new PackedRTree(cache, treeStart, header.featuresCount, header.indexNodeSize);
      extent ??= await tree.extent();
      // The last feature must be whole: a truncated file is an open error, not a 500 on some tile later.
      const last = await lastFeatureEnd(cache, treeStart, header, featuresStart);
      if (last > file.size) throw new Error('the last feature is cut short (truncated file)');
    } else if (header.featuresCount === 0 && file.size <= featuresStart) {
      memoryIndex = { boxes: new Float64Array(0), offsets: new Float64Array(0), count: 0 };
    } else {
      if (file.size > UNINDEXED_MAX_BYTES) {
        throw new Error(`the file has no spatial index and is larger than ${UNINDEXED_MAX_BYTES / 1024 / 1024} MiB: write it with one (ogr2ogr -f FlatGeobuf -lco SPATIAL_INDEX=YES)`);
      }
      memoryIndex = await FlatGeobufReader.scan(cache, header, featuresStart);
      if (!extent && memoryIndex.count > 0) {
        const b = memoryIndex.boxes;
        extent = [Infinity, Infinity, -Infinity, -Infinity];
        for (let i = 0; i < memoryIndex.count; i++) {
          extent = [Math.min(extent[0], b[i * 4]), Math.min(extent[1], b[i * 4 + 1]), Math.max(extent[2], b[i * 4 + 2]), Math.max(extent[3], b[i * 4 + 3])];
        }
      }
    }
    const count = memoryIndex ? memoryIndex.count : header.featuresCount;
    const layer: FileLayer = { name: sourceId, fields, bounds: count > 0 ? layerBounds(extent, crs) : undefined, featureCount: count };
    return new FlatGeobufReader(cache, header, layer, featuresStart, tree, memoryIndex, crs, idField, 12 + headerLength, featureCache(options.cacheBytes));
  } catch (err) {
    await file.close().catch(() => {});
    if (err instanceof SourceOpenError) throw err;
    throw new SourceOpenError(sourceId, `cannot open FlatGeobuf ${location}: ${err instanceof Error ? err.message : String(err)}`);
  }
}

/** Where the feature with the largest offset ends (its offset is in the last leaves of the tree). */
async function lastFeatureEnd(cache: RangeCache, treeStart: number, header: HeaderMeta, featuresStart: number): Promise<number> {
  const treeSize = calcTreeSize(header.featuresCount, header.indexNodeSize);
  // Leaves are in file order, so the last leaf holds the last feature's offset.
  const leaf = await cache.read(treeStart + treeSize - 40, 40);
  if (leaf.byteLength < 40) throw new Error('the spatial index is cut short (truncated file)');
  const offset = Number(new DataView(leaf.buffer, leaf.byteOffset, 40).getBigUint64(32, true));
  const prefix = await cache.read(featuresStart + offset, 4);
  if (prefix.byteLength < 4) throw new Error('the last feature is cut short (truncated file)');
  return featuresStart + offset + 4 + new DataView(prefix.buffer, prefix.byteOffset, 4).getUint32(0, true);
}
