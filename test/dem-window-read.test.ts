// Windows read from an elevation file already in EPSG:3857 (src/raster/dem-read.ts reads its pixels and samples
// them itself) against gdalwarp's bilinear warp of the same window, which is what every other file gets: the same
// elevations and the same pixels without data, over the hill, across its no-data hole and past the file's edges.
// Windows with pixels larger than the file's still go through gdalwarp (its kernel widens and reads overviews).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import path from 'node:path';
import gdal from 'gdal-async';
import { ROOT } from './helpers/server.js';
import { readDemWindow } from '../src/raster/dem-read.js';
import { MERCATOR_HALF_WIDTH, tileSpan } from '../src/terrain/dem-window.js';
import { lonLatToTile } from '../src/tiles/coords.js';

const HILL = path.join(ROOT, 'fixtures/dem/hill.cog.tif');

function gdalwarpWindow(z: number, x: number, y: number, size: number, border: number): Float32Array {
  const pixel = tileSpan(z) / size;
  const minx = -MERCATOR_HALF_WIDTH + x * tileSpan(z) - border * pixel;
  const maxy = MERCATOR_HALF_WIDTH - y * tileSpan(z) + border * pixel;
  const side = size + 2 * border;
  const out = gdal.warp('window', null, [gdal.open(HILL)], ['-of', 'MEM', '-t_srs', 'EPSG:3857', '-te', String(minx), String(maxy - side * pixel), String(minx + side * pixel), String(maxy), '-ts', String(side), String(side), '-r', 'bilinear', '-ot', 'Float32', '-dstnodata', 'nan']);
  const data = new Float32Array(side * side);
  out.bands.get(1).pixels.read(0, 0, side, side, data);
  out.close();
  return data;
}

test('a web-mercator file read directly gives gdalwarp\'s window: over the hill, its hole and its edges', async () => {
  // The hill's file: 400 px of 60 m; its corners and centre at z12-z15, plus a tile across its hole.
  const places: [number, number][] = [[9.942, 46.624], [10.158, 46.476], [10.05, 46.55], [9.95, 46.48], [10.156, 46.62]];
  let compared = 0;
  for (const z of [12, 13, 15])
    for (const [lon, lat] of places) {
      const { x, y } = lonLatToTile(lon, lat, z);
      for (const [size, border] of [[512, 1], [256, 5]] as const) {
        const ours = await readDemWindow({ files: [HILL], z, x, y, size, border, datasetCache: 4, generation: 1 });
        const theirs = gdalwarpWindow(z, x, y, size, border);
        assert.ok(ours, `z${z} ${x}/${y} has data`);
        let worst = 0;
        let maskDiffers = 0;
        for (let i = 0; i < theirs.length; i++) {
          const a = ours[i];
          const b = theirs[i];
          if (Number.isNaN(a) !== Number.isNaN(b)) maskDiffers++;
          else if (!Number.isNaN(a)) worst = Math.max(worst, Math.abs(a - b));
        }
        assert.ok(worst < 0.01, `z${z} ${x}/${y} ${size}+${border}: ${worst} m apart`);
        assert.equal(maskDiffers, 0, `z${z} ${x}/${y} ${size}+${border}: pixels with data in one and not the other`);
        compared++;
      }
    }
  assert.equal(compared, 30);
});
