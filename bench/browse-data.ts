// The browse bench's data sets (BENCH_BROWSE_DATA), shared by bench/browse.bench.ts, which writes them into an
// MBTiles archive for the service, and bench/floor.bench.ts, which hands the same tile bytes to its pages directly.
// Every position of a zoom holds the same real OpenMapTiles tile of that zoom, so each rendered tile is as dense as
// a city centre; zooms deeper than the data are cut from the deepest (the service's overzoom for renderers).
import path from 'node:path';
import { areaAt, BROWSE } from './k6/browse-scenario.js';
import { ROOT } from './lib.js';

export interface BrowseData {
  describe: string;
  /** The fixture tile (fixtures/vector/omt-tiles, uncompressed MVT; file names use TMS rows) of each zoom. */
  tiles: Record<number, string>;
}

export const DATA_SETS: Record<string, BrowseData> = {
  paris: {
    describe: 'central Paris at z14 (900 KB per tile), Dortmund at z13 (125 KB) and z12 (285 KB); z15 from z14',
    tiles: { 12: '12_2130_2733.mvt', 13: '13_4265_5468.mvt', 14: '14_8298_10748.mvt' },
  },
  dortmund: {
    describe: "Dortmund's centre at z13 (125 KB per tile) and z12 (285 KB); z14-15 from z13",
    tiles: { 12: '12_2130_2733.mvt', 13: '13_4265_5468.mvt' },
  },
};

/** The data set of that name; throws naming the choices for any other. */
export function browseData(name: string): BrowseData {
  const data = DATA_SETS[name];
  if (!data) throw new Error(`BENCH_BROWSE_DATA must be one of ${Object.keys(DATA_SETS).join(', ')}`);
  return data;
}

export const omtTile = (name: string) => path.join(ROOT, 'fixtures/vector/omt-tiles', name);

/** Tiles the archive holds beyond the browse area on each side: metatile buffers reach into them. */
export const ARCHIVE_MARGIN = 2;

/** The tile columns and rows (XYZ, half-open) the archive holds at zoom z. */
export function archiveCover(z: number): { x0: number; x1: number; y0: number; y1: number } {
  const a = areaAt(BROWSE, z);
  return { x0: a.x0 - ARCHIVE_MARGIN, x1: a.x0 + a.size + ARCHIVE_MARGIN, y0: a.y0 - ARCHIVE_MARGIN, y1: a.y0 + a.size + ARCHIVE_MARGIN };
}

/** The archive's zoom range: its minzoom and maxzoom metadata. */
export function archiveZooms(data: BrowseData): { minzoom: number; maxzoom: number } {
  const zs = Object.keys(data.tiles).map(Number);
  return { minzoom: Math.min(...zs), maxzoom: Math.max(...zs) };
}
