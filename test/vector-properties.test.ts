// Property tests (fast-check) of the vector model: merging (an empty tile is neutral, feature counts add up,
// merging encoded member tiles - MVT, gzip MVT, MLT - keeps every feature and its properties), exact MVT and
// MLT round trips of arbitrary tiles (64-bit ids and integers included), and the query body parser.
import assert from 'node:assert/strict';
import { gzipSync } from 'node:zlib';
import { describe, test } from 'node:test';
import fc from './helpers/fast-check.js';
import { mergeTiles } from '../src/tiles/merge.js';
import { decodeMlt, encodeMlt } from '../src/tiles/mlt-codec.js';
import { decodeMvt } from '../src/tiles/mvt-decode.js';
import { encodeMvt } from '../src/tiles/mvt-encode.js';
import { featureCount, type PropValue, type TileFeature, type TileLayer, type VectorTileData } from '../src/tiles/vector-model.js';
import { runVectorTask, type MergeResult } from '../src/tiles/vector-ops.js';
import { MAX_LIMIT, parseQueryBody } from '../src/spatial/query-body.js';

const coord = fc.integer({ min: -256, max: 4351 });
const vertex = fc.tuple(coord, coord);
const flat = (vs: [number, number][]) => vs.flat();

const pointsGeom = fc.array(vertex, { maxLength: 4 }).map((vs) => vs.map((v) => [...v]));
const linesGeom = fc.array(fc.array(vertex, { minLength: 1, maxLength: 6 }).map(flat), { maxLength: 3 });
/** Rings as MVT stores them: open (an explicitly repeated first vertex would be a different ring). */
const ringsGeom = fc.array(
  fc.array(vertex, { minLength: 1, maxLength: 6 }).filter((vs) => vs.length < 2 || vs[0][0] !== vs[vs.length - 1][0] || vs[0][1] !== vs[vs.length - 1][1]).map(flat),
  { maxLength: 4 },
);

const value: fc.Arbitrary<PropValue> = fc.oneof(
  fc.string({ maxLength: 8 }),
  fc.boolean(),
  fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 }),
  fc.maxSafeInteger(),
  fc.double().filter((v) => !Object.is(v, -0)),
  fc.bigInt({ min: 2n ** 53n, max: 2n ** 64n - 1n }),
  fc.bigInt({ min: -(2n ** 63n), max: -(2n ** 53n) - 1n }),
);
// `__proto__` is a legal tile key; @maplibre/mlt's decoder writes properties into a plain object and loses
// it, so the MLT round trip leaves it out (the MVT one keeps it).
const key = (mlt: boolean) => fc.oneof(fc.constantFrom('name', 'class', 'rank', 'name:en', ...(mlt ? [] : ['__proto__'])), fc.string({ minLength: 1, maxLength: 6 }).filter((k) => !mlt || k !== '__proto__'));
const properties = (mlt: boolean) => fc.dictionary(key(mlt), value, { maxKeys: 5 }).map((d) => Object.assign(Object.create(null) as Record<string, PropValue>, d));

const id = fc.option(fc.oneof(fc.maxSafeNat(), fc.bigInt({ min: 2n ** 53n, max: 2n ** 64n - 1n })), { nil: undefined });

// fast-check records have no prototype; the decoders give plain objects (and null-prototype properties).
const plain = <T extends object>(r: T): T => ({ ...r });

const feature = (mlt: boolean): fc.Arbitrary<TileFeature> =>
  fc
    .oneof(
      fc.record({ id, type: fc.constant(1 as const), geometry: pointsGeom, properties: properties(mlt) }),
      fc.record({ id, type: fc.constant(2 as const), geometry: linesGeom, properties: properties(mlt) }),
      fc.record({ id, type: fc.constant(3 as const), geometry: ringsGeom, properties: properties(mlt) }),
    )
    .map(plain);

const layer = (mlt: boolean): fc.Arbitrary<TileLayer> =>
  fc.record({
    name: fc.oneof(fc.constantFrom('water', 'roads', 'poi'), fc.string({ minLength: 1, maxLength: 6 })),
    extent: fc.constantFrom(4096, 512, 8192),
    version: fc.constant(2),
    features: fc.array(feature(mlt), { maxLength: 6 }),
  }).map(plain);

const tile = (mlt = false): fc.Arbitrary<VectorTileData> => fc.array(layer(mlt), { maxLength: 4 });

/**
 * What merging two tiles means, written out here rather than taken from mergeTiles: layers in order of first
 * appearance (a's, then b's new ones); each layer holds a's features of that name, then b's; a feature from a
 * layer of another extent has its coordinates scaled to the first layer's extent and rounded (0, never -0).
 */
function expectedMerge(a: VectorTileData, b: VectorTileData): VectorTileData {
  const names: string[] = [];
  for (const l of [...a, ...b]) if (!names.includes(l.name)) names.push(l.name);
  return names.map((name) => {
    const first = [...a, ...b].find((l) => l.name === name)!;
    const features = [...a, ...b]
      .filter((l) => l.name === name)
      .flatMap((l) =>
        l.extent === first.extent
          ? l.features
          : l.features.map((f) => ({ ...f, geometry: f.geometry.map((part) => part.map((c) => Math.round((c * first.extent) / l.extent) + 0)) })),
      );
    return { ...first, features };
  });
}

describe('merging', () => {
  test('merging with an empty tile gives the tile back', () => {
    // Distinct layer names: merging also folds same-named layers of one tile together.
    const distinct = tile().filter((t) => new Set(t.map((l) => l.name)).size === t.length);
    fc.assert(
      fc.property(distinct, (a) => {
        assert.deepStrictEqual(mergeTiles([a, []]), a);
        assert.deepStrictEqual(mergeTiles([[], a]), a);
      }),
    );
  });

  test('the feature count of a merge is the sum, layer by layer', () => {
    fc.assert(
      fc.property(tile(), tile(), (a, b) => {
        const merged = mergeTiles([a, b]);
        assert.equal(featureCount(merged), featureCount(a) + featureCount(b));
        const count = (t: VectorTileData, name: string) => t.filter((l) => l.name === name).reduce((n, l) => n + l.features.length, 0);
        for (const name of new Set([...a, ...b].map((l) => l.name))) assert.equal(count(merged, name), count(a, name) + count(b, name));
        assert.equal(new Set(merged.map((l) => l.name)).size, merged.length, 'one layer per name');
      }),
    );
  });

  test('merging encoded members (MVT, gzip MVT, MLT) keeps every feature with its own properties', () => {
    // How often a layer name is shared, and shared with another extent (the rescaling branch).
    const seen = { shared: 0, rescaled: 0, pbf: 0, gzip: 0, mlt: 0 };
    fc.assert(
      fc.property(tile(true), tile(true), fc.constantFrom('pbf', 'gzip', 'mlt'), fc.boolean(), (a, b0, form, reuse) => {
        // Half the runs give b's layers the names of a's, so that same-named layers meet on purpose.
        const b = reuse && a.length ? b0.map((l, i) => ({ ...l, name: a[i % a.length].name })) : b0;
        seen[form]++;
        for (const lb of b) {
          const la = a.find((l) => l.name === lb.name && l.features.length && lb.features.some((f) => f.geometry.length));
          if (la) seen[la.extent === lb.extent ? 'shared' : 'rescaled']++;
        }
        const second = form === 'mlt' ? encodeMlt(b) : form === 'gzip' ? gzipSync(encodeMvt(b)) : encodeMvt(b);
        const result = runVectorTask({
          op: 'merge',
          members: [
            { id: 'a', format: 'pbf', bytes: encodeMvt(a) },
            { id: 'b', format: form === 'mlt' ? 'mlt' : 'pbf', bytes: second },
          ],
        }) as MergeResult;
        assert.deepEqual(result.failed, []);
        assert.deepStrictEqual(decodeMvt(result.mvt), expectedMerge(a, b));
      }),
      { numRuns: 100 },
    );
    for (const [what, n] of Object.entries(seen)) assert.ok(n >= 3, `${what}: ${n} of 100 runs`);
  });
});

describe('round trips', () => {
  test('MVT: decode(encode(tile)) is the tile, exactly', () => {
    fc.assert(fc.property(tile(), (t) => assert.deepStrictEqual(decodeMvt(encodeMvt(t)), t)));
  });

  test('MLT: decode(encode(tile)) is the tile, exactly (mixed-type columns, 64-bit ids and integers)', () => {
    fc.assert(
      fc.property(tile(true), (t) => assert.deepStrictEqual(decodeMlt(encodeMlt(t)), t)),
      { numRuns: 150 },
    );
  });
});

describe('query body parser', () => {
  const lon = fc.double({ min: -180, max: 180, noNaN: true });
  const lat = fc.double({ min: -90, max: 90, noNaN: true });
  const bbox = fc.tuple(lon, lat, lon, lat).map(([a, b, c, d]) => [Math.min(a, c), Math.min(b, d), Math.max(a, c), Math.max(b, d)]);
  const valid = fc.record(
    {
      source: fc.string({ minLength: 1 }),
      bbox,
      zoom: fc.integer({ min: 0, max: 22 }),
      layers: fc.array(fc.string({ minLength: 1 })),
      limit: fc.integer({ min: 1, max: MAX_LIMIT }),
    },
    { requiredKeys: ['source'] },
  );

  test('every valid body is accepted as given, with the defaults filled in', () => {
    fc.assert(
      fc.property(valid, (body) => {
        const sent = JSON.parse(JSON.stringify(body)) as Record<string, unknown>;
        const r = parseQueryBody(sent);
        assert.ok(r.ok, JSON.stringify(r));
        assert.deepStrictEqual(r.body, { zoom: 14, limit: 100, ...sent });
      }),
    );
  });

  test('any JSON value: never throws; what it accepts is within the rules, what it refuses is named', () => {
    const anyJson = fc.oneof(fc.jsonValue(), valid.chain((b) => fc.record({ ...Object.fromEntries(Object.keys(b).map((k) => [k, fc.jsonValue()])) })));
    fc.assert(
      fc.property(anyJson, (raw) => {
        const r = parseQueryBody(raw);
        if (r.ok) {
          const b = r.body;
          assert.equal(typeof b.source, 'string');
          assert.ok(b.source.length > 0);
          assert.ok(Number.isInteger(b.zoom) && b.zoom >= 0 && b.zoom <= 22);
          assert.ok(Number.isInteger(b.limit) && b.limit >= 1 && b.limit <= MAX_LIMIT);
          if (b.bbox) assert.ok(b.bbox[0] <= b.bbox[2] && b.bbox[1] <= b.bbox[3] && b.bbox.every(Number.isFinite));
          if (b.layers) assert.ok(b.layers.every((l) => typeof l === 'string' && l.length > 0));
        } else {
          assert.ok(r.problems.length > 0);
          // `path: message`, the path naming the field (or an unknown key, which may be any text).
          for (const p of r.problems) assert.match(p, /^.+: \S.*$/s);
        }
      }),
      { numRuns: 300 },
    );
  });
});
