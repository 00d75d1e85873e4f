// OGC API - Features Part 2 (CRS by reference) through the real server and a real PostgreSQL + PostGIS: what the
// collections list (CRS84, EPSG:4326, EPSG:3857, the table's own SRID as storageCrs with GDAL's axis order of it,
// asked in the raster thread beside a COG source that must keep working; CRS84 only for a data-file layer), items and an item in each CRS compared with PostGIS's own ST_Transform of the rows, EPSG:4326's
// latitude-first axis order, bbox-crs selecting the features the CRS84 bbox selects, refusals naming the
// parameter; and writes with Content-Crs (EPSG:3857 stored at the right place, the tile covering it expired;
// a Content-Crs the collection does not list refused naming it). GDAL's OGCAPI driver still reads every feature.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { hashKey } from '../src/auth/keys.js';
import { CRS84 } from '../src/ogc/tms.js';
import { writeCityFiles } from './helpers/city-features.js';
import { gdalTool } from './helpers/gdal.js';
import { call as callAt, tileOf } from './helpers/feature-writes.js';
import { startPostgres, type PostgresCluster } from './helpers/postgres.js';
import { fixture, ROOT, startServer, type TestServer } from './helpers/server.js';
import { get as getTile, readMvt } from './helpers/vector-tiles.js';

const EDITOR = 'tsk_editor-key-for-the-crs-test-00000000000000';
const EPSG = (n: number) => `http://www.opengis.net/def/crs/EPSG/0/${n}`;
const PART2 = 'http://www.opengis.net/spec/ogcapi-features-2/1.0/conf/crs';

let db: PostgresCluster;
let server: TestServer;
let scratch: string;

const call = (method: string, p: string, body?: unknown, headers: Record<string, string> = {}) => callAt(server.url, method, p, body, headers);
const getJson = (p: string) => call('GET', p);
const editor = { authorization: `Bearer ${EDITOR}` };

/** Every point of the table, by id, in `srid` (x/y as PostGIS keeps them). */
async function rowsIn(table: string, srid: number): Promise<Map<number, [number, number]>> {
  const { rows } = await db.sql(`SELECT id, ST_X(ST_Transform(geom, ${srid})) AS x, ST_Y(ST_Transform(geom, ${srid})) AS y FROM ${table}`);
  return new Map(rows.map((r) => [Number(r.id), [Number(r.x), Number(r.y)]]));
}

/** EPSG:3857 of a lon/lat (the spherical formulas, written here). */
const mercator = (lon: number, lat: number) => [(lon * Math.PI * 6378137) / 180, Math.log(Math.tan(Math.PI / 4 + (lat * Math.PI) / 360)) * 6378137];

const close = (a: number, b: number, tolerance: number, what: string) => assert.ok(Math.abs(a - b) <= tolerance, `${what}: ${a} vs ${b}`);


before(async () => {
  db = await startPostgres([]);
  // Points on a grid over central Europe, in CRS84 (lon, lat), and the same kind of table stored in UTM 32N.
  await db.sql(`
    CREATE TABLE public.crs_points (id serial PRIMARY KEY, name text, geom geometry(Point, 4326));
    INSERT INTO public.crs_points (name, geom)
      SELECT 'p' || i || '-' || j, ST_SetSRID(ST_MakePoint(5 + i * 0.7, 45 + j * 0.45), 4326) FROM generate_series(0, 9) i, generate_series(0, 9) j;
    CREATE TABLE public.crs_utm (id serial PRIMARY KEY, name text, geom geometry(Point, 25832));
    INSERT INTO public.crs_utm (name, geom) SELECT name, ST_Transform(geom, 25832) FROM public.crs_points WHERE id <= 20;
    CREATE TABLE public.crs_etrs (id serial PRIMARY KEY, name text, geom geometry(Point, 4258));
    INSERT INTO public.crs_etrs (name, geom) SELECT name, ST_Transform(geom, 4258) FROM public.crs_points WHERE id <= 5;`);
  scratch = mkdtempSync(path.join(os.tmpdir(), 'tsts-ogc-crs-'));
  const files = writeCityFiles(scratch);
  server = await startServer({
    toml: `
[server]
disable_render = true

[[sources]]
id = "city"
type = "geopackage"
path = "${files.gpkg}"
layers = ["place"]

[[sources]]
id = "omt"
type = "pmtiles"
path = "${fixture('vector/omt-planet-z0-1.pmtiles')}"

[[sources]]
id = "rgb"
type = "cog"
path = "${path.join(ROOT, 'fixtures/cog/test-rgb.cog.tif')}"

[auth]
[[auth.keys]]
name = "editor"
hash = "${hashKey(EDITOR)}"
write = ["crs_*"]

[postgres]
connection_string = "${db.url}"

[[postgres.tables]]
id = "crs_points"
table = "crs_points"
writable = true

[[postgres.tables]]
id = "crs_utm"
table = "crs_utm"

[[postgres.tables]]
id = "crs_etrs"
table = "crs_etrs"

[cache]
dir = "${path.join(scratch, 'cache')}"
`,
  });
});

after(async () => {
  await server?.stop();
  db?.destroy();
  if (scratch) rmSync(scratch, { recursive: true, force: true });
});

describe('what the service declares', () => {
  test("conformance lists Part 2's crs class; a table lists CRS84, EPSG:4326, EPSG:3857 and its own SRID, its storageCrs", async () => {
    assert.ok((await getJson('/ogc/conformance?f=json')).json().conformsTo.includes(PART2));
    const points = (await getJson('/ogc/collections/crs_points?f=json')).json();
    assert.deepEqual(points.crs, [CRS84, EPSG(4326), EPSG(3857)]);
    assert.equal(points.storageCrs, EPSG(4326));
    const utm = (await getJson('/ogc/collections/crs_utm?f=json')).json();
    // A table in another SRID lists its own last (GDAL knows the EPSG code), as its storageCrs.
    assert.deepEqual(utm.crs, [CRS84, EPSG(4326), EPSG(3857), EPSG(25832)]);
    assert.equal(utm.storageCrs, EPSG(25832));
    const etrs = (await getJson('/ogc/collections/crs_etrs?f=json')).json();
    assert.deepEqual(etrs.crs, [CRS84, EPSG(4326), EPSG(3857), EPSG(4258)]);
    assert.equal(etrs.storageCrs, EPSG(4258));
    // The list of collections says the same as each collection.
    const all = (await getJson('/ogc/collections?f=json')).json();
    assert.deepEqual(all.collections.find((c: { id: string }) => c.id === 'crs_utm').crs, utm.crs);
  });

  test('a data-file layer lists CRS84 only, and refuses crs=EPSG:3857 naming the parameter', async () => {
    const city = (await getJson('/ogc/collections/city?f=json')).json();
    assert.deepEqual(city.crs, [CRS84]);
    assert.equal(city.storageCrs, CRS84);
    const r = await getJson(`/ogc/collections/city/items?crs=${encodeURIComponent(EPSG(3857))}`);
    assert.equal(r.status, 400);
    assert.equal(r.json().parameter, 'crs');
    const ok = await getJson(`/ogc/collections/city/items?limit=1&crs=${encodeURIComponent(CRS84)}`);
    assert.equal(ok.status, 200);
    assert.equal(ok.headers.get('content-crs'), `<${CRS84}>`);
  });

  test('the OpenAPI document describes crs and bbox-crs of items', async () => {
    const api = (await getJson('/openapi.json')).json();
    const params = api.paths['/ogc/collections/{collectionId}/items'].get.parameters.map((p: { name: string }) => p.name);
    assert.ok(params.includes('crs') && params.includes('bbox-crs'), params.join(','));
  });
});

describe('reading in a CRS', () => {
  test("items in EPSG:3857 are PostGIS's ST_Transform of the rows, with Content-Crs", async () => {
    const r = await getJson(`/ogc/collections/crs_points/items?limit=100&crs=${encodeURIComponent(EPSG(3857))}`);
    assert.equal(r.status, 200, r.text);
    assert.equal(r.headers.get('content-crs'), `<${EPSG(3857)}>`);
    const want = await rowsIn('crs_points', 3857);
    const features = r.json().features as { id: number; geometry: { coordinates: number[]; crs?: unknown } }[];
    assert.equal(features.length, 100);
    for (const f of features) {
      assert.equal(f.geometry.crs, undefined, 'no crs member inside the geometry');
      close(f.geometry.coordinates[0], want.get(f.id)![0], 1e-6, `x of ${f.id}`);
      close(f.geometry.coordinates[1], want.get(f.id)![1], 1e-6, `y of ${f.id}`);
    }
    // Metres, not degrees.
    assert.ok(features.every((f) => Math.abs(f.geometry.coordinates[0]) > 500_000));
  });

  test('EPSG:4326 answers latitude first, CRS84 (and no crs) longitude first', async () => {
    const lonLat = (await getJson('/ogc/collections/crs_points/items?limit=100')).json().features as { id: number; geometry: { coordinates: number[] } }[];
    const r = await getJson(`/ogc/collections/crs_points/items?limit=100&crs=${encodeURIComponent(EPSG(4326))}`);
    assert.equal(r.headers.get('content-crs'), `<${EPSG(4326)}>`);
    const latLon = new Map((r.json().features as typeof lonLat).map((f) => [f.id, f.geometry.coordinates]));
    const want = await rowsIn('crs_points', 4326);
    for (const f of lonLat) {
      assert.deepEqual(latLon.get(f.id), [f.geometry.coordinates[1], f.geometry.coordinates[0]]);
      close(f.geometry.coordinates[0], want.get(f.id)![0], 1e-9, `lon of ${f.id}`);
    }
    const one = await getJson(`/ogc/collections/crs_points/items/1?crs=${encodeURIComponent(EPSG(4326))}`);
    assert.equal(one.headers.get('content-crs'), `<${EPSG(4326)}>`);
    assert.deepEqual(one.json().geometry.coordinates, [45, 5]);
    const plain = await getJson('/ogc/collections/crs_points/items/1');
    assert.equal(plain.headers.get('content-crs'), `<${CRS84}>`);
    assert.deepEqual(plain.json().geometry.coordinates, [5, 45]);
  });

  test('a table stored in UTM 32N: answered in EPSG:3857 as PostGIS transforms its rows, and in its own CRS as stored (easting first)', async () => {
    const want = await rowsIn('crs_utm', 3857);
    const r = await getJson(`/ogc/collections/crs_utm/items?limit=100&crs=${encodeURIComponent(EPSG(3857))}`);
    assert.equal(r.status, 200, r.text);
    assert.equal(r.json().features.length, 20);
    for (const f of r.json().features) assert.deepEqual(f.geometry.coordinates.map((n: number) => Math.round(n * 1000)), want.get(f.id)!.map((n) => Math.round(n * 1000)));
    const stored = await rowsIn('crs_utm', 25832);
    const own = await getJson(`/ogc/collections/crs_utm/items?limit=100&crs=${encodeURIComponent(EPSG(25832))}`);
    assert.equal(own.status, 200, own.text);
    assert.equal(own.headers.get('content-crs'), `<${EPSG(25832)}>`);
    for (const f of own.json().features) {
      close(f.geometry.coordinates[0], stored.get(f.id)![0], 1e-3, `easting of ${f.id}`);
      close(f.geometry.coordinates[1], stored.get(f.id)![1], 1e-3, `northing of ${f.id}`);
    }
    const one = await getJson(`/ogc/collections/crs_utm/items/3?crs=${encodeURIComponent(EPSG(25832))}`);
    assert.equal(one.status, 200, one.text);
    close(one.json().geometry.coordinates[0], stored.get(3)![0], 1e-3, 'easting');
  });

  test("a table stored in ETRS89 (EPSG:4258, latitude first by GDAL's EPSG definition): answered latitude first in its own CRS", async () => {
    const stored = await rowsIn('crs_etrs', 4258);
    const one = await getJson(`/ogc/collections/crs_etrs/items/2?crs=${encodeURIComponent(EPSG(4258))}`);
    assert.equal(one.status, 200, one.text);
    const [a, b] = one.json().geometry.coordinates as [number, number];
    close(a, stored.get(2)![1], 1e-9, 'latitude first');
    close(b, stored.get(2)![0], 1e-9, 'longitude second');
  });

  test('the COG source of the same server serves tiles: GDAL answered the axis orders in the raster thread, never in the HTTP one', async () => {
    const tile = await getTile(`${server.url}/data/rgb/12/655/1582.png`);
    assert.equal(tile.status, 200, tile.body.toString());
    assert.equal(tile.headers['content-type'], 'image/png');
  });

  test('bbox-crs=EPSG:3857 (and EPSG:4326, latitude first) select the features the CRS84 bbox selects', async () => {
    const ids = async (q: string) => {
      const r = await getJson(`/ogc/collections/crs_points/items?limit=1000&${q}`);
      assert.equal(r.status, 200, r.text);
      return (r.json().features as { id: number }[]).map((f) => f.id).sort((a, b) => a - b);
    };
    const [w, s, e, n] = [6.1, 46.1, 8.9, 47.9];
    const lo = mercator(w, s);
    const hi = mercator(e, n);
    const byCrs84 = await ids(`bbox=${[w, s, e, n]}`);
    assert.ok(byCrs84.length > 5 && byCrs84.length < 100, String(byCrs84.length));
    assert.deepEqual(await ids(`bbox=${[...lo, ...hi]}&bbox-crs=${encodeURIComponent(EPSG(3857))}`), byCrs84);
    assert.deepEqual(await ids(`bbox=${[s, w, n, e]}&bbox-crs=${encodeURIComponent(EPSG(4326))}`), byCrs84);
    assert.deepEqual(await ids(`bbox=${[w, s, e, n]}&bbox-crs=${encodeURIComponent(CRS84)}`), byCrs84);
    // A table stored in UTM takes the same box in 3857 (the box transformed to its SRID in the statement).
    const utm = await getJson(`/ogc/collections/crs_utm/items?limit=100&bbox=${[...lo, ...hi]}&bbox-crs=${encodeURIComponent(EPSG(3857))}`);
    const utmIds = (utm.json().features as { properties: { name: string } }[]).map((f) => f.properties.name).sort();
    const names = (await getJson(`/ogc/collections/crs_points/items?limit=1000&bbox=${[w, s, e, n]}`)).json().features.map((f: { properties: { name: string } }) => f.properties.name);
    const { rows } = await db.sql('SELECT name FROM crs_utm');
    assert.deepEqual(utmIds, rows.map((x) => x.name as string).filter((x) => names.includes(x)).sort());
  });

  test('a crs or bbox-crs the collection does not list is 400 naming the parameter; so is a projected bbox crossing west over east', async () => {
    for (const [name, value] of [
      ['crs', EPSG(2056)],
      ['crs', 'EPSG:3857'],
      ['bbox-crs', EPSG(25832)],
      ['crs', EPSG(4258)],
      ['crs', ''],
    ]) {
      const r = await getJson(`/ogc/collections/crs_points/items?bbox=0,0,1,1&${name}=${encodeURIComponent(value)}`);
      assert.equal(r.status, 400, `${name}=${value}`);
      assert.equal(r.headers.get('content-type'), 'application/problem+json');
      assert.equal(r.json().parameter, name);
    }
    const item = await getJson(`/ogc/collections/crs_points/items/1?crs=${encodeURIComponent(EPSG(2056))}`);
    assert.equal(item.status, 400);
    assert.equal(item.json().parameter, 'crs');
    const crossing = await getJson(`/ogc/collections/crs_points/items?bbox=1000,0,0,1000&bbox-crs=${encodeURIComponent(EPSG(3857))}`);
    assert.equal(crossing.status, 400);
    assert.equal(crossing.json().parameter, 'bbox');
  });

  test("GDAL's OGCAPI driver still reads every feature of a collection that lists several CRSs", () => {
    const r = gdalTool('ogrinfo', ['-ro', '-al', '-so', '-oo', 'API=ITEMS', `OGCAPI:${server.url}/ogc/collections/crs_utm`]);
    assert.equal(r.status, 0, r.stderr + r.stdout.slice(0, 2000));
    assert.match(r.stdout, /Feature Count: 20/);
    const all = gdalTool('ogrinfo', ['-ro', '-al', '-oo', 'API=ITEMS', `OGCAPI:${server.url}/ogc/collections/crs_utm`]);
    assert.equal([...all.stdout.matchAll(/^OGRFeature\(crs_utm\):/gm)].length, 20, all.stderr);
  });
});

describe('writing in a CRS (Content-Crs)', () => {
  const names = async (t: { z: number; x: number; y: number }) => {
    const r = await getTile(`${server.url}/data/crs_points/${t.z}/${t.x}/${t.y}.pbf`);
    if (r.status === 204) return [];
    assert.equal(r.status, 200);
    return (readMvt(r.body).get('crs_points')?.features ?? []).map((f) => String(f.properties.name)).sort();
  };

  test('a feature POSTed in EPSG:3857 is stored at its place (read back in CRS84 within 1e-7 degrees) and its tile expired', async () => {
    const [lon, lat] = [30.523, 50.4501];
    const tile = tileOf(lon, lat, 12);
    assert.deepEqual(await names(tile), [], 'cached empty before the write');
    const [x, y] = mercator(lon, lat);
    const created = await call('POST', '/ogc/collections/crs_points/items', { type: 'Feature', properties: { name: 'kyiv-3857' }, geometry: { type: 'Point', coordinates: [x, y] } }, { ...editor, 'content-crs': `<${EPSG(3857)}>` });
    assert.equal(created.status, 201, created.text);
    assert.equal(created.headers.get('content-crs'), `<${EPSG(3857)}>`, 'answered in the CRS it was sent in');
    close(created.json().geometry.coordinates[0], x, 1e-3, 'x answered');
    const item = new URL(created.headers.get('location')!).pathname;
    const back = (await getJson(item)).json();
    close(back.geometry.coordinates[0], lon, 1e-7, 'longitude');
    close(back.geometry.coordinates[1], lat, 1e-7, 'latitude');
    const { rows } = await db.sql(`SELECT ST_X(geom) AS x, ST_Y(geom) AS y FROM crs_points WHERE name = 'kyiv-3857'`);
    close(rows[0].x, lon, 1e-7, 'stored longitude');
    close(rows[0].y, lat, 1e-7, 'stored latitude');
    assert.deepEqual(await names(tile), ['kyiv-3857'], 'the cached tile was expired');
  });

  test('PUT in EPSG:4326 takes latitude first and checks ranges in that order; PATCH in EPSG:3857 merges in that CRS', async () => {
    const created = await call('POST', '/ogc/collections/crs_points/items', { type: 'Feature', properties: { name: 'lat-first' }, geometry: { type: 'Point', coordinates: [1, 2] } }, editor);
    assert.equal(created.status, 201, created.text);
    const item = new URL(created.headers.get('location')!).pathname;
    const put = await call('PUT', item, { type: 'Feature', properties: { name: 'lat-first' }, geometry: { type: 'Point', coordinates: [60, 120] } }, { ...editor, 'content-crs': EPSG(4326) });
    assert.equal(put.status, 200, put.text);
    assert.deepEqual(put.json().geometry.coordinates, [60, 120]);
    assert.deepEqual((await getJson(item)).json().geometry.coordinates, [120, 60]);
    // 120 as a latitude: refused, naming the position, in the CRS's words.
    const bad = await call('PUT', item, { type: 'Feature', properties: {}, geometry: { type: 'Point', coordinates: [120, 60] } }, { ...editor, 'content-crs': EPSG(4326) });
    assert.equal(bad.status, 400);
    assert.equal(bad.json().member, 'geometry.coordinates');
    assert.match(bad.json().detail, /latitude 120 is outside -90\.\.90 \(coordinates are EPSG:4326: latitude, longitude\)/);
    const outside = await call('PUT', item, { type: 'Feature', properties: {}, geometry: { type: 'Point', coordinates: [3e7, 0] } }, { ...editor, 'content-crs': EPSG(3857) });
    assert.equal(outside.status, 400);
    assert.equal(outside.json().member, 'geometry.coordinates');
    const patched = await call('PATCH', item, { geometry: { coordinates: [1_000_000, 2_000_000] } }, { ...editor, 'content-type': 'application/merge-patch+json', 'content-crs': `<${EPSG(3857)}>` });
    assert.equal(patched.status, 200, patched.text);
    const { rows } = await db.sql(`SELECT ST_X(ST_Transform(geom, 3857)) AS x, ST_Y(ST_Transform(geom, 3857)) AS y FROM crs_points WHERE name = 'lat-first'`);
    close(rows[0].x, 1_000_000, 1e-3, 'x');
    close(rows[0].y, 2_000_000, 1e-3, 'y');
  });

  test('a Content-Crs the collection does not list is 400 naming Content-Crs, and nothing is written', async () => {
    const before = (await db.sql('SELECT count(*) AS n FROM crs_points')).rows[0].n;
    for (const crs of [EPSG(25832), 'EPSG:3857', '<urn:ogc:def:crs:EPSG::3857>']) {
      const r = await call('POST', '/ogc/collections/crs_points/items', { type: 'Feature', properties: { name: 'nope' }, geometry: { type: 'Point', coordinates: [1, 2] } }, { ...editor, 'content-crs': crs });
      assert.equal(r.status, 400, crs);
      assert.equal(r.json().member, 'Content-Crs');
    }
    assert.equal((await db.sql('SELECT count(*) AS n FROM crs_points')).rows[0].n, before);
  });
});
