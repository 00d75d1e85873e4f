// `mbtiles summary`: the schema, the file's size, and per zoom the number of tiles, their bytes (smallest,
// largest, total) and the tile columns and rows they span, from one aggregate query over the `tiles` view.
import { statSync } from 'node:fs';
import type { OpenArchive } from './archive.js';

export interface ZoomSummary {
  zoom: number;
  tiles: number;
  bytes: number;
  smallest: number;
  largest: number;
  columns: [number, number];
  rows: [number, number];
}

export function summary(a: OpenArchive): { schema: string; fileBytes: number; zooms: ZoomSummary[] } {
  const rows = a.db
    .prepare(
      `SELECT zoom_level z, count(*) n, coalesce(sum(length(tile_data)), 0) b, min(length(tile_data)) lo, max(length(tile_data)) hi,
        min(tile_column) x0, max(tile_column) x1, min(tile_row) y0, max(tile_row) y1 FROM tiles GROUP BY zoom_level ORDER BY zoom_level`,
    )
    .all() as { z: number; n: number; b: number; lo: number; hi: number; x0: number; x1: number; y0: number; y1: number }[];
  return {
    schema: a.schema,
    fileBytes: statSync(a.file).size,
    zooms: rows.map((r) => ({ zoom: r.z, tiles: r.n, bytes: r.b, smallest: r.lo ?? 0, largest: r.hi ?? 0, columns: [r.x0, r.x1], rows: [r.y0, r.y1] })),
  };
}

/** The summary as a table for a terminal. */
export function summaryText(file: string, s: ReturnType<typeof summary>): string {
  const lines = [`${file}: ${s.schema}, ${s.fileBytes.toLocaleString('en')} bytes`, 'zoom      tiles          bytes   smallest    largest  columns        rows (TMS)'];
  for (const z of s.zooms)
    lines.push(
      `${String(z.zoom).padStart(4)} ${z.tiles.toLocaleString('en').padStart(10)} ${z.bytes.toLocaleString('en').padStart(14)} ${String(z.smallest).padStart(10)} ${String(z.largest).padStart(10)}  ${`${z.columns[0]}-${z.columns[1]}`.padEnd(14)} ${z.rows[0]}-${z.rows[1]}`,
    );
  const tiles = s.zooms.reduce((n, z) => n + z.tiles, 0);
  const bytes = s.zooms.reduce((n, z) => n + z.bytes, 0);
  lines.push(` all ${tiles.toLocaleString('en').padStart(10)} ${bytes.toLocaleString('en').padStart(14)}`);
  return `${lines.join('\n')}\n`;
}
