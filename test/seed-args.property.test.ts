// Property tests of `tileserver-ts seed`'s argument parser (src/cli/seed-args.ts), called directly: bounding
// boxes, zoom ranges, scales and formats written as a user writes them parse to the values written; each kind of
// mistake is refused with one line naming its flag; any argument list at all gives a result, never an exception.
// The same parser through the real command: seed.test.ts ("mistakes are one line naming the flag"). The other
// input a user gives, the --geojson file: any JSON is an area or a CoverageError naming --geojson, and a
// polygon's area holds every tile one of its corners lies in and no tile outside its bounding box.
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { describe, test } from 'node:test';
import fc from './helpers/fast-check.js';
import { tempDir } from './helpers/foundation.js';
import { parseBBox, parseSeedArgs, parseSeedFormat, parseSeedScale, parseZoomRange } from '../src/cli/seed-args.js';
import { bboxCoverage, CoverageError, geojsonCoverage, tilesAt } from '../src/seed/coverage.js';
import { lonLatToTile } from '../src/tiles/coords.js';

fc.configureGlobal({ ...fc.readConfigureGlobal(), includeErrorInReport: true });

/** A decimal as people write it: integers, fractions, a leading minus, up to 6 decimals. */
const decimal = (min: number, max: number) =>
  fc.tuple(fc.integer({ min: min * 1e6, max: max * 1e6 }), fc.constantFrom(0, 1, 3, 6)).map(([micro, places]) => {
    const text = (micro / 1e6).toFixed(places);
    return { v: Number(text), text };
  });

const BASE = ['--config', 'c.toml', '--style', 'world', '--zoom', '0-2', '--warm'];
const without = (args: string[], flag: string) => {
  const i = args.indexOf(flag);
  return i < 0 ? args : [...args.slice(0, i), ...args.slice(i + 2)];
};

describe('seed arguments (properties)', () => {
  test('a box written W,S,E,N with west < east and south < north parses to its four numbers', () => {
    fc.assert(
      fc.property(decimal(-180, 180), decimal(-180, 180), decimal(-90, 90), decimal(-90, 90), fc.boolean(), (a, b, c, d, spaced) => {
        fc.pre(a.v !== b.v && c.v !== d.v);
        const [w, e] = a.v < b.v ? [a, b] : [b, a];
        const [s, n] = c.v < d.v ? [c, d] : [d, c];
        const text = [w, s, e, n].map((x) => x.text).join(spaced ? ', ' : ',');
        assert.deepEqual(parseBBox(text), [w.v, s.v, e.v, n.v]);
        const parsed = parseSeedArgs([...BASE, '--bbox', text]);
        assert.equal(parsed.kind, 'seed', JSON.stringify(parsed));
      }),
      { numRuns: 1000 },
    );
  });

  test('a box with a wrong part is refused naming --bbox', () => {
    const wrong = fc.oneof(
      // west not below east, south not below north, out of range, not numbers, too few or many parts
      decimal(-180, 180).map((a) => `${a.text},0,${a.text},1`),
      decimal(-90, 90).map((a) => `0,${a.text},1,${a.text}`),
      fc.constantFrom('-181,0,1,1', '0,-91,1,1', '0,0,181,1', '0,0,1,91', '1,2,3', '1,2,3,4,5', 'a,b,c,d', '1e3,0,2,1', '', ',,,', 'NaN,0,1,1', '0x1,0,2,1'),
      fc.string({ maxLength: 30 }).filter((t) => !/^[\d\s,.-]*$/.test(t)),
    );
    fc.assert(
      fc.property(wrong, (text) => {
        const r = parseBBox(text);
        assert.equal(typeof r, 'string', `${JSON.stringify(text)} accepted`);
        assert.match(r as string, /^--bbox: /);
        const parsed = parseSeedArgs([...BASE, `--bbox=${text}`]);
        assert.equal(parsed.kind, 'usage');
        assert.match((parsed as { message: string }).message, /^--bbox/);
      }),
      { numRuns: 800 },
    );
  });

  test('zoom ranges: MIN-MAX and one zoom within 0..22 parse; anything else is refused naming --zoom', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 22 }), fc.integer({ min: 0, max: 22 }), fc.boolean(), (a, b, single) => {
        const text = single ? String(a) : `${a}-${b}`;
        const r = parseZoomRange(text);
        if (single || a <= b) assert.deepEqual(r, single ? [a, a] : [a, b]);
        else assert.match(r as string, /^--zoom: the first zoom is above the second/);
      }),
      { numRuns: 600 },
    );
    fc.assert(
      fc.property(fc.oneof(fc.integer({ min: 23, max: 99 }).map(String), fc.string({ maxLength: 8 }).filter((t) => !/^\d{1,2}(-\d{1,2})?$/.test(t))), (text) => {
        assert.match(parseZoomRange(text) as string, /^--zoom: /);
      }),
      { numRuns: 600 },
    );
  });

  test('scales 1..3 and the formats (with their other names) parse; others are refused naming the flag', () => {
    fc.assert(
      fc.property(fc.string({ maxLength: 6 }), (text) => {
        const s = parseSeedScale(text);
        if (['1', '2', '3'].includes(text)) assert.equal(s, Number(text));
        else assert.match(s as string, /^--scale: /);
        const f = parseSeedFormat(text);
        const names: Record<string, string> = { png: 'png', jpg: 'jpg', jpeg: 'jpg', webp: 'webp', pbf: 'pbf', mvt: 'pbf', mlt: 'mlt' };
        if (Object.hasOwn(names, text)) assert.deepEqual(f, { ok: true, format: names[text] });
        else assert.ok(!f.ok && f.message.startsWith('--format: '));
      }),
      { numRuns: 1000 },
    );
    for (const [format, ok] of [['png', true], ['webp', true], ['jpeg', true], ['pbf', false], ['mlt', false]] as const) {
      const r = parseSeedArgs([...BASE, '--bbox', '0,0,1,1', '--format', format]);
      assert.equal(r.kind, ok ? 'seed' : 'usage', `a style in ${format}`);
    }
  });

  test('any argument list gives a result, never an exception; a usage message is one line naming the flag', () => {
    const token = fc.oneof(
      fc.constantFrom('--config', '--style', '--source', '--bbox', '--geojson', '--zoom', '--format', '--scale', '--tile-size', '--out', '--warm', '--resume', '--dry-run', '--keep-empty', '--concurrency', '--bogus', '-h', '--', '-'),
      fc.constantFrom('c.toml', 'world', '0-3', '5,45,10,48', 'x.pmtiles', 'y.mbtiles', 'png', '2', '512', '0', '-1', ''),
      fc.string({ maxLength: 12 }),
    );
    fc.assert(
      fc.property(fc.array(token, { maxLength: 14 }), fc.boolean(), (tokens, complete) => {
        const argv = complete ? [...without(BASE, '--zoom'), '--bbox', '0,0,1,1', ...tokens] : tokens;
        const r = parseSeedArgs(argv);
        assert.ok(['seed', 'help', 'usage'].includes(r.kind));
        if (r.kind === 'usage') {
          assert.ok(!r.message.includes('\n'), r.message);
          // A flag's mistake names the flag; a stray word or an unknown option is quoted as what it is.
          assert.match(r.message, /--[a-z]|^seed takes no positional argument|^unknown seed option/, `names no flag: ${r.message}`);
        }
        if (r.kind === 'seed') {
          assert.ok(r.minZoom <= r.maxZoom && r.maxZoom <= 22);
          assert.ok((r.out !== undefined) !== r.warm || (r.dryRun && r.out === undefined && !r.warm));
        }
      }),
      { numRuns: 2000 },
    );
  });

  test('a --geojson file of any JSON is an area or one CoverageError naming --geojson', () => {
    const file = path.join(tempDir('tsts-seed-geojson-'), 'area.geojson');
    const position = fc.oneof(fc.tuple(fc.double({ min: -200, max: 200, noNaN: true }), fc.double({ min: -100, max: 100, noNaN: true })), fc.anything());
    const geometry = fc.record({ type: fc.constantFrom('Point', 'MultiPoint', 'LineString', 'MultiLineString', 'Polygon', 'MultiPolygon', 'Box'), coordinates: fc.oneof(position, fc.array(position, { maxLength: 4 }), fc.array(fc.array(position, { maxLength: 4 }), { maxLength: 3 })) });
    const doc = fc.oneof(fc.jsonValue(), geometry, fc.record({ type: fc.constant('Feature'), geometry: fc.oneof(geometry, fc.constant(null)) }), fc.record({ type: fc.constant('FeatureCollection'), features: fc.array(fc.record({ type: fc.constant('Feature'), geometry }), { maxLength: 3 }) }));
    fc.assert(
      fc.property(doc, (d) => {
        writeFileSync(file, JSON.stringify(d) ?? '');
        try {
          const c = geojsonCoverage(file);
          const [w, s, e, n] = c.bbox;
          assert.ok(w <= e && s <= n && w >= -180 && e <= 180 && s >= -90 && n <= 90, `bbox ${c.bbox}`);
        } catch (err) {
          assert.ok(err instanceof CoverageError, `not a CoverageError: ${(err as Error).stack}`);
          assert.match(err.message, /^--geojson: /);
          assert.ok(!err.message.includes('\n'));
        }
      }),
      { numRuns: 600 },
    );
  });

  test("a polygon's tiles include each corner's tile and lie within its bounding box's tiles", () => {
    const file = path.join(tempDir('tsts-seed-polygon-'), 'polygon.geojson');
    const corner = fc.tuple(fc.double({ min: 5, max: 10, noNaN: true }), fc.double({ min: 45, max: 48, noNaN: true }));
    fc.assert(
      fc.property(fc.array(corner, { minLength: 3, maxLength: 7 }), fc.integer({ min: 0, max: 9 }), (ring, z) => {
        writeFileSync(file, JSON.stringify({ type: 'Polygon', coordinates: [[...ring, ring[0]]] }));
        const c = geojsonCoverage(file);
        const keys = new Set([...tilesAt(c, z)].map((t) => `${t.x}/${t.y}`));
        const box = new Set([...tilesAt(bboxCoverage(c.bbox), z)].map((t) => `${t.x}/${t.y}`));
        for (const k of keys) assert.ok(box.has(k), `${k} outside the bounding box's tiles`);
        for (const [lon, lat] of ring) {
          const t = lonLatToTile(lon, lat, z);
          assert.ok(keys.has(`${t.x}/${t.y}`), `the tile of corner ${lon},${lat} at z${z} is missing`);
        }
      }),
      { numRuns: 500 },
    );
  });
});
