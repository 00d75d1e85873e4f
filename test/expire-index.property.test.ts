// The expiry index against a plain reading of what an expiry means: a tile is stale when an expired tile's area
// meets its own (one is inside the other), at the latest such expiry's time; tiles outside a batch's zoom band keep
// theirs. Also the batch encoding and the coarsening bound.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from 'fast-check';
import { AreaTimes, unique } from '../src/expire/area-times.js';
import { decodeBatch, encodeBatch, type ExpiryBatch } from '../src/expire/batch.js';
import { Expiries } from '../src/expire/expiries.js';
import { keyTile, tileKey } from '../src/expire/tile-key.js';

type Tile = [number, number, number];

const tileArb = (maxZoom: number) =>
  fc.integer({ min: 0, max: maxZoom }).chain((z) => fc.tuple(fc.constant(z), fc.integer({ min: 0, max: 2 ** z - 1 }), fc.integer({ min: 0, max: 2 ** z - 1 })));

/** Whether the areas of two tiles meet beyond an edge: one contains the other. */
function overlaps([za, xa, ya]: Tile, [zb, xb, yb]: Tile): boolean {
  if (za <= zb) return Math.floor(xb / 2 ** (zb - za)) === xa && Math.floor(yb / 2 ** (zb - za)) === ya;
  return overlaps([zb, xb, yb], [za, xa, ya]);
}

const keysOf = (tiles: Tile[]) => unique(Float64Array.from(tiles.map(([z, x, y]) => tileKey(z, x, y))).sort());

test('tile keys name each tile once and read back', () => {
  fc.assert(
    fc.property(tileArb(24), ([z, x, y]) => {
      assert.deepEqual(keyTile(tileKey(z, x, y)), [z, x, y]);
    }),
  );
  assert.equal(tileKey(0, 0, 0), 0);
  assert.equal(tileKey(1, 0, 0), 1);
  assert.ok(Number.isSafeInteger(tileKey(24, 2 ** 24 - 1, 2 ** 24 - 1)));
});

test('a tile is stale at the time of the last expiry whose area meets its own', () => {
  fc.assert(
    fc.property(fc.array(fc.array(tileArb(8), { maxLength: 12 }), { minLength: 1, maxLength: 4 }), fc.array(tileArb(10), { minLength: 1, maxLength: 20 }), (batches, probes) => {
      const index = new AreaTimes();
      batches.forEach((tiles, i) => index.add(keysOf(tiles), 1000 + i));
      for (const p of probes) {
        let want = 0;
        batches.forEach((tiles, i) => {
          if (tiles.some((t) => overlaps(t, p))) want = 1000 + i;
        });
        assert.equal(index.expiredAt(...p), want, `tile ${p.join('/')}`);
      }
    }),
    { numRuns: 300 },
  );
});

test('batches arriving out of order keep the later time; a repeated batch id is applied once', () => {
  const e = new Expiries();
  const batch = (id: string, at: number): ExpiryBatch => ({ id, at, sources: ['a'], tiles: keysOf([[3, 1, 1]]), band: { min: 0, max: Infinity }, input: 'list' });
  assert.equal(e.apply(batch('x', 2000)), true);
  assert.equal(e.apply(batch('y', 1000)), true);
  assert.equal(e.apply(batch('x', 5000)), false);
  assert.equal(e.expiredAt(['a'], 3, 1, 1), 2000);
  assert.equal(e.expiredAt(['a', 'b'], 10, 128, 128), 2000);
  assert.equal(e.expiredAt(['b'], 3, 1, 1), 0);
  assert.equal(e.isStale(['a'], 3, 1, 1, 2000), true, 'made in the same millisecond as the expiry: stale');
  assert.equal(e.isStale(['a'], 3, 1, 1, 2001), false);
});

test('a zoom band limits the zooms an expiry reaches', () => {
  const e = new Expiries();
  e.apply({ id: 'b', at: 7, sources: ['a'], tiles: keysOf([[10, 5, 5]]), band: { min: 8, max: 12 }, input: 'list' });
  assert.equal(e.expiredAt(['a'], 8, 1, 1), 7);
  assert.equal(e.expiredAt(['a'], 12, 21, 22), 7);
  assert.equal(e.expiredAt(['a'], 7, 0, 0), 0);
  assert.equal(e.expiredAt(['a'], 13, 42, 44), 0);
});

test('coarsening bounds the entries and never makes a stale tile fresh', () => {
  fc.assert(
    fc.property(fc.array(tileArb(9), { minLength: 1, maxLength: 60 }), fc.array(tileArb(11), { maxLength: 30 }), (tiles, probes) => {
      const exact = new AreaTimes();
      const bounded = new AreaTimes();
      exact.add(keysOf(tiles), 50);
      bounded.add(keysOf(tiles), 50);
      bounded.coarsen(20);
      assert.ok(bounded.size <= 20 || bounded.size <= exact.size);
      for (const p of [...probes, ...tiles]) if (exact.expiredAt(...p)) assert.equal(bounded.expiredAt(...p), 50);
    }),
    { numRuns: 200 },
  );
});

test('a batch survives its encoding', () => {
  fc.assert(
    fc.property(fc.array(tileArb(24), { maxLength: 50 }), fc.string(), fc.nat(), (tiles, id, at) => {
      const b: ExpiryBatch = { id, at, sources: ['s1', 'ß'], tiles: keysOf(tiles), band: { min: 2, max: Infinity }, input: 'notify', lines: tiles.length, marked: tiles.length + 1 };
      const bytes = Buffer.concat([Buffer.from('xx'), encodeBatch(b)]);
      const { batch, bytes: n } = decodeBatch(bytes, 2);
      assert.equal(n, bytes.length - 2);
      assert.deepEqual({ ...batch, tiles: [...batch.tiles] }, { ...b, tiles: [...b.tiles] });
    }),
  );
  assert.throws(() => decodeBatch(encodeBatch({ id: 'a', at: 1, sources: [], tiles: keysOf([[1, 0, 0]]), band: { min: 0, max: 3 }, input: 'list' }).subarray(0, 20)));
});

test('a million scattered tiles at zoom 14 are recorded in bounded memory', () => {
  const keys = new Float64Array(1_000_000);
  let seed = 1;
  const rand = () => ((seed = (seed * 48271) % 2147483647) / 2147483647);
  for (let i = 0; i < keys.length; i++) keys[i] = tileKey(14, Math.floor(rand() * 2 ** 14), Math.floor(rand() * 2 ** 14));
  keys.sort();
  const index = new AreaTimes();
  index.add(unique(keys), 1);
  // 16 bytes a tile, ancestors included (scattered tiles have about as many ancestors per zoom down to zoom 10).
  assert.ok(index.size < 6_000_000, `${index.size} entries`);
  assert.equal(index.expiredAt(...(keyTile(keys[500]) as Tile)), 1);
});
