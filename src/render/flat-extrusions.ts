// Seen from straight above (pitch 0), an extruded building shows only its roof: its walls are vertical. In
// software WebGL, drawing the extrusion geometry (walls and roofs, twice for translucency) is most of a city
// frame's cost (measured: about 600 of 780 ms of GPU-process CPU for the z14 Paris tile in OSM Liberty). For
// pitch-0 frames the Chromium backend therefore draws `fill-extrusion` layers as `fill` layers of the colour
// MapLibre would light the roof with, at the same opacity. Roofs look the same; what is lost are the 1-2 px of
// wall that MapLibre's perspective shows near the edges of a frame — which also made neighbouring tiles disagree.
// `render.flat_extrusions = false` turns this off.
import { Color, latest, type StyleSpecification } from '@maplibre/maplibre-gl-style-spec';

type Json = Record<string, unknown>;

interface Light {
  /** z of the light direction (the roof normal is (0, 0, 1)); independent of azimuth and bearing. */
  z: number;
  intensity: number;
  color: Color;
}

function lightOf(style: StyleSpecification): Light {
  const l = (style.light ?? {}) as Json;
  const spec = latest.light as unknown as Record<string, { default: unknown }>;
  const position = Array.isArray(l.position) && l.position.length === 3 ? (l.position as number[]) : (spec.position.default as number[]);
  const intensity = typeof l.intensity === 'number' ? l.intensity : (spec.intensity.default as number);
  const color = (typeof l.color === 'string' ? Color.parse(l.color) : undefined) ?? Color.parse(spec.color.default as string)!;
  return { z: position[0] * Math.cos((position[2] * Math.PI) / 180), intensity, color };
}

const clamp = (v: number, lo: number, hi: number) => Math.min(hi, Math.max(lo, v));
const mix = (a: number, b: number, t: number) => a + (b - a) * t;

/** The roof colour of MapLibre's fill-extrusion shader for a constant colour (premultiplied, as the shader has it). */
export function litRoofColor(colorText: string, light: Light): string | undefined {
  const c = Color.parse(colorText);
  if (!c) return undefined;
  const luminance = c.r * 0.2126 + c.g * 0.7152 + c.b * 0.0722;
  const directional = mix(1 - light.intensity, Math.max(1 - luminance + light.intensity, 1), clamp(light.z, 0, 1));
  const channel = (v: number, lc: number) => clamp((v + 0.03) * directional * lc, mix(0, 0.3, 1 - lc), 1);
  const rgb = [channel(c.r, light.color.r), channel(c.g, light.color.g), channel(c.b, light.color.b)].map((v) => Math.round(v * 255));
  return `rgb(${rgb.join(',')})`;
}

/** A colour value with every constant colour lit: constants and legacy `{stops}` functions; expressions unchanged. */
function litValue(value: unknown, light: Light): unknown {
  if (typeof value === 'string') return litRoofColor(value, light) ?? value;
  if (value && typeof value === 'object' && !Array.isArray(value) && Array.isArray((value as Json).stops)) {
    const f = value as Json;
    return { ...f, stops: (f.stops as [unknown, unknown][]).map(([k, v]) => [k, litValue(v, light)]) };
  }
  return value;
}

const RENAMED: Record<string, string> = {
  'fill-extrusion-opacity': 'fill-opacity',
  'fill-extrusion-translate': 'fill-translate',
  'fill-extrusion-translate-anchor': 'fill-translate-anchor',
  'fill-extrusion-pattern': 'fill-pattern',
};

/** The style with every fill-extrusion layer drawn as a flat fill of its lit roof colour; other layers untouched. */
export function flattenExtrusions(style: StyleSpecification): StyleSpecification {
  if (!style.layers.some((l) => l.type === 'fill-extrusion')) return style;
  const light = lightOf(style);
  const layers = style.layers.map((layer) => {
    if (layer.type !== 'fill-extrusion') return layer;
    const paint = (layer.paint ?? {}) as Json;
    const flat: Json = { 'fill-antialias': false };
    for (const [k, v] of Object.entries(paint)) {
      if (k === 'fill-extrusion-color') flat['fill-color'] = litValue(v, light);
      else if (RENAMED[k]) flat[RENAMED[k]] = v;
    }
    // Uncoloured extrusions are black in MapLibre (the default colour), lit like any other.
    if (flat['fill-color'] === undefined && flat['fill-pattern'] === undefined) flat['fill-color'] = litValue('#000000', light);
    const { paint: _paint, layout, type: _type, ...rest } = layer as Json;
    const visibility = (layout as Json | undefined)?.visibility;
    return { ...rest, type: 'fill', paint: flat, ...(visibility ? { layout: { visibility } } : {}) } as StyleSpecification['layers'][number];
  });
  return { ...style, layers };
}
