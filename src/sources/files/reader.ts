// What a vector data file (GeoJSON, FlatGeobuf, GeoParquet, GeoPackage) looks like to the file source: layers with
// typed fields, and the features of a layer that meet a box, read through the file's own spatial index. Each
// format's reader implements this; the source (tiling, filters, OGC API - Features) is written once above it.
import type { Geometry } from 'geojson';
import type { FileSourceConfig, StorageConfig } from '../../config/schema.js';
import type { Bounds } from '../source.js';
import type { CrsReader } from './crs.js';

/** A property's type as TileJSON's `vector_layers` names it. */
export type FieldType = 'String' | 'Number' | 'Boolean';

/** A property value as MVT can carry it; nested values (lists, objects) arrive as JSON text. */
export type PropertyValue = string | number | boolean | null;

export interface FileFeature {
  /** A non-negative integer feature id, when the file has one (FID, an integer id column); MVT ids are integers. */
  id?: number;
  /** In longitude/latitude (EPSG:4326, x = longitude) whatever the file's own CRS. */
  geometry: Geometry;
  properties: Record<string, PropertyValue>;
}

export interface FileLayer {
  /** The layer's name in tiles (a GeoPackage table's name; the source's id for single-layer formats). */
  name: string;
  fields: Record<string, FieldType>;
  /** The extent of the layer's features in longitude/latitude, or undefined when the layer is empty. */
  bounds: Bounds | undefined;
  featureCount?: number;
}

/**
 * One reading of a data file. What its callers need, and nothing of how a format keeps its features: OGC API -
 * Features walks a layer in file order (`features`), a tile takes the features of its box as one array
 * (`featuresInBox`), and a reader that holds a whole layer in memory hands it over (`heldInMemory`) so that the
 * source can cut unfiltered tiles from one index of it.
 */
export interface FeatureReader {
  readonly layers: readonly FileLayer[];
  /**
   * The features of `layer` whose bounding box meets `bbox` (west, south, east, north in degrees; undefined for
   * all), in the file's order, read through the file's spatial index so that memory follows what lies in the box,
   * not the file's size. Stops reading when the consumer stops iterating or `signal` aborts.
   */
  features(layer: string, bbox: Bounds | undefined, signal?: AbortSignal): AsyncIterable<FileFeature>;
  /**
   * The same features of a box as one array, at most `limit` (a tile's `max_features`), in the file's order: a
   * tile reads thousands, and a promise per feature was a large part of its CPU. None for a layer the file lacks.
   */
  featuresInBox(layer: string, bbox: Bounds, limit: number): Promise<FileFeature[]>;
  /**
   * Every feature of `layer` when this reader holds them all in memory (GeoJSON), for an index built once over
   * them (geojson-vt's, which cuts each tile from its parent's); undefined from readers that read through the
   * file's index on request, for which such an index would hold the whole file.
   */
  heldInMemory(layer: string): readonly FileFeature[] | undefined;
  /** Bytes this reader keeps between requests (an in-memory index, cached headers), for the source's memory gauge. */
  memoryBytes(): number;
  /** Releases the file (a handle, a connection); called once, when no request reads through this reader any more. */
  close(): Promise<void>;
}

export interface ReaderOptions {
  /** For SourceOpenError messages. */
  sourceId: string;
  /** For readers that can read remote files (http(s), s3, gs, az) through the object-storage readers. */
  storage: StorageConfig;
  /** GeoPackage: the feature tables to serve; undefined for all of them. */
  layers?: readonly string[];
  /** Readers that hold a file whole in memory (GeoJSON): the largest file they accept, in bytes. */
  maxBytes?: number;
  /** Readers that decode rows found through an index (GeoPackage): bytes of decoded features kept between requests. */
  cacheBytes?: number;
  /**
   * GeoPackage: the most rows of a table whose R*Tree boxes are held in memory (gpkg-boxes.ts); a larger table is
   * searched through the R*Tree. Default MAX_BOXES_IN_MEMORY; the tests set 0 to read through the R*Tree.
   */
  boxesInMemory?: number;
  /** The source's configuration, for the storage keys of a remote file (endpoint, region, credentials). */
  source?: FileSourceConfig;
  /** GDAL's reading of a CRS other than longitude/latitude and Web Mercator (files/crs.ts): the raster pool's. */
  readCrs?: CrsReader;
}

/**
 * Opens `location` (a local path, or for formats read by ranges a remote URL). Throws SourceOpenError with a
 * one-line reason (truncated file, no geometry column, not GeoJSON, no feature table, a CRS that cannot be
 * transformed) when the file cannot be served.
 */
export type OpenReader = (location: string, options: ReaderOptions) => Promise<FeatureReader>;
