// `tileserver-ts convert IN OUT`: MBTiles to PMTiles and back, tile bytes carried as stored (a gzip vector tile
// stays gzip), the metadata carried across.
// - MBTiles to PMTiles: the tile positions are sorted by PMTiles tile id inside SQLite (its sorter spills to a
//   temporary file, not to JavaScript), each tile read by its key in that order and streamed to the seed's
//   PMTiles writer; what stays in memory is the writer's directory (one entry per run of equal tiles) and its
//   index of distinct contents.
// - PMTiles to MBTiles: the directories are walked one leaf at a time (expire/pmtiles-diff.ts), each tile read
//   and inserted (flat, or `--dst-type`) in one transaction, then the agg_tiles_hash is written.
// Metadata: MBTiles' name, description, attribution, version, type and the keys of its `json` (vector_layers,
// tilestats) become the PMTiles JSON metadata; bounds, center and zooms go to the header. Back, the header gives
// format, bounds, center, minzoom and maxzoom, and vector_layers/tilestats go into `json`.
import { existsSync, rmSync, renameSync } from 'node:fs';
import { open } from 'node:fs/promises';
import { gunzipSync } from 'node:zlib';
import { Compression, PMTiles, TileType, tileIdToZxy, zxyToTileId } from 'pmtiles';
import { readHeader, tileEntries } from '../expire/pmtiles-diff.js';
import { writePmtilesFile, type PmtilesTileInput } from '../seed/pmtiles-writer.js';
import { LocalFileSource } from '../sources/pmtiles.js';
import { isGzip, sniffImage } from '../tiles/format.js';
import { aggTilesHash } from './agg-hash.js';
import { AGG, createArchive, insertTiles, MbtilesError, openArchive, positionTable, type WritableSchema } from './archive.js';
import type { Progress } from './progress.js';

const FORMAT_TYPES: Record<string, TileType> = { pbf: TileType.Mvt, mvt: TileType.Mvt, mlt: TileType.Mlt, png: TileType.Png, jpg: TileType.Jpeg, jpeg: TileType.Jpeg, webp: TileType.Webp, avif: TileType.Avif };
const TYPE_FORMATS: Partial<Record<TileType, string>> = { [TileType.Mvt]: 'pbf', [TileType.Mlt]: 'mlt', [TileType.Png]: 'png', [TileType.Jpeg]: 'jpg', [TileType.Webp]: 'webp', [TileType.Avif]: 'avif' };
/** MBTiles metadata keys carried as they are into the PMTiles JSON metadata and back. */
const PLAIN_KEYS = ['name', 'description', 'attribution', 'version', 'type', 'legend', 'scheme'];

const numbers = (text: string | undefined, count: number) => {
  const parts = text?.split(',').map(Number);
  return parts && parts.length === count && parts.every(Number.isFinite) ? parts : undefined;
};

export const isPmtilesPath = (file: string) => /\.pmtiles$/i.test(file);

async function mbtilesToPmtiles(input: string, output: string, progress?: Progress): Promise<number> {
  const a = openArchive(input);
  const { db } = a;
  try {
    const meta = new Map((db.prepare('SELECT name, value FROM metadata WHERE value IS NOT NULL').all() as { name: string; value: unknown }[]).map((r) => [r.name, String(r.value)]));
    const table = positionTable(a.schema);
    const total = (db.prepare(`SELECT count(*) AS n FROM tiles`).get() as { n: number }).n;
    if (total === 0) throw new MbtilesError(`${input}: holds no tile (a PMTiles archive cannot be empty)`);
    const sample = (db.prepare('SELECT tile_data FROM tiles WHERE tile_data IS NOT NULL LIMIT 1').get() as { tile_data: Buffer }).tile_data;
    const declared = meta.get('format')?.toLowerCase();
    let tileType = declared !== undefined ? FORMAT_TYPES[declared] : undefined;
    if (declared !== undefined && tileType === undefined) throw new MbtilesError(`${input}: format "${declared}" has no PMTiles tile type`);
    const raw = isGzip(sample) ? gunzipSync(sample) : sample;
    tileType ??= FORMAT_TYPES[sniffImage(raw) ?? 'pbf'];
    db.function('pm_tile_id', { deterministic: true }, (z: unknown, x: unknown, row: unknown) => zxyToTileId(Number(z), Number(x), 2 ** Number(z) - 1 - Number(row)));
    const order = db.prepare(`SELECT zoom_level, tile_column, tile_row FROM ${table} ORDER BY pm_tile_id(zoom_level, tile_column, tile_row)`).raw();
    const read = db.prepare('SELECT tile_data FROM tiles WHERE zoom_level = ? AND tile_column = ? AND tile_row = ?').pluck();
    let done = 0;
    const tiles = function* (): Iterable<PmtilesTileInput> {
      for (const [z, x, row] of order.iterate() as Iterable<[number, number, number]>) {
        const data = read.get(z, x, row) as Buffer | null | undefined;
        if (++done % 4096 === 0) progress?.tick('converting', done, total);
        // An empty tile has no place in PMTiles (it is simply absent there).
        if (data && data.length > 0) yield { z, x, y: 2 ** z - 1 - row, data };
      }
    };
    let json: Record<string, unknown> = {};
    try {
      json = meta.has('json') ? (JSON.parse(meta.get('json')!) as Record<string, unknown>) : {};
    } catch {
      throw new MbtilesError(`${input}: metadata "json" is not valid JSON`);
    }
    const zooms = db.prepare(`SELECT min(zoom_level) lo, max(zoom_level) hi FROM ${table}`).get() as { lo: number; hi: number };
    const bounds = (numbers(meta.get('bounds'), 4) ?? [-180, -85.0511287798066, 180, 85.0511287798066]) as [number, number, number, number];
    const c = numbers(meta.get('center'), 3) ?? [(bounds[0] + bounds[2]) / 2, (bounds[1] + bounds[3]) / 2, zooms.lo];
    const metadata: Record<string, unknown> = { ...json };
    for (const k of PLAIN_KEYS) if (meta.has(k)) metadata[k] = meta.get(k);
    const tmp = `${output}.partial`;
    try {
      writePmtilesFile(tmp, tiles(), {
        tileType,
        tileCompression: isGzip(sample) ? Compression.Gzip : Compression.None,
        bounds,
        center: [c[0], c[1], Math.round(c[2])],
        metadata,
      });
      renameSync(tmp, output);
    } catch (err) {
      rmSync(tmp, { force: true });
      throw err;
    }
    progress?.end();
    return done;
  } finally {
    db.close();
  }
}

async function pmtilesToMbtiles(input: string, output: string, dstType: WritableSchema, progress?: Progress): Promise<number> {
  const handle = await open(input, 'r');
  const tmp = `${output}.partial`;
  rmSync(tmp, { force: true });
  const dst = createArchive(tmp, dstType);
  const { db } = dst;
  try {
    const source = new LocalFileSource(handle, input);
    let header;
    try {
      header = await readHeader(source);
    } catch (err) {
      throw new MbtilesError(`${input}: ${(err as Error).message}`);
    }
    const format = TYPE_FORMATS[header.tileType];
    if (format === undefined) throw new MbtilesError(`${input}: tile type ${header.tileType} has no MBTiles format`);
    let json: Record<string, unknown> = {};
    try {
      json = (await new PMTiles(source).getMetadata()) as Record<string, unknown>;
    } catch {
      json = {};
    }
    const meta: Record<string, string> = {
      format,
      bounds: [header.minLon, header.minLat, header.maxLon, header.maxLat].join(','),
      center: [header.centerLon, header.centerLat, header.centerZoom].join(','),
      minzoom: String(header.minZoom),
      maxzoom: String(header.maxZoom),
    };
    const rest: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(json)) {
      if (PLAIN_KEYS.includes(k) && typeof v === 'string') meta[k] = v;
      else if (!['format', 'bounds', 'center', 'minzoom', 'maxzoom'].includes(k)) rest[k] = v;
    }
    if (Object.keys(rest).length > 0) meta.json = JSON.stringify(rest);
    // Tiles go through a one-row staging table so the schema's own insert (hashes, images) applies to them.
    db.exec('CREATE TEMP TABLE incoming (zoom_level INTEGER, tile_column INTEGER, tile_row INTEGER, tile_data BLOB, tile_hash TEXT)');
    const stage = db.prepare('INSERT INTO incoming VALUES (?, ?, ?, ?, NULL)');
    const total = header.numAddressedTiles;
    let done = 0;
    let staged = 0;
    db.exec('BEGIN');
    for await (const e of tileEntries(source, header)) {
      const { data } = await source.getBytes(e.offset, e.length);
      const bytes = Buffer.from(data);
      if (bytes.length < e.length) throw new MbtilesError(`${input}: truncated (a tile at byte ${e.offset} is cut short)`);
      for (let id = e.id; id < e.id + e.run; id++) {
        const [z, x, y] = tileIdToZxy(id);
        stage.run(z, x, 2 ** z - 1 - y, bytes);
        done++;
        staged++;
      }
      // Staged a few thousand at a time: memory holds one batch, never the archive.
      if (staged >= 4096) {
        staged = 0;
        insertTiles(db, dstType, 'SELECT * FROM temp.incoming', 'OR REPLACE');
        db.exec('DELETE FROM temp.incoming');
        progress?.tick('converting', done, total);
      }
    }
    insertTiles(db, dstType, 'SELECT * FROM temp.incoming', 'OR REPLACE');
    const put = db.prepare('INSERT OR REPLACE INTO metadata (name, value) VALUES (?, ?)');
    for (const [k, v] of Object.entries(meta)) put.run(k, v);
    db.exec('COMMIT');
    put.run(AGG, aggTilesHash(db, progress));
    db.close();
    renameSync(tmp, output);
    progress?.end();
    return done;
  } catch (err) {
    if (db.open) db.close();
    rmSync(tmp, { force: true });
    throw err;
  } finally {
    await handle.close();
  }
}

export async function convert(input: string, output: string, dstType: WritableSchema | undefined, progress?: Progress): Promise<number> {
  if (!existsSync(input)) throw new MbtilesError(`${input}: no such file`);
  if (existsSync(output)) throw new MbtilesError(`${output}: already exists`);
  const from = isPmtilesPath(input);
  const to = isPmtilesPath(output);
  if (from === to) throw new MbtilesError(`convert goes between MBTiles and PMTiles: ${input} and ${output} are both ${from ? 'PMTiles' : 'MBTiles'} (give them .pmtiles and .mbtiles names)`);
  if (to && dstType !== undefined) throw new MbtilesError('--dst-type applies to an MBTiles output');
  return from ? pmtilesToMbtiles(input, output, dstType ?? 'flat', progress) : mbtilesToPmtiles(input, output, progress);
}
