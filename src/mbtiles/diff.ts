// `mbtiles diff OLD NEW DIFF`: a file, in OLD's schema, holding what turns OLD into NEW as martin's diffs do:
// tiles new or changed in NEW with their bytes, tiles NEW no longer has as NULL, metadata changed or added with
// its new value and removed as NULL, and the `agg_tiles_hash_before_apply`/`_after_apply` of OLD and NEW. The
// comparison runs in SQLite between the attached files, each side read in its (zoom, column, row) index order;
// when both store per-tile MD5s (flat-with-hash, normalized) only those are compared, without reading the bytes
// of an unchanged tile.
import { existsSync, rmSync } from 'node:fs';
import { aggTilesHash } from './agg-hash.js';
import { AFTER, AGG, attach, BEFORE, createArchive, hashSelect, insertTiles, MbtilesError, metaGet, metaSet, openArchive, positionTable, storesHash, tileSelect, type OpenArchive, type WritableSchema } from './archive.js';
import type { Progress } from './progress.js';

export interface DiffResult {
  changed: number;
  deleted: number;
  before: string;
  after: string;
}

/** The stored agg_tiles_hash of a file to diff (computed when it stores none); a diff file itself is refused. */
export function hashForDiff(a: OpenArchive, force: boolean, progress?: Progress): string {
  if (!force && (metaGet(a.db, BEFORE) !== undefined || metaGet(a.db, AFTER) !== undefined)) throw new MbtilesError(`${a.file}: is a diff file (it has ${BEFORE}); diffing it is refused without --force`);
  return metaGet(a.db, AGG) ?? aggTilesHash(a.db, progress);
}

export function diff(oldFile: string, newFile: string, out: string, force: boolean, progress?: Progress): DiffResult {
  if (existsSync(out)) throw new MbtilesError(`${out}: already exists`);
  const oldA = openArchive(oldFile);
  const newA = openArchive(newFile);
  let dst: OpenArchive | undefined;
  try {
    const before = hashForDiff(oldA, force, progress);
    const after = hashForDiff(newA, force, progress);
    const schema: WritableSchema = oldA.schema === 'normalized-dedup-id' ? 'normalized' : oldA.schema;
    dst = createArchive(out, schema);
    const db = dst.db;
    attach(db, oldFile, 'a');
    attach(db, newFile, 'b');
    const byHash = storesHash(oldA.schema) && storesHash(newA.schema);
    const needHash = schema !== 'flat';
    const o = tileSelect('a', oldA.schema, false);
    const n = tileSelect('b', newA.schema, needHash && !byHash);
    const same = 'o.tile_data IS n.tile_data';
    const pos = (p: string, q: string) => `${p}.zoom_level = ${q}.zoom_level AND ${p}.tile_column = ${q}.tile_column AND ${p}.tile_row = ${q}.tile_row`;
    let changed = 0;
    let deleted = 0;
    db.transaction(() => {
      if (byHash) {
        // Both store MD5s: the positions are compared on them alone (normalized: on `map`, no image read), and
        // only the changed tiles' bytes are read, by key. A flat-with-hash row keeps its hash after the tile's
        // bytes, so reading a hash walks the tile's pages: each file's hashes are read once, in one pass over
        // NEW that looks each position up in OLD. That pass also finds the positions NEW marks deleted; the
        // positions NEW has no row for at all are found on the (zoom, column, row) indexes alone.
        const oh = hashSelect('a', oldA.schema);
        const nAll = hashSelect('b', newA.schema, true);
        db.exec('CREATE TEMP TABLE changed (zoom_level INTEGER, tile_column INTEGER, tile_row INTEGER, gone INTEGER NOT NULL, PRIMARY KEY (zoom_level, tile_column, tile_row))');
        db.prepare(
          `INSERT INTO temp.changed SELECT n.zoom_level, n.tile_column, n.tile_row, n.tile_hash IS NULL FROM (${nAll}) n LEFT JOIN (${oh}) o ON ${pos('o', 'n')}
           WHERE CASE WHEN n.tile_hash IS NULL THEN o.zoom_level IS NOT NULL ELSE o.zoom_level IS NULL OR o.tile_hash IS NOT n.tile_hash END`,
        ).run();
        db.exec(`CREATE TEMP TABLE absent AS SELECT zoom_level, tile_column, tile_row FROM "a".${positionTable(oldA.schema)} p WHERE NOT EXISTS (SELECT 1 FROM "b".${positionTable(newA.schema)} q WHERE ${pos('q', 'p')})`);
        changed = insertTiles(db, schema, `SELECT n.* FROM temp.changed c JOIN (${n}) n ON ${pos('n', 'c')} WHERE NOT c.gone`, '');
        const markers = `SELECT zoom_level, tile_column, tile_row FROM temp.changed WHERE gone UNION ALL SELECT o.zoom_level, o.tile_column, o.tile_row FROM temp.absent p JOIN (${oh}) o ON ${pos('o', 'p')}`;
        deleted = insertTiles(db, schema, `SELECT zoom_level, tile_column, tile_row, NULL AS tile_data, NULL AS tile_hash FROM (${markers})`, '');
        db.exec('DROP TABLE temp.changed; DROP TABLE temp.absent');
      } else {
        // New or changed in NEW (each NEW row looks its position up in OLD's index).
        changed = insertTiles(db, schema, `SELECT n.* FROM (${n}) n LEFT JOIN (${o}) o ON ${pos('o', 'n')} WHERE n.tile_data IS NOT NULL AND (o.zoom_level IS NULL OR NOT (${same}))`, '');
        // Gone from NEW: deletion markers.
        deleted = insertTiles(db, schema, `SELECT o.zoom_level, o.tile_column, o.tile_row, NULL AS tile_data, NULL AS tile_hash FROM (${o}) o WHERE NOT EXISTS (SELECT 1 FROM (${n}) n WHERE ${pos('n', 'o')} AND n.tile_data IS NOT NULL)`, '');
      }
      // Metadata: changed or added with the new value, removed as NULL (the hashes are written below).
      const hasMeta = (s: string) => metaTable(db, s);
      const rows = (s: string) => (hasMeta(s) ? (db.prepare(`SELECT name, value FROM "${s}".metadata WHERE name IS NOT NULL`).all() as { name: string; value: unknown }[]) : []);
      const olds = new Map(rows('a').map((r) => [r.name, r.value === null ? undefined : String(r.value)]));
      const news = new Map(rows('b').map((r) => [r.name, r.value === null ? undefined : String(r.value)]));
      const put = db.prepare('INSERT OR REPLACE INTO metadata (name, value) VALUES (?, ?)');
      for (const name of new Set([...olds.keys(), ...news.keys()])) {
        if (name === AGG || name === BEFORE || name === AFTER) continue;
        if (olds.get(name) !== news.get(name)) put.run(name, news.get(name) ?? null);
      }
      metaSet(db, BEFORE, before);
      metaSet(db, AFTER, after);
    })();
    db.exec('DETACH DATABASE a; DETACH DATABASE b');
    metaSet(db, AGG, aggTilesHash(db));
    return { changed, deleted, before, after };
  } catch (err) {
    dst?.db.close();
    dst = undefined;
    rmSync(out, { force: true });
    throw err;
  } finally {
    dst?.db.close();
    oldA.db.close();
    newA.db.close();
  }
}

export const metaTable = (db: OpenArchive['db'], s: string) => db.prepare(`SELECT 1 FROM "${s}".sqlite_master WHERE type IN ('table','view') AND name = 'metadata'`).get() !== undefined;
