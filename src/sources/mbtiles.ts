// MBTiles archives through better-sqlite3: read-only, prepared statements, TMS row flip.
// Both layouts are served: a `tiles` table (or view), and the deduplicated `map` + `images` tables.
import Database from 'better-sqlite3';
import { closeSync, existsSync, openSync } from 'node:fs';
import { gunzipSync } from 'node:zlib';
import type { MbtilesSourceConfig } from '../config/schema.js';
import { bytesMatchFormat, formatFromMetadata, imageWidth, isGzip, sniffImage, type TileFormat } from '../tiles/format.js';
import { sniffVectorFormat } from '../tiles/vector-sniff.js';
import { demOf } from './dem-info.js';
import { pinArchive, type ArchiveFile } from './archive-file.js';
import { PATCH_TABLE } from './mbtiles-patch-record.js';
import { defaultCenter, parseVectorLayers, SourceOpenError, WORLD_BOUNDS, type Bounds, type Center, type SourceInfo, type TileSource } from './source.js';

type Db = InstanceType<typeof Database>;

export class MbtilesSource implements TileSource {
  private constructor(
    readonly info: SourceInfo,
    private readonly db: Db,
    private readonly select: Database.Statement<[number, number, number], { tile_data: Buffer }>,
    readonly archive: ArchiveFile,
    /** `map-images`: mbutil's deduplicated layout, whose `tile_id` names an image by a hash of its bytes. */
    readonly layout: 'tiles' | 'map-images',
    /** The `agg_tiles_hash` the file stored when the source opened it (martin's; `mbtiles validate --update`). */
    readonly aggTilesHash: string | undefined,
  ) {}

  /**
   * The tile positions (zoom, column, TMS row) of the patch `tileserver-ts mbtiles apply-patch` applied in place,
   * when the file now stores the agg_tiles_hash that patch left and the patch was applied to `before`; else
   * undefined (another change, or more than `max` positions). The record is PATCH_TABLE, written by the same
   * transaction as the patch (src/mbtiles/apply-patch.ts).
   */
  patchedFrom(before: string, max: number): [number, number, number][] | undefined {
    const now = readMetadata(this.db).get('agg_tiles_hash');
    const known = this.db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?").get(PATCH_TABLE);
    if (now === undefined || !known) return undefined;
    const rows = this.db
      .prepare(`SELECT zoom_level, tile_column, tile_row FROM ${PATCH_TABLE} WHERE before = ? AND after = ? LIMIT ?`)
      .raw()
      .all(before, now, max + 1) as [number, number, number][];
    const recorded = this.db.prepare(`SELECT count(*) FROM ${PATCH_TABLE} WHERE before = ? AND after = ?`).pluck().get(before, now) as number;
    return recorded > 0 && rows.length <= max ? rows : undefined;
  }

  private readonly pages = new Map<string, Database.Statement<[number, number, number, number], unknown[]>>();

  /**
   * Up to `limit` tile rows after (zoom, column, row) `after`, in that order, as `[zoom, column, tmsRow, value]`:
   * the value is the tile's bytes, or its image id when `ids` (map-images only). Page by page, so that a diff
   * never holds this connection busy between two tile reads. Uses the archive's (zoom, column, row) index.
   */
  tileRows(after: readonly [number, number, number], limit: number, ids: boolean): [number, number, number, Buffer | string][] {
    const sql = this.layout === 'tiles' ? ROWS_TILES : ids ? ROWS_IDS : ROWS_IMAGES;
    let stmt = this.pages.get(sql);
    if (!stmt) this.pages.set(sql, (stmt = this.db.prepare(sql).raw() as Database.Statement<[number, number, number, number], unknown[]>));
    return stmt.all(after[0], after[1], after[2], limit) as [number, number, number, Buffer | string][];
  }

  static async open(cfg: MbtilesSourceConfig): Promise<MbtilesSource> {
    if (!existsSync(cfg.path)) throw new SourceOpenError(cfg.id, `cannot open MBTiles ${cfg.path}: no such file`);
    let db: Db | undefined;
    let fd: number | undefined;
    try {
      // Pinned before SQLite opens it: the descriptor keeps the file that was served readable after a rename.
      fd = openSync(cfg.path, 'r');
      const archive = pinArchive(cfg.path, fd);
      db = new Database(cfg.path, { readonly: true, fileMustExist: true });
      const names = new Set(
        (db.prepare("SELECT name FROM sqlite_master WHERE type IN ('table','view')").all() as { name: string }[]).map((r) => r.name),
      );
      const layout = names.has('tiles') ? TILES_TABLE : names.has('map') && names.has('images') ? MAP_IMAGES : undefined;
      if (!layout) throw new SourceOpenError(cfg.id, `${cfg.path} is not an MBTiles archive (no tiles table, nor map and images tables)`);
      const metadata = names.has('metadata') ? readMetadata(db) : new Map<string, string>();
      const select = db.prepare(layout.tile) as Database.Statement<[number, number, number], { tile_data: Buffer }>;
      const info = describe(cfg, db, layout, metadata);
      return new MbtilesSource(info, db, select, archive, layout === TILES_TABLE ? 'tiles' : 'map-images', metadata.get('agg_tiles_hash'));
    } catch (err) {
      db?.close();
      if (fd !== undefined) closeSync(fd);
      if (err instanceof SourceOpenError) throw err;
      const msg = (err as Error).message;
      throw new SourceOpenError(cfg.id, `cannot open MBTiles ${cfg.path}: ${/file is not a database/.test(msg) ? 'not an SQLite database' : msg}`);
    }
  }

  getTile(z: number, x: number, y: number): Promise<Uint8Array | undefined> {
    // MBTiles rows count from the south (TMS); URLs count from the north (XYZ).
    const row = this.select.get(z, x, 2 ** z - 1 - y);
    return Promise.resolve(row?.tile_data ?? undefined);
  }

  private closed = false;

  close(): Promise<void> {
    // Once: a descriptor number closed twice may by then belong to another file.
    if (this.closed) return Promise.resolve();
    this.closed = true;
    this.db.close();
    closeSync(this.archive.fd);
    return Promise.resolve();
  }
}

/** The three queries a layout needs. */
interface Layout {
  tile: string;
  sample: string;
  zooms: string;
}
const TILES_TABLE: Layout = {
  tile: 'SELECT tile_data FROM tiles WHERE zoom_level = ? AND tile_column = ? AND tile_row = ?',
  sample: 'SELECT tile_data FROM tiles LIMIT 1',
  zooms: 'SELECT MIN(zoom_level) AS lo, MAX(zoom_level) AS hi FROM tiles',
};
const MAP_IMAGES: Layout = {
  tile: 'SELECT images.tile_data AS tile_data FROM map JOIN images ON images.tile_id = map.tile_id WHERE map.zoom_level = ? AND map.tile_column = ? AND map.tile_row = ?',
  sample: 'SELECT images.tile_data AS tile_data FROM map JOIN images ON images.tile_id = map.tile_id LIMIT 1',
  zooms: 'SELECT MIN(zoom_level) AS lo, MAX(zoom_level) AS hi FROM map',
};

const AFTER = 'WHERE (zoom_level, tile_column, tile_row) > (?, ?, ?) ORDER BY zoom_level, tile_column, tile_row LIMIT ?';
const ROWS_TILES = `SELECT zoom_level, tile_column, tile_row, tile_data FROM tiles ${AFTER}`;
const ROWS_IDS = `SELECT zoom_level, tile_column, tile_row, tile_id FROM map ${AFTER}`;
const ROWS_IMAGES = `SELECT zoom_level, tile_column, tile_row, (SELECT tile_data FROM images WHERE images.tile_id = map.tile_id) FROM map ${AFTER}`;

function readMetadata(db: Db): Map<string, string> {
  const rows = db.prepare('SELECT name, value FROM metadata').all() as { name: string; value: unknown }[];
  return new Map(rows.filter((r) => r.value !== null).map((r) => [r.name, String(r.value)]));
}

function numbers(text: string | undefined, count: number): number[] | undefined {
  if (!text) return undefined;
  const parts = text.split(',').map((p) => Number(p.trim()));
  return parts.length === count && parts.every(Number.isFinite) ? parts : undefined;
}

function describe(cfg: MbtilesSourceConfig, db: Db, layout: Layout, meta: Map<string, string>): SourceInfo {
  const sample = (db.prepare(layout.sample).get() as { tile_data: Buffer } | undefined)?.tile_data;
  const declared = meta.get('format');
  let format: TileFormat | undefined = formatFromMetadata(declared);
  if (declared !== undefined && format === undefined)
    throw new SourceOpenError(cfg.id, `MBTiles format "${declared}" is not a tile format this server serves (pbf, mlt, png, jpg, webp)`);
  const raw = sample ? (isGzip(sample) ? gunzipSync(sample) : sample) : undefined;
  if (format === undefined) {
    // No declared format: the bytes decide (images by magic number, otherwise a vector tile).
    format = raw ? sniffImage(raw) ?? sniffVectorFormat(raw) ?? 'pbf' : 'pbf';
  } else if (raw && !bytesMatchFormat(format, raw)) {
    throw new SourceOpenError(cfg.id, `MBTiles declares format "${declared}" but its tiles are ${sniffImage(raw) ?? 'not images'}`);
  } else if (raw && (format === 'pbf' || format === 'mlt')) {
    // MLT tiles are recognised from their bytes (spec, format rule 1), also in an archive labelled "pbf".
    format = sniffVectorFormat(raw) ?? format;
  }
  const zooms = db.prepare(layout.zooms).get() as { lo: number | null; hi: number | null };
  const minzoom = Math.max(cfg.minzoom ?? 0, numbers(meta.get('minzoom'), 1)?.[0] ?? zooms.lo ?? 0);
  const maxzoom = Math.min(cfg.maxzoom ?? 22, numbers(meta.get('maxzoom'), 1)?.[0] ?? zooms.hi ?? 22);
  const bounds = (numbers(meta.get('bounds'), 4) as Bounds | undefined) ?? WORLD_BOUNDS;
  const c = numbers(meta.get('center'), 3) as Center | undefined;
  const center: Center = c ? [c[0], c[1], Math.min(maxzoom, Math.max(minzoom, c[2]))] : defaultCenter(bounds, minzoom, maxzoom);
  let json: Record<string, unknown> = {};
  try {
    json = meta.has('json') ? (JSON.parse(meta.get('json')!) as Record<string, unknown>) : {};
  } catch {
    throw new SourceOpenError(cfg.id, 'MBTiles metadata "json" is not valid JSON');
  }
  const vector = format === 'pbf' || format === 'mlt';
  return {
    id: cfg.id,
    type: 'mbtiles',
    format,
    compression: sample && isGzip(sample) ? 'gzip' : 'none',
    name: cfg.name ?? meta.get('name') ?? cfg.id,
    attribution: cfg.attribution ?? meta.get('attribution'),
    description: cfg.description ?? meta.get('description'),
    minzoom,
    maxzoom,
    bounds,
    center,
    vectorLayers: vector ? parseVectorLayers(json.vector_layers) ?? [] : undefined,
    ...demOf(cfg, format),
    // An elevation archive's tile size tells clients (and the terrain products) how its pixels lie.
    ...(cfg.dem && raw && imageWidth(raw) ? { tileSize: imageWidth(raw) } : {}),
  };
}
