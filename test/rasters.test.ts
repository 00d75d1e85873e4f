// COG and VRT sources and out-of-database raster catalogues: tiles decoded (sharp) and compared, pixel by
// pixel at sample points, with what GDAL reads from the same files at the same place. Resampling is
// `nearest` in these configurations so a tile pixel is exactly one source pixel. Colours of colormaps are
// computed here from the values GDAL reads.
import assert from 'node:assert/strict';
import gdal from 'gdal-async';
import sharp from 'sharp';
import { after, before, describe, test } from 'node:test';
import { fixture, startServer, type TestServer } from './helpers/server.js';
import { startPostgres, type PostgresCluster } from './helpers/postgres.js';

const HALF = 20037508.342789244;
const SIZE = 256;

/** The tile holding lon/lat at zoom z. */
function tileAt(lon: number, lat: number, z: number) {
  const n = 2 ** z;
  const r = (lat * Math.PI) / 180;
  return { z, x: Math.floor(((lon + 180) / 360) * n), y: Math.floor(((1 - Math.log(Math.tan(r) + 1 / Math.cos(r)) / Math.PI) / 2) * n) };
}

/** Web-mercator centre of pixel (i, j) of a tile. */
function pixelCentre(t: { z: number; x: number; y: number }, i: number, j: number): [number, number] {
  const span = (2 * HALF) / 2 ** t.z;
  return [-HALF + t.x * span + ((i + 0.5) * span) / SIZE, HALF - t.y * span - ((j + 0.5) * span) / SIZE];
}

interface Sampled {
  /** Band values, or undefined outside the file. */
  values: number[] | undefined;
}

/** What GDAL reads from `ds` at a web-mercator point: the values of its data bands (nearest pixel). */
function readAt(ds: gdal.Dataset, mx: number, my: number, bands: number): Sampled {
  // Through a PROJ string the file's CRS is (east, north) whatever its EPSG axis order.
  const ct = new gdal.CoordinateTransformation(gdal.SpatialReference.fromEPSG(3857), gdal.SpatialReference.fromProj4(ds.srs!.toProj4()));
  const p = ct.transformPoint(mx, my);
  const gt = ds.geoTransform!;
  const col = Math.floor((p.x - gt[0]) / gt[1]);
  const row = Math.floor((p.y - gt[3]) / gt[5]);
  if (col < 0 || row < 0 || col >= ds.rasterSize.x || row >= ds.rasterSize.y) return { values: undefined };
  return { values: Array.from({ length: bands }, (_, b) => ds.bands.get(b + 1).pixels.get(col, row)) };
}

async function rgba(body: Uint8Array): Promise<{ data: Buffer; width: number; height: number }> {
  const { data, info } = await sharp(body).ensureAlpha().raw().toBuffer({ resolveWithObject: true });
  return { data, width: info.width, height: info.height };
}

const pixel = (img: { data: Buffer }, i: number, j: number) => Array.from(img.data.subarray((j * SIZE + i) * 4, (j * SIZE + i) * 4 + 4));

/** Sample points of a tile: a 6 x 6 grid away from the edges. */
const SAMPLES = Array.from({ length: 36 }, (_, k) => [20 + (k % 6) * 43, 20 + Math.floor(k / 6) * 43] as const);
/** Every eighth pixel of a tile, for tiles with little data. */
const DENSE = Array.from({ length: 32 * 32 }, (_, k) => [4 + (k % 32) * 8, 4 + Math.floor(k / 32) * 8] as const);

async function get(url: string) {
  const res = await fetch(url);
  return { status: res.status, headers: res.headers, body: new Uint8Array(await res.arrayBuffer()) };
}

/** Compares a tile with the RGB values GDAL reads from `ds`; returns how many sample points had data. */
async function compareRgb(body: Uint8Array, t: { z: number; x: number; y: number }, ds: gdal.Dataset, alphaBand?: number, samples: readonly (readonly [number, number])[] = SAMPLES): Promise<number> {
  const img = await rgba(body);
  assert.equal(img.width, SIZE);
  let compared = 0;
  for (const [i, j] of samples) {
    const [mx, my] = pixelCentre(t, i, j);
    const got = pixel(img, i, j);
    const want = readAt(ds, mx, my, alphaBand ?? 3);
    if (!want.values || (alphaBand && want.values[alphaBand - 1] === 0)) {
      assert.equal(got[3], 0, `pixel ${i},${j} outside the data is transparent`);
      continue;
    }
    compared++;
    for (let c = 0; c < 3; c++) assert.ok(Math.abs(got[c] - want.values[c]) <= 1, `pixel ${i},${j} channel ${c}: ${got[c]} vs GDAL ${want.values[c]}`);
    assert.equal(got[3], 255);
  }
  return compared;
}

/**
 * Two z18 tiles (native NAIP resolution, 0.597 m/px: no overview involved) on either side of where the two NAIP
 * files meet: the WebP file has data west of its column 6144 (a z18 tile edge), the small file just east of it
 * (rows 7875..7962 of the WebP file). Returns the eastern tile (small file); x - 1 is the western one (WebP).
 */
function naipSeamTile() {
  const webp = gdal.open(NAIP_WEBP);
  const gt = webp.geoTransform!;
  webp.close();
  const mx = gt[0] + 6144 * gt[1];
  const my = gt[3] + 7918 * gt[5];
  const span = (2 * HALF) / 2 ** 18;
  return { z: 18, x: Math.floor((mx + HALF) / span), y: Math.floor((HALF - my) / span) };
}

const RGB = fixture('cog/test-rgb.cog.tif');
const DEM = fixture('cog/dem-small.cog.tif');
const VRT = fixture('cog/naip-mosaic.vrt');
const NAIP_WEBP = fixture('cog/usda_naip_512_webp_z5.tif');
const NAIP_SMALL = fixture('cog/usda_naip_128_none_z2.tif');

describe('COG and VRT sources', () => {
  let server: TestServer;
  const dem = gdal.open(DEM);
  // Two values the DEM holds (rounded), for the discrete colormap.
  const demValue = (col: number, row: number) => Math.round(dem.bands.get(1).pixels.get(col, row));
  const v1 = demValue(64, 64);
  const v2 = demValue(100, 30);

  before(async () => {
    server = await startServer({
      toml: `
[raster]
pool_size = 1

[[sources]]
id = "rgb"
type = "cog"
path = "${RGB}"
resampling = "nearest"

[[sources]]
id = "naip"
type = "vrt"
path = "${VRT}"
resampling = "nearest"

[[sources]]
id = "dem-continuous"
type = "cog"
path = "${DEM}"
resampling = "nearest"
maxzoom = 14
[sources.colormap]
map_type = "continuous"
nodata_color = "#11223344"
entries = [{ value = 0, color = "#000000" }, { value = 1000, color = "#ffffff" }]

[[sources]]
id = "dem-discrete"
type = "cog"
path = "${DEM}"
resampling = "nearest"
maxzoom = 14
[sources.colormap]
map_type = "discrete"
rescale_mode = "none"
nodata_color = "#0000ff80"
entries = [{ value = ${v1}, color = "#ff0000" }, { value = ${v2}, color = "#00ff00" }]
`,
    });
  });
  after(async () => {
    await server?.stop();
    dem.close();
  });

  test('TileJSON: raster format, bounds from the file, tileSize', async () => {
    const tj = await (await fetch(`${server.url}/data/rgb.json`)).json();
    assert.equal(tj.format, 'png');
    assert.equal(tj.tileSize, 256);
    assert.equal(tj.vector_layers, undefined);
    const want = [-122.5, 37.9 - 512 * 0.000390625, -122.5 + 512 * 0.000390625, 37.9];
    tj.bounds.forEach((b: number, i: number) => assert.ok(Math.abs(b - want[i]) < 1e-6, `bounds[${i}] ${b} vs ${want[i]}`));
    assert.ok(tj.maxzoom >= 11 && tj.maxzoom <= 13, `maxzoom near the native resolution: ${tj.maxzoom}`);
  });

  test('RGB COG: PNG pixels are the pixels GDAL reads at the same place', async () => {
    const t = tileAt(-122.4, 37.8, 12);
    const res = await get(`${server.url}/data/rgb/${t.z}/${t.x}/${t.y}.png`);
    assert.equal(res.status, 200);
    assert.equal(res.headers.get('content-type'), 'image/png');
    const ds = gdal.open(RGB);
    try {
      assert.ok((await compareRgb(res.body, t, ds)) >= 30);
    } finally {
      ds.close();
    }
  });

  test('a tile on the edge of the data is transparent outside it; jpg and webp are served too', async () => {
    // The north-west corner of the RGB file.
    const t = tileAt(-122.5, 37.9, 12);
    const res = await get(`${server.url}/data/rgb/${t.z}/${t.x}/${t.y}.png`);
    assert.equal(res.status, 200);
    const ds = gdal.open(RGB);
    try {
      const img = await rgba(res.body);
      const transparent = SAMPLES.filter(([i, j]) => pixel(img, i, j)[3] === 0).length;
      assert.ok(transparent > 0 && transparent < SAMPLES.length, `some samples outside (${transparent})`);
      assert.ok((await compareRgb(res.body, t, ds)) > 0);
    } finally {
      ds.close();
    }
    const jpg = await get(`${server.url}/data/rgb/${t.z}/${t.x}/${t.y}.jpg`);
    assert.equal(jpg.headers.get('content-type'), 'image/jpeg');
    assert.equal((await sharp(jpg.body).metadata()).format, 'jpeg');
    const webp = await get(`${server.url}/data/rgb/${t.z}/${t.x}/${t.y}.webp`);
    assert.equal(webp.headers.get('content-type'), 'image/webp');
    assert.equal((await sharp(webp.body).metadata()).width, 256);
  });

  test('outside the data: 204; past maxzoom: 204; vector format: 400', async () => {
    const london = tileAt(-0.1, 51.5, 10);
    assert.equal((await get(`${server.url}/data/rgb/${london.z}/${london.x}/${london.y}.png`)).status, 204);
    const deep = tileAt(-122.4, 37.8, 20);
    assert.equal((await get(`${server.url}/data/rgb/${deep.z}/${deep.x}/${deep.y}.png`)).status, 204);
    const bad = await get(`${server.url}/data/rgb/0/0/0.pbf`);
    assert.equal(bad.status, 400);
    assert.equal(bad.headers.get('content-type'), 'application/problem+json');
  });

  test('VRT over two NAIP files: each file\'s pixels where it has data, as GDAL reads the mosaic', async () => {
    const vrt = gdal.open(VRT);
    try {
      const east = naipSeamTile();
      for (const [t, file] of [
        [east, NAIP_SMALL],
        [{ ...east, x: east.x - 1 }, NAIP_WEBP],
      ] as const) {
        const res = await get(`${server.url}/data/naip/${t.z}/${t.x}/${t.y}.png`);
        assert.equal(res.status, 200);
        assert.ok((await compareRgb(res.body, t, vrt, 4, DENSE)) >= 60);
        // The pixels come from that file.
        const ds = gdal.open(file);
        try {
          assert.ok((await compareRgb(res.body, t, ds, 4, DENSE)) >= 60);
        } finally {
          ds.close();
        }
      }
    } finally {
      vrt.close();
    }
  });

  test('single band, continuous colormap: colours from the values; nodata gets nodata_color', async () => {
    const gt = dem.geoTransform!;
    // The nodata block is the 16x16 north-west corner: a z12 tile there.
    const t = tileAt(gt[0] + 4 * gt[1], gt[3] + 4 * gt[5], 12);
    const res = await get(`${server.url}/data/dem-continuous/${t.z}/${t.x}/${t.y}.png`);
    assert.equal(res.status, 200);
    const img = await rgba(res.body);
    let valued = 0;
    let nodata = 0;
    for (const [i, j] of SAMPLES) {
      const [mx, my] = pixelCentre(t, i, j);
      const want = readAt(dem, mx, my, 1).values;
      const got = pixel(img, i, j);
      if (!want || want[0] === -9999) {
        // Without data (nodata, or past the file's edge in this edge tile): nodata_color.
        nodata++;
        assert.deepEqual(got, [0x11, 0x22, 0x33, 0x44]);
      } else {
        valued++;
        const grey = Math.round((Math.min(1000, Math.max(0, want[0])) / 1000) * 255);
        got.slice(0, 3).forEach((c) => assert.ok(Math.abs(c - grey) <= 1, `value ${want[0]}: ${c} vs ${grey}`));
        assert.equal(got[3], 255);
      }
    }
    assert.ok(valued > 0 && nodata > 0, `valued ${valued}, nodata ${nodata}`);
  });

  test('single band, discrete colormap: exact matches (±0.5) coloured, others nodata_color', async () => {
    const gt = dem.geoTransform!;
    const lon = gt[0] + 64.5 * gt[1];
    const lat = gt[3] + 64.5 * gt[5];
    const t = tileAt(lon, lat, 11);
    const res = await get(`${server.url}/data/dem-discrete/${t.z}/${t.x}/${t.y}.png`);
    assert.equal(res.status, 200);
    const img = await rgba(res.body);
    // Every pixel of the tile that GDAL says holds v1 is red.
    let checked = 0;
    let red = 0;
    for (let j = 0; j < SIZE; j += 4) {
      for (let i = 0; i < SIZE; i += 4) {
        const [mx, my] = pixelCentre(t, i, j);
        const want = readAt(dem, mx, my, 1).values;
        if (!want || want[0] === -9999) continue;
        checked++;
        const got = pixel(img, i, j);
        if (Math.abs(want[0] - v1) <= 0.5) {
          red++;
          assert.deepEqual(got, [255, 0, 0, 255]);
        } else if (Math.abs(want[0] - v2) <= 0.5) assert.deepEqual(got, [0, 255, 0, 255]);
        else assert.deepEqual(got, [0, 0, 255, 0x80]);
      }
    }
    assert.ok(checked > 100 && red > 0, `checked ${checked}, red ${red}`);
  });
});

describe('out-of-database raster catalogues', () => {
  let db: PostgresCluster;
  let server: TestServer;

  before(async () => {
    db = await startPostgres();
    // Register the files with their footprints (web mercator, from GDAL) as the seed's functions expect.
    const footprint = (file: string) => {
      const ds = gdal.open(file);
      const gt = ds.geoTransform!;
      const ct = new gdal.CoordinateTransformation(gdal.SpatialReference.fromProj4(ds.srs!.toProj4()), gdal.SpatialReference.fromEPSG(3857));
      const a = ct.transformPoint(gt[0], gt[3]);
      const b = ct.transformPoint(gt[0] + gt[1] * ds.rasterSize.x, gt[3] + gt[5] * ds.rasterSize.y);
      ds.close();
      return [Math.min(a.x, b.x), Math.min(a.y, b.y), Math.max(a.x, b.x), Math.max(a.y, b.y)];
    };
    const add = (collection: string, ord: number, file: string, min: number | null, max: number | null) =>
      db.sql('INSERT INTO raster_files VALUES ($1, $2, $3, ST_MakeEnvelope($4, $5, $6, $7, 3857), $8, $9)', [collection, ord, file, ...footprint(file), min, max]);
    await add('naip', 1, NAIP_WEBP, null, null);
    await add('naip', 2, NAIP_SMALL, null, null);
    await add('dem', 1, DEM, 0, 1000);
    server = await startServer({
      toml: `
[postgres]
connection_string = "${db.url}"

[[postgres.outdb_rasters]]
id = "naip"
resampling = "nearest"

[[postgres.outdb_rasters]]
id = "dem"
resampling = "nearest"
[postgres.outdb_rasters.colormap]
rescale_mode = "dynamic"
entries = [{ value = 0, color = "#000000" }, { value = 1, color = "#ff0000" }]

# The same catalogue as elevation (docs/terrain.md): encoded tiles, terrain products, the elevation API.
[[postgres.outdb_rasters]]
id = "elevation"
function = "dem"
dem = { encoding = "terrarium" }
`,
    });
  });
  after(async () => {
    await server?.stop();
    db?.destroy();
  });

  test('the files the function returns are composited in order', async () => {
    const vrt = gdal.open(VRT);
    try {
      // The same mosaic as the VRT over the same two files, on both sides of their seam.
      const east = naipSeamTile();
      for (const t of [east, { ...east, x: east.x - 1 }]) {
        const res = await get(`${server.url}/data/naip/${t.z}/${t.x}/${t.y}.png`);
        assert.equal(res.status, 200);
        assert.ok((await compareRgb(res.body, t, vrt, 4, DENSE)) >= 60);
      }
    } finally {
      vrt.close();
    }
    const tj = await (await fetch(`${server.url}/data/naip.json`)).json();
    assert.equal(tj.format, 'png');
  });

  test('no file for the tile: 204', async () => {
    assert.equal((await get(`${server.url}/data/naip/10/0/0.png`)).status, 204);
  });

  test('dynamic rescale: rescale_min/max from the function (here from the query parameters)', async () => {
    const dem = gdal.open(DEM);
    try {
      const gt = dem.geoTransform!;
      const t = tileAt(gt[0] + 64 * gt[1], gt[3] + 64 * gt[5], 11);
      for (const [lo, hi, q] of [
        [0, 1000, ''],
        [100, 300, '?lo=100&hi=300'],
      ] as const) {
        const res = await get(`${server.url}/data/dem/${t.z}/${t.x}/${t.y}.png${q}`);
        assert.equal(res.status, 200);
        const img = await rgba(res.body);
        let n = 0;
        for (const [i, j] of SAMPLES) {
          const [mx, my] = pixelCentre(t, i, j);
          const want = readAt(dem, mx, my, 1).values;
          if (!want || want[0] === -9999) continue;
          n++;
          const red = Math.round(Math.min(1, Math.max(0, (want[0] - lo) / (hi - lo))) * 255);
          const got = pixel(img, i, j);
          assert.ok(Math.abs(got[0] - red) <= 1 && got[1] === 0 && got[2] === 0, `value ${want[0]} in ${lo}..${hi}: ${got} vs red ${red}`);
        }
        assert.ok(n >= 20);
      }
      const bad = await get(`${server.url}/data/dem/${t.z}/${t.x}/${t.y}.png?lo=not-a-number`);
      assert.equal(bad.status, 400);
      assert.equal(bad.headers.get('content-type'), 'application/problem+json');
    } finally {
      dem.close();
    }
  });
  test('an elevation catalogue: elevations at its pixel centres as GDAL reads them, terrarium tiles, hillshade and contours', async () => {
    const dem = gdal.open(DEM);
    try {
      const gt = dem.geoTransform!;
      const band = dem.bands.get(1);
      for (const [col, row] of [[40, 40], [100, 70], [127, 127]]) {
        const lon = gt[0] + (col + 0.5) * gt[1];
        const lat = gt[3] + (row + 0.5) * gt[5];
        const doc = (await (await fetch(`${server.url}/api/elevation/elevation?lon=${lon}&lat=${lat}`)).json()) as { elevation: number };
        assert.ok(Math.abs(doc.elevation - band.pixels.get(col, row)) <= 0.01, `pixel ${col},${row}: ${doc.elevation} against ${band.pixels.get(col, row)}`);
      }
      // The catalogue's no-data block (its north-west corner) has no elevation.
      const hole = (await (await fetch(`${server.url}/api/elevation/elevation?lon=${gt[0] + 4 * gt[1]}&lat=${gt[3] + 4 * gt[5]}`)).json()) as { elevation: number | null };
      assert.equal(hole.elevation, null);
      const t = tileAt(gt[0] + 64 * gt[1], gt[3] + 64 * gt[5], 11);
      const tile = await get(`${server.url}/data/elevation/${t.z}/${t.x}/${t.y}.png`);
      assert.equal(tile.status, 200);
      const img = await rgba(tile.body);
      let n = 0;
      for (const [i, j] of SAMPLES) {
        const [mx, my] = pixelCentre(t, i, j);
        const want = readAt(dem, mx, my, 1).values;
        const [r, g, b, a] = pixel(img, i, j);
        if (!want || want[0] === -9999 || a === 0) continue;
        n++;
        // Bilinear between pixel centres: within the spread of the four values around, checked loosely against the nearest.
        assert.ok(Math.abs(r * 256 + g + b / 256 - 32768 - want[0]) < 60, `terrarium ${r},${g},${b} against ${want[0]}`);
      }
      assert.ok(n >= 20);
      const tj = (await (await fetch(`${server.url}/data/elevation.json`)).json()) as { encoding: string };
      assert.equal(tj.encoding, 'terrarium');
      for (const p of [`hillshade/${t.z}/${t.x}/${t.y}.png`, `contours/${t.z}/${t.x}/${t.y}.pbf?interval=20`]) {
        const res = await get(`${server.url}/data/elevation/${p}`);
        assert.equal(res.status, 200, p);
      }
    } finally {
      dem.close();
    }
  });
});

describe('raster queue', () => {
  let server: TestServer;
  before(async () => {
    // One tile at a time and no queue: a second concurrent tile is refused.
    server = await startServer({
      toml: `[cache]\nenabled = false\n\n[raster]\npool_size = 1\nmax_queue_per_thread = 0\n\n[[sources]]\nid = "rgb"\ntype = "cog"\npath = "${RGB}"\nmaxzoom = 16\n`,
    });
  });
  after(() => server?.stop());

  test('full: 503 problem JSON with Retry-After, and the pool serves again afterwards', async () => {
    const base = tileAt(-122.45, 37.75, 15);
    const answers = await Promise.all(
      Array.from({ length: 16 }, (_, k) => get(`${server.url}/data/rgb/${base.z}/${base.x + (k % 4)}/${base.y + Math.floor(k / 4)}.png`)),
    );
    const busy = answers.filter((a) => a.status === 503);
    assert.ok(busy.length > 0, `statuses ${answers.map((a) => a.status)}`);
    assert.ok(answers.every((a) => a.status === 200 || a.status === 503));
    assert.equal(busy[0].headers.get('content-type'), 'application/problem+json');
    assert.equal(busy[0].headers.get('retry-after'), '1');
    assert.equal(JSON.parse(new TextDecoder().decode(busy[0].body)).status, 503);
    // Once the burst is over the thread takes work again (Piscina frees it a moment after its last answer).
    let status = 0;
    for (let i = 0; i < 50 && status !== 200; i++) {
      if (i) await new Promise((r) => setTimeout(r, 100));
      status = (await get(`${server.url}/data/rgb/${base.z}/${base.x}/${base.y}.png`)).status;
    }
    assert.equal(status, 200);
  });
});
