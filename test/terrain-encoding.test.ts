// Terrarium and Mapbox terrain-RGB: elevations survive a round trip within the encoding's step, out-of-range
// heights clamp to its ends, and no-data travels as alpha 0.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from './helpers/fast-check.js';
import { DEM_PRECISION, DEM_RANGE, type DemEncoding, decodeDem, encodeDem } from '../src/terrain/dem-encoding.js';

const ENCODINGS: DemEncoding[] = ['terrarium', 'mapbox'];

test('known pixels: the published formulas of both encodings', () => {
  // terrarium: R*256 + G + B/256 - 32768; 0 m is (128, 0, 0).
  assert.deepEqual([...encodeDem(Float32Array.of(0, 1.5, -1), 'terrarium')], [128, 0, 0, 255, 128, 1, 128, 255, 127, 255, 0, 255]);
  // mapbox: -10000 + (R*65536 + G*256 + B) * 0.1; 0 m is code 100000 = (1, 134, 160).
  assert.deepEqual([...encodeDem(Float32Array.of(0, 8848.1), 'mapbox')], [1, 134, 160, 255, 2, 224, 65, 255]);
  assert.deepEqual([...decodeDem(Uint8Array.of(128, 1, 128, 255), 'terrarium')], [1.5]);
});

test('no data: NaN encodes as 0 m with alpha 0 and decodes back to NaN', () => {
  for (const enc of ENCODINGS) {
    const rgba = encodeDem(Float32Array.of(NaN, 12), enc);
    assert.equal(rgba[3], 0, enc);
    assert.equal(rgba[7], 255, enc);
    const zero = encodeDem(Float32Array.of(0), enc);
    assert.deepEqual([...rgba.subarray(0, 3)], [...zero.subarray(0, 3)], `${enc}: the RGB of no-data is that of 0 m`);
    const back = decodeDem(rgba, enc);
    assert.ok(Number.isNaN(back[0]), enc);
    assert.equal(back[1], 12, enc);
  }
});

test('out of range: heights clamp to the ends of the encoding, infinities included', () => {
  for (const enc of ENCODINGS) {
    const [lo, hi] = DEM_RANGE[enc];
    const back = decodeDem(encodeDem(Float32Array.of(-1e9, 1e9, -Infinity, Infinity), enc), enc);
    assert.deepEqual([...back], [Math.fround(lo), Math.fround(hi), Math.fround(lo), Math.fround(hi)], enc);
  }
});

test('property: encode then decode is within half a step (plus float32 rounding) of every in-range height', () => {
  for (const enc of ENCODINGS) {
    const [lo, hi] = DEM_RANGE[enc];
    const tolerance = DEM_PRECISION[enc] / 2 + Math.max(Math.abs(lo), Math.abs(hi)) * 2 ** -23;
    fc.assert(
      fc.property(fc.array(fc.double({ min: lo, max: hi, noNaN: true }), { minLength: 1, maxLength: 64 }), (heights) => {
        const input = Float32Array.from(heights);
        const rgba = encodeDem(input, enc);
        const back = decodeDem(rgba, enc);
        for (let i = 0; i < input.length; i++) {
          assert.equal(rgba[i * 4 + 3], 255);
          assert.ok(Math.abs(back[i] - input[i]) <= tolerance, `${enc}: ${input[i]} came back as ${back[i]}`);
        }
      }),
      { numRuns: 300 },
    );
  }
});

test('property: decode then encode gives the same bytes for every opaque pixel of an Earth height', () => {
  // Float32 holds a 0.1 m step exactly enough only below about 2^17 m, so mapbox codes are kept under 10 km
  // (red up to 2); terrarium's whole range fits.
  const maxRed: Record<DemEncoding, number> = { terrarium: 255, mapbox: 2 };
  for (const enc of ENCODINGS) {
    const pixel = fc.tuple(fc.integer({ min: 0, max: maxRed[enc] }), fc.integer({ min: 0, max: 255 }), fc.integer({ min: 0, max: 255 }));
    fc.assert(
      fc.property(fc.array(pixel, { minLength: 1, maxLength: 32 }), (pixels) => {
        const rgba = Uint8Array.from(pixels.flatMap(([r, g, b]) => [r, g, b, 255]));
        assert.deepEqual(encodeDem(decodeDem(rgba, enc), enc), rgba);
      }),
      { numRuns: 300 },
    );
  }
});
