// Property tests of the parsers of feature writes (docs/editing.md): JSON Merge Patch (RFC 7396) against a
// model of its rules, and the check of a written feature (src/ogc/feature-input.ts): whatever a client sends, it
// answers a checked feature or a refusal naming a member, never throws; what it accepts is exactly what fits the
// columns (integers in range, strings of the right length, positions in CRS84 range, rings closed).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from './helpers/fast-check.js';
import { applyMergePatch, type Json } from '../src/ogc/merge-patch.js';
import { checkFeature, checkFeatures, checkGeometry, columnValue, geometryRule, type WriteSchema } from '../src/ogc/feature-input.js';

const RUNS = { numRuns: 1000 };

/** JSON values with member names that reach Object.prototype if mishandled. */
const key = fc.oneof(fc.constantFrom('a', 'b', '__proto__', 'constructor', 'toString'), fc.string({ maxLength: 4 }));
const json: fc.Arbitrary<Json> = fc.letrec<{ v: Json }>((tie) => ({
  v: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.constant(null),
    fc.boolean(),
    fc.integer(),
    fc.string({ maxLength: 5 }),
    fc.array(tie('v'), { maxLength: 3 }),
    fc.dictionary(key, tie('v'), { maxKeys: 4 }).map((d) => Object.assign(Object.create(null), d) as Json),
  ),
})).v;
const nonNull: fc.Arbitrary<Json> = fc.letrec<{ v: Json }>((tie) => ({
  v: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.boolean(),
    fc.integer(),
    fc.string({ maxLength: 5 }),
    fc.array(tie('v'), { maxLength: 3 }),
    fc.dictionary(key, tie('v'), { maxKeys: 4 }).map((d) => Object.assign(Object.create(null), d) as Json),
  ),
})).v;

const isObject = (v: unknown): v is Record<string, Json> => v !== null && typeof v === 'object' && !Array.isArray(v);
/** JSON equality that sees own members only (null-prototype objects compare with plain ones). */
const plain = (v: unknown): unknown => JSON.parse(JSON.stringify(v));

/** The merge patch that turns `a` into `b` (both without nulls inside objects). */
function diff(a: Json, b: Json): Json {
  if (!isObject(a) || !isObject(b)) return b;
  const out: Record<string, Json> = Object.create(null);
  for (const k of Object.keys(a)) if (!Object.hasOwn(b, k)) out[k] = null;
  for (const k of Object.keys(b)) if (!Object.hasOwn(a, k) || JSON.stringify(a[k]) !== JSON.stringify(b[k])) out[k] = diff(a[k], b[k]);
  return out;
}

test('merge patch: the patch made by diffing two documents turns the first into the second', () => {
  fc.assert(
    fc.property(nonNull, nonNull, (a, b) => {
      assert.deepEqual(plain(applyMergePatch(a, diff(a, b))), plain(b));
    }),
    RUNS,
  );
});

test('merge patch: idempotent, leaves its arguments alone, never touches Object.prototype', () => {
  fc.assert(
    fc.property(json, json, (target, patch) => {
      const before = [JSON.stringify(target), JSON.stringify(patch)];
      const once = applyMergePatch(target, patch);
      assert.deepEqual(plain(applyMergePatch(once, patch)), plain(once));
      assert.deepEqual([JSON.stringify(target), JSON.stringify(patch)], before);
      assert.equal(({} as Record<string, unknown>).a, undefined);
    }),
    RUNS,
  );
});

test('merge patch: a member set to null is gone, a non-object member is replaced, others are kept (RFC 7396 section 2)', () => {
  fc.assert(
    fc.property(fc.dictionary(key, json, { maxKeys: 5 }), fc.dictionary(key, json, { maxKeys: 5 }), (t, p) => {
      const target = Object.assign(Object.create(null), t) as Json;
      const patch = Object.assign(Object.create(null), p) as Record<string, Json>;
      const out = applyMergePatch(target, patch) as Record<string, Json>;
      for (const k of Object.keys(patch)) {
        if (patch[k] === null) assert.ok(!Object.hasOwn(out, k), k);
        else if (!isObject(patch[k])) assert.deepEqual(plain(out[k]), plain(patch[k]));
      }
      for (const k of Object.keys(t)) if (!Object.hasOwn(patch, k)) assert.deepEqual(plain(out[k]), plain((target as Record<string, Json>)[k]));
    }),
    RUNS,
  );
  // The RFC's own example of a non-object patch: it replaces the target whole.
  assert.deepEqual(applyMergePatch({ a: 'b' }, ['c']), ['c']);
  assert.deepEqual(plain(applyMergePatch({ a: 'foo' }, { a: null, b: { c: null } })), { b: {} });
});

const SCHEMA: WriteSchema = {
  id: { name: 'id', type: 'integer' },
  properties: [
    { name: 'name', type: 'text' },
    { name: 'kind', type: 'character varying(8)' },
    { name: 'rank', type: 'integer' },
    { name: 'small', type: 'smallint' },
    { name: 'big', type: 'bigint' },
    { name: 'score', type: 'double precision' },
    { name: 'active', type: 'boolean' },
    { name: 'tags', type: 'jsonb' },
    { name: 'day', type: 'date' },
  ],
  geometryColumn: 'geom',
  geometryType: 'geometry(Point,4326)',
};

test('checkFeature never throws: it answers a checked feature or a refusal that names a member', () => {
  const anyDoc = fc.oneof(
    fc.anything(),
    fc.record({ type: fc.constantFrom('Feature', 'feature', 'FeatureCollection'), id: fc.anything(), properties: fc.oneof(fc.anything(), fc.dictionary(fc.constantFrom('name', 'kind', 'rank', 'small', 'big', 'score', 'active', 'tags', 'day', 'id', 'x'), fc.anything())), geometry: fc.anything() }, { requiredKeys: [] }),
  );
  fc.assert(
    fc.property(anyDoc, (doc) => {
      const r = checkFeatures(doc, SCHEMA, 10);
      if (!r.ok) {
        assert.equal(typeof r.member, 'string');
        assert.ok(r.member.length > 0);
        assert.equal(typeof r.detail, 'string');
      } else for (const f of r.value.features) for (const [k, v] of f.values) assert.ok(SCHEMA.properties.some((c) => c.name === k) && (v === null || typeof v === 'string'));
    }),
    RUNS,
  );
});

test('integers are accepted exactly within their type`s range, as their decimal text', () => {
  fc.assert(
    fc.property(fc.constantFrom(['smallint', 2 ** 15], ['integer', 2 ** 31], ['bigint', 2 ** 63]) as fc.Arbitrary<[string, number]>, fc.oneof(fc.integer(), fc.double(), fc.bigInt({ min: -(2n ** 64n), max: 2n ** 64n }).map(Number)), ([type, bound], n) => {
      const r = columnValue({ name: 'n', type }, n);
      const fits = Number.isInteger(n) && BigInt(n) >= -BigInt(bound) && BigInt(n) < BigInt(bound);
      if (fits) assert.deepEqual(r, { text: BigInt(n).toString() });
      else assert.ok('error' in r, `${type} ${n}`);
    }),
    RUNS,
  );
  assert.deepEqual(columnValue({ name: 'n', type: 'bigint' }, '9223372036854775807'), { text: '9223372036854775807' });
  assert.ok('error' in columnValue({ name: 'n', type: 'bigint' }, '9223372036854775808'));
});

test('varchar(n) takes strings of at most n characters (code points); text takes any string without U+0000', () => {
  fc.assert(
    fc.property(fc.string({ unit: 'grapheme', maxLength: 12 }), (s) => {
      const r = columnValue({ name: 'k', type: 'character varying(8)' }, s);
      assert.equal('text' in r, [...s].length <= 8);
      assert.ok('text' in columnValue({ name: 't', type: 'text' }, s));
    }),
    RUNS,
  );
  assert.ok('error' in columnValue({ name: 't', type: 'text' }, 'a\u0000b'));
  assert.ok('error' in columnValue({ name: 't', type: 'text' }, '\ud800'));
});

test('a point is accepted exactly when it is a finite longitude/latitude in range, 2D for a 2D column', () => {
  const coordinate = fc.oneof(fc.double({ min: -200, max: 200, noNaN: true }), fc.constantFrom(NaN, Infinity, -180, 180, 90, -90));
  fc.assert(
    fc.property(fc.array(coordinate, { minLength: 1, maxLength: 4 }), (pos) => {
      const bad = checkGeometry({ type: 'Point', coordinates: pos }, geometryRule('geometry(Point,4326)'));
      const ok = pos.length === 2 && pos.every(Number.isFinite) && Math.abs(pos[0]) <= 180 && Math.abs(pos[1]) <= 90;
      assert.equal(bad === undefined, ok, JSON.stringify(pos));
      if (bad) assert.ok(bad.member.startsWith('geometry'));
    }),
    RUNS,
  );
});

test('a polygon ring is accepted when it has 4 positions or more and ends where it starts', () => {
  const pos = fc.tuple(fc.integer({ min: -10, max: 10 }), fc.integer({ min: -10, max: 10 }));
  fc.assert(
    fc.property(fc.array(pos, { maxLength: 7 }), fc.boolean(), (ps, close) => {
      const ring = close && ps.length ? [...ps, ps[0]] : ps;
      const bad = checkGeometry({ type: 'Polygon', coordinates: [ring] }, geometryRule('geometry(MultiPolygon,3857)'));
      const closed = ring.length > 0 && ring[0][0] === ring[ring.length - 1][0] && ring[0][1] === ring[ring.length - 1][1];
      assert.equal(bad === undefined, ring.length >= 4 && closed, JSON.stringify(ring));
    }),
    RUNS,
  );
});

test('geometry rules read from format_type', () => {
  assert.deepEqual(geometryRule('geometry(Point,4326)'), { type: 'Point', z: false, m: false });
  assert.deepEqual(geometryRule('geometry(MultiPolygonZ,3857)'), { type: 'MultiPolygon', z: true, m: false });
  assert.deepEqual(geometryRule('geometry(PointZM,4326)'), { type: 'Point', z: true, m: true });
  assert.deepEqual(geometryRule('geometry(Geometry,4326)'), { z: false, m: false });
  assert.deepEqual(geometryRule('geometry'), { m: false });
  const id = checkFeature({ type: 'Feature', id: 5, properties: { id: 6 }, geometry: null }, SCHEMA);
  assert.equal(id.ok, false);
  assert.equal(!id.ok && id.member, 'properties.id');
});
