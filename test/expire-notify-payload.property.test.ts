// The NOTIFY payload parser (src/expire/notify-payload.ts) on generated input: any text is answered (never a
// throw), `[postgres] expire_channel` takes lower-case identifiers only, a box marks every tile its points fall in at every zoom a source of the table serves (directly, or
// through a tile above or below it), within a bounded number of keys, and a tile list reads back exactly.
import { after, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ConfigError, loadConfigFile } from '../src/config/load.js';
import fc from './helpers/fast-check.js';
import type { Config } from '../src/config/schema.js';
import { MAX_BOX_TILES, parseNotify } from '../src/expire/notify-payload.js';
import { keyTile, tileKey } from '../src/expire/tile-key.js';

const config = {
  sources: [{ id: 'archive' }],
  composites: [],
  postgres: {
    tables: [
      { id: 'roads', schema: 'public', table: 'roads', maxzoom: 14 },
      { id: 'roads_low', schema: 'public', table: 'roads', maxzoom: 8 },
      { id: 'parks', schema: 'parks', table: 'areas', maxzoom: 22 },
    ],
    functions: [{ id: 'fn' }],
    outdb_rasters: [],
  },
} as unknown as Config;

const REASONS = new Set(['not_json', 'shape', 'bbox', 'unknown_table', 'unknown_source', 'tile']);

/** A point as fractions of the Web Mercator square (y down). */
function mercatorFraction(lon: number, lat: number): [number, number] {
  const phi = (Math.max(-85.0511, Math.min(85.0511, lat)) * Math.PI) / 180;
  return [(lon + 180) / 360, (1 - Math.log(Math.tan(phi) + 1 / Math.cos(phi)) / Math.PI) / 2];
}

/** The tile of zoom z holding a point. */
function tileAt(lon: number, lat: number, z: number): [number, number, number] {
  const n = 2 ** z;
  const [fx, fy] = mercatorFraction(lon, lat);
  return [z, Math.min(n - 1, Math.floor(fx * n)), Math.min(n - 1, Math.max(0, Math.floor(fy * n)))];
}

/** Whether one of two tiles holds the other. */
function nested([za, xa, ya]: number[], [zb, xb, yb]: number[]): boolean {
  if (za > zb) return nested([zb, xb, yb], [za, xa, ya]);
  return Math.floor(xb / 2 ** (zb - za)) === xa && Math.floor(yb / 2 ** (zb - za)) === ya;
}

test('any text is answered with an expiry or a named reason, never a throw', () => {
  const json = fc.oneof(
    fc.string(),
    fc.json(),
    fc.record({ table: fc.oneof(fc.constantFrom('public.roads', 'roads', 'parks.areas', 'nope'), fc.anything()), bbox: fc.anything() }).map((o) => JSON.stringify(o)),
    fc.record({ source: fc.oneof(fc.constantFrom('roads', 'archive', 'fn', 'nope'), fc.anything()), tiles: fc.anything() }).map((o) => JSON.stringify(o)),
  );
  let refused = 0;
  fc.assert(
    fc.property(json, (payload) => {
      const r = parseNotify(payload, config);
      if (r.ok) assert.ok(r.expiry.sources.length > 0);
      else {
        refused++;
        assert.ok(REASONS.has(r.reason), r.reason);
        assert.ok(r.detail.length > 0);
      }
    }),
    { numRuns: 3000 },
  );
  assert.ok(refused > 100, 'the generator reaches refusals');
});

test('a box marks, at every served zoom, the tile of each of its points, within a bounded number of keys', () => {
  const box = fc
    .tuple(fc.double({ min: -180, max: 180, noNaN: true }), fc.double({ min: -180, max: 180, noNaN: true }), fc.double({ min: -85, max: 85, noNaN: true }), fc.double({ min: -85, max: 85, noNaN: true }))
    .map(([a, b, c, d]) => [Math.min(a, b), Math.min(c, d), Math.max(a, b), Math.max(c, d)] as const);
  // Mostly small boxes (a few rows changed), some large ones.
  const small = fc
    .tuple(fc.double({ min: -179, max: 179, noNaN: true }), fc.double({ min: -84, max: 84, noNaN: true }), fc.double({ min: 0, max: 0.05, noNaN: true }), fc.double({ min: 0, max: 0.05, noNaN: true }))
    .map(([w, s, dw, ds]) => [w, s, w + dw, s + ds] as const);
  fc.assert(
    fc.property(fc.oneof(small, small, box), fc.double({ min: 0, max: 1, noNaN: true }), fc.double({ min: 0, max: 1, noNaN: true }), fc.double({ min: -0.2, max: 0.2, noNaN: true }), fc.double({ min: -0.2, max: 0.2, noNaN: true }), ([w, s, e, n], fx, fy, ox, oy) => {
      const r = parseNotify(JSON.stringify({ table: 'public.roads', bbox: [w, s, e, n] }), config);
      assert.ok(r.ok, JSON.stringify(r));
      assert.deepEqual(r.expiry.sources, ['roads', 'roads_low']);
      const tiles = r.expiry.keys.map(keyTile);
      // Deepest zoom of the table's sources is 14: no deeper mark, and at most MAX_BOX_TILES at the marked zoom
      // plus one per touched tile of each zoom above it.
      assert.ok(tiles.every(([z]) => z <= 14));
      assert.ok(r.expiry.keys.length <= MAX_BOX_TILES * 2);
      // The key 0 (the whole world) only for a box that fills it at zoom 1 already.
      if (tiles.some(([z]) => z === 0)) assert.ok(e - w > 90);
      const lon = w + (e - w) * fx;
      const lat = s + (n - s) * fy;
      for (let z = 0; z <= 14; z++) {
        const t = tileAt(lon, lat, z);
        assert.ok(tiles.some((k) => nested(k, t)), `tile ${t.join('/')} of point ${lon},${lat} in box ${[w, s, e, n]} is not reached`);
        // A point outside the box by less than the margin (a fifth of a tile of this zoom): its tile shows the
        // change in its buffer, so it is reached too.
        const size = 2 ** z;
        const [mx, my] = mercatorFraction(lon, lat);
        const near = [z, Math.max(0, Math.min(size - 1, Math.floor(mx * size + ox))), Math.max(0, Math.min(size - 1, Math.floor(my * size + oy)))];
        assert.ok(tiles.some((k) => nested(k, near)), `tile ${near.join('/')} near point ${lon},${lat} of box ${[w, s, e, n]} is not reached`);
      }
    }),
    { numRuns: 1500 },
  );
});

test('a box out of range, or reversed, is refused as bbox; an unknown table as unknown_table', () => {
  const bad = fc.oneof(
    fc.tuple(fc.double({ min: -1e6, max: -180.0001, noNaN: true }), fc.constant(0), fc.constant(1), fc.constant(1)),
    fc.tuple(fc.constant(0), fc.constant(0), fc.double({ min: 180.0001, max: 1e6, noNaN: true }), fc.constant(1)),
    fc.tuple(fc.constant(0), fc.double({ min: -1e6, max: -90.0001, noNaN: true }), fc.constant(1), fc.constant(1)),
    fc.tuple(fc.double({ min: 1, max: 180, noNaN: true }), fc.constant(0), fc.double({ min: -180, max: 0.999, noNaN: true }), fc.constant(1)),
    fc.tuple(fc.constant(0), fc.double({ min: 1, max: 90, noNaN: true }), fc.constant(1), fc.double({ min: -90, max: 0.999, noNaN: true })),
  );
  fc.assert(
    fc.property(bad, (bbox) => {
      const r = parseNotify(JSON.stringify({ table: 'public.roads', bbox }), config);
      assert.equal(r.ok ? 'ok' : r.reason, 'bbox');
    }),
  );
  // The whole world (what the trigger sends for a TRUNCATE) is one key, 0/0/0, not every tile of a zoom.
  const world = parseNotify('{"table": "public.roads", "bbox": [-180, -90, 180, 90]}', config);
  assert.deepEqual(world.ok && world.expiry.keys, [0]);
  const r = parseNotify('{"table": "public.nope", "bbox": [0, 0, 1, 1]}', config);
  assert.equal(r.ok ? 'ok' : r.reason, 'unknown_table');
  // NaN and Infinity are not JSON; a string where a number belongs is not a box.
  assert.equal((parseNotify('{"table": "roads", "bbox": [0, 0, "1", 1]}', config) as { reason: string }).reason, 'bbox');
  assert.equal((parseNotify('{"table": "roads", "bbox": [0, 0, 1]}', config) as { reason: string }).reason, 'bbox');
});

test('a tile list reads back as its keys; a tile outside its zoom refuses the whole payload', () => {
  const tile = fc.integer({ min: 0, max: 24 }).chain((z) => fc.tuple(fc.constant(z), fc.integer({ min: 0, max: 2 ** z - 1 }), fc.integer({ min: 0, max: 2 ** z - 1 })));
  fc.assert(
    fc.property(fc.array(tile, { minLength: 1, maxLength: 50 }), fc.constantFrom('roads', 'archive', 'fn'), (tiles, source) => {
      const r = parseNotify(JSON.stringify({ source, tiles: tiles.map((t) => t.join('/')) }), config);
      assert.ok(r.ok);
      assert.deepEqual(r.expiry, { sources: [source], keys: tiles.map(([z, x, y]) => tileKey(z, x, y)) });
    }),
  );
  fc.assert(
    fc.property(fc.array(tile, { maxLength: 10 }), fc.integer({ min: 0, max: 24 }), fc.nat(), (good, z, over) => {
      const bad = `${z}/${2 ** z + (over % 1000)}/0`;
      const r = parseNotify(JSON.stringify({ source: 'roads', tiles: [...good.map((t) => t.join('/')), bad] }), config);
      assert.equal(r.ok ? 'ok' : r.reason, 'tile');
    }),
  );
  assert.equal((parseNotify('{"source": "nope", "tiles": ["0/0/0"]}', config) as { reason: string }).reason, 'unknown_source');
  assert.equal((parseNotify('{"source": "roads", "tiles": []}', config) as { reason: string }).reason, 'shape');
  assert.equal((parseNotify('{"source": "roads", "tiles": ["1/0/0"], "extra": 1}', config) as { reason: string }).reason, 'shape');
  assert.equal((parseNotify('{"source": "roads", "tiles": ["1/-1/0"]}', config) as { reason: string }).reason, 'tile');
});

test('expire_channel loads a lower-case identifier and refuses anything else naming postgres.expire_channel', () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'tsts-channel-'));
  after(() => rmSync(dir, { recursive: true, force: true }));
  let n = 0;
  const load = (channel: string) => {
    const file = path.join(dir, `c${n++}.toml`);
    writeFileSync(file, `[postgres]\nconnection_string = "postgres://db/gis"\nexpire_channel = ${JSON.stringify(channel)}\n`);
    try {
      return { ok: true as const, channel: loadConfigFile(file, {}).config.postgres?.expire_channel };
    } catch (err) {
      if (!(err instanceof ConfigError)) throw err;
      return { ok: false as const, message: err.message };
    }
  };
  const head = fc.constantFrom(...'abcdefghijklmnopqrstuvwxyz_');
  const tail = fc.array(fc.constantFrom(...'abcdefghijklmnopqrstuvwxyz0123456789_'), { maxLength: 62 });
  fc.assert(
    fc.property(head, tail, (h, t) => {
      const channel = h + t.join('');
      assert.deepEqual(load(channel), { ok: true, channel });
    }),
    { numRuns: 200 },
  );
  const bad = fc.oneof(
    fc.constant(''),
    fc.string({ minLength: 64, maxLength: 80 }).map((s) => `a${s.replace(/[^a-z]/g, 'x')}`),
    fc.tuple(fc.constantFrom(...'0123456789ABCZ-. $"'), tail).map(([h, t]) => h + t.join('')),
    fc.tuple(head, fc.constantFrom('A', '-', ' ', '.', '$', 'é'), tail).map(([h, c, t]) => h + c + t.join('')),
  );
  fc.assert(
    fc.property(bad, (channel) => {
      const r = load(channel);
      assert.equal(r.ok, false, channel);
      if (!r.ok) assert.match(r.message, /postgres\.expire_channel/);
    }),
    { numRuns: 200 },
  );
});
