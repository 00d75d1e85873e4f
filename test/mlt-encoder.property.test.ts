// Property tests (fast-check) of the compact MLT encoder (src/tiles/mlt), one stream kind at a time, each judged
// by @maplibre/mlt's own decoders: integer streams (every technique the chooser may pick, FastPFOR included) read
// back by the package's stream decoders and never larger than plain varints; FSST tables learnt here and applied
// with the package's coder read back by its FSST decoder; string columns (plain, dictionary, FSST dictionary, with
// nulls) and property columns of every type, geometry of every kind and size, and ids (32-bit, 64-bit, past
// 2^63, missing) read back by `decodeTile`, both as exact values and as the doubles maplibre-gl reads ids as.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { decodeTile, encodeTile } from '@maplibre/mlt';
import { decodeStreamMetadata } from '@maplibre/mlt/dist/metadata/tile/streamMetadataDecoder.js';
import { decodeLengthStreamToOffsetBuffer, decodeSignedInt32Stream, decodeUnsignedInt32Stream } from '@maplibre/mlt/dist/decoding/integerStreamDecoder.js';
import { decodeFsst } from '@maplibre/mlt/dist/decoding/fsstDecoder.js';
import { encodeFsst } from '@maplibre/mlt/dist/encoding/fsstEncoder.js';
import { DictionaryType } from '@maplibre/mlt/dist/metadata/tile/dictionaryType.js';
import fc from './helpers/fast-check.js';

// Properties here end on the first failure without shrinking (endOnFailure): their inputs are large, and shrinking
// hundreds of strings or values through an encoder takes minutes.
import { encodeIntStream, LENGTH_OPTIONS, PhysicalStreamType, VALUE_OPTIONS, type IntOptions, type StreamKind } from '../src/tiles/mlt/streams.js';
import { learnSymbols } from '../src/tiles/mlt/fsst-table.js';
import { stringColumn } from '../src/tiles/mlt/strings.js';
import { encodeCompactMlt } from '../src/tiles/mlt/layer.js';
import { decodeMlt } from '../src/tiles/mlt-codec.js';
import type { PropValue, TileFeature, VectorTileData } from '../src/tiles/vector-model.js';

type Offset = Parameters<typeof decodeSignedInt32Stream>[1];

/** The decoders' read position (the package's IntWrapper has the same four methods). */
function cursor(at = 0): Offset {
  let value = at;
  return { get: () => value, set: (v: number) => void (value = v), increment: () => value++, add: (v: number) => void (value += v) } as unknown as Offset;
}

const KIND: StreamKind = { physical: PhysicalStreamType.DATA, logical: { dictionaryType: DictionaryType.NONE } };

/** Value lists shaped like tile data: runs, climbing sequences, small and full-range numbers; long enough for FastPFOR. */
function ints(min: number, max: number): fc.Arbitrary<number[]> {
  const runs = fc.array(fc.tuple(fc.integer({ min, max }), fc.integer({ min: 1, max: 40 })), { maxLength: 20 }).map((rs) => rs.flatMap(([v, n]) => Array<number>(n).fill(v)));
  const climbing = fc.tuple(fc.integer({ min, max }), fc.integer({ min: 0, max: 9 }), fc.integer({ min: 0, max: 600 })).map(([start, step, n]) => {
    const out: number[] = [];
    for (let i = 0; i < n; i++) out.push(Math.min(max, Math.max(min, start + i * step)));
    return out;
  });
  return fc.oneof(fc.array(fc.integer({ min, max }), { maxLength: 700, size: 'max' }), fc.array(fc.integer({ min: Math.max(min, -50), max: Math.min(max, 50) }), { maxLength: 700, size: 'max' }), runs, climbing);
}

const OPTION_SETS: [string, IntOptions][] = [
  ['values', VALUE_OPTIONS],
  ['lengths', LENGTH_OPTIONS],
  ['vertices', { techniques: ['componentwise-delta'], fastPfor: true }],
];

describe('integer streams', () => {
  for (const [label, options] of OPTION_SETS) {
    for (const signed of [true, false]) {
      if (label === 'vertices' && !signed) continue;
      test(`${label}, ${signed ? 'signed' : 'unsigned'}: the package's stream decoder gives the values back; never larger than plain varints`, () => {
        const techniquesSeen = new Set<string>();
        const gen = label === 'vertices' ? ints(-20000, 20000).map((v) => (v.length % 2 ? v.slice(1) : v)) : signed ? ints(-(2 ** 31), 2 ** 31 - 1) : ints(0, 2 ** 32 - 1);
        fc.assert(
          fc.property(gen, (list) => {
            const values = signed ? Int32Array.from(list) : Uint32Array.from(list);
            const stream = encodeIntStream(KIND, values, signed, options);
            const at = cursor();
            const meta = decodeStreamMetadata(stream, at);
            techniquesSeen.add(`${meta.logicalLevelTechnique1}+${meta.logicalLevelTechnique2}/${meta.physicalLevelTechnique}`);
            const back = signed ? decodeSignedInt32Stream(stream, at, meta) : decodeUnsignedInt32Stream(stream, at, meta);
            assert.deepEqual([...back], [...values]);
            assert.equal(at.get(), stream.length, 'the stream is consumed exactly');
            if (label === 'lengths' && !signed) {
              // Length streams are also read as offsets (prefix sums), by another routine.
              const offsets = decodeLengthStreamToOffsetBuffer(stream, cursor(stream.length - meta.byteLength), meta);
              let sum = 0;
              assert.deepEqual([...offsets], [0, ...list.map((v) => (sum = (sum + v) >>> 0))]);
            }
            if (label !== 'vertices') {
              const plain = encodeIntStream(KIND, values, signed, { techniques: ['none'], fastPfor: false });
              assert.ok(stream.length <= plain.length, `${stream.length} > plain ${plain.length}`);
            }
          }),
          { numRuns: 300, endOnFailure: true },
        );
        // The generators reach the techniques that matter for each kind.
        const all = [...techniquesSeen].join(' ');
        if (label === 'values') for (const t of ['NONE+NONE/VARINT', 'DELTA+NONE', 'RLE+NONE', 'DELTA+RLE', 'FAST_PFOR']) assert.ok(all.includes(t), `${t} chosen at least once (${all})`);
        if (label === 'lengths') for (const t of ['NONE+NONE', 'RLE+NONE', 'FAST_PFOR']) assert.ok(all.includes(t), `${t} chosen at least once (${all})`);
      });
    }
  }
});

const words = ['Straße', 'Street', 'Avenue', 'Rue de la ', 'Boulevard ', 'Platz', 'école', '東京', 'Москва', 'park', 'residential', 'primary'];
const text = fc.oneof(
  fc.string({ maxLength: 30 }),
  fc.array(fc.constantFrom(...words), { minLength: 1, maxLength: 4 }).map((w) => w.join(' ')),
  fc.tuple(fc.constantFrom(...words), fc.nat(9999)).map(([w, n]) => `${w} ${n}`),
);

describe('FSST', () => {
  test('a learnt table applied with the package coder is undone by the package decoder; it compresses text', () => {
    const utf8 = new TextEncoder();
    let compressedSome = false;
    fc.assert(
      fc.property(fc.array(text, { maxLength: 300, size: 'max' }), (strings) => {
        const data = utf8.encode(strings.join(''));
        const { symbols } = learnSymbols(data);
        assert.ok(symbols.length <= 255, 'at most 255 symbols (255 is the escape code)');
        for (const s of symbols) assert.ok(s.length >= 1 && s.length <= 8, 'symbols of 1 to 8 bytes');
        const lengths = Uint32Array.from(symbols, (s) => s.length);
        const table = new Uint8Array(symbols.reduce((n, s) => n + s.length, 0));
        symbols.reduce((at, s) => (table.set(s, at), at + s.length), 0);
        const compressed = encodeFsst(table, lengths, data);
        assert.deepEqual(decodeFsst(table, lengths, compressed), data);
        if (data.length > 2000 && compressed.length < data.length / 2) compressedSome = true;
      }),
      { numRuns: 150, endOnFailure: true },
    );
    assert.ok(compressedSome, 'repetitive text compresses to under half');
  });
});

/** A one-layer tile whose features carry `column` values under one key (null: the key is absent). */
function columnTile(values: readonly (PropValue | null)[], ids?: readonly (number | bigint | undefined)[]): VectorTileData {
  const features: TileFeature[] = values.map((v, i) => {
    const properties = Object.create(null) as Record<string, PropValue>;
    if (v !== null) properties.k = v;
    return { id: ids?.[i], type: 1, geometry: [[i % 4096, (i * 7) % 4096]], properties };
  });
  return [{ name: 'l', extent: 4096, version: 2, features }];
}

function columnValues(bytes: Uint8Array): unknown[] {
  const [table] = decodeTile(bytes, undefined, false);
  const column = table.propertyVectors.find((c) => c?.name === 'k');
  return Array.from({ length: table.numFeatures }, (_, i) => column?.getValue(i) ?? null);
}

describe('string columns', () => {
  test('plain, dictionary and FSST-dictionary columns, with nulls, read back by decodeTile; smaller or equal to the plain encoder', () => {
    const forms = new Set<string>();
    fc.assert(
      fc.property(
        fc.oneof(
          fc.array(fc.option(text, { nil: null }), { maxLength: 400, size: 'max' }),
          // Few distinct values, many features: the dictionary case.
          fc.tuple(fc.array(text, { minLength: 1, maxLength: 8 }), fc.array(fc.nat(), { minLength: 1, maxLength: 400, size: 'max' })).map(([d, picks]) => picks.map((p) => d[p % d.length])),
        ),
        (values) => {
          forms.add(stringColumn(values, values.some((v) => v === null)).form);
          const bytes = encodeCompactMlt(columnTile(values));
          assert.deepEqual(columnValues(bytes), values);
          if (values.some((v) => v !== null)) {
            const plain = encodeTile([{ name: 'l', extent: 4096, features: values.map((v, i) => ({ geometry: { type: 'Point', coordinates: [i % 4096, (i * 7) % 4096] }, properties: (v === null ? {} : { k: v }) as Record<string, string> })) }]);
            assert.ok(bytes.length <= plain.length, `${bytes.length} > plain ${plain.length}`);
          }
        },
      ),
      { numRuns: 200, endOnFailure: true },
    );
    assert.deepEqual([...forms].sort(), ['dictionary', 'fsst', 'plain'], 'every form was chosen for some column');
  });
});

describe('other property columns', () => {
  const scalar = fc.oneof(
    fc.array(fc.option(fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 }), { nil: null }), { maxLength: 400, size: 'max' }),
    fc.array(fc.option(fc.integer({ min: 0, max: 20 }), { nil: null, freq: 20 }), { maxLength: 400, size: 'max' }),
    fc.array(fc.integer({ min: 0, max: 3 }), { maxLength: 400, size: 'max' }),
    fc.array(fc.option(fc.maxSafeInteger(), { nil: null }), { maxLength: 60 }),
    fc.array(fc.option(fc.double({ noNaN: true }).filter((v) => !Object.is(v, -0)), { nil: null }), { maxLength: 60 }),
    fc.array(fc.option(fc.float({ noNaN: true }).filter((v) => !Object.is(v, -0)), { nil: null }), { maxLength: 60 }),
    fc.array(fc.option(fc.boolean(), { nil: null }), { maxLength: 60 }),
    fc.array(fc.option(fc.bigInt({ min: 2n ** 63n, max: 2n ** 64n - 1n }), { nil: null }), { maxLength: 30 }),
  );
  test('integers, 64-bit integers, floats, doubles and booleans, with nulls, come back exactly through decodeMlt', () => {
    fc.assert(
      fc.property(scalar, (values) => {
        const tile = columnTile(values);
        const back = decodeMlt(encodeCompactMlt(tile));
        assert.deepEqual(back[0].features.map((f) => f.properties.k ?? null), values.map((v) => (typeof v === 'bigint' && v < 2n ** 53n ? Number(v) : v)));
      }),
      { numRuns: 300, endOnFailure: true },
    );
  });
});

describe('geometry', () => {
  // A few coordinates taken often make vertices repeat: the vertex dictionary form.
  const coord = fc.oneof(fc.integer({ min: -300, max: 4400 }), fc.integer({ min: 0, max: 3 }));
  const vertex = fc.tuple(coord, coord);
  const path = (min: number, max: number) => fc.array(vertex, { minLength: min, maxLength: max }).map((vs) => vs.flat());
  const ring = path(3, 60).filter((r) => r[0] !== r[r.length - 2] || r[1] !== r[r.length - 1]);
  const shape = (type: 1 | 2 | 3) => (geometry: number[][]): TileFeature => ({ id: undefined, type, geometry, properties: {} });
  const feature: fc.Arbitrary<TileFeature> = fc.oneof(
    fc.array(path(1, 1), { minLength: 1, maxLength: 5 }).map(shape(1)),
    fc.array(path(2, 80), { minLength: 1, maxLength: 3 }).map(shape(2)),
    fc.array(ring, { minLength: 1, maxLength: 4 }).map(shape(3)),
  );
  test('points, lines and polygons (single and multi, mixed or alone in a layer, with or without a vertex dictionary) come back vertex for vertex', () => {
    let dictionaries = 0;
    fc.assert(
      fc.property(
        fc.oneof(
          fc.array(feature, { minLength: 1, maxLength: 40, size: 'max' }),
          // Shapes drawn again and again (as shared borders are at low zoom): the vertex dictionary's case.
          fc.tuple(fc.array(feature, { minLength: 1, maxLength: 4 }), fc.integer({ min: 2, max: 30 })).map(([fs, n]) => Array.from({ length: n }, () => fs).flat()),
        ),
        (features) => {
        const tile: VectorTileData = [{ name: 'g', extent: 4096, version: 2, features: features.map((f) => ({ ...f, properties: Object.create(null) as Record<string, PropValue> })) }];
        const bytes = encodeCompactMlt(tile);
        // The decoder's geometry has vertex offsets only when the dictionary form was written.
        if ((decodeTile(bytes)[0].geometryVector as { vertexOffsets?: Uint32Array }).vertexOffsets) dictionaries++;
        const back = decodeMlt(bytes);
        // The model gives one part per point back; rings keep their winding, so classification is stable.
        const expected = tile[0].features.map((f) => (f.type === 1 ? { ...f, geometry: f.geometry.flatMap((p) => p.length ? [p] : []) } : f));
        assert.deepEqual(back[0].features.map((f) => [f.type, f.geometry]), expected.map((f) => [f.type, f.geometry]));
      }),
      { numRuns: 200, endOnFailure: true },
    );
    assert.ok(dictionaries > 0, 'the vertex dictionary form was chosen for some layers');
  });
});

describe('ids', () => {
  const idList = fc.oneof(
    fc.array(fc.option(fc.nat(), { nil: undefined, freq: 10 }), { minLength: 1, maxLength: 300, size: 'max' }),
    fc.tuple(fc.nat(2 ** 31), fc.integer({ min: 0, max: 3 }), fc.integer({ min: 1, max: 300 })).map(([s, d, n]) => Array.from({ length: n }, (_, i) => s + i * d)),
    fc.array(fc.option(fc.oneof(fc.maxSafeNat(), fc.bigInt({ min: 2n ** 53n, max: 2n ** 64n - 1n })), { nil: undefined, freq: 10 }), { minLength: 1, maxLength: 100 }),
    fc.array(fc.bigInt({ min: 2n ** 63n, max: 2n ** 64n - 1n }), { minLength: 1, maxLength: 50 }),
  );
  test('ids come back exactly (decodeMlt) and as the doubles a maplibre-gl reader sees (decodeTile, safe-integer mode)', () => {
    fc.assert(
      fc.property(idList, (ids) => {
        const tile = columnTile(ids.map(() => null), ids);
        const bytes = encodeCompactMlt(tile);
        const back = decodeMlt(bytes);
        assert.deepEqual(back[0].features.map((f) => f.id), ids.map((id) => (typeof id === 'bigint' && id < 2n ** 53n ? Number(id) : id)));
        // maplibre-gl decodes with ids as doubles and reads them through getFeatures.
        const [table] = decodeTile(bytes);
        const seen = table.getFeatures().map((f) => (f.id === undefined || f.id === null ? undefined : Number(f.id)));
        assert.deepEqual(seen, ids.map((id) => (id === undefined ? undefined : Number(id))));
      }),
      { numRuns: 300, endOnFailure: true },
    );
  });
});
