// Elevations read from a single-band raster (an elevation COG or VRT) in the raster pool thread: a web-mercator
// window around a tile (warped bilinearly by gdalwarp, with a border read from the neighbouring data so slopes and
// contour lines join across tile edges), and single points at the file's own resolution (its pixels, not a tile's).
import gdal from 'gdal-async';
import { dataset, useStorageOptions, type GdalOptions } from './warp-tile.js';

const HALF_WORLD = 20037508.342789244;

export interface DemWindowTask {
  /** Single-band files in metres, composited in order: each later one over the earlier ones where it has data. */
  files: string[];
  z: number;
  x: number;
  y: number;
  /** Pixels per tile side. */
  size: number;
  /** Pixels added on every side. */
  border: number;
  datasetCache: number;
  generation: number;
  storage?: GdalOptions;
}

let vsimemSeq = 0;

/**
 * The window's elevations, (size + 2 * border)² Float32 values, north row first; NaN where the file has no data.
 * Undefined when the file has no data anywhere in the window.
 */
export async function readDemWindow(task: DemWindowTask): Promise<Float32Array | undefined> {
  useStorageOptions(task.storage);
  const sources = await Promise.all(task.files.map((f) => dataset(f, task.generation, task.datasetCache)));
  const { z, x, y, size, border } = task;
  const span = (2 * HALF_WORLD) / 2 ** z;
  const pixel = span / size;
  const minx = -HALF_WORLD + x * span - border * pixel;
  const maxy = HALF_WORLD - y * span + border * pixel;
  const side = size + 2 * border;
  // One file: straight into memory (MEM, measured 2 ms a window cheaper); several: through a /vsimem GTiff, as
  // tile warps do, since the MEM driver mishandled several sources there (warp-tile.ts).
  const single = task.files.length === 1;
  const args = ['-of', single ? 'MEM' : 'GTiff', '-t_srs', 'EPSG:3857', '-te', String(minx), String(maxy - side * pixel), String(minx + side * pixel), String(maxy), '-ts', String(side), String(side)];
  // NaN marks "no data" in the window: it survives bilinear weights (a pixel next to a hole stays a number only
  // where gdalwarp found data) and cannot be mistaken for an elevation.
  args.push('-r', 'bilinear', '-ot', 'Float32', '-dstnodata', 'nan', '-wo', 'NUM_THREADS=1');
  const scratch = single ? 'window' : `/vsimem/dem-${process.pid}-${++vsimemSeq}.tif`;
  const out = await gdal.warpAsync(scratch, null, sources, args);
  try {
    const band = await out.bands.getAsync(1);
    const data = new Float32Array(side * side);
    await band.pixels.readAsync(0, 0, side, side, data);
    for (let i = 0; i < data.length; i++) if (data[i] === data[i]) return data;
    return undefined;
  } finally {
    out.close();
    if (!single) gdal.vsimem.release(scratch);
  }
}

export interface DemPointsTask {
  /** As for a window: later files over earlier ones where they have data. */
  files: string[];
  /** lon, lat pairs in degrees. */
  points: Float64Array;
  datasetCache: number;
  generation: number;
  storage?: GdalOptions;
}

/** A file's georeferencing, kept per dataset: the way from lon/lat to its pixels. */
interface Georef {
  toFile: gdal.CoordinateTransformation;
  /** Inverse geotransform: pixel = g0 + g1 * X + g2 * Y, line = g3 + g4 * X + g5 * Y. */
  inverse: number[];
  width: number;
  height: number;
  nodata: number | null;
}

const georefs = new WeakMap<gdal.Dataset, Georef>();

function georefOf(ds: gdal.Dataset): Georef {
  let g = georefs.get(ds);
  if (g) return g;
  const gt = ds.geoTransform;
  if (!gt || !ds.srs) throw new Error('the file has no georeferencing');
  const det = gt[1] * gt[5] - gt[2] * gt[4];
  // Through PROJ strings every CRS is (east, north), whatever axis order its EPSG definition has (as describeRaster does).
  const own = gdal.SpatialReference.fromProj4(ds.srs.toProj4());
  const wgs = gdal.SpatialReference.fromProj4('+proj=longlat +datum=WGS84 +no_defs');
  g = {
    toFile: new gdal.CoordinateTransformation(wgs, own),
    inverse: [
      (gt[2] * gt[3] - gt[0] * gt[5]) / det,
      gt[5] / det,
      -gt[2] / det,
      (gt[0] * gt[4] - gt[1] * gt[3]) / det,
      -gt[4] / det,
      gt[1] / det,
    ],
    width: ds.rasterSize.x,
    height: ds.rasterSize.y,
    nodata: ds.bands.get(1).noDataValue,
  };
  georefs.set(ds, g);
  return g;
}

/** Pixels read per block of points: points are grouped by the block of the file they fall in, each read once. */
const BLOCK = 256;

/**
 * Elevations at the points, bilinear between the four pixel centres around each (pixels without data left out and
 * the others' weights renormalised); NaN outside the file or where none of the four has data.
 */
export async function readDemPoints(task: DemPointsTask): Promise<Float64Array> {
  useStorageOptions(task.storage);
  const out = new Float64Array(task.points.length / 2).fill(Number.NaN);
  for (const file of task.files) {
    const values = await pointsOfFile(await dataset(file, task.generation, task.datasetCache), task.points);
    for (let i = 0; i < values.length; i++) if (!Number.isNaN(values[i])) out[i] = values[i];
  }
  return out;
}

async function pointsOfFile(ds: gdal.Dataset, points: Float64Array): Promise<Float64Array> {
  const g = georefOf(ds);
  const n = points.length / 2;
  const out = new Float64Array(n).fill(Number.NaN);
  // Fractional pixel coordinates, measured so that a pixel's centre is at +0.5.
  const col = new Float64Array(n);
  const row = new Float64Array(n);
  const blocks = new Map<number, number[]>();
  const bx = Math.ceil(g.width / BLOCK);
  for (let i = 0; i < n; i++) {
    const p = g.toFile.transformPoint(points[2 * i], points[2 * i + 1]);
    const c = g.inverse[0] + g.inverse[1] * p.x + g.inverse[2] * p.y;
    const r = g.inverse[3] + g.inverse[4] * p.x + g.inverse[5] * p.y;
    if (!(c >= 0 && c <= g.width && r >= 0 && r <= g.height)) continue;
    col[i] = c;
    row[i] = r;
    // The block of the upper-left pixel of the 2x2 around the point; the read takes one more pixel each way.
    const c0 = Math.max(0, Math.floor(c - 0.5));
    const r0 = Math.max(0, Math.floor(r - 0.5));
    const key = Math.floor(r0 / BLOCK) * bx + Math.floor(c0 / BLOCK);
    const list = blocks.get(key);
    if (list) list.push(i);
    else blocks.set(key, [i]);
  }
  const band = await ds.bands.getAsync(1);
  for (const [key, members] of blocks) {
    const x0 = (key % bx) * BLOCK;
    const y0 = Math.floor(key / bx) * BLOCK;
    const w = Math.min(BLOCK + 1, g.width - x0);
    const h = Math.min(BLOCK + 1, g.height - y0);
    const pixels = new Float64Array(w * h);
    await band.pixels.readAsync(x0, y0, w, h, pixels);
    for (const i of members) out[i] = bilinear(pixels, w, h, col[i] - 0.5 - x0, row[i] - 0.5 - y0, g.nodata);
  }
  return out;
}

/** Bilinear at (u, v) in a grid whose pixel (i, j) has its centre at (i, j); edges clamp to the last pixel. */
function bilinear(grid: Float64Array, w: number, h: number, u: number, v: number, nodata: number | null): number {
  const i0 = Math.floor(u);
  const j0 = Math.floor(v);
  const fx = u - i0;
  const fy = v - j0;
  let sum = 0;
  let weights = 0;
  for (let dj = 0; dj <= 1; dj++) {
    for (let di = 0; di <= 1; di++) {
      const weight = (di ? fx : 1 - fx) * (dj ? fy : 1 - fy);
      if (weight === 0) continue;
      const i = Math.min(w - 1, Math.max(0, i0 + di));
      const j = Math.min(h - 1, Math.max(0, j0 + dj));
      const value = grid[j * w + i];
      if (value !== value || value === nodata) continue;
      sum += weight * value;
      weights += weight;
    }
  }
  return weights > 0 ? sum / weights : Number.NaN;
}
