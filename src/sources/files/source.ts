// A data file (GeoJSON, GeoPackage, ...: readers.ts) served as MVT tiles made on request. For a tile, the reader
// gives the features whose box meets the tile grown by its buffer (through the file's spatial index), a request's
// CQL2 filter is evaluated on them in memory and its properties picked, and @maplibre/geojson-vt clips them to the
// buffer and simplifies them to the zoom's resolution before the project's MVT encoder writes them. A file held in
// memory whole (GeoJSON) keeps one geojson-vt index per layer for unfiltered tiles, which cuts each tile from its
// parent's. The same features answer OGC API - Features (features.ts).
import { stat } from 'node:fs/promises';
import { GeoJSONVT, geoJSONToTile, type GeoJSONVTTile } from '@maplibre/geojson-vt';
import type { Feature as GeoJsonFeature, FeatureCollection } from 'geojson';
import type { FileSourceConfig, StorageConfig } from '../../config/schema.js';
import { isRemotePath } from '../../config/object-location.js';
import { Cql2Error } from '../../cql2/ast.js';
import { compileFilter, type Predicate } from '../../cql2/evaluate.js';
import type { Queryable, QueryableKind } from '../../cql2/sql.js';
import { tileToLonLat } from '../../tiles/coords.js';
import { encodeMvt } from '../../tiles/mvt-encode.js';
import type { PropValue, TileFeature, TileLayer } from '../../tiles/vector-model.js';
import { log } from '../../log.js';
import { defaultCenter, SourceOpenError, TileUnavailableError, WORLD_BOUNDS, type Bounds, type SourceInfo, type TileFilter, type TileSource } from '../source.js';
import { isInMemory } from './geojson.js';
import { isGeoPackage } from './geopackage.js';
import { GpkgGeometryError } from './gpkg-geometry.js';
import { trackMemory, untrackMemory } from './metrics.js';
import type { FeatureReader, FieldType, FileFeature, FileLayer } from './reader.js';
import { FILE_READERS, type FileSourceType } from './readers.js';
import { FileChangedError } from './range-file.js';

export const DEFAULT_BUFFER = 64;
export const DEFAULT_EXTENT = 4096;
export const DEFAULT_MAX_FEATURES = 200_000;
export const DEFAULT_MINZOOM = 0;
export const DEFAULT_MAXZOOM = 14;
/** A tile filter's limits when the source sets none: those of PostGIS tables by default. */
const DEFAULT_FILTER_MAX_LENGTH = 2048;
const DEFAULT_FILTER_MAX_TERMS = 64;
/** geojson-vt's simplification tolerance, in tile units (of 4096: under a fifth of a 256-pixel tile's pixel). */
const TOLERANCE = 1;
/** The name filters use for a file feature's geometry (S_INTERSECTS(geometry, ...), geometry IS NULL). */
export const GEOMETRY_QUERYABLE = 'geometry';

/** How messages name each format. */
const LABELS: Record<string, string> = { geojson: 'GeoJSON', geopackage: 'GeoPackage', flatgeobuf: 'FlatGeobuf', geoparquet: 'GeoParquet' };

const KIND: Record<FieldType, QueryableKind> = { String: 'string', Number: 'number', Boolean: 'boolean' };

/** What the file looked like when it was read: a change of either means it must be read again. */
interface FileStamp {
  mtimeMs: number;
  size: number;
}

/** One reading of the file: its reader, what it serves, and the geojson-vt indexes of in-memory layers. */
export interface Generation {
  reader: FeatureReader;
  info: SourceInfo;
  stamp: FileStamp;
  /** Per layer: the properties served (config `properties`, else all). */
  served: Map<string, string[]>;
  queryables: Queryable[];
  /** Per layer: its own served properties and `geometry` (a layer's OGC API - Features collection filters on these). */
  layerQueryables: Map<string, Queryable[]>;
  indexes: Map<string, GeoJSONVT>;
}

/**
 * A local file's stamp. A remote file (FlatGeobuf, GeoParquet in a store) has none here: its readers pin the object's
 * ETag, and it is read again on every reload (which costs its header), under a revision of that moment.
 */
const stampOf = async (path: string): Promise<FileStamp> => {
  if (isRemotePath(path)) return { mtimeMs: Date.now(), size: -1 };
  const s = await stat(path);
  return { mtimeMs: s.mtimeMs, size: s.size };
};

/** The tile's box in degrees, grown by `margin` tiles on each side (the buffer), cut to the world. */
function tileBox(z: number, x: number, y: number, margin: number): Bounds {
  const [w, n] = tileToLonLat(z, x - margin, y - margin);
  const [e, s] = tileToLonLat(z, x + 1 + margin, y + 1 + margin);
  return [Math.max(-180, w), Math.max(-90, s), Math.min(180, e), Math.min(90, n)];
}

function pick(props: Record<string, unknown>, names: readonly string[]): Record<string, PropValue> {
  const out: Record<string, PropValue> = Object.create(null);
  for (const n of names) {
    const v = props[n];
    if (v !== null && v !== undefined) out[n] = v as PropValue;
  }
  return out;
}

/** A geojson-vt tile's features in the shared vector model (rings open, as MVT writes them). */
function layerOf(name: string, extent: number, tile: GeoJSONVTTile, names: readonly string[] | undefined): TileLayer {
  const features: TileFeature[] = [];
  for (const f of tile.features) {
    let geometry: number[][];
    if (f.type === 1) geometry = (f.geometry as [number, number][]).map((p) => [p[0], p[1]]);
    else {
      geometry = [];
      for (const part of f.geometry) {
        // Clipping at the buffer's edge can leave repeated vertices, and lines or rings with nothing between their
        // ends (a line that only touches the buffer): such parts are dropped, as PostGIS's ST_AsMVTGeom drops them.
        const flat: number[] = [];
        for (const p of part) if (flat.length === 0 || p[0] !== flat[flat.length - 2] || p[1] !== flat[flat.length - 1]) flat.push(p[0], p[1]);
        // geojson-vt closes rings; the model (and MVT's ClosePath) does not repeat the first vertex.
        if (f.type === 3 && flat.length >= 4 && flat[0] === flat[flat.length - 2] && flat[1] === flat[flat.length - 1]) flat.length -= 2;
        if (flat.length >= (f.type === 3 ? 6 : 4)) geometry.push(flat);
      }
      if (!geometry.length) continue;
    }
    // The readers leave missing values out: without a choice of properties the tags are written as they are.
    const tags = (f.tags ?? {}) as Record<string, PropValue>;
    features.push({ id: typeof f.id === 'number' ? f.id : undefined, type: f.type, geometry, properties: names ? pick(tags, names) : tags });
  }
  return { name, extent, version: 2, features };
}

export class FileSource implements TileSource {
  private constructor(
    private readonly cfg: FileSourceConfig,
    private readonly storage: StorageConfig,
    private current: Generation,
  ) {
    trackMemory(this, cfg.id, () => this.memoryBytes());
  }

  /** Reading a replaced remote file again (onCurrentReading), shared by the requests that found it replaced. */
  private renewing: Promise<Generation> | undefined;

  get info(): SourceInfo {
    return this.current.info;
  }

  get layers(): readonly FileLayer[] {
    return this.current.reader.layers;
  }

  static async open(cfg: FileSourceConfig, storage: StorageConfig): Promise<FileSource> {
    return new FileSource(cfg, storage, await FileSource.read(cfg, storage));
  }

  private static async read(cfg: FileSourceConfig, storage: StorageConfig): Promise<Generation> {
    const type = cfg.type as FileSourceType;
    let stamp: FileStamp;
    try {
      stamp = await stampOf(cfg.path);
    } catch (err) {
      const code = (err as NodeJS.ErrnoException).code;
      throw new SourceOpenError(cfg.id, `cannot read ${LABELS[type] ?? type} ${cfg.path}: ${code === 'ENOENT' ? 'no such file' : (err as Error).message}`);
    }
    const reader = await FILE_READERS[type](cfg.path, {
      sourceId: cfg.id,
      storage,
      layers: cfg.layers,
      maxBytes: cfg.max_size_mb !== undefined ? Math.floor(cfg.max_size_mb * 1048576) : undefined,
      cacheBytes: cfg.feature_cache_mb !== undefined ? Math.floor(cfg.feature_cache_mb * 1048576) : undefined,
      source: cfg,
    });
    try {
      return FileSource.generation(cfg, reader, stamp);
    } catch (err) {
      await reader.close().catch(() => {});
      throw err;
    }
  }

  private static generation(cfg: FileSourceConfig, reader: FeatureReader, stamp: FileStamp): Generation {
    const minzoom = cfg.minzoom ?? DEFAULT_MINZOOM;
    const maxzoom = cfg.maxzoom ?? DEFAULT_MAXZOOM;
    if (minzoom > maxzoom) throw new SourceOpenError(cfg.id, `minzoom ${minzoom} is above maxzoom ${maxzoom}`);
    const served = new Map<string, string[]>();
    const kinds = new Map<string, QueryableKind>();
    for (const l of reader.layers) {
      const names = Object.keys(l.fields);
      served.set(l.name, cfg.properties ? cfg.properties.filter((p) => names.includes(p)) : names);
      for (const n of served.get(l.name)!) if (!kinds.has(n)) kinds.set(n, KIND[l.fields[n]]);
    }
    for (const p of cfg.properties ?? []) {
      if (!kinds.has(p)) throw new SourceOpenError(cfg.id, `${cfg.path} has no property "${p}" (properties); it has ${[...new Set(reader.layers.flatMap((l) => Object.keys(l.fields)))].join(', ') || 'none'}`);
    }
    const all = reader.layers.map((l) => l.bounds).filter((b): b is Bounds => b !== undefined);
    const bounds: Bounds = all.length
      ? [Math.min(...all.map((b) => b[0])), Math.min(...all.map((b) => b[1])), Math.max(...all.map((b) => b[2])), Math.max(...all.map((b) => b[3]))]
      : WORLD_BOUNDS;
    const info: SourceInfo = {
      id: cfg.id,
      type: cfg.type,
      format: 'pbf',
      compression: 'none',
      name: cfg.name ?? cfg.id,
      attribution: cfg.attribution,
      description: cfg.description,
      minzoom,
      maxzoom,
      bounds,
      center: defaultCenter(bounds, minzoom, maxzoom),
      vectorLayers: reader.layers.map((l) => ({
        id: l.name,
        fields: Object.fromEntries(served.get(l.name)!.map((n) => [n, l.fields[n]])),
        minzoom,
        maxzoom,
      })),
      filterable: cfg.allow_filters !== false,
      filterLimits: { maxLength: cfg.filter_max_length ?? DEFAULT_FILTER_MAX_LENGTH, maxTerms: cfg.filter_max_terms ?? DEFAULT_FILTER_MAX_TERMS },
      // Part of the tile cache key: tiles of the file as it was before a change are not answered after it.
      revision: `${Math.round(stamp.mtimeMs)}-${stamp.size}`,
    };
    const geometry: Queryable = { name: GEOMETRY_QUERYABLE, kind: 'geometry', srid: 4326 };
    const queryables: Queryable[] = [...[...kinds].map(([name, kind]) => ({ name, kind })), geometry];
    const layerQueryables = new Map<string, Queryable[]>(
      reader.layers.map((l) => [l.name, [...served.get(l.name)!.map((name) => ({ name, kind: KIND[l.fields[name]] })), geometry]]),
    );
    return { reader, info, stamp, served, queryables, layerQueryables, indexes: new Map() };
  }

  /** Rereads the file when it changed since it was read (a reload of an unchanged configuration); the last good reading stays on failure. */
  async refresh(): Promise<void> {
    const seen = this.current;
    let now: FileStamp | undefined;
    try {
      now = await stampOf(this.cfg.path);
    } catch {
      now = undefined;
    }
    if (now && now.size >= 0 && now.mtimeMs === seen.stamp.mtimeMs && now.size === seen.stamp.size) return;
    try {
      const next = await FileSource.read(this.cfg, this.storage);
      this.current = next;
      log.info(`source "${this.cfg.id}": ${this.cfg.path} changed; read again`);
      // Requests that started on the old reading finish on it; its reader is closed once they had time to.
      setTimeout(() => void seen.reader.close().catch(() => {}), 30_000).unref();
    } catch (err) {
      const reason = err instanceof SourceOpenError ? err.reason : (err as Error).message;
      throw new SourceOpenError(this.cfg.id, `${reason}; the last good reading of the file is still served`);
    }
  }

  /** The properties a filter may name, for the file's features: every served property and `geometry`. */
  queryables(): Queryable[] {
    return this.current.queryables;
  }

  /**
   * What a filter on one layer's features may name: that layer's served properties (with that layer's types, where
   * another layer may have the same name with another type) and `geometry`; none for a layer the file lacks.
   */
  layerQueryables(layer: string): Queryable[] {
    return this.current.layerQueryables.get(layer) ?? [];
  }

  /** The filter as a predicate; throws TileUnavailableError 400 naming `filter` when it does not fit the properties. */
  predicate(filter: TileFilter): Predicate | undefined {
    if (!filter.expr) return undefined;
    try {
      return compileFilter(filter.expr, this.current.queryables);
    } catch (err) {
      if (err instanceof Cql2Error) throw new TileUnavailableError(400, 'Invalid filter', err.detail, undefined, undefined, { parameter: 'filter', ...(err.property !== undefined ? { property: err.property } : {}) });
      throw err;
    }
  }

  /** The features of a layer meeting a box, read through the file's index, at most `max_features`. */
  async read(gen: Generation, layer: string, bbox: Bounds | undefined, limit: number): Promise<FileFeature[]> {
    const r = gen.reader;
    if (isInMemory(r)) {
      const found = r.search(bbox);
      return found.length > limit ? found.slice(0, limit) : found;
    }
    const out: FileFeature[] = [];
    if (isGeoPackage(r)) {
      const t = r.tableOf(layer);
      if (!t) return out;
      for (const f of r.read(t, bbox, limit)) if (out.push(f) >= limit) break;
      return out;
    }
    if (bbox && r.featuresArray) return r.featuresArray(layer, bbox, limit);
    for await (const f of r.features(layer, bbox)) if (out.push(f) >= limit) break;
    return out;
  }

  /**
   * `use` run on the current reading. When a remote file turns out to have been replaced in its store (a read
   * answered with another ETag), the new file is read from its start, once however many requests noticed, and
   * `use` runs again on that reading: as a remote PMTiles archive is re-opened, so the service follows the store
   * without a reload. When the new object cannot be read the answer is the 503, and the next request tries again.
   */
  async onCurrentReading<T>(use: (gen: Generation) => Promise<T>): Promise<T> {
    const gen = this.current;
    try {
      return await use(gen);
    } catch (err) {
      if (!(err instanceof FileChangedError)) throw err;
      let next: Generation;
      try {
        next = await this.renew(gen);
      } catch (reopen) {
        // A SourceOpenError's reason is this service's own sentence; anything else is logged, not sent.
        if (!(reopen instanceof SourceOpenError)) log.warn(`source "${this.cfg.id}": reading the replaced ${this.cfg.path} again failed: ${(reopen as Error).message}`);
        const reason = reopen instanceof SourceOpenError ? reopen.reason : 'it could not be read (the reason is logged)';
        throw new TileUnavailableError(503, 'Storage unavailable', `source "${this.cfg.id}": ${this.cfg.path} was replaced and cannot be read again: ${reason}`, err.retryAfter);
      }
      return use(next);
    }
  }

  /** Reads a replaced remote file again, once for every request that found it replaced meanwhile. */
  private renew(seen: Generation): Promise<Generation> {
    if (this.current !== seen) return Promise.resolve(this.current);
    if (!this.renewing) {
      this.renewing = FileSource.read(this.cfg, this.storage)
        .then((next) => {
          // A reload may have read it meanwhile: the newest reading stays.
          if (this.current === seen) {
            this.current = next;
            log.info(`source "${this.cfg.id}": ${this.cfg.path} was replaced in its store; read again`);
            setTimeout(() => void seen.reader.close().catch(() => {}), 30_000).unref();
          } else void next.reader.close().catch(() => {});
          return this.current;
        })
        .finally(() => {
          this.renewing = undefined;
        });
    }
    return this.renewing;
  }

  getTile(z: number, x: number, y: number, _params?: unknown, _format?: unknown, filter?: TileFilter): Promise<Uint8Array | undefined> {
    return this.onCurrentReading((gen) => this.cutTile(gen, z, x, y, filter));
  }

  private async cutTile(gen: Generation, z: number, x: number, y: number, filter: TileFilter | undefined): Promise<Uint8Array | undefined> {
    const extent = this.cfg.extent ?? DEFAULT_EXTENT;
    const buffer = this.cfg.buffer ?? DEFAULT_BUFFER;
    const limit = this.cfg.max_features ?? DEFAULT_MAX_FEATURES;
    let names: readonly string[] | undefined;
    let keep: Predicate | undefined;
    if (filter) {
      const served = new Set(gen.queryables.filter((q) => q.kind !== 'geometry').map((q) => q.name));
      for (const p of filter.properties ?? []) {
        if (!served.has(p)) throw new TileUnavailableError(400, 'Invalid properties', `source "${this.info.id}" has no property "${p}"; it serves ${[...served].join(', ') || 'none'}`, undefined, undefined, { parameter: 'properties' });
      }
      names = filter.properties;
      keep = this.predicate(filter);
    }
    const box = tileBox(z, x, y, buffer / extent);
    const layers: TileLayer[] = [];
    try {
      for (const l of gen.reader.layers) {
        const served = gen.served.get(l.name)!;
        // Every property of the layer, unless the configuration or the request chose some.
        const carried = names ? names.filter((n) => served.includes(n)) : this.cfg.properties ? served : undefined;
        let tile: GeoJSONVTTile | null;
        if (!keep && isInMemory(gen.reader)) tile = this.index(gen, l.name, extent, buffer).getTile(z, x, y);
        else {
          let features = await this.read(gen, l.name, box, limit);
          if (keep) features = features.filter((f) => keep(f));
          if (!features.length) continue;
          const collection: FeatureCollection = { type: 'FeatureCollection', features: features.map((f) => toGeoJson(f)) };
          tile = geoJSONToTile(collection, z, x, y, { extent, buffer, tolerance: TOLERANCE, maxZoom: gen.info.maxzoom, clip: true, wrap: false });
        }
        if (tile && tile.features.length) layers.push(layerOf(l.name, extent, tile, carried));
      }
    } catch (err) {
      if (err instanceof GpkgGeometryError) throw new TileUnavailableError(503, 'Unreadable data', `source "${this.info.id}": ${err.message}`, 60);
      throw err;
    }
    if (!layers.length) return undefined;
    return encodeMvt(layers);
  }

  /** The geojson-vt index of an in-memory layer, built at its first tile. */
  private index(gen: Generation, layer: string, extent: number, buffer: number): GeoJSONVT {
    let idx = gen.indexes.get(layer);
    if (!idx) {
      const features = (gen.reader as FeatureReader & { search(b: Bounds | undefined): FileFeature[] }).search(undefined);
      idx = new GeoJSONVT({ type: 'FeatureCollection', features: features.map((f) => toGeoJson(f)) }, { maxZoom: gen.info.maxzoom, indexMaxZoom: Math.min(5, gen.info.maxzoom), extent, buffer, tolerance: TOLERANCE, wrap: false });
      gen.indexes.set(layer, idx);
    }
    return idx;
  }

  /** Memory held between requests: the reader's, and about the same again for each geojson-vt index built. */
  memoryBytes(): number {
    const gen = this.current;
    const reader = gen.reader.memoryBytes();
    return reader + (gen.indexes.size > 0 ? reader : 0);
  }

  async close(): Promise<void> {
    untrackMemory(this);
    await this.current.reader.close();
  }
}

function toGeoJson(f: FileFeature): GeoJsonFeature {
  return { type: 'Feature', ...(f.id !== undefined ? { id: f.id } : {}), geometry: f.geometry, properties: f.properties };
}
