// Makes the synthetic elevation fixtures of the terrain tests (fixtures/dem/, committed; see fixtures/PROVENANCE.md):
//  - plane.cog.tif: a plane in EPSG:4326, elevation = 100 + 2000 * (lon - 10) + 1000 * (lat - 46) metres, so a
//    bilinear read anywhere inside it has an exact answer;
//  - hill.cog.tif: a Gaussian hill in EPSG:3857 (1500 m high, sigma 3000 mercator metres, centred on 10.05 E,
//    46.55 N) over a 400 m plateau, 60 m pixels, with a 20x20 no-data hole in its south-east corner; its contour
//    lines are circles of known radius;
//  - hill-terrarium.pmtiles (256 px PNG) and hill-mapbox.mbtiles (512 px lossless WebP): the hill as encoded DEM
//    tiles, z8-12, each tile warped from hill.cog.tif by gdalwarp (bilinear), as a terrain-tile publisher would.
// Run with `node --import tsx scripts/make-dem-fixtures.ts`.
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import Database from 'better-sqlite3';
import gdal from 'gdal-async';
import { Compression, TileType, zxyToTileId } from 'pmtiles';
import sharp from 'sharp';
import { writePmtilesFile, type PmtilesTileInput } from '../src/seed/pmtiles-writer.js';
import { encodeDem, type DemEncoding } from '../src/terrain/dem-encoding.js';

const dir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../fixtures/dem');
mkdirSync(dir, { recursive: true });
const HALF = 20037508.342789244;
const NODATA = -9999;

export const PLANE = { west: 10, south: 46, east: 10.1, north: 46.1, at: (lon: number, lat: number) => 100 + 2000 * (lon - 10) + 1000 * (lat - 46) };
export const HILL = { lon: 10.05, lat: 46.55, height: 1500, base: 400, sigma: 3000, pixel: 60, side: 400 };

const mercX = (lon: number) => (lon * Math.PI * 6378137) / 180;
const mercY = (lat: number) => 6378137 * Math.log(Math.tan(Math.PI / 4 + (lat * Math.PI) / 360));

function writeCog(file: string, width: number, height: number, geoTransform: number[], srs: gdal.SpatialReference, data: Float32Array): void {
  const mem = gdal.open('/vsimem/dem-fixture.tif', 'w', 'GTiff', width, height, 1, gdal.GDT_Float32);
  mem.srs = srs;
  mem.geoTransform = geoTransform;
  const band = mem.bands.get(1);
  band.noDataValue = NODATA;
  band.pixels.write(0, 0, width, height, data);
  mem.flush();
  gdal.translate(file, mem, ['-of', 'COG', '-co', 'COMPRESS=DEFLATE', '-co', 'PREDICTOR=3']).close();
  mem.close();
  gdal.vsimem.release('/vsimem/dem-fixture.tif');
}

// The plane: 200x200 pixels of 0.0005 degrees. Pixel centres hold the plane's value there.
{
  const n = 200;
  const step = (PLANE.east - PLANE.west) / n;
  const data = new Float32Array(n * n);
  for (let r = 0; r < n; r++) for (let c = 0; c < n; c++) data[r * n + c] = PLANE.at(PLANE.west + (c + 0.5) * step, PLANE.north - (r + 0.5) * step);
  writeCog(path.join(dir, 'plane.cog.tif'), n, n, [PLANE.west, step, 0, PLANE.north, 0, -step], gdal.SpatialReference.fromEPSG(4326), data);
}

// The hill, in web mercator metres.
const hillFile = path.join(dir, 'hill.cog.tif');
{
  const { side, pixel } = HILL;
  const cx = mercX(HILL.lon);
  const cy = mercY(HILL.lat);
  const west = cx - (side / 2) * pixel;
  const north = cy + (side / 2) * pixel;
  const data = new Float32Array(side * side);
  for (let r = 0; r < side; r++) {
    for (let c = 0; c < side; c++) {
      const dx = west + (c + 0.5) * pixel - cx;
      const dy = north - (r + 0.5) * pixel - cy;
      data[r * side + c] = r >= side - 20 && c >= side - 20 ? NODATA : HILL.base + HILL.height * Math.exp(-(dx * dx + dy * dy) / (2 * HILL.sigma ** 2));
    }
  }
  writeCog(hillFile, side, side, [west, pixel, 0, north, 0, -pixel], gdal.SpatialReference.fromEPSG(3857), data);
}

/** One tile of the hill warped by the gdalwarp command (not this server's code), as Float32 metres, NaN without data. */
function warpedTile(z: number, x: number, y: number, size: number): Float32Array {
  const span = (2 * HALF) / 2 ** z;
  const minx = -HALF + x * span;
  const maxy = HALF - y * span;
  const out = path.join(dir, `.tile-${process.pid}.tif`);
  execFileSync('gdalwarp', ['-q', '-overwrite', '-t_srs', 'EPSG:3857', '-te', String(minx), String(maxy - span), String(minx + span), String(maxy), '-ts', String(size), String(size), '-r', 'bilinear', '-ot', 'Float32', '-dstnodata', 'nan', hillFile, out]);
  const ds = gdal.open(out);
  const data = new Float32Array(size * size);
  ds.bands.get(1).pixels.read(0, 0, size, size, data);
  ds.close();
  rmSync(out);
  return data;
}

function tilesOf(z: number): { x: number; y: number }[] {
  const half = (HILL.side / 2) * HILL.pixel;
  const cx = mercX(HILL.lon);
  const cy = mercY(HILL.lat);
  const span = (2 * HALF) / 2 ** z;
  const out: { x: number; y: number }[] = [];
  for (let x = Math.floor((cx - half + HALF) / span); x <= Math.floor((cx + half + HALF) / span); x++) {
    for (let y = Math.floor((HALF - (cy + half)) / span); y <= Math.floor((HALF - (cy - half)) / span); y++) out.push({ x, y });
  }
  return out;
}

async function encodedTiles(encoding: DemEncoding, size: number, format: 'png' | 'webp'): Promise<PmtilesTileInput[]> {
  const tiles: PmtilesTileInput[] = [];
  for (let z = 8; z <= 12; z++) {
    for (const { x, y } of tilesOf(z)) {
      const rgba = encodeDem(warpedTile(z, x, y, size), encoding);
      const image = sharp(rgba, { raw: { width: size, height: size, channels: 4 } });
      const data = await (format === 'png' ? image.png({ compressionLevel: 9 }) : image.webp({ lossless: true, exact: true })).toBuffer();
      tiles.push({ z, x, y, data: new Uint8Array(data) });
    }
  }
  return tiles;
}

const half = (HILL.side / 2) * HILL.pixel;
const lonOf = (mx: number) => (mx / 6378137) * (180 / Math.PI);
const latOf = (my: number) => (2 * Math.atan(Math.exp(my / 6378137)) - Math.PI / 2) * (180 / Math.PI);
const bounds: [number, number, number, number] = [lonOf(mercX(HILL.lon) - half), latOf(mercY(HILL.lat) - half), lonOf(mercX(HILL.lon) + half), latOf(mercY(HILL.lat) + half)];

// PMTiles are written in tile-id (Hilbert) order.
const terrarium = (await encodedTiles('terrarium', 256, 'png')).sort((a, b) => zxyToTileId(a.z, a.x, a.y) - zxyToTileId(b.z, b.x, b.y));
writePmtilesFile(path.join(dir, 'hill-terrarium.pmtiles'), terrarium, {
  tileType: TileType.Png,
  tileCompression: Compression.None,
  bounds,
  center: [HILL.lon, HILL.lat, 10],
  metadata: { name: 'synthetic hill (terrarium)', encoding: 'terrarium', attribution: 'synthetic, tileserver-ts tests' },
});

{
  const file = path.join(dir, 'hill-mapbox.mbtiles');
  rmSync(file, { force: true });
  const db = new Database(file);
  db.exec('CREATE TABLE metadata (name TEXT, value TEXT); CREATE TABLE tiles (zoom_level INTEGER, tile_column INTEGER, tile_row INTEGER, tile_data BLOB);');
  const meta = db.prepare('INSERT INTO metadata VALUES (?, ?)');
  for (const [k, v] of Object.entries({ name: 'synthetic hill (terrain-RGB)', format: 'webp', minzoom: '8', maxzoom: '12', bounds: bounds.join(','), center: `${HILL.lon},${HILL.lat},10`, type: 'baselayer' })) meta.run(k, v);
  const put = db.prepare('INSERT INTO tiles VALUES (?, ?, ?, ?)');
  // MBTiles rows count from the south (TMS).
  for (const t of await encodedTiles('mapbox', 512, 'webp')) put.run(t.z, t.x, 2 ** t.z - 1 - t.y, Buffer.from(t.data));
  db.close();
}

for (const f of ['plane.cog.tif', 'hill.cog.tif', 'hill-terrarium.pmtiles', 'hill-mapbox.mbtiles']) console.log(f, readFileSync(path.join(dir, f)).byteLength, 'bytes');
