// TileJSON 3.0.0 documents for sources, with URLs absolute and the `key` passed through.
import type { TileFormat } from '../tiles/format.js';
import type { SourceInfo } from './source.js';

export interface UrlContext {
  /** Scheme, host and port (and any path prefix) of the service, without a trailing slash. */
  base: string;
  /** The `key` query parameter of the request, forwarded into every URL handed out. */
  key: string | undefined;
  /** The request is a renderer's (in-process): styles it gets may use renderer-only tile URLs. */
  forRenderer?: boolean;
}

export function withKey(url: string, key: string | undefined): string {
  if (key === undefined) return url;
  return `${url}${url.includes('?') ? '&' : '?'}key=${encodeURIComponent(key)}`;
}

export interface TileJson {
  tilejson: '3.0.0';
  id?: string;
  name: string;
  tiles: string[];
  minzoom: number;
  maxzoom: number;
  bounds: [number, number, number, number];
  center: [number, number, number];
  format: TileFormat;
  scheme: 'xyz';
  attribution?: string;
  description?: string;
  vector_layers?: unknown[];
  /** `mlt` for MLT vector tiles; `terrarium` or `mapbox` for elevation tiles. */
  encoding?: 'mlt' | 'terrarium' | 'mapbox';
  [extra: string]: unknown;
}

/** The extension a source's TileJSON advertises for its tiles. */
export const tileExtension = (format: TileFormat): string => format;

/**
 * The TileJSON of a source. `query` (with its `?`, already checked) goes into the tile URL: a filtered view's
 * filter and properties (docs/postgres.md).
 */
export function sourceTileJson(info: SourceInfo, ctx: UrlContext, withId = false, query = ''): TileJson {
  const ext = tileExtension(info.format);
  const doc: TileJson = {
    tilejson: '3.0.0',
    ...(withId ? { id: info.id } : {}),
    name: info.name,
    // `+` of an ad-hoc composite (`a+b`) stays literal: in a path it means itself.
    tiles: [withKey(`${ctx.base}/data/${encodeURIComponent(info.id).replace(/%2B/g, '+')}/{z}/{x}/{y}.${ext}${query}`, ctx.key)],
    minzoom: info.minzoom,
    maxzoom: info.maxzoom,
    bounds: info.bounds,
    center: info.center,
    format: info.format,
    scheme: 'xyz',
  };
  if (info.attribution) doc.attribution = info.attribution;
  if (info.description) doc.description = info.description;
  if (info.vectorLayers) doc.vector_layers = info.vectorLayers;
  if (info.format === 'mlt') doc.encoding = 'mlt';
  if (info.dem) {
    doc.encoding = info.dem;
    // Tiles this server encodes from a raster mark pixels without data with alpha 0 over an RGB of 0 m.
    if (info.type === 'cog' || info.type === 'vrt' || info.type === 'postgres-outdb-raster') doc.nodata = { elevation: 0, alpha: 0 };
  }
  if (info.tileSize) doc.tileSize = info.tileSize;
  return doc;
}
