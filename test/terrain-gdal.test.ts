// The terrain products against GDAL on a real DEM (fixtures/cog/dem-small.cog.tif, around San Francisco):
// gdalwarp cuts one tile window with border in EPSG:3857, and on that same window gdaldem's hillshades (four
// methods) and gdal_contour's isolines are compared with ours. gdaldem sees mercator metres, so it gets
// -s cos(latitude): its horizontal distances are then ground metres, as ours are. What the same window costs to
// shade and trace is measured by bench/terrain-kernels.bench.ts, not here.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import gdal from 'gdal-async';
import { BORDER, MAX_Y, MIN_X, PIXEL, readBand, run, SIZE, W, warpWindow, X, Y } from './helpers/dem-fixture-window.js';
import { type DemWindow, pixelCentreLonLat } from '../src/terrain/dem-window.js';
import { type HillshadeMethod, hillshade } from '../src/terrain/hillshade.js';
import { contourLayer } from '../src/terrain/contours.js';

const EXTENT = 4096;

let dir = '';
let windowPath = '';
let win: DemWindow;

before(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'terrain-gdal-'));
  windowPath = path.join(dir, 'window.tif');
  win = warpWindow(X, Y, windowPath);
});

after(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
});

test('the warped window is the tile\'s pixel grid and holds data everywhere', () => {
  const ds = gdal.open(windowPath);
  const gt = ds.geoTransform!;
  ds.close();
  assert.ok(Math.abs(gt[0] - MIN_X) < 1e-6 && Math.abs(gt[3] - MAX_Y) < 1e-6 && Math.abs(gt[1] - PIXEL) < 1e-9, `geotransform ${gt}`);
  assert.ok(win.data.every((v) => Number.isFinite(v)), 'no hole in this tile');
});

const FLAGS: Record<Exclude<HillshadeMethod, 'standard'>, string[]> = {
  basic: [],
  combined: ['-combined'],
  igor: ['-igor'],
  multidirectional: ['-multidirectional'],
};

for (const [method, flags] of Object.entries(FLAGS) as [Exclude<HillshadeMethod, 'standard'>, string[]][]) {
  test(`hillshade ${method}, grey: within 2 grey levels on average of gdaldem hillshade ${flags.join(' ')}`.trimEnd(), (t) => {
    const lat = pixelCentreLonLat(win, W / 2, W / 2)[1];
    const scale = Math.cos((lat * Math.PI) / 180);
    for (const [azimuth, altitude, exaggeration] of [[335, 45, 1], [200, 30, 3]]) {
      const out = path.join(dir, `${method}-${azimuth}.tif`);
      // gdaldem refuses the options its method ignores: igor has no altitude, multidirectional no azimuth.
      const light = [...(method === 'multidirectional' ? [] : ['-az', String(azimuth)]), ...(method === 'igor' ? [] : ['-alt', String(altitude)])];
      run('gdaldem', ['hillshade', '-q', ...flags, ...light, '-z', String(exaggeration), '-s', String(scale), windowPath, out]);
      const theirs = readBand(out);
      const ours = hillshade(win, { method, mode: 'grey', azimuth, altitude, exaggeration });
      let sum = 0;
      let worst = 0;
      for (let row = 0; row < SIZE; row++) {
        for (let col = 0; col < SIZE; col++) {
          const d = Math.abs(ours[(row * SIZE + col) * 4] - theirs[(row + BORDER) * W + col + BORDER]);
          sum += d;
          worst = Math.max(worst, d);
        }
      }
      const mean = sum / (SIZE * SIZE);
      t.diagnostic(`${method} az ${azimuth} alt ${altitude} z ${exaggeration}: mean |difference| ${mean.toFixed(3)}, worst ${worst}`);
      assert.ok(mean <= 2, `${method} az ${azimuth}: mean difference ${mean.toFixed(3)}, worst ${worst}`);
      // The same formulas on the same numbers: differences are rounding, not shading.
      assert.ok(worst <= 1, `${method} az ${azimuth}: worst difference ${worst} (mean ${mean.toFixed(3)})`);
    }
  });
}

test('hillshade no-data: holes and the edge of the data match gdaldem -compute_edges (NaN neighbours take the centre value)', (t) => {
  // The tile north-west of the main one holds the fixture's no-data block and the DEM's west and north edges.
  const file = path.join(dir, 'holes.tif');
  const holes = warpWindow(X - 1, Y - 1, file);
  let missing = 0;
  for (let row = 0; row < SIZE; row++) for (let col = 0; col < SIZE; col++) if (Number.isNaN(holes.data[(row + BORDER) * W + col + BORDER])) missing++;
  assert.ok(missing > 10000 && missing < SIZE * SIZE - 10000, `${missing} pixels without data`);
  const lat = pixelCentreLonLat(holes, W / 2, W / 2)[1];
  const out = path.join(dir, 'holes-shade.tif');
  run('gdaldem', ['hillshade', '-q', '-compute_edges', '-z', '2', '-s', String(Math.cos((lat * Math.PI) / 180)), file, out]);
  const theirs = readBand(out);
  const ours = hillshade(holes, { method: 'basic', mode: 'grey', azimuth: 315, altitude: 45, exaggeration: 2 });
  let worst = 0;
  let compared = 0;
  for (let row = 0; row < SIZE; row++) {
    for (let col = 0; col < SIZE; col++) {
      const o = (row * SIZE + col) * 4;
      // gdaldem writes 0 (its no-data value) where the DEM has none; we write a transparent pixel.
      const g = theirs[(row + BORDER) * W + col + BORDER];
      const theirsEmpty = Number.isNaN(g) || g === 0;
      assert.equal(ours[o + 3] === 0, theirsEmpty, `pixel ${col},${row}: ours alpha ${ours[o + 3]}, gdaldem ${g}`);
      if (theirsEmpty) continue;
      worst = Math.max(worst, Math.abs(ours[o] - g));
      compared++;
    }
  }
  t.diagnostic(`${missing} pixels without data, ${compared} compared, worst difference ${worst}`);
  assert.ok(worst <= 1, `worst difference ${worst}`);
});

interface Segments {
  /** x0, y0, x1, y1 per segment, in window pixels. */
  coords: number[];
  /** Segment numbers by pixel cell (col + row * W). */
  cells: Map<number, number[]>;
}

function indexSegments(lines: number[][]): Segments {
  const coords: number[] = [];
  const cells = new Map<number, number[]>();
  for (const line of lines) {
    for (let i = 2; i < line.length; i += 2) {
      const s = coords.length / 4;
      coords.push(line[i - 2], line[i - 1], line[i], line[i + 1]);
      const c0 = Math.floor(Math.min(line[i - 2], line[i])) - 1, c1 = Math.floor(Math.max(line[i - 2], line[i])) + 1;
      const r0 = Math.floor(Math.min(line[i - 1], line[i + 1])) - 1, r1 = Math.floor(Math.max(line[i - 1], line[i + 1])) + 1;
      for (let r = r0; r <= r1; r++) for (let c = c0; c <= c1; c++) {
        const key = c + r * 4 * W;
        let list = cells.get(key);
        if (!list) cells.set(key, (list = []));
        list.push(s);
      }
    }
  }
  return { coords, cells };
}

/** Distance from (x, y) to the nearest indexed segment, Infinity beyond a pixel or two. */
function nearest(index: Segments, x: number, y: number): number {
  let best = Infinity;
  for (const s of index.cells.get(Math.floor(x) + Math.floor(y) * 4 * W) ?? []) {
    const [x0, y0, x1, y1] = index.coords.slice(s * 4, s * 4 + 4);
    const dx = x1 - x0, dy = y1 - y0;
    const len2 = dx * dx + dy * dy;
    const t = len2 > 0 ? Math.min(1, Math.max(0, ((x - x0) * dx + (y - y0) * dy) / len2)) : 0;
    best = Math.min(best, Math.hypot(x0 + t * dx - x, y0 + t * dy - y));
  }
  return best;
}

test('contours: every vertex within one pixel of gdal_contour\'s line of the same elevation, and the reverse', (t) => {
  const interval = 20;
  const out = path.join(dir, 'contours.geojson');
  run('gdal_contour', ['-q', '-a', 'ele', '-i', String(interval), '-f', 'GeoJSON', windowPath, out]);
  const geojson = JSON.parse(readFileSync(out, 'utf8')) as { features: { properties: { ele: number }; geometry: { type: string; coordinates: number[][] | number[][][] } }[] };
  // Both in tile pixels: GDAL's from mercator metres, ours from tile units.
  const gdalByEle = new Map<number, number[][]>();
  for (const f of geojson.features) {
    const parts = f.geometry.type === 'MultiLineString' ? (f.geometry.coordinates as number[][][]) : [f.geometry.coordinates as number[][]];
    const list = gdalByEle.get(f.properties.ele) ?? [];
    for (const part of parts) {
      const line = part.flatMap(([mx, my]) => [(mx - MIN_X) / PIXEL - BORDER, (MAX_Y - my) / PIXEL - BORDER]);
      // Rings smaller than half a pixel (a lone pixel just over a level) are left out of tiles on purpose.
      const xs = line.filter((_, i) => i % 2 === 0);
      const ys = line.filter((_, i) => i % 2 === 1);
      if (Math.max(Math.max(...xs) - Math.min(...xs), Math.max(...ys) - Math.min(...ys)) < 0.5) continue;
      list.push(line);
    }
    gdalByEle.set(f.properties.ele, list);
  }
  const layer = contourLayer(win, { interval, major: 5, unit: 'm' });
  const oursByEle = new Map<number, number[][]>();
  for (const f of layer.features) oursByEle.set(f.properties.ele as number, f.geometry.map((line) => line.map((v) => (v * SIZE) / EXTENT)));
  assert.deepEqual([...oursByEle.keys()].sort((a, b) => a - b), [...gdalByEle.keys()].sort((a, b) => a - b), 'the same levels');

  const inside = (x: number, y: number) => x >= 0.5 && x <= SIZE - 0.5 && y >= 0.5 && y <= SIZE - 0.5;
  // Our vertices are vertices of the exact isoline (the simplification keeps a subset of them), so they lie on
  // GDAL's lines up to rounding to tile units; GDAL's vertices can be up to half a pixel off our simplified
  // lines. Both within one pixel, as asked; the first much closer, which pins the pixel-centre convention.
  for (const [from, to, label, tolerance] of [
    [oursByEle, gdalByEle, 'ours near GDAL', 0.25],
    [gdalByEle, oursByEle, 'GDAL near ours', 1],
  ] as const) {
    let checked = 0;
    let worst = 0;
    for (const [ele, lines] of from) {
      const index = indexSegments(to.get(ele) ?? []);
      for (const line of lines) {
        for (let i = 0; i < line.length; i += 2) {
          if (!inside(line[i], line[i + 1])) continue;
          const d = nearest(index, line[i], line[i + 1]);
          worst = Math.max(worst, d);
          checked++;
          assert.ok(d <= tolerance, `${label}: ${ele} m vertex at ${line[i].toFixed(2)},${line[i + 1].toFixed(2)} px is ${d.toFixed(2)} px away`);
        }
      }
    }
    assert.ok(checked > 500, `${label}: ${checked} vertices checked`);
    t.diagnostic(`${label}: ${checked} vertices, farthest ${worst.toFixed(3)} px`);
  }
});
