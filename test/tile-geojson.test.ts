// `/data/{id}/{z}/{x}/{y}.geojson` through the real server: a FeatureCollection in tile coordinates with
// `_layer`, for MVT and MLT sources, judged against the tile read with the reference MVT decoder; and its codes.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { fixture, startServer, type TestServer } from './helpers/server.js';
import { buildVectorArchives, omtPairs } from './helpers/vector-archives.js';
import { comparableProps, get, readMvt, type PlainTile } from './helpers/vector-tiles.js';

interface GeoFeature {
  type: 'Feature';
  id?: number | string;
  geometry: { type: string; coordinates: unknown };
  properties: Record<string, unknown> & { _layer: string };
}
interface Collection {
  type: 'FeatureCollection';
  features: GeoFeature[];
}

const TYPES: Record<number, string[]> = { 1: ['Point', 'MultiPoint'], 2: ['LineString', 'MultiLineString'], 3: ['Polygon', 'MultiPolygon'] };

/** GeoJSON coordinates as the reference decoder's part list (closed rings, one part per point). */
function parts(g: GeoFeature['geometry']): number[][][] {
  const c = g.coordinates as never;
  switch (g.type) {
    case 'Point':
      return [[c]];
    case 'MultiPoint':
      return (c as number[][]).map((p) => [p]);
    case 'LineString':
      return [c];
    case 'MultiPolygon':
      return (c as number[][][][]).flat(1);
    default:
      return c;
  }
}

/** Every feature of `tile`, in layer order, matches the GeoJSON feature at the same position. */
function assertSameAsTile(fc: Collection, tile: PlainTile, layerOrder: string[]): void {
  const expected = layerOrder.flatMap((name) => tile.get(name)!.features.map((f) => ({ name, f })));
  assert.equal(fc.features.length, expected.length, 'feature count');
  expected.forEach(({ name, f }, i) => {
    const g = fc.features[i];
    assert.equal(g.type, 'Feature');
    assert.equal(g.properties._layer, name, `#${i}: _layer`);
    assert.ok(TYPES[f.type].includes(g.geometry.type), `#${i}: ${g.geometry.type} for MVT type ${f.type}`);
    assert.deepEqual(parts(g.geometry), f.geometry, `#${i}: coordinates in tile units`);
    const { _layer, ...props } = g.properties;
    assert.deepEqual(comparableProps(props), comparableProps(f.properties), `#${i}: properties`);
    assert.equal(g.id === undefined ? undefined : Number(g.id), f.id, `#${i}: id`);
  });
}

let server: TestServer;
before(async () => {
  const archives = buildVectorArchives();
  const src = (id: string, type: string, path: string) => `[[sources]]\nid = "${id}"\ntype = "${type}"\npath = "${path}"\n`;
  server = await startServer({
    toml:
      src('cities', 'mbtiles', fixture('vector/world_cities.mbtiles')) +
      src('mltpm', 'pmtiles', archives.mltPmtiles) +
      src('toner', 'pmtiles', fixture('raster/stamen-toner-z0-3.pmtiles')),
  });
});
after(async () => {
  await server?.stop();
});

async function geojson(path: string, headers: Record<string, string> = {}) {
  const r = await get(`${server.url}${path}`, headers);
  return { ...r, fc: r.status === 200 ? (JSON.parse(r.body.toString('utf8')) as Collection) : undefined };
}

describe('tile as GeoJSON', () => {
  test('MVT source: the features of the tile, in tile coordinates, with _layer', async () => {
    const r = await geojson('/data/cities/3/4/2.geojson', { 'accept-encoding': 'gzip' });
    assert.equal(r.status, 200);
    assert.equal(r.headers['content-type'], 'application/geo+json');
    assert.equal(r.fc!.type, 'FeatureCollection');
    const tile = readMvt((await get(`${server.url}/data/cities/3/4/2.pbf`)).body);
    assert.ok(tile.get('cities')!.features.length > 0);
    assertSameAsTile(r.fc!, tile, ['cities']);
    for (const f of r.fc!.features) {
      const [x, y] = f.geometry.coordinates as number[];
      assert.ok(x >= -4096 && x <= 8192 && y >= -4096 && y <= 8192, 'tile units, not degrees');
    }
  });

  test('MLT source: the reference MVT features of the same tile (polygons, lines and points)', async () => {
    const pairs = omtPairs().filter((x) => ['13_4265_5468', '14_8298_10748'].includes(x.name));
    // Both fixture tiles must be there: an empty list would check nothing.
    assert.deepEqual(pairs.map((x) => x.name).sort(), ['13_4265_5468', '14_8298_10748']);
    for (const p of pairs) {
      const r = await geojson(`/data/mltpm/${p.z}/${p.x}/${p.y}.geojson`);
      assert.equal(r.status, 200);
      const tile = readMvt(p.mvt);
      // Feature order is the MLT's layer order; the reference encoder keeps each layer's feature order.
      const order = [...new Set(r.fc!.features.map((f) => f.properties._layer))];
      assert.deepEqual([...order].sort(), [...tile.keys()].sort());
      const ids = new Map<string, number>();
      for (const f of r.fc!.features) ids.set(f.geometry.type, (ids.get(f.geometry.type) ?? 0) + 1);
      assert.ok(ids.get('Polygon') && ids.get('LineString') && ids.get('Point'), 'all kinds of geometry present');
      // Ids are compared against the MLT's own (the reference encoder cut some 64-bit ids): drop them here.
      const noIds: PlainTile = new Map([...tile].map(([n, l]) => [n, { ...l, features: l.features.map((f) => ({ ...f, id: undefined })) }]));
      assertSameAsTile({ ...r.fc!, features: r.fc!.features.map((f) => ({ ...f, id: undefined })) }, noIds, order);
    }
  });

  test('ETag and 304', async () => {
    const first = await get(`${server.url}/data/cities/2/1/1.geojson`);
    assert.ok(first.headers.etag);
    const again = await get(`${server.url}/data/cities/2/1/1.geojson`, { 'if-none-match': String(first.headers.etag) });
    assert.equal(again.status, 304);
  });

  test('codes: raster 400, unknown source 404, no tile or outside the zoom range 204, bad coordinates 400', async () => {
    const cases: [string, number][] = [
      ['/data/toner/0/0/0.geojson', 400],
      ['/data/nope/0/0/0.geojson', 404],
      ['/data/cities/6/0/0.geojson', 204],
      ['/data/cities/9/0/0.geojson', 204],
      ['/data/cities/2/9/0.geojson', 400],
    ];
    for (const [path, status] of cases) {
      const r = await get(server.url + path);
      assert.equal(r.status, status, path);
      if (status >= 400) {
        assert.equal(r.headers['content-type'], 'application/problem+json', path);
        assert.ok((JSON.parse(r.body.toString()) as { detail: string }).detail.length > 0);
      }
    }
  });
});
