// The spatial API through the real server: schema and stats from metadata, and the feature query judged
// against the tiles read with the reference MVT decoder (which features meet the box, layer filter, limit with
// total and truncated, dedup of split features by id, zoom clamping, default location), with every error code.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { fixture, startServer, type TestServer } from './helpers/server.js';
import { buildVectorArchives, omtPairs } from './helpers/vector-archives.js';
import { get, getJson, readMvt } from './helpers/vector-tiles.js';

interface QFeature {
  layer: string;
  geometry_type: string;
  properties: Record<string, unknown>;
  id?: number | string;
  geometry: { type: string; coordinates: unknown };
}
interface QResult {
  source: string;
  zoom: number;
  bbox: number[];
  features: QFeature[];
  total: number;
  truncated: boolean;
}
interface Problem {
  type: string;
  title: string;
  status: number;
  detail: string;
}

let server: TestServer;
before(async () => {
  const archives = buildVectorArchives();
  const src = (id: string, type: string, path: string) => `[[sources]]\nid = "${id}"\ntype = "${type}"\npath = "${path}"\n`;
  server = await startServer({
    toml:
      src('cities', 'mbtiles', fixture('vector/world_cities.mbtiles')) +
      src('planet', 'pmtiles', fixture('vector/omt-planet-z0-1.pmtiles')) +
      src('monaco', 'pmtiles', fixture('vector/monaco-mlt.pmtiles')) +
      src('mltpm', 'pmtiles', archives.mltPmtiles) +
      src('toner', 'pmtiles', fixture('raster/stamen-toner-z0-3.pmtiles')),
  });
});
after(async () => {
  await server?.stop();
});

async function query(body: unknown, raw = false): Promise<{ status: number; contentType: string; json: unknown }> {
  const r = await fetch(`${server.url}/api/spatial/query`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: raw ? (body as string) : JSON.stringify(body) });
  return { status: r.status, contentType: r.headers.get('content-type') ?? '', json: await r.json() };
}
async function ok(body: Record<string, unknown>): Promise<QResult> {
  const r = await query(body);
  assert.equal(r.status, 200, JSON.stringify(r.json));
  return r.json as QResult;
}

const lonLat = (z: number, x: number, y: number, px: number, py: number, extent: number): [number, number] => {
  const n = 2 ** z;
  return [((x + px / extent) / n) * 360 - 180, (Math.atan(Math.sinh(Math.PI * (1 - (2 * (y + py / extent)) / n))) * 180) / Math.PI];
};
const inBox = ([lon, lat]: number[], b: number[]) => lon >= b[0] - 1e-6 && lon <= b[2] + 1e-6 && lat >= b[1] - 1e-6 && lat <= b[3] + 1e-6;

describe('schema and stats', () => {
  test('schema of an MVT source from its vector_layers', async () => {
    const { status, body } = await getJson(`${server.url}/api/spatial/schema/cities`);
    assert.equal(status, 200);
    assert.deepEqual(body, {
      source: 'cities',
      format: 'pbf',
      minzoom: 0,
      maxzoom: 6,
      bounds: [-123.12359, -37.818085, 174.763027, 59.352706],
      layers: [{ id: 'cities', minzoom: 0, maxzoom: 6, fields: [{ name: 'name', type: 'String' }] }],
    });
  });

  test('schema of an MLT source and of an OpenMapTiles source', async () => {
    const monaco = (await getJson<{ format: string; layers: { id: string; minzoom: number; fields: { name: string; type: string }[] }[] }>(`${server.url}/api/spatial/schema/monaco`)).body;
    assert.equal(monaco.format, 'mlt');
    const building = monaco.layers.find((l) => l.id === 'buildings/building')!;
    assert.equal(building.minzoom, 13);
    assert.deepEqual(building.fields.find((f) => f.name === 'height'), { name: 'height', type: 'Number' });
    const planet = (await getJson<{ layers: { fields: { type: string }[] }[] }>(`${server.url}/api/spatial/schema/planet`)).body;
    assert.ok(planet.layers.length >= 10);
    const types = new Set(planet.layers.flatMap((l) => l.fields.map((f) => f.type)));
    assert.ok(types.has('String') && types.has('Number'));
    assert.ok([...types].every((t) => ['String', 'Number', 'Boolean'].includes(t)), [...types].join());
  });

  test('stats', async () => {
    const { status, body } = await getJson(`${server.url}/api/spatial/stats/planet`);
    assert.equal(status, 200);
    const tj = (await getJson<{ vector_layers: unknown[]; center: number[]; bounds: number[] }>(`${server.url}/data/planet.json`)).body;
    assert.equal(body.source, 'planet');
    assert.equal(body.format, 'pbf');
    assert.equal(body.minzoom, 0);
    assert.equal(body.maxzoom, 1);
    assert.deepEqual(body.bounds, tj.bounds);
    assert.deepEqual(body.center, tj.center);
    assert.equal(body.layer_count, tj.vector_layers.length);
    assert.equal(body.name, 'OpenMapTiles');
    assert.match(String(body.description), /OpenMapTiles/);
    assert.match(String(body.attribution), /OpenStreetMap/);
    const cities = (await getJson(`${server.url}/api/spatial/stats/cities`)).body;
    assert.equal(cities.attribution, '', 'absent metadata is an empty string');
  });

  test('unknown source: 404 problem', async () => {
    for (const kind of ['schema', 'stats']) {
      const r = await getJson<Problem>(`${server.url}/api/spatial/${kind}/nope`);
      assert.equal(r.status, 404);
      assert.equal(r.contentType, 'application/problem+json');
      assert.match(r.body.detail, /"nope"/);
    }
  });
});

describe('feature query', () => {
  test('the features that meet the box, against the tile read with the reference decoder', async () => {
    const bbox = [-30, 20, 60, 65];
    const res = await ok({ source: 'cities', bbox, zoom: 0, limit: 1000 });
    const tile = readMvt((await get(`${server.url}/data/cities/0/0/0.pbf`)).body).get('cities')!;
    const expected = tile.features
      .filter((f) => {
        const [px, py] = f.geometry[0][0];
        return px >= 0 && px < tile.extent && py >= 0 && py < tile.extent && inBox(lonLat(0, 0, 0, px, py, tile.extent), bbox);
      })
      .map((f) => String(f.properties.name))
      .sort();
    assert.ok(expected.length >= 5);
    assert.deepEqual(res.features.map((f) => String(f.properties.name)).sort(), expected);
    assert.equal(res.total, expected.length);
    assert.equal(res.truncated, false);
    for (const f of res.features) {
      assert.equal(f.layer, 'cities');
      assert.equal(f.geometry_type, 'Point');
      assert.equal(f.geometry.type, 'Point');
      assert.ok(inBox(f.geometry.coordinates as number[], bbox), `${String(f.properties.name)} lies in the box`);
    }
  });

  test('a point near a tile border is returned once (tile buffers do not duplicate it)', async () => {
    const res = await ok({ source: 'cities', bbox: [2, 48, 3, 49], zoom: 5 });
    assert.deepEqual(
      res.features.map((f) => f.properties.name),
      ['Paris'],
    );
    const [lon, lat] = res.features[0].geometry.coordinates as number[];
    assert.ok(Math.abs(lon - 2.35) < 0.05 && Math.abs(lat - 48.86) < 0.05, `Paris at ${lon},${lat}`);
  });

  test('limit: the first features, total of all, truncated', async () => {
    const bbox = [-20, 30, 40, 60];
    const all = await ok({ source: 'cities', bbox, zoom: 3, limit: 1000 });
    assert.ok(all.total > 5);
    assert.equal(all.features.length, all.total);
    const cut = await ok({ source: 'cities', bbox, zoom: 3, limit: 2 });
    assert.equal(cut.features.length, 2);
    assert.equal(cut.total, all.total);
    assert.equal(cut.truncated, true);
    assert.deepEqual(cut.features, all.features.slice(0, 2));
    const exact = await ok({ source: 'cities', bbox, zoom: 3, limit: all.total });
    assert.equal(exact.truncated, false);
    const byDefault = await ok({ source: 'cities', bbox, zoom: 3 });
    assert.equal(byDefault.features.length, Math.min(100, all.total), 'limit defaults to 100');
  });

  test('layers filter', async () => {
    const water = await ok({ source: 'planet', zoom: 1, bbox: [-180, -85, 180, 85], layers: ['water'], limit: 10000 });
    assert.ok(water.total > 0);
    assert.ok(water.features.every((f) => f.layer === 'water'));
    const place = await ok({ source: 'planet', zoom: 1, bbox: [-180, -85, 180, 85], layers: ['place'], limit: 10000 });
    const both = await ok({ source: 'planet', zoom: 1, bbox: [-180, -85, 180, 85], layers: ['water', 'place'], limit: 10000 });
    assert.equal(both.total, water.total + place.total);
    assert.deepEqual(new Set(both.features.map((f) => f.layer)), new Set(['water', 'place']));
    const none = await ok({ source: 'planet', zoom: 1, bbox: [-180, -85, 180, 85], layers: ['no-such-layer'] });
    assert.equal(none.total, 0);
  });

  test('a feature split across tiles is returned once when it has an id; geometry in longitude/latitude', async () => {
    // Water and landcover polygons cross the z1 tile borders here, with OSM ids.
    const layers = ['water', 'landcover'];
    const world = await ok({ source: 'planet', zoom: 1, bbox: [-180, -85, 180, 85], layers, limit: 10000 });
    const keys = world.features.map((f) => `${f.layer}/${String(f.id)}`);
    assert.equal(new Set(keys.filter((k) => !k.endsWith('/undefined'))).size, keys.filter((k) => !k.endsWith('/undefined')).length, 'no (layer, id) twice');
    const quadrants = [
      [-180, 0, 0, 85],
      [0, 0, 180, 85],
      [-180, -85, 0, 0],
      [0, -85, 180, 0],
    ];
    let perTile = 0;
    for (const bbox of quadrants) perTile += (await ok({ source: 'planet', zoom: 1, bbox, layers, limit: 10000 })).total;
    assert.ok(world.total < perTile, `deduplicated: ${world.total} over the world, ${perTile} tile by tile`);
    // The geometry checks below run over every returned feature: there must be some, all of them returned.
    assert.ok(world.features.length > 0, 'water and landcover features over the world');
    assert.equal(world.features.length, world.total);
    for (const f of world.features) {
      assert.match(f.geometry.type, /Polygon/);
      const flat = (f.geometry.coordinates as unknown[]).flat(Infinity) as number[];
      for (let i = 0; i < flat.length; i += 2) assert.ok(Math.abs(flat[i]) <= 360 && Math.abs(flat[i + 1]) <= 90, 'degrees');
    }
  });

  test('an MLT source, at the zoom of its tile', async () => {
    const p = omtPairs().find((x) => x.name === '14_8298_10748')!;
    const [w, n] = lonLat(p.z, p.x, p.y, 1024, 1024, 4096);
    const [e, s] = lonLat(p.z, p.x, p.y, 3072, 3072, 4096);
    const res = await ok({ source: 'mltpm', bbox: [w, s, e, n], zoom: 14, layers: ['poi'], limit: 10000 });
    assert.ok(res.total > 10);
    assert.equal(res.features.length, res.total);
    let points = 0;
    for (const f of res.features) {
      assert.equal(f.layer, 'poi');
      if (f.geometry.type === 'Point') {
        assert.ok(inBox(f.geometry.coordinates as number[], [w, s, e, n]));
        points++;
      }
    }
    // POIs are points: the box check above must have run for most of them.
    assert.ok(points > 10, `${points} point features checked`);
  });

  test('zoom is clamped to the source range; without bbox the tile at the source center is queried', async () => {
    const res = await ok({ source: 'cities' });
    assert.equal(res.zoom, 6, 'zoom 14 by default, clamped to maxzoom 6');
    const center = (await getJson<{ center: number[] }>(`${server.url}/data/cities.json`)).body.center;
    const n = 2 ** 6;
    const x = Math.floor(((center[0] + 180) / 360) * n);
    const r = (center[1] * Math.PI) / 180;
    const y = Math.floor(((1 - Math.log(Math.tan(r) + 1 / Math.cos(r)) / Math.PI) / 2) * n);
    const [w, north] = lonLat(6, x, y, 0, 0, 1);
    const [e, south] = lonLat(6, x, y, 1, 1, 1);
    res.bbox.forEach((v, i) => assert.ok(Math.abs(v - [w, south, e, north][i]) < 1e-9, `bbox[${i}]`));
    assert.ok(res.total > 0);
    const low = await ok({ source: 'planet', zoom: 0, bbox: [0, 0, 10, 10], layers: ['water'] });
    assert.equal(low.zoom, 0);
  });

  test('an empty answer where the tile exists but nothing meets the box', async () => {
    const res = await ok({ source: 'cities', zoom: 0, bbox: [-150, -40, -140, -30] });
    assert.deepEqual(res.features, []);
    assert.equal(res.total, 0);
    assert.equal(res.truncated, false);
  });

  test('a composite source', async () => {
    const res = await ok({ source: 'cities+planet', zoom: 1, bbox: [-10, 35, 30, 60], layers: ['cities', 'water'], limit: 10000 });
    assert.deepEqual(new Set(res.features.map((f) => f.layer)), new Set(['cities', 'water']));
  });
});

describe('feature query errors', () => {
  const problem = async (body: unknown, status: number, detail: RegExp, raw = false) => {
    const r = await query(body, raw);
    assert.equal(r.status, status, JSON.stringify(body));
    assert.equal(r.contentType, 'application/problem+json');
    assert.match((r.json as Problem).detail, detail);
  };

  test('400 for a raster source, 404 for an unknown source and where there is no tile', async () => {
    await problem({ source: 'toner' }, 400, /"toner" serves png tiles/);
    await problem({ source: 'nope' }, 404, /"nope"/);
    await problem({ source: 'cities', zoom: 6, bbox: [-150, -40, -149, -39] }, 404, /no tile covering/);
    await problem({ source: 'monaco' }, 404, /no tile covering/);
  });

  test('400 when the box covers too many tiles', async () => {
    await problem({ source: 'cities', zoom: 6, bbox: [-180, -80, 180, 80] }, 400, /covers \d+ tiles at zoom 6; a query reads at most 64/);
  });

  test('400 naming the field for every invalid body', async () => {
    const cases: [unknown, RegExp][] = [
      [{}, /source: required/],
      [{ source: 5 }, /source: a source id/],
      [{ source: 'cities', bbox: [1, 2, 3] }, /bbox\[3\]/],
      [{ source: 'cities', bbox: [1, 2, 3, 4, 5] }, /bbox/],
      [{ source: 'cities', bbox: [10, 0, 5, 1] }, /bbox: west must be <= east/],
      [{ source: 'cities', bbox: [0, 10, 5, 1] }, /bbox: south must be <= north/],
      [{ source: 'cities', bbox: [0, 0, 200, 1] }, /bbox\[2\]: longitudes/],
      [{ source: 'cities', bbox: ['a', 0, 1, 1] }, /bbox\[0\]: a number/],
      [{ source: 'cities', zoom: 1.5 }, /zoom: an integer/],
      [{ source: 'cities', zoom: 23 }, /zoom: zoom 0..22/],
      [{ source: 'cities', limit: 0 }, /limit: 1..10000/],
      [{ source: 'cities', limit: 'ten' }, /limit: a number/],
      [{ source: 'cities', layers: 'cities' }, /layers: an array/],
      [{ source: 'cities', layers: [''] }, /layers\[0\]: layer names are not empty/],
      [{ source: 'cities', layer: ['cities'] }, /layer: unknown field/],
      [[1, 2], /a JSON object/],
    ];
    for (const [body, detail] of cases) await problem(body, 400, detail);
    // In the service's words, not the JSON parser's ("Unexpected end of JSON input", "at position 11").
    await problem('{"source": ', 400, /^the body is not JSON: send one JSON object/, true);
    await problem('', 400, /^the body is not JSON: send one JSON object/, true);
  });

  test('413 for a body over 64 KiB', async () => {
    await problem(JSON.stringify({ source: 'cities', layers: Array.from({ length: 20000 }, () => 'water') }), 413, /at most 65536 bytes/, true);
  });
});
