// The style of an elevation source (its generated style, its preview, what the render routes draw for its id):
// the relief shaded by MapLibre from the source's own elevation tiles (a raster-dem source), under the contour
// lines this service makes from them, major lines thicker, and the major lines labelled with their elevation when
// the service has fonts to draw the labels with (a fonts directory with at least one font).
import type { StyleSpecification } from '@maplibre/maplibre-gl-style-spec';
import type { SourceInfo } from '../sources/source.js';
import type { UrlContext } from '../sources/tilejson.js';
import { withKey } from '../sources/tilejson.js';
import type { AppState } from '../state/app-state.js';
import { glyphsUrl, servedSources } from './rewrite.js';
import { PRODUCT_OVERZOOM } from './elevation.js';

/**
 * The font for contour labels: an upright regular sans-serif face when the fonts directory has one (digits in a
 * plain face read best along a line), else its first font; undefined without fonts.
 */
export function labelFont(names: readonly string[]): string | undefined {
  const regular = names.filter((n) => /\bregular\b/i.test(n) && !/italic|condensed|mono/i.test(n));
  return regular.find((n) => /sans/i.test(n)) ?? regular[0] ?? names[0];
}

export function elevationStyle(state: AppState, info: SourceInfo, ctx: UrlContext): StyleSpecification {
  const id = info.id;
  const contours = `${id}-contours`;
  const line = { type: 'line', source: contours, 'source-layer': 'contours', layout: { 'line-join': 'round' } } as const;
  const font = state.fonts.dir ? labelFont(state.fonts.names) : undefined;
  // Elevations along the major lines, in the unit of the tiles (metres: the style asks for the defaults).
  const labels = font
    ? [
        {
          id: 'contours-labels',
          type: 'symbol',
          source: contours,
          'source-layer': 'contours',
          filter: ['==', ['get', 'level'], 1],
          layout: {
            'symbol-placement': 'line',
            'symbol-spacing': 350,
            'text-field': ['concat', ['to-string', ['get', 'ele']], ' m'],
            'text-font': [font],
            'text-size': 10,
            'text-max-angle': 30,
            'text-padding': 2,
          },
          paint: { 'text-color': '#6b4c2a', 'text-halo-color': '#f4f1ea', 'text-halo-width': 1.5 },
        },
      ]
    : [];
  return {
    version: 8,
    name: `${info.name} (generated)`,
    metadata: { 'tileserver-ts:generated': true },
    center: [info.center[0], info.center[1]],
    zoom: info.center[2],
    ...(font ? { glyphs: glyphsUrl(ctx) } : {}),
    sources: {
      ...servedSources(state, { [id]: { type: 'raster-dem', url: `source://${id}`, encoding: info.dem, tileSize: info.tileSize ?? 256 } }, ctx),
      [contours]: {
        type: 'vector',
        tiles: [withKey(`${ctx.base}/data/${encodeURIComponent(id)}/contours/{z}/{x}/{y}.pbf`, ctx.key)],
        minzoom: info.minzoom,
        maxzoom: Math.min(22, info.maxzoom + PRODUCT_OVERZOOM),
        bounds: info.bounds,
      },
    },
    layers: [
      { id: 'background', type: 'background', paint: { 'background-color': '#f4f1ea' } },
      { id: 'hillshade', type: 'hillshade', source: id, paint: { 'hillshade-exaggeration': 0.6 } },
      { ...line, id: 'contours-minor', filter: ['!=', ['get', 'level'], 1], paint: { 'line-color': '#8a6d4b', 'line-opacity': 0.45, 'line-width': 0.6 } },
      { ...line, id: 'contours-major', filter: ['==', ['get', 'level'], 1], paint: { 'line-color': '#7a5a36', 'line-opacity': 0.8, 'line-width': 1.3 } },
      ...labels,
    ],
  } as StyleSpecification;
}
