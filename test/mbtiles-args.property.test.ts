// The grammar of `tileserver-ts mbtiles` and `convert`: any argument list parses to a command, help or a usage
// line without throwing; bounding boxes and zooms round-trip; every flag outside its verb is refused.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from './helpers/fast-check.js';
import { parseBbox, parseMbtilesArgs, VERBS } from '../src/cli/mbtiles-args.js';

const token = fc.oneof(fc.string(), fc.constantFrom(...VERBS, 'convert', '--bbox', '--min-zoom', '--max-zoom', '--on-duplicate', '--dst-type', '--force', '--update', '--help', 'a.mbtiles', 'b.mbtiles', '1', '0,0,1,1', 'flat', 'abort'));

test('any argument list: a command, help or one usage line, never an exception', () => {
  fc.assert(
    fc.property(fc.array(token, { maxLength: 8 }), (argv) => {
      const r = parseMbtilesArgs(argv);
      if (r.verb === 'usage') assert.ok(r.message.length > 0 && !r.message.includes('\n'));
    }),
  );
});

test('boxes in range parse to their numbers; out of range or inverted ones are refused', () => {
  const lon = fc.integer({ min: -180, max: 180 });
  const lat = fc.integer({ min: -90, max: 90 });
  fc.assert(
    fc.property(lon, lat, lon, lat, (a, b, c, d) => {
      const text = `${a},${b},${c},${d}`;
      const r = parseBbox(text);
      if (a <= c && b <= d) assert.deepEqual(r, [a, b, c, d]);
      else assert.match(r as string, /west above east or south above north/);
    }),
  );
  for (const bad of ['1,2,3', '1,2,3,4,5', 'a,b,c,d', '-181,0,0,0', '0,-91,1,1', '', '1e3,0,0,0']) assert.equal(typeof parseBbox(bad), 'string', bad);
});

test('copy: zooms 0..30 accepted, others refused; min above max refused; --bbox repeats', () => {
  fc.assert(
    fc.property(fc.integer({ min: 0, max: 40 }), fc.integer({ min: 0, max: 40 }), (lo, hi) => {
      const r = parseMbtilesArgs(['copy', 'a.mbtiles', 'b.mbtiles', '--min-zoom', String(lo), `--max-zoom=${hi}`, '--bbox', '0,0,1,1', '--bbox', '2,2,3,3']);
      if (lo > 30 || hi > 30) assert.equal(r.verb, 'usage');
      else if (lo > hi) assert.deepEqual(r, { verb: 'usage', message: `--min-zoom ${lo} is above --max-zoom ${hi}` });
      else {
        assert.equal(r.verb, 'copy');
        if (r.verb === 'copy') assert.deepEqual([r.minZoom, r.maxZoom, r.bboxes.length, r.sources, r.dst], [lo, hi, 2, ['a.mbtiles'], 'b.mbtiles']);
      }
    }),
  );
});

test("a flag of another verb is refused, naming it", () => {
  assert.deepEqual(parseMbtilesArgs(['validate', 'a.mbtiles', '--force']), { verb: 'usage', message: 'unknown validate option "--force"' });
  assert.deepEqual(parseMbtilesArgs(['diff', 'a', 'b', 'c', '--update']), { verb: 'usage', message: 'unknown diff option "--update"' });
  assert.deepEqual(parseMbtilesArgs(['apply-patch', 'a', 'b', '--force']), { verb: 'apply-patch', base: 'a', diff: 'b', out: undefined, force: true });
  assert.deepEqual(parseMbtilesArgs(['meta-set', 'a', 'k']), { verb: 'meta-set', file: 'a', key: 'k', value: undefined });
  assert.equal(parseMbtilesArgs(['convert', 'a', 'b', '--dst-type', 'tiles']).verb, 'usage');
  assert.deepEqual(parseMbtilesArgs(['copy', 'a', 'b', '--force=1']), { verb: 'usage', message: 'unknown copy option "--force=1"' });
  assert.deepEqual(parseMbtilesArgs(['validate', 'a', '--update=yes']), { verb: 'usage', message: '--update takes no value' });
});
