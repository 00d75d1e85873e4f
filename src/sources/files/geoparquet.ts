// GeoParquet files (1.0, 1.1; WKB geometry, any row-group layout) as a FeatureReader, local or remote, through
// hyparquet reading an AsyncBuffer of byte ranges (range-file.ts, range-cache.ts). What a box costs:
// - row groups whose bbox covering statistics (GeoParquet 1.1 `covering.bbox`, or Parquet's own geospatial
//   statistics) miss the box are not read at all;
// - in the others, the covering columns are read first (a few doubles a row) and the full rows only for the runs
//   of rows that meet the box, by row range, so with a page index only the pages holding them are fetched;
// - without a covering, each row group is read whole and its rows tested by their geometry's box.
// Rows are decoded a slice at a time (SLICE_ROWS, fewer for large rows), so a request holds one slice of decoded
// rows. hyparquet fetches whole column chunks, or with a page index (offset index) only the pages of the rows
// asked for: without one, what a request holds at once follows the size of a row group's column chunks, so
// files meant to be served should have modest row groups (a few MB to a few tens of MB) or a page index.
//
// Properties: every top-level column but the geometry and the covering; nested values as JSON text (see
// property-value.ts). A feature id comes from an integer column named `fid` or `id`, which stays a property.
import type { LRUCache } from 'lru-cache';
import { parquetMetadataAsync, parquetReadObjects, type AsyncBuffer, type ColumnChunk, type FileMetaData, type ParquetParsers, type SchemaElement } from 'hyparquet';
import type { Geometry } from 'geojson';
import type { Bounds } from '../source.js';
import { SourceOpenError, WORLD_BOUNDS } from '../source.js';
import { boxesMeet, crsTransform, geometryBounds, transformBox, transformGeometry, type CrsTransform } from './crs.js';
import { featureCache } from './feature-cache.js';
import { geoColumn, topLevel, type GeoColumn } from './parquet-geo.js';
import { featureId, idColumn, propertyValue } from './property-value.js';
import { RangeCache } from './range-cache.js';
import { openRangeFile, type RangeFile, type RangeReaderOptions } from './range-file.js';
import type { FeatureReader, FieldType, FileFeature, FileLayer, PropertyValue } from './reader.js';
import { parseWkb } from './wkb.js';

/** Rows decoded at once, at most; fewer when rows are large (SLICE_BYTES of uncompressed data). */
export const SLICE_ROWS = 4096;
const SLICE_BYTES = 8 * 1024 * 1024;
/** Matching rows closer than this are read in one range (fewer, larger reads). */
const RUN_GAP = 64;

/** Row groups up to this many uncompressed bytes are decoded whole and kept (see GeoParquetReader.groups). */
const GROUP_CACHE_MAX_BYTES = 4 * 1024 * 1024;
/** A decoded group's memory over its uncompressed bytes (GeoJSON arrays, property objects), roughly. */
const DECODED_FACTOR = 4;

interface DecodedGroup {
  features: FileFeature[];
  /** Each feature's box in longitude/latitude. */
  boxes: (readonly number[])[];
  bytes: number;
}

/** Geometry stays raw bytes out of hyparquet; parseWkb reads it (EWKB flags, Z/M dropped). */
const RAW_GEOMETRY: Partial<ParquetParsers> = { geometryFromBytes: (b: Uint8Array) => b, geographyFromBytes: (b: Uint8Array) => b };

type Row = Record<string, unknown>;

function asArrayBuffer(b: Uint8Array): ArrayBuffer {
  return b.byteOffset === 0 && b.byteLength === b.buffer.byteLength ? (b.buffer as ArrayBuffer) : (b.slice().buffer as ArrayBuffer);
}

function fieldType(e: SchemaElement): FieldType {
  if (e.num_children) return 'String';
  const lt = e.logical_type?.type;
  if (e.type === 'BOOLEAN') return 'Boolean';
  if (e.converted_type === 'DECIMAL' || lt === 'DECIMAL' || lt === 'FLOAT16') return 'Number';
  if ((e.type === 'INT32' || e.type === 'INT64' || e.type === 'FLOAT' || e.type === 'DOUBLE') && !isTemporal(e)) return 'Number';
  return 'String';
}

function isTemporal(e: SchemaElement): boolean {
  const c = e.converted_type ?? '';
  const lt = e.logical_type?.type ?? '';
  return /DATE|TIME/.test(c) || /DATE|TIME/.test(lt);
}

const isInteger = (e: SchemaElement) => !e.num_children && (e.type === 'INT32' || e.type === 'INT64') && !isTemporal(e) && e.converted_type !== 'DECIMAL';

class GeoParquetReader implements FeatureReader {
  private readonly buffer: AsyncBuffer;
  /** Row index of each row group's first row. */
  private readonly groupStarts: number[] = [];

  constructor(
    private readonly cache: RangeCache,
    private readonly metadata: FileMetaData,
    private readonly geo: GeoColumn,
    private readonly layer: FileLayer,
    private readonly propertyColumns: string[],
    private readonly crs: CrsTransform | undefined,
    private readonly idField: string | undefined,
    /**
     * Row groups decoded whole, kept up to a byte budget (`feature_cache_mb`): a tile of a small group decodes the
     * group once for itself and its neighbours rather than slice by slice for each. Only groups of at most
     * GROUP_CACHE_MAX_BYTES (uncompressed) are kept this way; larger ones are read as before, by runs of rows.
     */
    private readonly groups: LRUCache<number, DecodedGroup>,
  ) {
    this.buffer = { byteLength: cache.size, slice: async (start, end) => asArrayBuffer(await cache.read(start, (end ?? cache.size) - start)) };
    let at = 0;
    for (const g of metadata.row_groups) {
      this.groupStarts.push(at);
      at += Number(g.num_rows);
    }
  }

  get layers(): readonly FileLayer[] {
    return [this.layer];
  }

  memoryBytes(): number {
    return (this.metadata.metadata_length ?? 0) + this.cache.memoryBytes() + this.groups.calculatedSize;
  }

  /** Whether row group `g` is decoded whole and kept (see `groups`). */
  private keepsWhole(g: number): boolean {
    const bytes = Number(this.metadata.row_groups[g].total_byte_size);
    return bytes <= GROUP_CACHE_MAX_BYTES && bytes * DECODED_FACTOR <= this.groups.maxSize;
  }

  async featuresInBox(layer: string, bbox: Bounds, limit: number): Promise<FileFeature[]> {
    const out: FileFeature[] = [];
    if (layer !== this.layer.name) return out;
    const query = transformBox(bbox, this.crs?.fromLonLat);
    const groups = this.metadata.row_groups.map((_, g) => g).filter((g) => this.groupMeets(this.metadata.row_groups[g].columns, query));
    if (!groups.every((g) => this.keepsWhole(g))) {
      for await (const f of this.features(layer, bbox)) if (out.push(f) >= limit) break;
      return out;
    }
    for (const g of groups) {
      const decoded = await this.decodedGroup(g);
      for (let i = 0; i < decoded.features.length; i++) {
        if (boxesMeet(decoded.boxes[i], bbox) && out.push(decoded.features[i]) >= limit) return out;
      }
    }
    return out;
  }

  /** A small row group's features and their boxes, decoded once (all its rows, every served column). */
  private async decodedGroup(g: number): Promise<DecodedGroup> {
    const kept = this.groups.get(g);
    if (kept) return kept;
    const start = this.groupStarts[g];
    const rows = await this.read(start, start + Number(this.metadata.row_groups[g].num_rows), [...this.propertyColumns, this.geo.name]);
    const features: FileFeature[] = [];
    const boxes: (readonly number[])[] = [];
    for (const row of rows) {
      const f = this.toFeature(row);
      const box = f && geometryBounds(f.geometry);
      if (!f || !box) continue;
      features.push(f);
      boxes.push(box);
    }
    const group = { features, boxes, bytes: Number(this.metadata.row_groups[g].total_byte_size) * DECODED_FACTOR };
    this.groups.set(g, group);
    return group;
  }

  async close(): Promise<void> {
    await this.cache.file.close();
  }

  heldInMemory(): undefined {
    return undefined;
  }

  async *features(layer: string, bbox: Bounds | undefined, signal?: AbortSignal): AsyncIterable<FileFeature> {
    if (layer !== this.layer.name) return;
    const query = bbox && transformBox(bbox, this.crs?.fromLonLat);
    for (let g = 0; g < this.metadata.row_groups.length; g++) {
      if (signal?.aborted) return;
      const group = this.metadata.row_groups[g];
      if (query && !this.groupMeets(group.columns, query)) continue;
      if (this.keepsWhole(g)) {
        const decoded = await this.decodedGroup(g);
        for (let i = 0; i < decoded.features.length; i++) {
          if (signal?.aborted) return;
          if (!bbox || boxesMeet(decoded.boxes[i], bbox)) yield decoded.features[i];
        }
        continue;
      }
      const start = this.groupStarts[g];
      const rows = Number(group.num_rows);
      const end = start + rows;
      const sliceRows = Math.max(16, Math.min(SLICE_ROWS, Math.floor(SLICE_BYTES / (Number(group.total_byte_size) / rows || 1))));
      for (let s = start; s < end; s += sliceRows) {
        if (signal?.aborted) return;
        const sliceEnd = Math.min(end, s + sliceRows);
        const runs = query && this.geo.covering ? await this.coveringRuns(s, sliceEnd, query) : [{ from: s, to: sliceEnd }];
        for (const run of runs) {
          const rows = await this.read(run.from, run.to, [...this.propertyColumns, this.geo.name]);
          for (const row of rows) {
            if (signal?.aborted) return;
            const f = this.toFeature(row);
            if (!f) continue;
            if (bbox) {
              const box = geometryBounds(f.geometry);
              if (!box || !boxesMeet(box, bbox)) continue;
            }
            yield f;
          }
        }
      }
    }
  }

  private read(rowStart: number, rowEnd: number, columns: string[]): Promise<Row[]> {
    return parquetReadObjects({ file: this.buffer, metadata: this.metadata, rowStart, rowEnd, columns, parsers: RAW_GEOMETRY, useOffsetIndex: true }) as Promise<Row[]>;
  }

  /** Whether a row group's statistics (covering columns, else Parquet's geospatial statistics) allow a row in `query`. */
  private groupMeets(chunks: ColumnChunk[], query: readonly number[]): boolean {
    const cov = this.geo.covering;
    if (cov) {
      const stat = (field: string, which: 'min_value' | 'max_value'): number | undefined => {
        const chunk = chunks.find((c) => c.meta_data?.path_in_schema.length === 2 && c.meta_data.path_in_schema[0] === cov.column && c.meta_data.path_in_schema[1] === field);
        const v = chunk?.meta_data?.statistics?.[which];
        return typeof v === 'number' ? v : undefined;
      };
      const xmin = stat(cov.xmin, 'min_value');
      const ymin = stat(cov.ymin, 'min_value');
      const xmax = stat(cov.xmax, 'max_value');
      const ymax = stat(cov.ymax, 'max_value');
      if (xmin !== undefined && ymin !== undefined && xmax !== undefined && ymax !== undefined) return boxesMeet([xmin, ymin, xmax, ymax], query);
    }
    const geoStats = chunks.find((c) => c.meta_data?.path_in_schema[0] === this.geo.name)?.meta_data?.geospatial_statistics?.bbox;
    if (geoStats) return boxesMeet([geoStats.xmin, geoStats.ymin, geoStats.xmax, geoStats.ymax], query);
    return true;
  }

  /** The runs of rows in [from, to) whose covering box meets `query`, neighbours merged. */
  private async coveringRuns(from: number, to: number, query: readonly number[]): Promise<Array<{ from: number; to: number }>> {
    const cov = this.geo.covering!;
    const rows = await this.read(from, to, [cov.column]);
    const runs: Array<{ from: number; to: number }> = [];
    rows.forEach((row, i) => {
      const b = row[cov.column] as Record<string, unknown> | null | undefined;
      if (!b) return;
      const box = [Number(b[cov.xmin]), Number(b[cov.ymin]), Number(b[cov.xmax]), Number(b[cov.ymax])];
      if (!boxesMeet(box, query)) return;
      const last = runs[runs.length - 1];
      if (last && from + i - last.to <= RUN_GAP) last.to = from + i + 1;
      else runs.push({ from: from + i, to: from + i + 1 });
    });
    return runs;
  }

  private toFeature(row: Row): FileFeature | undefined {
    const wkb = row[this.geo.name];
    if (!(wkb instanceof Uint8Array) || wkb.byteLength === 0) return undefined;
    let geometry: Geometry;
    try {
      geometry = parseWkb(wkb);
    } catch {
      return undefined;
    }
    if (this.crs) geometry = transformGeometry(geometry, this.crs.toLonLat);
    const properties: Record<string, PropertyValue> = {};
    for (const name of this.propertyColumns) {
      const v = propertyValue(row[name]);
      if (v !== undefined) properties[name] = v;
    }
    const id = this.idField === undefined ? undefined : featureId(row[this.idField]);
    return id === undefined ? { geometry, properties } : { id, geometry, properties };
  }
}

/** The layer's extent in longitude/latitude: the metadata's bbox, else the covering's statistics, else the world. */
function layerBounds(metadata: FileMetaData, geo: GeoColumn, crs: CrsTransform | undefined): Bounds | undefined {
  if (Number(metadata.num_rows) === 0) return undefined;
  let extent = geo.bbox;
  const cov = geo.covering;
  if (!extent && cov) {
    const e = [Infinity, Infinity, -Infinity, -Infinity];
    for (const g of metadata.row_groups) {
      for (const c of g.columns) {
        const [col, field] = c.meta_data?.path_in_schema ?? [];
        const st = c.meta_data?.statistics;
        if (col !== cov.column || !st) continue;
        if (field === cov.xmin && typeof st.min_value === 'number') e[0] = Math.min(e[0], st.min_value);
        if (field === cov.ymin && typeof st.min_value === 'number') e[1] = Math.min(e[1], st.min_value);
        if (field === cov.xmax && typeof st.max_value === 'number') e[2] = Math.max(e[2], st.max_value);
        if (field === cov.ymax && typeof st.max_value === 'number') e[3] = Math.max(e[3], st.max_value);
      }
    }
    if (e.every(Number.isFinite)) extent = e;
  }
  if (!extent) return [...WORLD_BOUNDS];
  const b = transformBox(extent, crs?.toLonLat);
  return b.every(Number.isFinite) ? b : [...WORLD_BOUNDS];
}

/**
 * Opens a GeoParquet file (a local path or an http(s)/s3/gs/az URL). Its one layer is named after the source.
 * Throws SourceOpenError with a one-line reason (not Parquet, no geometry column, an encoding other than WKB,
 * a CRS GDAL cannot read).
 */
export async function openGeoParquet(location: string, options: RangeReaderOptions): Promise<FeatureReader> {
  const { sourceId } = options;
  const file: RangeFile = await openRangeFile(location, options, 'GeoParquet');
  const cache = new RangeCache(file);
  try {
    if (file.size < 12) throw new Error('not a Parquet file (too short)');
    const tail = await cache.read(file.size - 4, 4);
    const head = await cache.read(0, 4);
    const par1 = (b: Uint8Array) => b[0] === 0x50 && b[1] === 0x41 && b[2] === 0x52 && b[3] === 0x31;
    if (!par1(head)) throw new Error('not a Parquet file (no "PAR1" signature)');
    if (!par1(tail)) throw new Error('not a whole Parquet file (no "PAR1" at its end: truncated?)');
    const buffer: AsyncBuffer = { byteLength: file.size, slice: async (s, e) => asArrayBuffer(await cache.read(s, (e ?? file.size) - s)) };
    let metadata: FileMetaData;
    try {
      // The footer is usually much smaller than hyparquet's first guess (512 KiB), which a remote file pays for.
      metadata = await parquetMetadataAsync(buffer, { parsers: RAW_GEOMETRY, initialFetchSize: 64 * 1024 });
    } catch (err) {
      throw new Error(`its Parquet metadata cannot be read (${err instanceof Error ? err.message : String(err)})`);
    }
    const geo = geoColumn(metadata);
    if (typeof geo === 'string') throw new Error(geo);
    let crs: CrsTransform | undefined;
    try {
      crs = await crsTransform(geo.crs, options.readCrs);
    } catch (err) {
      throw new Error(err instanceof Error ? err.message : String(err));
    }
    const top = topLevel(metadata.schema);
    const props = top.filter((e) => e.name !== geo.name && e.name !== geo.covering?.column);
    const fields: Record<string, FieldType> = {};
    for (const e of props) fields[e.name] = fieldType(e);
    const idField = idColumn(props.filter(isInteger).map((e) => e.name));
    const layer: FileLayer = { name: sourceId, fields, bounds: layerBounds(metadata, geo, crs), featureCount: Number(metadata.num_rows) };
    return new GeoParquetReader(cache, metadata, geo, layer, props.map((e) => e.name), crs, idField, featureCache(options.cacheBytes));
  } catch (err) {
    await file.close().catch(() => {});
    throw new SourceOpenError(sourceId, `cannot open GeoParquet ${location}: ${err instanceof Error ? err.message : String(err)}`);
  }
}
