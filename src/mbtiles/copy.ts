// `mbtiles copy SRC... DST`: the tiles (and metadata) of each source into DST, in order, in SQL between the
// attached files. DST is made in `--dst-type` (default: the first source's schema) when it does not exist;
// an existing DST is only written with an explicit `--on-duplicate`. A tile DST already holds is replaced
// (`override`, also the default between the sources of one new DST: the later source wins), kept (`ignore`), or
// stops the copy (`abort`: a tile with other bytes at a position DST holds; DST is left as it was). The zoom and
// bounding-box filters become WHERE clauses on the positions. The agg_tiles_hash of DST is written at the end.
import { existsSync, rmSync } from 'node:fs';
import { aggTilesHash } from './agg-hash.js';
import { AGG, attach, createArchive, insertTiles, MbtilesError, openArchive, positionTable, storesHash, tileSelect, type OpenArchive, type WritableSchema } from './archive.js';
import { metaTable } from './diff.js';
import type { Progress } from './progress.js';

export type OnDuplicate = 'override' | 'ignore' | 'abort';

export interface CopyOptions {
  minZoom?: number;
  maxZoom?: number;
  /** West, south, east, north in degrees; a tile touching any of them is copied. */
  bboxes: [number, number, number, number][];
  onDuplicate?: OnDuplicate;
  dstType?: WritableSchema;
}

const MAX_ZOOM = 30;

/** The column range and TMS row range of the tiles of zoom `z` that a box touches. */
export function boxTiles(z: number, [w, s, e, n]: [number, number, number, number]): [number, number, number, number] {
  const size = 2 ** z;
  const clampLat = (lat: number) => Math.max(-85.0511287798066, Math.min(85.0511287798066, lat));
  const col = (lon: number) => Math.min(size - 1, Math.max(0, Math.floor(((lon + 180) / 360) * size)));
  const xyzRow = (lat: number) => {
    const r = (clampLat(lat) * Math.PI) / 180;
    return Math.min(size - 1, Math.max(0, Math.floor(((1 - Math.log(Math.tan(r) + 1 / Math.cos(r)) / Math.PI) / 2) * size)));
  };
  // XYZ rows count from the north; MBTiles rows (TMS) from the south.
  return [col(w), col(e), size - 1 - xyzRow(s), size - 1 - xyzRow(n)];
}

/** The WHERE clause of the zoom and area filters (numbers only: nothing from the user is pasted as text). */
export function filterSql(o: CopyOptions, alias = ''): string {
  const p = alias ? `${alias}.` : '';
  const lo = o.minZoom ?? 0;
  const hi = o.maxZoom ?? MAX_ZOOM;
  const parts = [`${p}zoom_level BETWEEN ${lo} AND ${hi}`];
  if (o.bboxes.length > 0) {
    const ors: string[] = [];
    for (let z = lo; z <= hi; z++)
      for (const box of o.bboxes) {
        const [x0, x1, y0, y1] = boxTiles(z, box);
        ors.push(`(${p}zoom_level = ${z} AND ${p}tile_column BETWEEN ${x0} AND ${x1} AND ${p}tile_row BETWEEN ${y0} AND ${y1})`);
      }
    parts.push(`(${ors.join(' OR ')})`);
  }
  return parts.join(' AND ');
}

export function copy(sources: readonly string[], dstFile: string, o: CopyOptions, progress?: Progress): { tiles: number; hash: string } {
  if (sources.length > 9) throw new MbtilesError(`copy takes at most 9 sources at once (SQLite attaches 10 files), got ${sources.length}`);
  const opened = sources.map((s) => openArchive(s));
  for (const a of opened) a.db.close();
  const isNew = !existsSync(dstFile);
  if (!isNew && o.onDuplicate === undefined) throw new MbtilesError(`${dstFile}: already exists; give --on-duplicate override|ignore|abort to copy into it`);
  let dst: OpenArchive;
  if (isNew) {
    const first = opened[0].schema;
    dst = createArchive(dstFile, o.dstType ?? (first === 'normalized-dedup-id' ? 'normalized' : first));
  } else {
    dst = openArchive(dstFile, true);
    if (o.dstType !== undefined && o.dstType !== dst.schema) throw new MbtilesError(`${dstFile}: is ${dst.schema}, not ${o.dstType} (--dst-type applies to a new file)`);
  }
  const onDuplicate = o.onDuplicate ?? 'override';
  const { db, schema } = dst;
  try {
    // Every source attached first (a database cannot be attached or detached inside a transaction), then one
    // transaction for all: an abort leaves DST as it was. SQLite attaches at most 10 files to one connection (DST and 9 sources).
    sources.forEach((f, i) => attach(db, f, `s${i}`));
    db.transaction(() => {
      sources.forEach((file, i) => {
        progress?.tick('copying', i, sources.length);
        const s = `s${i}`;
        const srcSchema = opened[i].schema;
        const select = `SELECT * FROM (${tileSelect(s, srcSchema, schema !== 'flat' && !storesHash(srcSchema))}) t WHERE tile_data IS NOT NULL AND ${filterSql(o, 't')}`;
        if (onDuplicate === 'abort') {
          const here = tileSelect('main', schema, false);
          const clash = db.prepare(`SELECT t.zoom_level z, t.tile_column x, t.tile_row y FROM (${select}) t JOIN (${here}) d ON d.zoom_level = t.zoom_level AND d.tile_column = t.tile_column AND d.tile_row = t.tile_row WHERE d.tile_data IS NOT t.tile_data LIMIT 1`).get() as { z: number; x: number; y: number } | undefined;
          if (clash) throw new MbtilesError(`${file}: tile ${clash.z}/${clash.x}/${clash.y} (zoom/column/row) differs from the one ${dstFile} holds (--on-duplicate abort); nothing was copied`);
        }
        insertTiles(db, schema, select, onDuplicate === 'ignore' ? 'OR IGNORE' : 'OR REPLACE');
        if (metaTable(db, s)) {
          db.exec('CREATE TABLE IF NOT EXISTS metadata (name TEXT NOT NULL PRIMARY KEY, value TEXT)');
          const keep = onDuplicate === 'ignore' || (onDuplicate === 'abort' && !isNew);
          for (const r of db.prepare(`SELECT name, value FROM "${s}".metadata WHERE name IS NOT NULL`).all() as { name: string; value: unknown }[]) {
            if (r.name === AGG) continue;
            const exists = db.prepare('SELECT 1 FROM metadata WHERE name = ?').get(r.name) !== undefined;
            if (exists && keep) continue;
            db.prepare('DELETE FROM metadata WHERE name = ?').run(r.name);
            db.prepare('INSERT INTO metadata (name, value) VALUES (?, ?)').run(r.name, r.value === null ? null : String(r.value));
          }
        }
      });
    })();
    sources.forEach((_, i) => db.exec(`DETACH DATABASE s${i}`));
    progress?.end();
    const hash = aggTilesHash(db, progress);
    db.prepare('DELETE FROM metadata WHERE name = ?').run(AGG);
    db.prepare('INSERT INTO metadata (name, value) VALUES (?, ?)').run(AGG, hash);
    const tiles = (db.prepare(`SELECT count(*) AS n FROM ${positionTable(schema)}`).get() as { n: number }).n;
    db.close();
    return { tiles, hash };
  } catch (err) {
    db.close();
    if (isNew) rmSync(dstFile, { force: true });
    throw err;
  }
}
