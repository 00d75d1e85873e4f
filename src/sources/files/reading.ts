// One reading of a data file: its reader, what the source serves of it (TileJSON, properties, queryables), the
// filters compiled against it, and the requests reading through it. A reload that finds the file changed, or a
// remote file replaced in its store, makes a new reading; the old one is retired, and its reader is closed when
// the last request that started on it ends, however long that request takes (a slow store, a large page of
// features): a timer would close a file under a request that outlived it, or keep a file open long after the last
// one. The source (source.ts) swaps readings; the tiling and OGC API - Features read through `use`.
import type { GeoJSONVT } from '@maplibre/geojson-vt';
import { LRUCache } from 'lru-cache';
import { Cql2Error } from '../../cql2/ast.js';
import { compileFilter, type Predicate } from '../../cql2/evaluate.js';
import type { Queryable, QueryableKind } from '../../cql2/sql.js';
import type { FileSourceConfig } from '../../config/schema.js';
import { describedSource, SourceOpenError, TileUnavailableError, WORLD_BOUNDS, type Bounds, type SourceInfo, type TileFilter } from '../source.js';
import type { FeatureReader, FieldType } from './reader.js';

export const DEFAULT_MINZOOM = 0;
export const DEFAULT_MAXZOOM = 14;
/** A tile filter's limits when the source sets none: those of PostGIS tables by default. */
const DEFAULT_FILTER_MAX_LENGTH = 2048;
const DEFAULT_FILTER_MAX_TERMS = 64;
/**
 * Compiled filters kept per reading. Compiling checks the filter's types through its whole SQL translation, which
 * costs more than evaluating it on a tile's features: a map that pans through a filtered view asks the same filter
 * for tile after tile. The set of filters in use at once is small; a client writing new ones cannot grow it.
 */
const COMPILED_FILTERS = 256;
/** The name filters use for a file feature's geometry (S_INTERSECTS(geometry, ...), geometry IS NULL). */
export const GEOMETRY_QUERYABLE = 'geometry';

const KIND: Record<FieldType, QueryableKind> = { String: 'string', Number: 'number', Boolean: 'boolean' };

/** What the file looked like when it was read: a change of either means it must be read again. */
export interface FileStamp {
  mtimeMs: number;
  /** -1 for a remote file, which has no modification time to compare: it is read again at every reload. */
  size: number;
}

/** A filter compiled against a reading's queryables, or the 400 it is refused with (a filter that does not fit stays refused). */
type Compiled = { keep: Predicate } | { refused: TileUnavailableError };

export class Reading {
  /** Per layer: the properties served (config `properties`, else all). */
  readonly served: Map<string, string[]>;
  /** What a filter on the source's tiles may name: every served property of every layer, and `geometry`. */
  readonly queryables: Queryable[];
  /** Per layer: its own served properties and `geometry` (a layer's OGC API - Features collection filters on these). */
  readonly layerQueryables: Map<string, Queryable[]>;
  readonly info: SourceInfo;
  /** The geojson-vt index of each layer a reader holds in memory, built at its first unfiltered tile. */
  readonly indexes = new Map<string, GeoJSONVT>();
  private readonly compiled = new LRUCache<string, Compiled>({ max: COMPILED_FILTERS });
  /** Requests reading through this reading now. */
  private reads = 0;
  private retired = false;
  private closing: Promise<void> | undefined;

  /** Throws SourceOpenError when the configuration does not fit the file (a property it lacks, zooms the wrong way round). */
  constructor(
    cfg: FileSourceConfig,
    readonly reader: FeatureReader,
    readonly stamp: FileStamp,
  ) {
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
    this.info = {
      ...describedSource(cfg, minzoom, maxzoom, bounds),
      type: cfg.type,
      format: 'pbf',
      compression: 'none',
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
    this.served = served;
    this.queryables = [...[...kinds].map(([name, kind]) => ({ name, kind })), geometry];
    this.layerQueryables = new Map(reader.layers.map((l) => [l.name, [...served.get(l.name)!.map((name) => ({ name, kind: KIND[l.fields[name]] })), geometry]]));
  }

  /**
   * A tile filter's predicate over this reading's features, compiled at its first tile and kept (by the filter's
   * normalised text) for the next; undefined when the request only chooses properties. Throws TileUnavailableError
   * 400 naming `filter` when the filter does not fit the served properties.
   */
  predicate(filter: TileFilter): Predicate | undefined {
    if (!filter.expr) return undefined;
    let compiled = this.compiled.get(filter.key);
    if (!compiled) {
      compiled = this.compile(filter);
      this.compiled.set(filter.key, compiled);
    }
    if ('refused' in compiled) throw compiled.refused;
    return compiled.keep;
  }

  private compile(filter: TileFilter): Compiled {
    try {
      return { keep: compileFilter(filter.expr!, this.queryables) };
    } catch (err) {
      if (!(err instanceof Cql2Error)) throw err;
      return { refused: new TileUnavailableError(400, 'Invalid filter', err.detail, undefined, undefined, { parameter: 'filter', ...(err.property !== undefined ? { property: err.property } : {}) }) };
    }
  }

  /** Runs `work` as a request reading through this reading: its reader stays open until `work` has settled. */
  async use<T>(work: (reading: Reading) => Promise<T>): Promise<T> {
    this.reads++;
    try {
      return await work(this);
    } finally {
      if (--this.reads === 0 && this.retired) void this.closeReader();
    }
  }

  /**
   * Takes this reading out of service (a newer one replaced it, or the source closes): its reader is closed now
   * when no request reads through it, else when the last one ends. Resolves once it is closed, or at once when
   * requests still read (the caller does not wait for a slow client).
   */
  retire(): Promise<void> {
    this.retired = true;
    return this.reads === 0 ? this.closeReader() : Promise.resolve();
  }

  private closeReader(): Promise<void> {
    this.closing ??= this.reader.close().catch(() => {});
    return this.closing;
  }
}
