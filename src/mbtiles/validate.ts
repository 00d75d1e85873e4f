// `mbtiles validate`: SQLite's integrity check, the schema, a unique (zoom, column, row) index, tile
// coordinates in range, each stored per-tile MD5 against its bytes, and the `agg_tiles_hash` against the tiles
// (or, with `update`, written). Each check streams its rows; the first failure is the one line reported.
import { aggTilesHash } from './agg-hash.js';
import { AGG, MbtilesError, metaGet, metaSet, positionTable, type OpenArchive } from './archive.js';
import type { Progress } from './progress.js';

export interface Validation {
  schema: string;
  /** The agg_tiles_hash the tiles give. */
  computed: string;
  /** The one stored before (undefined: none). */
  stored: string | undefined;
  updated: boolean;
}

function check(a: OpenArchive): void {
  const { db, file, schema } = a;
  const result = db.pragma('quick_check', { simple: false }) as { quick_check: string }[];
  if (result.length !== 1 || result[0].quick_check !== 'ok') throw new MbtilesError(`${file}: damaged (SQLite integrity check: ${result[0]?.quick_check ?? 'no answer'})`);
  const table = positionTable(schema);
  const indexes = db.prepare('SELECT name FROM pragma_index_list(?) WHERE "unique" = 1').all(table) as { name: string }[];
  const unique = indexes.some(({ name }) => {
    const cols = (db.prepare('SELECT name FROM pragma_index_info(?)').all(name) as { name: string }[]).map((c) => c.name).sort().join(',');
    return cols === 'tile_column,tile_row,zoom_level';
  });
  if (!unique) throw new MbtilesError(`${file}: table ${table} has no unique index on (zoom_level, tile_column, tile_row)`);
  const bad = db
    .prepare(
      `SELECT zoom_level z, tile_column x, tile_row y FROM ${table} WHERE typeof(zoom_level) != 'integer' OR zoom_level < 0 OR zoom_level > 30
        OR typeof(tile_column) != 'integer' OR tile_column < 0 OR tile_column >= (1 << zoom_level)
        OR typeof(tile_row) != 'integer' OR tile_row < 0 OR tile_row >= (1 << zoom_level) LIMIT 1`,
    )
    .get() as { z: unknown; x: unknown; y: unknown } | undefined;
  if (bad) throw new MbtilesError(`${file}: tile ${String(bad.z)}/${String(bad.x)}/${String(bad.y)} (zoom/column/row) is not a tile position`);
  if (schema === 'flat-with-hash') {
    const wrong = db.prepare("SELECT zoom_level z, tile_column x, tile_row y FROM tiles_with_hash WHERE upper(tile_hash) IS NOT md5_hex(tile_data) AND NOT (tile_data IS NULL AND tile_hash = '') LIMIT 1").get() as { z: number; x: number; y: number } | undefined;
    if (wrong) throw new MbtilesError(`${file}: tile ${wrong.z}/${wrong.x}/${wrong.y} (zoom/column/row) does not match its tile_hash`);
  }
  if (schema === 'normalized') {
    const missing = db.prepare('SELECT tile_id FROM map WHERE tile_id IS NOT NULL AND NOT EXISTS (SELECT 1 FROM images WHERE images.tile_id = map.tile_id) LIMIT 1').get() as { tile_id: string } | undefined;
    if (missing) throw new MbtilesError(`${file}: map names image ${missing.tile_id}, which images does not hold`);
    const wrong = db.prepare('SELECT tile_id FROM images WHERE upper(tile_id) IS NOT md5_hex(tile_data) LIMIT 1').get() as { tile_id: string } | undefined;
    if (wrong) throw new MbtilesError(`${file}: image ${wrong.tile_id} is not named by the MD5 of its bytes`);
  }
}

export function validate(a: OpenArchive, update: boolean, progress?: Progress): Validation {
  check(a);
  const stored = metaGet(a.db, AGG);
  const computed = aggTilesHash(a.db, progress);
  let updated = false;
  if (computed !== stored) {
    if (!update) throw new MbtilesError(`${a.file}: agg_tiles_hash ${stored === undefined ? 'is not stored' : `${stored} is stored`} but the tiles give ${computed} (write it with --update)`);
    metaSet(a.db, AGG, computed);
    updated = true;
  }
  return { schema: a.schema, computed, stored, updated };
}
