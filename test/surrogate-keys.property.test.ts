// The edge's surrogate keys (src/expire/surrogate-keys.ts) against a plain reading of what a purge must do: an
// answer whose area meets a changed tile (one inside the other), or whose neighbourhood does for products that read
// their neighbours, shares a key with the batch's purge, at any key budget; the purge never names more keys than
// the budget; an answer of another source, or one at a zoom the batch does not reach and far from it, is not
// named by its `tile:` key. Checked with fast-check over batches clustered around answers (random tiles would
// hardly ever meet).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from './helpers/fast-check.js';
import { unique } from '../src/expire/area-times.js';
import { answerKeys, purgeKeys } from '../src/expire/surrogate-keys.js';
import { keyChunks } from '../src/expire/edge-purge.js';
import { tileKey } from '../src/expire/tile-key.js';

type Tile = [number, number, number];

function overlaps([za, xa, ya]: Tile, [zb, xb, yb]: Tile): boolean {
  if (za <= zb) return Math.floor(xb / 2 ** (zb - za)) === xa && Math.floor(yb / 2 ** (zb - za)) === ya;
  return overlaps([zb, xb, yb], [za, xa, ya]);
}

/** The tile and its 3x3 neighbours (x wraps, y stops at the poles), as answerKeys reads them. */
function neighbourhood([z, x, y]: Tile): Tile[] {
  const n = 2 ** z;
  const out: Tile[] = [];
  for (let dy = -1; dy <= 1; dy++) for (let dx = -1; dx <= 1; dx++) if (y + dy >= 0 && y + dy < n) out.push([z, (x + dx + n) % n, y + dy]);
  return out;
}

const tileAt = (z: number) => fc.tuple(fc.constant(z), fc.integer({ min: 0, max: 2 ** z - 1 }), fc.integer({ min: 0, max: 2 ** z - 1 }));
const tileArb = fc.integer({ min: 0, max: 20 }).chain(tileAt);

/** A tile moved `dz` zooms (up to an ancestor, or down to a descendant picked by `pick`) and `dx` columns over. */
function related([z, x, y]: Tile, dz: number, pick: number, dx: number): Tile {
  const nz = Math.max(0, Math.min(22, z + dz));
  let nx: number;
  let ny: number;
  if (nz <= z) {
    nx = Math.floor(x / 2 ** (z - nz));
    ny = Math.floor(y / 2 ** (z - nz));
  } else {
    const k = 2 ** (nz - z);
    nx = x * k + (pick % k);
    ny = y * k + (Math.floor(pick / k) % k);
  }
  const n = 2 ** nz;
  return [nz, (((nx + dx) % n) + n) % n, ny];
}

/** A changed tile: related to the answer (a zoom shift, which descendant, a column shift), or anywhere. */
type Change = { related: [dz: number, pick: number, dx: number] } | { tile: Tile };

const changeArb: fc.Arbitrary<Change> = fc.oneof(
  fc.tuple(fc.integer({ min: -3, max: 6 }), fc.nat(4096), fc.integer({ min: -2, max: 2 })).map((related) => ({ related })),
  tileArb.map((tile) => ({ tile: tile as Tile })),
);

const batchArb = fc.record({
  answer: tileArb.map((t) => t as Tile),
  neighbours: fc.boolean(),
  changes: fc.array(changeArb, { minLength: 1, maxLength: 300 }),
  maxKeys: fc.oneof(fc.integer({ min: 16, max: 64 }), fc.constant(4096)),
});

test('an answer meeting a changed tile shares a key with the purge, whatever the budget; the budget holds', () => {
  let met = 0;
  let missed = 0;
  fc.assert(
    fc.property(batchArb, ({ answer, neighbours, changes, maxKeys }) => {
      const tiles: Tile[] = changes.map((c) => ('related' in c ? related(answer, ...c.related) : c.tile));
      const sorted = unique(Float64Array.from(tiles.map(([z, x, y]) => tileKey(z, x, y))).sort());
      const purge = purgeKeys('s', sorted, undefined, maxKeys);
      assert.ok(purge.length <= maxKeys, `${purge.length} keys over a budget of ${maxKeys}`);
      const keys = new Set(answerKeys(['s'], ...answer, neighbours).split(' '));
      const reads = neighbours ? neighbourhood(answer) : [answer];
      const meets = tiles.some((t) => reads.some((r) => overlaps(r, t)));
      if (meets) {
        met++;
        assert.ok(purge.some((k) => keys.has(k)), `answer ${answer.join('/')} (neighbours: ${neighbours}) meets the batch but no key is shared`);
      } else if (!purge.some((k) => keys.has(k))) missed++;
      // Another source's answer is never purged by this source's keys.
      const other = new Set(answerKeys(['t'], ...answer, neighbours).split(' '));
      assert.ok(!purge.some((k) => other.has(k)));
    }),
    { numRuns: 3000 },
  );
  assert.ok(met >= 500, `only ${met} cases met the batch`);
  assert.ok(missed >= 100, `only ${missed} answers away from the batch were left alone: the purge is too coarse`);
});

test('an exact answer is purged by the keys of its own tile and not by those of a tile elsewhere at a small batch', () => {
  fc.assert(
    fc.property(tileArb, ([z, x, y]) => {
      const own = purgeKeys('s', Float64Array.of(tileKey(z, x, y)));
      const keys = new Set(answerKeys(['s'], z, x, y).split(' '));
      assert.ok(own.some((k) => keys.has(k)));
      if (z >= 1) {
        // A tile in the far half of the world shares no key with it (a one-tile batch is never coarsened).
        const n = 2 ** z;
        const far: Tile = [z, (x + n / 2) % n, y];
        const purge = purgeKeys('s', Float64Array.of(tileKey(...far)));
        assert.ok(!purge.some((k) => keys.has(k)), `${far.join('/')} purges ${z}/${x}/${y}`);
      }
    }),
  );
});

test('a million-tile batch is purged in at most the budget of keys, and the key of the whole world purges the source', () => {
  const tiles: number[] = [];
  for (let x = 0; x < 1000; x++) for (let y = 0; y < 1000; y++) tiles.push(tileKey(18, 130_000 + x, 90_000 + y));
  const sorted = Float64Array.from(tiles).sort();
  const purge = purgeKeys('s', sorted, undefined, 4096);
  assert.ok(purge.length <= 4096 && purge.length > 1, `${purge.length} keys`);
  assert.deepEqual(purgeKeys('s', Float64Array.of(0)), ['src:s']);
  assert.deepEqual(purgeKeys('s', new Float64Array(0)), []);
  // Each request's header stays under Varnish's 8 KB limit, and every key is sent once.
  const chunks = keyChunks(purge);
  assert.ok(chunks.every((c) => c.length <= 6000));
  assert.deepEqual(chunks.join(' ').split(' '), purge);
});
