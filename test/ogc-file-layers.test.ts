// OGC API - Features of the layers of a GeoPackage of several feature tables (docs/ogc.md, docs/files.md): each
// layer is the collection `{source}:{layer}`, through the real server. The Dortmund city layers
// (test/helpers/city-features.ts) are the tables; what each layer collection answers is compared with what GDAL
// reads from the same table (`ogr2ogr -f GeoJSON -preserve_fid`, with `-spat` for a bbox and `-where` for a
// filter): the same ids, properties and geometries; GDAL's OGCAPI driver opens one. One server, a few seconds.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { gdalTool } from './helpers/gdal.js';
import { CITY_LAYERS, writeCityFiles, type CityFiles } from './helpers/city-features.js';
import { startServer, type TestServer } from './helpers/server.js';

let dir: string;
let files: CityFiles;
let server: TestServer;

interface GeoFeature {
  id?: number;
  properties: Record<string, unknown>;
  geometry: { type: string; coordinates: unknown };
}
interface Items {
  features: GeoFeature[];
  numberMatched: number;
  numberReturned: number;
  links: { rel: string; href: string }[];
}
interface Link {
  rel: string;
  href: string;
  type?: string;
}
interface CollectionDoc {
  id: string;
  itemType?: string;
  extent: { spatial: { bbox: number[][] } };
  links: Link[];
}

before(async () => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'tsts-ogc-file-layers-'));
  files = writeCityFiles(dir);
  server = await startServer({
    toml: `[server]
disable_render = true

[[sources]]
id = "city"
type = "geopackage"
path = "${files.gpkg}"

[[sources]]
id = "pair"
type = "geopackage"
path = "${files.gpkg}"
layers = ["place", "transportation"]
properties = ["class", "name", "tunnel"]

[[sources]]
id = "one"
type = "geopackage"
path = "${files.gpkg}"
layers = ["place"]

[[sources]]
id = "secret"
type = "geopackage"
path = "${files.gpkg}"
access = "closed"
`,
  });
});

after(async () => {
  await server?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

let written = 0;
/**
 * A table of the GeoPackage as GDAL's GeoJSON driver writes it (the FID as the feature's id), through a file (a
 * whole table is more than spawnSync buffers), in FID order: the server's order; GDAL's `-spat` gives R*Tree order.
 */
function gdalFeatures(layer: string, extra: string[] = []): GeoFeature[] {
  const out = path.join(dir, `gdal-${++written}.geojson`);
  const r = gdalTool('ogr2ogr', ['-f', 'GeoJSON', '-preserve_fid', ...extra, out, files.gpkg, layer]);
  assert.equal(r.status, 0, r.stderr);
  return (JSON.parse(readFileSync(out, 'utf8')) as { features: GeoFeature[] }).features.sort((a, b) => Number(a.id) - Number(b.id));
}

async function items(collection: string, query: Record<string, string> = {}): Promise<Items> {
  const res = await fetch(`${server.url}/ogc/collections/${collection}/items?${new URLSearchParams({ limit: '10000', ...query })}`);
  assert.equal(res.status, 200, `${collection} ${JSON.stringify(query)}: ${await res.clone().text()}`);
  assert.match(res.headers.get('content-type') ?? '', /^application\/geo\+json/);
  return (await res.json()) as Items;
}

async function getJson<T>(url: string): Promise<T> {
  const res = await fetch(`${server.url}${url}`);
  assert.equal(res.status, 200, `${url}: ${await res.clone().text()}`);
  return (await res.json()) as T;
}

/** The coordinates of two geometries agree to 1e-9 degrees (GDAL prints at most 15 significant digits). */
function sameCoordinates(a: unknown, b: unknown, where: string): void {
  if (typeof a === 'number' || typeof b === 'number') {
    assert.ok(typeof a === 'number' && typeof b === 'number' && Math.abs(a - b) < 1e-9, `${where}: ${String(a)} != ${String(b)}`);
    return;
  }
  assert.ok(Array.isArray(a) && Array.isArray(b) && a.length === b.length, `${where}: ${JSON.stringify(a)?.slice(0, 80)} != ${JSON.stringify(b)?.slice(0, 80)}`);
  for (let i = 0; i < a.length; i++) sameCoordinates(a[i], b[i], `${where}[${i}]`);
}

/** The server's features are GDAL's: ids in the same (FID) order, equal properties, the same geometries. */
function sameFeatures(got: GeoFeature[], want: GeoFeature[], where: string): void {
  assert.deepEqual(got.map((f) => f.id), want.map((f) => f.id), `${where}: ids`);
  for (let i = 0; i < want.length; i++) {
    assert.deepEqual({ ...got[i].properties }, want[i].properties, `${where}: properties of ${String(want[i].id)}`);
    assert.equal(got[i].geometry.type, want[i].geometry.type, `${where}: geometry type of ${String(want[i].id)}`);
    sameCoordinates(got[i].geometry.coordinates, want[i].geometry.coordinates, `${where} ${String(want[i].id)}`);
  }
}

async function problemOf(url: string, status = 404): Promise<{ title: string; detail: string; parameter?: string }> {
  const res = await fetch(`${server.url}${url}`);
  assert.equal(res.status, status, `${url}: ${await res.clone().text()}`);
  assert.match(res.headers.get('content-type') ?? '', /^application\/problem\+json/, url);
  return (await res.json()) as { title: string; detail: string; parameter?: string };
}

test('each layer of a GeoPackage of several tables is a collection {source}:{layer} whose items are the table as ogr2ogr reads it', async () => {
  for (const layer of CITY_LAYERS) {
    const want = gdalFeatures(layer);
    assert.equal(want.length, files.counts[layer]);
    const got = await items(`city:${layer}`);
    assert.equal(got.numberMatched, want.length, layer);
    assert.equal(got.numberReturned, want.length, layer);
    sameFeatures(got.features, want, `city:${layer}`);
  }
  // The same collection with its ":" percent-encoded, and one feature by its id.
  const encoded = await items('city%3Aplace', { limit: '3' });
  assert.deepEqual(encoded.features.map((f) => f.id), [1, 2, 3]);
  const one = await getJson<GeoFeature & { links: Link[] }>('/ogc/collections/city:transportation/items/42');
  sameFeatures([one], gdalFeatures('transportation', ['-fid', '42']), 'city:transportation/items/42');
  assert.ok(one.links.some((l) => l.rel === 'collection' && l.href.endsWith('/ogc/collections/city:transportation')));
  await problemOf('/ogc/collections/city:transportation/items/99999');
  // A GIS client opens a layer collection as a layer of features (GDAL's OGCAPI driver; its count is numberMatched).
  const gdal = gdalTool('ogrinfo', ['-ro', '-al', '-so', '-oo', 'API=ITEMS', `OGCAPI:${server.url}/ogc/collections/city:place`]);
  assert.equal(gdal.status, 0, gdal.stderr);
  assert.match(gdal.stdout, /Layer name: city:place\n/);
  assert.match(gdal.stdout, new RegExp(`Feature Count: ${files.counts.place}\\n`));
});

test('bbox, property=value, CQL2 filters and paging per layer select what ogr2ogr -spat / -where selects', async () => {
  const box = [7.44, 51.5, 7.47, 51.525];
  const cases: { layer: string; query: Record<string, string>; gdal: string[] }[] = [
    { layer: 'place', query: { bbox: box.join(',') }, gdal: ['-spat', ...box.map(String)] },
    { layer: 'building', query: { bbox: box.join(',') }, gdal: ['-spat', ...box.map(String)] },
    { layer: 'transportation', query: { bbox: box.join(',') }, gdal: ['-spat', ...box.map(String)] },
    { layer: 'place', query: { filter: "class = 'suburb' AND rank >= 12" }, gdal: ['-where', "class = 'suburb' AND rank >= 12"] },
    { layer: 'transportation', query: { filter: "class IN ('primary', 'secondary') AND tunnel = true" }, gdal: ['-where', "class IN ('primary', 'secondary') AND tunnel = 1"] },
    {
      layer: 'transportation',
      query: { filter: JSON.stringify({ op: 'and', args: [{ op: '=', args: [{ property: 'class' }, 'service'] }, { op: 's_intersects', args: [{ property: 'geometry' }, { bbox: box }] }] }), 'filter-lang': 'cql2-json' },
      gdal: ['-where', "class = 'service'", '-spat', ...box.map(String)],
    },
    { layer: 'transportation', query: { class: 'tertiary' }, gdal: ['-where', "class = 'tertiary'"] },
  ];
  for (const c of cases) {
    const want = gdalFeatures(c.layer, c.gdal);
    assert.ok(want.length > 0 && want.length < files.counts[c.layer], `${c.layer} ${JSON.stringify(c.query)} selects some features, not all (${want.length})`);
    const got = await items(`city:${c.layer}`, c.query);
    assert.equal(got.numberMatched, want.length, `${c.layer} ${JSON.stringify(c.query)}`);
    sameFeatures(got.features, want, `city:${c.layer} ${JSON.stringify(c.query)}`);
  }
  const page = await items('city:transportation', { limit: '5', offset: '10', class: 'service' });
  const service = gdalFeatures('transportation', ['-where', "class = 'service'"]);
  assert.deepEqual(page.features.map((f) => f.id), service.slice(10, 15).map((f) => f.id));
  assert.equal(page.numberMatched, service.length);
  const next = page.links.find((l) => l.rel === 'next');
  assert.ok(next, 'a next page');
  const nextUrl = new URL(next.href);
  assert.equal(nextUrl.pathname, '/ogc/collections/city:transportation/items');
  assert.deepEqual(Object.fromEntries(nextUrl.searchParams), { class: 'service', limit: '5', offset: '15', f: 'json' });
});

test('each layer collection has its own queryables: another layer\'s property is a 400 naming it, and a filter on it too', async () => {
  const q = async (id: string) => Object.keys((await getJson<{ properties: Record<string, unknown> }>(`/ogc/collections/${id}/queryables`)).properties).sort();
  assert.deepEqual(await q('pair:place'), ['class', 'geometry', 'name']);
  assert.deepEqual(await q('pair:transportation'), ['class', 'geometry', 'tunnel']);
  assert.deepEqual(await q('city:building'), ['geometry']);
  assert.equal((await problemOf('/ogc/collections/pair:place/items?tunnel=true', 400)).parameter, 'tunnel');
  const filter = await problemOf(`/ogc/collections/pair:place/items?${new URLSearchParams({ filter: 'tunnel = true' })}`, 400);
  assert.equal(filter.parameter, 'filter');
  assert.match(filter.detail, /tunnel/);
  // The configured properties narrow the layer's features as they narrow its tiles.
  const place = await items('pair:place', { class: 'city' });
  assert.deepEqual(Object.keys(place.features[0].properties).sort(), ['class', 'name']);
  assert.equal(place.features[0].properties.name, 'Dortmund');
});

test('the collections list shows the layer collections after their source; the documents link each other; OpenAPI and HTML say so', async () => {
  const list = await getJson<{ collections: CollectionDoc[] }>('/ogc/collections');
  const ids = list.collections.map((c) => c.id);
  assert.deepEqual(
    ids.filter((id) => /^(city|pair|one|secret)\b/.test(id)),
    ['city', 'city:building', 'city:place', 'city:transportation', 'pair', 'pair:place', 'pair:transportation', 'one'],
    'a layer collection per layer of the sources of several layers; none for one layer, none of a closed source',
  );
  const city = list.collections.find((c) => c.id === 'city')!;
  assert.equal(city.itemType, undefined, 'the source of several layers has tiles only');
  assert.ok(city.links.some((l) => l.rel === 'http://www.opengis.net/def/rel/ogc/1.0/tilesets-vector'));
  assert.deepEqual(city.links.filter((l) => l.rel === 'related').map((l) => new URL(l.href).pathname), CITY_LAYERS.map((l) => `/ogc/collections/city:${l}`).sort());
  const layer = await getJson<CollectionDoc>('/ogc/collections/city:place');
  assert.deepEqual(layer, list.collections.find((c) => c.id === 'city:place'));
  assert.equal(layer.itemType, 'feature');
  const rels = layer.links.map((l) => l.rel);
  for (const rel of ['self', 'alternate', 'items', 'http://www.opengis.net/def/rel/ogc/1.0/queryables', 'up']) assert.ok(rels.includes(rel), rel);
  assert.ok(!rels.some((r) => r.includes('tilesets')), 'no tileset of its own');
  assert.equal(new URL(layer.links.find((l) => l.rel === 'up')!.href).pathname, '/ogc/collections/city');
  // Its extent is the layer's: the places' box (from the table's R*Tree, whose single-precision bounds may lie a
  // little outside).
  const points = gdalFeatures('place').map((f) => f.geometry.coordinates as number[]);
  const placeBox = [Math.min(...points.map((p) => p[0])), Math.min(...points.map((p) => p[1])), Math.max(...points.map((p) => p[0])), Math.max(...points.map((p) => p[1]))];
  layer.extent.spatial.bbox[0].forEach((v, i) => assert.ok(Math.abs(v - placeBox[i]) < 1e-5 && (i < 2 ? v <= placeBox[i] : v >= placeBox[i]), `extent[${i}] ${v} is the places' ${placeBox[i]}`));
  const html = await fetch(`${server.url}/ogc/collections/city:place?f=html`);
  assert.equal(html.status, 200);
  assert.match(await html.text(), /<a href="[^"]*\/ogc\/collections\/city:place\/items\?f=json">features<\/a>/);
  const conformance = await getJson<{ conformsTo: string[] }>('/ogc/conformance');
  assert.ok(conformance.conformsTo.includes('http://www.opengis.net/spec/ogcapi-features-3/1.0/conf/filter'));
  for (const url of ['/ogc/api', '/openapi.json']) {
    const doc = await getJson<{ paths: Record<string, { get: { parameters?: { name: string; description?: string }[] } }> }>(url);
    const param = doc.paths['/ogc/collections/{collectionId}/items'].get.parameters?.find((p) => p.name === 'collectionId');
    assert.match(param?.description ?? '', /\{source\}:\{layer\}/, url);
  }
});

test('unknown, closed and tiles-only collections are 404 problem+json saying where the features are', async () => {
  assert.match((await problemOf('/ogc/collections/city:nosuch/items')).detail, /"city:building", "city:place", "city:transportation"/);
  await problemOf('/ogc/collections/city:nosuch');
  await problemOf('/ogc/collections/city:nosuch/queryables');
  await problemOf('/ogc/collections/nosuch:place/items');
  assert.match((await problemOf('/ogc/collections/city/items')).detail, /"city:place"/);
  assert.match((await problemOf('/ogc/collections/one:place/items')).detail, /the collection "one"/);
  assert.match((await problemOf('/ogc/collections/city:place/tiles')).detail, /features only/);
  await problemOf('/ogc/collections/city:place/tiles/WebMercatorQuad/0/0/0');
  // A closed source's layers are as closed as the source, whatever the spelling of the id.
  for (const url of ['/ogc/collections/secret:place/items', '/ogc/collections/secret%3Aplace/items', '/ogc/collections/secret:place', '/ogc/collections/secret:place/queryables']) {
    assert.equal((await fetch(`${server.url}${url}`)).status, 404, url);
  }
  // The one-layer source keeps answering as its own collection.
  assert.equal((await items('one')).numberMatched, files.counts.place);
});
