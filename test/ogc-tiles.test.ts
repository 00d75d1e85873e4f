// OGC API - Tiles through the real server: the landing page, conformance, WebMercatorQuad and every collection's
// documents checked for the members and links the standards require; tiles fetched through the templated links
// and compared with /data/... (bytes, headers, 204s, encodings) and /styles/{id}/256/... (rendered map tiles);
// out-of-range addresses; `key` in every URL handed out; f=json/html and Accept; the OpenAPI document; and
// server.disable_ogc.
import { Validator } from '@seriousme/openapi-schema-validator';
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import fc from './helpers/fast-check.js';
import { startPostgres, type PostgresCluster } from './helpers/postgres.js';
import { fixture, osmLibertyToml, startServer, type TestServer } from './helpers/server.js';

interface Fetched {
  status: number;
  headers: Headers;
  body: Buffer;
  json: () => any;
}

async function get(url: string, headers: Record<string, string> = {}): Promise<Fetched> {
  const res = await fetch(url, { headers, signal: AbortSignal.timeout(60_000) });
  const body = Buffer.from(await res.arrayBuffer());
  return { status: res.status, headers: res.headers, body, json: () => JSON.parse(body.toString('utf8')) };
}

interface Link {
  href: string;
  rel: string;
  type?: string;
  templated?: boolean;
}

const TILES = 'http://www.opengis.net/spec/ogcapi-tiles-1/1.0/conf/';
const REL = 'http://www.opengis.net/def/rel/ogc/1.0/';
const link = (doc: { links: Link[] }, rel: string, type?: string) => doc.links.find((l) => (l.rel === rel || l.rel === REL + rel) && (type === undefined || l.type === type));
const fill = (template: string, z: number, row: number, col: number) => template.replace('{tileMatrix}', String(z)).replace('{tileRow}', String(row)).replace('{tileCol}', String(col));

let db: PostgresCluster;
let server: TestServer;

before(async () => {
  db = await startPostgres(['seed.sql', 'ogc.sql']);
  server = await startServer({
    toml: osmLibertyToml(`
[[sources]]
id = "geo"
type = "mbtiles"
path = "${fixture('raster/geography-class-png.mbtiles')}"
[[sources]]
id = "cities"
type = "mbtiles"
path = "${fixture('vector/world_cities.mbtiles')}"
[[composites]]
id = "both"
sources = ["openmaptiles", "cities"]
[postgres]
connection_string = "${db.url}"
[[postgres.tables]]
id = "places"
table = "places"
id_column = "id"
[[postgres.tables]]
id = "points"
table = "ogc_points"
`),
    timeoutMs: 60_000,
  });
});
after(async () => {
  await server?.stop();
  db?.destroy();
});

describe('OGC API - Tiles documents', () => {
  test('landing page: self, service-desc, conformance and data links that resolve', async () => {
    const res = await get(`${server.url}/ogc`);
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type')!, /^application\/json/);
    const doc = res.json();
    assert.equal(typeof doc.title, 'string');
    for (const rel of ['self', 'service-desc', 'conformance', 'data', 'tiling-schemes']) {
      const l = link(doc, rel);
      assert.ok(l, `link ${rel}`);
      assert.match(l.href, /^http:\/\/127\.0\.0\.1:\d+\//, 'absolute');
      assert.equal((await get(l.href)).status, 200, l.href);
    }
    // Both spellings of the collections and conformance relations: the OGC URI, and the short name of Features
    // Part 1 1.0 that QGIS's OAPIF provider matches exactly (without rel "data" it opens no layer).
    for (const rel of ['data', 'conformance']) {
      const short = doc.links.find((l: Link) => l.rel === rel);
      const long = doc.links.find((l: Link) => l.rel === `http://www.opengis.net/def/rel/ogc/1.0/${rel}`);
      assert.ok(short && long, `rel "${rel}" and its OGC URI`);
      assert.equal(short.href, long.href);
    }
    // dataset-tilesets: the landing page links the dataset's map tilesets (one per style), each resolving to a
    // tileset whose templated tiles are PNG images.
    const maps = link(doc, 'tilesets-map', 'application/json');
    assert.ok(maps, 'tilesets-map link');
    assert.match(maps.href, /\/ogc\/map\/tiles$/);
    const list = (await get(maps.href)).json();
    assert.deepEqual(list.tilesets.map((t: { title: string }) => t.title), ['OSM Liberty']);
    const ts = (await get(link(list.tilesets[0], 'self', 'application/json')!.href)).json();
    assert.equal(ts.dataType, 'map');
    assert.equal(link(ts, 'item')!.type, 'image/png');
  });

  test('conformance: the Tiles, TMS and Features classes offered', async () => {
    const { conformsTo } = (await get(`${server.url}/ogc/conformance`)).json();
    for (const c of ['core', 'tileset', 'tilesets-list', 'geodata-tilesets', 'dataset-tilesets', 'mvt', 'png', 'jpeg']) assert.ok(conformsTo.includes(TILES + c), c);
    for (const c of [
      'http://www.opengis.net/spec/ogcapi-features-1/1.0/conf/core',
      'http://www.opengis.net/spec/ogcapi-features-1/1.0/conf/geojson',
      'http://www.opengis.net/spec/ogcapi-features-3/1.0/conf/filter',
      'http://www.opengis.net/spec/cql2/1.0/conf/cql2-text',
      'http://www.opengis.net/spec/cql2/1.0/conf/cql2-json',
      'http://www.opengis.net/spec/tms/2.0/conf/tilematrixset',
    ]) {
      assert.ok(conformsTo.includes(c), c);
    }
  });

  test('f=json, f=html and Accept choose the form; an unknown f is 400', async () => {
    const html = await get(`${server.url}/ogc?f=html`);
    assert.equal(html.status, 200);
    assert.match(html.headers.get('content-type')!, /^text\/html/);
    assert.match(html.body.toString(), /<a href="http:\/\/127\.0\.0\.1:\d+\/ogc\/conformance">/);
    // Conformance and collections are linked under two relation names each: one item each, with both names.
    assert.equal(html.body.toString().match(/<a href="http:\/\/127\.0\.0\.1:\d+\/ogc\/conformance">/g)?.length, 1);
    assert.match(html.body.toString(), /\/ogc\/collections">collections \(sources\)<\/a> <small>\(http:\/\/www\.opengis\.net\/def\/rel\/ogc\/1\.0\/data data, application\/json\)<\/small>/);
    const browser = await get(`${server.url}/ogc/collections`, { accept: 'text/html,application/xhtml+xml,application/xml;q=0.9,*/*;q=0.8' });
    assert.match(browser.headers.get('content-type')!, /^text\/html/);
    assert.match(browser.headers.get('vary')!, /Accept\b/);
    const client = await get(`${server.url}/ogc/collections`, { accept: 'application/json, text/html;q=0.5' });
    assert.match(client.headers.get('content-type')!, /^application\/json/);
    const forced = await get(`${server.url}/ogc/collections?f=json`, { accept: 'text/html' });
    assert.match(forced.headers.get('content-type')!, /^application\/json/);
    const bad = await get(`${server.url}/ogc?f=xml`);
    assert.equal(bad.status, 400);
    assert.equal(bad.headers.get('content-type'), 'application/problem+json');
    assert.equal(bad.json().parameter, 'f');
  });

  test('WebMercatorQuad is the registered definition (OGC TMS 2.0), listed by /ogc/tileMatrixSets', async () => {
    const list = (await get(`${server.url}/ogc/tileMatrixSets`)).json();
    assert.equal(list.tileMatrixSets.length, 1);
    const entry = list.tileMatrixSets[0];
    assert.equal(entry.id, 'WebMercatorQuad');
    const tms = (await get(link(entry, 'self')!.href)).json();
    assert.equal(tms.id, 'WebMercatorQuad');
    assert.equal(tms.uri, 'http://www.opengis.net/def/tilematrixset/OGC/1.0/WebMercatorQuad');
    assert.equal(tms.crs, 'http://www.opengis.net/def/crs/EPSG/0/3857');
    assert.deepEqual(tms.orderedAxes, ['X', 'Y']);
    assert.equal(tms.tileMatrices.length, 25);
    // Table values of the registered set (OGC 17-083r4, Annex D.1).
    const origin = 20037508.3427892;
    tms.tileMatrices.forEach((m: Record<string, any>, z: number) => {
      assert.equal(m.id, String(z));
      assert.ok(Math.abs(m.scaleDenominator / (559082264.028717 / 2 ** z) - 1) < 1e-9, `scale ${z}`);
      assert.ok(Math.abs(m.cellSize / (156543.033928041 / 2 ** z) - 1) < 1e-9, `cell ${z}`);
      assert.ok(Math.abs(m.pointOfOrigin[0] + origin) < 1e-6 && Math.abs(m.pointOfOrigin[1] - origin) < 1e-6);
      assert.equal(m.cornerOfOrigin, 'topLeft');
      assert.equal(m.tileWidth, 256);
      assert.equal(m.tileHeight, 256);
      assert.equal(m.matrixWidth, 2 ** z);
      assert.equal(m.matrixHeight, 2 ** z);
    });
    const missing = await get(`${server.url}/ogc/tileMatrixSets/WorldCRS84Quad`);
    assert.equal(missing.status, 404);
    assert.equal(missing.headers.get('content-type'), 'application/problem+json');
  });

  test('collections: every source, with its extent from the bounds and its tilesets (and items for tables)', async () => {
    const tilejson = (await get(`${server.url}/data.json`)).json() as { id: string; bounds: number[]; format: string }[];
    const { collections } = (await get(`${server.url}/ogc/collections`)).json();
    assert.deepEqual(collections.map((c: { id: string }) => c.id).sort(), tilejson.map((t) => t.id).sort());
    for (const tj of tilejson) {
      const c = (await get(`${server.url}/ogc/collections/${tj.id}`)).json();
      assert.equal(c.id, tj.id);
      assert.deepEqual(c.extent.spatial.bbox, [tj.bounds]);
      assert.equal(c.extent.spatial.crs, 'http://www.opengis.net/def/crs/OGC/1.3/CRS84');
      const vector = tj.format === 'pbf' || tj.format === 'mlt';
      assert.ok(link(c, vector ? 'tilesets-vector' : 'tilesets-map', 'application/json'), `${tj.id} tilesets link`);
      const table = tj.id === 'places' || tj.id === 'points';
      assert.equal(!!link(c, 'items', 'application/geo+json'), table, `${tj.id} items link`);
      assert.equal(!!link(c, 'queryables'), table, `${tj.id} queryables link`);
    }
    assert.equal((await get(`${server.url}/ogc/collections/nosuch`)).status, 404);
  });

  test('tilesets: each collection to its tiles through the templated item link, the same answer as /data', async () => {
    const tilejson = (await get(`${server.url}/data.json`)).json() as { id: string; minzoom: number; maxzoom: number; format: string; vector_layers?: { id: string }[] }[];
    for (const tj of tilejson) {
      const c = (await get(`${server.url}/ogc/collections/${tj.id}`)).json();
      const list = (await get(link(c, tj.format === 'pbf' ? 'tilesets-vector' : 'tilesets-map')!.href)).json();
      assert.equal(list.tilesets.length, 1);
      const summary = list.tilesets[0];
      assert.equal(summary.tileMatrixSetURI, 'http://www.opengis.net/def/tilematrixset/OGC/1.0/WebMercatorQuad');
      const ts = (await get(link(summary, 'self')!.href)).json();
      for (const member of ['dataType', 'crs', 'tileMatrixSetURI', 'tileMatrixSetLimits', 'links']) assert.ok(member in ts, `${tj.id} tileset has ${member}`);
      assert.equal(ts.dataType, tj.format === 'pbf' ? 'vector' : 'map');
      assert.equal((await get(link(ts, 'tiling-scheme')!.href)).json().id, 'WebMercatorQuad');
      const item = link(ts, 'item')!;
      assert.equal(item.templated, true);
      assert.equal(item.type, tj.format === 'pbf' ? 'application/vnd.mapbox-vector-tile' : `image/${tj.format === 'jpg' ? 'jpeg' : tj.format}`);
      assert.deepEqual(ts.tileMatrixSetLimits.map((l: { tileMatrix: string }) => Number(l.tileMatrix)), Array.from({ length: tj.maxzoom - tj.minzoom + 1 }, (_, i) => tj.minzoom + i));
      if (tj.vector_layers) assert.deepEqual(ts.layers.map((l: { id: string }) => l.id), tj.vector_layers.map((l) => l.id));
      // The first and last tile of the lowest matrix, and one of a matrix two deeper where there is one.
      const limits = ts.tileMatrixSetLimits as { tileMatrix: string; minTileRow: number; maxTileRow: number; minTileCol: number; maxTileCol: number }[];
      const picks = [limits[0], limits[Math.min(2, limits.length - 1)]].flatMap((l) => [
        [Number(l.tileMatrix), l.minTileRow, l.minTileCol],
        [Number(l.tileMatrix), l.maxTileRow, l.maxTileCol],
      ]);
      for (const [z, row, col] of picks) {
        for (const encoding of ['', 'gzip', 'br']) {
          const h: Record<string, string> = encoding ? { 'accept-encoding': encoding } : {};
          const ogc = await get(fill(item.href, z, row, col), h);
          const data = await get(`${server.url}/data/${tj.id}/${z}/${col}/${row}.${tj.format}`, h);
          const what = `${tj.id} ${z}/${row}/${col} ${encoding}`;
          assert.equal(ogc.status, data.status, what);
          assert.ok(ogc.status === 200 || ogc.status === 204, `${what}: ${ogc.status}`);
          assert.ok(ogc.body.equals(data.body), `${what}: bytes`);
          for (const header of ['content-type', 'content-encoding', 'etag', 'cache-control', 'vary']) assert.equal(ogc.headers.get(header), data.headers.get(header), `${what}: ${header}`);
          if (ogc.status === 200) {
            const again = await get(fill(item.href, z, row, col), { ...h, 'if-none-match': ogc.headers.get('etag')! });
            assert.equal(again.status, 304, what);
          }
        }
      }
    }
  });

  test('a tile inside the limits where the source has none is 204, as on /data', async () => {
    const ts = (await get(`${server.url}/ogc/collections/places/tiles/WebMercatorQuad`)).json();
    const l = ts.tileMatrixSetLimits.find((m: { tileMatrix: string }) => m.tileMatrix === '6');
    // Places are in San Francisco and Sydney: the middle of the Pacific between them has none.
    const row = Math.floor((l.minTileRow + l.maxTileRow) / 2);
    const col = Math.floor((l.minTileCol + l.maxTileCol) / 2);
    const ogc = await get(fill(link(ts, 'item')!.href, 6, row, col));
    const data = await get(`${server.url}/data/places/6/${col}/${row}.pbf`);
    assert.equal(data.status, 204);
    assert.equal(ogc.status, 204);
    assert.equal(ogc.headers.get('cache-control'), data.headers.get('cache-control'));
  });

  test('out-of-range and malformed tile addresses: 404 outside the set, matrix or limits; 400 for a row or column that is not an integer', async () => {
    const base = `${server.url}/ogc/collections/openmaptiles/tiles`;
    const cases: [string, number][] = [
      [`${base}/WebMercatorQuad/25/0/0`, 404],
      [`${base}/WebMercatorQuad/abc/0/0`, 404],
      [`${base}/WebMercatorQuad/-1/0/0`, 404],
      [`${base}/WebMercatorQuad/1/2/0`, 404],
      [`${base}/WebMercatorQuad/1/0/2`, 404],
      [`${base}/WebMercatorQuad/5/0/0`, 404], // openmaptiles goes to zoom 1
      [`${base}/WorldCRS84Quad/0/0/0`, 404],
      [`${base}/WebMercatorQuad/0/x/0`, 400],
      [`${base}/WebMercatorQuad/0/0/1.5`, 400],
      [`${base}/WebMercatorQuad/0/-1/0`, 400],
      [`${server.url}/ogc/collections/places/tiles/WebMercatorQuad/14/0/0`, 404], // outside the data's limits
      [`${server.url}/ogc/collections/nosuch/tiles/WebMercatorQuad/0/0/0`, 404],
      [`${server.url}/ogc/styles/nosuch/map/tiles/WebMercatorQuad/0/0/0`, 404],
      [`${server.url}/ogc/styles/osm-liberty/map/tiles/WebMercatorQuad/23/0/0`, 404],
    ];
    for (const [url, status] of cases) {
      const res = await get(url);
      assert.equal(res.status, status, url);
      assert.equal(res.headers.get('content-type'), 'application/problem+json', url);
    }
    assert.equal((await get(`${base}/WebMercatorQuad/0/x/0`)).json().parameter, 'tileRow');
  });

  test('generated tile addresses: 200/204 as /data inside the limits, 404 outside, 400 naming a row or column that is not an integer; never 5xx', async () => {
    type Limit = { tileMatrix: string; minTileRow: number; maxTileRow: number; minTileCol: number; maxTileCol: number };
    const limitsOf = new Map<string, Limit[]>();
    for (const id of ['openmaptiles', 'cities', 'geo']) limitsOf.set(id, (await get(`${server.url}/ogc/collections/${id}/tiles/WebMercatorQuad`)).json().tileMatrixSetLimits);
    const format: Record<string, string> = { openmaptiles: 'pbf', cities: 'pbf', geo: 'png' };
    // Numbers as clients write them (leading zeros, many digits) and text that is not a number at all. No "/",
    // "%" or dot segments: those change which route a URL names, not the address.
    const number = fc.oneof(
      fc.nat(70).map(String),
      fc.tuple(fc.nat(9), fc.integer({ min: 1, max: 3 })).map(([n, z]) => '0'.repeat(z) + n),
      fc.nat(30).map((n) => '1' + '0'.repeat(9 + n)),
    );
    const text = fc.oneof(
      fc.constantFrom('-1', '+1', '1.0', '1e1', ' 1', 'x', '0x1', '١', 'NaN', '٠'),
      fc.string({ unit: fc.constantFrom('1', 'a', '-', '+', ' ', 'é', '_', '~'), minLength: 1, maxLength: 6 }).filter((t) => !/^\d+$/.test(t)),
    );
    const part = fc.oneof({ weight: 4, arbitrary: number }, { weight: 1, arbitrary: text });
    // Addresses near the tiles that exist (a matrix the sources have, rows and columns up to one past the
    // matrix), sometimes with leading zeros; and anything the parts above make.
    const zeros = (n: number, pad: boolean) => (pad ? '0' : '') + String(n);
    const near = fc
      .integer({ min: 0, max: 7 })
      .chain((z) => fc.tuple(fc.constant(z), fc.integer({ min: 0, max: 2 ** z }), fc.integer({ min: 0, max: 2 ** z }), fc.boolean()))
      .map(([z, y, x, pad]) => [String(z), zeros(y, pad), zeros(x, pad)] as [string, string, string]);
    const address = fc.oneof({ weight: 3, arbitrary: near }, { weight: 2, arbitrary: fc.tuple(part, part, part) });
    const seen = new Map<number, number>();
    await fc.assert(
      fc.asyncProperty(fc.constantFrom('openmaptiles', 'cities', 'geo'), address, async (id, [m, row, col]) => {
        const url = `${server.url}/ogc/collections/${id}/tiles/WebMercatorQuad/${[m, row, col].map(encodeURIComponent).join('/')}`;
        const res = await get(url);
        const what = `${id} ${JSON.stringify([m, row, col])} -> ${res.status} ${res.body.toString().slice(0, 200)}`;
        seen.set(res.status, (seen.get(res.status) ?? 0) + 1);
        assert.ok(res.status < 500, what);
        const isInt = (t: string) => /^\d+$/.test(t);
        if (!/^\d{1,3}$/.test(m) || Number(m) > 24) return assert.equal(res.status, 404, what);
        for (const [name, value] of [['tileRow', row], ['tileCol', col]]) {
          if (!isInt(value)) {
            assert.equal(res.status, 400, what);
            assert.equal(res.json().parameter, name, what);
            return;
          }
        }
        const [z, y, x] = [Number(m), Number(row), Number(col)];
        const l = limitsOf.get(id)!.find((t) => Number(t.tileMatrix) === z);
        if (!l || y < l.minTileRow || y > l.maxTileRow || x < l.minTileCol || x > l.maxTileCol) return assert.equal(res.status, 404, what);
        const data = await get(`${server.url}/data/${id}/${z}/${x}/${y}.${format[id]}`);
        assert.equal(res.status, data.status, what);
        assert.ok(res.body.equals(data.body), what);
      }),
      { numRuns: 400 },
    );
    // The generator reached every kind of answer.
    for (const status of [200, 400, 404]) assert.ok((seen.get(status) ?? 0) >= 10, `${status}: ${JSON.stringify([...seen])}`);
  });

  test('map tiles of a style: listed under /ogc/styles, the same image as /styles/{id}/256/{z}/{x}/{y}.png', async () => {
    const styles = (await get(`${server.url}/ogc/styles`)).json();
    assert.deepEqual(styles.styles.map((s: { id: string }) => s.id), ['osm-liberty']);
    const list = (await get(link(styles.styles[0], 'tilesets-map')!.href)).json();
    const ts = (await get(link(list.tilesets[0], 'self')!.href)).json();
    assert.equal(ts.dataType, 'map');
    const item = link(ts, 'item')!;
    assert.equal(item.type, 'image/png');
    for (const [z, row, col] of [
      [0, 0, 0],
      [1, 0, 1],
    ]) {
      const ogc = await get(fill(item.href, z, row, col));
      assert.equal(ogc.status, 200, ogc.body.toString().slice(0, 200));
      assert.equal(ogc.headers.get('content-type'), 'image/png');
      const direct = await get(`${server.url}/styles/osm-liberty/256/${z}/${col}/${row}.png`);
      assert.equal(direct.status, 200);
      assert.ok(ogc.body.equals(direct.body), `${z}/${row}/${col}: same image`);
      assert.equal(ogc.headers.get('etag'), direct.headers.get('etag'));
      assert.equal(ogc.body.readUInt32BE(16), 256, 'a 256 px tile');
    }
  });

  test('the key is forwarded into every URL the documents hand out', async () => {
    const key = 'k y&=1';
    const encoded = 'key=k%20y%26%3D1';
    const seen = new Set<string>();
    const queue = [`${server.url}/ogc?key=${encodeURIComponent(key)}`];
    let templates = 0;
    while (queue.length && seen.size < 120) {
      const url = queue.shift()!;
      if (seen.has(url)) continue;
      seen.add(url);
      const res = await get(url);
      assert.equal(res.status, 200, url);
      const doc = res.json();
      const links: Link[] = [...(doc.links ?? []), ...(doc.collections ?? []).flatMap((c: { links: Link[] }) => c.links), ...(doc.tilesets ?? []).flatMap((t: { links: Link[] }) => t.links), ...(doc.styles ?? []).flatMap((s: { links: Link[] }) => s.links), ...(doc.tileMatrixSets ?? []).flatMap((t: { links: Link[] }) => t.links)];
      for (const l of links) {
        assert.ok(l.href.includes(encoded), `${url}: ${l.rel} ${l.href}`);
        if (l.templated) {
          templates++;
          const tile = await get(fill(l.href, 0, 0, 0));
          assert.ok([200, 204, 404].includes(tile.status), l.href);
        } else if (l.href.startsWith(`${server.url}/ogc`) && (l.type === 'application/json' || l.type === 'application/geo+json' || l.type === 'application/schema+json')) {
          queue.push(l.href);
        }
      }
      if (doc.$id) assert.ok(String(doc.$id).includes(encoded), doc.$id);
    }
    assert.ok(seen.size > 25, `crawled ${seen.size} documents`);
    assert.ok(templates >= 6, `${templates} templated links`);
  });

  test('/ogc/api: an OpenAPI 3.0 document that validates, describes every OGC route, and is the service-desc of that type', async () => {
    const landing = (await get(`${server.url}/ogc`)).json();
    const descs = landing.links.filter((l: Link) => l.rel === 'service-desc');
    assert.deepEqual(descs.map((l: Link) => l.type).sort(), ['application/vnd.oai.openapi+json;version=3.0', 'application/vnd.oai.openapi+json;version=3.1']);
    const href = descs.find((l: Link) => l.type!.endsWith('3.0')).href;
    assert.match(href, /\/ogc\/api$/);
    // What GDAL's OGCAPI driver sends for the API description.
    const res = await get(href, { accept: 'application/vnd.oai.openapi+json;version=3.0' });
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type')!, /^application\/vnd\.oai\.openapi\+json;version=3\.0/);
    const doc = res.json();
    assert.match(doc.openapi, /^3\.0\.\d$/);
    const result = await new Validator().validate(doc);
    assert.equal(result.valid, true, JSON.stringify(result.errors, null, 1)?.slice(0, 3000));
    // Every /ogc route of the 3.1 document, and nothing else, with the same operations.
    const full = (await get(`${server.url}/openapi.json`)).json();
    const ogcPaths = Object.keys(full.paths).filter((p) => p === '/ogc' || p.startsWith('/ogc/'));
    assert.ok(ogcPaths.length >= 18, `${ogcPaths.length} OGC paths`);
    assert.deepEqual(Object.keys(doc.paths).sort(), ogcPaths.sort());
    for (const p of ogcPaths) assert.deepEqual(Object.keys(doc.paths[p]), Object.keys(full.paths[p]), p);
    // 3.1-only constructs are gone: no JSON Schema dialect, no const, no type lists.
    const text = JSON.stringify(doc);
    assert.ok(!text.includes('"$schema"') && !text.includes('"const"') && !/"type":\[/.test(text), 'no 3.1-only members');
    // The fixed tile matrix set id, a const in 3.1, is a one-value enum here.
    const tms = doc.paths['/ogc/tileMatrixSets/{tileMatrixSetId}'].get.parameters.find((x: { name: string }) => x.name === 'tileMatrixSetId');
    assert.deepEqual(tms.schema.enum, ['WebMercatorQuad']);
    assert.equal(doc.servers[0].url, server.url);
    const { conformsTo } = (await get(`${server.url}/ogc/conformance`)).json();
    for (const c of ['ogcapi-common-1/1.0/conf/oas30', 'ogcapi-tiles-1/1.0/conf/oas30', 'ogcapi-features-1/1.0/conf/oas30']) assert.ok(conformsTo.includes(`http://www.opengis.net/spec/${c}`), c);
  });

  test('/openapi.json describes every OGC route; /ping says ogc_enabled', async () => {
    const { paths } = (await get(`${server.url}/openapi.json`)).json();
    for (const p of [
      '/ogc',
      '/ogc/api',
      '/ogc/conformance',
      '/ogc/tileMatrixSets',
      '/ogc/tileMatrixSets/{tileMatrixSetId}',
      '/ogc/collections',
      '/ogc/collections/{collectionId}',
      '/ogc/collections/{collectionId}/tiles',
      '/ogc/collections/{collectionId}/tiles/{tileMatrixSetId}',
      '/ogc/collections/{collectionId}/tiles/{tileMatrixSetId}/{tileMatrix}/{tileRow}/{tileCol}',
      '/ogc/collections/{collectionId}/items',
      '/ogc/collections/{collectionId}/items/{featureId}',
      '/ogc/collections/{collectionId}/queryables',
      '/ogc/styles',
      '/ogc/map/tiles',
      '/ogc/styles/{styleId}/map/tiles',
      '/ogc/styles/{styleId}/map/tiles/{tileMatrixSetId}',
      '/ogc/styles/{styleId}/map/tiles/{tileMatrixSetId}/{tileMatrix}/{tileRow}/{tileCol}',
    ]) {
      assert.ok(paths[p]?.get, `${p} documented`);
    }
    assert.equal((await get(`${server.url}/ping`)).json().ogc_enabled, true);
  });
});

describe('server.disable_ogc', () => {
  let off: TestServer;
  before(async () => {
    off = await startServer({
      toml: `[server]
disable_ogc = true
[[sources]]
id = "openmaptiles"
type = "pmtiles"
path = "${fixture('vector/omt-planet-z0-1.pmtiles')}"
`,
    });
  });
  after(async () => {
    await off?.stop();
  });

  test('every /ogc route answers 404, /ping says ogc_enabled: false, /openapi.json leaves them out', async () => {
    for (const p of ['/ogc', '/ogc/api', '/ogc/conformance', '/ogc/collections', '/ogc/collections/openmaptiles/tiles/WebMercatorQuad/0/0/0', '/ogc/tileMatrixSets/WebMercatorQuad']) {
      const res = await get(off.url + p);
      assert.equal(res.status, 404, p);
      assert.equal(res.headers.get('content-type'), 'application/problem+json');
      assert.match(res.json().detail, /server\.disable_ogc/);
    }
    assert.equal((await get(`${off.url}/ping`)).json().ogc_enabled, false);
    const { paths } = (await get(`${off.url}/openapi.json`)).json();
    assert.deepEqual(Object.keys(paths).filter((p) => p.startsWith('/ogc')), []);
    assert.equal((await get(`${off.url}/data/openmaptiles/0/0/0.pbf`)).status, 200, 'the rest is served');
  });
});
