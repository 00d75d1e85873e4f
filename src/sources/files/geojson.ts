// GeoJSON files (RFC 7946): a FeatureCollection, a single Feature, or newline-delimited features (one Feature per
// line). The file is read whole, checked, and indexed in memory (grid-index.ts): files up to `maxBytes` (the
// source's `max_size_mb`) only, so that a file too large to hold is refused at open with a reason rather than
// taking the process's memory. One layer, named after the source.
import { readFile, stat } from 'node:fs/promises';
import type { Geometry } from 'geojson';
import { SourceOpenError, type Bounds } from '../source.js';
import { FieldTypes, propertyValue } from './fields.js';
import { GridIndex } from './grid-index.js';
import type { FeatureReader, FileFeature, FileLayer, OpenReader, PropertyValue } from './reader.js';

/** The largest GeoJSON file held in memory when the source sets no `max_size_mb`. */
export const DEFAULT_GEOJSON_MAX_BYTES = 256 * 1024 * 1024;

class NotGeoJson extends Error {}

/** Depth of nesting of each geometry type's coordinates (a position is depth 1). */
const DEPTH: Record<string, number> = { Point: 1, MultiPoint: 2, LineString: 2, MultiLineString: 3, Polygon: 3, MultiPolygon: 4 };

function checkCoordinates(c: unknown, depth: number, box: number[]): void {
  if (!Array.isArray(c)) throw new NotGeoJson('coordinates are not arrays of the depth the geometry type has');
  if (depth === 1) {
    if (c.length < 2 || !c.every((n) => typeof n === 'number' && Number.isFinite(n))) throw new NotGeoJson(`a position must be 2 or more finite numbers, not ${JSON.stringify(c).slice(0, 60)}`);
    const [x, y] = c as number[];
    if (x < box[0]) box[0] = x;
    if (y < box[1]) box[1] = y;
    if (x > box[2]) box[2] = x;
    if (y > box[3]) box[3] = y;
    return;
  }
  for (const inner of c) checkCoordinates(inner, depth - 1, box);
}

function checkGeometry(g: unknown, box: number[]): Geometry {
  if (!g || typeof g !== 'object') throw new NotGeoJson('geometry is not an object');
  const { type } = g as { type?: unknown };
  if (type === 'GeometryCollection') {
    const members = (g as { geometries?: unknown }).geometries;
    if (!Array.isArray(members)) throw new NotGeoJson('a GeometryCollection without geometries');
    for (const m of members) checkGeometry(m, box);
    return g as Geometry;
  }
  const depth = typeof type === 'string' ? DEPTH[type] : undefined;
  if (depth === undefined) throw new NotGeoJson(`geometry type ${JSON.stringify(type)} is not a GeoJSON geometry type`);
  checkCoordinates((g as { coordinates?: unknown }).coordinates, depth, box);
  return g as Geometry;
}

/** The Feature objects of a file's text, or NotGeoJson saying why there are none. */
function featuresOf(text: string): unknown[] {
  let doc: unknown;
  try {
    doc = JSON.parse(text);
  } catch (err) {
    // Newline-delimited GeoJSON is not one JSON document: read it line by line.
    const lines = text.split('\n').filter((l) => l.trim() !== '');
    if (lines.length < 2) throw new NotGeoJson(`not JSON (${(err as Error).message})`);
    return lines.map((line, i) => {
      try {
        return JSON.parse(line) as unknown;
      } catch (e) {
        throw new NotGeoJson(`line ${i + 1} is not JSON (${(e as Error).message}); newline-delimited GeoJSON has one Feature per line`);
      }
    });
  }
  const type = doc && typeof doc === 'object' ? (doc as { type?: unknown }).type : undefined;
  if (type === 'FeatureCollection') {
    const features = (doc as { features?: unknown }).features;
    if (!Array.isArray(features)) throw new NotGeoJson('a FeatureCollection without a features array');
    return features;
  }
  if (type === 'Feature') return [doc];
  throw new NotGeoJson(`a FeatureCollection, a Feature or newline-delimited features expected, found ${type === undefined ? (Array.isArray(doc) ? 'an array' : typeof doc) : `type ${JSON.stringify(type)}`}`);
}

interface Loaded {
  features: FileFeature[];
  boxes: Float64Array;
  layer: FileLayer;
  /** What the features take in memory, estimated from the file's size (parsed JSON takes about twice its text). */
  bytes: number;
}

function load(text: string, name: string): Loaded {
  const raw = featuresOf(text);
  const features: FileFeature[] = [];
  const boxes: number[] = [];
  const types = new FieldTypes();
  const extent = [Infinity, Infinity, -Infinity, -Infinity];
  raw.forEach((f, i) => {
    const where = `feature ${i + 1}`;
    if (!f || typeof f !== 'object' || (f as { type?: unknown }).type !== 'Feature') throw new NotGeoJson(`${where} is not a Feature`);
    const { geometry, properties, id } = f as { geometry?: unknown; properties?: unknown; id?: unknown };
    // A feature without a geometry has no place in a tile or a spatial query: it is left out.
    if (geometry === null || geometry === undefined) return;
    const box = [Infinity, Infinity, -Infinity, -Infinity];
    let g: Geometry;
    try {
      g = checkGeometry(geometry, box);
    } catch (err) {
      throw new NotGeoJson(`${where}: ${(err as Error).message}`);
    }
    if (!Number.isFinite(box[0])) return;
    if (properties !== null && properties !== undefined && (typeof properties !== 'object' || Array.isArray(properties))) throw new NotGeoJson(`${where}: properties is not an object`);
    const props: Record<string, PropertyValue> = {};
    const seen: Record<string, PropertyValue> = {};
    for (const [k, v] of Object.entries((properties ?? {}) as Record<string, unknown>)) Object.defineProperty(seen, k, { value: propertyValue(v), enumerable: true, writable: true, configurable: true });
    types.add(seen);
    // Null values are kept out of the features (a tile leaves them out, a filter reads a missing value as null), so
    // that the tiler's tags can be written as they are.
    for (const k in seen) if (seen[k] !== null) Object.defineProperty(props, k, { value: seen[k], enumerable: true, writable: true, configurable: true });
    const feature: FileFeature = { geometry: g, properties: props };
    // MVT ids are unsigned integers: other ids (strings, negative numbers) are not carried.
    if (typeof id === 'number' && Number.isSafeInteger(id) && id >= 0) feature.id = id;
    features.push(feature);
    boxes.push(box[0], box[1], box[2], box[3]);
    for (let k = 0; k < 2; k++) extent[k] = Math.min(extent[k], box[k]);
    for (let k = 2; k < 4; k++) extent[k] = Math.max(extent[k], box[k]);
  });
  // A property with values of several types is text everywhere (as a database column would hold it).
  for (const key of types.mixed()) for (const f of features) if (f.properties[key] !== null && f.properties[key] !== undefined) f.properties[key] = String(f.properties[key]);
  const bounds = features.length ? (extent as Bounds) : undefined;
  if (bounds && (bounds[0] < -180.5 || bounds[2] > 180.5 || bounds[1] < -90.5 || bounds[3] > 90.5)) {
    throw new NotGeoJson(`coordinates reach ${bounds.map((n) => Math.round(n)).join(', ')}, beyond longitude/latitude; GeoJSON is in WGS 84 degrees (RFC 7946): reproject it, e.g. ogr2ogr -t_srs EPSG:4326`);
  }
  return { features, boxes: Float64Array.from(boxes), layer: { name, fields: types.fields(), bounds, featureCount: features.length }, bytes: text.length * 2 };
}

class GeoJsonReader implements FeatureReader {
  readonly layers: readonly FileLayer[];
  private readonly index: GridIndex | undefined;

  constructor(private readonly data: Loaded) {
    this.layers = [data.layer];
    this.index = data.layer.bounds ? new GridIndex(data.boxes, data.layer.bounds) : undefined;
  }

  async *features(layer: string, bbox: Bounds | undefined, signal?: AbortSignal): AsyncIterable<FileFeature> {
    if (layer !== this.data.layer.name || !this.index) return;
    if (!bbox) {
      for (const f of this.data.features) {
        if (signal?.aborted) return;
        yield f;
      }
      return;
    }
    for (const i of this.index.search(bbox)) {
      if (signal?.aborted) return;
      yield this.data.features[i];
    }
  }

  async featuresInBox(layer: string, bbox: Bounds, limit: number): Promise<FileFeature[]> {
    if (layer !== this.data.layer.name || !this.index) return [];
    const found = this.index.search(bbox);
    const out = new Array<FileFeature>(Math.min(found.length, limit));
    for (let i = 0; i < out.length; i++) out[i] = this.data.features[found[i]];
    return out;
  }

  heldInMemory(layer: string): readonly FileFeature[] | undefined {
    return layer === this.data.layer.name ? this.data.features : undefined;
  }

  memoryBytes(): number {
    return this.data.bytes + (this.index?.bytes ?? 0);
  }

  async close(): Promise<void> {}
}

export const openGeoJson: OpenReader = async (location, options) => {
  const max = options.maxBytes ?? DEFAULT_GEOJSON_MAX_BYTES;
  let text: string;
  try {
    const { size } = await stat(location);
    if (size > max) throw new SourceOpenError(options.sourceId, `GeoJSON ${location} is ${Math.ceil(size / 1048576)} MB, above max_size_mb (${Math.floor(max / 1048576)} MB): GeoJSON is held in memory; raise max_size_mb, or convert it to GeoPackage or FlatGeobuf, which are read through their spatial index`);
    text = await readFile(location, 'utf8');
  } catch (err) {
    if (err instanceof SourceOpenError) throw err;
    const code = (err as NodeJS.ErrnoException).code;
    throw new SourceOpenError(options.sourceId, `cannot read GeoJSON ${location}: ${code === 'ENOENT' ? 'no such file' : code === 'EISDIR' ? 'it is a directory' : (err as Error).message}`);
  }
  try {
    return new GeoJsonReader(load(text, options.sourceId));
  } catch (err) {
    if (err instanceof NotGeoJson) throw new SourceOpenError(options.sourceId, `${location} is not GeoJSON: ${err.message}`);
    throw err;
  }
};
