// The archive a seed writes. Tiles collect in the journal (`<out>.partial`, journal.ts); at the end (or on
// Ctrl-C) the archive is made from it under a temporary name and renamed into place, so the final name never
// holds a half-written archive: an MBTiles output is the journal itself with its metadata, a PMTiles output is
// written from the journal's tiles in tile-id order (src/seed/pmtiles-writer.ts) and the journal removed.
import { copyFileSync, existsSync, renameSync, rmSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { Compression, PMTiles, TileType } from 'pmtiles';
import { LocalFileSource } from '../sources/pmtiles.js';
import type { TileCoord } from '../tiles/coords.js';
import { Journal } from './journal.js';
import { writePmtilesFile } from './pmtiles-writer.js';
import type { BBox, SeedFormat } from './request.js';

export type ArchiveKind = 'pmtiles' | 'mbtiles';

export const archiveKind = (file: string): ArchiveKind => (/\.pmtiles$/i.test(file) ? 'pmtiles' : 'mbtiles');
export const partialOf = (out: string) => `${out}.partial`;

/** What the archive says about itself: the TileJSON of what was seeded, narrowed to the seeded area and zooms. */
export interface ArchiveDescription {
  name: string;
  format: SeedFormat;
  bounds: BBox;
  minzoom: number;
  maxzoom: number;
  description?: string;
  attribution?: string;
  /** TileJSON vector_layers of a vector source. */
  vectorLayers?: unknown[];
}

export class OutputError extends Error {}
/** The output exists and --resume was not given: a mistake in the arguments (exit 2), not a failed run. */
export class OutputExistsError extends Error {}

const isVectorFormat = (f: SeedFormat) => f === 'pbf' || f === 'mlt';

const TILE_TYPES: Record<SeedFormat, TileType> = { pbf: TileType.Mvt, mlt: TileType.Mlt, png: TileType.Png, jpg: TileType.Jpeg, webp: TileType.Webp };

/**
 * Opens the journal of a run. Without --resume an earlier journal is discarded and an existing archive refused
 * (nothing is overwritten unasked). With --resume the journal goes on where it stopped, or, when the last run
 * finished, it starts from the finished archive's tiles (the tiles of `plan` that it holds).
 */
export async function openJournal(out: string, resume: boolean, plan: () => Iterable<TileCoord>): Promise<Journal> {
  const partial = partialOf(out);
  if (!resume) {
    if (existsSync(out)) throw new OutputExistsError(`--out: ${out} exists; give --resume to add the missing tiles to it, or remove it`);
    rmSync(partial, { force: true });
    return new Journal(partial);
  }
  if (existsSync(partial) || !existsSync(out)) return new Journal(partial);
  if (archiveKind(out) === 'mbtiles') {
    copyFileSync(out, partial);
    return new Journal(partial);
  }
  const journal = new Journal(partial);
  const handle = await open(out, 'r');
  try {
    const reader = new PMTiles(new LocalFileSource(handle, out));
    for (const t of plan()) {
      const found = await reader.getZxy(t.z, t.x, t.y);
      if (found) journal.put(t.z, t.x, t.y, Buffer.from(found.data));
    }
  } finally {
    await handle.close();
  }
  journal.flush();
  return journal;
}

/** The journal's metadata in MBTiles terms (the `metadata` table spec: name, format, bounds, center, zooms, json). */
function mbtilesMetadata(d: ArchiveDescription): Record<string, string> {
  const [w, s, e, n] = d.bounds;
  const m: Record<string, string> = {
    name: d.name,
    format: d.format,
    bounds: d.bounds.join(','),
    center: `${(w + e) / 2},${(s + n) / 2},${d.minzoom}`,
    minzoom: String(d.minzoom),
    maxzoom: String(d.maxzoom),
    type: 'baselayer',
  };
  if (d.description) m.description = d.description;
  if (d.attribution) m.attribution = d.attribution;
  if (isVectorFormat(d.format)) m.json = JSON.stringify({ vector_layers: d.vectorLayers ?? [] });
  return m;
}

/**
 * Makes the archive from the journal and moves it into place; the journal is gone afterwards. Returns the
 * number of tiles in the archive. OutputError when there is no tile at all (PMTiles cannot be empty, and an
 * empty MBTiles is no use either).
 */
export function finishArchive(journal: Journal, out: string, d: ArchiveDescription): number {
  journal.flush();
  const count = journal.tileCount();
  if (count === 0) {
    journal.close();
    rmSync(journal.file, { force: true });
    throw new OutputError(`nothing written to ${out}: no tile of the area had content`);
  }
  if (archiveKind(out) === 'mbtiles') {
    journal.setMetadata(mbtilesMetadata(d));
    journal.finishAsMbtiles();
    journal.close();
    renameSync(journal.file, out);
    return count;
  }
  const [w, s, e, n] = d.bounds;
  const tmp = `${out}.tmp`;
  writePmtilesFile(tmp, journal.tilesInIdOrder(), {
    tileType: TILE_TYPES[d.format],
    tileCompression: isVectorFormat(d.format) ? Compression.Gzip : Compression.None,
    bounds: d.bounds,
    center: [(w + e) / 2, (s + n) / 2, d.minzoom],
    metadata: {
      name: d.name,
      format: d.format,
      type: 'baselayer',
      ...(d.description ? { description: d.description } : {}),
      ...(d.attribution ? { attribution: d.attribution } : {}),
      ...(isVectorFormat(d.format) ? { vector_layers: d.vectorLayers ?? [] } : {}),
    },
  });
  journal.close();
  renameSync(tmp, out);
  rmSync(journal.file, { force: true });
  return count;
}
