// Derives the small raster fixtures of the raster tests from the files copied into fixtures/cog (see
// fixtures/PROVENANCE.md): a 128x128 copy of the DEM with a 16x16 nodata block in its north-west corner,
// written as a COG, and a VRT mosaic of two NAIP files. Run once with `node scripts/make-raster-fixtures.mjs
// /path/to/test-dem.cog.tif`; the outputs are committed.
import gdal from 'gdal-async';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const dir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../fixtures/cog');
const demSource = process.argv[2];
if (!demSource) throw new Error('usage: node scripts/make-raster-fixtures.mjs /path/to/test-dem.cog.tif');

const small = gdal.translate('/vsimem/dem-small.tif', gdal.open(demSource), ['-outsize', '128', '128', '-r', 'average']);
const band = small.bands.get(1);
band.pixels.write(0, 0, 16, 16, new Float32Array(256).fill(band.noDataValue ?? -9999));
small.flush();
gdal.translate(path.join(dir, 'dem-small.cog.tif'), small, ['-of', 'COG', '-co', 'COMPRESS=DEFLATE']).close();
small.close();

// Later files are drawn over earlier ones: the small 128 px NAIP file lies inside the WebP one.
gdal
  .buildVRT(path.join(dir, 'naip-mosaic.vrt'), [path.join(dir, 'usda_naip_512_webp_z5.tif'), path.join(dir, 'usda_naip_128_none_z2.tif')], [])
  .close();
