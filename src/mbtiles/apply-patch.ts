// `mbtiles apply-patch BASE DIFF [OUT]`: applies a diff (ours or martin's) to BASE in place, or to a copy of it at
// OUT. As martin does: the diff's `agg_tiles_hash_before_apply` must be BASE's stored `agg_tiles_hash` (else refused
// without --force), its tiles replace BASE's, its NULL tiles delete, its metadata replaces BASE's (NULL removes)
// and BASE's `agg_tiles_hash` becomes the diff's `agg_tiles_hash_after_apply`. Only the diff's rows are read and
// written, so the time follows the diff's size, not BASE's (docs/mbtiles.md, "What each verb reads").
// A failure or a crash leaves BASE as it was (in place: one transaction in SQLite's rollback journal with its
// syncs, as BASE is the user's file) and OUT absent (OUT is patched as `OUT.partial`, a file nobody else has
// seen: no journal and no syncs until one fsync before it is renamed to OUT).
import { closeSync, constants, copyFileSync, existsSync, fsyncSync, openSync, renameSync, rmSync } from 'node:fs';
import { AFTER, AGG, attach, BEFORE, detectSchema, dropUnusedImages, noteImagesAt, insertTiles, MbtilesError, metaGet, openArchive, positionSelect, positionTable, tileSelect, type OpenArchive } from './archive.js';
import { metaTable } from './diff.js';
import { PATCH_TABLE } from '../sources/mbtiles-patch-record.js';

/**
 * The page cache of the patching connection, in KiB (SQLite's default is 2 MB). The transaction's changed pages
 * must stay in it until the commit: once it is full, SQLite spills them to the file mid-transaction, and each spill
 * syncs the journal first (1 % of a 1 GB archive changes about 10 MB of pages). Only what the patch touches is
 * cached, so memory follows the diff up to this bound.
 */
const PATCH_CACHE_KIB = 64 * 1024;

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
  if (out !== undefined && existsSync(out)) throw new MbtilesError(`${out}: already exists`);
  // BASE is checked before anything is written or copied: a diff of another base costs no copy of BASE.
  const checked = openArchive(baseFile);
  let baseHash: string | undefined;
  try {
    if (checked.schema === 'normalized-dedup-id') throw new MbtilesError(`${baseFile}: the normalized-dedup-id schema is not patched in place; copy it to another schema first`);
    baseHash = metaGet(checked.db, AGG);
    if (!force && baseHash === undefined) throw new MbtilesError(`${baseFile}: stores no agg_tiles_hash, so the diff cannot be checked against it (mbtiles validate --update writes it; or --force)`);
    if (!force && before !== baseHash) throw new MbtilesError(`${diffFile}: made for another base (it expects agg_tiles_hash ${before}, ${baseFile} has ${baseHash}); refused without --force`);
  } finally {
    checked.db.close();
  }
  const partial = out === undefined ? undefined : `${out}.partial`;
  if (partial !== undefined) {
    rmSync(partial, { force: true });
    // A copy-on-write clone where the file system offers one, else a plain copy.
    copyFileSync(baseFile, partial, constants.COPYFILE_FICLONE);
  }
  let base: OpenArchive | undefined;
  try {
    base = openArchive(partial ?? baseFile, true);
    const { db, schema } = base;
    db.pragma(`cache_size = -${PATCH_CACHE_KIB}`);
    if (partial !== undefined) {
      // OUT.partial is ours until the rename: a crash leaves no OUT whatever state the file is in.
      db.pragma('journal_mode = OFF');
      db.pragma('synchronous = OFF');
    }
    attach(db, diffFile, 'p');
    const p = detectSchema(db, diffFile, 'p');
    const rows = tileSelect('p', p, schema !== 'flat');
    const positions = positionSelect('p', p);
    let written = 0;
    let deleted = 0;
    db.transaction(() => {
      noteImagesAt(db, schema, positions);
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
      if (out === undefined && baseHash !== undefined && now !== undefined) recordPatch(db, positions, baseHash, now);
    })();
    const result = { written, deleted, after: metaGet(db, AGG), positions: diffPositions(diffFile) };
    db.close();
    if (partial !== undefined && out !== undefined) {
      // The one sync of OUT (SQLite made none), so that OUT names a complete file once it exists.
      const fd = openSync(partial, 'r+');
      try {
        fsyncSync(fd);
      } finally {
        closeSync(fd);
      }
      renameSync(partial, out);
    }
    return result;
  } catch (err) {
    if (base?.db.open) base.db.close();
    if (partial !== undefined) rmSync(partial, { force: true });
    throw err;
  }
}

/** Every tile position the diff names, read again from the diff when a caller asks (the server's expiry). */
function diffPositions(diffFile: string): () => Iterable<[number, number, number]> {
  return function* () {
    const again = openArchive(diffFile);
    try {
      const stmt = again.db.prepare(positionSelect('main', again.schema)).raw();
      for (const r of stmt.iterate()) yield r as [number, number, number];
    } finally {
      again.db.close();
    }
  };
}

/**
 * Keeps in BASE the positions this patch touched, under BASE's hashes before and after (PATCH_TABLE): a server
 * serving BASE cannot read the old content of a file changed in place, and expires exactly these tiles instead
 * of the whole source. Replaces the record of an earlier patch.
 */
function recordPatch(db: OpenArchive['db'], positions: string, before: string, after: string): void {
  db.exec(`CREATE TABLE IF NOT EXISTS ${PATCH_TABLE} (before TEXT NOT NULL, after TEXT NOT NULL, zoom_level INTEGER, tile_column INTEGER, tile_row INTEGER); DELETE FROM ${PATCH_TABLE}`);
  db.prepare(`INSERT INTO ${PATCH_TABLE} SELECT ?, ?, zoom_level, tile_column, tile_row FROM (${positions})`).run(before, after);
}
