// The world map `make run` serves: built by `make build` from packaged Natural Earth data, tiles at every zoom
// up to 6 where there is land, and listed in config/default.toml so a newcomer's map has data at every zoom.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { buildWorldData, WORLD_ARCHIVE, WORLD_MAX_ZOOM } from '../scripts/build-world-data.js';
import { loadConfigFile } from '../src/config/load.js';
import { openSource } from '../src/sources/open.js';
import type { TileSource } from '../src/sources/source.js';
import { layerCounts, layerProperty, tempDir } from './helpers/foundation.js';
import { ROOT } from './helpers/server.js';

/** The XYZ tile holding a point (Web Mercator), computed here from the formula. */
function tileOf(lon: number, lat: number, z: number): [number, number] {
  const n = 2 ** z;
  const r = (lat * Math.PI) / 180;
  return [Math.floor(((lon + 180) / 360) * n), Math.floor(((1 - Math.log(Math.tan(r) + 1 / Math.cos(r)) / Math.PI) / 2) * n)];
}

describe('the bundled world archive', () => {
  let world: TileSource;
  before(async () => {
    world = await openSource({ id: 'world', type: 'pmtiles', path: WORLD_ARCHIVE });
  });
  after(() => world?.close());

  test('was built by make build and is the script\'s deterministic output, a few MB at most', () => {
    const fresh = path.join(tempDir('tsts-world-'), 'world.pmtiles');
    const built = buildWorldData(fresh, true);
    assert.ok(built);
    const committed = readFileSync(WORLD_ARCHIVE);
    assert.ok(committed.equals(readFileSync(fresh)), 'make build\'s archive is what the script builds');
    assert.ok(committed.byteLength < 4 * 1024 * 1024, `${committed.byteLength} bytes`);
  });

  test('covers zoom 0 to 6 with countries where there is land, and nothing in mid-ocean', async () => {
    assert.equal(world.info.minzoom, 0);
    assert.equal(world.info.maxzoom, WORLD_MAX_ZOOM);
    assert.ok(WORLD_MAX_ZOOM >= 6);
    for (let z = 0; z <= WORLD_MAX_ZOOM; z++) {
      const [x, y] = tileOf(2.35, 48.85, z);
      const tile = await world.getTile(z, x, y);
      assert.ok(tile, `no tile at z${z} over Paris`);
      const counts = layerCounts(tile);
      assert.ok(counts.countries > 0 && counts.land > 0, `z${z}: ${JSON.stringify(counts)}`);
      assert.ok(layerProperty(tile, 'countries', 'name').includes('France'), `z${z}: France is missing`);
    }
    const [x, y] = tileOf(-140, -40, 6);
    assert.equal(await world.getTile(6, x, y), undefined, 'the South Pacific at z6 has no land');
  });

  test('config/default.toml serves it as the source "world"', () => {
    const { config } = loadConfigFile(path.join(ROOT, 'config/default.toml'), {});
    const source = config.sources.find((s) => s.id === 'world');
    assert.ok(source);
    assert.equal(source.path, WORLD_ARCHIVE);
  });
});
