// The question a renderer page asks after an expiry ("which of the source tiles I hold did an expiry reach since
// my last frame?", src/render/expired-source-tiles.ts): any text is answered without throwing (a malformed
// question is a 400), and the answer names exactly the tiles whose area an expiry at or after `since` touched, as
// the expiry index says, for the source the tile template names, a terrain product's 3x3 neighbourhood, and the
// style's sources when the template names none of ours.
import assert from 'node:assert/strict';
import { afterEach, test } from 'node:test';
import fc from './helpers/fast-check.js';
import { expiries } from '../src/expire/expiries.js';
import { tileKey } from '../src/expire/tile-key.js';
import { unique } from '../src/expire/area-times.js';
import { expiredTiles, withExpiredTiles, type ExpiredTilesQuestion } from '../src/render/expired-source-tiles.js';
import { EXPIRED_TILES_PATH } from '../src/render/resources.js';
import type { AppState } from '../src/state/app-state.js';
import type { LoadedStyle } from '../src/styles/loaded-style.js';

type Tile = [number, number, number];

/** The parts of a state the answer reads: the styles (for their sources), the named composites and sources (none), no database. */
function stateWith(styleSources: Record<string, string>): AppState {
  const style = { id: 'map', style: { version: 8, sources: Object.fromEntries(Object.entries(styleSources).map(([k, id]) => [k, { type: 'vector', url: `source://${id}` }])), layers: [] } } as unknown as LoadedStyle;
  return { styles: new Map([['map', style]]), composites: new Map(), sources: new Map(), config: {} } as unknown as AppState;
}

const tileArb = (maxZoom: number) =>
  fc.integer({ min: 0, max: maxZoom }).chain((z) => fc.tuple(fc.constant(z), fc.integer({ min: 0, max: 2 ** z - 1 }), fc.integer({ min: 0, max: 2 ** z - 1 })));

let batch = 0;
function expire(source: string, tiles: Tile[], at: number): void {
  const keys = unique(Float64Array.from(tiles.map(([z, x, y]) => tileKey(z, x, y))).sort());
  expiries.apply({ id: `t${++batch}`, at, sources: [source], tiles: keys, band: { min: 0, max: Infinity }, input: 'list' });
}

/** Whether two tiles' areas meet beyond an edge (one holds the other). */
function overlaps([za, xa, ya]: Tile, [zb, xb, yb]: Tile): boolean {
  if (za <= zb) return Math.floor(xb / 2 ** (zb - za)) === xa && Math.floor(yb / 2 ** (zb - za)) === ya;
  return overlaps([zb, xb, yb], [za, xa, ya]);
}

afterEach(() => expiries.reset());

test('any text asked is answered, never thrown: a malformed question is a 400', async () => {
  const fetch = withExpiredTiles(async () => ({ status: 599, contentType: undefined, body: new Uint8Array(0) }), () => stateWith({ v: 'roads' }));
  await fc.assert(
    fc.asyncProperty(fc.oneof(fc.string(), fc.json(), fc.constant('{"style":"map","since":0,"sources":[{"template":"x","tiles":[[1,2,0]]}]}')), async (text) => {
      const res = await fetch(`${EXPIRED_TILES_PATH}?${text}`, 'http://r');
      assert.ok(res.status === 200 || res.status === 400, `status ${res.status}`);
      if (res.status === 200) assert.ok(Array.isArray(JSON.parse(Buffer.from(res.body).toString()).stale));
    }),
  );
  // Every other path goes on to the app's fetcher.
  assert.equal((await fetch('/data/roads/0/0/0.pbf', 'http://r')).status, 599);
});

test('the answer names exactly the tiles an expiry at or after `since` reached, per source', () => {
  const state = stateWith({ v: 'roads' });
  fc.assert(
    fc.property(
      fc.array(fc.tuple(fc.constantFrom('roads', 'water'), fc.array(tileArb(8), { minLength: 1, maxLength: 4 })), { maxLength: 4 }),
      fc.array(tileArb(8), { minLength: 1, maxLength: 12 }),
      fc.integer({ min: 0, max: 5 }),
      (batches, held, sinceIndex) => {
        expiries.reset();
        // Batch i expires at time 1000 + i; `since` falls before, between or after them.
        batches.forEach(([source, tiles], i) => expire(source, tiles, 1000 + i));
        const since = sinceIndex === 0 ? 0 : 999 + sinceIndex;
        const q: ExpiredTilesQuestion = {
          style: 'map',
          since,
          sources: [
            { template: 'http://127.0.0.1:9/t/r/k/data/roads/{z}/{x}/{y}.pbf', tiles: held },
            { template: 'http://127.0.0.1:9/t/r/k/data/water/{z}/{x}/{y}.pbf', tiles: held },
            // Names no source of ours: checked against the style's (roads).
            { template: 'https://example.com/{z}/{x}/{y}.pbf', tiles: held },
          ],
        };
        const want = (source: string) =>
          held.flatMap((t, i) => (batches.some(([s, tiles], b) => s === source && 1000 + b >= Math.max(1, since) && tiles.some((e) => overlaps(e, t))) ? [i] : []));
        assert.deepEqual(expiredTiles(state, q).stale, [want('roads'), want('water'), want('roads')]);
      },
    ),
  );
});

test("a terrain product's tiles are reached by an expiry of a neighbour across their edge", () => {
  const state = stateWith({});
  expire('dem', [[4, 5, 5]], 2000);
  const template = 'http://127.0.0.1:9/t/r/k/data/dem/hillshade/{z}/{x}/{y}.png';
  const held: Tile[] = [[4, 6, 5], [4, 4, 4], [4, 7, 5], [4, 5, 7]];
  assert.deepEqual(expiredTiles(state, { style: 'map', since: 1, sources: [{ template, tiles: held }] }).stale, [[0, 1]]);
  // The elevation tiles themselves read no neighbours.
  const dem = 'http://127.0.0.1:9/t/r/k/data/dem/{z}/{x}/{y}.png';
  assert.deepEqual(expiredTiles(state, { style: 'map', since: 1, sources: [{ template: dem, tiles: [...held, [4, 5, 5]] }] }).stale, [[4]]);
});
