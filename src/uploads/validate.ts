// Whether an uploaded file is what its name says, by opening it the way it will be served: MBTiles through the
// MBTiles source (better-sqlite3, read-only), GeoTIFFs through GDAL in the raster pool's thread. A file that
// passes is returned opened, ready to be registered; one that fails gets one line a client can act on.
import Database from 'better-sqlite3';
import { open } from 'node:fs/promises';
import type { Config } from '../config/schema.js';
import type { RasterPool } from '../sources/raster/pool.js';
import { MbtilesSource } from '../sources/mbtiles.js';
import { CogSource } from '../sources/raster/cog.js';
import { SourceOpenError, type TileSource } from '../sources/source.js';
import type { UploadFormat } from './names.js';

/** The file is not a valid upload of its kind; `reason` is for the client (no server paths, no internals). */
export class InvalidUploadError extends Error {
  constructor(readonly reason: string) {
    super(reason);
    this.name = 'InvalidUploadError';
  }
}

const SQLITE_MAGIC = Buffer.from('SQLite format 3\0', 'latin1');

/**
 * Reads the SQLite header: the magic string, and the page size times the page count against the file's size
 * (SQLite itself notices a cut-off file only when a query reaches the missing pages, perhaps long after).
 * A file marked for WAL mode is marked back to rollback mode (header bytes 18-19): an upload is one file, with
 * no WAL beside it, and SQLite would otherwise create `-wal` and `-shm` files next to it, even read-only.
 */
async function checkSqliteHeader(file: string): Promise<void> {
  const fh = await open(file, 'r+');
  try {
    const head = Buffer.alloc(100);
    const { bytesRead } = await fh.read(head, 0, 100, 0);
    if (bytesRead < 100 || !head.subarray(0, 16).equals(SQLITE_MAGIC)) throw new InvalidUploadError('the file is not a SQLite database');
    const rawPageSize = head.readUInt16BE(16);
    const pageSize = rawPageSize === 1 ? 65536 : rawPageSize;
    // The page count in the header is trusted only when its "valid for" counter matches the change counter.
    const pages = head.readUInt32BE(28);
    const countValid = head.readUInt32BE(92) === head.readUInt32BE(24) && pages > 0;
    const { size } = await fh.stat();
    if (countValid && size < pageSize * pages) throw new InvalidUploadError(`the SQLite file is truncated (${size} bytes of ${pageSize * pages})`);
    if (head[18] === 2 || head[19] === 2) await fh.write(Buffer.from([1, 1]), 0, 2, 18);
  } finally {
    await fh.close();
  }
}

/** The tables an MBTiles archive must have (spec, MBTiles 1.3): `tiles` (a table or a view) and `metadata`. */
function checkMbtilesTables(file: string): void {
  let db: InstanceType<typeof Database> | undefined;
  try {
    db = new Database(file, { readonly: true, fileMustExist: true });
    const names = new Set((db.prepare("SELECT name FROM sqlite_master WHERE type IN ('table','view')").all() as { name: string }[]).map((r) => r.name));
    const missing = ['tiles', 'metadata'].filter((t) => !names.has(t));
    if (missing.length) throw new InvalidUploadError(`the SQLite file is not an MBTiles archive: no ${missing.join(' and no ')} table`);
  } catch (err) {
    if (err instanceof InvalidUploadError) throw err;
    throw new InvalidUploadError(`the SQLite file cannot be read (${sqliteWords((err as Error).message)})`);
  } finally {
    db?.close();
  }
}

/** SQLite's own words for what is wrong, which name no path. */
const sqliteWords = (msg: string) => (/file is not a database/.test(msg) ? 'not a database' : /malformed/.test(msg) ? 'the database disk image is malformed' : 'unreadable');

/** A source's reason with the stored path (a server detail) replaced by words. */
const withoutPath = (reason: string, file: string) => reason.split(file).join('the file');

export async function openMbtilesUpload(file: string, sourceId: string): Promise<TileSource> {
  await checkSqliteHeader(file);
  checkMbtilesTables(file);
  try {
    // The source's own checks follow: a tile format this server serves, tiles that match the declared format.
    return await MbtilesSource.open({ id: sourceId, type: 'mbtiles', path: file });
  } catch (err) {
    if (err instanceof SourceOpenError) throw new InvalidUploadError(withoutPath(err.reason, file));
    throw err;
  }
}

/** TIFF and BigTIFF signatures, little- and big-endian. */
const TIFF_MAGICS = ['49492a00', '4d4d002a', '49492b00', '4d4d002b'];

async function checkTiffHeader(file: string): Promise<void> {
  const fh = await open(file, 'r');
  try {
    const head = Buffer.alloc(4);
    const { bytesRead } = await fh.read(head, 0, 4, 0);
    if (bytesRead < 4 || !TIFF_MAGICS.includes(head.toString('hex'))) throw new InvalidUploadError('the file is not a TIFF file');
  } finally {
    await fh.close();
  }
}

/** GDAL's complaint in words for a client: what it means, never the exception text itself. */
function gdalWords(msg: string): string {
  if (/georeferencing/.test(msg)) return 'it has no georeferencing';
  if (/not recognized as a supported file format/i.test(msg)) return 'GDAL does not recognise it';
  return 'GDAL cannot read it';
}

export async function openGeotiffUpload(file: string, sourceId: string, pool: RasterPool, config: Config): Promise<TileSource> {
  await checkTiffHeader(file);
  let driver: string;
  try {
    driver = (await pool.describe(file)).driver;
  } catch (err) {
    throw new InvalidUploadError(`the file is not a GeoTIFF this server can serve: ${gdalWords((err as Error).message)}`);
  }
  // GDAL opens many formats (an MBTiles or a PNG would open too): only its GeoTIFF driver's files are accepted.
  if (driver !== 'GTiff') throw new InvalidUploadError(`the file is not a GeoTIFF (GDAL reads it as ${driver})`);
  try {
    return await CogSource.open({ id: sourceId, type: 'cog', path: file }, pool, config);
  } catch (err) {
    if (err instanceof SourceOpenError) throw new InvalidUploadError(withoutPath(err.reason, file));
    throw err;
  }
}

/** Opens an uploaded file as the source it will be served as, or throws InvalidUploadError saying why not. */
export function openUpload(format: UploadFormat, file: string, sourceId: string, pool: () => RasterPool, config: Config): Promise<TileSource> {
  return format === 'mbtiles' ? openMbtilesUpload(file, sourceId) : openGeotiffUpload(file, sourceId, pool(), config);
}
