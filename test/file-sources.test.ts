// Data files as vector sources (docs/files.md), through the real server: the Dortmund OpenMapTiles tile decoded into
// features, written as GeoJSON files and a GeoPackage with GDAL's ogr2ogr and loaded into PostGIS the same way
// (test/helpers/city-features.ts). Tiles of each file source decode to the features PostGIS's tiles of the same
// rows hold (same ids and properties per tile, geometry within a pixel); filters and OGC API - Features select the
// same features both ways; TileJSON lists the layers with field types; a changed file is read again by a reload and
// by server.watch, and a broken one leaves the last good reading served and says which source and why.
import assert from 'node:assert/strict';
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import * as v from 'valibot';
import { SourceSchema } from '../src/config/schema.js';
import { openSource } from '../src/sources/open.js';
import { gdalTool } from './helpers/gdal.js';
import { CITY_LAYERS, CITY_TILE, loadCityIntoPostgis, writeCityFiles, type CityFiles } from './helpers/city-features.js';
import { startPostgres, type PostgresCluster } from './helpers/postgres.js';
import type { Feature as GeoJsonFeature } from 'geojson';
import { writeGeoParquet } from './helpers/file-data.js';
import { freePort, ROOT, runCli, startServer, writeTempConfig, type TestServer } from './helpers/server.js';
import { get, getJson, readMlt, readMvt, type PlainFeature, type PlainTile } from './helpers/vector-tiles.js';

let dir: string;
let files: CityFiles;
let db: PostgresCluster;
let server: TestServer;
let adminUrl: string;
let live: string;
let scrapeUrl: string;

const GJ = (layer: string) => `gj_${layer}`;
const PG = (layer: string) => `pg_${layer}`;
const FGB = (layer: string) => `fgb_${layer}`;
const PQ = (layer: string) => `pq_${layer}`;

/**
 * Each layer as FlatGeobuf (GDAL's ogr2ogr, the GeoJSON id kept as an integer `fid` column) and as GeoParquet
 * (an `id` column; Debian 12's GDAL has no Parquet driver): sources of one layer named like the others, serving the
 * layer's own properties (the id columns are ids, as `id_column` makes them in PostGIS).
 */
function writeRangeFormats(files: CityFiles, dir: string): string {
  let toml = '';
  for (const layer of CITY_LAYERS) {
    const collection = JSON.parse(readFileSync(files.geojson[layer], 'utf8')) as { features: { id: number; properties: Record<string, unknown> }[] };
    const keys = [...new Set(collection.features.flatMap((f) => Object.keys(f.properties)))].sort();
    const fgb = path.join(dir, `${layer}.fgb`);
    const r = gdalTool('ogr2ogr', ['-f', 'FlatGeobuf', fgb, files.geojson[layer], '-sql', `SELECT FID AS fid, * FROM "${layer}"`]);
    if (r.status !== 0) throw new Error(`ogr2ogr FlatGeobuf ${layer}: ${r.stderr}`);
    const parquet = path.join(dir, `${layer}.parquet`);
    writeGeoParquet(parquet, [collection.features as GeoJsonFeature[]], { rowGroupSize: 500 });
    const properties = `properties = [${keys.map((k) => JSON.stringify(k)).join(', ')}]\n`;
    toml += `[[sources]]\nid = "${FGB(layer)}"\ntype = "flatgeobuf"\npath = "${fgb}"\n${properties}`;
    toml += `[[sources]]\nid = "${PQ(layer)}"\ntype = "geoparquet"\npath = "${parquet}"\n${properties}`;
    if (layer === 'transportation') {
      // The same files with decoded-feature caches far too small for a tile.
      toml += `[[sources]]\nid = "tight_fgb"\ntype = "flatgeobuf"\npath = "${fgb}"\n${properties}feature_cache_mb = 0.05\n`;
      toml += `[[sources]]\nid = "tight_pq"\ntype = "geoparquet"\npath = "${parquet}"\n${properties}feature_cache_mb = 0.3\n`;
      // The same layer in ETRS89 / UTM 32N (a CRS only GDAL can read here), beside a COG: both need GDAL, which
      // loads in one thread of a process only.
      const utm = path.join(dir, `${layer}-25832.fgb`);
      const u = gdalTool('ogr2ogr', ['-f', 'FlatGeobuf', '-t_srs', 'EPSG:25832', utm, fgb]);
      if (u.status !== 0) throw new Error(`ogr2ogr FlatGeobuf EPSG:25832: ${u.stderr}`);
      toml += `[[sources]]\nid = "utm_fgb"\ntype = "flatgeobuf"\npath = "${utm}"\n${properties}`;
      toml += `[[sources]]\nid = "rgb"\ntype = "cog"\npath = "${path.join(ROOT, 'fixtures/cog/test-rgb.cog.tif')}"\n`;
    }
  }
  return toml;
}

before(async () => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'tsts-file-sources-'));
  files = writeCityFiles(dir);
  live = path.join(dir, 'live.geojson');
  copyFileSync(files.geojson.place, live);
  db = await startPostgres([]);
  loadCityIntoPostgis(files, db.url);
  const adminPort = await freePort();
  scrapeUrl = `http://127.0.0.1:${await freePort()}`;
  adminUrl = `http://127.0.0.1:${adminPort}`;
  const geojson = CITY_LAYERS.map((l) => `[[sources]]\nid = "${GJ(l)}"\ntype = "geojson"\npath = "${files.geojson[l]}"\n`).join('') + writeRangeFormats(files, dir);
  const tables = CITY_LAYERS.map((l) => `[[postgres.tables]]\nid = "${PG(l)}"\ntable = "${l}"\nid_column = "fid"\nmaxzoom = 14\n`).join('');
  server = await startServer({
    toml: `[server]\nwatch = true\ndisable_render = true\nadmin_bind = "127.0.0.1:${adminPort}"\n${geojson}
[[sources]]
id = "city"
type = "geopackage"
path = "${files.gpkg}"

[[sources]]
id = "roads"
type = "geopackage"
path = "${files.gpkg}"
layers = ["transportation"]
properties = ["class", "service", "tunnel"]

[[sources]]
id = "tight"
type = "geopackage"
path = "${files.gpkg}"
layers = ["transportation"]
feature_cache_mb = 0.4

[[sources]]
id = "live"
type = "geojson"
path = "${live}"

[telemetry]
scrape_bind = "${scrapeUrl.slice('http://'.length)}"

[postgres]
connection_string = "${db.url}"
pool_size = 4
${tables}`,
  });
});

after(async () => {
  await server?.stop();
  db?.destroy();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** A tile as the client decodes it; an empty map for 204. */
async function tile(source: string, z: number, x: number, y: number, query = '', fmt = 'pbf'): Promise<PlainTile> {
  const res = await get(`${server.url}/data/${source}/${z}/${x}/${y}.${fmt}${query}`);
  if (res.status === 204) return new Map();
  assert.equal(res.status, 200, `${source} ${z}/${x}/${y}${query}: ${res.body.toString()}`);
  return fmt === 'mlt' ? readMlt(res.body) : readMvt(res.body);
}

const features = (t: PlainTile, layer: string) => t.get(layer)?.features ?? [];
const ids = (fs: PlainFeature[]) => fs.map((f) => Number(f.id)).sort((a, b) => a - b);

/** Squared distance from p to the segment a-b. */
function segDist2(p: [number, number], a: [number, number], b: [number, number]): number {
  const dx = b[0] - a[0];
  const dy = b[1] - a[1];
  const len = dx * dx + dy * dy;
  const t = len === 0 ? 0 : Math.max(0, Math.min(1, ((p[0] - a[0]) * dx + (p[1] - a[1]) * dy) / len));
  const x = a[0] + t * dx - p[0];
  const y = a[1] + t * dy - p[1];
  return x * x + y * y;
}

/**
 * The farthest any vertex of `a` inside the tile lies from the lines (or points) of `b`, in tile units. Vertices in
 * the buffer are not compared: clipping there leaves edges along the buffer's line that PostGIS cleans away and
 * geojson-vt does not (both draw the same inside the tile).
 */
function farthest(a: PlainFeature, b: PlainFeature): number {
  let worst = 0;
  for (const part of a.geometry) {
    for (const p of part) {
      if (p[0] < 0 || p[1] < 0 || p[0] > 4096 || p[1] > 4096) continue;
      let best = Infinity;
      for (const q of b.geometry) {
        if (q.length === 1 || b.type === 1) for (const v of q) best = Math.min(best, segDist2(p, v, v));
        else for (let i = 1; i < q.length; i++) best = Math.min(best, segDist2(p, q[i - 1], q[i]));
      }
      worst = Math.max(worst, best);
    }
  }
  return Math.sqrt(worst);
}

/** One pixel of a 256-pixel tile, in units of 4096, plus a unit of rounding. */
const PIXEL = 17;

/** The width or height of a feature's geometry, whichever is larger, in tile units. */
function span(f: PlainFeature): number {
  const xs = f.geometry.flat().map((p) => p[0]);
  const ys = f.geometry.flat().map((p) => p[1]);
  return Math.max(Math.max(...xs) - Math.min(...xs), Math.max(...ys) - Math.min(...ys));
}

/**
 * The same features as PostGIS's tile, within the simplification's tolerance: a line PostGIS keeps at one or two
 * units long (a sixteenth of a pixel) may be dropped by geojson-vt's simplification, nothing larger.
 */
function assertSameFeatures(got: PlainFeature[], want: PlainFeature[], what: string): void {
  const have = new Set(ids(got));
  const missing = want.filter((f) => !have.has(Number(f.id)));
  for (const f of missing) assert.ok(f.type === 2 && span(f) <= 2, `${what}: feature ${f.id} (${span(f)} units across) is missing`);
  assert.ok(missing.length <= Math.max(1, want.length / 200), `${what}: ${missing.length} of ${want.length} tiny lines dropped`);
  assert.deepEqual(ids(got), ids(want.filter((f) => have.has(Number(f.id)))), `${what}: the same feature ids`);
  const byId = new Map(want.map((f) => [Number(f.id), f]));
  for (const f of got) {
    const w = byId.get(Number(f.id))!;
    assert.deepEqual(Object.entries(f.properties).sort(), Object.entries(w.properties).sort(), `${what}: properties of feature ${f.id}`);
    assert.equal(f.type, w.type, `${what}: geometry type of feature ${f.id}`);
    const d = Math.max(farthest(f, w), farthest(w, f));
    assert.ok(d <= PIXEL, `${what}: feature ${f.id} is ${d.toFixed(1)} units from PostGIS's (at most ${PIXEL})`);
  }
}

/** The city tile, its four children and its parent. */
const TILES: [number, number, number][] = [
  [CITY_TILE.z, CITY_TILE.x, CITY_TILE.y],
  ...[0, 1].flatMap((dx) => [0, 1].map((dy) => [CITY_TILE.z + 1, CITY_TILE.x * 2 + dx, CITY_TILE.y * 2 + dy] as [number, number, number])),
  [CITY_TILE.z - 1, CITY_TILE.x >> 1, CITY_TILE.y >> 1],
];

test('tiles of the GeoJSON, FlatGeobuf and GeoParquet files and of the GeoPackage hold the features PostGIS tiles of the same rows hold', async () => {
  for (const [z, x, y] of TILES) {
    const gpkg = await tile('city', z, x, y);
    for (const layer of CITY_LAYERS) {
      const want = features(await tile(PG(layer), z, x, y), PG(layer));
      assert.ok(want.length > 0 || layer === 'place', `PostGIS has ${layer} features in ${z}/${x}/${y}`);
      assertSameFeatures(features(await tile(GJ(layer), z, x, y), GJ(layer)), want, `GeoJSON ${layer} ${z}/${x}/${y}`);
      assertSameFeatures(features(gpkg, layer), want, `GeoPackage ${layer} ${z}/${x}/${y}`);
      assertSameFeatures(features(await tile(FGB(layer), z, x, y), FGB(layer)), want, `FlatGeobuf ${layer} ${z}/${x}/${y}`);
      assertSameFeatures(features(await tile(PQ(layer), z, x, y), PQ(layer)), want, `GeoParquet ${layer} ${z}/${x}/${y}`);
    }
  }
});

test('a FlatGeobuf in UTM cuts the tiles its lon/lat twin cuts, and a COG of the same server serves tiles: GDAL read the CRS in the raster thread', async () => {
  for (const [z, x, y] of TILES) {
    const want = features(await tile(FGB('transportation'), z, x, y), FGB('transportation'));
    assert.ok(want.length > 0, `the lon/lat file has features in ${z}/${x}/${y}`);
    assertSameFeatures(features(await tile('utm_fgb', z, x, y), 'utm_fgb'), want, `FlatGeobuf in EPSG:25832 ${z}/${x}/${y}`);
  }
  // gdal-async loaded in the HTTP thread for the file's CRS left the raster thread unable to load it: every COG
  // tile failed (or the file did, when the raster thread came first).
  const tj = (await getJson<{ center: [number, number, number]; maxzoom: number }>(`${server.url}/data/rgb.json`)).body;
  const [lon, lat] = tj.center;
  const z = tj.maxzoom;
  const n = 2 ** z;
  const x = Math.floor(((lon + 180) / 360) * n);
  const y = Math.floor(((1 - Math.asinh(Math.tan((lat * Math.PI) / 180)) / Math.PI) / 2) * n);
  const res = await get(`${server.url}/data/rgb/${z}/${x}/${y}.png`);
  assert.equal(res.status, 200, res.body.toString());
  assert.equal(res.headers['content-type'], 'image/png');
});

test('GeoPackage, FlatGeobuf and GeoParquet sources with feature caches too small for a tile (features evicted, read again) cut the same tiles', async () => {
  // Twice over the tiles in two orders, so that rows are found in the cache, missing a few, or missing most.
  for (const order of [TILES, [...TILES].reverse(), TILES]) {
    for (const [z, x, y] of order) {
      const want = features(await tile('city', z, x, y), 'transportation');
      assert.deepEqual(features(await tile('tight', z, x, y), 'transportation'), want, `${z}/${x}/${y}`);
      assert.deepEqual(features(await tile('tight_fgb', z, x, y), 'tight_fgb'), features(await tile(FGB('transportation'), z, x, y), FGB('transportation')), `FlatGeobuf ${z}/${x}/${y}`);
      assert.deepEqual(features(await tile('tight_pq', z, x, y), 'tight_pq'), features(await tile(PQ('transportation'), z, x, y), PQ('transportation')), `GeoParquet ${z}/${x}/${y}`);
    }
  }
});

test('MLT tiles of a file source carry the MVT tile\'s features; outside the data and the zoom range there is no tile', async () => {
  const { z, x, y } = CITY_TILE;
  const mvt = await tile('city', z, x, y);
  const mlt = await tile('city', z, x, y, '', 'mlt');
  for (const layer of CITY_LAYERS) assert.deepEqual(ids(features(mlt, layer)), ids(features(mvt, layer)), `${layer} in MLT`);
  assert.equal((await get(`${server.url}/data/city/${z}/${x + 40}/${y}.pbf`)).status, 204, 'a tile away from the data');
  assert.equal((await get(`${server.url}/data/city/15/${x * 4}/${y * 4}.pbf`)).status, 204, 'past maxzoom (14 by default)');
});

test('TileJSON lists each layer with its field types; configured properties and layers narrow them', async () => {
  const city = (await getJson<{ vector_layers: { id: string; fields: Record<string, string> }[]; bounds: number[]; maxzoom: number }>(`${server.url}/data/city.json`)).body;
  assert.deepEqual(city.vector_layers.map((l) => l.id).sort(), [...CITY_LAYERS].sort());
  const roads = city.vector_layers.find((l) => l.id === 'transportation')!;
  assert.equal(roads.fields.class, 'String');
  assert.equal(roads.fields.layer, 'Number');
  assert.equal(roads.fields.tunnel, 'Boolean');
  assert.equal(city.maxzoom, 14);
  // The tile's features reach past it (OpenMapTiles keeps a buffer): around the tile, not the world.
  assert.ok(city.bounds[0] > 7.3 && city.bounds[2] < 7.6 && city.bounds[1] > 51.4 && city.bounds[3] < 51.6, `bounds around Dortmund: ${city.bounds}`);
  const gj = (await getJson<{ vector_layers: { id: string; fields: Record<string, string> }[] }>(`${server.url}/data/${GJ('transportation')}.json`)).body;
  assert.deepEqual(gj.vector_layers[0].fields, roads.fields, 'GeoJSON infers the types GDAL wrote into the GeoPackage');
  const narrowed = (await getJson<{ vector_layers: { id: string; fields: Record<string, string> }[] }>(`${server.url}/data/roads.json`)).body;
  assert.deepEqual(narrowed.vector_layers, [{ id: 'transportation', fields: { class: 'String', service: 'String', tunnel: 'Boolean' }, minzoom: 0, maxzoom: 14 }]);
  const t = features(await tile('roads', CITY_TILE.z, CITY_TILE.x, CITY_TILE.y), 'transportation');
  assert.ok(t.length > 100 && t.every((f) => Object.keys(f.properties).every((k) => ['class', 'service', 'tunnel'].includes(k))), 'only the configured properties are carried');
});

test('filtered tiles: a file source keeps the features the same CQL2 filter keeps in PostGIS, with the properties asked', async () => {
  const { z, x, y } = CITY_TILE;
  const filters = [
    "class = 'primary' OR class = 'secondary'",
    "tunnel = true AND class <> 'minor'",
    "service LIKE 'park%'",
    "class IN ('service', 'track') AND NOT (service IS NULL)",
    'oneway BETWEEN 1 AND 1',
    'S_INTERSECTS(geometry, BBOX(7.45, 51.51, 7.46, 51.52))',
  ];
  for (const filter of filters) {
    const q = `?${new URLSearchParams({ filter, properties: 'class,service' })}`;
    const want = features(await tile(PG('transportation'), z, x, y, q), PG('transportation'));
    assert.ok(want.length > 0, `${filter} keeps some roads in PostGIS`);
    assertSameFeatures(features(await tile(GJ('transportation'), z, x, y, q), GJ('transportation')), want, `GeoJSON ${filter}`);
    assertSameFeatures(features(await tile('city', z, x, y, q), 'transportation'), want, `GeoPackage ${filter}`);
  }
  const json = JSON.stringify({ op: '=', args: [{ property: 'class' }, 'primary'] });
  const a = await get(`${server.url}/data/city/${z}/${x}/${y}.pbf?${new URLSearchParams({ filter: json, 'filter-lang': 'cql2-json' })}`);
  const b = await get(`${server.url}/data/city/${z}/${x}/${y}.pbf?${new URLSearchParams({ filter: "class='primary'" })}`);
  assert.equal(a.headers.etag, b.headers.etag, 'text and JSON spellings are one tile');
});

test('bad filters on a file source: 400 problem+json naming the parameter, never a 500', async () => {
  const { z, x, y } = CITY_TILE;
  const cases: [Record<string, string>, string][] = [
    [{ filter: 'class = ' }, 'filter'],
    [{ filter: "nosuch = 'x'" }, 'filter'],
    [{ filter: "layer = 'x'" }, 'filter'],
    [{ filter: 'class = 1', 'filter-lang': 'cql3' }, 'filter-lang'],
    [{ properties: 'class,nosuch' }, 'properties'],
  ];
  for (const [query, parameter] of cases) {
    const res = await fetch(`${server.url}/data/${GJ('transportation')}/${z}/${x}/${y}.pbf?${new URLSearchParams(query)}`);
    assert.equal(res.status, 400, JSON.stringify(query));
    assert.match(res.headers.get('content-type') ?? '', /application\/problem\+json/);
    const body = (await res.json()) as { parameter?: string; detail?: string };
    assert.equal(body.parameter, parameter, `${JSON.stringify(query)}: ${body.detail}`);
  }
});

test('OGC API - Features for file sources: items with bbox, property=value, CQL2 and paging as PostGIS answers them; queryables', async () => {
  const items = async (collection: string, query: Record<string, string>) => {
    const res = await fetch(`${server.url}/ogc/collections/${collection}/items?${new URLSearchParams({ limit: '10000', ...query })}`);
    assert.equal(res.status, 200, `${collection} ${JSON.stringify(query)}: ${await res.clone().text()}`);
    return (await res.json()) as { features: { id: number; properties: Record<string, unknown> }[]; numberMatched: number };
  };
  const queries: Record<string, string>[] = [
    { filter: "class = 'primary' AND tunnel IS NULL" },
    { bbox: '7.44,51.51,7.45,51.52' },
    { class: 'tertiary' },
    { filter: 'tunnel = false', bbox: '7.4,51.5,7.5,51.6' },
  ];
  for (const q of queries) {
    const want = await items(PG('transportation'), q);
    assert.ok(want.numberMatched > 0, `${JSON.stringify(q)} matches some rows`);
    for (const c of [GJ('transportation'), 'roads']) {
      const got = await items(c, q);
      assert.equal(got.numberMatched, want.numberMatched, `${c} ${JSON.stringify(q)}`);
      assert.deepEqual(got.features.map((f) => f.id), want.features.map((f) => f.id), `${c} ${JSON.stringify(q)}: the same features in id order`);
    }
  }
  const page = await fetch(`${server.url}/ogc/collections/roads/items?limit=5&offset=10`).then((r) => r.json() as Promise<{ features: { id: number }[]; numberReturned: number }>);
  assert.deepEqual(page.features.map((f) => f.id), [11, 12, 13, 14, 15]);
  const one = await fetch(`${server.url}/ogc/collections/roads/items/42`).then((r) => r.json() as Promise<{ id: number; properties: Record<string, unknown> }>);
  assert.equal(one.id, 42);
  assert.equal((await fetch(`${server.url}/ogc/collections/roads/items/99999`)).status, 404);
  const queryables = await fetch(`${server.url}/ogc/collections/roads/queryables`).then((r) => r.json() as Promise<{ properties: Record<string, { type?: string }> }>);
  assert.deepEqual(Object.keys(queryables.properties).sort(), ['class', 'geometry', 'service', 'tunnel']);
  assert.equal(queryables.properties.tunnel.type, 'boolean');
  const bad = await fetch(`${server.url}/ogc/collections/roads/items?nosuch=1`);
  assert.equal(bad.status, 400);
  assert.equal(((await bad.json()) as { parameter: string }).parameter, 'nosuch');
  assert.equal((await fetch(`${server.url}/ogc/collections/city/items`)).status, 404, 'a GeoPackage of several layers: its own collection has tiles only, each layer is a collection city:{layer} (test/ogc-file-layers.test.ts)');
});

test('file source memory is reported per source as a metric', async () => {
  const text = await fetch(`${scrapeUrl}/metrics`).then((r) => r.text());
  const gauge = (id: string) => Number(new RegExp(`^file_source_memory_bytes\\{source="${id}"\\} (\\S+)$`, 'm').exec(text)?.[1] ?? NaN);
  assert.ok(gauge(GJ('transportation')) > readFileSync(files.geojson.transportation).length, 'a GeoJSON source holds about its file and index');
  assert.ok(gauge('city') > 0, 'a GeoPackage source reports its page cache');
});

/** Polls `check` until it returns a value (a file change reaches the server through its watch). */
async function until<T>(what: string, check: () => Promise<T | undefined>, ms = 20_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await check();
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}\n${server.output().slice(-2000)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

test('a changed file is read again by server.watch and by a reload; a broken one keeps the last good reading and says why', async () => {
  const { z, x, y } = CITY_TILE;
  const original = JSON.parse(readFileSync(live, 'utf8')) as { features: { id: number; geometry: unknown; properties: Record<string, unknown> }[] };
  const count = async () => features(await tile('live', z, x, y), 'live').length;
  const before = await count();
  assert.ok(before > 0);
  // One more place, at the tile's centre: the watch reloads, and the tile (a new revision, so a new cache entry) holds it.
  const [lon, lat] = [(7.426 + 7.471) / 2, (51.508 + 51.536) / 2];
  const added = { ...original, features: [...original.features, { type: 'Feature', id: 1000, geometry: { type: 'Point', coordinates: [lon, lat] }, properties: { class: 'suburb', name: 'Neu' } }] };
  writeFileSync(live, JSON.stringify(added));
  await until('the watch to read the changed file', async () => ((await count()) === before + 1 ? true : undefined));
  // Broken: the watch's reload fails naming the source; the last good reading is served.
  writeFileSync(live, '{"type": "FeatureCollection", "features": [{"type": "Feature", "geometry": {"type": "Point", "coordinates": ["a"]}}]}');
  await until('the watch to refuse the broken file', async () => (/source \\?"live\\?": .*live\.geojson is not GeoJSON: feature 1: a position must be/.test(server.output()) ? true : undefined));
  assert.equal(await count(), before + 1, 'the last good reading is still served');
  // A reload of the unchanged configuration looks at the file too, and says the same.
  const res = await fetch(`${adminUrl}/__admin/reload`, { method: 'POST' });
  const body = (await res.json()) as { ok: boolean; error?: string };
  assert.equal(body.ok, false);
  assert.match(body.error ?? '', /source "live": .*not GeoJSON: feature 1: a position must be 2 or more finite numbers.*last good reading/);
  assert.equal(await count(), before + 1);
  // Fixed again (as it first was): read again.
  writeFileSync(live, JSON.stringify(original));
  await until('the watch to read the fixed file', async () => ((await count()) === before ? true : undefined));
});

test('broken files: start-up says in one line which source and why; each kind of breakage has its reason', async () => {
  const notGeoJson = path.join(dir, 'array.geojson');
  writeFileSync(notGeoJson, '[1, 2, 3]');
  // A GeoPackage with no feature table: an attributes-only table written by ogr2ogr from a CSV.
  const csv = path.join(dir, 'plain.csv');
  writeFileSync(csv, 'a,b\n1,2\n');
  const noFeatures = path.join(dir, 'attributes.gpkg');
  assert.equal(gdalTool('ogr2ogr', ['-f', 'GPKG', noFeatures, csv]).status, 0);
  const source = (id: string, type: string, p: string, extra: Record<string, unknown> = {}) => v.parse(SourceSchema, { id, type, path: p, ...extra });
  const cases: [ReturnType<typeof source>, RegExp][] = [
    [source('a', 'geojson', notGeoJson), /^source "a": .*array\.geojson is not GeoJSON: a FeatureCollection, a Feature or newline-delimited features expected, found an array$/],
    [source('b', 'geopackage', noFeatures), /^source "b": .*attributes\.gpkg has no feature table/],
    [source('c', 'geojson', path.join(dir, 'missing.geojson')), /^source "c": cannot read GeoJSON .*missing\.geojson: no such file$/],
    [source('d', 'geopackage', files.geojson.place), /^source "d": cannot open GeoPackage .*: not a SQLite file$/],
    [source('e', 'geopackage', files.gpkg, { layers: ['nosuch'] }), /^source "e": .*has no feature table "nosuch" \(layers\); it has building, place, transportation$/],
    [source('f', 'geojson', files.geojson.place, { max_size_mb: 0.001 }), /^source "f": GeoJSON .* above max_size_mb/],
    [source('g', 'geojson', files.geojson.place, { properties: ['nosuch'] }), /^source "g": .*has no property "nosuch" \(properties\)/],
  ];
  for (const [cfg, want] of cases) await assert.rejects(openSource(cfg), (err: Error) => (assert.match(err.message, want), true));
  // Through the CLI: the process stops at start-up with that one line; keys of another type are refused by name.
  const out = await runCli(['--config', writeTempConfig(`[[sources]]\nid = "a"\ntype = "geojson"\npath = "${notGeoJson}"\n`), '--port', '0']);
  assert.notEqual(out.code, 0);
  assert.match(out.stdout + out.stderr, /source "a": .*is not GeoJSON/);
  assert.throws(() => source('h', 'geojson', files.geojson.place, { layers: ['x'] }), /layers applies to geopackage sources/);
  assert.throws(() => source('i', 'pmtiles', files.gpkg, { properties: ['x'] }), /properties applies to data-file sources/);
  assert.throws(() => source('j', 'geopackage', 's3://bucket/city.gpkg'), /a geopackage source is read from a local file/);
});
