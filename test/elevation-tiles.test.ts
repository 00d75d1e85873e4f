// Points grouped by tile (src/terrain/tile-groups.ts): known tiles and pixel positions, the world's edges, and
// properties over random points, checked against Web Mercator written here the textbook way (y from
// asinh(tan φ)) rather than through the module's projection.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from './helpers/fast-check.js';
import { FormCounter } from './helpers/forms.js';
import { groupByTile, tileKey } from '../src/terrain/tile-groups.js';
import { MERCATOR_MAX_LAT } from '../src/terrain/elevation-request.js';
import type { LonLat } from '../src/terrain/profile.js';

fc.configureGlobal({ ...fc.readConfigureGlobal(), includeErrorInReport: true });

/** World pixel position at zoom z (tiles of `size`): x from the longitude, y = (1 - asinh(tan φ) / π) / 2. */
function worldPixel(lon: number, lat: number, z: number, size: number): [number, number] {
  const world = 2 ** z * size;
  const y = (1 - Math.asinh(Math.tan((lat * Math.PI) / 180)) / Math.PI) / 2;
  return [((lon + 180) / 360) * world, y * world];
}

const near = (actual: number, expected: number, tolerance: number, what: string) =>
  assert.ok(Math.abs(actual - expected) <= tolerance, `${what}: ${actual}, expected ${expected} ± ${tolerance}`);

describe('groupByTile (known answers)', () => {
  test('lon 0, lat 0 at z1 with 512-pixel tiles is the top-left corner of tile 1/1/1: pixel (0, 0)', () => {
    const groups = groupByTile([[0, 0]], 1, 512);
    assert.deepEqual([...groups], [['1/1/1', { z: 1, x: 1, y: 1, items: [{ index: 0, px: 0, py: 0 }] }]]);
  });

  test('lon 45, lat 45 at z1 (512 px) is in tile 1/1/0 at x 128 and y (1 - ln(1 + √2)/π) · 512 = 368.358', () => {
    const [g] = groupByTile([[45, 45]], 1, 512).values();
    assert.deepEqual([g.z, g.x, g.y, g.items[0].index, g.items[0].px], [1, 1, 0, 0, 128]);
    near(g.items[0].py, (1 - Math.log(1 + Math.SQRT2) / Math.PI) * 512, 1e-9, 'py');
    near(g.items[0].py, 368.358, 0.001, 'py');
  });

  test('San Francisco (-122.4194, 37.7749) at z12 with 256-pixel tiles is in tile 12/655/1583 at (35.65, 48.58)', () => {
    const [g] = groupByTile([[-122.4194, 37.7749]], 12, 256).values();
    assert.deepEqual([g.z, g.x, g.y], [12, 655, 1583]);
    const [wx, wy] = worldPixel(-122.4194, 37.7749, 12, 256);
    near(g.items[0].px, wx - 655 * 256, 1e-6, 'px');
    near(g.items[0].py, wy - 1583 * 256, 1e-6, 'py');
    near(g.items[0].px, 35.65, 0.005, 'px');
    near(g.items[0].py, 48.58, 0.005, 'py');
  });

  test('lon 180 and the southern latitude limit land in the last tile, at its right and bottom edges, not outside', () => {
    for (const z of [0, 1, 5, 14]) {
      const n = 2 ** z;
      const groups = [...groupByTile([[180, -MERCATOR_MAX_LAT], [180, 0], [-180, MERCATOR_MAX_LAT]], z, 512).values()];
      const se = groups.find((g) => g.items.some((i) => i.index === 0))!;
      assert.deepEqual([se.x, se.y], [n - 1, n - 1], `z${z}: the south-east corner`);
      const item = se.items.find((i) => i.index === 0)!;
      assert.equal(item.px, 512);
      near(item.py, 512, 1e-6, `z${z}: py at the southern limit`);
      const east = groups.find((g) => g.items.some((i) => i.index === 1))!;
      assert.deepEqual([east.x, east.items.find((i) => i.index === 1)!.px], [n - 1, 512], `z${z}: lon 180 on the equator`);
      const nw = groups.find((g) => g.items.some((i) => i.index === 2))!;
      assert.deepEqual([nw.x, nw.y], [0, 0], `z${z}: the north-west corner`);
      const corner = nw.items.find((i) => i.index === 2)!;
      assert.equal(corner.px, 0);
      assert.ok(corner.py >= 0 && corner.py < 1e-6, `z${z}: py ${corner.py} at the northern limit`);
    }
  });

  test('latitudes beyond the limit are read at the limit: the same tile and pixel row', () => {
    const groups = groupByTile([[10, 89.9], [10, MERCATOR_MAX_LAT], [10, -90], [10, -MERCATOR_MAX_LAT]], 3, 256);
    const items = [...groups.values()].flatMap((g) => g.items.map((i) => ({ key: tileKey(g.z, g.x, g.y), ...i })));
    const at = (index: number) => items.find((i) => i.index === index)!;
    assert.deepEqual([at(0).key, at(0).py], [at(1).key, at(1).py]);
    assert.deepEqual([at(2).key, at(2).py], [at(3).key, at(3).py]);
  });

  test('points in one tile share its group in the order given; tiles come in the order of their first point', () => {
    const groups = groupByTile([[10, 10], [-10, 10], [10.01, 10.01], [-10.01, 10]], 4, 256);
    assert.deepEqual([...groups.keys()], ['4/8/7', '4/7/7']);
    assert.deepEqual(groups.get('4/8/7')!.items.map((i) => i.index), [0, 2]);
    assert.deepEqual(groups.get('4/7/7')!.items.map((i) => i.index), [1, 3]);
    assert.equal(groupByTile([], 4, 256).size, 0);
  });
});

describe('groupByTile (properties)', () => {
  const lon = fc.oneof(fc.double({ min: -180, max: 180, noNaN: true }), fc.constantFrom(-180, 180, 0));
  const lat = fc.oneof(fc.double({ min: -MERCATOR_MAX_LAT, max: MERCATOR_MAX_LAT, noNaN: true }), fc.constantFrom(-MERCATOR_MAX_LAT, MERCATOR_MAX_LAT, 0));
  const points = fc.array(fc.tuple(lon, lat) as fc.Arbitrary<LonLat>, { maxLength: 50 });

  test('every point once, in a tile of the world, at a pixel inside it that projects back to the point', () => {
    const forms = new FormCounter();
    fc.assert(
      fc.property(points, fc.integer({ min: 0, max: 20 }), fc.constantFrom(256, 512), (pts, z, size) => {
        const n = 2 ** z;
        const groups = groupByTile(pts, z, size);
        const seen: number[] = [];
        for (const [key, g] of groups) {
          assert.equal(key, `${g.z}/${g.x}/${g.y}`);
          assert.equal(g.z, z);
          assert.ok(Number.isInteger(g.x) && g.x >= 0 && g.x < n && Number.isInteger(g.y) && g.y >= 0 && g.y < n, key);
          assert.ok(g.items.length > 0);
          for (const item of g.items) {
            seen.push(item.index);
            assert.ok(item.px >= 0 && item.px <= size && item.py >= 0 && item.py <= size, `${key}: (${item.px}, ${item.py})`);
            const [plon, plat] = pts[item.index];
            const [wx, wy] = worldPixel(plon, plat, z, size);
            forms.hit(item.px === size || item.py >= size - 1e-6 ? 'east-or-south-edge' : 'inside');
            // Positions in the world's pixels at z20 reach 2.7e8: compare to a part in 1e13 of that.
            near(g.x * size + item.px, wx, 1e-5, `x of point ${item.index}`);
            near(g.y * size + item.py, wy, 1e-5, `y of point ${item.index}`);
          }
        }
        assert.deepEqual(seen.sort((a, b) => a - b), pts.map((_, i) => i));
      }),
      { numRuns: 500 },
    );
    forms.assertEach(['inside', 'east-or-south-edge'], 20);
  });
});
