// Which tiles differ between two MBTiles archives, found inside SQLite: the new file is ATTACHed to a connection
// on the old one and their tile rows are joined by coordinates. Between two archives of the `map` + `images`
// layout (mbutil's) the rows' `tile_id`s are compared without reading the images: that layout names an image by
// a hash of its bytes, so an equal id means equal bytes. Otherwise (a `tiles` table or view on either side) the
// blobs are compared by SQLite, every tile read once on each side. Rows are read one at a time (a cursor, with
// the event loop given a turn every few thousand rows); only the changed tiles found are held, up to `maxTiles`.
import Database from 'better-sqlite3';
import { unique } from './area-times.js';
import type { ArchiveDiff, DiffOptions } from './pmtiles-diff.js';
import { tileKey, validTile } from './tile-key.js';

type Db = InstanceType<typeof Database>;

/** The tile rows of one side as `(z, x, y, d)`: `d` the bytes, or the image's id between two map/images archives. */
function rows(db: Db, schema: 'main' | 'new', ids: boolean): string {
  if (hasTable(db, schema, 'tiles')) return `SELECT zoom_level AS z, tile_column AS x, tile_row AS y, tile_data AS d FROM ${schema}.tiles`;
  if (ids) return `SELECT zoom_level AS z, tile_column AS x, tile_row AS y, tile_id AS d FROM ${schema}.map`;
  return `SELECT m.zoom_level AS z, m.tile_column AS x, m.tile_row AS y, i.tile_data AS d FROM ${schema}.map m JOIN ${schema}.images i ON i.tile_id = m.tile_id`;
}

function hasTable(db: Db, schema: string, name: string): boolean {
  return db.prepare(`SELECT 1 FROM ${schema}.sqlite_master WHERE type IN ('table', 'view') AND name = ?`).get(name) !== undefined;
}

/**
 * The tiles that differ between the archive at `oldFile` and the one at `newFile`: rows in one only, or whose
 * bytes (or image ids, see above) differ. `oldFile` may be `/proc/self/fd/N`: an old file replaced by a rename
 * stays readable through a descriptor held open on it.
 */
export async function diffMbtiles(oldFile: string, newFile: string, options: DiffOptions): Promise<ArchiveDiff> {
  const db = new Database(oldFile, { readonly: true, fileMustExist: true });
  try {
    db.prepare('ATTACH DATABASE ? AS new').run(newFile);
    const mapImages = (s: 'main' | 'new') => !hasTable(db, s, 'tiles') && hasTable(db, s, 'map') && hasTable(db, s, 'images');
    const ids = mapImages('main') && mapImages('new');
    const o = rows(db, 'main', ids);
    const n = rows(db, 'new', ids);
    // Rows of the old archive missing from or different in the new one, then rows the new one added.
    const sql = `WITH o AS (${o}), n AS (${n})
      SELECT o.z, o.x, o.y FROM o LEFT JOIN n ON n.z = o.z AND n.x = o.x AND n.y = o.y WHERE n.d IS NOT o.d
      UNION ALL
      SELECT n.z, n.x, n.y FROM n WHERE NOT EXISTS (SELECT 1 FROM o WHERE o.z = n.z AND o.x = n.x AND o.y = n.y)`;
    const keys: number[] = [];
    const yieldEvery = options.yieldEvery ?? 4096;
    let steps = 0;
    for (const r of db.prepare(sql).raw().iterate() as IterableIterator<[number, number, number]>) {
      const [z, x, row] = r;
      // MBTiles rows count from the south (TMS); a row naming no tile changes nothing a URL can reach.
      const y = 2 ** z - 1 - row;
      if (validTile(z, x, y)) keys.push(tileKey(z, x, y));
      if (keys.length > options.maxTiles) return { kind: 'whole', reason: `more than ${options.maxTiles} tiles changed` };
      if (++steps % yieldEvery === 0) await new Promise((resolve) => setImmediate(resolve));
    }
    return { kind: 'tiles', tiles: unique(Float64Array.from(keys).sort()), read: 0 };
  } finally {
    db.close();
  }
}
