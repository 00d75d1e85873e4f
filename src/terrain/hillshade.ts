// Hillshade tiles computed on the server from a DEM window, for clients that cannot shade raster-dem themselves
// (static maps, print, GIS desktops) and for comparison with GDAL.
//
// Two outputs share one slope pass (Horn's 3x3 gradient on true ground distances, so latitude does not flatten
// or steepen the relief):
//   - `color`: the overlay MapLibre GL JS draws for a hillshade layer with the same paint properties: the
//     maths of its hillshade fragment shader (all five `hillshade-method`s), fed the slopes its prepare pass
//     would store (including the extra relief it gives tiles below zoom 15, and the clamp of its byte storage,
//     but not its 8-bit rounding of slopes). Premultiplied shader colours are written as straight-alpha RGBA.
//     `multidirectional` lights from gdaldem's four directions, averaged as MapLibre averages several lights
//     (with one light, MapLibre's is just `basic`). `standard` takes the exaggeration up to MapLibre's maximum
//     of 1 (beyond 1.07 its formula has no value).
//   - `grey`: the opaque grey levels `gdaldem hillshade` writes for the same method, azimuth, altitude and
//     z-factor (= exaggeration), so a tile can be checked against GDAL; `standard` has no gdaldem counterpart
//     and gives `basic`.
// Options and their defaults are MapLibre's paint properties, read from query parameters by
// `parseHillshadeQuery`.
//
// No data: a NaN centre gives a transparent pixel; a NaN neighbour, or one outside a window without border,
// takes the centre's value, as gdaldem does with -compute_edges, so holes shade their edges instead of growing.
import { Color } from '@maplibre/maplibre-gl-style-spec';
import { type DemWindow, pixelGroundSize, tileSpan, windowWidth } from './dem-window.js';
import { gridKernels, type LoadedWindow } from '../grid/kernels.js';

export type HillshadeMethod = 'standard' | 'basic' | 'combined' | 'igor' | 'multidirectional';
export type HillshadeMode = 'color' | 'grey';

export const HILLSHADE_METHODS: readonly HillshadeMethod[] = ['standard', 'basic', 'combined', 'igor', 'multidirectional'];
export const HILLSHADE_MODES: readonly HillshadeMode[] = ['color', 'grey'];

export interface HillshadeOptions {
  method?: HillshadeMethod;
  mode?: HillshadeMode;
  /** Direction the light comes from, degrees clockwise from north (`hillshade-illumination-direction`). */
  azimuth?: number;
  /** Height of the light above the horizon, degrees (`hillshade-illumination-altitude`). */
  altitude?: number;
  /** `hillshade-exaggeration`; in `grey` mode gdaldem's z-factor. */
  exaggeration?: number;
  /** CSS colours of `hillshade-shadow-color`, `hillshade-highlight-color`, `hillshade-accent-color`. */
  shadow?: string;
  highlight?: string;
  accent?: string;
}

/** MapLibre's defaults for the hillshade paint properties. */
export const HILLSHADE_DEFAULTS: Readonly<Required<HillshadeOptions>> = {
  method: 'standard',
  mode: 'color',
  azimuth: 335,
  altitude: 45,
  exaggeration: 0.5,
  shadow: '#000000',
  highlight: '#FFFFFF',
  accent: '#000000',
};

/** Highest exaggeration accepted: ten times MapLibre's maximum of 1, where gdaldem's shading is already stark. */
export const MAX_EXAGGERATION = 10;

/** The light directions of gdaldem's -multidirectional, which ignores the azimuth asked for. */
const MULTIDIRECTIONAL_AZIMUTHS = [225, 270, 315, 360];

const DEG = Math.PI / 180;
const HALF_PI = Math.PI / 2;
const INV_QUARTER_PI_SQUARED = 4 / (Math.PI * Math.PI);
const INV_PI = 1 / Math.PI;
const COS_225 = Math.cos(225 * DEG);
// MapLibre's prepare pass stores each slope component as slope/8 + 128/255 in one byte, so what its shader
// reads back is clamped to this range (before its division by cos(latitude)).
const STORED_SLOPE_MIN = -8 * (128 / 255);
const STORED_SLOPE_MAX = 8 * (127 / 255);

/**
 * The factor MapLibre's prepare pass multiplies slopes by below zoom 15, so that relief stays visible on
 * low-zoom tiles (the `exaggeration` of hillshade_prepare.fragment.glsl, not the paint property).
 */
export function maplibreZoomRelief(z: number): number {
  const factor = z < 2 ? 0.4 : z < 4.5 ? 0.35 : 0.3;
  return z < 15 ? 2 ** (-(z - 15) * factor) : 1;
}

/** Premultiplied RGBA in 0..1, as MapLibre's shader uniforms hold colours. */
type Premultiplied = [number, number, number, number];

function premultiplied(css: string, name: string): Premultiplied {
  const c = Color.parse(css);
  if (!c) throw new RangeError(`${name} is not a CSS colour: "${css}"`);
  return [c.r, c.g, c.b, c.a];
}

/**
 * Shades one row: p and q are the slopes (east-positive, south-positive) of n pixels, scaled as the mode needs
 * them (see `hillshade`), p NaN where the pixel has no data. Each method has its own loop so that the engine
 * compiles each one on its own, rather than one call per pixel through a call site shared by every method.
 */
type RowKernel = (p: Float64Array, q: Float64Array, n: number, out: Uint8ClampedArray, o: number) => void;

/** Bytes per pixel of a shaded tile: grey, grey with alpha, or RGBA. */
export type HillshadeChannels = 1 | 2 | 4;

/**
 * gdaldem writes its float results into a Byte band: rounded half up, saturated (the array saturates). Written as
 * grey, grey and alpha, or RGBA (`channels`).
 */
function writeGrey(out: Uint8ClampedArray, o: number, value: number, channels: HillshadeChannels): void {
  const g = Math.floor(value + 0.5);
  out[o] = g;
  if (channels === 1) return;
  if (channels === 2) {
    out[o + 1] = 255;
    return;
  }
  out[o + 1] = g;
  out[o + 2] = g;
  out[o + 3] = 255;
}

/**
 * gdaldem's formulas (apps/gdaldem_lib.cpp: GDALHillshadeAlg, GDALHillshadeCombinedAlg, GDALHillshadeIgorAlg,
 * GDALHillshadeMultiDirectionalAlg), rewritten for slopes already multiplied by the z-factor: gdaldem's
 * z-scaled x and y (west-positive, north-positive) are -p and -q.
 */
function greyKernel(method: HillshadeMethod, azimuth: number, altitude: number, channels: HillshadeChannels): RowKernel {
  const sinAlt = Math.sin(altitude * DEG);
  const cosAlt = Math.cos(altitude * DEG);
  const az = azimuth * DEG;
  const cosAzCosAlt = Math.cos(az) * cosAlt;
  const sinAzCosAlt = Math.sin(az) * cosAlt;
  switch (method) {
    case 'combined':
      return (ps, qs, n, out, o) => {
        for (let i = 0; i < n; i++, o += channels) {
          const p = ps[i];
          const q = qs[i];
          if (p !== p) continue;
          const slope2 = p * p + q * q;
          let cosIncidence = (sinAlt + q * cosAzCosAlt - p * sinAzCosAlt) / Math.sqrt(1 + slope2);
          if (cosIncidence > 1) cosIncidence = 1;
          else if (cosIncidence < -1) cosIncidence = -1;
          const shade = 1 - Math.acos(cosIncidence) * Math.atan(Math.sqrt(slope2)) * INV_QUARTER_PI_SQUARED;
          writeGrey(out, o, shade <= 0 ? 1 : 1 + 254 * shade, channels);
        }
      };
    case 'igor': {
      // gdaldem's aspect is atan2(q, -p) and its light's 3*PI/2 - azimuth; the angle between them is the acos
      // of the dot product of their unit vectors.
      const cosLight = Math.cos(1.5 * Math.PI - az);
      const sinLight = Math.sin(1.5 * Math.PI - az);
      return (ps, qs, n, out, o) => {
        for (let i = 0; i < n; i++, o += channels) {
          const p = ps[i];
          const q = qs[i];
          if (p !== p) continue;
          const length = Math.sqrt(p * p + q * q);
          if (length === 0) {
            writeGrey(out, o, 255, channels);
            continue;
          }
          const slopeStrength = Math.atan(length) / HALF_PI;
          const diff = fastAcos((-p * cosLight + q * sinLight) / length);
          writeGrey(out, o, 255 * (1 - slopeStrength * (1 - diff / Math.PI)), channels);
        }
      };
    }
    case 'multidirectional': {
      const lit = 127 * sinAlt;
      const diagonal = 127 * COS_225 * cosAlt;
      const straight = 127 * cosAlt;
      return (ps, qs, n, out, o) => {
        for (let i = 0; i < n; i++, o += channels) {
          const p = ps[i];
          const q = qs[i];
          if (p !== p) continue;
          const pp = p * p;
          const qq = q * q;
          const slope2 = pp + qq;
          if (slope2 === 0) {
            writeGrey(out, o, 1 + 2 * lit, channels);
            continue;
          }
          const v225 = Math.max(0, lit + (q - p) * diagonal);
          const v270 = Math.max(0, lit + p * straight);
          const v315 = Math.max(0, lit - (p + q) * diagonal);
          const v360 = Math.max(0, lit + q * straight);
          const w225 = 0.5 * slope2 - p * q;
          const w315 = slope2 - w225;
          const weighted = (w225 * v225 + pp * v270 + w315 * v315 + qq * v360) / slope2;
          writeGrey(out, o, 1 + weighted / Math.sqrt(1 + slope2), channels);
        }
      };
    }
    default:
      // `basic`, and `standard` too: gdaldem has no MapLibre standard shading, its plain hillshade is the nearest.
      return (ps, qs, n, out, o) => {
        for (let i = 0; i < n; i++, o += channels) {
          const p = ps[i];
          const q = qs[i];
          if (p !== p) continue;
          const shade = (254 * (sinAlt + q * cosAzCosAlt - p * sinAzCosAlt)) / Math.sqrt(1 + p * p + q * q);
          writeGrey(out, o, shade <= 0 ? 1 : 1 + shade, channels);
        }
      };
  }
}

/**
 * acos to within 1e-4 rad (the cubic of Abramowitz and Stegun 4.4.45), a fraction of Math.acos's cost: the
 * angle between a slope's facing and the light is needed once per pixel, and 1e-4 rad is 0.01 grey level.
 */
function fastAcos(x: number): number {
  let ax = x < 0 ? -x : x;
  if (ax > 1) ax = 1;
  const r = Math.sqrt(1 - ax) * (1.5707288 + ax * (-0.2121144 + ax * (0.074261 + ax * -0.0187293)));
  return x < 0 ? Math.PI - r : r;
}

/**
 * The shader's `abs(mod((aspect + azimuth) / PI + 0.5, 2.0) - 1.0)` with aspect = atan2(dy, -dx): the angle
 * between aspect + azimuth and PI/2, over PI, which is acos(sin(aspect + azimuth)) / PI. Written with the slope
 * vector itself, it needs no atan2. Flat ground (no aspect) gets 0.5; every method gives it no colour anyway.
 */
function facing(dx: number, dy: number, sinAz: number, cosAz: number): number {
  const length = Math.sqrt(dx * dx + dy * dy);
  if (length === 0) return 0.5;
  return fastAcos((dy * cosAz - dx * sinAz) / length) / Math.PI;
}

/**
 * Premultiplied shader output written as straight-alpha RGBA, or as grey and alpha (`channels` 2, when every
 * colour is grey and r = g = b); the clamped array rounds and saturates as a framebuffer would.
 */
function writeColor(out: Uint8ClampedArray, o: number, r: number, g: number, b: number, a: number, channels: HillshadeChannels): void {
  if (!(a > 0)) return;
  const unmultiply = 255 / (a > 1 ? 1 : a);
  out[o] = r * unmultiply;
  if (channels === 2) {
    out[o + 1] = a * 255;
    return;
  }
  out[o + 1] = g * unmultiply;
  out[o + 2] = b * unmultiply;
  out[o + 3] = a * 255;
}

/** Entries of the standard method's slope table, over |slope| from 0 to the tile's steepest possible slope. */
const STANDARD_TABLE_SIZE = 4096;

/**
 * The `standard` method's accent and shade strengths, which depend on the slope's steepness alone: tabulated once
 * per tile over a bounded variable, they cost a lookup instead of atan, pow, sin and cos per pixel. Slopes arrive
 * clamped (MapLibre's byte storage), so |slope| never passes maxSlope: the table spans that range evenly, and its
 * index is one multiplication (`toIndex`).
 */
function standardTables(exaggeration: number, maxSlope: number): StandardTables {
  const key = `${exaggeration}/${maxSlope}`;
  const kept = keptTables.get(key);
  if (kept) return kept;
  const tables = computeStandardTables(exaggeration, maxSlope);
  // Tiles of one row of the grid share maxSlope, and most requests the default exaggeration: a few tables serve them.
  if (keptTables.size >= KEPT_TABLES) keptTables.delete(keptTables.keys().next().value!);
  keptTables.set(key, tables);
  return tables;
}

interface StandardTables {
  accentOf: Float64Array;
  shadeOf: Float64Array;
  toIndex: number;
}

const KEPT_TABLES = 16;
const keptTables = new Map<string, StandardTables>();

function computeStandardTables(exaggeration: number, maxSlope: number): StandardTables {
  // MapLibre's paint property stops at 1; above about 1.07 the shader's exponential base turns negative.
  const intensity = Math.min(Math.max(exaggeration, 0), 1);
  const base = 1.875 - intensity * 1.75;
  const scaleDenominator = base ** HALF_PI - 1;
  const strength = Math.min(Math.max(intensity * 2, 0), 1);
  const accentOf = new Float64Array(STANDARD_TABLE_SIZE + 2);
  const shadeOf = new Float64Array(STANDARD_TABLE_SIZE + 2);
  const perEntry = maxSlope / STANDARD_TABLE_SIZE;
  for (let j = 0; j <= STANDARD_TABLE_SIZE + 1; j++) {
    const slope = Math.atan(0.625 * j * perEntry);
    const scaled = intensity !== 0.5 ? ((base ** slope - 1) / scaleDenominator) * HALF_PI : slope;
    accentOf[j] = (1 - Math.cos(scaled)) * strength;
    shadeOf[j] = Math.sin(scaled) * strength;
  }
  return { accentOf, shadeOf, toIndex: STANDARD_TABLE_SIZE / maxSlope };
}

/**
 * MapLibre's hillshade.fragment.glsl on the CPU. p and q arrive as the slopes its prepare pass delivers (ground
 * slope times the zoom relief, not yet times the exaggeration), east- and south-positive like its `deriv`.
 */
function colorKernel(method: HillshadeMethod, opts: Required<HillshadeOptions>, channels: HillshadeChannels, maxSlope: number): RowKernel {
  const [sr, sg, sb, sa] = premultiplied(opts.shadow, 'shadow');
  const [hr, hg, hb, ha] = premultiplied(opts.highlight, 'highlight');
  const [ar, ag, ab, aa] = premultiplied(opts.accent, 'accent');
  const ex2 = opts.exaggeration * 2;
  // The shader's azimuth is the paint direction plus PI (see its comment on the light's azimuthal position).
  const azimuth = opts.azimuth * DEG + Math.PI;
  const sinAlt = Math.sin(opts.altitude * DEG);
  const cosAlt = Math.cos(opts.altitude * DEG);
  const cosAz = Math.cos(azimuth);
  const sinAz = Math.sin(azimuth);
  const cosAzCosAlt = cosAz * cosAlt;
  const sinAzCosAlt = sinAz * cosAlt;
  switch (method) {
    case 'basic':
      return (ps, qs, n, out, o) => {
        for (let i = 0; i < n; i++, o += channels) {
          const dx = ps[i] * ex2;
          const dy = qs[i] * ex2;
          if (dx !== dx) continue;
          let shade = (sinAlt - (dy * cosAzCosAlt - dx * sinAzCosAlt)) / Math.sqrt(1 + dx * dx + dy * dy);
          shade = shade < 0 ? 0 : shade > 1 ? 1 : shade;
          if (shade > 0.5) {
            const k = 2 * shade - 1;
            writeColor(out, o, hr * k, hg * k, hb * k, ha * k, channels);
          } else {
            const k = 1 - 2 * shade;
            writeColor(out, o, sr * k, sg * k, sb * k, sa * k, channels);
          }
        }
      };
    case 'combined':
      return (ps, qs, n, out, o) => {
        for (let i = 0; i < n; i++, o += channels) {
          const dx = ps[i] * ex2;
          const dy = qs[i] * ex2;
          if (dx !== dx) continue;
          let cang = (sinAlt - (dy * cosAzCosAlt - dx * sinAzCosAlt)) / Math.sqrt(1 + dx * dx + dy * dy);
          cang = Math.acos(cang > 1 ? 1 : cang < -1 ? -1 : cang);
          if (cang > HALF_PI) cang = HALF_PI;
          const steep = Math.atan(Math.sqrt(dx * dx + dy * dy)) * INV_QUARTER_PI_SQUARED;
          const s = cang * steep;
          const h = (HALF_PI - cang) * steep;
          writeColor(out, o, sr * s + hr * h, sg * s + hg * h, sb * s + hb * h, sa * s + ha * h, channels);
        }
      };
    case 'igor':
      return (ps, qs, n, out, o) => {
        for (let i = 0; i < n; i++, o += channels) {
          const dx = ps[i] * ex2;
          const dy = qs[i] * ex2;
          if (dx !== dx) continue;
          const slopeStrength = Math.atan(Math.sqrt(dx * dx + dy * dy)) / HALF_PI;
          const aspectStrength = 1 - facing(dx, dy, sinAz, cosAz);
          const s = slopeStrength * aspectStrength;
          const h = slopeStrength * (1 - aspectStrength);
          writeColor(out, o, sr * s + hr * h, sg * s + hg * h, sb * s + hb * h, sa * s + ha * h, channels);
        }
      };
    case 'multidirectional': {
      // MapLibre averages its light sources; the sources are gdaldem's four, at the altitude asked for.
      const lights = MULTIDIRECTIONAL_AZIMUTHS.length;
      const cosAzs = Float64Array.from(MULTIDIRECTIONAL_AZIMUTHS, (a) => -Math.cos(a * DEG) * cosAlt);
      const sinAzs = Float64Array.from(MULTIDIRECTIONAL_AZIMUTHS, (a) => -Math.sin(a * DEG) * cosAlt);
      return (ps, qs, n, out, o) => {
        for (let i = 0; i < n; i++, o += channels) {
          const dx = ps[i] * ex2;
          const dy = qs[i] * ex2;
          if (dx !== dx) continue;
          const norm = 1 / Math.sqrt(1 + dx * dx + dy * dy);
          let r = 0;
          let g = 0;
          let b = 0;
          let a = 0;
          for (let l = 0; l < lights; l++) {
            let shade = (sinAlt - (dy * cosAzs[l] - dx * sinAzs[l])) * norm;
            shade = shade < 0 ? 0 : shade > 1 ? 1 : shade;
            if (shade > 0.5) {
              const k = (2 * shade - 1) / lights;
              r += hr * k;
              g += hg * k;
              b += hb * k;
              a += ha * k;
            } else {
              const k = (1 - 2 * shade) / lights;
              r += sr * k;
              g += sg * k;
              b += sb * k;
              a += sa * k;
            }
          }
          writeColor(out, o, r, g, b, a, channels);
        }
      };
    }
    default: {
      const { accentOf, shadeOf, toIndex } = standardTables(opts.exaggeration, maxSlope);
      return (ps, qs, n, out, o) => {
        for (let i = 0; i < n; i++, o += channels) {
          const p = ps[i];
          const q = qs[i];
          if (p !== p) continue;
          const length = Math.sqrt(p * p + q * q);
          const x = length * toIndex;
          const j = x | 0;
          const f = x - j;
          const accent = accentOf[j] + (accentOf[j + 1] - accentOf[j]) * f;
          const k = shadeOf[j] + (shadeOf[j + 1] - shadeOf[j]) * f;
          // facing(), with the length already at hand.
          const shade = length === 0 ? 0.5 : fastAcos((q * cosAz - p * sinAz) / length) * INV_PI;
          const shadowAlpha = (sa + (ha - sa) * shade) * k;
          const keep = accent * (1 - shadowAlpha);
          writeColor(
            out,
            o,
            ar * keep + (sr + (hr - sr) * shade) * k,
            ag * keep + (sg + (hg - sg) * shade) * k,
            ab * keep + (sb + (hb - sb) * shade) * k,
            aa * keep + shadowAlpha,
            channels,
          );
        }
      };
    }
  }
}

/** A shaded tile's pixels, row-major, north row first, `channels` bytes each (straight alpha). */
export interface HillshadeImage {
  pixels: Uint8Array;
  channels: HillshadeChannels;
}

/** Whether a CSS colour is a shade of grey (or transparent), so that an image drawn with it needs no colour channels. */
function isGrey(css: string): boolean {
  const c = Color.parse(css);
  return c !== undefined && c.r === c.g && c.g === c.b;
}

/** Whether any of the window's pixels inside the tile has no data. */
function innerHasHole(win: DemWindow): boolean {
  const w = windowWidth(win);
  for (let r = win.border; r < win.border + win.size; r++) {
    const row = r * w + win.border;
    for (let i = row; i < row + win.size; i++) if (win.data[i] !== win.data[i]) return true;
  }
  return false;
}

/** Whether any of the window's pixels has no data. */
function hasHole(data: Float32Array): boolean {
  for (let i = 0; i < data.length; i++) if (data[i] !== data[i]) return true;
  return false;
}

/**
 * Shades the tile of a DEM window: size*size RGBA pixels, row-major, north row first. The border only feeds the
 * slopes of the tile's edge pixels.
 */
export function hillshade(win: DemWindow, options: HillshadeOptions = {}): Uint8Array {
  return shade(win, options, 4, scanWindow(win)).pixels;
}

/**
 * The same tile in the fewest channels that hold it exactly: grey mode gives grey (1), or grey with alpha (2) where
 * the tile has holes; colour mode gives grey with alpha when the shadow, highlight and accent colours are all grey
 * (MapLibre's defaults are), else RGBA. Fewer channels are fewer bytes to compress: the PNG of a 512 px tile costs
 * about a quarter as much in grey as in RGBA. `kernels` 'javascript' keeps the WebAssembly kernels out (tests compare
 * the two).
 */
export function hillshadeImage(win: DemWindow, options: HillshadeOptions = {}, kernels: 'wasm-when-possible' | 'javascript' = 'wasm-when-possible'): HillshadeImage {
  const grey = (options.mode ?? HILLSHADE_DEFAULTS.mode) === 'grey';
  const scan: WindowScan = kernels === 'javascript' ? { holes: hasHole(win.data), loaded: undefined } : scanWindow(win);
  const channels: HillshadeChannels = grey
    ? scan.holes && innerHasHole(win)
      ? 2
      : 1
    : [options.shadow ?? HILLSHADE_DEFAULTS.shadow, options.highlight ?? HILLSHADE_DEFAULTS.highlight, options.accent ?? HILLSHADE_DEFAULTS.accent].every(isGrey)
      ? 2
      : 4;
  return shade(win, options, channels, scan);
}

/** Whether a window has pixels without data, and the window loaded in the WebAssembly kernels when they can shade it. */
interface WindowScan {
  holes: boolean;
  loaded: LoadedWindow | undefined;
}

/** Scans a window for holes: in the kernels when they can shade it (which loads it there), else here. */
function scanWindow(win: DemWindow): WindowScan {
  const side = windowWidth(win);
  const kernels = win.border >= 1 && win.size % 4 === 0 && win.data.length === side * side ? gridKernels() : undefined;
  if (kernels) {
    const loaded = kernels.loadWindow(win.data);
    return { holes: loaded.holes, loaded };
  }
  return { holes: hasHole(win.data), loaded: undefined };
}

function shade(win: DemWindow, options: HillshadeOptions, channels: HillshadeChannels, scan: WindowScan): HillshadeImage {
  const opts: Required<HillshadeOptions> = { ...HILLSHADE_DEFAULTS };
  for (const [k, v] of Object.entries(options)) if (v !== undefined) (opts as Record<string, unknown>)[k] = v;
  const { size, border, data } = win;
  const w = windowWidth(win);
  if (data.length !== w * w) throw new RangeError(`DEM window of ${size}+2*${border} px needs ${w * w} values, got ${data.length}`);

  const grey = opts.mode === 'grey';
  const mercatorPixel = tileSpan(win.z) / size;
  // Colour mode clamps slopes to the storage range times the row's secant: the steepest row is the one nearest a pole.
  const maxSecant = Math.max(mercatorPixel / pixelGroundSize(win, border), mercatorPixel / pixelGroundSize(win, border + size - 1));
  const maxSlope = Math.SQRT2 * Math.max(-STORED_SLOPE_MIN, STORED_SLOPE_MAX) * maxSecant;
  // Grey: slopes times gdaldem's z-factor. Colour: slopes times MapLibre's zoom relief, clamped as its byte
  // storage clamps them (the exaggeration is the shader's business there).
  const factor = grey ? opts.exaggeration : maplibreZoomRelief(win.z);
  // With a border every pixel of the tile has its eight neighbours, and without holes none needs replacing: the
  // common case gets a loop without those checks, or the WebAssembly kernels.
  const complete = border >= 1 && !scan.holes;
  if (complete && scan.loaded) {
    const fast = shadeInWasm(scan.loaded, win, opts, channels, factor, mercatorPixel, maxSlope);
    if (fast) return { pixels: fast, channels };
  }
  const kernel = grey ? greyKernel(opts.method, opts.azimuth, opts.altitude, channels) : colorKernel(opts.method, opts, channels, maxSlope);

  const out = new Uint8Array(size * size * channels);
  const pixels = new Uint8ClampedArray(out.buffer);
  const ps = new Float64Array(size);
  const qs = new Float64Array(size);
  for (let row = 0; row < size; row++) {
    const wr = row + border;
    const ground = pixelGroundSize(win, wr);
    const k = factor / (8 * ground);
    // The storage clamp applies to mercator slopes; the shader then divides by cos(latitude).
    const secant = mercatorPixel / ground;
    const lo = grey ? -Infinity : STORED_SLOPE_MIN * secant;
    const hi = grey ? Infinity : STORED_SLOPE_MAX * secant;
    if (complete) slopesComplete(data, w, wr, border, size, k, lo, hi, ps, qs);
    else slopesWithHoles(data, w, wr, border, size, k, lo, hi, ps, qs);
    kernel(ps, qs, size, pixels, row * size * channels);
  }
  return { pixels: out, channels };
}

/**
 * Horn's slopes of one row of a window with a border and no hole. Horn's kernel is separable: p is the difference
 * of the vertically smoothed columns (up + 2 mid + down) on either side, q the horizontally smoothed vertical
 * difference (down - up). Sliding both along the row reads each of the three rows once per pixel instead of
 * eight loads.
 */
function slopesComplete(data: Float32Array, w: number, wr: number, border: number, size: number, k: number, lo: number, hi: number, ps: Float64Array, qs: Float64Array): void {
  const up = (wr - 1) * w + border;
  const mid = wr * w + border;
  const down = (wr + 1) * w + border;
  let smoothPrev = data[up - 1] + 2 * data[mid - 1] + data[down - 1];
  let diffPrev = data[down - 1] - data[up - 1];
  let smooth = data[up] + 2 * data[mid] + data[down];
  let diff = data[down] - data[up];
  for (let col = 0; col < size; col++) {
    const u = data[up + col + 1];
    const d = data[down + col + 1];
    const smoothNext = u + 2 * data[mid + col + 1] + d;
    const diffNext = d - u;
    let p = (smoothNext - smoothPrev) * k;
    let q = (diffPrev + 2 * diff + diffNext) * k;
    if (p < lo) p = lo;
    else if (p > hi) p = hi;
    if (q < lo) q = lo;
    else if (q > hi) q = hi;
    ps[col] = p;
    qs[col] = q;
    smoothPrev = smooth;
    smooth = smoothNext;
    diffPrev = diff;
    diff = diffNext;
  }
}

/**
 * The common cases through the WebAssembly kernels (src/grid/kernels.ts), which hold the window
 * already (`loaded`, by scanWindow): a complete window shaded grey with gdaldem's plain formula, or in colour with
 * MapLibre's standard method. Undefined for every other case, and the JavaScript passes shade the tile.
 */
function shadeInWasm(loaded: LoadedWindow, win: DemWindow, opts: Required<HillshadeOptions>, channels: HillshadeChannels, factor: number, mercatorPixel: number, maxSlope: number): Uint8Array | undefined {
  const grey = opts.mode === 'grey';
  const basic = opts.method === 'basic' || opts.method === 'standard';
  if (grey ? !basic || channels !== 1 : opts.method !== 'standard' || channels === 1) return undefined;
  const { size, border } = win;
  const w = windowWidth(win);
  if (grey) {
    const rowK = new Float32Array(size);
    for (let row = 0; row < size; row++) rowK[row] = factor / (8 * pixelGroundSize(win, row + border));
    const alt = opts.altitude * DEG;
    const az = opts.azimuth * DEG;
    return loaded.greyBasic(w, border, size, rowK, Math.sin(alt), Math.cos(az) * Math.cos(alt), Math.sin(az) * Math.cos(alt));
  }
  const rows = new Float32Array(size * 3);
  for (let row = 0; row < size; row++) {
    const ground = pixelGroundSize(win, row + border);
    const secant = mercatorPixel / ground;
    rows[row * 3] = factor / (8 * ground);
    rows[row * 3 + 1] = STORED_SLOPE_MIN * secant;
    rows[row * 3 + 2] = STORED_SLOPE_MAX * secant;
  }
  const { accentOf, shadeOf, toIndex } = standardTables(opts.exaggeration, maxSlope);
  const tables = new Float32Array(accentOf.length * 2);
  tables.set(accentOf);
  tables.set(shadeOf, accentOf.length);
  // The shader's azimuth is the paint direction plus PI (as in colorKernel).
  const azimuth = opts.azimuth * DEG + Math.PI;
  const colours = Float32Array.from([...premultiplied(opts.shadow, 'shadow'), ...premultiplied(opts.highlight, 'highlight'), ...premultiplied(opts.accent, 'accent')]);
  return loaded.colorStandard(w, border, size, rows, channels as 2 | 4, tables, STANDARD_TABLE_SIZE, toIndex, Math.cos(azimuth), Math.sin(azimuth), colours);
}

/** Horn's slopes of one row where pixels may lack data or neighbours (see the file's comment on no data). */
function slopesWithHoles(data: Float32Array, w: number, wr: number, border: number, size: number, k: number, lo: number, hi: number, ps: Float64Array, qs: Float64Array): void {
  const up = wr > 0 ? (wr - 1) * w : -1;
  const mid = wr * w;
  const down = wr + 1 < w ? (wr + 1) * w : -1;
  for (let col = 0; col < size; col++) {
    const wc = col + border;
    const e = data[mid + wc];
    if (e !== e) {
      ps[col] = NaN; // no data: the kernel leaves the pixel transparent
      continue;
    }
    const hasLeft = wc > 0;
    const hasRight = wc + 1 < w;
    let a = e, b = e, c = e, d = e, f = e, g = e, h = e, i = e;
    if (up >= 0) {
      if (hasLeft) a = data[up + wc - 1];
      b = data[up + wc];
      if (hasRight) c = data[up + wc + 1];
    }
    if (hasLeft) d = data[mid + wc - 1];
    if (hasRight) f = data[mid + wc + 1];
    if (down >= 0) {
      if (hasLeft) g = data[down + wc - 1];
      h = data[down + wc];
      if (hasRight) i = data[down + wc + 1];
    }
    if (a !== a) a = e;
    if (b !== b) b = e;
    if (c !== c) c = e;
    if (d !== d) d = e;
    if (f !== f) f = e;
    if (g !== g) g = e;
    if (h !== h) h = e;
    if (i !== i) i = e;
    let p = (c + 2 * f + i - (a + 2 * d + g)) * k;
    let q = (g + 2 * h + i - (a + 2 * b + c)) * k;
    if (p < lo) p = lo;
    else if (p > hi) p = hi;
    if (q < lo) q = lo;
    else if (q > hi) q = hi;
    ps[col] = p;
    qs[col] = q;
  }
}

export type HillshadeQuery = { ok: true; options: Required<HillshadeOptions> } | { ok: false; problem: string };

const DECIMAL = /^[+-]?(?:\d+(?:\.\d*)?|\.\d+)$/;

/** A decimal number within [min, max], or the problem naming the parameter. */
function numberParam(params: URLSearchParams, name: string, min: number, max: number): number | string | undefined {
  const raw = params.get(name);
  if (raw === null) return undefined;
  const value = DECIMAL.test(raw.trim()) ? Number(raw) : NaN;
  if (!(value >= min && value <= max)) return `${name} must be a number from ${min} to ${max}, got ${JSON.stringify(raw)}`;
  return value;
}

/**
 * Hillshade options from a tile URL's query: `method`, `mode`, `azimuth` (0..360), `altitude` (0..90),
 * `exaggeration` (0..MAX_EXAGGERATION), `shadow`, `highlight`, `accent` (CSS colours). Absent parameters take
 * MapLibre's defaults; unknown parameters are ignored.
 */
export function parseHillshadeQuery(params: URLSearchParams): HillshadeQuery {
  const options: Required<HillshadeOptions> = { ...HILLSHADE_DEFAULTS };
  const method = params.get('method');
  if (method !== null) {
    if (!(HILLSHADE_METHODS as readonly string[]).includes(method)) {
      return { ok: false, problem: `method must be one of ${HILLSHADE_METHODS.join(', ')}, got ${JSON.stringify(method)}` };
    }
    options.method = method as HillshadeMethod;
  }
  const mode = params.get('mode');
  if (mode !== null) {
    if (!(HILLSHADE_MODES as readonly string[]).includes(mode)) {
      return { ok: false, problem: `mode must be one of ${HILLSHADE_MODES.join(', ')}, got ${JSON.stringify(mode)}` };
    }
    options.mode = mode as HillshadeMode;
  }
  for (const [name, min, max] of [
    ['azimuth', 0, 360],
    ['altitude', 0, 90],
    ['exaggeration', 0, MAX_EXAGGERATION],
  ] as const) {
    const v = numberParam(params, name, min, max);
    if (typeof v === 'string') return { ok: false, problem: v };
    if (v !== undefined) options[name] = v;
  }
  for (const name of ['shadow', 'highlight', 'accent'] as const) {
    const raw = params.get(name);
    if (raw === null) continue;
    if (!Color.parse(raw)) {
      return { ok: false, problem: `${name} must be a CSS colour (#rgb, #rrggbb, #rrggbbaa, rgb(), rgba(), hsl() or a name), got ${JSON.stringify(raw)}` };
    }
    options[name] = raw;
  }
  return { ok: true, options };
}
