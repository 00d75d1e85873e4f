// Composite sources through the real server: ad-hoc `/data/a+b/...` and named `[[composites]]`. The merged tile
// is judged against the members' own tiles read with the reference MVT decoder: same-named layers appended in
// member order with their properties intact (keys and values remapped), MLT and gzip members normalised,
// members without a tile skipped, all-empty 200, outside the zoom range 204; TileJSON by rule 1; error codes;
// configuration errors at load.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { fixture, runCli, startServer, writeTempConfig, type TestServer } from './helpers/server.js';
import { buildVectorArchives, omtPairs } from './helpers/vector-archives.js';
import { comparableProps, featureCount, get, getJson, readMlt, readMvt, type PlainTile } from './helpers/vector-tiles.js';

const MVT_TYPE = 'application/x-protobuf';

/** What merging should give: layers in order of first appearance, features of same-named layers appended. */
function expectedMerge(tiles: PlainTile[]): PlainTile {
  const out: PlainTile = new Map();
  for (const t of tiles) {
    for (const [name, layer] of t) {
      const target = out.get(name);
      if (target) target.features.push(...layer.features);
      else out.set(name, { extent: layer.extent, features: [...layer.features] });
    }
  }
  return out;
}

function assertSameTile(actual: PlainTile, expected: PlainTile, label: string): void {
  assert.deepEqual([...actual.keys()], [...expected.keys()], `${label}: layers in order`);
  for (const [name, exp] of expected) {
    const act = actual.get(name)!;
    assert.equal(act.features.length, exp.features.length, `${label}/${name}: feature count`);
    exp.features.forEach((e, i) => {
      const a = act.features[i];
      assert.equal(a.id, e.id, `${label}/${name}#${i}: id`);
      assert.equal(a.type, e.type, `${label}/${name}#${i}: type`);
      assert.deepEqual(a.geometry, e.geometry, `${label}/${name}#${i}: geometry`);
      assert.deepEqual(comparableProps(a.properties), comparableProps(e.properties), `${label}/${name}#${i}: properties`);
    });
  }
}

let server: TestServer;
const src = (id: string, type: string, path: string) => `[[sources]]\nid = "${id}"\ntype = "${type}"\npath = "${path}"\n`;
const SOURCES =
  src('cities', 'mbtiles', fixture('vector/world_cities.mbtiles')) +
  src('zoomed', 'mbtiles', fixture('vector/zoomed_world_cities.mbtiles')) +
  src('planet', 'pmtiles', fixture('vector/omt-planet-z0-1.pmtiles')) +
  src('omtmb', 'mbtiles', fixture('vector/omt-z0-1.mbtiles')) +
  src('toner', 'pmtiles', fixture('raster/stamen-toner-z0-3.pmtiles'));

before(async () => {
  const archives = buildVectorArchives();
  server = await startServer({
    toml: SOURCES + src('mltpm', 'pmtiles', archives.mltPmtiles) + '[[composites]]\nid = "basemap"\nsources = ["planet", "cities"]\n',
  });
});
after(async () => {
  await server?.stop();
});

/** A member's tile as served on its own (identity MVT), read with the reference decoder. */
async function member(id: string, zxy: string): Promise<PlainTile> {
  const r = await get(`${server.url}/data/${id}/${zxy}.pbf`);
  assert.equal(r.status, 200, `${id} ${zxy}`);
  return readMvt(r.body);
}

async function composite(id: string, zxy: string, headers: Record<string, string> = {}) {
  const r = await get(`${server.url}/data/${id}/${zxy}.pbf`, headers);
  return { ...r, tile: r.status === 200 ? readMvt(r.body) : new Map() };
}

describe('merged tiles', () => {
  test('layers of different members side by side (gzip MVT members)', async () => {
    const r = await composite('cities+planet', '1/1/0');
    assert.equal(r.status, 200);
    assert.equal(r.headers['content-type'], MVT_TYPE);
    const expected = expectedMerge([await member('cities', '1/1/0'), await member('planet', '1/1/0')]);
    assert.ok(expected.has('cities') && expected.size > 2);
    assertSameTile(r.tile, expected, 'cities+planet');
    assert.equal(featureCount(r.tile), featureCount(await member('cities', '1/1/0')) + featureCount(await member('planet', '1/1/0')));
  });

  test('same-named layers: features appended, keys and values remapped from each member', async () => {
    const planet = await member('planet', '0/0/0');
    const omtmb = await member('omtmb', '0/0/0');
    const shared = [...planet.keys()].filter((n) => omtmb.has(n));
    assert.ok(shared.length >= 3, `layers in both members: ${shared.join(', ')}`);
    const r = await composite('planet+omtmb', '0/0/0', { 'accept-encoding': 'gzip' });
    assert.equal(r.headers['content-encoding'], 'gzip');
    assertSameTile(r.tile, expectedMerge([planet, omtmb]), 'planet+omtmb');
    for (const name of shared) assert.equal(r.tile.get(name)!.features.length, planet.get(name)!.features.length + omtmb.get(name)!.features.length);
  });

  test('an MLT member is transcoded to MVT before merging', async () => {
    const reference = omtPairs().find((p) => p.name === '0_0_0')!;
    const r = await composite('mltpm+cities', '0/0/0');
    assert.equal(r.status, 200);
    // The MLT member's layers, in its own order, hold the reference MVT's features.
    const mvt = readMvt(reference.mvt);
    const mltMember: PlainTile = new Map([...readMlt(reference.mlt).keys()].map((name) => [name, mvt.get(name)!]));
    assertSameTile(r.tile, expectedMerge([mltMember, await member('cities', '0/0/0')]), 'mltpm+cities');
  });

  test('a member without the tile is skipped', async () => {
    assert.equal((await get(`${server.url}/data/omtmb/1/0/0.pbf`)).status, 204, 'omtmb has no 1/0/0');
    const r = await composite('cities+omtmb', '1/0/0');
    assert.equal(r.status, 200);
    const alone = await get(`${server.url}/data/cities/1/0/0.pbf`);
    assert.ok(r.body.equals(alone.body), 'the one member tile, as it is');
  });

  test('no member has the tile: 200 with an empty MVT, inside and outside the bounds', async () => {
    for (const zxy of ['6/0/0', '6/63/63']) {
      assert.equal((await get(`${server.url}/data/cities/${zxy}.pbf`)).status, 204);
      const r = await composite('cities+zoomed', zxy);
      assert.equal(r.status, 200, zxy);
      assert.equal(r.headers['content-type'], MVT_TYPE);
      assert.equal(r.body.length, 0, 'an empty MVT has no bytes');
    }
  });

  test("outside the composite's zoom range (max of minzooms .. min of maxzooms): 204", async () => {
    assert.equal((await get(`${server.url}/data/cities/2/1/1.pbf`)).status, 200, 'cities alone has z2');
    assert.equal((await composite('cities+planet', '2/1/1')).status, 204);
  });

  test('a composite served as MLT and as GeoJSON', async () => {
    const merged = (await composite('basemap', '1/1/0')).tile;
    const mlt = await get(`${server.url}/data/basemap/1/1/0.mlt`);
    assert.equal(mlt.headers['content-type'], 'application/vnd.open-vector-tile');
    const fromMlt = readMlt(mlt.body);
    assert.deepEqual([...fromMlt.keys()].sort(), [...merged.keys()].sort());
    assert.equal(featureCount(fromMlt), featureCount(merged));
    const gj = await getJson<{ features: { properties: { _layer: string } }[] }>(`${server.url}/data/basemap/1/1/0.geojson`);
    assert.equal(gj.body.features.length, featureCount(merged));
    assert.deepEqual(new Set(gj.body.features.map((f) => f.properties._layer)), new Set(merged.keys()));
  });
});

describe('errors', () => {
  test('a raster member: 400 naming it', async () => {
    for (const path of ['/data/cities+toner/0/0/0.pbf', '/data/cities+toner.json']) {
      const r = await fetch(server.url + path);
      assert.equal(r.status, 400, path);
      assert.equal(r.headers.get('content-type'), 'application/problem+json');
      assert.match(((await r.json()) as { detail: string }).detail, /"toner" \(png\) is a raster source/);
    }
  });

  test('an unknown member: 404 naming it; a repeated member: 400', async () => {
    const r = await fetch(`${server.url}/data/cities+nope+planet/0/0/0.pbf`);
    assert.equal(r.status, 404);
    assert.match(((await r.json()) as { detail: string }).detail, /no source with id "nope"/);
    const twice = await fetch(`${server.url}/data/cities+cities/0/0/0.pbf`);
    assert.equal(twice.status, 400);
    assert.match(((await twice.json()) as { detail: string }).detail, /"cities" is listed more than once/);
  });
});

describe('TileJSON (rule 1)', () => {
  interface Tj {
    tiles: string[];
    minzoom: number;
    maxzoom: number;
    bounds: number[];
    format: string;
    vector_layers: { id: string; fields: Record<string, string> }[];
  }

  test('ad hoc: vector_layers union by id, max of minzooms, min of maxzooms, bounds union; its tile URL works', async () => {
    const [cities, planet, mlt, both] = await Promise.all(
      ['cities', 'planet', 'mltpm', 'cities+planet+mltpm'].map(async (id) => (await getJson<Tj>(`${server.url}/data/${id}.json`)).body),
    );
    const ids = both.vector_layers.map((l) => l.id);
    assert.equal(new Set(ids).size, ids.length, 'no layer twice');
    const union = [...new Set([...cities.vector_layers, ...planet.vector_layers, ...mlt.vector_layers].map((l) => l.id))];
    assert.deepEqual(ids, union);
    assert.ok(mlt.vector_layers.some((l) => l.id === 'water') && planet.vector_layers.some((l) => l.id === 'water'));
    assert.deepEqual(both.vector_layers.find((l) => l.id === 'water'), planet.vector_layers.find((l) => l.id === 'water'), 'the first member wins');
    assert.equal(both.minzoom, Math.max(cities.minzoom, planet.minzoom, mlt.minzoom));
    assert.equal(both.maxzoom, Math.min(cities.maxzoom, planet.maxzoom, mlt.maxzoom));
    assert.equal(both.format, 'pbf');

    const cz = (await getJson<Tj>(`${server.url}/data/cities+zoomed.json`)).body;
    assert.deepEqual(cz.bounds, cities.bounds, 'the same bounds twice give those bounds');
    const cp = (await getJson<Tj>(`${server.url}/data/cities+planet.json`)).body;
    assert.deepEqual(cp.bounds, [0, 1, 2, 3].map((i) => (i < 2 ? Math.min(cities.bounds[i], planet.bounds[i]) : Math.max(cities.bounds[i], planet.bounds[i]))));
    assert.equal(cp.tiles[0], `${server.url}/data/cities+planet/{z}/{x}/{y}.pbf`);
    const tile = await get(cp.tiles[0].replace('{z}', '1').replace('{x}', '1').replace('{y}', '0'));
    assert.equal(tile.status, 200);
    assert.ok(readMvt(tile.body).has('cities'));
    assert.equal((await get(`${server.url}/data/cities%2Bplanet/1/1/0.pbf`)).status, 200, 'an encoded + works too');
  });

  test('named composite: TileJSON, listed in /data.json, same tile as the ad-hoc form', async () => {
    const { status, body } = await getJson<Tj & { name: string }>(`${server.url}/data/basemap.json`);
    assert.equal(status, 200);
    assert.equal(body.tiles[0], `${server.url}/data/basemap/{z}/{x}/{y}.pbf`);
    assert.equal(body.maxzoom, 1);
    const list = (await getJson<{ id: string }[]>(`${server.url}/data.json`)).body;
    assert.ok(list.some((d) => d.id === 'basemap'));
    const named = await get(`${server.url}/data/basemap/1/1/0.pbf`);
    const adHoc = await get(`${server.url}/data/planet+cities/1/1/0.pbf`);
    assert.ok(named.body.equals(adHoc.body));
  });
});

describe('configuration', () => {
  const start = (composites: string) => runCli(['--config', writeTempConfig(SOURCES + composites), '--port', '0', '--workers', '1']);

  test('a composite naming unknown sources does not load; the message names them', async () => {
    const r = await start('[[composites]]\nid = "c"\nsources = ["cities", "nope", "gone"]\n');
    assert.notEqual(r.code, 0);
    assert.match(r.stderr + r.stdout, /composites\[0\]\.sources: no source with id "nope", "gone"/);
  });

  test('a raster member or an id taken by a source does not load', async () => {
    const raster = await start('[[composites]]\nid = "c"\nsources = ["cities", "toner"]\n');
    assert.notEqual(raster.code, 0);
    assert.match(raster.stderr + raster.stdout, /"toner" \(png\) is a raster source/);
    const taken = await start('[[composites]]\nid = "cities"\nsources = ["planet"]\n');
    assert.notEqual(taken.code, 0);
    assert.match(taken.stderr + taken.stdout, /"cities" is also the id of a source/);
  });
});
