// One raster tile, made in a raster pool thread (workers/raster.ts): the files are warped together to the
// tile's web-mercator extent by GDAL's gdalwarp (every file in order, each later one over the earlier ones
// where it has data; nodata values, masks and alpha bands respected), coloured (RGB(A) as is, one band
// through the colormap or as grey) and encoded with sharp. Opened datasets are kept in a bounded LRU per
// thread and closed when evicted, and when the pool is destroyed (a reload).
import gdal from 'gdal-async';
import { LRUCache } from 'lru-cache';
import sharp from 'sharp';
import type { ColormapConfig, Resampling } from '../config/schema.js';
import { applyColormap, prepareColormap } from '../sources/raster/colormap.js';

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
  quality: { png: number; jpeg: number; webp: number };
}

export interface RasterInfo {
  bands: number;
  /** west, south, east, north in degrees. */
  bounds: [number, number, number, number];
  /** Zoom at which one tile pixel is about one source pixel. */
  nativeZoom: number;
}

const HALF_WORLD = 20037508.342789244;

let datasets: LRUCache<string, gdal.Dataset> | undefined;

function dataset(file: string, max: number): gdal.Dataset {
  datasets ??= new LRUCache<string, gdal.Dataset>({ max, dispose: (ds) => ds.close() });
  let ds = datasets.get(file);
  if (!ds) {
    ds = gdal.open(file);
    datasets.set(file, ds);
  }
  return ds;
}

/** Data bands of a dataset: its bands less a trailing alpha band. */
function dataBands(ds: gdal.Dataset): number {
  const n = ds.bands.count();
  return n > 1 && ds.bands.get(n).colorInterpretation === 'Alpha' ? n - 1 : n;
}

let vsimemSeq = 0;

/** The tile as encoded bytes, or undefined when no file has data in it. */
export async function warpTile(task: RasterTask): Promise<Uint8Array | undefined> {
  const sources = task.files.map((f) => dataset(f, task.datasetCache));
  if (sources.length === 0) return undefined;
  const { z, x, y, size } = task;
  const span = (2 * HALF_WORLD) / 2 ** z;
  const minx = -HALF_WORLD + x * span;
  const maxy = HALF_WORLD - y * span;
  // One output band per data band of the first file (at most RGB), plus the alpha band the warp writes.
  const bands = Math.min(3, dataBands(sources[0]));
  const args = ['-of', 'MEM', '-t_srs', 'EPSG:3857', '-te', String(minx), String(maxy - span), String(minx + span), String(maxy), '-ts', String(size), String(size)];
  args.push('-r', task.resampling, '-ot', 'Float32', '-dstalpha', '-wo', 'NUM_THREADS=1');
  // More than three data bands (RGBN, say): the first three. Fewer: every band, so a source alpha band is
  // recognised as alpha by the warp rather than read as data.
  if (dataBands(sources[0]) > 3) for (let b = 1; b <= bands; b++) args.push('-b', String(b));
  const out = gdal.warp(`/vsimem/tile-${process.pid}-${++vsimemSeq}.mem`, null, sources, args);
  try {
    const count = size * size;
    const read = (b: number) => out.bands.get(b).pixels.read(0, 0, size, size) as Float32Array;
    const alpha = read(bands + 1);
    let any = false;
    for (let i = 0; i < count; i++) if (alpha[i] > 0) { any = true; break; }
    if (!any) return undefined;
    const rgba = new Uint8Array(count * 4);
    if (bands === 1 && task.colormap) {
      applyColormap(prepareColormap(task.colormap), read(1), alpha, rgba, task.rescale);
    } else {
      const channels = bands === 1 ? [read(1), read(1), read(1)] : [read(1), read(2), bands >= 3 ? read(3) : read(2)];
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
  }
}

/** What a source needs to know about a file at open time: bands, bounds in degrees, native zoom. */
export function describeRaster(file: string): RasterInfo {
  const ds = gdal.open(file);
  try {
    const { x: w, y: h } = ds.rasterSize;
    const gt = ds.geoTransform;
    if (!gt || !ds.srs) throw new Error('the file has no georeferencing');
    const toMerc = new gdal.CoordinateTransformation(ds.srs, gdal.SpatialReference.fromEPSG(3857));
    const corners = [
      [0, 0],
      [w, 0],
      [0, h],
      [w, h],
    ].map(([px, py]) => [gt[0] + px * gt[1] + py * gt[2], gt[3] + px * gt[4] + py * gt[5]]);
    // gdal-async gives every SpatialReference the traditional GIS (lon, lat) axis order.
    const wgs = gdal.SpatialReference.fromEPSG(4326);
    const toWgs = new gdal.CoordinateTransformation(ds.srs, wgs);
    const ll = corners.map(([cx, cy]) => toWgs.transformPoint(cx, cy));
    const lons = ll.map((p) => p.x);
    const lats = ll.map((p) => p.y);
    const merc = corners.map(([cx, cy]) => toMerc.transformPoint(cx, cy));
    const mercWidth = Math.max(...merc.map((p) => p.x)) - Math.min(...merc.map((p) => p.x));
    const pixel = mercWidth / w;
    const nativeZoom = Math.max(0, Math.min(22, Math.round(Math.log2((2 * HALF_WORLD) / (256 * pixel)))));
    return { bands: dataBands(ds), bounds: [Math.min(...lons), Math.min(...lats), Math.max(...lons), Math.max(...lats)], nativeZoom };
  } finally {
    ds.close();
  }
}
