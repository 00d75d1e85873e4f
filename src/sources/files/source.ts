// A data file (GeoJSON, GeoPackage, ...: readers.ts) served as MVT tiles made on request. For a tile, the reader
// gives the features whose box meets the tile grown by its buffer (through the file's spatial index), a request's
// CQL2 filter is evaluated on them in memory and its properties picked, and @maplibre/geojson-vt clips them to the
// buffer and simplifies them to the zoom's resolution before the project's MVT encoder writes them. A file held in
// memory whole (GeoJSON) keeps one geojson-vt index per layer for unfiltered tiles, which cuts each tile from its
// parent's. The same features answer OGC API - Features (src/ogc/features.ts). Each reading of the file
// (reading.ts) is counted while requests read through it, so one replaced by a reload is closed after its last one.
import { stat } from 'node:fs/promises';
import { GeoJSONVT, geoJSONToTile, type GeoJSONVTTile } from '@maplibre/geojson-vt';
import type { Feature as GeoJsonFeature, FeatureCollection } from 'geojson';
import type { FileSourceConfig, StorageConfig } from '../../config/schema.js';
import { isRemotePath } from '../../config/object-location.js';
import type { Predicate } from '../../cql2/evaluate.js';
import type { Queryable } from '../../cql2/sql.js';
import { tileToLonLat } from '../../tiles/coords.js';
import { encodeMvt } from '../../tiles/mvt-encode.js';
import type { PropValue, TileFeature, TileLayer } from '../../tiles/vector-model.js';
import { log } from '../../log.js';
import { SourceOpenError, TileUnavailableError, type Bounds, type SourceInfo, type TileFilter, type TileSource } from '../source.js';
import { GpkgGeometryError } from './gpkg-geometry.js';
import { trackMemory, untrackMemory } from './metrics.js';
import type { FileFeature, FileLayer } from './reader.js';
import type { CrsReader } from './crs.js';
import { FILE_READERS, type FileSourceType } from './readers.js';
import { FileChangedError } from './range-file.js';
import { Reading, type FileStamp } from './reading.js';

// The name of a feature's geometry in filters, where the routes that read filters look for it.
export { GEOMETRY_QUERYABLE } from './reading.js';

export const DEFAULT_BUFFER = 64;
export const DEFAULT_EXTENT = 4096;
export const DEFAULT_MAX_FEATURES = 200_000;
/** geojson-vt's simplification tolerance, in tile units (of 4096: under a fifth of a 256-pixel tile's pixel). */
const TOLERANCE = 1;

/** How messages name each format. */
const LABELS: Record<string, string> = { geojson: 'GeoJSON', geopackage: 'GeoPackage', flatgeobuf: 'FlatGeobuf', geoparquet: 'GeoParquet' };

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
    private readonly readCrs: CrsReader | undefined,
    private current: Reading,
  ) {
    trackMemory(this, cfg.id, () => this.memoryBytes());
  }

  /** Reading a replaced remote file again (onCurrentReading), shared by the requests that found it replaced. */
  private renewing: Promise<Reading> | undefined;

  get info(): SourceInfo {
    return this.current.info;
  }

  get layers(): readonly FileLayer[] {
    return this.current.reader.layers;
  }

  /** `readCrs`: GDAL's reading of a projected file's CRS, in the raster pool's thread (files/crs.ts). */
  static async open(cfg: FileSourceConfig, storage: StorageConfig, readCrs?: CrsReader): Promise<FileSource> {
    return new FileSource(cfg, storage, readCrs, await FileSource.read(cfg, storage, readCrs));
  }

  private static async read(cfg: FileSourceConfig, storage: StorageConfig, readCrs: CrsReader | undefined): Promise<Reading> {
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
      readCrs,
    });
    try {
      return new Reading(cfg, reader, stamp);
    } catch (err) {
      await reader.close().catch(() => {});
      throw err;
    }
  }

  /** Makes `next` the reading new requests start on; the one it replaces closes after its last request. */
  private replace(next: Reading): void {
    const seen = this.current;
    this.current = next;
    void seen.retire();
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
    let next: Reading;
    try {
      next = await FileSource.read(this.cfg, this.storage, this.readCrs);
    } catch (err) {
      const reason = err instanceof SourceOpenError ? err.reason : (err as Error).message;
      throw new SourceOpenError(this.cfg.id, `${reason}; the last good reading of the file is still served`);
    }
    this.replace(next);
    log.info(`source "${this.cfg.id}": ${this.cfg.path} changed; read again`);
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

  /**
   * `use` run on the current reading, which stays open until `use` has settled (a reload meanwhile does not close
   * it under the request). When a remote file turns out to have been replaced in its store (a read answered with
   * another ETag), the new file is read from its start, once however many requests noticed, and `use` runs again on
   * that reading: as a remote PMTiles archive is re-opened, so the service follows the store without a reload. When
   * the new object cannot be read the answer is the 503, and the next request tries again.
   */
  async onCurrentReading<T>(use: (reading: Reading) => Promise<T>): Promise<T> {
    const seen = this.current;
    try {
      return await seen.use(use);
    } catch (err) {
      if (!(err instanceof FileChangedError)) throw err;
      try {
        await this.renew(seen);
      } catch (reopen) {
        // A SourceOpenError's reason is this service's own sentence; anything else is logged, not sent.
        if (!(reopen instanceof SourceOpenError)) log.warn(`source "${this.cfg.id}": reading the replaced ${this.cfg.path} again failed: ${(reopen as Error).message}`);
        const reason = reopen instanceof SourceOpenError ? reopen.reason : 'it could not be read (the reason is logged)';
        throw new TileUnavailableError(503, 'Storage unavailable', `source "${this.cfg.id}": ${this.cfg.path} was replaced and cannot be read again: ${reason}`, err.retryAfter);
      }
      // The current reading, taken when `use` starts on it: a reading is retired only once another is current.
      return this.current.use(use);
    }
  }

  /** Reads a replaced remote file again, once for every request that found it replaced meanwhile. */
  private renew(seen: Reading): Promise<Reading> {
    if (this.current !== seen) return Promise.resolve(this.current);
    if (!this.renewing) {
      this.renewing = FileSource.read(this.cfg, this.storage, this.readCrs)
        .then((next) => {
          // A reload may have read it meanwhile: the newest reading stays.
          if (this.current === seen) {
            this.replace(next);
            log.info(`source "${this.cfg.id}": ${this.cfg.path} was replaced in its store; read again`);
          } else void next.retire();
          return this.current;
        })
        .finally(() => {
          this.renewing = undefined;
        });
    }
    return this.renewing;
  }

  getTile(z: number, x: number, y: number, _params?: unknown, _format?: unknown, filter?: TileFilter): Promise<Uint8Array | undefined> {
    return this.onCurrentReading((reading) => this.cutTile(reading, z, x, y, filter));
  }

  private async cutTile(reading: Reading, z: number, x: number, y: number, filter: TileFilter | undefined): Promise<Uint8Array | undefined> {
    const extent = this.cfg.extent ?? DEFAULT_EXTENT;
    const buffer = this.cfg.buffer ?? DEFAULT_BUFFER;
    const limit = this.cfg.max_features ?? DEFAULT_MAX_FEATURES;
    let names: readonly string[] | undefined;
    let keep: Predicate | undefined;
    if (filter) {
      const served = new Set(reading.queryables.filter((q) => q.kind !== 'geometry').map((q) => q.name));
      for (const p of filter.properties ?? []) {
        if (!served.has(p)) throw new TileUnavailableError(400, 'Invalid properties', `source "${reading.info.id}" has no property "${p}"; it serves ${[...served].join(', ') || 'none'}`, undefined, undefined, { parameter: 'properties' });
      }
      names = filter.properties;
      keep = reading.predicate(filter);
    }
    const box = tileBox(z, x, y, buffer / extent);
    const layers: TileLayer[] = [];
    try {
      for (const l of reading.reader.layers) {
        const served = reading.served.get(l.name)!;
        // Every property of the layer, unless the configuration or the request chose some.
        const carried = names ? names.filter((n) => served.includes(n)) : this.cfg.properties ? served : undefined;
        const index = keep ? undefined : this.index(reading, l.name, extent, buffer);
        let tile: GeoJSONVTTile | null;
        if (index) tile = index.getTile(z, x, y);
        else {
          let features = await reading.reader.featuresInBox(l.name, box, limit);
          if (keep) features = features.filter((f) => keep(f));
          if (!features.length) continue;
          const collection: FeatureCollection = { type: 'FeatureCollection', features: features.map((f) => toGeoJson(f)) };
          tile = geoJSONToTile(collection, z, x, y, { extent, buffer, tolerance: TOLERANCE, maxZoom: reading.info.maxzoom, clip: true, wrap: false });
        }
        if (tile && tile.features.length) layers.push(layerOf(l.name, extent, tile, carried));
      }
    } catch (err) {
      if (err instanceof GpkgGeometryError) throw new TileUnavailableError(503, 'Unreadable data', `source "${reading.info.id}": ${err.message}`, 60);
      throw err;
    }
    if (!layers.length) return undefined;
    return encodeMvt(layers);
  }

  /**
   * The geojson-vt index of a layer its reader holds in memory, built at its first unfiltered tile; undefined for
   * readers that read through the file's index (each tile reads its box instead).
   */
  private index(reading: Reading, layer: string, extent: number, buffer: number): GeoJSONVT | undefined {
    let idx = reading.indexes.get(layer);
    if (!idx) {
      const features = reading.reader.heldInMemory(layer);
      if (!features) return undefined;
      idx = new GeoJSONVT({ type: 'FeatureCollection', features: features.map((f) => toGeoJson(f)) }, { maxZoom: reading.info.maxzoom, indexMaxZoom: Math.min(5, reading.info.maxzoom), extent, buffer, tolerance: TOLERANCE, wrap: false });
      reading.indexes.set(layer, idx);
    }
    return idx;
  }

  /** Memory held between requests: the reader's, and about the same again for each geojson-vt index built. */
  memoryBytes(): number {
    const reading = this.current;
    const reader = reading.reader.memoryBytes();
    return reader + (reading.indexes.size > 0 ? reader : 0);
  }

  /** Closes the current reading's file, after the requests still reading it (a source replaced by a reload). */
  async close(): Promise<void> {
    untrackMemory(this);
    await this.current.retire();
  }
}

function toGeoJson(f: FileFeature): GeoJsonFeature {
  return { type: 'Feature', ...(f.id !== undefined ? { id: f.id } : {}), geometry: f.geometry, properties: f.properties };
}
