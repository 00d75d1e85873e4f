// Which tiles differ between two MBTiles archives: the tile rows of both, read page by page in (zoom, column,
// row) order through each source's own connection, merged like two sorted lists. The old archive is read through
// the old source's connection, still open on the old file after a rename put a new file at its path (SQLite
// cannot open a deleted file again by any name). Between two archives of the `map` + `images` layout (mbutil's)
// the rows' `tile_id`s are compared without reading the images: that layout names an image by a hash of its
// bytes, so an equal id means equal bytes. Otherwise every tile's bytes are read once on each side.
//
// Memory: one page of rows a side (PAGE rows with their bytes) and the changed tiles found, up to `maxTiles`.
// Pages follow the (zoom, column, row) index MBTiles archives have; an archive without it sorts its table for
// each page (as slow as serving from it would be).
import { unique } from './area-times.js';
import type { ArchiveDiff, DiffOptions } from './pmtiles-diff.js';
import { tileKey, validTile } from './tile-key.js';

/** Rows read at once from each archive. */
const PAGE = 1000;

type Row = [zoom: number, column: number, tmsRow: number, value: Buffer | string | null];

/** What the diff reads of an archive (MbtilesSource.tileRows). */
export interface TileRows {
  readonly layout: 'tiles' | 'map-images';
  tileRows(after: readonly [number, number, number], limit: number, ids: boolean): Row[];
}

/** Every row of an archive in order, a page at a time, the event loop given a turn between pages. */
async function* rows(archive: TileRows, ids: boolean, pageRows: number): AsyncGenerator<Row> {
  let after: readonly [number, number, number] = [-1, -1, -1];
  for (;;) {
    const page = archive.tileRows(after, pageRows, ids);
    yield* page;
    if (page.length < pageRows) return;
    const last = page[page.length - 1];
    after = [last[0], last[1], last[2]];
    await new Promise((resolve) => setImmediate(resolve));
  }
}

const order = (a: Row, b: Row) => a[0] - b[0] || a[1] - b[1] || a[2] - b[2];

function same(a: Row[3], b: Row[3]): boolean {
  if (a === null || b === null) return a === b;
  if (typeof a === 'string' || typeof b === 'string') return a === b;
  return a.equals(b);
}

/** The tiles that differ between two archives: rows in one only, or whose bytes (or image ids) differ. */
export async function diffMbtiles(before: TileRows, after: TileRows, options: DiffOptions): Promise<ArchiveDiff> {
  const ids = before.layout === 'map-images' && after.layout === 'map-images';
  const olds = rows(before, ids, options.pageRows ?? PAGE);
  const news = rows(after, ids, options.pageRows ?? PAGE);
  const keys: number[] = [];
  const add = (r: Row) => {
    // MBTiles rows count from the south (TMS); a row naming no tile changes nothing a URL can reach.
    const [z, x, row] = r;
    const y = 2 ** z - 1 - row;
    if (validTile(z, x, y)) keys.push(tileKey(z, x, y));
  };
  let a = (await olds.next()).value as Row | undefined;
  let b = (await news.next()).value as Row | undefined;
  while (a || b) {
    const c = !a ? 1 : !b ? -1 : order(a, b);
    if (c < 0) add(a!);
    else if (c > 0) add(b!);
    else if (!same(a![3], b![3])) add(a!);
    if (keys.length > options.maxTiles) return { kind: 'whole', reason: `more than ${options.maxTiles} tiles changed` };
    if (c <= 0) a = (await olds.next()).value as Row | undefined;
    if (c >= 0) b = (await news.next()).value as Row | undefined;
  }
  return { kind: 'tiles', tiles: unique(Float64Array.from(keys).sort()), read: 0 };
}
