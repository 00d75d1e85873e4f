// Whether a style paints every pixel of a tile opaque, known from the style alone. A renderer that encodes tiles
// where it draws them (the Chromium page) never holds the pixels in JavaScript, so it cannot scan them for
// translucency as the service's own encoder does; the style tells instead. An opaque tile's PNG and WebP are written
// without an alpha channel (a quarter less to compress); any doubt keeps the alpha channel, which is always correct.
import { Color, type LayerSpecification, type StyleSpecification } from '@maplibre/maplibre-gl-style-spec';

/** A value that is the same at every zoom (not an expression or a zoom function). */
const constant = (v: unknown): boolean => v === undefined || typeof v === 'number' || typeof v === 'string';

function opaqueBackground(layer: LayerSpecification, zoom: number): boolean {
  if (layer.type !== 'background') return false;
  if (layer.layout?.visibility === 'none') return false;
  // MapLibre shows a layer from minzoom up to, not including, maxzoom.
  if (layer.minzoom !== undefined && zoom < layer.minzoom) return false;
  if (layer.maxzoom !== undefined && zoom >= layer.maxzoom) return false;
  const paint = layer.paint ?? {};
  // A pattern's image may be translucent.
  if (paint['background-pattern'] !== undefined) return false;
  const opacity = paint['background-opacity'];
  if (!constant(opacity) || (opacity !== undefined && opacity !== 1)) return false;
  const color = paint['background-color'];
  // No colour is MapLibre's default, opaque black.
  if (color === undefined) return true;
  if (typeof color !== 'string') return false;
  const parsed = Color.parse(color);
  return parsed !== undefined && parsed.a === 1;
}

/**
 * True when a visible background layer of constant opaque colour and full opacity covers frames at MapLibre zoom
 * `zoom`: every pixel of every tile is then opaque, whatever is drawn over it.
 */
export function opaqueAt(style: StyleSpecification, zoom: number): boolean {
  return (style.layers ?? []).some((layer) => opaqueBackground(layer, zoom));
}
