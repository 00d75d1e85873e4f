// Contour tiles on synthetic DEMs with analytic isolines: a cone and a Gaussian hill, whose contour at height h
// is a circle of known radius. Checks positions (the pixel-centre convention), `ele`/`level` in metres and
// feet, lines meeting across a tile edge, no-data, the level cap, and the query parser (fast-check).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from './helpers/fast-check.js';
import { type Surface, sampleWindow, shifted } from './helpers/dem-windows.js';
import { tileSpan } from '../src/terrain/dem-window.js';
import {
  contourLayer,
  contourLimitProblem,
  defaultContourInterval,
  parseContourQuery,
} from '../src/terrain/contours.js';
import type { TileLayer } from '../src/tiles/vector-model.js';

const Z = 12;
const X = 655;
const Y = 1582;
const SIZE = 256;
const BORDER = 4;
const EXTENT = 4096;
const SPAN = tileSpan(Z);
/** Tile units per mercator metre. */
const UNITS = EXTENT / SPAN;
const PX = EXTENT / SIZE;
const FT = 0.3048;

const cx = SPAN * 0.45;
const cy = SPAN * 0.55;
const cone: Surface = (e, s) => 1000 - 0.25 * Math.hypot(e - cx, s - cy);
const sigma = SPAN * 0.18;
const gauss: Surface = (e, s) => 800 * Math.exp(-((e - cx) ** 2 + (s - cy) ** 2) / (2 * sigma ** 2));

function linesOf(layer: TileLayer): { ele: number; level: number; line: number[] }[] {
  return layer.features.flatMap((f) => {
    assert.equal(f.type, 2);
    return f.geometry.map((line) => ({ ele: f.properties.ele as number, level: f.properties.level as number, line }));
  });
}

/** Largest distance (tile px) of a line's vertices inside the tile from the circle the level should follow. */
function worstRadiusError(layer: TileLayer, radiusOf: (ele: number) => number): number {
  let worst = 0;
  let checked = 0;
  for (const { ele, line } of linesOf(layer)) {
    const want = radiusOf(ele) * UNITS;
    for (let i = 0; i < line.length; i += 2) {
      if (line[i] < 0 || line[i] > EXTENT || line[i + 1] < 0 || line[i + 1] > EXTENT) continue;
      const r = Math.hypot(line[i] - cx * UNITS, line[i + 1] - cy * UNITS);
      worst = Math.max(worst, Math.abs(r - want) / PX);
      checked++;
    }
  }
  assert.ok(checked > 100, `only ${checked} vertices checked`);
  return worst;
}

test('cone: every vertex lies on the analytic circle of its level within a quarter pixel', () => {
  const layer = contourLayer(sampleWindow(Z, X, Y, SIZE, BORDER, cone), { interval: 100, major: 5, unit: 'm' });
  assert.equal(layer.name, 'contours');
  assert.equal(layer.extent, EXTENT);
  const eles = layer.features.map((f) => f.properties.ele).sort((a, b) => Number(a) - Number(b));
  // The cone falls 0.25 m per metre from 1000 m: the tile's corners are about 400..600 m below the top.
  assert.ok(eles.includes(900) && eles.includes(500), `levels ${eles}`);
  const error = worstRadiusError(layer, (ele) => (1000 - ele) / 0.25);
  assert.ok(error < 0.25, `worst vertex is ${error.toFixed(3)} px off its circle`);
});

test('Gaussian hill: vertices on the analytic circles, a closed ring around the top, ele and level right', () => {
  const layer = contourLayer(sampleWindow(Z, X, Y, SIZE, BORDER, gauss), { interval: 50, major: 5, unit: 'm' });
  const error = worstRadiusError(layer, (ele) => sigma * Math.sqrt(2 * Math.log(800 / ele)));
  assert.ok(error < 0.25, `worst vertex is ${error.toFixed(3)} px off its circle`);
  for (const { ele, level, line } of linesOf(layer)) {
    assert.equal(ele % 50, 0);
    assert.equal(level, ele % 250 === 0 ? 1 : 0, `ele ${ele}`);
    assert.ok(line.every((v) => Number.isInteger(v) && v >= -64 && v <= EXTENT + 64), `ele ${ele}: coordinates are integers inside the buffer`);
    for (let i = 2; i < line.length; i += 2) assert.ok(line[i] !== line[i - 2] || line[i + 1] !== line[i - 1], 'no repeated vertex');
  }
  const top = linesOf(layer).filter((l) => l.ele === 750);
  assert.equal(top.length, 1);
  const ring = top[0].line;
  assert.deepEqual(ring.slice(-2), ring.slice(0, 2), 'the 750 m line closes on itself');
  // Simplified to the tile's resolution: a ring of radius r px keeps far fewer vertices than the 2*pi*r*2
  // crossings of the pixel grid, yet enough to stay round.
  const radiusPx = (sigma * Math.sqrt(2 * Math.log(800 / 750)) * UNITS) / PX;
  assert.ok(ring.length / 2 < 2 * Math.PI * radiusPx, `${ring.length / 2} vertices for a ring of ${radiusPx.toFixed(1)} px`);
  assert.ok(ring.length / 2 > 8, `${ring.length / 2} vertices`);
});

test('feet: elevations are converted and the interval counts in feet', () => {
  const layer = contourLayer(sampleWindow(Z, X, Y, SIZE, BORDER, gauss), { interval: 200, major: 5, unit: 'ft' });
  const eles = layer.features.map((f) => f.properties.ele as number);
  assert.ok(eles.includes(2600) && !eles.includes(2700), `levels ${eles}`);
  assert.ok(eles.every((e) => e % 200 === 0), `levels ${eles}`);
  for (const f of layer.features) assert.equal(f.properties.level, (f.properties.ele as number) % 1000 === 0 ? 1 : 0);
  const error = worstRadiusError(layer, (ele) => sigma * Math.sqrt(2 * Math.log(800 / (ele * FT))));
  assert.ok(error < 0.25, `worst vertex is ${error.toFixed(3)} px off its circle`);
});

/** Where a line crosses the vertical x = at (tile units): the y of every crossing. */
function crossings(layer: TileLayer, ele: number, at: number): number[] {
  const ys: number[] = [];
  for (const l of linesOf(layer)) {
    if (l.ele !== ele) continue;
    for (let i = 2; i < l.line.length; i += 2) {
      const [x0, y0, x1, y1] = [l.line[i - 2], l.line[i - 1], l.line[i], l.line[i + 1]];
      if ((x0 - at) * (x1 - at) < 0 || (x1 === at && x0 !== at)) ys.push(y0 + ((at - x0) / (x1 - x0)) * (y1 - y0));
    }
  }
  return ys.sort((a, b) => a - b);
}

test('adjacent tiles: lines leaving one tile meet the neighbour\'s at the shared edge', () => {
  // A hill centred on the edge between tiles X and X+1 (and a little north of middle).
  const hill: Surface = (e, s) => 900 * Math.exp(-((e - SPAN) ** 2 + (s - SPAN * 0.4) ** 2) / (2 * (SPAN * 0.3) ** 2));
  const west = contourLayer(sampleWindow(Z, X, Y, SIZE, BORDER, hill), { interval: 100, major: 5, unit: 'm' });
  const east = contourLayer(sampleWindow(Z, X + 1, Y, SIZE, BORDER, shifted(hill, Z, 1, 0)), { interval: 100, major: 5, unit: 'm' });
  let compared = 0;
  for (const ele of [300, 400, 500, 600, 700, 800]) {
    const a = crossings(west, ele, EXTENT);
    const b = crossings(east, ele, 0);
    assert.equal(a.length, b.length, `${ele} m crosses the edge ${a.length} times in the west tile, ${b.length} in the east`);
    assert.ok(a.length > 0, `${ele} m crosses the edge`);
    for (let i = 0; i < a.length; i++) {
      assert.ok(Math.abs(a[i] - b[i]) <= PX / 2, `${ele} m: ${a[i].toFixed(1)} against ${b[i].toFixed(1)}`);
      compared++;
    }
  }
  assert.ok(compared >= 10, `${compared} crossings compared`);
});

test('no data: no line enters a hole, and a window of only no-data gives an empty layer', () => {
  const win = sampleWindow(Z, X, Y, SIZE, BORDER, cone);
  const w = SIZE + 2 * BORDER;
  // A hole over tile pixels 100..149 in both directions.
  for (let r = 100 + BORDER; r < 150 + BORDER; r++) for (let c = 100 + BORDER; c < 150 + BORDER; c++) win.data[r * w + c] = NaN;
  const layer = contourLayer(win, { interval: 25, major: 4, unit: 'm' });
  assert.ok(layer.features.length > 0, 'lines around the hole');
  for (const { line } of linesOf(layer)) {
    for (let i = 0; i < line.length; i += 2) {
      const px = line[i] / PX;
      const py = line[i + 1] / PX;
      assert.ok(!(px > 100.5 && px < 148.5 && py > 100.5 && py < 148.5), `vertex at ${px},${py} px inside the hole`);
    }
  }
  const empty = { ...win, data: new Float32Array(w * w).fill(NaN) };
  assert.deepEqual(contourLayer(empty, { interval: 10, major: 5, unit: 'm' }).features, []);
});

test('level cap: an interval that would draw more than the cap is a problem, and contourLayer refuses it', () => {
  const win = sampleWindow(Z, X, Y, SIZE, BORDER, cone);
  // The cone falls 0.25 m per mercator metre over a window some 7800 m from its top: about 1950 m of relief.
  assert.equal(contourLimitProblem(win, 2, 'm'), undefined);
  const problem = contourLimitProblem(win, 1, 'm');
  assert.match(problem ?? '', /^interval 1 m gives 19\d\d contour levels in tile 12\/655\/1582; at most 1000 are drawn, use an interval of at least 1\.9/);
  assert.throws(() => contourLayer(win, { interval: 1, major: 5, unit: 'm' }), RangeError);
});

test('default intervals: coarse at low zoom, 10 m (20 ft) from z15, never finer as zoom decreases', () => {
  assert.equal(defaultContourInterval(0, 'm'), 1000);
  assert.equal(defaultContourInterval(15, 'm'), 10);
  assert.equal(defaultContourInterval(22, 'm'), 10);
  assert.equal(defaultContourInterval(15, 'ft'), 20);
  for (const unit of ['m', 'ft'] as const) {
    for (let z = 1; z <= 22; z++) assert.ok(defaultContourInterval(z, unit) <= defaultContourInterval(z - 1, unit));
  }
});

test('parseContourQuery: defaults, accepted values and the problems of bad ones', () => {
  assert.deepEqual(parseContourQuery(new URLSearchParams(''), 12), { ok: true, options: { interval: 50, major: 5, unit: 'm' } });
  assert.deepEqual(parseContourQuery(new URLSearchParams('unit=ft'), 12), { ok: true, options: { interval: 100, major: 5, unit: 'ft' } });
  assert.deepEqual(parseContourQuery(new URLSearchParams('interval=2.5&major=4&unit=m&x=1'), 3), { ok: true, options: { interval: 2.5, major: 4, unit: 'm' } });
  const bad = (q: string, needle: RegExp) => {
    const r = parseContourQuery(new URLSearchParams(q), 12);
    assert.ok(!r.ok, q);
    assert.match(r.problem, needle, q);
  };
  bad('interval=0', /^interval must be a number from 0\.1 to 10000 \(m\), got "0"$/);
  bad('interval=-5', /^interval/);
  bad('interval=0.05&unit=ft', /^interval .*\(ft\)/);
  bad('interval=ten', /^interval/);
  bad('major=0', /^major must be an integer from 1 to 100, got "0"$/);
  bad('major=2.5', /^major/);
  bad('unit=km', /^unit must be m or ft, got "km"$/);
});

test('property: parseContourQuery never throws, accepts every valid value and names the parameter it rejects', () => {
  const names = ['interval', 'major', 'unit', 'other'];
  fc.assert(
    fc.property(fc.array(fc.tuple(fc.constantFrom(...names), fc.string()), { maxLength: 5 }), fc.integer({ min: 0, max: 24 }), (pairs, z) => {
      const r = parseContourQuery(new URLSearchParams(pairs), z);
      if (!r.ok) assert.ok(names.some((n) => r.problem.startsWith(`${n} `)), r.problem);
      else assert.ok(r.options.interval >= 0.1 && Number.isInteger(r.options.major) && r.options.major >= 1, JSON.stringify(r.options));
    }),
    { numRuns: 2000 },
  );
  fc.assert(
    fc.property(fc.double({ min: 0.1, max: 10000, noNaN: true }), fc.integer({ min: 1, max: 100 }), fc.constantFrom('m', 'ft'), (interval, major, unit) => {
      const text = interval.toFixed(3);
      const r = parseContourQuery(new URLSearchParams({ interval: text, major: String(major), unit }), 10);
      if (Number(text) < 0.1) return;
      assert.ok(r.ok, text);
      assert.deepEqual(r.options, { interval: Number(text), major, unit });
    }),
    { numRuns: 500 },
  );
  fc.assert(
    fc.property(fc.oneof(fc.double({ min: -1e6, max: 0.0999, noNaN: true }), fc.double({ min: 10000.01, max: 1e9, noNaN: true })), (v) => {
      const r = parseContourQuery(new URLSearchParams({ interval: v.toFixed(4) }), 10);
      assert.ok(!r.ok && r.problem.startsWith('interval must be'), String(v));
    }),
    { numRuns: 500 },
  );
});
