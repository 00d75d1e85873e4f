// Elevations read from a single-band raster (an elevation COG or VRT) in the raster pool thread: a web-mercator
// window around a tile (warped bilinearly by gdalwarp, with a border read from the neighbouring data so slopes and
// contour lines join across tile edges), and single points at the file's own resolution (its pixels, not a tile's).
import gdal from 'gdal-async';
import { dataset, useStorageOptions, type GdalOptions } from './warp-tile.js';
import { hasNaN, sampleGrid, type GridSamples } from '../grid/bilinear.js';

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
  const read = await readDemGrid(task);
  if (read === undefined || read instanceof Float32Array) return read;
  const { data, any } = sampleGrid(read);
  return any ? data : undefined;
}

/**
 * The window as `readDemWindow` gives it, or, for a file read directly (see `mercatorSamples`), the file's pixels
 * under it and where the window samples them, so that the thread that uses the window samples it (into buffers
 * it reuses) and no megabyte of window travels between threads.
 */
export async function readDemGrid(task: DemWindowTask): Promise<Float32Array | GridSamples | undefined> {
  useStorageOptions(task.storage);
  const sources = await Promise.all(task.files.map((f) => dataset(f, task.generation, task.datasetCache)));
  const { z, x, y, size, border } = task;
  const span = (2 * HALF_WORLD) / 2 ** z;
  const pixel = span / size;
  const minx = -HALF_WORLD + x * span - border * pixel;
  const maxy = HALF_WORLD - y * span + border * pixel;
  const side = size + 2 * border;
  const single = task.files.length === 1;
  if (single) {
    const direct = await mercatorSamples(sources[0], minx, maxy, pixel, side);
    if (direct !== 'warp') return direct;
  }
  // One file: straight into memory (MEM, measured 2 ms a window cheaper); several: through a /vsimem GTiff, as
  // tile warps do, since the MEM driver mishandled several sources there (warp-tile.ts).
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

/** How a file in EPSG:3857 without rotation maps to its pixels, or undefined for any other file. */
interface MercatorGrid {
  /** Geotransform: X = gt0 + col * gt1, Y = gt3 + row * gt5 (pixel edges). */
  gt: number[];
  width: number;
  height: number;
  nodata: number | null;
}

const mercatorGrids = new WeakMap<gdal.Dataset, MercatorGrid | null>();
const WEB_MERCATOR = gdal.SpatialReference.fromEPSG(3857);

function mercatorGrid(ds: gdal.Dataset): MercatorGrid | undefined {
  let g = mercatorGrids.get(ds);
  if (g === undefined) {
    const gt = ds.geoTransform;
    const band = ds.bands.get(1);
    // A mask other than the nodata value (an alpha band, a per-dataset mask) is GDAL's to apply.
    // GDAL's mask flags: GMF_ALL_VALID 0x01, GMF_PER_DATASET 0x02, GMF_ALPHA 0x04, GMF_NODATA 0x08.
    const flags = band.getMaskFlags();
    const maskIsNodata = flags === 0x01 || flags === 0x08;
    g = gt && ds.srs?.isSame(WEB_MERCATOR) && gt[2] === 0 && gt[4] === 0 && gt[1] > 0 && gt[5] < 0 && maskIsNodata ? { gt, width: ds.rasterSize.x, height: ds.rasterSize.y, nodata: band.noDataValue } : null;
    mercatorGrids.set(ds, g);
  }
  return g ?? undefined;
}

/**
 * A window from a file that is already a web-mercator grid, at or below the file's own pixel size: the file's
 * pixels under the window read as they are (RasterIO, no resampling), to be sampled bilinearly at the window's pixel
 * centres (src/grid/bilinear.ts), which is what gdalwarp's bilinear does for such a file, at a tenth of its cost
 * (its general kernel with no-data masks costs about 12 ms a 514 px window). Window pixels whose centre lies
 * outside the file have no data, as in gdalwarp. 'warp' when the file is not such a grid, or when the window's
 * pixels are larger than the file's (gdalwarp then widens its kernel and reads overviews).
 */
async function mercatorSamples(ds: gdal.Dataset, minx: number, maxy: number, pixel: number, side: number): Promise<GridSamples | undefined | 'warp'> {
  const g = mercatorGrid(ds);
  if (!g || pixel > g.gt[1] * 1.000001 || pixel > -g.gt[5] * 1.000001) return 'warp';
  const cols = new Float64Array(side);
  const rows = new Float64Array(side);
  // File pixel positions of the window's pixel centres (file pixel centres at integers).
  let c0 = Infinity;
  let c1 = -Infinity;
  for (let i = 0; i < side; i++) {
    const u = (minx + (i + 0.5) * pixel - g.gt[0]) / g.gt[1] - 0.5;
    if (u < -0.5 || u > g.width - 0.5) cols[i] = Number.NaN;
    else {
      cols[i] = u;
      c0 = Math.min(c0, Math.floor(u));
      c1 = Math.max(c1, Math.floor(u) + 1);
    }
  }
  let r0 = Infinity;
  let r1 = -Infinity;
  for (let i = 0; i < side; i++) {
    const v = (maxy - (i + 0.5) * pixel - g.gt[3]) / g.gt[5] - 0.5;
    if (v < -0.5 || v > g.height - 0.5) rows[i] = Number.NaN;
    else {
      rows[i] = v;
      r0 = Math.min(r0, Math.floor(v));
      r1 = Math.max(r1, Math.floor(v) + 1);
    }
  }
  if (c0 > c1 || r0 > r1) return undefined;
  c0 = Math.max(0, c0);
  r0 = Math.max(0, r0);
  c1 = Math.min(g.width - 1, c1);
  r1 = Math.min(g.height - 1, r1);
  const width = c1 - c0 + 1;
  const height = r1 - r0 + 1;
  const grid = new Float32Array(width * height);
  const band = await ds.bands.getAsync(1);
  await band.pixels.readAsync(c0, r0, width, height, grid);
  if (g.nodata !== null) {
    const nodata = Math.fround(g.nodata);
    for (let i = 0; i < grid.length; i++) if (grid[i] === nodata) grid[i] = Number.NaN;
  }
  for (let i = 0; i < side; i++) {
    cols[i] -= c0;
    rows[i] -= r0;
  }
  const holes = hasNaN(grid);
  // Every pixel empty: no window (as gdalwarp's all-NaN window is none).
  if (holes && grid.every((v) => v !== v)) return undefined;
  return { grid, width, height, cols, rows, holes, gdalMask: true };
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
