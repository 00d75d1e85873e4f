// The diffs of replaced archives (src/expire/pmtiles-diff.ts, mbtiles-diff.ts): for two archives, the tiles
// listed are exactly those present in one only or stored with other bytes, whatever the runs, shared contents
// and leaf directories of the PMTiles writer, and whatever the MBTiles layout of either side (read page by page
// through the sources' own connections).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import path from 'node:path';
import { Compression, TileType, type RangeResponse, type Source } from 'pmtiles';
import fc from './helpers/fast-check.js';
import { tempDir, writeMbtiles } from './helpers/foundation.js';
import { buildPmtiles, type PmtilesTileInput } from '../src/seed/pmtiles-writer.js';
import { diffPmtiles, type ArchiveDiff } from '../src/expire/pmtiles-diff.js';
import { diffMbtiles } from '../src/expire/mbtiles-diff.js';
import { keyTile, tileKey } from '../src/expire/tile-key.js';
import { MbtilesSource } from '../src/sources/mbtiles.js';
import type { MbtilesSourceConfig } from '../src/config/schema.js';

/** An archive in memory, read as the server reads a file: byte ranges. */
class MemorySource implements Source {
  reads = 0;
  constructor(private readonly buf: Buffer) {}
  getKey() {
    return 'memory';
  }
  getBytes(offset: number, length: number): Promise<RangeResponse> {
    this.reads += length;
    const part = this.buf.subarray(offset, offset + length);
    return Promise.resolve({ data: part.buffer.slice(part.byteOffset, part.byteOffset + part.length) as ArrayBuffer });
  }
}

type Tiles = Map<string, Buffer>;

const OPTS = { tileType: TileType.Mvt, tileCompression: Compression.None, bounds: [-180, -85, 180, 85] as [number, number, number, number], center: [0, 0, 0] as [number, number, number], metadata: {} };

function pmtiles(tiles: Tiles, small: boolean): Buffer {
  const input: PmtilesTileInput[] = [...tiles].map(([k, data]) => {
    const [z, x, y] = k.split('/').map(Number);
    return { z, x, y, data };
  });
  // Small roots force leaf directories even for a few tiles.
  return buildPmtiles(input, { ...OPTS, ...(small ? { leafSize: 4, maxRootBytes: 200 } : {}) });
}

/** The keys of the tiles that differ, worked out naively from the two maps. */
function expected(before: Tiles, after: Tiles): number[] {
  const out: number[] = [];
  for (const k of new Set([...before.keys(), ...after.keys()])) {
    const a = before.get(k);
    const b = after.get(k);
    if (!a || !b || !a.equals(b)) {
      const [z, x, y] = k.split('/').map(Number);
      out.push(tileKey(z, x, y));
    }
  }
  return out.sort((p, q) => p - q);
}

function listed(diff: ArchiveDiff): number[] {
  assert.equal(diff.kind, 'tiles', diff.kind === 'whole' ? diff.reason : '');
  return diff.kind === 'tiles' ? [...diff.tiles] : [];
}

const names = (keys: number[]) => keys.map((k) => keyTile(k).join('/'));

/** Tiles of zooms 0 to 5 with contents from a small pool (shared contents, runs, equal lengths at other offsets). */
const tilesArb = fc
  .uniqueArray(
    fc.integer({ min: 0, max: 5 }).chain((z) => fc.tuple(fc.constant(z), fc.nat(2 ** z - 1), fc.nat(2 ** z - 1), fc.integer({ min: 0, max: 5 }))),
    { minLength: 1, maxLength: 120, selector: ([z, x, y]) => `${z}/${x}/${y}` },
  )
  .map((list) => new Map(list.map(([z, x, y, c]) => [`${z}/${x}/${y}`, content(c)] as const)));

/** Content number n: contents 0-3 share one length, so only their bytes tell them apart. */
const content = (n: number) => Buffer.from(n < 4 ? `tile-${n}` : `longer-tile-${n}`);

/** A change to each tile (0 keep, 1 other bytes of the same length, 2 another length, 3 removed) and tiles added. */
const changesArb = fc.record({
  each: fc.array(fc.integer({ min: 0, max: 3 }), { minLength: 120, maxLength: 120 }),
  added: fc.uniqueArray(fc.tuple(fc.integer({ min: 0, max: 6 }), fc.nat(63), fc.nat(63)), { maxLength: 20 }),
});

function changed(before: Tiles, changes: { each: number[]; added: [number, number, number][] }): Tiles {
  const after: Tiles = new Map();
  let i = 0;
  for (const [k, data] of before) {
    const what = changes.each[i++];
    if (what === 0) after.set(k, data);
    else if (what === 1) after.set(k, Buffer.from(data.toString().replace(/\d$/, (d) => String((Number(d) + 1) % 4))));
    else if (what === 2) after.set(k, Buffer.concat([data, Buffer.from('+')]));
  }
  for (const [z, x, y] of changes.added) if (x < 2 ** z && y < 2 ** z) after.set(`${z}/${x}/${y}`, content(x % 6));
  return after.size ? after : new Map([['0/0/0', content(0)]]);
}

test('diffPmtiles lists exactly the tiles added, removed or stored with other bytes (property, with and without leaves)', async () => {
  await fc.assert(
    fc.asyncProperty(tilesArb, changesArb, fc.boolean(), async (before, changes, small) => {
      const after = changed(before, changes);
      const diff = await diffPmtiles(new MemorySource(pmtiles(before, small)), new MemorySource(pmtiles(after, small)), { maxTiles: 1e6 });
      assert.deepEqual(names(listed(diff)), names(expected(before, after)));
    }),
    { numRuns: 300 },
  );
});

test('diffPmtiles: 1 % of 4,096 tiles changed, through leaf directories; unchanged tiles of another length are not read', async () => {
  const before: Tiles = new Map();
  for (let x = 0; x < 64; x++) for (let y = 0; y < 64; y++) before.set(`6/${x}/${y}`, Buffer.from(`tile ${x} ${y} ${'#'.repeat((x * 7 + y) % 50)}`));
  const after = new Map(before);
  const touched = ['6/3/4', '6/10/10', '6/63/0', '6/20/31'];
  after.set('6/3/4', Buffer.from(String(after.get('6/3/4')).replace('tile', 'TILE'))); // same length, other bytes
  after.set('6/10/10', Buffer.concat([after.get('6/10/10')!, Buffer.from('!')])); // another length
  after.delete('6/63/0');
  after.set('6/20/31', Buffer.from('x')); // another length
  for (let i = 0; i < 37; i++) {
    const k = `6/${i}/${(i * 13) % 64}`;
    after.set(k, Buffer.from(String(after.get(k)).replace('tile', 'Tile')));
    touched.push(k);
  }
  const newSrc = new MemorySource(pmtiles(after, true));
  const diff = await diffPmtiles(new MemorySource(pmtiles(before, true)), newSrc, { maxTiles: 1e6 });
  const want = [...new Set(touched)].map((k) => tileKey(...(k.split('/').map(Number) as [number, number, number]))).sort((a, b) => a - b);
  assert.deepEqual(names(listed(diff)), names(want));
  assert.equal(want.length, 41);
  // Every tile kept its length except the three that did not: the bytes of equal-length tiles are read, once.
  assert.ok(diff.kind === 'tiles' && diff.read > 0 && diff.read < 2 * pmtiles(before, true).length);
});

test('diffPmtiles: past maxTiles, or a changed tile type, the whole source', async () => {
  const before: Tiles = new Map([['1/0/0', content(1)], ['1/1/0', content(2)], ['1/0/1', content(3)]]);
  const after: Tiles = new Map([['1/0/0', content(4)], ['1/1/0', content(5)], ['1/0/1', content(3)]]);
  const diff = await diffPmtiles(new MemorySource(pmtiles(before, false)), new MemorySource(pmtiles(after, false)), { maxTiles: 1 });
  assert.deepEqual(diff, { kind: 'whole', reason: 'more than 1 tiles changed' });
  const png = buildPmtiles([{ z: 0, x: 0, y: 0, data: content(1) }], { ...OPTS, tileType: TileType.Png });
  const typed = await diffPmtiles(new MemorySource(pmtiles(before, false)), new MemorySource(png), { maxTiles: 10 });
  assert.deepEqual(typed, { kind: 'whole', reason: 'the tile type changed' });
});

test('diffMbtiles lists exactly the changed tiles, between any two layouts (property)', async () => {
  const dir = tempDir('tsts-mbdiff-');
  let n = 0;
  const open = (file: string) => MbtilesSource.open({ id: 'm', type: 'mbtiles', path: file } as MbtilesSourceConfig);
  const layouts = fc.constantFrom<'tiles' | 'map-images'>('tiles', 'map-images');
  await fc.assert(
    fc.asyncProperty(tilesArb, changesArb, layouts, layouts, async (before, changes, la, lb) => {
      const after = changed(before, changes);
      const file = (t: Tiles, layout: 'tiles' | 'map-images') =>
        writeMbtiles(path.join(dir, `${++n}.mbtiles`), { format: 'pbf' }, [...t].map(([k, data]) => { const [z, x, y] = k.split('/').map(Number); return { z, x, y, data }; }), layout);
      const [a, b] = await Promise.all([open(file(before, la)), open(file(after, lb))]);
      try {
        const diff = await diffMbtiles(a, b, { maxTiles: 1e6, pageRows: 7 });
        assert.deepEqual(names(listed(diff)), names(expected(before, after)));
      } finally {
        await Promise.all([a.close(), b.close()]);
      }
    }),
    { numRuns: 25 },
  );
});
