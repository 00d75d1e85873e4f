// One raster tile, made in the raster pool thread (workers/raster.ts): the files are warped together to the
// tile's web-mercator extent by GDAL's gdalwarp (every file in order, each later one over the earlier ones
// where it has data; nodata values, masks and alpha bands respected), coloured (RGB(A) as is, one band
// through the colormap or as grey) and encoded with sharp. GDAL calls use gdal-async's *Async functions, which
// run on libuv's thread pool: several tiles are made at once although gdal-async lives in one thread (it is not
// context-aware and loads in a single thread per process, see docs/rasters.md). Opened datasets are kept in a
// bounded LRU per state generation, closed when evicted and when that state is closed (after a reload).
import gdal from 'gdal-async';
import { LRUCache } from 'lru-cache';
import sharp from 'sharp';
import type { ColormapConfig, Resampling } from '../config/schema.js';
import { gdalPath } from '../config/object-location.js';
import { applyColormap, prepareColormap } from './colormap.js';

/** GDAL configuration options (name → value), set in the raster thread before a file is opened. */
export type GdalOptions = Record<string, string>;

export interface RasterTask {
  /** Raster files (COG, VRT, any GDAL dataset), composited in this order. */
  files: string[];
  z: number;
  x: number;
  y: number;
  size: number;
  resampling: Resampling;
  format: 'png' | 'jpg' | 'webp';
  colormap?: ColormapConfig;
  /** Dynamic colormaps: the range mapped to 0..1. */
  rescale?: { min: number; max: number };
  datasetCache: number;
  /** The state the task comes from: each has its own dataset cache, closed with it. */
  generation: number;
  /** GDAL options for remote files (gdal-storage.ts), applied before the files are opened. */
  storage?: GdalOptions;
  quality: { png: number; jpeg: number; webp: number };
}

export interface RasterInfo {
  bands: number;
  /** west, south, east, north in degrees. */
  bounds: [number, number, number, number];
  /** Zoom at which one tile pixel is about one source pixel. */
  nativeZoom: number;
  /** The GDAL driver that read the file (e.g. "GTiff", "VRT"): uploads accept only GeoTIFFs. */
  driver: string;
}

const HALF_WORLD = 20037508.342789244;

const cachesByGeneration = new Map<number, LRUCache<string, Promise<gdal.Dataset>>>();

export function dataset(file: string, generation: number, max: number): Promise<gdal.Dataset> {
  let cache = cachesByGeneration.get(generation);
  if (!cache) {
    cache = new LRUCache<string, Promise<gdal.Dataset>>({ max, dispose: (p) => void p.then((ds) => ds.close()).catch(() => {}) });
    cachesByGeneration.set(generation, cache);
  }
  let ds = cache.get(file);
  if (!ds) {
    // s3://, gs://, az:// and http(s) paths (a COG source's or a catalogue's) through GDAL's virtual file systems.
    ds = gdal.openAsync(gdalPath(file));
    // A file that cannot be opened is not remembered: it may appear later.
    ds.catch(() => cache.delete(file));
    cache.set(file, ds);
  }
  return ds;
}

let applied: GdalOptions = {};

/**
 * Sets GDAL's (process-wide) options for remote files when they differ from what is set; options a previous
 * configuration set and this one does not are cleared, so a reload that drops an endpoint really drops it.
 */
export function useStorageOptions(options: GdalOptions | undefined): void {
  if (!options) return;
  for (const key of Object.keys(applied)) if (!(key in options)) gdal.config.set(key, null);
  for (const [key, value] of Object.entries(options)) if (applied[key] !== value) gdal.config.set(key, value);
  applied = { ...options };
}

/** Closes the datasets a state opened (its generation ended with a reload or shutdown). */
export function closeGeneration(generation: number): void {
  cachesByGeneration.get(generation)?.clear();
  cachesByGeneration.delete(generation);
}

/** Data bands of a dataset: its bands less a trailing alpha band. */
function dataBands(ds: gdal.Dataset): number {
  const n = ds.bands.count();
  return n > 1 && ds.bands.get(n).colorInterpretation === 'Alpha' ? n - 1 : n;
}

let vsimemSeq = 0;

/** gdalwarp's names of the resampling methods (`-r`). */
const GDALWARP_RESAMPLING: Record<Resampling, string> = {
  nearest: 'near',
  bilinear: 'bilinear',
  cubic: 'cubic',
  cubicspline: 'cubicspline',
  lanczos: 'lanczos',
  average: 'average',
  rms: 'rms',
  mode: 'mode',
  min: 'min',
  max: 'max',
  med: 'med',
  q1: 'Q1',
  q3: 'Q3',
  sum: 'sum',
};

/** The tile as encoded bytes, or undefined when no file has data in it. */
export async function warpTile(task: RasterTask): Promise<Uint8Array | undefined> {
  useStorageOptions(task.storage);
  const sources = await Promise.all(task.files.map((f) => dataset(f, task.generation, task.datasetCache)));
  if (sources.length === 0) return undefined;
  const { z, x, y, size } = task;
  const span = (2 * HALF_WORLD) / 2 ** z;
  const minx = -HALF_WORLD + x * span;
  const maxy = HALF_WORLD - y * span;
  // The output has the bands of the first file and an alpha band last: its own alpha band, warped as alpha
  // (gdalwarp 3.6 has no band selection), or one the warp adds. At most three data bands are shown (RGB).
  const first = sources[0];
  const hasAlpha = dataBands(first) < first.bands.count();
  // GTiff in /vsimem, not MEM: with several sources the MEM driver lost the alpha of all but none (GDAL 3.6, measured).
  const args = ['-of', 'GTiff', '-t_srs', 'EPSG:3857', '-te', String(minx), String(maxy - span), String(minx + span), String(maxy), '-ts', String(size), String(size)];
  args.push('-r', GDALWARP_RESAMPLING[task.resampling], '-ot', 'Float32', '-wo', 'NUM_THREADS=1');
  if (!hasAlpha) args.push('-dstalpha');
  const scratch = `/vsimem/tile-${process.pid}-${++vsimemSeq}.tif`;
  const out = await gdal.warpAsync(scratch, null, sources, args);
  try {
    const count = size * size;
    const total = out.bands.count();
    const bands = Math.min(3, total - 1);
    const read = async (b: number) => (await (await out.bands.getAsync(b)).pixels.readAsync(0, 0, size, size)) as Float32Array;
    const alpha = await read(total);
    let any = false;
    for (let i = 0; i < count; i++) if (alpha[i] > 0) { any = true; break; }
    if (!any) return undefined;
    const rgba = new Uint8Array(count * 4);
    if (bands === 1 && task.colormap) {
      applyColormap(prepareColormap(task.colormap), await read(1), alpha, rgba, task.rescale);
    } else {
      const planes = await Promise.all(Array.from({ length: bands }, (_, b) => read(b + 1)));
      const channels = bands === 1 ? [planes[0], planes[0], planes[0]] : [planes[0], planes[1], planes[bands >= 3 ? 2 : 1]];
      for (let i = 0; i < count; i++) {
        for (let c = 0; c < 3; c++) rgba[i * 4 + c] = Math.max(0, Math.min(255, Math.round(channels[c][i])));
        rgba[i * 4 + 3] = Math.max(0, Math.min(255, Math.round(alpha[i])));
      }
    }
    const image = sharp(rgba, { raw: { width: size, height: size, channels: 4 } });
    const encoded =
      task.format === 'png'
        ? image.png({ compressionLevel: task.quality.png })
        : task.format === 'jpg'
          ? image.flatten({ background: '#ffffff' }).jpeg({ quality: task.quality.jpeg })
          : image.webp({ quality: task.quality.webp });
    return new Uint8Array(await encoded.toBuffer());
  } finally {
    out.close();
    gdal.vsimem.release(scratch);
  }
}

/** What a source needs to know about a file at open time: bands, bounds in degrees, native zoom. */
export async function describeRaster(file: string, storage?: GdalOptions): Promise<RasterInfo> {
  useStorageOptions(storage);
  const ds = await gdal.openAsync(gdalPath(file));
  try {
    const { x: w, y: h } = ds.rasterSize;
    const gt = ds.geoTransform;
    if (!gt || !ds.srs) throw new Error('the file has no georeferencing');
    // Through PROJ strings every CRS is (east, north): EPSG:4326 from the catalogue would be (lat, lon).
    const own = gdal.SpatialReference.fromProj4(ds.srs.toProj4());
    const toMerc = new gdal.CoordinateTransformation(own, gdal.SpatialReference.fromEPSG(3857));
    const toWgs = new gdal.CoordinateTransformation(own, gdal.SpatialReference.fromProj4('+proj=longlat +datum=WGS84 +no_defs'));
    const corners = [
      [0, 0],
      [w, 0],
      [0, h],
      [w, h],
    ].map(([px, py]) => [gt[0] + px * gt[1] + py * gt[2], gt[3] + px * gt[4] + py * gt[5]]);
    const ll = corners.map(([cx, cy]) => toWgs.transformPoint(cx, cy));
    const lons = ll.map((p) => p.x);
    const lats = ll.map((p) => p.y);
    const merc = corners.map(([cx, cy]) => toMerc.transformPoint(cx, cy));
    const mercWidth = Math.max(...merc.map((p) => p.x)) - Math.min(...merc.map((p) => p.x));
    const pixel = mercWidth / w;
    const nativeZoom = Math.max(0, Math.min(22, Math.round(Math.log2((2 * HALF_WORLD) / (256 * pixel)))));
    return { bands: dataBands(ds), bounds: [Math.min(...lons), Math.min(...lats), Math.max(...lons), Math.max(...lats)], nativeZoom, driver: ds.driver.description };
  } finally {
    ds.close();
  }
}
