// What a seed has done so far, kept on disk as it goes: an MBTiles file (SQLite, via better-sqlite3) beside the
// output, named `<out>.partial`. Tiles go into its `tiles` table as they arrive (TMS rows, as MBTiles wants), and
// tiles found empty into `seed_empty`, so that a resumed run skips both. Writes are batched into transactions of
// a few hundred tiles or a second, whichever comes first: a run killed with -9 loses at most that batch, never
// the file (SQLite's rollback journal keeps it whole). An MBTiles output is this file renamed; a PMTiles output
// is built from it (outputs.ts).
import Database from 'better-sqlite3';
import { zxyToTileId } from 'pmtiles';

type Db = InstanceType<typeof Database>;

const BATCH_TILES = 200;
const BATCH_MS = 1000;

export interface JournalTile {
  z: number;
  x: number;
  y: number;
  data: Buffer;
}

export class Journal {
  private readonly db: Db;
  private readonly insertTile: Database.Statement<[number, number, number, Buffer]>;
  private readonly insertEmpty: Database.Statement<[number, number, number]>;
  private pending: (() => void)[] = [];
  private flushTimer: NodeJS.Timeout | undefined;

  constructor(readonly file: string) {
    this.db = new Database(file);
    this.db.exec(`
      CREATE TABLE IF NOT EXISTS metadata (name TEXT PRIMARY KEY, value TEXT);
      CREATE TABLE IF NOT EXISTS tiles (zoom_level INTEGER, tile_column INTEGER, tile_row INTEGER, tile_data BLOB);
      CREATE UNIQUE INDEX IF NOT EXISTS tile_index ON tiles (zoom_level, tile_column, tile_row);
      CREATE TABLE IF NOT EXISTS seed_empty (zoom_level INTEGER, tile_column INTEGER, tile_row INTEGER, PRIMARY KEY (zoom_level, tile_column, tile_row));
    `);
    this.insertTile = this.db.prepare('INSERT OR REPLACE INTO tiles (zoom_level, tile_column, tile_row, tile_data) VALUES (?, ?, ?, ?)');
    this.insertEmpty = this.db.prepare('INSERT OR IGNORE INTO seed_empty (zoom_level, tile_column, tile_row) VALUES (?, ?, ?)');
  }

  /** Keys (`z/x/y`, XYZ rows) of every tile already done: stored or found empty. */
  doneKeys(): Set<string> {
    const keys = new Set<string>();
    for (const table of ['tiles', 'seed_empty']) {
      for (const r of this.db.prepare(`SELECT zoom_level AS z, tile_column AS x, tile_row AS row FROM ${table}`).iterate() as Iterable<{ z: number; x: number; row: number }>) {
        keys.add(`${r.z}/${r.x}/${2 ** r.z - 1 - r.row}`);
      }
    }
    return keys;
  }

  /** The number of tiles stored (not counting empty ones). */
  tileCount(): number {
    return (this.db.prepare('SELECT count(*) AS n FROM tiles').get() as { n: number }).n;
  }

  put(z: number, x: number, y: number, data: Buffer): void {
    this.queue(() => this.insertTile.run(z, x, 2 ** z - 1 - y, data));
  }

  markEmpty(z: number, x: number, y: number): void {
    this.queue(() => this.insertEmpty.run(z, x, 2 ** z - 1 - y));
  }

  private queue(write: () => void): void {
    this.pending.push(write);
    if (this.pending.length >= BATCH_TILES) this.flush();
    else this.flushTimer ??= setTimeout(() => this.flush(), BATCH_MS);
  }

  /** Writes the queued tiles in one transaction. */
  flush(): void {
    clearTimeout(this.flushTimer);
    this.flushTimer = undefined;
    const writes = this.pending;
    if (writes.length === 0) return;
    this.pending = [];
    this.db.transaction(() => writes.forEach((w) => w()))();
  }

  setMetadata(entries: Record<string, string>): void {
    const set = this.db.prepare('INSERT OR REPLACE INTO metadata (name, value) VALUES (?, ?)');
    this.db.transaction(() => Object.entries(entries).forEach(([k, v]) => set.run(k, v)))();
  }

  /**
   * Every stored tile in PMTiles tile-id order (XYZ rows), one at a time: only the coordinates are held in
   * memory to sort them, each tile's bytes are read when its turn comes (a PMTiles output is written from them).
   */
  *tilesInIdOrder(): Generator<JournalTile> {
    const keys = (this.db.prepare('SELECT zoom_level AS z, tile_column AS x, tile_row AS row FROM tiles').all() as { z: number; x: number; row: number }[]).map((k) => ({ ...k, id: zxyToTileId(k.z, k.x, 2 ** k.z - 1 - k.row) }));
    keys.sort((a, b) => a.id - b.id);
    const read = this.db.prepare('SELECT tile_data AS data FROM tiles WHERE zoom_level = ? AND tile_column = ? AND tile_row = ?');
    for (const k of keys) {
      const r = read.get(k.z, k.x, k.row) as { data: Buffer };
      yield { z: k.z, x: k.x, y: 2 ** k.z - 1 - k.row, data: r.data };
    }
  }

  /** Leaves a plain MBTiles file: the seed's own bookkeeping table dropped, the file compacted. */
  finishAsMbtiles(): void {
    this.flush();
    this.db.exec('DROP TABLE IF EXISTS seed_empty');
    this.db.exec('VACUUM');
  }

  close(): void {
    this.flush();
    this.db.close();
  }
}
