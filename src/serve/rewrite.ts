// A style as served: every URL it carries made absolute and pointing at this service (decisions.md), with the
// request's `key` appended (spec, Authentication 3). MLT sources point at the `.pbf` transcode URL (spec rule 4).
import type { SourceSpecification, StyleSpecification } from '@maplibre/maplibre-gl-style-spec';
import { isProblem, resolveSource } from './resolve.js';
import type { UrlContext } from '../sources/tilejson.js';
import { withKey } from '../sources/tilejson.js';
import type { SourceInfo, TileSource } from '../sources/source.js';
import type { AppState } from '../state/app-state.js';
import { RENDER_MAXZOOM } from '../tiles/overzoom.js';
import type { LoadedStyle } from '../styles/loaded-style.js';
import { sourceRef } from '../styles/source-ref.js';

/** Ids are URL-safe already; `+` (ad-hoc composites) is kept literal, as it means itself in a path. */
const enc = (id: string) => encodeURIComponent(id).replace(/%2B/gi, '+');

/** The source, named composite or ad-hoc composite a style or request names, if this service has it. */
export function findSource(state: AppState, id: string): TileSource | undefined {
  const found = resolveSource(state, id);
  return isProblem(found) ? undefined : found;
}

/** The absolute URL of a source's TileJSON. */
export const sourceTileJsonUrl = (id: string, ctx: UrlContext) => withKey(`${ctx.base}/data/${enc(id)}.json`, ctx.key);

/**
 * The served form of one style source. A reference to a configured source becomes its TileJSON URL; an MLT
 * source instead gets a `tiles` array of `.pbf` URLs (with the zoom range and bounds its TileJSON would have
 * given), because clients that ask for the style expect MVT. Anything else is returned unchanged.
 */
export function servedSource(state: AppState, spec: SourceSpecification, ctx: UrlContext): SourceSpecification {
  if (spec.type !== 'vector' && spec.type !== 'raster' && spec.type !== 'raster-dem') return spec;
  const id = sourceRef(spec.url);
  const source = id === undefined ? undefined : findSource(state, id);
  if (!source || id === undefined) return spec;
  if (source.info.format !== 'mlt') return { ...spec, url: sourceTileJsonUrl(id, ctx), ...renderMaxzoom(source.info, spec, ctx) };
  const out = { ...spec, ...mltTileFields(source.info, spec, ctx) } as SourceSpecification & { url?: string; encoding?: string };
  delete out.url;
  // The tiles are MVT after transcoding: a style that declared the MLT encoding must not say so any more.
  delete out.encoding;
  return out;
}

function mltTileFields(info: SourceInfo, spec: SourceSpecification, ctx: UrlContext): Record<string, unknown> {
  const given = spec as { minzoom?: number; maxzoom?: number; bounds?: number[]; attribution?: string };
  const fields: Record<string, unknown> = {
    tiles: [withKey(`${ctx.base}/data/${enc(info.id)}/{z}/{x}/{y}.pbf`, ctx.key)],
    minzoom: given.minzoom ?? info.minzoom,
    maxzoom: given.maxzoom ?? info.maxzoom,
    bounds: given.bounds ?? info.bounds,
    ...renderMaxzoom(info, spec, ctx),
  };
  const attribution = given.attribution ?? info.attribution;
  if (attribution) fields.attribution = attribution;
  return fields;
}

/**
 * For a renderer, a vector source of this service reaches RENDER_MAXZOOM: tiles below the archive's maxzoom are
 * cut from their ancestor (tiles/overzoom.ts) instead of MapLibre laying out the whole ancestor for every deeper
 * tile. A maxzoom the style itself gives is kept.
 */
function renderMaxzoom(info: SourceInfo, spec: SourceSpecification, ctx: UrlContext): { maxzoom?: number } {
  if (!ctx.forRenderer || spec.type !== 'vector' || (spec as { maxzoom?: number }).maxzoom !== undefined) return {};
  return info.maxzoom < RENDER_MAXZOOM ? { maxzoom: RENDER_MAXZOOM } : {};
}

/** Rewrites the `sources` of a style; shared by configured and generated styles. */
export function servedSources(state: AppState, sources: StyleSpecification['sources'], ctx: UrlContext): StyleSpecification['sources'] {
  return Object.fromEntries(Object.entries(sources).map(([name, spec]) => [name, servedSource(state, spec, ctx)]));
}

/** The glyphs URL template of this service. `{fontstack}` and `{range}` stay literal for the client to fill. */
export const glyphsUrl = (ctx: UrlContext) => withKey(`${ctx.base}/fonts/{fontstack}/{range}.pbf`, ctx.key);

/** The sprite URL of a style on this service (clients append `@2x`, `.png`, `.json`). */
export const spriteUrl = (styleId: string, ctx: UrlContext) => withKey(`${ctx.base}/styles/${enc(styleId)}/sprite`, ctx.key);

/** The absolute URL of a style's style.json. */
export const styleJsonUrl = (styleId: string, ctx: UrlContext) => withKey(`${ctx.base}/styles/${enc(styleId)}/style.json`, ctx.key);

/**
 * The style JSON as served. The loaded style is never modified (it is shared by every request of the state).
 * `glyphs` points here when the service has a fonts directory, `sprite` when the style's sprite files were
 * found; otherwise they are left as the file has them.
 */
export function servedStyle(state: AppState, style: LoadedStyle, ctx: UrlContext): StyleSpecification {
  const out: StyleSpecification = { ...style.style, sources: servedSources(state, style.style.sources, ctx) };
  if (out.glyphs !== undefined && state.fonts.dir) out.glyphs = glyphsUrl(ctx);
  if (style.spriteBase || style.builtSprites) out.sprite = spriteUrl(style.id, ctx);
  return out;
}
