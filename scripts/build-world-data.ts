// Builds the world map `make run` serves: Natural Earth 1:50m countries and land (public domain, from the
// `world-atlas` npm package) cut into MVT tiles z0..6 with geojson-vt, gzip, written as one PMTiles archive at
// fixtures/world/natural-earth-z0-6.pmtiles. The same cut as the benchmark data (scripts/build-bench-data.ts),
// stopped at zoom 6 so it builds in seconds and stays a few MB; maps overzoom it past 6.
//
//   node --import tsx scripts/build-world-data.ts [--force]
//
// Deterministic (same package version, same bytes); does nothing when the archive exists.
import { existsSync, mkdirSync, renameSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import geojsonvt from 'geojson-vt';
import { Compression, TileType } from 'pmtiles';
import { cutTiles, loadLayers } from './build-bench-data.js';
import { buildPmtiles } from '../src/seed/pmtiles-writer.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
export const WORLD_MAX_ZOOM = 6;
export const WORLD_ARCHIVE = path.join(ROOT, `fixtures/world/natural-earth-z0-${WORLD_MAX_ZOOM}.pmtiles`);
const BOUNDS: [number, number, number, number] = [-180, -85.0511287798066, 180, 85.0511287798066];

export function buildWorldData(file = WORLD_ARCHIVE, force = false): { tiles: number; bytes: number } | undefined {
  if (!force && existsSync(file)) return undefined;
  const { countries, land } = loadLayers();
  const options = { maxZoom: WORLD_MAX_ZOOM, indexMaxZoom: 4, tolerance: 3, extent: 4096, buffer: 64 };
  const tiles = cutTiles({ countries: geojsonvt(countries, options), land: geojsonvt(land, options) }, WORLD_MAX_ZOOM);
  const layer = (id: string, description: string, fields: Record<string, string>) => ({ id, description, fields, minzoom: 0, maxzoom: WORLD_MAX_ZOOM });
  const archive = buildPmtiles(tiles, {
    tileType: TileType.Mvt,
    tileCompression: Compression.Gzip,
    bounds: BOUNDS,
    center: [0, 20, 1],
    metadata: {
      name: 'Natural Earth world',
      description: `Natural Earth 1:50m countries and land, z0-${WORLD_MAX_ZOOM} (built by scripts/build-world-data.ts)`,
      attribution: 'Made with Natural Earth (public domain), via the world-atlas package',
      type: 'baselayer',
      version: '1',
      vector_layers: [layer('countries', 'Natural Earth 1:50m countries', { name: 'String', iso_n3: 'String' }), layer('land', 'Natural Earth 1:50m land', {})],
    },
  });
  mkdirSync(path.dirname(file), { recursive: true });
  writeFileSync(`${file}.tmp`, archive);
  renameSync(`${file}.tmp`, file);
  return { tiles: tiles.length, bytes: archive.byteLength };
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const built = buildWorldData(WORLD_ARCHIVE, process.argv.includes('--force'));
  const where = path.relative(ROOT, WORLD_ARCHIVE);
  process.stdout.write(built ? `world data: ${built.tiles} tiles, ${(built.bytes / 1048576).toFixed(1)} MiB → ${where}\n` : `world data present: ${where} (--force rebuilds)\n`);
}
