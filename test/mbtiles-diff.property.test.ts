// `mbtiles diff` and `apply-patch` over random small archives, every pair of schemas: the diff holds exactly the
// tiles a model of the two versions says changed (new bytes, added, deleted), the same as the byte comparison
// of the same tiles in flat files gives (the hash-only path of flat-with-hash and normalized files must not
// differ from it), and applying it to OLD gives NEW's tiles, with no image left unnamed or missing (normalized).
// NEW may hold deletion markers (rows without a tile, as a diff file has): they count as no tile.
import assert from 'node:assert/strict';
import { copyFileSync, existsSync, mkdtempSync, rmSync } from 'node:fs';
import path from 'node:path';
import { test } from 'node:test';
import Database from 'better-sqlite3';
import fc from './helpers/fast-check.js';
import { tempDir } from './helpers/foundation.js';
import { aggTilesHash } from '../src/mbtiles/agg-hash.js';
import { createArchive, insertTiles, WRITABLE_SCHEMAS, type WritableSchema } from '../src/mbtiles/archive.js';
import { applyPatch } from '../src/mbtiles/apply-patch.js';
import { diff } from '../src/mbtiles/diff.js';

// Hundreds of small files, each written with SQLite's syncs: in memory where the machine has /dev/shm.
const dir = existsSync('/dev/shm') ? mkdtempSync('/dev/shm/tsts-mbtiles-prop-') : tempDir('tsts-mbtiles-prop-');
process.once('exit', () => rmSync(dir, { recursive: true, force: true }));
let serial = 0;
const file = (name: string) => path.join(dir, `${++serial}-${name}.mbtiles`);

/** Every position of zooms 0-2 (21), as z/x/row. */
const POSITIONS = [0, 1, 2].flatMap((z) => Array.from({ length: 4 ** z }, (_, i) => `${z}/${i >> z}/${i & (2 ** z - 1)}`));
/** Few distinct contents, so that equal tiles (one image in normalized files) and equal hashes are common. */
const CONTENTS = ['a', 'b', 'c', 'd', 'e'].map((c) => Buffer.from(`${c} `.repeat(5 + c.charCodeAt(0) % 7)));

/** A position's tile: content index, or null for a deletion marker (a row without a tile). */
type Version = Map<string, number | null>;

function build(schema: WritableSchema, tiles: Version): string {
  const out = file(schema);
  const a = createArchive(out, schema);
  a.db.exec('CREATE TEMP TABLE t (zoom_level INTEGER, tile_column INTEGER, tile_row INTEGER, tile_data BLOB, tile_hash TEXT)');
  const ins = a.db.prepare('INSERT INTO temp.t VALUES (?, ?, ?, ?, NULL)');
  for (const [k, c] of tiles) ins.run(...k.split('/').map(Number), c === null ? null : CONTENTS[c]);
  insertTiles(a.db, schema, 'SELECT * FROM temp.t', '');
  a.db.prepare("INSERT INTO metadata VALUES ('agg_tiles_hash', ?)").run(aggTilesHash(a.db));
  a.db.close();
  return out;
}

type Row = [key: string, content: string | null];
/** The positions of a diff or archive with their bytes as text (null: no tile), whatever its schema. */
function rows(f: string, markers: boolean): Row[] {
  const db = new Database(f, { readonly: true });
  try {
    const has = (t: string) => db.prepare('SELECT 1 FROM sqlite_master WHERE name = ?').get(t) !== undefined;
    const sql = has('map')
      ? 'SELECT m.zoom_level, m.tile_column, m.tile_row, i.tile_data FROM map m LEFT JOIN images i ON i.tile_id = m.tile_id'
      : `SELECT zoom_level, tile_column, tile_row, tile_data FROM ${has('tiles_with_hash') ? 'tiles_with_hash' : 'tiles'}`;
    const all = (db.prepare(`${sql} ORDER BY 1, 2, 3`).raw().all() as [number, number, number, Buffer | null][]).map(([z, x, y, d]): Row => [`${z}/${x}/${y}`, d === null ? null : d.toString()]);
    return markers ? all : all.filter(([, d]) => d !== null);
  } finally {
    db.close();
  }
}

/** What a diff of OLD to NEW must hold: NEW's tiles OLD lacks or holds with other bytes; null where OLD has a tile NEW has not. */
function expected(old: Version, next: Version): Row[] {
  const out: Row[] = [];
  for (const k of POSITIONS) {
    const o = old.get(k) ?? null;
    const n = next.get(k) ?? null;
    if (n !== null && (o === null || CONTENTS[o] !== CONTENTS[n])) out.push([k, CONTENTS[n].toString()]);
    else if (n === null && o !== null) out.push([k, null]);
  }
  return out.sort(([a], [b]) => a.localeCompare(b, 'en', { numeric: true }));
}
const sorted = (r: Row[]) => [...r].sort(([a], [b]) => a.localeCompare(b, 'en', { numeric: true }));

/** OLD: tiles at some positions; NEW: each position kept, given other bytes, removed, marked deleted, or added. */
const versions = fc
  .array(fc.tuple(fc.option(fc.nat(CONTENTS.length - 1), { nil: undefined }), fc.oneof(fc.constant('keep' as const), fc.constant('drop' as const), fc.constant('mark' as const), fc.nat(CONTENTS.length - 1))), { minLength: POSITIONS.length, maxLength: POSITIONS.length })
  .map((cells) => {
    const old: Version = new Map();
    const next: Version = new Map();
    cells.forEach(([before, change], i) => {
      const k = POSITIONS[i];
      if (before !== undefined) old.set(k, before);
      if (change === 'keep') {
        if (before !== undefined) next.set(k, before);
      } else if (change === 'mark') next.set(k, null);
      else if (change !== 'drop') next.set(k, change);
    });
    return { old, next };
  });
const schema = fc.constantFrom(...WRITABLE_SCHEMAS);

test('a diff holds exactly the changed tiles whatever the two schemas, as the byte comparison of flat files gives, and applied to OLD gives NEW', () => {
  let withMarkers = 0;
  let hashPaths = 0;
  fc.assert(
    fc.property(versions, schema, schema, ({ old, next }, oldSchema, newSchema) => {
      const want = expected(old, next);
      const oldFile = build(oldSchema, old);
      const newFile = build(newSchema, next);
      const d = file('diff');
      diff(oldFile, newFile, d, false);
      assert.deepEqual(sorted(rows(d, true)), want, 'the diff holds what the model says');
      // The same tiles in flat files: compared by their bytes, the slow path.
      const flatDiff = file('flat-diff');
      diff(build('flat', old), build('flat', next), flatDiff, false);
      assert.deepEqual(sorted(rows(flatDiff, true)), sorted(rows(d, true)), 'the diff equals the byte comparison of the same tiles');
      // Applied to OLD, NEW's tiles; the stored agg_tiles_hash is NEW's.
      const target = file('target');
      copyFileSync(oldFile, target);
      const applied = applyPatch(target, d, undefined, false);
      assert.deepEqual(rows(target, false), rows(newFile, false), 'OLD with the diff applied holds NEW\'s tiles');
      const db = new Database(target, { readonly: true });
      try {
        if (![...next.values()].includes(null)) assert.equal(applied.after, aggTilesHash(db), 'without markers in NEW, the hash NEW stored is the one the result gives');
        if (oldSchema === 'normalized') {
          // Every image named, every named image held: no image dropped that a position still names, none kept that none does.
          const named = (db.prepare('SELECT DISTINCT tile_id FROM map WHERE tile_id IS NOT NULL ORDER BY 1').pluck().all() as string[]);
          assert.deepEqual(db.prepare('SELECT tile_id FROM images ORDER BY 1').pluck().all(), named);
        }
      } finally {
        db.close();
      }
      if ([...next.values()].includes(null)) withMarkers++;
      if (oldSchema !== 'flat' && newSchema !== 'flat') hashPaths++;
    }),
    { numRuns: 80 },
  );
  // The generator reached the forms that matter: NEW with deletion markers, and both files storing hashes.
  assert.ok(withMarkers >= 15, `${withMarkers} runs with markers in NEW`);
  assert.ok(hashPaths >= 15, `${hashPaths} runs on the hash-only path`);
});
