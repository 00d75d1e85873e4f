// One 512 px tile of the fixture DEM (fixtures/cog/dem-small.cog.tif, around San Francisco) with a 4 px border, cut
// by gdalwarp to the exact pixel grid of a DemWindow: what test/terrain-gdal.test.ts compares with GDAL's tools and
// bench/terrain-kernels.bench.ts measures the kernels on.
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import gdal from 'gdal-async';
import { MERCATOR_HALF_WIDTH, tileSpan, type DemWindow } from '../../src/terrain/dem-window.js';
import { ROOT } from './server.js';

export const DEM = path.join(ROOT, 'fixtures/cog/dem-small.cog.tif');
export const Z = 12;
export const X = 655;
export const Y = 1582;
export const SIZE = 512;
export const BORDER = 4;
/** The window's side: the tile and its border. */
export const W = SIZE + 2 * BORDER;
const SPAN = tileSpan(Z);
/** A window pixel's side in EPSG:3857 metres. */
export const PIXEL = SPAN / SIZE;
/** The window's west and north edges in EPSG:3857 (tile X/Y), border included. */
export const MIN_X = -MERCATOR_HALF_WIDTH + X * SPAN - BORDER * PIXEL;
export const MAX_Y = MERCATOR_HALF_WIDTH - Y * SPAN + BORDER * PIXEL;

export const run = (cmd: string, args: string[]) => execFileSync(cmd, args, { stdio: ['ignore', 'pipe', 'pipe'] });

/** Band 1 of a W x W raster, its no-data value as NaN. */
export function readBand(file: string): Float32Array {
  const ds = gdal.open(file);
  try {
    const band = ds.bands.get(1);
    const values = Float32Array.from(band.pixels.read(0, 0, W, W) as ArrayLike<number>);
    const nodata = band.noDataValue;
    if (nodata !== null) for (let i = 0; i < values.length; i++) if (values[i] === nodata) values[i] = NaN;
    return values;
  } finally {
    ds.close();
  }
}

/** gdalwarp of the window of tile Z/x/y with its border into `file`: the exact pixel grid of a DemWindow. */
export function warpWindow(x: number, y: number, file: string): DemWindow {
  const minX = -MERCATOR_HALF_WIDTH + x * SPAN - BORDER * PIXEL;
  const maxY = MERCATOR_HALF_WIDTH - y * SPAN + BORDER * PIXEL;
  const te = [minX, maxY - W * PIXEL, minX + W * PIXEL, maxY].map((v) => v.toFixed(6));
  run('gdalwarp', ['-q', '-t_srs', 'EPSG:3857', '-te', ...te, '-ts', String(W), String(W), '-r', 'bilinear', '-ot', 'Float32', '-dstnodata', '-9999', DEM, file]);
  return { z: Z, x, y, size: SIZE, border: BORDER, data: readBand(file) };
}
