// What the pages show: the map styles a page can open (configured styles, and the styles generated for vector
// sources) and, for every source, a style that draws it (the generated style of a vector source, a raster layer
// of a raster source). The styles are the ones the service serves, URLs and key included.
import type { StyleSpecification } from '@maplibre/maplibre-gl-style-spec';
import type { TileSource } from '../../sources/source.js';
import type { UrlContext } from '../../sources/tilejson.js';
import type { AppState } from '../../state/app-state.js';
import { generatedStyle } from '../../serve/generated.js';
import { findSource, servedStyle, sourceTileJsonUrl, styleJsonUrl } from '../../serve/rewrite.js';
import { isVector } from '../../tiles/format.js';

export interface PageStyle {
  id: string;
  name: string;
  /** The absolute URL of its style.json (what the embed page loads and reports in `ready`). */
  url: string;
  /** The style as served from that URL. */
  style: StyleSpecification;
  generated: boolean;
}

/**
 * The style `/styles/{id}/style.json` serves: a configured style, else the generated style of a vector source
 * of that id; undefined when there is neither.
 */
export function pageStyle(state: AppState, id: string, u: UrlContext): PageStyle | undefined {
  const configured = state.styles.get(id);
  if (configured) return { id, name: configured.name, url: styleJsonUrl(id, u), style: servedStyle(state, configured, u), generated: false };
  const generated = generatedStyle(state, id, u);
  if (!generated) return undefined;
  return { id, name: findSource(state, id)?.info.name ?? id, url: styleJsonUrl(id, u), style: generated, generated: true };
}

/** The centre a page opens at when its query names none: the style's own, else 0,0. */
export function styleCenter(style: StyleSpecification): [number, number] {
  const c = style.center;
  return Array.isArray(c) && c.length >= 2 && c.every((n) => Number.isFinite(n)) ? [c[0], c[1]] : [0, 0];
}

/** A style drawing one source: its generated style when it is vector data or elevation, one raster layer when it is imagery. */
export function sourceStyle(state: AppState, source: TileSource, u: UrlContext): StyleSpecification {
  const { info } = source;
  if (isVector(info.format) || info.dem) {
    const style = generatedStyle(state, info.id, u);
    if (style) return style;
  }
  return {
    version: 8,
    name: info.name,
    center: [info.center[0], info.center[1]],
    zoom: info.center[2],
    sources: { [info.id]: { type: 'raster', url: sourceTileJsonUrl(info.id, u), tileSize: info.tileSize ?? 256 } },
    layers: [{ id: info.id, type: 'raster', source: info.id }],
  };
}
