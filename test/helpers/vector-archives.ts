// Real MLT and MVT archives for the vector tests, built from fixtures/vector/omt-tiles (the MLT reference
// encoder's output beside its MVT source): PMTiles (tile type 6 / MVT, gzip) with the PMTiles writer in
// scripts/, and MBTiles with better-sqlite3. Fixture names carry the TMS row; PMTiles and URLs use XYZ rows.
import Database from 'better-sqlite3';
import { mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { Compression, TileType } from 'pmtiles';
import { buildPmtiles } from '../../src/seed/pmtiles-writer.js';
import { fixture } from './server.js';

export const OMT_DIR = fixture('vector', 'omt-tiles');

export interface OmtPair {
  /** File stem, `Z_X_TMSY`. */
  name: string;
  z: number;
  x: number;
  /** XYZ row, as in URLs. */
  y: number;
  tmsY: number;
  mvt: Buffer;
  mlt: Buffer;
}

export function omtPairs(): OmtPair[] {
  return readdirSync(OMT_DIR)
    .filter((f) => f.endsWith('.mvt'))
    .map((f) => {
      const name = f.slice(0, -4);
      const [z, x, tmsY] = name.split('_').map(Number);
      return { name, z, x, y: 2 ** z - 1 - tmsY, tmsY, mvt: readFileSync(path.join(OMT_DIR, `${name}.mvt`)), mlt: readFileSync(path.join(OMT_DIR, `${name}.mlt`)) };
    })
    .sort((a, b) => a.z - b.z);
}

const WORLD: [number, number, number, number] = [-180, -85.0511287798066, 180, 85.0511287798066];

export interface VectorArchives {
  dir: string;
  /** PMTiles, tile type MLT (6), gzip tiles. */
  mltPmtiles: string;
  /** PMTiles, tile type MVT, gzip tiles. */
  mvtPmtiles: string;
  /** MBTiles with metadata format "mlt", raw tiles. */
  mltMbtiles: string;
  /** MBTiles without a format in its metadata: MLT must be recognised from the bytes. */
  mltBytesMbtiles: string;
  /** MBTiles labelled "mlt" whose tile 1/0/0 is a truncated MLT tile (transcoding it fails). */
  brokenMltMbtiles: string;
}

function writeMbtiles(file: string, meta: Record<string, string>, tiles: { z: number; x: number; tmsY: number; data: Uint8Array }[]): void {
  const db = new Database(file);
  db.exec('CREATE TABLE metadata (name TEXT, value TEXT); CREATE TABLE tiles (zoom_level INTEGER, tile_column INTEGER, tile_row INTEGER, tile_data BLOB);');
  const m = db.prepare('INSERT INTO metadata VALUES (?, ?)');
  for (const [k, v] of Object.entries(meta)) m.run(k, v);
  const t = db.prepare('INSERT INTO tiles VALUES (?, ?, ?, ?)');
  for (const tile of tiles) t.run(tile.z, tile.x, tile.tmsY, Buffer.from(tile.data));
  db.close();
}

export function buildVectorArchives(): VectorArchives {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'tsts-vector-'));
  const pairs = omtPairs();
  const layers = JSON.stringify([{ id: 'water', fields: { class: 'String' } }, { id: 'place', fields: { name: 'String', rank: 'Number' } }]);
  const pm = (kind: 'mvt' | 'mlt') =>
    buildPmtiles(
      pairs.map((p) => ({ z: p.z, x: p.x, y: p.y, data: gzipSync(p[kind]) })),
      {
        tileType: kind === 'mlt' ? TileType.Mlt : TileType.Mvt,
        tileCompression: Compression.Gzip,
        bounds: WORLD,
        center: [2.35, 48.85, 14],
        metadata: { name: `omt-${kind}`, vector_layers: JSON.parse(layers) as unknown },
      },
    );
  const out: VectorArchives = {
    dir,
    mltPmtiles: path.join(dir, 'omt-mlt.pmtiles'),
    mvtPmtiles: path.join(dir, 'omt-mvt.pmtiles'),
    mltMbtiles: path.join(dir, 'omt-mlt.mbtiles'),
    mltBytesMbtiles: path.join(dir, 'omt-mlt-bytes.mbtiles'),
    brokenMltMbtiles: path.join(dir, 'broken-mlt.mbtiles'),
  };
  writeFileSync(out.mltPmtiles, pm('mlt'));
  writeFileSync(out.mvtPmtiles, pm('mvt'));
  const raw = pairs.map((p) => ({ z: p.z, x: p.x, tmsY: p.tmsY, data: p.mlt }));
  const meta = { name: 'omt-mlt', minzoom: '0', maxzoom: '14', bounds: WORLD.join(','), json: JSON.stringify({ vector_layers: JSON.parse(layers) as unknown }) };
  writeMbtiles(out.mltMbtiles, { ...meta, format: 'mlt' }, raw);
  writeMbtiles(out.mltBytesMbtiles, meta, raw);
  const good = pairs[0];
  writeMbtiles(out.brokenMltMbtiles, { name: 'broken', format: 'mlt', minzoom: '0', maxzoom: '1' }, [
    { z: 0, x: 0, tmsY: 0, data: good.mlt },
    { z: 1, x: 0, tmsY: 1, data: good.mlt.subarray(0, Math.floor(good.mlt.length / 3)) },
  ]);
  return out;
}
