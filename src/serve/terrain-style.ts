// The style of an elevation source (its generated style, its preview, what the render routes draw for its id):
// the relief shaded by MapLibre from the source's own elevation tiles (a raster-dem source), under the contour
// lines this service makes from them, major lines thicker. Contour labels are left out: a generated style has no
// fonts it could count on.
import type { StyleSpecification } from '@maplibre/maplibre-gl-style-spec';
import type { SourceInfo } from '../sources/source.js';
import type { UrlContext } from '../sources/tilejson.js';
import { withKey } from '../sources/tilejson.js';
import type { AppState } from '../state/app-state.js';
import { servedSources } from './rewrite.js';
import { PRODUCT_OVERZOOM } from './elevation.js';

export function elevationStyle(state: AppState, info: SourceInfo, ctx: UrlContext): StyleSpecification {
  const id = info.id;
  const contours = `${id}-contours`;
  const line = { type: 'line', source: contours, 'source-layer': 'contours', layout: { 'line-join': 'round' } } as const;
  return {
    version: 8,
    name: `${info.name} (generated)`,
    metadata: { 'tileserver-ts:generated': true },
    center: [info.center[0], info.center[1]],
    zoom: info.center[2],
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
    ],
  } as StyleSpecification;
}
