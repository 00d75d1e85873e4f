// An MBTiles file as the `tileserver-ts mbtiles` verbs see it: opened (read-only or for writing), its schema
// recognised, and the SQL each schema needs. The three schemas martin's `mbtiles` tool writes are read and
// written here (flat: `tiles`; flat-with-hash: `tiles_with_hash` with the MD5 of each tile and a `tiles` view;
// normalized: `map` + `images`, an image named by the upper-case MD5 of its bytes), and martin's
// `tiles_shallow` + `tiles_data` layout is read. Work is done in SQL between attached files wherever it can be,
// so that tile bytes cross into JavaScript only where a hash must be computed: memory stays at SQLite's page
// cache whatever the size of the archive.
import Database from 'better-sqlite3';
import { createHash } from 'node:crypto';
import { existsSync, openSync, readSync, closeSync, statSync } from 'node:fs';

export type Db = InstanceType<typeof Database>;

export type MbtilesSchema = 'flat' | 'flat-with-hash' | 'normalized' | 'normalized-dedup-id';
/** The schemas a new file can be written in. */
export const WRITABLE_SCHEMAS = ['flat', 'flat-with-hash', 'normalized'] as const;
export type WritableSchema = (typeof WRITABLE_SCHEMAS)[number];

/** A refusal of the tool: one line for the user, and the exit status (1: bad input or data; 2: usage). */
export class MbtilesError extends Error {
  constructor(message: string, readonly exitCode = 1) {
    super(message);
  }
}

/** Upper-case hex MD5, as martin stores tile hashes and `agg_tiles_hash`. */
export const md5Hex = (data: Uint8Array | string): string => createHash('md5').update(data).digest('hex').toUpperCase();

const SQLITE_MAGIC = 'SQLite format 3\0';

/** Refuses a missing file, one that is not SQLite, and one shorter than its header says (a cut-off copy). */
function checkFile(file: string): void {
  if (!existsSync(file)) throw new MbtilesError(`${file}: no such file`);
  const size = statSync(file).size;
  const head = Buffer.alloc(100);
  const fd = openSync(file, 'r');
  try {
    readSync(fd, head, 0, 100, 0);
  } finally {
    closeSync(fd);
  }
  if (size < 100 || head.toString('latin1', 0, 16) !== SQLITE_MAGIC) throw new MbtilesError(`${file}: not an MBTiles file (not an SQLite database)`);
  // The header's page size (1 means 65,536) times its page count is the file's length when it was last written
  // whole; a copy that stopped early is shorter. (Only trusted while the header's change counter is current.)
  const pageSize = head.readUInt16BE(16) === 1 ? 65536 : head.readUInt16BE(16);
  const pages = head.readUInt32BE(28);
  const valid = head.readUInt32BE(24) === head.readUInt32BE(92);
  if (valid && pages > 0 && size < pageSize * pages) throw new MbtilesError(`${file}: truncated (${size} bytes of ${pageSize * pages})`);
}

/** The user functions the verbs' SQL calls: `md5_hex(blob)` (NULL for NULL). */
function addFunctions(db: Db): void {
  db.function('md5_hex', { deterministic: true }, (v: unknown) => (v === null ? null : md5Hex(v as Buffer)));
}

/** SQLite's own errors in words for one line; anything else unchanged. */
export function sqliteProblem(file: string, err: unknown): MbtilesError {
  if (err instanceof MbtilesError) return err;
  const msg = (err as Error).message;
  if (/malformed|not a database/i.test(msg)) return new MbtilesError(`${file}: damaged or truncated (${msg})`);
  return new MbtilesError(`${file}: ${msg}`);
}

export interface OpenArchive {
  db: Db;
  file: string;
  schema: MbtilesSchema;
}

function columns(db: Db, table: string, schemaName = 'main'): Set<string> {
  const rows = db.prepare(`SELECT name FROM pragma_table_info(?, ?)`).all(table, schemaName) as { name: string }[];
  return new Set(rows.map((r) => r.name));
}
const has = (set: Set<string>, ...names: string[]) => names.every((n) => set.has(n));

/** The schema of the file attached as `schemaName` (`main` for the opened one). */
export function detectSchema(db: Db, file: string, schemaName = 'main'): MbtilesSchema {
  const objects = db.prepare(`SELECT name, type FROM "${schemaName}".sqlite_master WHERE type IN ('table','view')`).all() as { name: string; type: string }[];
  const kind = new Map(objects.map((o) => [o.name, o.type]));
  const table = (n: string) => kind.get(n) === 'table';
  const XYZ = ['zoom_level', 'tile_column', 'tile_row'];
  if (table('map') && table('images') && has(columns(db, 'map', schemaName), ...XYZ, 'tile_id') && has(columns(db, 'images', schemaName), 'tile_id', 'tile_data')) return 'normalized';
  if (table('tiles_shallow') && table('tiles_data') && has(columns(db, 'tiles_shallow', schemaName), ...XYZ, 'tile_data_id')) return 'normalized-dedup-id';
  if (table('tiles_with_hash') && has(columns(db, 'tiles_with_hash', schemaName), ...XYZ, 'tile_data', 'tile_hash')) return 'flat-with-hash';
  if (table('tiles') && has(columns(db, 'tiles', schemaName), ...XYZ, 'tile_data')) return 'flat';
  throw new MbtilesError(`${file}: not an MBTiles file (no tiles table, nor map and images tables)`);
}

/** Opens an MBTiles file for reading, or for writing (`write`), and recognises its schema. */
export function openArchive(file: string, write = false): OpenArchive {
  checkFile(file);
  let db: Db | undefined;
  try {
    db = new Database(file, { readonly: !write, fileMustExist: true });
    addFunctions(db);
    return { db, file, schema: detectSchema(db, file) };
  } catch (err) {
    db?.close();
    throw sqliteProblem(file, err);
  }
}

/** Creates a new, empty MBTiles file in `schema` (with its metadata table). */
export function createArchive(file: string, schema: WritableSchema): OpenArchive {
  const db = new Database(file);
  addFunctions(db);
  db.exec(`CREATE TABLE metadata (name TEXT NOT NULL PRIMARY KEY, value TEXT);\n${CREATE[schema]}`);
  return { db, file, schema };
}

const CREATE: Record<WritableSchema, string> = {
  flat: `CREATE TABLE tiles (zoom_level INTEGER NOT NULL, tile_column INTEGER NOT NULL, tile_row INTEGER NOT NULL, tile_data BLOB,
    PRIMARY KEY (zoom_level, tile_column, tile_row));`,
  'flat-with-hash': `CREATE TABLE tiles_with_hash (zoom_level INTEGER NOT NULL, tile_column INTEGER NOT NULL, tile_row INTEGER NOT NULL,
    tile_data BLOB, tile_hash TEXT, PRIMARY KEY (zoom_level, tile_column, tile_row));
  CREATE VIEW tiles AS SELECT zoom_level, tile_column, tile_row, tile_data FROM tiles_with_hash;`,
  normalized: `CREATE TABLE map (zoom_level INTEGER NOT NULL, tile_column INTEGER NOT NULL, tile_row INTEGER NOT NULL, tile_id TEXT,
    PRIMARY KEY (zoom_level, tile_column, tile_row));
  CREATE TABLE images (tile_id TEXT NOT NULL PRIMARY KEY, tile_data BLOB);
  CREATE VIEW tiles AS SELECT map.zoom_level, map.tile_column, map.tile_row, images.tile_data FROM map JOIN images ON images.tile_id = map.tile_id;`,
};

/** The table that holds one row per tile position (what a deletion removes from). */
export function positionTable(schema: MbtilesSchema): string {
  return { flat: 'tiles', 'flat-with-hash': 'tiles_with_hash', normalized: 'map', 'normalized-dedup-id': 'tiles_shallow' }[schema];
}

/** Every position row of the file attached as `s` (deletion markers of a diff included), without its bytes. */
export function positionSelect(s: string, schema: MbtilesSchema): string {
  return `SELECT zoom_level, tile_column, tile_row FROM "${s}".${positionTable(schema)}`;
}

/**
 * Every tile position of the file attached as `s`, as (zoom_level, tile_column, tile_row, tile_data, tile_hash):
 * `tile_data` NULL where a diff marks a deleted tile (normalized rows whose image is absent count as such),
 * `tile_hash` the stored MD5 (flat-with-hash, normalized) or, with `hashed`, computed; else NULL.
 */
export function tileSelect(s: string, schema: MbtilesSchema, hashed: boolean): string {
  const computed = hashed ? 'md5_hex(tile_data)' : 'NULL';
  switch (schema) {
    case 'flat':
      return `SELECT zoom_level, tile_column, tile_row, tile_data, ${computed} AS tile_hash FROM "${s}".tiles`;
    case 'flat-with-hash':
      return `SELECT zoom_level, tile_column, tile_row, tile_data, CASE WHEN tile_data IS NULL THEN NULL ELSE upper(tile_hash) END AS tile_hash FROM "${s}".tiles_with_hash`;
    case 'normalized':
      return `SELECT m.zoom_level, m.tile_column, m.tile_row, i.tile_data, CASE WHEN i.tile_data IS NULL THEN NULL ELSE upper(m.tile_id) END AS tile_hash FROM "${s}".map m LEFT JOIN "${s}".images i ON i.tile_id = m.tile_id`;
    case 'normalized-dedup-id':
      return `SELECT t.zoom_level, t.tile_column, t.tile_row, t.tile_data, ${hashed ? 'md5_hex(t.tile_data)' : 'NULL'} AS tile_hash FROM (SELECT m.zoom_level, m.tile_column, m.tile_row, d.tile_data FROM "${s}".tiles_shallow m LEFT JOIN "${s}".tiles_data d ON d.tile_data_id = m.tile_data_id) t`;
  }
}

/**
 * The positions of the file attached as `s` that hold a tile, with the tile's stored MD5, without reading the
 * bytes where the schema allows (normalized: `map` alone). Only for the schemas that store a hash. With
 * `markers`, every position row, its `tile_hash` NULL where it holds no tile (a diff's deletion marker).
 */
export function hashSelect(s: string, schema: MbtilesSchema, markers = false): string {
  if (schema === 'normalized') return `SELECT zoom_level, tile_column, tile_row, upper(tile_id) AS tile_hash FROM "${s}".map${markers ? '' : ' WHERE tile_id IS NOT NULL'}`;
  if (markers) return `SELECT zoom_level, tile_column, tile_row, CASE WHEN tile_hash = '' THEN NULL ELSE upper(tile_hash) END AS tile_hash FROM "${s}".tiles_with_hash`;
  return `SELECT zoom_level, tile_column, tile_row, upper(tile_hash) AS tile_hash FROM "${s}".tiles_with_hash WHERE tile_hash IS NOT NULL AND tile_hash != ''`;
}

/** Whether a schema stores an MD5 per tile that can stand for its bytes in a comparison. */
export const storesHash = (schema: MbtilesSchema) => schema === 'flat-with-hash' || schema === 'normalized';

/**
 * Writes the rows of `select` (columns as tileSelect gives them) into the `main` file of `schema`: `mode` is the
 * conflict clause (`OR REPLACE`, `OR IGNORE`, `OR ABORT`). Rows with NULL `tile_data` are written as deletion
 * markers (a diff): NULL bytes, and an empty hash (flat-with-hash) or a NULL image id (normalized), as martin's
 * diffs hold them.
 */
export function insertTiles(db: Db, schema: MbtilesSchema, select: string, mode: string): number {
  const cols = 'zoom_level, tile_column, tile_row';
  switch (schema) {
    case 'flat':
      return db.prepare(`INSERT ${mode} INTO tiles (${cols}, tile_data) SELECT ${cols}, tile_data FROM (${select})`).run().changes;
    case 'flat-with-hash':
      return db.prepare(`INSERT ${mode} INTO tiles_with_hash (${cols}, tile_data, tile_hash) SELECT ${cols}, tile_data, CASE WHEN tile_data IS NULL THEN '' ELSE coalesce(tile_hash, md5_hex(tile_data)) END FROM (${select})`).run().changes;
    case 'normalized':
      db.prepare(`INSERT OR IGNORE INTO images (tile_id, tile_data) SELECT coalesce(tile_hash, md5_hex(tile_data)), tile_data FROM (${select}) WHERE tile_data IS NOT NULL`).run();
      return db.prepare(`INSERT ${mode} INTO map (${cols}, tile_id) SELECT ${cols}, CASE WHEN tile_data IS NULL THEN NULL ELSE coalesce(tile_hash, md5_hex(tile_data)) END FROM (${select})`).run().changes;
    case 'normalized-dedup-id':
      throw new MbtilesError('the normalized-dedup-id schema is read only here; copy it to flat, flat-with-hash or normalized first');
  }
}

/**
 * Notes the images the positions of `positions` (a select of zoom_level, tile_column, tile_row) name now, before
 * they are overwritten or deleted: the only images a patch can leave unnamed (normalized; else nothing).
 */
export function noteImagesAt(db: Db, schema: MbtilesSchema, positions: string): void {
  if (schema !== 'normalized') return;
  db.exec('CREATE TEMP TABLE IF NOT EXISTS replaced_images (tile_id TEXT); DELETE FROM temp.replaced_images');
  db.prepare(`INSERT INTO temp.replaced_images SELECT m.tile_id FROM map m JOIN (${positions}) p ON p.zoom_level = m.zoom_level AND p.tile_column = m.tile_column AND p.tile_row = m.tile_row`).run();
}

/**
 * Removes the images noted by noteImagesAt that no position names any more. Only those are looked at: a scan of
 * `images` would read every tile's bytes. `map` has no index on `tile_id`, so it is read once for all of them, each
 * row looked up among the noted ids (a lookup per noted image scanned the whole of `map` each time: 3 s of a 1 GB
 * patch of 1 % of its tiles).
 */
export function dropUnusedImages(db: Db, schema: MbtilesSchema): void {
  if (schema !== 'normalized' || db.prepare('SELECT 1 FROM temp.replaced_images LIMIT 1').get() === undefined) return;
  const noted = 'SELECT tile_id FROM temp.replaced_images';
  db.prepare(`DELETE FROM images WHERE tile_id IN (${noted}) AND tile_id NOT IN (SELECT tile_id FROM map WHERE tile_id IN (${noted}))`).run();
}

export function attach(db: Db, file: string, as: string): void {
  db.prepare(`ATTACH DATABASE ? AS "${as}"`).run(file);
}

/** A metadata value of the file attached as `s` (undefined when absent or NULL). */
export function metaGet(db: Db, key: string, s = 'main'): string | undefined {
  const has = db.prepare(`SELECT 1 FROM "${s}".sqlite_master WHERE type IN ('table','view') AND name = 'metadata'`).get();
  if (!has) return undefined;
  const row = db.prepare(`SELECT value FROM "${s}".metadata WHERE name = ?`).get(key) as { value: unknown } | undefined;
  return row?.value === null || row?.value === undefined ? undefined : String(row.value);
}

/** Sets (or with `undefined` removes) a metadata value; the table is made if the file has none. */
export function metaSet(db: Db, key: string, value: string | undefined): void {
  db.exec('CREATE TABLE IF NOT EXISTS metadata (name TEXT NOT NULL PRIMARY KEY, value TEXT)');
  db.prepare('DELETE FROM metadata WHERE name = ?').run(key);
  if (value !== undefined) db.prepare('INSERT INTO metadata (name, value) VALUES (?, ?)').run(key, value);
}

export const AGG = 'agg_tiles_hash';
export const BEFORE = 'agg_tiles_hash_before_apply';
export const AFTER = 'agg_tiles_hash_after_apply';
