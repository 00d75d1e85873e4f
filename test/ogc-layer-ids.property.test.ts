// Property tests of the layer collection ids `{source}:{layer}` (src/ogc/layer-ids.ts, docs/ogc.md): the
// configuration refuses a ":" in any id, so no layer collection's id is ever a source's; an id reads back as the
// source and layer it was made of, whatever the layer's name holds (":", "+", ",", "/", any text); and the access
// gate's reading of a path (src/auth/resources.ts, over the route table) finds that source, and only it, however the id is encoded.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import * as v from 'valibot';
import fc from './helpers/fast-check.js';
import { CompositeSchema } from '../src/config/schema.js';
import { layerCollectionId, splitLayerCollectionId } from '../src/ogc/layer-ids.js';
import { pathTargets } from '../src/auth/resources.js';

const RUNS = { numRuns: 2000 };

/** Whether the configuration takes `id` as an id (sources, composites and tables share the rule). */
const validId = (id: string) => v.safeParse(CompositeSchema, { id, sources: ['x'] }).success;

const ID_CHARS = 'abcXYZ019_.-'.split('');
/** Ids as the configuration allows them: letters, digits, "_", "-", "." (not first: "." or "-"). */
const sourceId = fc.tuple(fc.constantFrom('a', 'Z', '0', '_'), fc.array(fc.constantFrom(...ID_CHARS), { maxLength: 12 })).map(([h, t]) => h + t.join(''));
/** Layer names: table names are any text; these lean on the characters that mean something in a path or an id. */
const layerName = fc.oneof(
  fc.string({ unit: 'grapheme', minLength: 1, maxLength: 12 }),
  fc.array(fc.constantFrom(...'ab:+,./%?#_ -é'.split('')), { minLength: 1, maxLength: 10 }).map((a) => a.join('')),
);

test('the configuration refuses ":" in an id, and takes every id the generator makes', () => {
  fc.assert(
    fc.property(sourceId, fc.string({ maxLength: 6 }), fc.string({ maxLength: 6 }), (id, before, after) => {
      assert.ok(validId(id), id);
      const withColon = `${id}${before}:${after}`;
      assert.equal(validId(withColon), false, withColon);
      assert.equal(splitLayerCollectionId(id), undefined, 'a source id is no layer collection id');
    }),
    RUNS,
  );
});

test('a layer collection id reads back as its source and layer, and differs from every other pair', () => {
  fc.assert(
    fc.property(sourceId, layerName, sourceId, layerName, (s1, l1, s2, l2) => {
      const id = layerCollectionId(s1, l1);
      assert.deepEqual(splitLayerCollectionId(id), { source: s1, layer: l1 });
      assert.equal(validId(id), false, 'never a source id');
      assert.equal(layerCollectionId(s2, l2) === id, s1 === s2 && l1 === l2, 'one id per source and layer');
    }),
    RUNS,
  );
  for (const id of ['', ':', ':roads', 'city:', 'city']) assert.equal(splitLayerCollectionId(id), undefined, JSON.stringify(id));
});

test('the access gate judges /ogc/collections/{source}:{layer}/... as the source, however the id is spelt', () => {
  const encodings = [
    (id: string) => encodeURIComponent(id).replaceAll('%3A', ':'),
    (id: string) => encodeURIComponent(id),
    (id: string) => encodeURIComponent(id).replaceAll('%3A', '%3a'),
    (id: string) => [...new TextEncoder().encode(id)].map((b) => `%${b.toString(16).padStart(2, '0')}`).join(''),
  ];
  fc.assert(
    fc.property(sourceId, layerName, fc.constantFrom(...encodings), fc.constantFrom('', '/items', '/items/7', '/queryables', '/tiles'), (source, layer, encode, rest) => {
      const url = `/ogc/collections/${encode(layerCollectionId(source, layer))}${rest}?f=json`;
      const t = pathTargets('GET', url);
      assert.deepEqual(t.targets, [{ kind: 'source', id: source }], url);
      assert.equal(t.listing, false);
    }),
    RUNS,
  );
});
