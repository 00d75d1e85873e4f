// Windows assembled from an archive's tiles (src/terrain/mosaic.ts) against a sample-by-sample reading of the same
// tiles: every window pixel is the bilinear blend of the four archive pixels around its centre, columns wrapping
// around the antimeridian, rows stopping at the world's edge, holes and missing tiles leaving their neighbours to
// carry the blend. Random plans (fast-check) cover the archive's own zoom, overzoom, both tile sizes and the
// edges of the world.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from './helpers/fast-check.js';
import { assembleWindow, tilesNeeded, type MosaicPlan } from '../src/terrain/mosaic.js';
import { sampleGrid } from '../src/grid/bilinear.js';
import { gridKernels } from '../src/grid/kernels.js';

/** A decoded archive tile: a smooth surface of the world pixel, with a hole where `hole` says. */
function tile(tx: number, ty: number, T: number, hole: (u: number, v: number) => boolean): Float32Array {
  const out = new Float32Array(T * T);
  for (let r = 0; r < T; r++)
    for (let c = 0; c < T; c++) {
      const u = tx * T + c;
      const v = ty * T + r;
      out[r * T + c] = hole(u, v) ? Number.NaN : 100 + 0.37 * u - 0.21 * v + 5 * Math.sin(u / 7) * Math.cos(v / 5);
    }
  return out;
}

/** The window pixel (c, r) read one sample at a time, as the mosaic's comment says it is. */
function reference(plan: MosaicPlan, tiles: ReadonlyMap<string, Float32Array>, c: number, r: number): number {
  const T = plan.sourceSize;
  const W = 2 ** plan.sourceZoom * T;
  const scale = (T / plan.size) * 2 ** (plan.sourceZoom - plan.z);
  const u = (plan.x * plan.size - plan.border + 0.5 + c) * scale - 0.5;
  const v = Math.min(W - 1, Math.max(0, (plan.y * plan.size - plan.border + 0.5 + r) * scale - 0.5));
  const u0 = Math.floor(u);
  const v0 = Math.floor(v);
  const fx = u - u0;
  const fy = v - v0;
  const at = (gu: number, gv: number) => {
    const wu = ((gu % W) + W) % W;
    const wv = Math.min(W - 1, gv);
    return tiles.get(`${Math.floor(wu / T)}/${Math.floor(wv / T)}`)?.[(wv % T) * T + (wu % T)] ?? Number.NaN;
  };
  let sum = 0;
  let weights = 0;
  for (const [du, dv, w] of [[0, 0, (1 - fx) * (1 - fy)], [1, 0, fx * (1 - fy)], [0, 1, (1 - fx) * fy], [1, 1, fx * fy]] as const) {
    const value = at(u0 + du, v0 + dv);
    if (w > 0 && value === value) {
      sum += w * value;
      weights += w;
    }
  }
  return weights > 0 ? sum / weights : Number.NaN;
}

function check(plan: MosaicPlan, holes: 'none' | 'some' | 'missing-tile') {
  const T = plan.sourceSize;
  const wanted = tilesNeeded(plan);
  const tiles = new Map<string, Float32Array>();
  wanted.forEach((t, i) => {
    if (holes === 'missing-tile' && i === 0 && wanted.length > 1) return;
    tiles.set(`${t.x}/${t.y}`, tile(t.x, t.y, T, holes === 'some' ? (u, v) => (u * 7 + v * 3) % 11 === 0 : () => false));
  });
  const win = assembleWindow(plan, tiles);
  const side = plan.size + 2 * plan.border;
  if (!win) {
    // No window: no pixel of it has data (the missing tile was the only one under it).
    for (let r = 0; r < side; r++) for (let c = 0; c < side; c++) assert.ok(Number.isNaN(reference(plan, tiles, c, r)), `(${c}, ${r}) has data, yet no window`);
    return;
  }
  assert.equal(win.data.length, side * side);
  for (let r = 0; r < side; r++)
    for (let c = 0; c < side; c++) {
      const want = reference(plan, tiles, c, r);
      const got = win.data[r * side + c];
      if (Number.isNaN(want)) assert.ok(Number.isNaN(got), `(${c}, ${r}) of ${JSON.stringify(plan)}: NaN expected, got ${got}`);
      else assert.ok(Math.abs(got - want) < 1e-3, `(${c}, ${r}) of ${JSON.stringify(plan)}, ${holes}: ${got} where ${want}`);
    }
}

test('at the archive level itself the window is an exact copy of the archive pixels, the border from the neighbours', () => {
  const plan: MosaicPlan = { z: 5, x: 10, y: 12, size: 16, border: 2, sourceZoom: 5, sourceSize: 16 };
  check(plan, 'none');
  const tiles = new Map(tilesNeeded(plan).map((t) => [`${t.x}/${t.y}`, tile(t.x, t.y, 16, () => false)] as const));
  const win = assembleWindow(plan, tiles)!;
  // Window pixel (2, 2) is the tile's own first pixel; (0, 0) lies in the tile up and to the left.
  assert.equal(win.data[2 * 20 + 2], tiles.get('10/12')![0]);
  assert.equal(win.data[0], tiles.get('9/11')![14 * 16 + 14]);
});

test('random plans: the same pixels as a sample-by-sample reading, overzoomed, at the edges of the world, with holes and missing tiles', () => {
  fc.assert(
    fc.property(
      fc.integer({ min: 0, max: 4 }),
      fc.integer({ min: 0, max: 3 }),
      fc.constantFrom(8, 16),
      fc.constantFrom(8, 16),
      fc.integer({ min: 0, max: 5 }),
      fc.constantFrom('none', 'some', 'missing-tile'),
      fc.integer({ min: 0, max: 2 ** 20 }),
      fc.integer({ min: 0, max: 2 ** 20 }),
      (sourceZoom, deeper, size, sourceSize, border, holes, rx, ry) => {
        const z = sourceZoom + deeper;
        const n = 2 ** z;
        // Tiles at the world's edges half the time: x = 0 and the last column wrap, y = 0 and the last row clamp.
        const edge = (k: number) => (k % 4 === 0 ? 0 : k % 4 === 1 ? n - 1 : k % n);
        const plan: MosaicPlan = { z, x: edge(rx), y: edge(ry), size, border, sourceZoom, sourceSize };
        check(plan, holes as 'none' | 'some' | 'missing-tile');
      },
    ),
    { numRuns: 200 },
  );
});

test('a window over tiles none of which has data is no window', () => {
  const plan: MosaicPlan = { z: 3, x: 2, y: 2, size: 8, border: 1, sourceZoom: 3, sourceSize: 8 };
  assert.equal(assembleWindow(plan, new Map()), undefined);
  const empty = new Map(tilesNeeded(plan).map((t) => [`${t.x}/${t.y}`, new Float32Array(64).fill(Number.NaN)] as const));
  assert.equal(assembleWindow(plan, empty), undefined);
});

test('the WebAssembly resampler gives the JavaScript samples to the bit', () => {
  assert.ok(gridKernels(), 'dist/terrain-kernels.wasm loads');
  fc.assert(
    fc.property(
      fc.integer({ min: 2, max: 40 }),
      fc.integer({ min: 2, max: 40 }),
      fc.integer({ min: 1, max: 70 }),
      fc.integer({ min: 1, max: 70 }),
      fc.double({ min: -3, max: 3, noNaN: true }),
      fc.double({ min: 0.05, max: 3, noNaN: true }),
      fc.integer({ min: 0, max: 1e6 }),
      (width, height, w, h, start, step, seed) => {
        const grid = Float32Array.from({ length: width * height }, (_, i) => Math.fround(1000 * Math.sin(seed + i * 0.731) + (i % 7)));
        const cols = Float64Array.from({ length: w }, (_, i) => start + i * step);
        const rows = Float64Array.from({ length: h }, (_, i) => start * 0.7 + i * step * 1.1);
        const fast = sampleGrid({ grid, width, height, cols, rows, holes: false }).data;
        const reference = sampleGrid({ grid, width, height, cols, rows, holes: false }, { kernels: 'javascript' }).data;
        assert.deepEqual(fast, reference);
      },
    ),
    { numRuns: 200 },
  );
});
