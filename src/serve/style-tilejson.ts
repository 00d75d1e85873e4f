// The raster TileJSON of a style (/styles/{id}.json and the style entries of /index.json): the rendered PNG
// tiles at the default 512 px base, with the zoom range, bounds and attribution of the style's sources.
import type { StyleSpecification } from '@maplibre/maplibre-gl-style-spec';
import { WORLD_BOUNDS, type Bounds, type Center } from '../sources/source.js';
import { withKey, type TileJson, type UrlContext } from '../sources/tilejson.js';
import type { AppState } from '../state/app-state.js';
import type { LoadedStyle } from '../styles/loaded-style.js';
import { findSource } from './rewrite.js';
import { sourceRef } from '../styles/source-ref.js';

/** Raster TileJSON of styles is offered only where raster rendering is configured (spec: disable_render). */
export const rasterStylesOffered = (state: AppState) => !state.config.server.disable_render;

/** Edge in pixels of a rendered tile when the URL names no tile size (spec: default base 512). */
export const RASTER_TILE_SIZE = 512;

export interface StyleExtent {
  minzoom: number;
  maxzoom: number;
  bounds: Bounds;
  center: Center;
  attribution: string | undefined;
}

interface TiledExtent {
  minzoom: number;
  maxzoom: number;
  bounds: Bounds;
  center?: Center;
  attribution?: string;
}

/** What one style source covers: from the configured source it names, else from its own fields. */
function sourceExtent(state: AppState, spec: StyleSpecification['sources'][string]): TiledExtent | undefined {
  if (spec.type !== 'vector' && spec.type !== 'raster' && spec.type !== 'raster-dem') return undefined;
  const id = sourceRef((spec as { url?: unknown }).url);
  const info = id === undefined ? undefined : findSource(state, id)?.info;
  if (info) return { minzoom: info.minzoom, maxzoom: info.maxzoom, bounds: info.bounds, center: info.center, attribution: info.attribution };
  const own = spec as { tiles?: unknown; minzoom?: number; maxzoom?: number; bounds?: number[]; attribution?: string };
  if (!Array.isArray(own.tiles)) return undefined;
  // Style-spec defaults for a tiled source that does not say.
  return { minzoom: own.minzoom ?? 0, maxzoom: own.maxzoom ?? 22, bounds: (own.bounds as Bounds | undefined) ?? WORLD_BOUNDS, attribution: own.attribution };
}

/** The zoom range (min of minzooms, max of maxzooms), the union of the bounds and a center of a style's sources. */
export function styleExtent(state: AppState, style: StyleSpecification): StyleExtent {
  const parts = Object.values(style.sources).flatMap((s) => {
    const e = sourceExtent(state, s);
    return e ? [e] : [];
  });
  if (parts.length === 0) {
    return { minzoom: 0, maxzoom: 22, bounds: WORLD_BOUNDS, center: [0, 0, 0], attribution: undefined };
  }
  const minzoom = Math.min(...parts.map((p) => p.minzoom));
  const maxzoom = Math.max(...parts.map((p) => p.maxzoom));
  const bounds: Bounds = [
    Math.min(...parts.map((p) => p.bounds[0])),
    Math.min(...parts.map((p) => p.bounds[1])),
    Math.max(...parts.map((p) => p.bounds[2])),
    Math.max(...parts.map((p) => p.bounds[3])),
  ];
  let center: Center;
  if (Array.isArray(style.center) && style.center.length >= 2) {
    const z = typeof style.zoom === 'number' ? style.zoom : minzoom;
    center = [style.center[0], style.center[1], Math.min(maxzoom, Math.max(minzoom, Math.round(z)))];
  } else {
    center = parts.find((p) => p.center)?.center ?? [(bounds[0] + bounds[2]) / 2, (bounds[1] + bounds[3]) / 2, minzoom];
  }
  const attributions = [...new Set(parts.flatMap((p) => (p.attribution ? [p.attribution] : [])))];
  return { minzoom, maxzoom, bounds, center, attribution: attributions.length ? attributions.join(' ') : undefined };
}

export function styleTileJson(state: AppState, style: LoadedStyle, ctx: UrlContext, withId = false): TileJson {
  const extent = styleExtent(state, style.style);
  const doc: TileJson = {
    tilejson: '3.0.0',
    ...(withId ? { id: style.id } : {}),
    name: style.name,
    tiles: [withKey(`${ctx.base}/styles/${encodeURIComponent(style.id)}/{z}/{x}/{y}.png`, ctx.key)],
    minzoom: extent.minzoom,
    maxzoom: extent.maxzoom,
    bounds: extent.bounds,
    center: extent.center,
    format: 'png',
    scheme: 'xyz',
    tileSize: RASTER_TILE_SIZE,
  };
  if (extent.attribution) doc.attribution = extent.attribution;
  return doc;
}
