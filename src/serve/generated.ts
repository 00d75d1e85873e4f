// The style generated for a vector source that has no configured style of its id (spec rule 3): for every
// source-layer one fill, one line and one circle layer, each filtered to its geometry type, in a colour
// derived from the layer name, with line widths and circle radii interpolated by zoom.
import { createHash } from 'node:crypto';
import type { LayerSpecification, StyleSpecification } from '@maplibre/maplibre-gl-style-spec';
import { isVector } from '../tiles/format.js';
import type { UrlContext } from '../sources/tilejson.js';
import { isCompositeId } from '../sources/source-ids.js';
import type { AppState } from '../state/app-state.js';
import type { LoadedStyle } from '../styles/loaded-style.js';
import { findSource, servedSources } from './rewrite.js';
import { elevationStyle } from './terrain-style.js';

/** FNV-1a, 32 bit: a small stable hash, so a layer keeps its colour across restarts and machines. */
function fnv1a(text: string): number {
  let h = 0x811c9dc5;
  for (const ch of Buffer.from(text, 'utf8')) {
    h ^= ch;
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h;
}

/**
 * The colour of a source-layer: the hue comes from the hash of its name; saturation and lightness are fixed
 * so every layer is clearly visible on a light or dark background. Returned as `hsl(h, s%, l%)`.
 */
export function layerColor(name: string): string {
  const h = fnv1a(name);
  const hue = h % 360;
  // A little variation of saturation and lightness separates layers whose hues land close together.
  const sat = 55 + ((h >>> 9) % 20);
  const light = 40 + ((h >>> 17) % 15);
  return `hsl(${hue}, ${sat}%, ${light}%)`;
}

/** Geometry filters; the expression returns Point/LineString/Polygon for the Multi* forms too. */
const isType = (t: 'Point' | 'LineString' | 'Polygon') => ['==', ['geometry-type'], t] as ['==', ['geometry-type'], string];

/** Three layers for one source-layer, in the order fill, line, circle. */
function layersFor(sourceId: string, layer: string): [LayerSpecification, LayerSpecification, LayerSpecification] {
  const color = layerColor(layer);
  const base = { source: sourceId, 'source-layer': layer } as const;
  return [
    {
      id: `${layer}-fill`,
      type: 'fill',
      ...base,
      filter: isType('Polygon'),
      paint: { 'fill-color': color, 'fill-opacity': 0.35, 'fill-outline-color': color },
    },
    {
      id: `${layer}-line`,
      type: 'line',
      ...base,
      filter: isType('LineString'),
      layout: { 'line-join': 'round', 'line-cap': 'round' },
      paint: { 'line-color': color, 'line-width': ['interpolate', ['exponential', 1.5], ['zoom'], 0, 0.5, 10, 1.5, 22, 6] },
    },
    {
      id: `${layer}-circle`,
      type: 'circle',
      ...base,
      filter: isType('Point'),
      paint: {
        'circle-color': color,
        'circle-radius': ['interpolate', ['linear'], ['zoom'], 0, 2, 10, 4, 22, 10],
        'circle-stroke-color': '#ffffff',
        'circle-stroke-width': ['interpolate', ['linear'], ['zoom'], 0, 0.5, 22, 2],
      },
    },
  ];
}

/**
 * The generated style of a vector source (or composite) or of an elevation source (terrain-style.ts), or undefined
 * when `sourceId` is no source or another raster one.
 * Fills come first, then lines, then circles, so points and lines are drawn above areas.
 */
export function generatedStyle(state: AppState, sourceId: string, ctx: UrlContext): StyleSpecification | undefined {
  const source = findSource(state, sourceId);
  if (source?.info.dem) return elevationStyle(state, source.info, ctx);
  if (!source || !isVector(source.info.format)) return undefined;
  const { info } = source;
  const layerIds = [...new Set((info.vectorLayers ?? []).map((l) => l.id))];
  const triples = layerIds.map((l) => layersFor(sourceId, l));
  const layers = [0, 1, 2].flatMap((i) => triples.map((t) => t[i]));
  const style: StyleSpecification = {
    version: 8,
    name: `${info.name} (generated)`,
    metadata: { 'tileserver-ts:generated': true },
    center: [info.center[0], info.center[1]],
    zoom: info.center[2],
    sources: servedSources(state, { [sourceId]: { type: 'vector', url: `source://${sourceId}` } }, ctx),
    layers,
  };
  return style;
}

/** Generated styles already built, per state; bounded, since ad-hoc composite ids (`a+b`) are open-ended. */
const GENERATED_LIMIT = 256;
const generatedByState = new WeakMap<AppState, Map<string, LoadedStyle | undefined>>();

/**
 * The generated style of a vector source as a loaded style, so the render routes, WMTS and the raster TileJSON
 * serve it like a configured one. Its hash covers the generated JSON (URLs left out: they depend on the request),
 * so rendered images are cached per layer list and centre.
 */
export function generatedLoadedStyle(state: AppState, sourceId: string): LoadedStyle | undefined {
  let known = generatedByState.get(state);
  // An upload deleted within the state leaves no style behind (configured sources stay for the state's life).
  if (known?.has(sourceId) && (isCompositeId(sourceId) || state.sources.has(sourceId) || state.composites.has(sourceId))) return known.get(sourceId);
  const style = generatedStyle(state, sourceId, { base: '', key: undefined, forRenderer: true });
  const loaded: LoadedStyle | undefined = style && {
    id: sourceId,
    name: style.name ?? sourceId,
    path: '',
    dir: '',
    style,
    hash: createHash('sha256').update(`generated\n${JSON.stringify({ ...style, sources: {} })}`).digest('hex'),
  };
  if (!known) generatedByState.set(state, (known = new Map()));
  if (known.size >= GENERATED_LIMIT) known.delete(known.keys().next().value!);
  known.set(sourceId, loaded);
  return loaded;
}

/** The style named `id`: a configured one, else the generated style of the vector source of that id (spec rule 3). */
export function styleById(state: AppState, id: string): LoadedStyle | undefined {
  return state.styles.get(id) ?? generatedLoadedStyle(state, id);
}

/** A style the renderer can warm up with: the first configured one, else the first vector source's generated one. */
export function firstRenderableStyle(state: AppState): LoadedStyle | undefined {
  const configured = state.styles.values().next().value;
  if (configured) return configured;
  for (const id of state.sources.keys()) {
    const generated = generatedLoadedStyle(state, id);
    if (generated) return generated;
  }
  return undefined;
}
