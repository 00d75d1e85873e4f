// Colormaps of single-band rasters (spec: "Colormap" of the out-of-database raster source; also `colormap` of
// COG/VRT sources). Pure functions over plain numbers, run in the raster pool threads.
//   map_type continuous: linear interpolation of RGBA between entries, clamped to the first and last colour.
//   map_type discrete:   the first entry within ±0.5 of the value; none matches: nodata_color.
//   rescale_mode static and none: the raw pixel value is looked up; dynamic: (value - min) / (max - min), with
//   min/max returned by the database function, so entry values are then positions 0..1.
import type { ColormapConfig } from '../config/schema.js';

export type Rgba = [number, number, number, number];

/** `#rgb`, `#rgba`, `#rrggbb` or `#rrggbbaa` (the `#` optional) as 0..255 channels. */
export function parseHexColor(text: string): Rgba {
  const hex = text.replace(/^#/, '');
  if (!/^([0-9a-f]{3,4}|[0-9a-f]{6}|[0-9a-f]{8})$/i.test(hex)) throw new Error(`"${text}" is not a hex colour`);
  const full = hex.length <= 4 ? [...hex].map((c) => c + c).join('') : hex;
  const n = (i: number) => parseInt(full.slice(i * 2, i * 2 + 2), 16);
  return [n(0), n(1), n(2), full.length === 8 ? n(3) : 255];
}

export interface PreparedColormap {
  discrete: boolean;
  dynamic: boolean;
  nodata: Rgba;
  values: number[];
  colors: Rgba[];
}

export function prepareColormap(cfg: ColormapConfig): PreparedColormap {
  const entries = [...cfg.entries].sort((a, b) => a.value - b.value);
  return {
    discrete: cfg.map_type === 'discrete',
    dynamic: cfg.rescale_mode === 'dynamic',
    nodata: parseHexColor(cfg.nodata_color),
    values: entries.map((e) => e.value),
    colors: entries.map((e) => parseHexColor(e.color)),
  };
}

/** The colour of one valid pixel value (already rescaled when the map is dynamic). */
export function colorOf(cm: PreparedColormap, value: number): Rgba {
  const { values, colors } = cm;
  if (!Number.isFinite(value)) return cm.nodata;
  if (cm.discrete) {
    for (let i = 0; i < values.length; i++) if (Math.abs(value - values[i]) <= 0.5) return colors[i];
    return cm.nodata;
  }
  if (value <= values[0]) return colors[0];
  const last = values.length - 1;
  if (value >= values[last]) return colors[last];
  let i = 1;
  while (values[i] < value) i++;
  const t = (value - values[i - 1]) / (values[i] - values[i - 1]);
  const a = colors[i - 1];
  const b = colors[i];
  return [0, 1, 2, 3].map((k) => Math.round(a[k] + (b[k] - a[k]) * t)) as Rgba;
}

/**
 * Colours a band: `values` raw pixel values, `valid` coverage (0 = nodata); writes RGBA into `out`.
 * `rescale` is used by dynamic maps; without it a dynamic map looks raw values up.
 */
export function applyColormap(cm: PreparedColormap, values: ArrayLike<number>, valid: ArrayLike<number>, out: Uint8Array, rescale?: { min: number; max: number }): void {
  const span = rescale ? rescale.max - rescale.min : 0;
  for (let i = 0; i < values.length; i++) {
    let c: Rgba;
    if (valid[i] <= 0) c = cm.nodata;
    else {
      const v = cm.dynamic && rescale ? (span === 0 ? 0 : (values[i] - rescale.min) / span) : values[i];
      c = colorOf(cm, v);
    }
    out[i * 4] = c[0];
    out[i * 4 + 1] = c[1];
    out[i * 4 + 2] = c[2];
    out[i * 4 + 3] = c[3];
  }
}
