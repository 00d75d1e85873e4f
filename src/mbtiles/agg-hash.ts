// martin's `agg_tiles_hash`: one MD5 over every tile of the `tiles` view in (zoom_level, tile_column, tile_row)
// order, fed for each tile its zoom, column and row as decimal text and then its bytes (a NULL tile, a diff's
// deletion marker, adds its coordinates only), printed as upper-case hex; no tile at all hashes the empty string.
// Rows are streamed from SQLite one at a time: memory does not grow with the archive.
import { createHash } from 'node:crypto';
import type { Db } from './archive.js';
import type { Progress } from './progress.js';

export function aggTilesHash(db: Db, progress?: Progress, schemaName = 'main'): string {
  const md5 = createHash('md5');
  const total = progress ? (db.prepare(`SELECT count(*) AS n FROM "${schemaName}".tiles`).get() as { n: number }).n : 0;
  const rows = db.prepare(`SELECT zoom_level, tile_column, tile_row, tile_data FROM "${schemaName}".tiles ORDER BY zoom_level, tile_column, tile_row`).raw();
  let n = 0;
  for (const [z, x, y, data] of rows.iterate() as Iterable<[number, number, number, Buffer | null]>) {
    md5.update(`${z}${x}${y}`);
    if (data !== null) md5.update(data);
    if (progress && ++n % 4096 === 0) progress.tick('hashing tiles', n, total);
  }
  progress?.end();
  return md5.digest('hex').toUpperCase();
}
