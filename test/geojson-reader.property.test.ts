// The GeoJSON reader of data-file sources (src/sources/files/geojson.ts) as a parser of user files: random feature
// collections, as one document or newline-delimited, read back as the same features (ids, properties with nested
// values as JSON text and mixed types as text, geometry) and are found by box exactly when their box meets it; any
// other text is refused with a SourceOpenError naming the source, never another exception.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import * as v from 'valibot';
import { StorageSchema } from '../src/config/schema.js';
import { openGeoJson } from '../src/sources/files/geojson.js';
import { SourceOpenError, type Bounds } from '../src/sources/source.js';
import fc from './helpers/fast-check.js';

const dir = mkdtempSync(path.join(os.tmpdir(), 'tsts-geojson-reader-'));
after(() => rmSync(dir, { recursive: true, force: true }));
const storage = v.parse(StorageSchema, {});
let n = 0;

async function read(text: string) {
  const file = path.join(dir, `f${n++}.geojson`);
  writeFileSync(file, text);
  return openGeoJson(file, { sourceId: 'src', storage });
}

const coord = fc.double({ min: -179, max: 179, noNaN: true });
const pos = fc.tuple(coord, fc.double({ min: -80, max: 80, noNaN: true }));
const geometry = fc.oneof(
  pos.map((c) => ({ type: 'Point', coordinates: c })),
  fc.array(pos, { minLength: 2, maxLength: 4 }).map((c) => ({ type: 'LineString', coordinates: c })),
  fc.array(pos, { minLength: 3, maxLength: 4 }).map((r) => ({ type: 'Polygon', coordinates: [[...r, r[0]]] })),
);
const value = fc.oneof(fc.string({ maxLength: 5 }), fc.integer(), fc.boolean(), fc.constant(null), fc.array(fc.integer(), { maxLength: 2 }));
const feature = fc.record({
  id: fc.option(fc.nat(), { freq: 4 }),
  geometry,
  properties: fc.dictionary(fc.constantFrom('a', 'b', 'c', '__proto__', 'name:latin'), value, { maxKeys: 3 }),
});

function boxOf(g: { coordinates: unknown }): Bounds {
  const pts = JSON.stringify(g.coordinates).match(/-?[\d.e+-]+,-?[\d.e+-]+/g)!.map((s) => s.split(',').map(Number));
  return [Math.min(...pts.map((p) => p[0])), Math.min(...pts.map((p) => p[1])), Math.max(...pts.map((p) => p[0])), Math.max(...pts.map((p) => p[1]))];
}

test('random feature collections (one document or newline-delimited) read back as the same features, found by box', async () => {
  await fc.assert(
    fc.asyncProperty(fc.array(feature, { minLength: 1, maxLength: 12 }), fc.boolean(), fc.tuple(coord, coord), async (fs, ndjson, [a, c]) => {
      const docs = fs.map((f) => ({ type: 'Feature', ...(f.id !== null ? { id: f.id } : {}), geometry: JSON.parse(JSON.stringify(f.geometry)) as unknown, properties: JSON.parse(JSON.stringify(f.properties)) as Record<string, unknown> }));
      const text = ndjson ? docs.map((x) => JSON.stringify(x)).join('\n') + '\n' : JSON.stringify({ type: 'FeatureCollection', features: docs });
      const reader = await read(text);
      const got: unknown[] = [];
      for await (const f of reader.features('src', undefined)) got.push(f);
      assert.equal(got.length, fs.length);
      const types = new Map<string, Set<string>>();
      for (const f of docs) for (const [k, x] of Object.entries(f.properties)) if (x !== null) (types.get(k) ?? types.set(k, new Set()).get(k)!).add(typeof (Array.isArray(x) ? '' : x));
      docs.forEach((f, i) => {
        const r = got[i] as { id?: number; geometry: unknown; properties: Record<string, unknown> };
        assert.equal(r.id, f.id);
        assert.deepEqual(r.geometry, f.geometry);
        for (const [k, x] of Object.entries(f.properties)) {
          // Null values are left out of the features (a tile leaves them out; a filter reads a missing value as null).
          const want = x === null ? undefined : Array.isArray(x) ? JSON.stringify(x) : (types.get(k)?.size ?? 0) > 1 ? String(x) : x;
          assert.deepEqual(Object.hasOwn(r.properties, k) ? r.properties[k] : undefined, want, `property ${k}`);
        }
      });
      // A band of longitudes: the search by box is the index's; whether boxes meet is simple to say for a band.
      const box: Bounds = [Math.min(a, c), -90, Math.max(a, c), 90];
      const found: unknown[] = [];
      for await (const f of reader.features('src', box)) found.push(f);
      const want = got.filter((f) => {
        const fb = boxOf((f as { geometry: { coordinates: unknown } }).geometry);
        return !(fb[0] > box[2] || fb[2] < box[0]);
      });
      assert.deepEqual(found, want, 'the box search finds exactly the features whose box meets it, in file order');
    }),
    { numRuns: 300 },
  );
});

test('any other text is refused with a SourceOpenError naming the source', async () => {
  const junk = fc.oneof(
    fc.string({ maxLength: 40 }),
    fc.json({ maxDepth: 3 }),
    fc.record({ type: fc.constantFrom('Feature', 'FeatureCollection'), geometry: fc.json({ maxDepth: 2 }), features: fc.json({ maxDepth: 2 }) }).map((o) => JSON.stringify(o)),
  );
  let refused = 0;
  await fc.assert(
    fc.asyncProperty(junk, async (text) => {
      try {
        await read(text);
      } catch (err) {
        assert.ok(err instanceof SourceOpenError, String(err));
        assert.match(err.message, /^source "src": /);
        assert.ok(!err.message.includes('\n'), 'one line');
        refused++;
      }
    }),
    { numRuns: 300 },
  );
  assert.ok(refused > 250, `${refused} of 300 refused`);
  // Coordinates in metres (a projected CRS) are not GeoJSON's degrees.
  const projected = JSON.stringify({ type: 'Feature', properties: {}, geometry: { type: 'Point', coordinates: [412000, 5710000] } });
  await assert.rejects(read(projected), /beyond longitude\/latitude; GeoJSON is in WGS 84 degrees/);
});
