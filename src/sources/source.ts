// The interface every tile source implements (PMTiles, MBTiles; later PostGIS, COG, uploads, composites).
import type { Expr } from '../cql2/ast.js';
import type { StoredCompression, TileFormat } from '../tiles/format.js';
import type { DemEncodingName } from '../config/schema.js';
import type { ArchiveFile } from './archive-file.js';

export type Bounds = [number, number, number, number];
export type Center = [number, number, number];

/** A vector layer entry as TileJSON 3.0.0 describes it. */
export interface VectorLayer {
  id: string;
  fields: Record<string, string>;
  minzoom?: number;
  maxzoom?: number;
  description?: string;
}

/**
 * What a source is, as read at open time. Immutable: a source whose data can change under it (a remote PMTiles
 * archive replaced in its bucket) hands out a new SourceInfo, with a new `revision`, when it re-opens.
 */
export interface SourceInfo {
  id: string;
  /** The kind of source, e.g. "pmtiles", "mbtiles"; reported in logs and the schema API. */
  type: string;
  format: TileFormat;
  /** How the source stores its tiles; stored gzip is passed through to clients that accept it. */
  compression: StoredCompression;
  name: string;
  attribution?: string;
  description?: string;
  minzoom: number;
  maxzoom: number;
  bounds: Bounds;
  center: Center;
  vectorLayers?: VectorLayer[];
  /** Native tile edge in pixels for raster sources, when known. */
  tileSize?: number;
  /**
   * Every tile inside the zoom range exists, whatever the bounds: composites answer an empty MVT where no
   * member has data (spec), so their bounds describe the data but do not cut tiles.
   */
  tilesOutsideBounds?: boolean;
  /** Raster sources that encode on request (COG, out-of-database rasters): every format they can answer. */
  formats?: readonly TileFormat[];
  /** Tiles depend on the request's query parameters (database functions): they are part of the cache key. */
  takesParams?: boolean;
  /** Tile requests may carry a CQL2 `filter` and a `properties` list (PostGIS tables, unless `allow_filters = false`). */
  filterable?: boolean;
  /** How long and how costly a tile filter of this source may be; undefined: the `[postgres]` limits (tables). */
  filterLimits?: { maxLength: number; maxTerms: number };
  /** An elevation source (`dem` in its configuration): how its tiles encode metres (docs/terrain.md). */
  dem?: DemEncodingName;
  /** Which version of the data this info describes (a remote archive's ETag); part of the tile cache key. */
  revision?: string;
}

/** The query parameters of a tile request, for sources whose tiles depend on them (database functions). */
export type TileParams = Readonly<Record<string, string>>;

/** A tile request's own view of a source's features: those a CQL2 filter keeps, with only the properties listed. */
export interface TileFilter {
  /** The filter, parsed; undefined when only properties are chosen. */
  expr?: Expr;
  /** Properties to carry (in the order asked); undefined for every served property. */
  properties?: readonly string[];
  /** The filter and properties in one normalised text, for cache keys: the same request in other words has the same key. */
  key: string;
}

export interface TileSource {
  readonly info: SourceInfo;
  /**
   * The stored bytes of a tile, or undefined when the source has none there. Never throws for "not found".
   * `format` is the requested one for sources that produce several (`info.formats`); `params` reaches only
   * sources with `info.takesParams`, `filter` only sources with `info.filterable`. Throws `TileUnavailableError`
   * when the tile cannot be produced now, or (400) when the filter does not fit the source's properties.
   */
  getTile(z: number, x: number, y: number, params?: TileParams, format?: TileFormat, filter?: TileFilter): Promise<Uint8Array | undefined>;
  close(): Promise<void>;
  /** Sources read from a remote store: why the store is unreachable now (readiness names the source), else undefined. */
  storageProblem?(): string | undefined;
  /**
   * Sources whose data can change under them (a remote archive): checks now and re-opens when it changed. A
   * reload of an unchanged configuration calls it; throws SourceOpenError when the data cannot be read.
   */
  refresh?(): Promise<void>;
  /** Local archives (PMTiles, MBTiles): the file as it was opened, kept readable for a diff with its replacement. */
  readonly archive?: ArchiveFile;
  /** Database sources: the names an expiry may reach them by besides their id (postgres/expiry-aliases.ts). */
  readonly expiryAliases?: readonly string[];
}

/**
 * A tile that cannot be produced now (database down or too slow, raster queue full: 503 with Retry-After), that
 * the source refused for the request's parameters (400), or that a remote tile server failed to give (502, or
 * 504 when it did not answer in time). The HTTP layer answers it as problem JSON, unless `stale` holds the last
 * good copy of the tile: then that is answered, marked stale (src/serve/tile-service.ts).
 */
export class TileUnavailableError extends Error {
  constructor(
    readonly status: 400 | 502 | 503 | 504,
    readonly title: string,
    readonly detail: string,
    /** Seconds, for 503s. */
    readonly retryAfter?: number,
    /** The tile's bytes as last read successfully, kept by the source (remote XYZ sources). */
    readonly stale?: Uint8Array,
    /** More members of the problem body (the query parameter a 400 is about). */
    readonly extra: Record<string, unknown> = {},
  ) {
    super(detail);
    this.name = 'TileUnavailableError';
  }
}

/** A source that could not be opened: `reason` is one line a user can act on. */
export class SourceOpenError extends Error {
  constructor(
    readonly sourceId: string,
    readonly reason: string,
  ) {
    super(`source "${sourceId}": ${reason}`);
    this.name = 'SourceOpenError';
  }
}

export const WORLD_BOUNDS: Bounds = [-180, -85.0511287798066, 180, 85.0511287798066];

/** A center inside the bounds at a zoom inside the range, for sources whose metadata has none. */
export function defaultCenter(bounds: Bounds, minzoom: number, maxzoom: number): Center {
  const z = Math.min(maxzoom, Math.max(minzoom, Math.floor((minzoom + maxzoom) / 2)));
  return [(bounds[0] + bounds[2]) / 2, (bounds[1] + bounds[3]) / 2, z];
}

/** What a configured source says of itself in its TileJSON: the operator's names, or its id. */
interface Naming {
  id: string;
  name?: string;
  attribution?: string;
  description?: string;
}

/**
 * The part of a source's info that every configured kind fills the same way: its id and the names from its
 * configuration, its zoom range and bounds, and a center inside them.
 */
export function describedSource(cfg: Naming, minzoom: number, maxzoom: number, bounds: Bounds): Pick<SourceInfo, 'id' | 'name' | 'attribution' | 'description' | 'minzoom' | 'maxzoom' | 'bounds' | 'center'> {
  return { id: cfg.id, name: cfg.name ?? cfg.id, attribution: cfg.attribution, description: cfg.description, minzoom, maxzoom, bounds, center: defaultCenter(bounds, minzoom, maxzoom) };
}

/** Parses TileJSON-style `vector_layers`, keeping only well-formed entries. */
export function parseVectorLayers(value: unknown): VectorLayer[] | undefined {
  if (!Array.isArray(value)) return undefined;
  const out: VectorLayer[] = [];
  for (const l of value) {
    if (!l || typeof l !== 'object' || typeof (l as { id?: unknown }).id !== 'string') continue;
    const layer = l as Record<string, unknown>;
    const entry: VectorLayer = { id: layer.id as string, fields: {} };
    if (layer.fields && typeof layer.fields === 'object') {
      // fromEntries defines own properties: a field named `__proto__` (an upload's metadata is anyone's) stays a field.
      entry.fields = Object.fromEntries(Object.entries(layer.fields as Record<string, unknown>).map(([k, t]) => [k, String(t)]));
    }
    if (typeof layer.minzoom === 'number') entry.minzoom = layer.minzoom;
    if (typeof layer.maxzoom === 'number') entry.maxzoom = layer.maxzoom;
    if (typeof layer.description === 'string') entry.description = layer.description;
    out.push(entry);
  }
  return out;
}
