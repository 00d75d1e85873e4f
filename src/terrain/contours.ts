// Contour lines of a DEM window as a vector tile layer, so that clients get isolines without a raster-dem
// source and a worker of their own. The isolines come from maplibre-contour's single-pass marching squares
// (the generator its browser plugin runs); this module maps the window's pixel grid onto it, clips to the
// tile's buffer and simplifies to the tile's resolution.
//
// Pixel convention: maplibre-contour's HeightTile holds values at grid points, point (i, j) at tile coordinate
// (i, j) * extent / (width - 1) (its `averagePixelCentersToGrid` exists to turn pixel-centre rasters into such
// points). A DemWindow's values are pixel centres, so the whole window is handed over as the grid, with an
// extent chosen to make one grid step one pixel, and the result is shifted by half a pixel less the border:
// vertices land exactly where linear interpolation between pixel centres puts them, with no smoothing.
// The window is passed with buffer 0 because the generator reads the wrong left neighbour in the first column
// of a buffered pass; the window's own border is the buffer.
import mlcontour from 'maplibre-contour';
import { DEFAULT_EXTENT, type TileFeature, type TileLayer } from '../tiles/vector-model.js';
import { type DemWindow, windowWidth } from './dem-window.js';

// The package's declaration files import each other without file extensions, which NodeNext resolution does
// not follow, so its types arrive as `any`: the two members used here are typed by hand.
interface IsolineGenerator {
  HeightTile: new (width: number, height: number, get: (x: number, y: number) => number) => object;
  generateIsolines(interval: number, tile: object, extent: number, buffer: number): Record<number, number[][]>;
}
const isolineGenerator = mlcontour as unknown as IsolineGenerator;

export type ContourUnit = 'm' | 'ft';

export interface ContourOptions {
  /** Elevation step between lines, in `unit`. */
  interval: number;
  /** Every `major`-th line (elevation a multiple of interval*major) gets `level` 1. */
  major: number;
  unit: ContourUnit;
  /** Tile units per side (default 4096). */
  extent?: number;
  /** Tile units kept beyond each tile edge (default 64), so lines run on under the neighbour's. */
  buffer?: number;
}

export const CONTOUR_LAYER = 'contours';
export const DEFAULT_CONTOUR_BUFFER = 64;
export const DEFAULT_MAJOR = 5;
/** Most elevation levels one tile may hold: beyond that a tile is a grey smear of lines and megabytes. */
export const MAX_CONTOUR_LEVELS = 1000;
/** Smallest interval accepted, in the unit asked (below DEM precision, lines only trace noise). */
export const MIN_CONTOUR_INTERVAL = 0.1;
export const MAX_CONTOUR_INTERVAL = 10000;
export const MAX_MAJOR = 100;

const FEET_PER_METRE = 1 / 0.3048;
/** Sub-units per tile unit while tracing, so that the generator's rounding does not move vertices. */
const SUBUNITS = 64;

// [lowest zoom, interval]: coarse where a tile spans mountain ranges, 10 m (20 ft) where it spans a hillside.
const INTERVALS: Record<ContourUnit, readonly [number, number][]> = {
  m: [[15, 10], [13, 20], [11, 50], [9, 100], [8, 200], [6, 500], [0, 1000]],
  ft: [[15, 20], [13, 40], [11, 100], [9, 200], [8, 500], [6, 1000], [0, 2000]],
};

/** Default interval between contour lines at zoom z, in `unit`. */
export function defaultContourInterval(z: number, unit: ContourUnit): number {
  for (const [minZoom, interval] of INTERVALS[unit]) if (z >= minZoom) return interval;
  return INTERVALS[unit][INTERVALS[unit].length - 1][1];
}

/** Number of contour levels the window's elevation range holds at the given interval. */
export function contourLevelCount(win: DemWindow, interval: number, unit: ContourUnit): number {
  let min = Infinity;
  let max = -Infinity;
  for (const v of win.data) {
    if (v < min) min = v;
    if (v > max) max = v;
  }
  if (min > max) return 0;
  const scale = (unit === 'ft' ? FEET_PER_METRE : 1) / interval;
  return Math.max(0, Math.floor(max * scale) - Math.ceil(min * scale) + 1);
}

/** The problem with contouring this window at this interval, if any: too many levels for one tile. */
export function contourLimitProblem(win: DemWindow, interval: number, unit: ContourUnit): string | undefined {
  const n = contourLevelCount(win, interval, unit);
  if (n <= MAX_CONTOUR_LEVELS) return undefined;
  return `interval ${interval} ${unit} gives ${n} contour levels in tile ${win.z}/${win.x}/${win.y}; at most ${MAX_CONTOUR_LEVELS} are drawn, use an interval of at least ${minimumIntervalFor(win, unit)}`;
}

function minimumIntervalFor(win: DemWindow, unit: ContourUnit): number {
  let min = Infinity;
  let max = -Infinity;
  for (const v of win.data) {
    if (v < min) min = v;
    if (v > max) max = v;
  }
  const range = (max - min) * (unit === 'ft' ? FEET_PER_METRE : 1);
  return Number((range / (MAX_CONTOUR_LEVELS - 1)).toPrecision(2));
}

/**
 * The `contours` layer of the window's tile: one line feature per elevation, properties `ele` (in `unit`) and
 * `level` (1 on major lines, else 0). Lines reach past the tile edge as far as the buffer, but no further than
 * the window's data: border - 0.5 pixels (so a 64-unit buffer on a 512 px tile of extent 4096 wants a border
 * of at least 9 px). Cells with a NaN corner draw nothing. Throws a RangeError when the window needs more than
 * MAX_CONTOUR_LEVELS levels; callers that take the interval from a request check `contourLimitProblem` first.
 */
export function contourLayer(win: DemWindow, opts: ContourOptions): TileLayer {
  const extent = opts.extent ?? DEFAULT_EXTENT;
  const buffer = opts.buffer ?? DEFAULT_CONTOUR_BUFFER;
  const { interval, major, unit } = opts;
  if (!(interval > 0) || !Number.isFinite(interval)) throw new RangeError(`contour interval must be a positive number, got ${interval}`);
  const problem = contourLimitProblem(win, interval, unit);
  if (problem) throw new RangeError(problem);

  const w = windowWidth(win);
  if (win.data.length !== w * w) throw new RangeError(`DEM window of ${win.size}+2*${win.border} px needs ${w * w} values, got ${win.data.length}`);
  const layer: TileLayer = { name: CONTOUR_LAYER, extent, version: 2, features: [] };
  if (w < 2) return layer;

  // Elevations counted in intervals make every threshold an integer: no drift from adding a fractional step,
  // and `level` is an exact integer test.
  const scale = (unit === 'ft' ? FEET_PER_METRE : 1) / interval;
  const data = win.data;
  const grid = new isolineGenerator.HeightTile(w, w, (i: number, j: number) => data[j * w + i] * scale);
  const unitsPerPixel = extent / win.size;
  const isolines = isolineGenerator.generateIsolines(1, grid, (w - 1) * unitsPerPixel * SUBUNITS, 0);
  const shift = (win.border - 0.5) * unitsPerPixel;
  const tolerance = unitsPerPixel / 2;

  const levels = Object.keys(isolines)
    .map(Number)
    .sort((a, b) => a - b);
  for (const k of levels) {
    const parts: number[][] = [];
    for (const raw of isolines[k]) {
      const line = new Float64Array(raw.length);
      for (let n = 0; n < raw.length; n += 2) {
        line[n] = raw[n] / SUBUNITS - shift;
        line[n + 1] = raw[n + 1] / SUBUNITS - shift;
      }
      for (const piece of clipLine(line, -buffer, extent + buffer)) {
        // A ring round a lone pixel that barely crosses the level is noise at the tile's resolution.
        if (spanOf(piece) < tolerance) continue;
        const rounded = roundLine(simplify(piece, tolerance));
        if (rounded) parts.push(rounded);
      }
    }
    if (parts.length === 0) continue;
    const feature: TileFeature = {
      id: undefined,
      type: 2,
      geometry: parts,
      properties: Object.assign(Object.create(null) as Record<string, number>, {
        ele: Math.round(k * interval * 1e6) / 1e6,
        level: k % major === 0 ? 1 : 0,
      }),
    };
    layer.features.push(feature);
  }
  return layer;
}

/** Pieces of a polyline inside the square [min, max]^2 (Liang-Barsky per segment, runs joined). */
function clipLine(line: Float64Array, min: number, max: number): Float64Array[] {
  const pieces: Float64Array[] = [];
  let current: number[] = [];
  const flush = () => {
    if (current.length >= 4) pieces.push(Float64Array.from(current));
    current = [];
  };
  for (let n = 0; n + 3 < line.length; n += 2) {
    const x0 = line[n], y0 = line[n + 1], x1 = line[n + 2], y1 = line[n + 3];
    const dx = x1 - x0;
    const dy = y1 - y0;
    let t0 = 0;
    let t1 = 1;
    let inside = true;
    for (const [pk, qk] of [
      [-dx, x0 - min],
      [dx, max - x0],
      [-dy, y0 - min],
      [dy, max - y0],
    ]) {
      if (pk === 0) {
        if (qk < 0) inside = false;
      } else {
        const r = qk / pk;
        if (pk < 0) {
          if (r > t1) inside = false;
          else if (r > t0) t0 = r;
        } else if (r < t0) inside = false;
        else if (r < t1) t1 = r;
      }
      if (!inside) break;
    }
    if (!inside) {
      flush();
      continue;
    }
    const ax = x0 + t0 * dx, ay = y0 + t0 * dy;
    if (t0 > 0 || current.length === 0) {
      if (t0 > 0) flush();
      current.push(ax, ay);
    }
    current.push(x0 + t1 * dx, y0 + t1 * dy);
    if (t1 < 1) flush();
  }
  flush();
  return pieces;
}

/** The larger side of a line's bounding box. */
function spanOf(line: Float64Array): number {
  let minX = Infinity, minY = Infinity, maxX = -Infinity, maxY = -Infinity;
  for (let n = 0; n < line.length; n += 2) {
    if (line[n] < minX) minX = line[n];
    if (line[n] > maxX) maxX = line[n];
    if (line[n + 1] < minY) minY = line[n + 1];
    if (line[n + 1] > maxY) maxY = line[n + 1];
  }
  return Math.max(maxX - minX, maxY - minY);
}

/** Douglas-Peucker: the vertices that stay more than `tolerance` from the simplified line. */
function simplify(line: Float64Array, tolerance: number): Float64Array {
  const count = line.length >> 1;
  if (count <= 2) return line;
  const keep = new Uint8Array(count);
  keep[0] = keep[count - 1] = 1;
  const stack: number[] = [0, count - 1];
  const tol2 = tolerance * tolerance;
  while (stack.length > 0) {
    const last = stack.pop()!;
    const first = stack.pop()!;
    let worst = -1;
    let worstD2 = tol2;
    for (let n = first + 1; n < last; n++) {
      const d2 = segmentDistance2(line, n, first, last);
      if (d2 > worstD2) {
        worstD2 = d2;
        worst = n;
      }
    }
    if (worst >= 0) {
      keep[worst] = 1;
      stack.push(first, worst, worst, last);
    }
  }
  let kept = 0;
  for (let n = 0; n < count; n++) kept += keep[n];
  const out = new Float64Array(kept * 2);
  for (let n = 0, o = 0; n < count; n++) {
    if (keep[n]) {
      out[o++] = line[2 * n];
      out[o++] = line[2 * n + 1];
    }
  }
  return out;
}

/** Squared distance from vertex n to the segment between vertices a and b (a point when they coincide). */
function segmentDistance2(line: Float64Array, n: number, a: number, b: number): number {
  const px = line[2 * n], py = line[2 * n + 1];
  const ax = line[2 * a], ay = line[2 * a + 1];
  const dx = line[2 * b] - ax, dy = line[2 * b + 1] - ay;
  const len2 = dx * dx + dy * dy;
  let t = len2 > 0 ? ((px - ax) * dx + (py - ay) * dy) / len2 : 0;
  t = t < 0 ? 0 : t > 1 ? 1 : t;
  const ex = ax + t * dx - px, ey = ay + t * dy - py;
  return ex * ex + ey * ey;
}

/** Integer tile coordinates without repeated vertices; undefined when fewer than two distinct vertices remain. */
function roundLine(line: Float64Array): number[] | undefined {
  const out: number[] = [];
  for (let n = 0; n < line.length; n += 2) {
    const x = Math.round(line[n]);
    const y = Math.round(line[n + 1]);
    const m = out.length;
    if (m >= 2 && out[m - 2] === x && out[m - 1] === y) continue;
    out.push(x, y);
  }
  return out.length >= 4 ? out : undefined;
}

export type ContourQuery = { ok: true; options: ContourOptions } | { ok: false; problem: string };

const DECIMAL = /^[+-]?(?:\d+(?:\.\d*)?|\.\d+)$/;

/**
 * Contour options from a tile URL's query for a tile at zoom z: `unit` (m or ft, default m), `interval`
 * (MIN_CONTOUR_INTERVAL..MAX_CONTOUR_INTERVAL in that unit, default by zoom), `major` (integer 1..MAX_MAJOR,
 * default 5). Unknown parameters are ignored. The limit on levels per tile depends on the data: see
 * `contourLimitProblem`.
 */
export function parseContourQuery(params: URLSearchParams, z: number): ContourQuery {
  const unitRaw = params.get('unit');
  if (unitRaw !== null && unitRaw !== 'm' && unitRaw !== 'ft') return { ok: false, problem: `unit must be m or ft, got ${JSON.stringify(unitRaw)}` };
  const unit: ContourUnit = unitRaw ?? 'm';
  let interval = defaultContourInterval(z, unit);
  const intervalRaw = params.get('interval');
  if (intervalRaw !== null) {
    const v = DECIMAL.test(intervalRaw.trim()) ? Number(intervalRaw) : NaN;
    if (!(v >= MIN_CONTOUR_INTERVAL && v <= MAX_CONTOUR_INTERVAL)) {
      return { ok: false, problem: `interval must be a number from ${MIN_CONTOUR_INTERVAL} to ${MAX_CONTOUR_INTERVAL} (${unit}), got ${JSON.stringify(intervalRaw)}` };
    }
    interval = v;
  }
  let major = DEFAULT_MAJOR;
  const majorRaw = params.get('major');
  if (majorRaw !== null) {
    const v = /^\+?\d+$/.test(majorRaw.trim()) ? Number(majorRaw) : NaN;
    if (!(v >= 1 && v <= MAX_MAJOR)) return { ok: false, problem: `major must be an integer from 1 to ${MAX_MAJOR}, got ${JSON.stringify(majorRaw)}` };
    major = v;
  }
  return { ok: true, options: { interval, major, unit } };
}
