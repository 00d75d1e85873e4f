// Property tests of the expiry inputs (src/expire/expire-list.ts, area-tiles.ts, marked-count.ts,
// expire-request.ts, src/cli/expire-args.ts), called directly: an expire list written any way osm2pgsql or a
// shell may write it (LF or CRLF, blank lines, no final newline, any chunking) reads to the keys of its tiles;
// one bad line anywhere is refused with its line number; any bytes at all give a result, never an exception; the
// count of marked tiles equals a brute-force enumeration; an area's tiles hold every tile a point of the geometry
// lies in and nothing outside its box or inside a hole; any JSON body and any argv give a result or a refusal.
// Through the real server: expire-admin.test.ts.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from './helpers/fast-check.js';
import { readExpireList, MAX_LINE_BYTES } from '../src/expire/expire-list.js';
import { AREA_MAX_TILES, areaTiles, areaZoom } from '../src/expire/area-tiles.js';
import { markedTiles } from '../src/expire/marked-count.js';
import { areaRequest, zoomBand } from '../src/expire/expire-request.js';
import { keyTile, tileKey } from '../src/expire/tile-key.js';
import { geojsonArea, boxTileCount } from '../src/tiles/geo-area.js';
import { worldXY } from '../src/tiles/project.js';
import { parseExpireArgs } from '../src/cli/expire-args.js';

fc.configureGlobal({ ...fc.readConfigureGlobal(), includeErrorInReport: true });

const tile = (maxZ = 24) =>
  fc.integer({ min: 0, max: maxZ }).chain((z) => fc.tuple(fc.constant(z), fc.integer({ min: 0, max: 2 ** z - 1 }), fc.integer({ min: 0, max: 2 ** z - 1 })));

/** Text cut into chunks at the given fractions (a stream delivers lines in any pieces). */
async function* chunked(text: string, cuts: number[]): AsyncGenerator<Uint8Array> {
  const bytes = Buffer.from(text);
  const at = [...new Set(cuts.map((c) => Math.floor(c * bytes.length)))].sort((a, b) => a - b);
  let start = 0;
  for (const c of [...at, bytes.length]) {
    if (c > start) yield bytes.subarray(start, c);
    start = Math.max(start, c);
  }
}

const sortedUnique = (keys: number[]) => [...new Set(keys)].sort((a, b) => a - b);

/** One line of a list: a tile, or a blank line. */
const listLine = fc.oneof({ weight: 5, arbitrary: tile().map((t) => ({ tile: t })) }, { weight: 1, arbitrary: fc.constant({ tile: undefined }) });

describe('expire lists', () => {
  test('a list written with any line ends, blank lines and chunking reads to its tiles, sorted without repeats', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(listLine, { maxLength: 60 }), fc.boolean(), fc.boolean(), fc.array(fc.double({ min: 0, max: 1, noNaN: true }), { maxLength: 6 }), async (lines, crlf, finalEnd, cuts) => {
        const eol = crlf ? '\r\n' : '\n';
        const text = lines.map((l) => (l.tile ? l.tile.join('/') : '')).join(eol) + (finalEnd && lines.length ? eol : '');
        const r = await readExpireList(chunked(text, cuts));
        assert.ok(r.ok, JSON.stringify(r));
        const tiles = lines.filter((l) => l.tile).map((l) => l.tile!);
        assert.equal(r.lines, tiles.length);
        assert.deepEqual([...r.tiles], sortedUnique(tiles.map(([z, x, y]) => tileKey(z, x, y))));
      }),
    );
  });

  test('the size given in advance is a hint: a list read with its length, less or more reads to the same tiles', async () => {
    // Lists past the 1,024 keys every buffer starts with, so that a hint too small must grow.
    await fc.assert(
      fc.asyncProperty(fc.array(tile(), { minLength: 1100, maxLength: 3000 }), fc.constantFrom(undefined, 0.2, 1, 3), async (tiles, scale) => {
        const text = tiles.map((t) => t.join('/')).join('\n');
        const r = await readExpireList(chunked(text, [0.5]), undefined, scale === undefined ? undefined : Math.round(Buffer.byteLength(text) * scale));
        assert.ok(r.ok, JSON.stringify(r));
        assert.equal(r.lines, tiles.length);
        assert.deepEqual([...r.tiles], sortedUnique(tiles.map(([z, x, y]) => tileKey(z, x, y))));
      }),
      { numRuns: 40 },
    );
  });

  const badLine = fc.oneof(
    fc.constantFrom('1/2', '1/2/3/4', '/1/2', '1//2', 'a/b/c', '1/1/1 ', ' 1/1/1', '1,1,1', '25/0/0', '2/4/0', '2/0/4', '1/0/0\r1', '123456789/0/0', '-1/0/0', '1.0/0/0'),
    tile(24).map(([z, x, y]) => `${z}/${x + 2 ** z}/${y}`),
  );

  test('one bad line anywhere rejects the whole list, naming its line number (blank lines counted)', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(listLine, { maxLength: 30 }), fc.nat(), badLine, fc.array(listLine, { maxLength: 30 }), fc.boolean(), async (before, _, bad, afterLines, crlf) => {
        const eol = crlf ? '\r\n' : '\n';
        const text = [...before.map((l) => (l.tile ? l.tile.join('/') : '')), bad, ...afterLines.map((l) => (l.tile ? l.tile.join('/') : ''))].join(eol);
        const r = await readExpireList(chunked(text, [0.3, 0.7]));
        assert.equal(r.ok, false, `${JSON.stringify(bad)} was accepted`);
        if (!r.ok) {
          assert.equal(r.line, before.length + 1);
          assert.ok(r.problem.length > 0);
        }
      }),
    );
  });

  test('any bytes at all are a list or a refusal naming a line that exists, never an exception', async () => {
    await fc.assert(
      fc.asyncProperty(fc.uint8Array({ maxLength: 200 }), async (bytes) => {
        const r = await readExpireList(chunked(Buffer.from(bytes).toString('latin1'), [0.5]));
        const lf = bytes.filter((b) => b === 0x0a).length;
        if (!r.ok) assert.ok(r.line >= 1 && r.line <= lf + 1, `line ${r.line} of ${lf + 1}`);
        else for (const k of r.tiles) assert.equal(tileKey(...keyTile(k)), k);
      }),
    );
  });

  test('a 10 MB line is refused at its line number, read past without being held', async () => {
    async function* huge(): AsyncGenerator<Uint8Array> {
      yield Buffer.from('3/1/1\n');
      const block = Buffer.alloc(1 << 20, '1');
      for (let i = 0; i < 10; i++) yield block;
      yield Buffer.from('\n4/1/1\n');
    }
    const r = await readExpireList(huge());
    assert.deepEqual(r, { ok: false, line: 2, problem: 'a number with more than 8 digits' });
    const spaces = await readExpireList(chunked(`1/1/1\n1/1/${'0'.repeat(8)}${' '.repeat(MAX_LINE_BYTES * 4)}\n`, [0.5]));
    assert.equal(!spaces.ok && spaces.line, 2);
  });

  test('a zoom deeper than the sources are served at is refused', async () => {
    const r = await readExpireList(chunked('14/1/1\n15/1/1\n', []), 14);
    assert.equal(r.ok, false);
    if (!r.ok) assert.deepEqual([r.line, r.problem], [2, 'zoom 15 is deeper than 14, the deepest zoom served here']);
  });
});

describe('the count of marked tiles', () => {
  /** Every tile of zooms lo..hi that is a given tile, an ancestor or a descendant of one, enumerated. */
  function bruteForce(tiles: [number, number, number][], lo: number, hi: number): number {
    const marked = new Set<string>();
    for (const [z, x, y] of tiles) {
      for (let d = lo; d <= hi; d++) {
        if (d <= z) marked.add(`${d}/${x >> (z - d)}/${y >> (z - d)}`);
        else {
          const k = 2 ** (d - z);
          for (let i = 0; i < k; i++) for (let j = 0; j < k; j++) marked.add(`${d}/${x * k + i}/${y * k + j}`);
        }
      }
    }
    return marked.size;
  }

  test('equals a brute-force enumeration over the band, down to the deepest zoom served', () => {
    fc.assert(
      fc.property(fc.array(tile(6), { maxLength: 12 }), fc.integer({ min: 0, max: 7 }), fc.integer({ min: 0, max: 7 }), fc.integer({ min: 0, max: 7 }), (tiles, a, b, deepest) => {
        const band = { min: Math.min(a, b), max: Math.max(a, b) };
        const keys = Float64Array.from(sortedUnique(tiles.map(([z, x, y]) => tileKey(z, x, y))));
        assert.equal(markedTiles(keys, band, deepest), bruteForce(tiles, band.min, Math.min(band.max, deepest)));
      }),
    );
  });

  test('a whole-world expiry over every zoom to 22 is every tile of every zoom', () => {
    let all = 0;
    for (let z = 0; z <= 22; z++) all += 4 ** z;
    assert.equal(markedTiles(Float64Array.of(tileKey(0, 0, 0)), { min: 0, max: Infinity }, 22), all);
  });
});

const lon = fc.double({ min: -180, max: 180, noNaN: true });
const lat = fc.double({ min: -85, max: 85, noNaN: true });

describe('areas', () => {
  test('a polygon with a hole marks every tile a point of its area lies in, and no tile wholly inside its hole', () => {
    fc.assert(
      fc.property(lon, lat, fc.double({ min: 0.01, max: 5, noNaN: true }), fc.integer({ min: 4, max: 12 }), fc.array(fc.tuple(fc.double({ min: 0, max: 1, noNaN: true }), fc.double({ min: 0, max: 1, noNaN: true })), { minLength: 20, maxLength: 20 }), (cx, cy, r, z, samples) => {
        const w = Math.max(-180, cx - r);
        const e = Math.min(180, cx + r);
        const s = Math.max(-85, cy - r);
        const n = Math.min(85, cy + r);
        // The hole: the middle third of the square on both axes.
        const hw = w + (e - w) / 3;
        const he = e - (e - w) / 3;
        const hs = s + (n - s) / 3;
        const hn = n - (n - s) / 3;
        const area = geojsonArea({ type: 'Polygon', coordinates: [[[w, s], [e, s], [e, n], [w, n], [w, s]], [[hw, hs], [hw, hn], [he, hn], [he, hs], [hw, hs]]] }, 'geometry');
        const keys = new Set(areaTiles(area, z));
        const size = 2 ** z;
        for (const [fx, fy] of samples) {
          const px = w + fx * (e - w);
          const py = s + fy * (n - s);
          if (px > hw && px < he && py > hs && py < hn) continue;
          const [wx, wy] = worldXY(px, py);
          const t = tileKey(z, Math.min(size - 1, Math.floor(wx * size)), Math.min(size - 1, Math.floor(wy * size)));
          assert.ok(keys.has(t), `the tile of ${px},${py} at z${z} is not marked`);
        }
        const [hx0, hy0] = worldXY(hw, hn);
        const [hx1, hy1] = worldXY(he, hs);
        for (const k of keys) {
          const [, x, y] = keyTile(k);
          const inHole = x / size > hx0 && (x + 1) / size < hx1 && y / size > hy0 && (y + 1) / size < hy1;
          assert.ok(!inHole, `tile ${z}/${x}/${y} lies wholly inside the hole`);
        }
        assert.ok(keys.size <= boxTileCount(area.bbox, z));
      }),
    );
  });

  test('a line marks the tiles along it, not its box', () => {
    const area = geojsonArea({ type: 'LineString', coordinates: [[-170, -80], [170, 80]] }, 'geometry');
    const tiles = areaTiles(area, 8);
    assert.ok(tiles.length < 2 * 256 + 2, `${tiles.length} tiles for a diagonal line at z8`);
    assert.ok(tiles.length >= 256 - 16);
  });

  test('the zoom of an area keeps it within AREA_MAX_TILES', () => {
    fc.assert(
      fc.property(lon, lon, lat, lat, fc.integer({ min: 0, max: 24 }), (a, b, c, d, deepest) => {
        const area = { bbox: [Math.min(a, b), Math.min(c, d), Math.max(a, b), Math.max(c, d)] as [number, number, number, number], shapes: undefined };
        const z = areaZoom(area, deepest);
        assert.ok(z <= deepest);
        assert.ok(boxTileCount(area.bbox, z) <= AREA_MAX_TILES || z === 0);
        if (z < deepest) assert.ok(boxTileCount(area.bbox, z + 1) > AREA_MAX_TILES);
        assert.equal(areaTiles(area, z).length, boxTileCount(area.bbox, z));
      }),
    );
  });
});

describe('request bodies and arguments', () => {
  test('any JSON body is an area request or a 400 naming what is wrong, never an exception', () => {
    fc.assert(
      fc.property(fc.oneof(fc.jsonValue(), fc.record({ source: fc.oneof(fc.string(), fc.jsonValue()), bbox: fc.oneof(fc.array(fc.double()), fc.jsonValue()), min_zoom: fc.jsonValue() }, { requiredKeys: [] }), fc.record({ source: fc.string(), geometry: fc.jsonValue() })), (doc) => {
        const r = areaRequest(doc);
        if (!r.ok) {
          assert.equal(r.status, 400);
          assert.ok(r.detail.length > 0);
        }
      }),
    );
  });

  test('a bbox in range is accepted; one outside names bbox', () => {
    fc.assert(
      fc.property(lon, lon, lat, lat, (a, b, c, d) => {
        const ok = areaRequest({ source: 's', bbox: [Math.min(a, b), Math.min(c, d), Math.max(a, b), Math.max(c, d)] });
        assert.ok(ok.ok);
        const bad = areaRequest({ source: 's', bbox: [a, c, b + 400, d] });
        assert.ok(!bad.ok && bad.detail.startsWith('bbox:'));
      }),
    );
  });

  test('zoom bands: whole numbers 0..24, min not above max', () => {
    fc.assert(
      fc.property(fc.oneof(fc.integer({ min: -3, max: 30 }), fc.string({ maxLength: 3 })), fc.oneof(fc.integer({ min: -3, max: 30 }), fc.string({ maxLength: 3 })), (a, b) => {
        const r = zoomBand(a, b);
        const num = (v: unknown) => (typeof v === 'number' ? v : /^\d{1,2}$/.test(v as string) ? Number(v) : NaN);
        const [x, y] = [num(a), num(b)];
        const valid = x >= 0 && x <= 24 && y >= 0 && y <= 24 && x <= y;
        assert.equal(r.ok, valid, JSON.stringify([a, b, r]));
      }),
    );
  });

  test('any argv gives expire arguments, help or one usage line, never an exception', () => {
    fc.assert(
      fc.property(fc.array(fc.oneof(fc.constantFrom('--admin', '--source', '--table', '--min-zoom', '--max-zoom', '-', '--help', 'http://h:1', 'list.txt', '3', '30'), fc.string({ maxLength: 12 })), { maxLength: 8 }), (argv) => {
        const r = parseExpireArgs(argv);
        if (r.kind === 'usage') assert.ok(!r.message.includes('\n') && r.message.length > 0);
      }),
    );
    const r = parseExpireArgs(['--admin', 'http://127.0.0.1:9', '--source', 'a', '--min-zoom', '3', '--max-zoom', '12', 'f.txt']);
    assert.deepEqual(r.kind === 'expire' && [r.admin.origin, r.source, r.minZoom, r.maxZoom, r.input], ['http://127.0.0.1:9', 'a', 3, 12, 'f.txt']);
  });
});
