// `mbtiles apply-patch BASE DIFF [OUT]`: applies a diff (ours or martin's) to BASE in place, or to a copy of it at
// OUT. As martin does: the diff's `agg_tiles_hash_before_apply` must be BASE's `agg_tiles_hash` (else refused
// without --force), its tiles replace BASE's, its NULL tiles delete, its metadata replaces BASE's (NULL removes)
// and BASE's `agg_tiles_hash` becomes the diff's `agg_tiles_hash_after_apply`. One transaction: a failure leaves
// BASE as it was. Only the diff's rows are read and written, so the time follows the diff's size, not BASE's.
import { constants, copyFileSync, existsSync, rmSync } from 'node:fs';
import { AFTER, AGG, attach, BEFORE, detectSchema, dropUnusedImages, noteImagesAt, insertTiles, MbtilesError, metaGet, openArchive, positionTable, tileSelect, type OpenArchive } from './archive.js';
import { metaTable } from './diff.js';
import { PATCH_TABLE } from '../sources/mbtiles-patch-record.js';

export interface PatchResult {
  /** Tiles written and deleted. */
  written: number;
  deleted: number;
  /** The agg_tiles_hash BASE (or OUT) now stores. */
  after: string | undefined;
  /** Every tile position the diff names, as (zoom, column, TMS row): what a server serving BASE must expire. */
  positions: () => Iterable<[number, number, number]>;
}

export function applyPatch(baseFile: string, diffFile: string, out: string | undefined, force: boolean): PatchResult {
  const patch = openArchive(diffFile);
  const before = metaGet(patch.db, BEFORE);
  const after = metaGet(patch.db, AFTER);
  patch.db.close();
  if (!force && (before === undefined || after === undefined)) throw new MbtilesError(`${diffFile}: not a diff file (no ${before === undefined ? BEFORE : AFTER}); apply it with --force`);
  const target = out ?? baseFile;
  if (out !== undefined) {
    if (existsSync(out)) throw new MbtilesError(`${out}: already exists`);
    openArchive(baseFile).db.close();
    // A copy-on-write clone where the file system offers one, else a plain copy.
    copyFileSync(baseFile, out, constants.COPYFILE_FICLONE);
  }
  let base;
  try {
    base = openArchive(target, true);
  } catch (err) {
    if (out !== undefined) rmSync(out, { force: true });
    throw err;
  }
  const { db, schema } = base;
  try {
    if (schema === 'normalized-dedup-id') throw new MbtilesError(`${baseFile}: the normalized-dedup-id schema is not patched in place; copy it to another schema first`);
    const baseHash = metaGet(db, AGG);
    if (!force && baseHash === undefined) throw new MbtilesError(`${baseFile}: stores no agg_tiles_hash, so the diff cannot be checked against it (mbtiles validate --update writes it; or --force)`);
    if (!force && before !== baseHash) throw new MbtilesError(`${diffFile}: made for another base (it expects agg_tiles_hash ${before}, ${baseFile} has ${baseHash}); refused without --force`);
    attach(db, diffFile, 'p');
    const p = openSchema(db, diffFile);
    const rows = tileSelect('p', p, schema !== 'flat');
    let written = 0;
    let deleted = 0;
    db.transaction(() => {
      noteImagesAt(db, schema, rows);
      written = insertTiles(db, schema, `SELECT * FROM (${rows}) WHERE tile_data IS NOT NULL`, 'OR REPLACE');
      // One keyed delete per marker: a `(zoom, column, row) IN (...)` would scan BASE's whole table.
      const del = db.prepare(`DELETE FROM ${positionTable(schema)} WHERE zoom_level = ? AND tile_column = ? AND tile_row = ?`);
      for (const [z, x, y] of db.prepare(`SELECT zoom_level, tile_column, tile_row FROM (${rows}) WHERE tile_data IS NULL`).raw().all() as [number, number, number][]) deleted += del.run(z, x, y).changes;
      dropUnusedImages(db, schema);
      if (metaTable(db, 'p')) {
        db.exec('CREATE TABLE IF NOT EXISTS metadata (name TEXT NOT NULL PRIMARY KEY, value TEXT)');
        const entries = db.prepare('SELECT name, value FROM p.metadata WHERE name IS NOT NULL').all() as { name: string; value: unknown }[];
        const del = db.prepare('DELETE FROM metadata WHERE name = ?');
        const put = db.prepare('INSERT INTO metadata (name, value) VALUES (?, ?)');
        for (const { name, value } of entries) {
          if (name === AGG || name === BEFORE) continue;
          const key = name === AFTER ? AGG : name;
          del.run(key);
          if (value !== null) put.run(key, String(value));
        }
      }
      const now = metaGet(db, AGG);
      if (out === undefined && baseHash !== undefined && now !== undefined) recordPatch(db, rows, baseHash, now);
    })();
    const positions = function* (): Iterable<[number, number, number]> {
      const again = openArchive(diffFile);
      try {
        const stmt = again.db.prepare(`SELECT zoom_level, tile_column, tile_row FROM (${tileSelect('main', again.schema, false)})`).raw();
        for (const r of stmt.iterate()) yield r as [number, number, number];
      } finally {
        again.db.close();
      }
    };
    return { written, deleted, after: metaGet(db, AGG), positions };
  } catch (err) {
    if (out !== undefined) {
      db.close();
      rmSync(out, { force: true });
    }
    throw err;
  } finally {
    if (db.open) db.close();
  }
}

/**
 * Keeps in BASE the positions this patch touched, under BASE's hashes before and after (PATCH_TABLE): a server
 * serving BASE cannot read the old content of a file changed in place, and expires exactly these tiles instead
 * of the whole source. Replaces the record of an earlier patch.
 */
function recordPatch(db: OpenArchive['db'], rows: string, before: string, after: string): void {
  db.exec(`CREATE TABLE IF NOT EXISTS ${PATCH_TABLE} (before TEXT NOT NULL, after TEXT NOT NULL, zoom_level INTEGER, tile_column INTEGER, tile_row INTEGER); DELETE FROM ${PATCH_TABLE}`);
  db.prepare(`INSERT INTO ${PATCH_TABLE} SELECT ?, ?, zoom_level, tile_column, tile_row FROM (${rows})`).run(before, after);
}

function openSchema(db: OpenArchive['db'], file: string) {
  return detectSchema(db, file, 'p');
}
