// Terrain end to end, on one server with every kind of elevation source: the real elevation COG of the fixtures,
// synthetic DEMs with known answers (a plane, a Gaussian hill) and the hill as archives of encoded tiles (PMTiles
// terrarium PNG, MBTiles terrain-RGB WebP). What a user would check: elevations against GDAL's reading of the
// same pixels and against the formulas, DEM tiles decoded back against gdalwarp, hillshade against gdaldem on the
// same window, contour lines on the hill's analytic circles, seams, listings, and every kind of bad input.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { VectorTile } from '@mapbox/vector-tile';
import gdal from 'gdal-async';
import { PbfReader } from 'pbf';
import sharp from 'sharp';
import { fixture, startServer, type TestServer } from './helpers/server.js';

const HALF = 20037508.342789244;
const REAL = fixture('cog/test-dem.cog.tif');
const HILL_FILE = fixture('dem/hill.cog.tif');
// The synthetic DEMs as scripts/make-dem-fixtures.ts made them.
const plane = (lon: number, lat: number) => 100 + 2000 * (lon - 10) + 1000 * (lat - 46);
const HILL = { lon: 10.05, lat: 46.55, height: 1500, base: 400, sigma: 3000 };
const mercX = (lon: number) => (lon * Math.PI * 6378137) / 180;
const mercY = (lat: number) => 6378137 * Math.log(Math.tan(Math.PI / 4 + (lat * Math.PI) / 360));
const hillAt = (mx: number, my: number) => HILL.base + HILL.height * Math.exp(-((mx - mercX(HILL.lon)) ** 2 + (my - mercY(HILL.lat)) ** 2) / (2 * HILL.sigma ** 2));
/** The radius (mercator metres) of the hill's contour at elevation `e`. */
const hillRadius = (e: number) => HILL.sigma * Math.sqrt(2 * Math.log(HILL.height / (e - HILL.base)));

function tileOf(lon: number, lat: number, z: number) {
  const n = 2 ** z;
  const r = (lat * Math.PI) / 180;
  return { z, x: Math.floor(((lon + 180) / 360) * n), y: Math.floor(((1 - Math.log(Math.tan(r) + 1 / Math.cos(r)) / Math.PI) / 2) * n) };
}
const span = (z: number) => (2 * HALF) / 2 ** z;
/** Web-mercator extent of a tile grown by `border` pixels of `size`. */
function extent(t: { z: number; x: number; y: number }, size: number, border = 0) {
  const s = span(t.z);
  const px = s / size;
  return { minx: -HALF + t.x * s - border * px, maxy: HALF - t.y * s + border * px, side: size + 2 * border, px };
}

let scratch: string;
/** gdalwarp (the command, not the server's code) of a tile window: Float32 metres, NaN without data. */
function gdalWindow(file: string, t: { z: number; x: number; y: number }, size: number, border = 0): Float32Array {
  const e = extent(t, size, border);
  const out = path.join(scratch, `w-${t.z}-${t.x}-${t.y}-${size}-${border}.tif`);
  execFileSync('gdalwarp', ['-q', '-overwrite', '-t_srs', 'EPSG:3857', '-te', String(e.minx), String(e.maxy - e.side * e.px), String(e.minx + e.side * e.px), String(e.maxy), '-ts', String(e.side), String(e.side), '-r', 'bilinear', '-ot', 'Float32', '-dstnodata', 'nan', file, out]);
  const ds = gdal.open(out);
  const data = new Float32Array(e.side * e.side);
  ds.bands.get(1).pixels.read(0, 0, e.side, e.side, data);
  ds.close();
  return data;
}

async function rgbaOf(body: Uint8Array) {
  const { data, info } = await sharp(body).ensureAlpha().raw().toBuffer({ resolveWithObject: true });
  return { data, width: info.width };
}

/** Elevations of an encoded DEM tile, decoded with the published formulas (alpha 0: no data). */
async function decodeTile(body: Uint8Array, encoding: 'terrarium' | 'mapbox') {
  const { data, width } = await rgbaOf(body);
  const out = new Float64Array(width * width);
  for (let i = 0; i < out.length; i++) {
    const [r, g, b, a] = [data[4 * i], data[4 * i + 1], data[4 * i + 2], data[4 * i + 3]];
    out[i] = a === 0 ? Number.NaN : encoding === 'terrarium' ? r * 256 + g + b / 256 - 32768 : -10000 + (r * 65536 + g * 256 + b) * 0.1;
  }
  return { values: out, width };
}

interface Line {
  ele: number;
  level: number;
  /** Vertices in web-mercator metres. */
  points: [number, number][];
}

function contourLines(body: Uint8Array, t: { z: number; x: number; y: number }): Line[] {
  const tile = new VectorTile(new PbfReader(body));
  const layer = tile.layers.contours;
  assert.ok(layer, 'the tile has a contours layer');
  const s = span(t.z);
  const out: Line[] = [];
  for (let i = 0; i < layer.length; i++) {
    const f = layer.feature(i);
    assert.equal(f.type, 2, 'contours are lines');
    for (const part of f.loadGeometry()) {
      out.push({
        ele: f.properties.ele as number,
        level: f.properties.level as number,
        points: part.map((p) => [-HALF + t.x * s + (p.x / layer.extent) * s, HALF - t.y * s - (p.y / layer.extent) * s]),
      });
    }
  }
  return out;
}

let server: TestServer;
const get = async (p: string, headers: Record<string, string> = {}) => {
  const res = await fetch(`${server.url}${p}`, { headers });
  return { status: res.status, headers: res.headers, body: new Uint8Array(await res.arrayBuffer()) };
};
const json = async (p: string) => {
  const r = await get(p);
  return { ...r, doc: JSON.parse(Buffer.from(r.body).toString('utf8')) };
};
const post = async (p: string, body: unknown) => {
  const res = await fetch(`${server.url}${p}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: typeof body === 'string' ? body : JSON.stringify(body) });
  const text = await res.text();
  return { status: res.status, type: res.headers.get('content-type') ?? '', doc: text ? JSON.parse(text) : undefined };
};

before(async () => {
  scratch = mkdtempSync(path.join(os.tmpdir(), 'tsts-terrain-'));
  server = await startServer({
    toml: `
fonts = "${fixture('fonts')}"

[[sources]]
id = "real"
type = "cog"
path = "${REAL}"
dem = { encoding = "terrarium" }

[[sources]]
id = "hill"
type = "cog"
path = "${HILL_FILE}"
dem = { encoding = "mapbox" }

[[sources]]
id = "plane"
type = "cog"
path = "${fixture('dem/plane.cog.tif')}"
dem = { encoding = "terrarium" }

[[sources]]
id = "hill-pm"
type = "pmtiles"
path = "${fixture('dem/hill-terrarium.pmtiles')}"
dem = { encoding = "terrarium" }

[[sources]]
id = "hill-mb"
type = "mbtiles"
path = "${fixture('dem/hill-mapbox.mbtiles')}"
dem = { encoding = "mapbox" }

[[sources]]
id = "imagery"
type = "cog"
path = "${fixture('cog/test-rgb.cog.tif')}"

[cache]
dir = "${path.join(scratch, 'cache')}"

[terrain]
max_points = 500
max_profile_samples = 300
max_profile_km = 50
`,
  });
});

after(async () => {
  await server?.stop();
  rmSync(scratch, { recursive: true, force: true });
});

describe('elevations', () => {
  test('the plane: points, batches and profiles are the formula to 0.01 m', async () => {
    const pts: [number, number][] = [
      [10.0123, 46.0456],
      [10.05, 46.05],
      [10.0987, 46.0013],
      [10.031, 46.072],
    ];
    for (const [lon, lat] of pts) {
      const { status, doc } = await json(`/api/elevation/plane?lon=${lon}&lat=${lat}`);
      assert.equal(status, 200);
      assert.deepEqual(Object.keys(doc).sort(), ['elevation', 'lat', 'lon', 'source']);
      assert.ok(Math.abs(doc.elevation - plane(lon, lat)) <= 0.01, `${lon},${lat}: ${doc.elevation} against ${plane(lon, lat)}`);
    }
    const batch = await post('/api/elevation/plane', { points: [...pts, [0, 0]] });
    assert.equal(batch.status, 200);
    assert.equal(batch.doc.elevations.length, 5);
    pts.forEach(([lon, lat], i) => assert.ok(Math.abs(batch.doc.elevations[i] - plane(lon, lat)) <= 0.01));
    assert.equal(batch.doc.elevations[4], null, 'no data far from the plane');

    const line = { type: 'LineString', coordinates: [[10.01, 46.01], [10.09, 46.09]], samples: 9 };
    const profile = await post('/api/elevation/plane/profile', line);
    assert.equal(profile.status, 200);
    assert.equal(profile.doc.samples.length, 9);
    for (const s of profile.doc.samples) assert.ok(Math.abs(s.elevation - plane(s.lon, s.lat)) <= 0.01, JSON.stringify(s));
    // The plane rises along the whole line: all ascent, no descent.
    assert.ok(Math.abs(profile.doc.ascent_m - (plane(10.09, 46.09) - plane(10.01, 46.01))) <= 0.02);
    assert.equal(profile.doc.descent_m, 0);
    assert.equal(profile.doc.samples[0].distance_m, 0);
    assert.ok(Math.abs(profile.doc.samples[8].distance_m - profile.doc.length_m) < 0.01);
    // By step: one sample every 1000 m, and the end.
    const stepped = await post('/api/elevation/plane/profile', { ...line, samples: undefined, step_m: 1000 });
    assert.equal(stepped.status, 200);
    assert.equal(stepped.doc.samples[1].distance_m, 1000);
    assert.equal(stepped.doc.samples.length, Math.ceil(stepped.doc.length_m / 1000) + 1);
  });

  test("the real COG: at its pixel centres the values GDAL reads, elsewhere bilinear between GDAL's four", async () => {
    const ds = gdal.open(REAL);
    const gt = ds.geoTransform!;
    const band = ds.bands.get(1);
    for (const [col, row] of [[10, 10], [100, 250], [511, 0], [300, 301]]) {
      const lon = gt[0] + (col + 0.5) * gt[1];
      const lat = gt[3] + (row + 0.5) * gt[5];
      const { doc } = await json(`/api/elevation/real?lon=${lon}&lat=${lat}`);
      assert.ok(Math.abs(doc.elevation - band.pixels.get(col, row)) <= 0.01, `pixel ${col},${row}`);
    }
    // A point a third of the way between pixel centres.
    const [c, r] = [200, 200];
    const lon = gt[0] + (c + 0.5 + 1 / 3) * gt[1];
    const lat = gt[3] + (r + 0.5 + 2 / 3) * gt[5];
    const v = (i: number, j: number) => band.pixels.get(i, j);
    const expected = (v(c, r) * (2 / 3) + v(c + 1, r) * (1 / 3)) * (1 / 3) + (v(c, r + 1) * (2 / 3) + v(c + 1, r + 1) * (1 / 3)) * (2 / 3);
    const { doc } = await json(`/api/elevation/real?lon=${lon}&lat=${lat}`);
    assert.ok(Math.abs(doc.elevation - expected) <= 0.01, `${doc.elevation} against ${expected}`);
    ds.close();
  });

  test("the hill's archives agree with its COG and with the formula", async () => {
    const pts: [number, number][] = Array.from({ length: 12 }, (_, i) => [HILL.lon - 0.06 + (i % 4) * 0.04, HILL.lat - 0.04 + Math.floor(i / 4) * 0.04]);
    const cog = await post('/api/elevation/hill', { points: pts });
    const pm = await post('/api/elevation/hill-pm', { points: pts });
    const mb = await post('/api/elevation/hill-mb', { points: pts });
    pts.forEach(([lon, lat], i) => {
      const truth = hillAt(mercX(lon), mercY(lat));
      assert.ok(Math.abs(cog.doc.elevations[i] - truth) < 0.2, `COG ${cog.doc.elevations[i]} against ${truth}`);
      // The archives' deepest tiles are 38 m (PMTiles) and 19 m (MBTiles) pixels, warped from the 60 m COG.
      assert.ok(Math.abs(pm.doc.elevations[i] - truth) < 1.5, `PMTiles ${pm.doc.elevations[i]} against ${truth}`);
      assert.ok(Math.abs(mb.doc.elevations[i] - truth) < 1.5, `MBTiles ${mb.doc.elevations[i]} against ${truth}`);
    });
  });

  test("tileserver-gl's routes answer as tileserver-gl does", async () => {
    const t = tileOf(HILL.lon, HILL.lat, 11);
    const centre = await json(`/data/hill-pm/elevation/11/${t.x}/${t.y}`);
    assert.equal(centre.status, 200);
    assert.deepEqual(Object.keys(centre.doc).sort(), ['elevation', 'lat', 'long', 'pixelX', 'pixelY', 'x', 'y', 'z']);
    assert.equal(centre.doc.x, t.x);
    assert.equal(centre.doc.y, t.y);
    assert.equal(centre.doc.pixelX, 128, 'the centre pixel of a 256 px tile');
    assert.ok(Math.abs(centre.doc.elevation - hillAt(mercX(centre.doc.long), mercY(centre.doc.lat))) < 1.5);
    const at = await json(`/data/hill-pm/elevation/12/${HILL.lon}/${HILL.lat}`);
    assert.equal(at.status, 200);
    assert.equal(at.doc.long, HILL.lon);
    assert.ok(Math.abs(at.doc.elevation - (HILL.base + HILL.height)) < 1.5);
    assert.equal((await get('/data/hill-pm/elevation/12/0.5/0.5')).status, 204, 'no data there');
    assert.equal((await get('/data/hill-pm/elevation/3/1/1')).status, 404, 'a tile below the zoom range');
    const batch = await post('/data/hill-mb/elevation', { points: [{ lon: HILL.lon, lat: HILL.lat, z: 12 }, { lon: 0.5, lat: 0.5, z: 9 }] });
    assert.equal(batch.status, 200);
    assert.ok(Array.isArray(batch.doc), 'a bare array');
    assert.ok(Math.abs(batch.doc[0] - (HILL.base + HILL.height)) < 1.5);
    assert.equal(batch.doc[1], null);
  });
});

describe('elevation tiles', () => {
  test('terrain-RGB and terrarium tiles decode back to what gdalwarp reads, within the encoding', async () => {
    const t = tileOf(HILL.lon + 0.02, HILL.lat - 0.01, 11);
    const truth = gdalWindow(HILL_FILE, t, 256);
    for (const [url, encoding, precision] of [
      [`/data/hill/${t.z}/${t.x}/${t.y}.png`, 'mapbox', 0.05],
      [`/data/hill/${t.z}/${t.x}/${t.y}.webp`, 'mapbox', 0.05],
    ] as const) {
      const res = await get(url);
      assert.equal(res.status, 200, url);
      const { values, width } = await decodeTile(res.body, encoding);
      assert.equal(width, 256);
      let worst = 0;
      for (let i = 0; i < values.length; i++) if (!Number.isNaN(truth[i])) worst = Math.max(worst, Math.abs(values[i] - truth[i]));
      assert.ok(worst <= precision + 1e-3, `${url}: worst ${worst} m`);
    }
    const r = tileOf(-122.4, 37.8, 12);
    const real = gdalWindow(REAL, r, 256);
    const { values } = await decodeTile((await get(`/data/real/${r.z}/${r.x}/${r.y}.png`)).body, 'terrarium');
    let worst = 0;
    for (let i = 0; i < values.length; i++) if (!Number.isNaN(real[i])) worst = Math.max(worst, Math.abs(values[i] - real[i]));
    assert.ok(worst <= 1 / 512 + 1e-3, `terrarium worst ${worst} m`);
    assert.equal((await get(`/data/real/${r.z}/${r.x}/${r.y}.jpg`)).status, 400, 'no JPEG of elevations');
  });

  test('pixels without data are transparent, and TileJSON names the encoding', async () => {
    // The hill's no-data hole is its south-east corner.
    const t = tileOf(HILL.lon + 0.105, HILL.lat - 0.075, 11);
    const res = await get(`/data/hill/${t.z}/${t.x}/${t.y}.png`);
    assert.equal(res.status, 200);
    const truth = gdalWindow(HILL_FILE, t, 256);
    const { data } = await rgbaOf(res.body);
    let holes = 0;
    for (let i = 0; i < truth.length; i++) {
      assert.equal(data[4 * i + 3] === 0, Number.isNaN(truth[i]), `pixel ${i}`);
      if (Number.isNaN(truth[i])) holes++;
    }
    assert.ok(holes > 100, `the tile covers the hole (${holes} pixels)`);
    for (const [id, encoding] of [['hill', 'mapbox'], ['real', 'terrarium'], ['hill-pm', 'terrarium'], ['hill-mb', 'mapbox']]) {
      const { doc } = await json(`/data/${id}.json`);
      assert.equal(doc.encoding, encoding, id);
      // The archives' tiles are served as published: only tiles encoded here promise a no-data marking.
      assert.deepEqual(doc.nodata, id.startsWith('hill-') ? undefined : { elevation: 0, alpha: 0 }, id);
    }
  });
});

describe('hillshade', () => {
  test("grey shading is gdaldem's on the same window (mean difference under 2 grey levels), for each method", async () => {
    const t = tileOf(-122.4, 37.8, 12);
    const window = gdalWindow(REAL, t, 256, 1);
    const e = extent(t, 256, 1);
    const src = path.join(scratch, 'hs-window.tif');
    const ds = gdal.open(src, 'w', 'GTiff', e.side, e.side, 1, gdal.GDT_Float32);
    ds.srs = gdal.SpatialReference.fromEPSG(3857);
    ds.geoTransform = [e.minx, e.px, 0, e.maxy, 0, -e.px];
    ds.bands.get(1).pixels.write(0, 0, e.side, e.side, window);
    ds.close();
    // Mercator metres are 1 / cos(latitude) ground metres: gdaldem's horizontal scale.
    const scale = Math.cos((37.8 * Math.PI) / 180);
    for (const [method, flag] of [['basic', []], ['combined', ['-combined']], ['multidirectional', ['-multidirectional']], ['igor', ['-igor']]] as const) {
      const out = path.join(scratch, `hs-${method}.tif`);
      // gdaldem takes no azimuth for multidirectional shading and no altitude for igor's.
      execFileSync('gdaldem', ['hillshade', '-q', ...flag, '-z', '1', '-s', String(scale), ...(method === 'multidirectional' ? [] : ['-az', '315']), ...(method === 'igor' ? [] : ['-alt', '45']), src, out]);
      const g = gdal.open(out);
      const grey = new Uint8Array(e.side * e.side);
      g.bands.get(1).pixels.read(0, 0, e.side, e.side, grey);
      g.close();
      const res = await get(`/data/real/hillshade/${t.z}/${t.x}/${t.y}.png?mode=grey&method=${method}&exaggeration=1&azimuth=315&altitude=45`);
      assert.equal(res.status, 200, method);
      const { data } = await rgbaOf(res.body);
      let sum = 0;
      for (let r = 0; r < 256; r++) for (let c = 0; c < 256; c++) sum += Math.abs(data[4 * (r * 256 + c)] - grey[(r + 1) * e.side + c + 1]);
      const mean = sum / 256 ** 2;
      assert.ok(mean <= 2, `${method}: mean difference ${mean.toFixed(2)} grey levels`);
    }
  });

  // Grey shading, which depends on the ground only: the colour overlay follows MapLibre, whose relief grows at low
  // zooms, so a z11 @2x tile is rightly lighter than its z12 children.
  test('no seams: four tiles side by side are the pixels of their parent at @2x', async () => {
    const parent = tileOf(HILL.lon, HILL.lat, 11);
    const big = await rgbaOf((await get(`/data/hill/hillshade/11/${parent.x}/${parent.y}@2x.png?mode=grey&method=basic`)).body);
    assert.equal(big.width, 512);
    let worst = 0;
    let where = '';
    for (const [dx, dy] of [[0, 0], [1, 0], [0, 1], [1, 1]]) {
      const child = await rgbaOf((await get(`/data/hill/hillshade/12/${parent.x * 2 + dx}/${parent.y * 2 + dy}.png?mode=grey&method=basic`)).body);
      for (let r = 0; r < 256; r++) {
        for (let c = 0; c < 256; c++) {
          const a = 4 * (r * 256 + c);
          const b = 4 * ((r + dy * 256) * 512 + c + dx * 256);
          // Compared premultiplied: the colour of a fully transparent pixel means nothing.
          for (let k = 0; k < 4; k++) {
            const d = Math.abs((child.data[a + k] * (k === 3 ? 255 : child.data[a + 3])) / 255 - (big.data[b + k] * (k === 3 ? 255 : big.data[b + 3])) / 255);
            if (d > worst) [worst, where] = [d, `child ${dx},${dy} row ${r} column ${c} channel ${k}`];
          }
        }
      }
    }
    assert.ok(worst <= 2, `largest difference ${worst} at ${where}`);
  });

  test('archives shade like the COG, deeper than their data, and @2x doubles the pixels', async () => {
    const t = tileOf(HILL.lon, HILL.lat, 12);
    const cog = await rgbaOf((await get(`/data/hill/hillshade/12/${t.x}/${t.y}.png`)).body);
    for (const id of ['hill-pm', 'hill-mb']) {
      const res = await get(`/data/${id}/hillshade/12/${t.x}/${t.y}.png`);
      assert.equal(res.status, 200, id);
      const img = await rgbaOf(res.body);
      let sum = 0;
      for (let i = 0; i < img.data.length; i++) sum += Math.abs(img.data[i] - cog.data[i]);
      assert.ok(sum / img.data.length < 3, `${id}: mean difference ${sum / img.data.length}`);
    }
    const deep = tileOf(HILL.lon + 0.01, HILL.lat + 0.01, 16);
    const res = await get(`/data/hill-pm/hillshade/16/${deep.x}/${deep.y}.png`);
    assert.equal(res.status, 200, 'z16 from z12 data');
    assert.equal((await get(`/data/hill-pm/hillshade/17/${deep.x * 2}/${deep.y * 2}.png`)).status, 204, 'past four zooms beyond the data');
    assert.equal((await rgbaOf((await get(`/data/hill-pm/hillshade/12/${t.x}/${t.y}@2x.png`)).body)).width, 512);
    assert.equal((await get(`/data/hill/hillshade/12/${t.x}/${t.y}.webp`)).headers.get('content-type'), 'image/webp');
  });
});

describe('contours', () => {
  // From the COG, and from the archive, whose windows take their border from the neighbouring archive tiles.
  for (const id of ['hill', 'hill-pm']) {
  test(`${id}: the hill's lines lie on its analytic circles, with ele and level, and meet their neighbour's at the edge`, async () => {
    const t = tileOf(HILL.lon, HILL.lat, 12);
    const right = { ...t, x: t.x + 1 };
    const lines = contourLines((await get(`/data/${id}/contours/12/${t.x}/${t.y}.pbf?interval=100&major=5`)).body, t);
    const next = contourLines((await get(`/data/${id}/contours/12/${right.x}/${right.y}.pbf?interval=100&major=5`)).body, right);
    assert.ok(lines.length > 5, `${lines.length} lines`);
    const grid = span(12) / 256;
    const cx = mercX(HILL.lon);
    const cy = mercY(HILL.lat);
    for (const l of [...lines, ...next]) {
      assert.equal(l.ele % 100, 0, `ele ${l.ele}`);
      assert.equal(l.level, l.ele % 500 === 0 ? 1 : 0, `level of ${l.ele}`);
      const r = hillRadius(l.ele);
      for (const [x, y] of l.points) assert.ok(Math.abs(Math.hypot(x - cx, y - cy) - r) < grid, `${l.ele} m: ${Math.hypot(x - cx, y - cy).toFixed(1)} against ${r.toFixed(1)}`);
    }
    // Where a line crosses the shared edge in one tile, the neighbour's line of that elevation crosses it too.
    const edge = -HALF + right.x * span(12);
    const crossings = (ls: Line[]) =>
      ls.flatMap((l) =>
        l.points.slice(1).flatMap(([x1, y1], i) => {
          const [x0, y0] = l.points[i];
          if ((x0 - edge) * (x1 - edge) > 0 || x0 === x1) return [];
          return [{ ele: l.ele, y: y0 + ((edge - x0) / (x1 - x0)) * (y1 - y0) }];
        }),
      );
    const a = crossings(lines);
    const b = crossings(next);
    assert.ok(a.length > 0, 'lines cross the edge');
    for (const c of a) assert.ok(b.some((d) => d.ele === c.ele && Math.abs(d.y - c.y) < grid), `the ${c.ele} m line at the edge`);
  });
  }

  test('feet, MLT, archives, overzoom and empty tiles', async () => {
    const t = tileOf(HILL.lon, HILL.lat, 12);
    const feet = contourLines((await get(`/data/hill/contours/12/${t.x}/${t.y}.pbf?interval=500&unit=ft`)).body, t);
    assert.ok(feet.length > 0);
    for (const l of feet) {
      assert.equal(l.ele % 500, 0);
      const r = hillRadius(l.ele / 3.28084);
      for (const [x, y] of l.points) assert.ok(Math.abs(Math.hypot(x - mercX(HILL.lon), y - mercY(HILL.lat)) - r) < span(12) / 256);
    }
    const mlt = await get(`/data/hill/contours/12/${t.x}/${t.y}.mlt`);
    assert.equal(mlt.status, 200);
    assert.equal(mlt.headers.get('content-type'), 'application/vnd.open-vector-tile');
    for (const id of ['hill-pm', 'hill-mb']) assert.ok(contourLines((await get(`/data/${id}/contours/12/${t.x}/${t.y}.pbf?interval=100`)).body, t).length > 5, id);
    const deep = tileOf(HILL.lon + 0.02, HILL.lat, 16);
    assert.equal((await get(`/data/hill-pm/contours/16/${deep.x}/${deep.y}.pbf`)).status, 200, 'contours at z16 from z12 data');
    // Flat plateau far from the peak: no line, an empty tile.
    const flat = tileOf(HILL.lon - 0.1, HILL.lat + 0.07, 14);
    assert.equal((await get(`/data/hill/contours/14/${flat.x}/${flat.y}.pbf?interval=100`)).status, 204);
    const gz = await get(`/data/hill/contours/12/${t.x}/${t.y}.pbf`, { 'accept-encoding': 'gzip' });
    assert.equal(gz.headers.get('content-encoding'), 'gzip');
  });
});

describe('caching', () => {
  test('a terrain tile is written to the disk cache, and another process serves it from there', async () => {
    const t = tileOf(HILL.lon, HILL.lat, 13);
    const first = await get(`/data/hill-pm/hillshade/13/${t.x}/${t.y}.png?method=igor`);
    assert.equal(first.status, 200);
    const dir = path.join(scratch, 'cache', 'terrain');
    const files = await waitForFiles(dir, (f) => f.includes(`/hillshade/13/${t.x}/${t.y}@1.png`));
    assert.equal(files.length, 1, 'one file for the tile and its parameters');
    assert.deepEqual(new Uint8Array(readFileSync(files[0])), first.body);
    // A marker in place of the cached bytes: a second server on the same directory answers with it.
    const marker = await sharp({ create: { width: 8, height: 8, channels: 4, background: '#ff00ff' } }).png().toBuffer();
    writeFileSync(files[0], marker);
    const other = await startServer({ toml: `[cache]\ndir = "${path.join(scratch, 'cache')}"\n[[sources]]\nid = "hill-pm"\ntype = "pmtiles"\npath = "${fixture('dem/hill-terrarium.pmtiles')}"\ndem = { encoding = "terrarium" }\n` });
    try {
      const again = await fetch(`${other.url}/data/hill-pm/hillshade/13/${t.x}/${t.y}.png?method=igor`);
      assert.deepEqual(new Uint8Array(await again.arrayBuffer()), new Uint8Array(marker));
      // Other parameters are another file, made afresh.
      const grey = await fetch(`${other.url}/data/hill-pm/hillshade/13/${t.x}/${t.y}.png?method=igor&mode=grey`);
      assert.equal((await rgbaOf(new Uint8Array(await grey.arrayBuffer()))).width, 256);
    } finally {
      await other.stop();
    }
  });
});

describe('a flood of terrain tiles', () => {
  test('past the queues: 503 with Retry-After, never another failure; the server answers at once after', async () => {
    const small = await startServer({
      toml: `[server]\ntranscode_threads = 1\n[cache]\nenabled = false\n[raster]\npool_size = 1\nmax_queue_per_thread = 4\n[[sources]]\nid = "hill"\ntype = "cog"\npath = "${HILL_FILE}"\ndem = { encoding = "mapbox" }\n`,
    });
    try {
      const base = tileOf(HILL.lon, HILL.lat, 14);
      const urls = Array.from({ length: 120 }, (_, i) => `${small.url}/data/hill/hillshade/14/${base.x - 5 + (i % 11)}/${base.y - 5 + Math.floor(i / 11)}.png?method=${['basic', 'igor'][i % 2]}`);
      const answers = await Promise.all(
        urls.map(async (u) => {
          const res = await fetch(u);
          const body = await res.arrayBuffer();
          return { status: res.status, type: res.headers.get('content-type'), retry: res.headers.get('retry-after'), bytes: body.byteLength };
        }),
      );
      const statuses = new Set(answers.map((a) => a.status));
      assert.ok([...statuses].every((s) => s === 200 || s === 204 || s === 503), `statuses ${[...statuses]}`);
      const refused = answers.filter((a) => a.status === 503);
      assert.ok(refused.length > 0, 'the queues filled');
      assert.ok(answers.some((a) => a.status === 200), 'and tiles were made meanwhile');
      for (const r of refused) {
        assert.equal(r.type, 'application/problem+json');
        assert.ok(Number(r.retry) >= 1, 'Retry-After');
      }
      const after = await fetch(`${small.url}/data/hill/hillshade/14/${base.x}/${base.y}.png?method=combined`);
      assert.equal(after.status, 200);
      assert.doesNotMatch(small.output(), /"level":50/, 'no request failed inside the server');
    } finally {
      await small.stop();
    }
  });
});

/** The files under `dir` whose path passes `match`, once at least one does (writes are in the background). */
async function waitForFiles(dir: string, match: (f: string) => boolean): Promise<string[]> {
  for (let i = 0; i < 50; i++) {
    const found = existsSync(dir) ? (readdirSync(dir, { recursive: true }) as string[]).map((f) => path.join(dir, f)).filter((f) => match(f) && !f.endsWith('.tmp')) : [];
    if (found.length) return found;
    await new Promise((r) => setTimeout(r, 100));
  }
  return [];
}

describe('listings', () => {
  test('TileJSON of the products, /index.json, OGC API collections and a WMTS document GDAL opens', async () => {
    const hs = await json('/data/hill/hillshade.json?method=igor');
    assert.equal(hs.status, 200);
    assert.match(hs.doc.tiles[0], /\/data\/hill\/hillshade\/\{z\}\/\{x\}\/\{y\}\.png\?method=igor$/);
    assert.equal(hs.doc.maxzoom, 15, 'the COG reaches z11 (60 m pixels); products four zooms deeper');
    const ct = await json('/data/hill-pm/contours.json');
    assert.deepEqual(ct.doc.vector_layers.map((l: { id: string }) => l.id), ['contours']);
    assert.deepEqual(Object.keys(ct.doc.vector_layers[0].fields).sort(), ['ele', 'level']);
    assert.equal(ct.doc.maxzoom, 16);
    const index = (await json('/index.json')).doc as { id: string }[];
    for (const id of ['hill/hillshade', 'hill/contours', 'hill-mb/contours']) assert.ok(index.some((d) => d.id === id), id);
    assert.ok(!index.some((d) => d.id === 'imagery/hillshade'), 'imagery has no relief');
    const collections = (await json('/ogc/collections?f=json')).doc.collections as { id: string }[];
    assert.ok(collections.some((c) => c.id === 'hill.hillshade') && collections.some((c) => c.id === 'hill.contours'));
    const t = tileOf(HILL.lon, HILL.lat, 12);
    const viaOgc = await get(`/ogc/collections/hill.hillshade/tiles/WebMercatorQuad/12/${t.y}/${t.x}`);
    const viaData = await get(`/data/hill/hillshade/12/${t.x}/${t.y}.png`);
    assert.equal(viaOgc.status, 200);
    assert.deepEqual(viaOgc.body, viaData.body);
    const info = JSON.parse(execFileSync('gdalinfo', ['-json', `WMTS:${server.url}/data/hill/hillshade/wmts.xml`], { encoding: 'utf8', timeout: 60_000 }));
    assert.equal(info.bands.length, 4);
    assert.match(JSON.stringify(info.coordinateSystem), /Pseudo-Mercator|3857/);
  });

  test("the elevation source's generated style draws relief and contours from this server", async () => {
    const { status, doc } = await json('/styles/hill/style.json');
    assert.equal(status, 200);
    assert.equal(doc.sources.hill.type, 'raster-dem');
    assert.equal(doc.sources.hill.encoding, 'mapbox');
    assert.match(doc.sources.hill.url, /\/data\/hill\.json$/);
    assert.ok(doc.layers.some((l: { type: string }) => l.type === 'hillshade'));
    assert.ok(doc.layers.some((l: { source?: string; type: string }) => l.type === 'line' && l.source === 'hill-contours'));
    // With fonts, the major lines are labelled in a regular sans face the service serves, digits included.
    const label = doc.layers.find((l: { id: string }) => l.id === 'contours-labels');
    assert.deepEqual(label?.layout['text-font'], ['Noto Sans Regular']);
    assert.deepEqual(label?.filter, ['==', ['get', 'level'], 1]);
    assert.match(doc.glyphs, /\/fonts\/\{fontstack\}\/\{range\}\.pbf$/);
    const digits = await get(`/fonts/${encodeURIComponent('Noto Sans Regular')}/0-255.pbf`);
    assert.equal(digits.status, 200);
    assert.ok(digits.body.byteLength > 1000, 'glyphs of the digits');
    // The preview page draws that style; the home page links the products.
    const preview = Buffer.from((await get('/data/hill/')).body).toString('utf8');
    assert.match(preview, /raster-dem/);
    const home = Buffer.from((await get('/')).body).toString('utf8');
    for (const href of ['/data/hill/hillshade.json', '/data/hill/contours.json', '/data/hill/hillshade/wmts.xml', '/api/elevation/hill?lon=']) assert.ok(home.includes(href), href);
    assert.ok(!home.includes('/data/imagery/hillshade.json'), 'not for imagery');
  });
});

describe('bad input', () => {
  const problemOf = async (p: string, init?: RequestInit) => {
    const res = await fetch(`${server.url}${p}`, init);
    const text = await res.text();
    return { status: res.status, type: res.headers.get('content-type') ?? '', detail: text ? (JSON.parse(text).detail as string) : '' };
  };
  const postProblem = (p: string, body: string) => problemOf(p, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
  const t = tileOf(HILL.lon, HILL.lat, 12);
  const cases: [string, () => Promise<{ status: number; type: string; detail: string }>, number, RegExp][] = [
    ['azimuth 400', () => problemOf(`/data/hill/hillshade/12/${t.x}/${t.y}.png?azimuth=400`), 400, /azimuth/],
    ['exaggeration -1', () => problemOf(`/data/hill/hillshade/12/${t.x}/${t.y}.png?exaggeration=-1`), 400, /exaggeration/],
    ['an unknown method', () => problemOf(`/data/hill/hillshade/12/${t.x}/${t.y}.png?method=sunny`), 400, /method/],
    ['a colour that is none', () => problemOf(`/data/hill/hillshade/12/${t.x}/${t.y}.png?shadow=blurple`), 400, /shadow/],
    ['interval 0', () => problemOf(`/data/hill/contours/12/${t.x}/${t.y}.pbf?interval=0`), 400, /interval/],
    ['an interval giving thousands of lines', () => problemOf(`/data/hill/contours/12/${t.x}/${t.y}.pbf?interval=0.1`), 400, /interval/],
    ['a unit that is none', () => problemOf(`/data/hill/contours/12/${t.x}/${t.y}.pbf?unit=yd`), 400, /unit/],
    ['contours as PNG', () => problemOf(`/data/hill/contours/12/${t.x}/${t.y}.png`), 400, /contours tiles are/],
    ['a bad pixel ratio', () => problemOf(`/data/hill/hillshade/12/${t.x}/${t.y}@9x.png`), 400, /pixel ratio/],
    ['a tile outside the grid', () => problemOf(`/data/hill/hillshade/3/9/9.png`), 400, /coordinates|outside|x/],
    ['an unknown source', () => problemOf('/api/elevation/nope?lon=1&lat=1'), 404, /nope/],
    ['a source without elevation', () => problemOf('/data/imagery/hillshade/12/0/0.png'), 400, /imagery.*no elevation/],
    ['a source without elevation (API)', () => problemOf('/api/elevation/imagery?lon=1&lat=1'), 400, /no elevation/],
    ['latitude 91', () => problemOf('/api/elevation/hill?lon=10&lat=91'), 400, /lat/],
    ['longitude NaN', () => problemOf('/api/elevation/hill?lon=NaN&lat=46'), 400, /lon/],
    ['no longitude', () => problemOf('/api/elevation/hill?lat=46'), 400, /lon/],
    ['hex coordinates', () => problemOf('/api/elevation/hill?lon=0x10&lat=46'), 400, /lon/],
    ['tileserver-gl route, latitude 95', () => problemOf('/data/hill/elevation/12/10.5/95.5'), 400, /lat/],
    ['tileserver-gl route, zoom 30', () => problemOf('/data/hill/elevation/30/1/1'), 400, /z must be/],
    ['too many points', () => postProblem('/api/elevation/hill', JSON.stringify({ points: Array.from({ length: 501 }, () => [10, 46]) })), 400, /500/],
    ['a point out of range', () => postProblem('/api/elevation/hill', JSON.stringify({ points: [[10, 46], [200, 46]] })), 400, /points\[1\]/],
    ['not JSON', () => postProblem('/api/elevation/hill', '{"points": ['), 400, /not JSON/],
    ['a body far too large', () => postProblem('/api/elevation/hill', JSON.stringify({ points: Array.from({ length: 20_000 }, () => [10.123456789, 46.123456789]) })), 413, /at most/],
    ['a profile too long', () => postProblem('/api/elevation/hill/profile', JSON.stringify({ type: 'LineString', coordinates: [[10, 46], [11, 47]], samples: 10 })), 400, /long|length|km|m\b/],
    ['too many samples', () => postProblem('/api/elevation/hill/profile', JSON.stringify({ type: 'LineString', coordinates: [[10, 46], [10.01, 46]], samples: 301 })), 400, /samples|300/],
    ['a step too fine', () => postProblem('/api/elevation/hill/profile', JSON.stringify({ type: 'LineString', coordinates: [[10, 46], [10.1, 46]], step_m: 1 })), 400, /step_m|samples/],
    ['a broken polyline', () => postProblem('/api/elevation/hill/profile', JSON.stringify({ polyline: '_p~iF~ps|U_ulL', samples: 5 })), 400, /polyline/],
    ['no sample spec', () => postProblem('/api/elevation/hill/profile', JSON.stringify({ type: 'LineString', coordinates: [[10, 46], [10.01, 46]] })), 400, /samples|step_m/],
    ["tileserver-gl's batch, without lat", () => postProblem('/data/hill/elevation', JSON.stringify({ points: [{ lon: 10, z: 3 }] })), 400, /lat/],
  ];
  for (const [name, run, status, detail] of cases) {
    test(`${name}: ${status} problem+json naming it`, async () => {
      const p = await run();
      assert.equal(p.status, status, p.detail);
      assert.equal(p.type, 'application/problem+json');
      assert.match(p.detail, detail);
    });
  }

  test('the server is still answering after all of it', async () => {
    assert.equal((await get('/health')).status, 200);
    assert.doesNotMatch(server.output(), /"level":50/, 'no request failed inside the server');
  });
});
