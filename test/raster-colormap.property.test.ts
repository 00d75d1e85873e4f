// Property-based tests of what users write for rasters: colormap colours (hex strings in the configuration,
// validated by the schema and read by parseHexColor) and the colormap lookups (continuous interpolation,
// discrete ±0.5 matches, dynamic rescaling).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from './helpers/fast-check.js';
import { validateConfig } from '../src/config/load.js';
import { ConfigError } from '../src/config/errors.js';
import { applyColormap, colorOf, parseHexColor, prepareColormap } from '../src/raster/colormap.js';

const RUNS = { numRuns: 1000 };
const byte = fc.integer({ min: 0, max: 255 });
const hex2 = (n: number) => n.toString(16).padStart(2, '0');
/** The colour forms the documentation lists, as a reference independent of the parser. */
const HEX_FORM = /^#?([0-9a-fA-F]{3}|[0-9a-fA-F]{4}|[0-9a-fA-F]{6}|[0-9a-fA-F]{8})$/;

const withColor = (color: string) => ({
  sources: [{ id: 'dem', type: 'cog', path: 'dem.tif', colormap: { entries: [{ value: 0, color }] } }],
});

test('a colour written as #rrggbbaa, #rrggbb, #rgb or #rgba reads back as its channels', () => {
  fc.assert(
    fc.property(byte, byte, byte, byte, fc.boolean(), (r, g, b, a, upper) => {
      const c = (s: string) => (upper ? s.toUpperCase() : s);
      assert.deepEqual(parseHexColor(c(`#${hex2(r)}${hex2(g)}${hex2(b)}${hex2(a)}`)), [r, g, b, a]);
      assert.deepEqual(parseHexColor(c(`${hex2(r)}${hex2(g)}${hex2(b)}`)), [r, g, b, 255]);
      const n = (v: number) => v >> 4;
      assert.deepEqual(parseHexColor(`#${n(r).toString(16)}${n(g).toString(16)}${n(b).toString(16)}`), [n(r) * 17, n(g) * 17, n(b) * 17, 255]);
    }),
    RUNS,
  );
});

test('the configuration accepts exactly the documented colour forms, and names the key otherwise', () => {
  fc.assert(
    fc.property(fc.oneof(fc.string(), fc.stringMatching(/^#?[0-9a-fA-FxX]{0,9}$/)), (color) => {
      let error: unknown;
      try {
        validateConfig(withColor(color), 'test.toml', '/');
      } catch (err) {
        error = err;
      }
      if (HEX_FORM.test(color)) {
        assert.equal(error, undefined);
        assert.equal(parseHexColor(color).length, 4);
      } else {
        assert.ok(error instanceof ConfigError, `"${color}" rejected`);
        assert.match(error.message, /sources\[0\]\.colormap\.entries\[0\]\.color/);
        assert.throws(() => parseHexColor(color));
      }
    }),
    RUNS,
  );
});

const entryList = fc
  .uniqueArray(fc.integer({ min: -10_000, max: 10_000 }), { minLength: 2, maxLength: 6 })
  .map((vs) => vs.sort((a, b) => a - b).map((v, i) => ({ value: v * 4, color: `#${hex2((i * 53) % 256)}${hex2((i * 101) % 256)}${hex2((i * 29) % 256)}` })));

test('continuous: each channel lies between the colours of the entries around the value; clamped outside', () => {
  fc.assert(
    fc.property(entryList, fc.double({ min: -50_000, max: 50_000, noNaN: true }), (entries, value) => {
      const cm = prepareColormap({ map_type: 'continuous', rescale_mode: 'static', nodata_color: '#00000000', entries });
      const got = colorOf(cm, value);
      const colors = entries.map((e) => parseHexColor(e.color));
      if (value <= entries[0].value) return assert.deepEqual(got, colors[0]);
      if (value >= entries[entries.length - 1].value) return assert.deepEqual(got, colors[colors.length - 1]);
      const i = entries.findIndex((e) => e.value >= value);
      for (let k = 0; k < 4; k++) {
        const lo = Math.min(colors[i - 1][k], colors[i][k]);
        const hi = Math.max(colors[i - 1][k], colors[i][k]);
        assert.ok(got[k] >= lo && got[k] <= hi, `channel ${k} ${got[k]} in ${lo}..${hi}`);
      }
    }),
    RUNS,
  );
});

test('discrete: within ±0.5 of an entry its colour, further away nodata_color (entries 4 apart)', () => {
  fc.assert(
    fc.property(entryList, fc.nat(5), fc.double({ min: -0.5, max: 0.5, noNaN: true }), fc.double({ min: 0.501, max: 1.5, noNaN: true }), (entries, pick, near, far) => {
      const cm = prepareColormap({ map_type: 'discrete', rescale_mode: 'none', nodata_color: '#01020304', entries });
      const e = entries[pick % entries.length];
      assert.deepEqual(colorOf(cm, e.value + near), parseHexColor(e.color));
      assert.deepEqual(colorOf(cm, e.value + far), [1, 2, 3, 4]);
    }),
    RUNS,
  );
});

test('dynamic: a value is looked up at (v - min) / (max - min); nodata pixels get nodata_color', () => {
  fc.assert(
    fc.property(fc.double({ min: -1000, max: 1000, noNaN: true }), fc.double({ min: 1, max: 1000, noNaN: true }), fc.double({ min: 0, max: 1, noNaN: true }), (min, range, t) => {
      const cm = prepareColormap({ map_type: 'continuous', rescale_mode: 'dynamic', nodata_color: '#00ff0080', entries: [{ value: 0, color: '#000000' }, { value: 1, color: '#ff0000' }] });
      const out = new Uint8Array(8);
      applyColormap(cm, [min + t * range, 12345], [255, 0], out, { min, max: min + range });
      assert.ok(Math.abs(out[0] - t * 255) <= 1, `${out[0]} vs ${t * 255}`);
      assert.deepEqual([out[1], out[2], out[3]], [0, 0, 255]);
      assert.deepEqual(Array.from(out.subarray(4)), [0, 255, 0, 128]);
    }),
    RUNS,
  );
});
