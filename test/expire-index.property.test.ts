// The expiry index against a plain reading of what an expiry means: a tile is stale when an expired tile's area
// meets its own (one is inside the other), at the latest such expiry's time; tiles outside a batch's zoom band keep
// theirs. Also the batch encoding and the coarsening bound. The index holds only the expired tiles and reads a
// tile's expired descendants as key ranges (src/expire/key-times.ts): the larger cases below mix many expiry
// times, fill its small level past its bound and reach over many of its blocks.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from './helpers/fast-check.js';
import { AreaTimes, unique } from '../src/expire/area-times.js';
import { decodeBatch, encodeBatch, type ExpiryBatch } from '../src/expire/batch.js';
import { PartAssembler, splitParts } from '../src/expire/parts.js';
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

test('a batch cut into parts of any size is put together again, keys written in place as parts arrive', () => {
  fc.assert(
    fc.property(fc.array(tileArb(20), { maxLength: 80 }), fc.integer({ min: 1, max: 700 }), (tiles, size) => {
      const b: ExpiryBatch = { id: 'b', at: 5, sources: ['s'], tiles: keysOf(tiles), band: { min: 0, max: Infinity }, input: 'list', lines: tiles.length, marked: 3 };
      const parts = splitParts(encodeBatch(b), size);
      const assembler = new PartAssembler();
      let out: ExpiryBatch | undefined;
      parts.forEach((data, part) => {
        const got = assembler.add({ id: 'b', part, parts: parts.length, data });
        assert.equal(got !== undefined, part === parts.length - 1, `a batch only once its last part is in (part ${part})`);
        out = got ?? out;
      });
      assert.deepEqual({ ...out!, tiles: [...out!.tiles] }, { ...b, tiles: [...b.tiles] });
      // A part missing drops the batch: nothing comes out of the rest.
      if (parts.length > 2) {
        const gappy = new PartAssembler();
        const results = parts.filter((_, i) => i !== 1).map((data, i) => gappy.add({ id: 'g', part: i === 0 ? 0 : i + 1, parts: parts.length, data }));
        assert.ok(results.every((r) => r === undefined));
      }
    }),
  );
});

test('a million scattered tiles at zoom 14 are recorded in bounded memory', () => {
  const keys = new Float64Array(1_000_000);
  let seed = 1;
  const rand = () => ((seed = (seed * 48271) % 2147483647) / 2147483647);
  for (let i = 0; i < keys.length; i++) keys[i] = tileKey(14, Math.floor(rand() * 2 ** 14), Math.floor(rand() * 2 ** 14));
  keys.sort();
  const tiles = unique(keys);
  const index = new AreaTimes();
  index.add(tiles, 1);
  // The expired tiles only (their ancestors are found through them), about 12 bytes each.
  assert.equal(index.size, tiles.length);
  assert.ok(index.bytes < 12.5 * tiles.length, `${index.bytes} bytes for ${tiles.length} tiles`);
  assert.equal(index.expiredAt(...(keyTile(tiles[500]) as Tile)), 1);
  assert.equal(index.expiredAt(0, 0, 0), 1);
});

/** Brute force: the latest time of the expired tiles (key -> time) whose area meets `probe`'s. */
function modelAt(expired: Map<number, number>, probe: Tile): number {
  let want = 0;
  for (const [k, t] of expired) if (t > want && overlaps(keyTile(k) as Tile, probe)) want = t;
  return want;
}

/** Batches as (tiles, time) pairs applied to an index and to the model (a key keeps its latest time). */
function applyAll(batches: { tiles: Tile[]; at: number }[]): { index: AreaTimes; expired: Map<number, number> } {
  const index = new AreaTimes();
  const expired = new Map<number, number>();
  for (const { tiles, at } of batches) {
    const keys = keysOf(tiles);
    index.add(keys, at);
    for (const k of keys) expired.set(k, Math.max(expired.get(k) ?? 0, at));
  }
  return { index, expired };
}

const timedBatches = (maxZoom: number, maxTiles: number, maxBatches: number) =>
  fc.array(fc.record({ tiles: fc.array(tileArb(maxZoom), { minLength: 1, maxLength: maxTiles }), at: fc.integer({ min: 1, max: 40 }) }), { minLength: 1, maxLength: maxBatches });

test('batches of mixed zooms at mixed times, in any order: each tile gets the latest time whose area meets its own', () => {
  fc.assert(
    fc.property(timedBatches(12, 40, 12), fc.array(tileArb(14), { minLength: 1, maxLength: 40 }), (batches, probes) => {
      const { index, expired } = applyAll(batches);
      for (const p of [...probes, ...batches[0].tiles]) assert.equal(index.expiredAt(...p), modelAt(expired, p), `tile ${p.join('/')}`);
    }),
    { numRuns: 300 },
  );
});

test('large batches (past the small level, over many blocks) at mixed times answer as the model does', () => {
  fc.assert(
    fc.property(fc.integer({ min: 1, max: 2 ** 31 - 1 }), (seed) => {
      let s = seed;
      const rand = () => ((s = (s * 48271) % 2147483647) / 2147483647);
      const tile = (z: number): Tile => [z, Math.floor(rand() * 2 ** z), Math.floor(rand() * 2 ** z)];
      // Dense at zooms 9 and 10 (whole blocks of neighbours), sparse elsewhere; one batch beyond the small level.
      const batches: { tiles: Tile[]; at: number }[] = [];
      for (let b = 0; b < 14; b++) {
        const n = b === 3 ? 40_000 : Math.floor(rand() * 3_000);
        batches.push({ tiles: Array.from({ length: n }, () => tile(b % 3 === 0 ? 10 : b % 3 === 1 ? 9 : Math.floor(rand() * 13))), at: 1 + Math.floor(rand() * 1_000) });
      }
      const { index, expired } = applyAll(batches);
      // A key may stand in both levels until they merge: never fewer entries than tiles.
      assert.ok(index.size >= expired.size, `${index.size} entries for ${expired.size} tiles`);
      const probes = [...Array.from({ length: 40 }, () => tile(Math.floor(rand() * 14))), ...Array.from({ length: 10 }, () => tile(Math.floor(rand() * 5)))];
      for (const p of probes) assert.equal(index.expiredAt(...p), modelAt(expired, p), `tile ${p.join('/')}`);
    }),
    { numRuns: 4 },
  );
});

test('coarsening at mixed times: more tiles stale, none at an earlier time, the bound kept', () => {
  fc.assert(
    fc.property(timedBatches(10, 30, 6), fc.integer({ min: 1, max: 60 }), fc.array(tileArb(12), { maxLength: 30 }), (batches, bound, probes) => {
      const { index: exact } = applyAll(batches);
      const { index: bounded } = applyAll(batches);
      bounded.coarsen(bound);
      assert.ok(bounded.size <= Math.max(bound, 1), `${bounded.size} entries, bound ${bound}`);
      for (const p of [...probes, ...batches.flatMap((b) => b.tiles)]) assert.ok(bounded.expiredAt(...p) >= exact.expiredAt(...p), `tile ${p.join('/')}`);
    }),
    { numRuns: 300 },
  );
});

test("an index rebuilt from its snapshot (the journal's compaction) answers as the index did, coarsened or not", () => {
  fc.assert(
    fc.property(timedBatches(11, 30, 8), fc.boolean(), fc.array(tileArb(13), { minLength: 1, maxLength: 30 }), (batches, coarse, probes) => {
      const e = new Expiries();
      e.maxTiles = coarse ? 25 : 4_000_000;
      batches.forEach(({ tiles, at }, i) => e.apply({ id: `b${i}`, at, sources: ['s'], tiles: keysOf(tiles), band: { min: 0, max: Infinity }, input: 'list' }));
      const rebuilt = new Expiries();
      let n = 0;
      for (const { source, band, keys, times } of e.snapshot()) {
        const byTime = new Map<number, number[]>();
        keys.forEach((k, i) => byTime.set(times[i], [...(byTime.get(times[i]) ?? []), k]));
        for (const [at, list] of byTime) rebuilt.apply({ id: `r${++n}`, at, sources: [source], tiles: Float64Array.from(list), band, input: 'list' });
      }
      for (const p of probes) assert.equal(rebuilt.expiredAt(['s'], ...p), e.expiredAt(['s'], ...p), `tile ${p.join('/')}`);
    }),
    { numRuns: 200 },
  );
});

test('a late tile among a large level of earlier ones is found from any tile around it (the block maxima)', () => {
  // 65,536 tiles of zoom 10 expired at 1 (one large level), then one batch, large too, at 5: 40 tiles among them
  // and 33,000 of zoom 12 far away (under 1/1/1), so that the ranges asked hold one late entry among thousands.
  const early: Tile[] = [];
  for (let x = 0; x < 256; x++) for (let y = 0; y < 256; y++) early.push([10, x, y]);
  let s = 7;
  const rand = () => ((s = (s * 48271) % 2147483647) / 2147483647);
  const late: Tile[] = Array.from({ length: 40 }, () => [10, Math.floor(rand() * 256), Math.floor(rand() * 256)]);
  const far: Tile[] = Array.from({ length: 33_000 }, (_, i) => [12, 2048 + (i % 2048), 2048 + Math.floor(i / 2048)]);
  const index = new AreaTimes();
  index.add(keysOf(early), 1);
  index.add(keysOf([...late, ...far]), 5);
  let checked = 0;
  for (let z = 2; z <= 12; z++) {
    const n = 2 ** (z - 2);
    for (let i = 0; i < 60; i++) {
      const p: Tile = [z, Math.floor(rand() * n), Math.floor(rand() * n)];
      const want = late.some((t) => overlaps(t, p)) ? 5 : 1;
      assert.equal(index.expiredAt(...p), want, `tile ${p.join('/')}`);
      checked += want === 5 ? 1 : 0;
    }
  }
  assert.ok(checked > 50, `${checked} probes met a late tile`);
});
