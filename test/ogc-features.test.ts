// OGC API - Features of PostGIS tables against a real PostgreSQL + PostGIS (seeded from test/sql/seed.sql and
// test/sql/ogc.sql): items, paging through `next` until numberMatched features were seen, bbox, property=value,
// one item, queryables; CQL2 (text and JSON) as property tests comparing the service's answer with the same
// predicate evaluated here over the rows the database holds; injection attempts that must give 400 or the right
// rows, never a 500; and GDAL's OGCAPI driver (a client no one here wrote) reading features and raster tiles.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import sharp from 'sharp';
import fc from './helpers/fast-check.js';
import { gdalTool as run, gdalVersion, ogcapiDriverIs36 } from './helpers/gdal.js';
import { startPostgres, type PostgresCluster } from './helpers/postgres.js';
import { CRS84 } from '../src/ogc/tms.js';
import { fixture, startServer, type TestServer } from './helpers/server.js';

interface Row {
  id: number;
  name: string | null;
  kind: string | null;
  score: number | null;
  rank: number;
  active: boolean | null;
  x: number;
  y: number;
}

interface Fetched {
  status: number;
  type: string;
  headers: Headers;
  body: Buffer;
  json: () => any;
}

async function get(url: string, headers: Record<string, string> = {}): Promise<Fetched> {
  const res = await fetch(url, { headers, signal: AbortSignal.timeout(30_000) });
  const body = Buffer.from(await res.arrayBuffer());
  return { status: res.status, type: res.headers.get('content-type') ?? '', headers: res.headers, body, json: () => JSON.parse(body.toString('utf8')) };
}

let db: PostgresCluster;
let server: TestServer;
let rows: Row[];

const items = (collection: string, query: Record<string, string> = {}) => get(`${server.url}/ogc/collections/${collection}/items?${new URLSearchParams(query)}`);

before(async () => {
  db = await startPostgres(['seed.sql', 'ogc.sql']);
  server = await startServer({
    toml: `
[[sources]]
id = "openmaptiles"
type = "pmtiles"
path = "${fixture('vector/omt-planet-z0-1.pmtiles')}"
[[sources]]
id = "geo"
type = "mbtiles"
path = "${fixture('raster/geography-class-png.mbtiles')}"
[postgres]
connection_string = "${db.url}"
pool_size = 4
[[postgres.tables]]
id = "points"
table = "ogc_points"
[[postgres.tables]]
id = "roads"
table = "roads"
[[postgres.tables]]
id = "places"
table = "places"
id_column = "id"
[[postgres.tables]]
id = "uuids"
table = "ogc_uuid_keys"
[[postgres.tables]]
id = "days"
table = "ogc_date_keys"
[[postgres.tables]]
id = "bigids"
table = "ogc_big_keys"
`,
  });
  const { rows: r } = await db.sql('SELECT id, name, kind, score, rank, active, ST_X(geom) AS x, ST_Y(geom) AS y FROM ogc_points ORDER BY id');
  rows = r as Row[];
});
after(async () => {
  await server?.stop();
  db?.destroy();
});

describe('items', () => {
  test('a page: GeoJSON FeatureCollection with numberMatched, numberReturned, ids, geometry and properties as the table holds them', async () => {
    const res = await items('points');
    assert.equal(res.status, 200);
    assert.match(res.type, /^application\/geo\+json/);
    const fcoll = res.json();
    assert.equal(fcoll.type, 'FeatureCollection');
    assert.equal(fcoll.numberMatched, 57);
    assert.equal(fcoll.numberReturned, 10, 'the default limit is 10');
    assert.equal(fcoll.features.length, 10);
    assert.ok(!Number.isNaN(Date.parse(fcoll.timeStamp)));
    for (const f of fcoll.features) {
      const row = rows.find((r) => r.id === f.id)!;
      assert.ok(row, `feature ${f.id} is a row`);
      assert.equal(f.type, 'Feature');
      assert.deepEqual(f.geometry, { type: 'Point', coordinates: [row.x, row.y] });
      assert.equal(f.properties.name, row.name);
      assert.equal(f.properties.kind, row.kind);
      assert.equal(f.properties.score, row.score);
      assert.equal(f.properties.active, row.active);
    }
    const rels = fcoll.links.map((l: { rel: string }) => l.rel);
    for (const rel of ['self', 'alternate', 'collection', 'next']) assert.ok(rels.includes(rel), `link ${rel}`);
    assert.ok(!rels.includes('prev'), 'no prev on the first page');
  });

  test('paging through next links sees every one of numberMatched features once; prev links go back', async () => {
    let url: string | undefined = `${server.url}/ogc/collections/points/items?limit=7`;
    const seen: number[] = [];
    let pages = 0;
    let matched = -1;
    while (url) {
      const res = await get(url);
      assert.equal(res.status, 200, url);
      const page = res.json();
      matched = page.numberMatched;
      assert.equal(page.numberReturned, page.features.length);
      seen.push(...page.features.map((f: { id: number }) => f.id));
      const prev = page.links.find((l: { rel: string }) => l.rel === 'prev');
      if (pages > 0) {
        assert.ok(prev, 'a later page links back');
        const back = (await get(prev.href)).json();
        assert.equal(back.features[0].id, seen[(pages - 1) * 7]);
      }
      url = page.links.find((l: { rel: string }) => l.rel === 'next')?.href;
      pages++;
      assert.ok(pages < 20, 'paging ends');
    }
    assert.equal(matched, 57);
    assert.equal(seen.length, matched);
    assert.deepEqual([...new Set(seen)].sort((a, b) => a - b), rows.map((r) => r.id));
    assert.equal(pages, Math.ceil(57 / 7));
  });

  test('paging keeps the filter: next links of a filtered query page through the matches only', async () => {
    const want = rows.filter((r) => r.kind === 'park').map((r) => r.id);
    let url: string | undefined = `${server.url}/ogc/collections/points/items?limit=4&filter=${encodeURIComponent("kind = 'park'")}`;
    const seen: number[] = [];
    while (url) {
      const page: any = (await get(url)).json();
      assert.equal(page.numberMatched, want.length);
      seen.push(...page.features.map((f: { id: number }) => f.id));
      url = page.links.find((l: { rel: string }) => l.rel === 'next')?.href;
    }
    assert.deepEqual(seen, want);
  });

  test('limit caps at 10000 (however many digits); limit, offset and bbox that are not numbers are 400 naming the parameter', async () => {
    const all = (await items('points', { limit: '20000' })).json();
    assert.equal(all.numberReturned, 57);
    assert.ok(all.links.find((l: { rel: string }) => l.rel === 'self').href.includes('limit=10000'));
    // However many digits a limit has, it is capped, not refused.
    for (const limit of ['1234567890123456', '0000000000000000000000000000020', '9'.repeat(400)]) {
      const long = await items('points', { limit });
      assert.equal(long.status, 200, `limit=${limit.slice(0, 40)}: ${long.body.toString().slice(0, 300)}`);
      const doc = long.json();
      assert.equal(doc.numberReturned, limit.endsWith('20') ? 20 : 57);
      assert.ok(doc.links.find((l: { rel: string }) => l.rel === 'self').href.includes(`limit=${limit.endsWith('20') ? 20 : 10000}`));
    }
    const huge = await items('points', { offset: '9'.repeat(20) });
    assert.equal(huge.status, 400);
    assert.equal(huge.json().parameter, 'offset');
    assert.match(huge.json().detail, /larger than 9007199254740991/);
    const past = (await items('points', { offset: '100' })).json();
    assert.equal(past.numberReturned, 0);
    assert.equal(past.numberMatched, 57);
    for (const [q, parameter] of [
      [{ limit: '0' }, 'limit'],
      [{ limit: 'ten' }, 'limit'],
      [{ offset: '-1' }, 'offset'],
      [{ bbox: '1,2,3' }, 'bbox'],
      [{ bbox: '0,5,1,2' }, 'bbox'],
      [{ 'filter-lang': 'sql' }, 'filter-lang'],
      [{ 'filter-crs': 'EPSG:3857' }, 'filter-crs'],
      [{ crs: 'http://www.opengis.net/def/crs/EPSG/0/2056' }, 'crs'],
      [{ 'bbox-crs': 'EPSG:4326' }, 'bbox-crs'],
      [{ nosuch: '1' }, 'nosuch'],
      [{ geom: '1' }, 'geom'],
      [{ rank: 'high' }, 'rank'],
      [{ active: 'yes' }, 'active'],
      [{ f: 'xml' }, 'f'],
    ] as [Record<string, string>, string][]) {
      const res = await items('points', q);
      assert.equal(res.status, 400, JSON.stringify(q));
      assert.equal(res.type, 'application/problem+json');
      const p = res.json();
      assert.equal(p.parameter, parameter, JSON.stringify(p));
      assert.ok(p.detail.includes(parameter === 'f' ? 'f=' : parameter), p.detail);
    }
  });

  test('crs and bbox-crs (Part 2) take the CRSs the collection lists, as GDAL 3.10 sends them; the answer says its CRS in Content-Crs', async () => {
    const collection = (await get(`${server.url}/ogc/collections/points`)).json();
    assert.equal(collection.crs[0], CRS84);
    assert.ok(collection.crs.includes(collection.storageCrs), collection.storageCrs);
    // CRS84 asked for explicitly is the default answer (test/ogc-crs.test.ts covers the other CRSs).
    const plain = await items('points', { limit: '5' });
    const withCrs = await items('points', { limit: '5', crs: CRS84, 'bbox-crs': CRS84, bbox: '-180,-90,180,90' });
    assert.equal(withCrs.status, 200, withCrs.body.toString());
    assert.deepEqual(withCrs.json().features, plain.json().features);
    for (const r of [plain, withCrs]) assert.equal(r.headers.get('content-crs'), `<${CRS84}>`);
    // What GDAL 3.10's OGCAPI driver asks for on every page (crs = the storageCrs): answered, in that CRS.
    const stored = await items('points', { limit: '5', crs: collection.storageCrs });
    assert.equal(stored.status, 200, stored.body.toString());
    assert.equal(stored.headers.get('content-crs'), `<${collection.storageCrs}>`);
    // The next link keeps the parameter, so a client paging on gets the same CRS.
    assert.match(withCrs.json().links.find((l: { rel: string }) => l.rel === 'next').href, /[?&]crs=/);
  });

  test('bbox and property=value select the rows the database says they should', async () => {
    const inBox = rows.filter((r) => r.x >= -5 && r.x <= 5 && r.y >= -4 && r.y <= 0).map((r) => r.id);
    const got = (await items('points', { bbox: '-5,-4,5,0', limit: '100' })).json();
    assert.deepEqual(got.features.map((f: { id: number }) => f.id), inBox);
    assert.ok(inBox.length > 3);
    const parks = (await items('points', { kind: 'park', active: 'true', limit: '100' })).json();
    assert.deepEqual(parks.features.map((f: { id: number }) => f.id), rows.filter((r) => r.kind === 'park' && r.active === true).map((r) => r.id));
    const ranked = (await items('points', { rank: '3', limit: '100' })).json();
    assert.deepEqual(ranked.features.map((f: { id: number }) => f.id), rows.filter((r) => r.rank === 3).map((r) => r.id));
    // A table in web mercator: the bbox is in longitude/latitude all the same.
    const roads = (await items('roads', { bbox: '-122.43,37.80,-122.41,37.81' })).json();
    assert.deepEqual(roads.features.map((f: { properties: { gid: number } }) => f.properties.gid), [11]);
    assert.ok(Math.abs(roads.features[0].geometry.coordinates[0][0] - -122.425) < 1e-7, 'geometries come back in longitude/latitude');
  });

  test('one item by id; unknown ids and collections without features are 404', async () => {
    const one = await get(`${server.url}/ogc/collections/points/items/12`);
    assert.equal(one.status, 200);
    assert.match(one.type, /^application\/geo\+json/);
    const f = one.json();
    assert.equal(f.id, 12);
    assert.equal(f.properties.name, rows.find((r) => r.id === 12)!.name);
    assert.ok(f.links.some((l: { rel: string }) => l.rel === 'collection'));
    for (const p of ['/ogc/collections/points/items/999', '/ogc/collections/points/items/abc', '/ogc/collections/points/items/1.5e3', '/ogc/collections/openmaptiles/items', '/ogc/collections/nosuch/items', '/ogc/collections/roads/items/10']) {
      const res = await get(server.url + p);
      assert.equal(res.status, 404, p);
      assert.equal(res.type, 'application/problem+json');
    }
    // Without id_column, a one-column primary key gives the ids; places names its id_column.
    assert.equal((await get(`${server.url}/ogc/collections/places/items/4`)).json().properties.name, 'Sydney Opera House');
  });

  test('ids of every key type round-trip: each id a page hands out finds its feature; an id not of the type is 404', async () => {
    const expected: Record<string, string[]> = {
      uuids: (await db.sql(`SELECT id::text AS k FROM ogc_uuid_keys ORDER BY id`)).rows.map((r: any) => r.k),
      days: (await db.sql(`SELECT day::text AS k FROM ogc_date_keys ORDER BY day`)).rows.map((r: any) => r.k),
      bigids: (await db.sql(`SELECT id::text AS k FROM ogc_big_keys ORDER BY id`)).rows.map((r: any) => r.k),
    };
    for (const [collection, keys] of Object.entries(expected)) {
      const seen: string[] = [];
      let url: string | undefined = `${server.url}/ogc/collections/${collection}/items?limit=4`;
      while (url) {
        const page = (await get(url)).json();
        for (const f of page.features) {
          seen.push(String(f.id));
          const one = await get(`${server.url}/ogc/collections/${collection}/items/${encodeURIComponent(String(f.id))}`);
          assert.equal(one.status, 200, `${collection} item ${f.id}`);
          assert.deepEqual({ ...one.json(), links: undefined }, { ...f, links: undefined }, `${collection} item ${f.id} is the feature the page held`);
        }
        url = page.links.find((l: { rel: string }) => l.rel === 'next')?.href;
      }
      // Every key as the database writes it: no bigint rounded to a neighbour, no date shifted by a time zone.
      assert.deepEqual(seen, keys, collection);
    }
    assert.equal((await get(`${server.url}/ogc/collections/bigids/items/9007199254740993`)).json().properties.label, 'above 2^53');
    assert.equal((await get(`${server.url}/ogc/collections/bigids/items/42`)).json().id, 42, 'a bigint that fits a double is a JSON number');
    for (const p of ['uuids/items/not-a-uuid', 'uuids/items/00000000-0000-0000-0000-000000000000', 'days/items/2024-02-31', 'days/items/yesterday', 'bigids/items/9223372036854775808', 'bigids/items/9007199254740994', "uuids/items/'%3B%20DROP%20TABLE%20ogc_points%3B--"]) {
      const res = await get(`${server.url}/ogc/collections/${p}`);
      assert.equal(res.status, 404, p);
      assert.equal(res.type, 'application/problem+json', p);
      assert.equal(res.json().title, 'Feature not found', p);
    }
  });

  test('numeric values are JSON numbers only where the number writes the same decimal; others are exact strings', async () => {
    const page = (await items('bigids', { limit: '10' })).json();
    const amount = Object.fromEntries(page.features.map((f: any) => [f.properties.label, f.properties.amount]));
    assert.deepEqual(amount, {
      'bigint min': 0,
      small: '9007199254740993',
      'exactly 2^53': 1.5,
      'above 2^53': '12345678901234567890.123456789',
      'bigint max': '0.1000000000000000000001',
    });
  });

  test('queryables: a JSON Schema of the filterable columns', async () => {
    const res = await get(`${server.url}/ogc/collections/points/queryables`);
    assert.equal(res.status, 200);
    assert.match(res.type, /^application\/schema\+json/);
    const q = res.json();
    assert.equal(q.type, 'object');
    assert.ok(String(q.$id).endsWith('/ogc/collections/points/queryables'));
    assert.deepEqual(
      Object.fromEntries(Object.entries(q.properties as Record<string, { type?: string; format?: string }>).map(([k, v]) => [k, v.type ?? v.format])),
      { id: 'integer', name: 'string', kind: 'string', score: 'number', rank: 'integer', active: 'boolean', geom: 'geometry-any' },
    );
    const html = await get(`${server.url}/ogc/collections/points/queryables?f=html`);
    assert.match(html.type, /^text\/html/);
    assert.match(html.body.toString(), /<pre>/);
  });
});

// ---- CQL2: generated filters, evaluated here over the rows ----

type Lit = string | number | boolean;
type Prop = 'id' | 'name' | 'kind' | 'score' | 'rank' | 'active';
type E =
  | { op: 'and' | 'or'; args: E[] }
  | { op: 'not'; arg: E }
  | { op: 'cmp'; cmp: '=' | '<>' | '<' | '<=' | '>' | '>='; prop: Prop; value: Lit; flipped: boolean }
  | { op: 'like'; prop: 'name' | 'kind'; pattern: string }
  | { op: 'between'; prop: 'id' | 'score' | 'rank'; low: number; high: number }
  | { op: 'in'; prop: Prop; list: Lit[] }
  | { op: 'isNull'; prop: Prop }
  | { op: 'bbox'; box: [number, number, number, number] }
  | { op: 'geom'; shape: Shape };
/** A geometry literal: a point, or a simple polygon (one closed ring). */
type Shape = { type: 'Point'; at: [number, number] } | { type: 'Polygon'; ring: [number, number][] };

const NUMERIC: ('id' | 'score' | 'rank')[] = ['id', 'score', 'rank'];
const TEXT: ('name' | 'kind')[] = ['name', 'kind'];
const TEXT_PIECES = ['alpha', 'Beta', "O'Brien", 'semi;colon', '50% off', 'under_score', 'back\\slash', 'ünïcödé', '日本', '🙂', '--dash', 'a"quote', 'park', 'cafe', 'shop', ' ', '1', '2', '3', ''];

const numberLit = fc.oneof(fc.integer({ min: -5, max: 70 }), fc.constantFrom(0.25, 9.25, 12, 23, 24.75, -0.5, 1e3), fc.double({ min: -100, max: 100, noNaN: true, noDefaultInfinity: true }));
const textLit = fc.oneof(fc.constantFrom(...TEXT_PIECES), fc.array(fc.constantFrom(...TEXT_PIECES), { minLength: 1, maxLength: 3 }).map((a) => a.join(' ')));
/** LIKE patterns: pieces with wildcards; a backslash escapes the next character (never the last one). */
const likePattern = fc.array(fc.oneof(fc.constantFrom('%', '_', '\\%', '\\_', '\\\\'), fc.constantFrom(...TEXT_PIECES.map((p) => p.replace(/\\/g, '\\\\')))), { minLength: 1, maxLength: 4 }).map((a) => a.join(''));

// The seeded points lie on a grid (test/sql/ogc.sql): x = -10 + (i % 10) * 2.5, y = -5 + floor(i / 10) * 1.5.
const GRID: [number, number][] = Array.from({ length: 57 }, (_, k) => [-10 + ((k + 1) % 10) * 2.5, -5 + Math.floor((k + 1) / 10) * 1.5]);

/** Whether p lies within 1e-6 of the segment a-b (where the database's answer and ours could differ by rounding). */
function nearSegment(p: [number, number], a: [number, number], b: [number, number]): boolean {
  const [dx, dy] = [b[0] - a[0], b[1] - a[1]];
  const t = Math.max(0, Math.min(1, ((p[0] - a[0]) * dx + (p[1] - a[1]) * dy) / (dx * dx + dy * dy || 1)));
  return Math.hypot(p[0] - a[0] - t * dx, p[1] - a[1] - t * dy) < 1e-6;
}

/** Even-odd ray casting: whether p is inside the closed ring (points on the edge are filtered out beforehand). */
function insideRing(p: [number, number], ring: [number, number][]): boolean {
  let inside = false;
  for (let i = 0, j = ring.length - 1; i < ring.length; j = i++) {
    const [xi, yi] = ring[i];
    const [xj, yj] = ring[j];
    if (yi > p[1] !== yj > p[1] && p[0] < ((xj - xi) * (p[1] - yi)) / (yj - yi) + xi) inside = !inside;
  }
  return inside;
}

const round2 = (n: number) => Math.round(n * 100) / 100;
/**
 * Simple polygons: vertices at distinct, increasing angles around a centre (a polar sort never crosses itself),
 * kept only when no seeded point is on an edge, so inside and outside are the same here and in PostGIS.
 */
const polygonShape: fc.Arbitrary<Shape> = fc
  .tuple(fc.double({ min: -12, max: 14, noNaN: true }), fc.double({ min: -6, max: 4, noNaN: true }), fc.uniqueArray(fc.integer({ min: 0, max: 35 }), { minLength: 3, maxLength: 7 }), fc.array(fc.double({ min: 0.5, max: 9, noNaN: true }), { minLength: 7, maxLength: 7 }))
  .map(([cx, cy, steps, radii]) => {
    const ring = [...steps].sort((a, b) => a - b).map((st, i): [number, number] => [round2(cx + radii[i] * Math.cos((st * Math.PI) / 18)), round2(cy + radii[i] * Math.sin((st * Math.PI) / 18))]);
    return { type: 'Polygon' as const, ring: [...ring, ring[0]] };
  })
  .filter((sh) => {
    const r = sh.ring;
    const distinct = new Set(r.slice(0, -1).map((v) => v.join())).size === r.length - 1;
    return distinct && !GRID.some((p) => r.some((a, i) => i > 0 && nearSegment(p, r[i - 1], a)));
  });
/** Points: a seeded point exactly (one row), or a near miss (none). */
const pointShape: fc.Arbitrary<Shape> = fc.tuple(fc.constantFrom(...GRID), fc.constantFrom(0, 0, 0.01, -0.5)).map(([[x, y], d]) => ({ type: 'Point' as const, at: [x + d, y] as [number, number] }));
const geomLeaf: fc.Arbitrary<E> = fc.oneof(pointShape, polygonShape).map((shape) => ({ op: 'geom' as const, shape }));

const leaf: fc.Arbitrary<E> = fc.oneof(
  fc.record({ op: fc.constant('cmp' as const), cmp: fc.constantFrom('=', '<>', '<', '<=', '>', '>=' as const), prop: fc.constantFrom(...NUMERIC), value: numberLit, flipped: fc.boolean() }),
  fc.record({ op: fc.constant('cmp' as const), cmp: fc.constantFrom('=', '<>', '<', '<=', '>', '>=' as const), prop: fc.constantFrom(...TEXT), value: textLit, flipped: fc.boolean() }),
  fc.record({ op: fc.constant('cmp' as const), cmp: fc.constantFrom('=', '<>' as const), prop: fc.constant('active' as const), value: fc.boolean(), flipped: fc.boolean() }),
  fc.record({ op: fc.constant('like' as const), prop: fc.constantFrom(...TEXT), pattern: likePattern }),
  fc.record({ op: fc.constant('between' as const), prop: fc.constantFrom(...NUMERIC), low: numberLit, high: numberLit }),
  fc.oneof(
    fc.record({ op: fc.constant('in' as const), prop: fc.constantFrom(...NUMERIC), list: fc.array(numberLit, { minLength: 1, maxLength: 4 }) }),
    fc.record({ op: fc.constant('in' as const), prop: fc.constantFrom(...TEXT), list: fc.array(textLit, { minLength: 1, maxLength: 4 }) }),
  ) as fc.Arbitrary<E>,
  fc.record({ op: fc.constant('isNull' as const), prop: fc.constantFrom('id', 'name', 'kind', 'score', 'rank', 'active' as const) }),
  fc
    .tuple(fc.double({ min: -12, max: 14, noNaN: true }), fc.double({ min: -6, max: 4, noNaN: true }), fc.double({ min: 0, max: 15, noNaN: true }), fc.double({ min: 0, max: 6, noNaN: true }))
    .map(([w, s, dw, dh]) => ({ op: 'bbox' as const, box: [w, s, w + dw, s + dh] as [number, number, number, number] })),
  geomLeaf,
);

const expr: fc.Arbitrary<E> = fc.letrec<{ e: E }>((tie) => ({
  e: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    leaf,
    fc.record({ op: fc.constantFrom('and', 'or' as const), args: fc.array(tie('e'), { minLength: 2, maxLength: 3 }) }),
    fc.record({ op: fc.constant('not' as const), arg: tie('e') }),
  ),
})).e;

const quoteText = (s: string) => `'${s.replace(/'/g, "''")}'`;
const litText = (v: Lit) => (typeof v === 'string' ? quoteText(v) : typeof v === 'boolean' ? (v ? 'TRUE' : 'false') : String(v));

function toText(e: E): string {
  switch (e.op) {
    case 'and':
    case 'or':
      return `(${e.args.map(toText).join(e.op === 'and' ? ' AND ' : ' or ')})`;
    case 'not':
      return `NOT (${toText(e.arg)})`;
    case 'cmp': {
      const mirror = { '=': '=', '<>': '<>', '<': '>', '<=': '>=', '>': '<', '>=': '<=' } as const;
      return e.flipped ? `${litText(e.value)} ${mirror[e.cmp]} "${e.prop}"` : `${e.prop} ${e.cmp} ${litText(e.value)}`;
    }
    case 'like':
      return `${e.prop} LIKE ${quoteText(e.pattern)}`;
    case 'between':
      return `${e.prop} BETWEEN ${e.low} AND ${e.high}`;
    case 'in':
      return `${e.prop} IN (${e.list.map(litText).join(', ')})`;
    case 'isNull':
      return `${e.prop} IS NULL`;
    case 'bbox':
      return `S_INTERSECTS(geom, BBOX(${e.box.join(', ')}))`;
    case 'geom':
      // WKT in cql2-text.
      return e.shape.type === 'Point' ? `S_INTERSECTS(geom, POINT(${e.shape.at.join(' ')}))` : `S_INTERSECTS(geom, POLYGON((${e.shape.ring.map((v) => v.join(' ')).join(', ')})))`;
  }
}

function toJson(e: E): unknown {
  const p = (name: string) => ({ property: name });
  switch (e.op) {
    case 'and':
    case 'or':
      return { op: e.op, args: e.args.map(toJson) };
    case 'not':
      return { op: 'not', args: [toJson(e.arg)] };
    case 'cmp': {
      const mirror = { '=': '=', '<>': '<>', '<': '>', '<=': '>=', '>': '<', '>=': '<=' } as const;
      return e.flipped ? { op: mirror[e.cmp], args: [e.value, p(e.prop)] } : { op: e.cmp, args: [p(e.prop), e.value] };
    }
    case 'like':
      return { op: 'like', args: [p(e.prop), e.pattern] };
    case 'between':
      return { op: 'between', args: [p(e.prop), e.low, e.high] };
    case 'in':
      return { op: 'in', args: [p(e.prop), e.list] };
    case 'isNull':
      return { op: 'isNull', args: [p(e.prop)] };
    case 'bbox':
      return { op: 's_intersects', args: [p('geom'), { bbox: e.box }] };
    case 'geom':
      // GeoJSON in cql2-json.
      return { op: 's_intersects', args: [p('geom'), e.shape.type === 'Point' ? { type: 'Point', coordinates: e.shape.at } : { type: 'Polygon', coordinates: [e.shape.ring] }] };
  }
}

/** Strings order by code point (the service compares text with COLLATE "C": UTF-8 bytes, the same order). */
function cmpText(a: string, b: string): number {
  const x = Array.from(a, (c) => c.codePointAt(0)!);
  const y = Array.from(b, (c) => c.codePointAt(0)!);
  for (let i = 0; i < Math.min(x.length, y.length); i++) if (x[i] !== y[i]) return x[i] - y[i];
  return x.length - y.length;
}
const order = (a: Lit, b: Lit) => (typeof a === 'string' ? cmpText(a, b as string) : (a as number) - (b as number));

function likeRegex(pattern: string): RegExp {
  let re = '';
  const chars = Array.from(pattern);
  for (let i = 0; i < chars.length; i++) {
    const c = chars[i];
    if (c === '\\') re += chars[++i].replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
    else if (c === '%') re += '.*';
    else if (c === '_') re += '.';
    else re += c.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&');
  }
  return new RegExp(`^${re}$`, 'su');
}

/** SQL's three-valued logic: true, false, or null (unknown). */
function evaluate(e: E, r: Row): boolean | null {
  switch (e.op) {
    case 'and': {
      const v = e.args.map((a) => evaluate(a, r));
      return v.includes(false) ? false : v.includes(null) ? null : true;
    }
    case 'or': {
      const v = e.args.map((a) => evaluate(a, r));
      return v.includes(true) ? true : v.includes(null) ? null : false;
    }
    case 'not': {
      const v = evaluate(e.arg, r);
      return v === null ? null : !v;
    }
    case 'cmp': {
      const v = r[e.prop];
      if (v === null) return null;
      const c = order(v, e.value);
      return { '=': c === 0, '<>': c !== 0, '<': c < 0, '<=': c <= 0, '>': c > 0, '>=': c >= 0 }[e.cmp];
    }
    case 'like': {
      const v = r[e.prop];
      return v === null ? null : likeRegex(e.pattern).test(v);
    }
    case 'between': {
      const v = r[e.prop];
      return v === null ? null : v >= e.low && v <= e.high;
    }
    case 'in': {
      const v = r[e.prop];
      return v === null ? null : e.list.some((l) => order(v, l) === 0);
    }
    case 'isNull':
      return r[e.prop] === null;
    case 'bbox':
      return r.x >= e.box[0] && r.x <= e.box[2] && r.y >= e.box[1] && r.y <= e.box[3];
    case 'geom':
      return e.shape.type === 'Point' ? r.x === e.shape.at[0] && r.y === e.shape.at[1] : insideRing([r.x, r.y], e.shape.ring);
  }
}

async function filtered(filter: string, lang: 'cql2-text' | 'cql2-json'): Promise<Fetched> {
  return items('points', { filter, 'filter-lang': lang, limit: '10000' });
}

describe('items parameters (property tests)', () => {
  // Generated `limit`, `offset` and `bbox` strings: a number-like text is read as the service documents it and
  // gives the rows the same reading selects here over the seeded rows (ordered by id); anything else is a 400
  // naming the first parameter that is wrong (limit, then offset, then bbox). Never another status.
  const MAX = 10000;
  const digits = (max: number) => fc.tuple(fc.nat(max), fc.nat(3)).map(([n, zeros]) => '0'.repeat(zeros) + String(n));
  const junk = fc.oneof(
    fc.constantFrom('', ' ', '-1', '+3', '1.5', '1e2', '0x10', 'NaN', 'Infinity', ' 7', '7 ', '٣', '１２', '5,5', 'null'),
    fc.string({ unit: fc.constantFrom('1', '0', '-', '.', 'e', 'x', ' ', ',', 'ä'), maxLength: 8 }),
  );
  const limitText = fc.oneof(digits(60), digits(20000), fc.nat(40).map((n) => '9'.repeat(16 + n)), junk);
  const offsetText = fc.oneof(digits(70), fc.constantFrom('9007199254740991', '9007199254740992', '9'.repeat(30)), junk);
  /** A coordinate as a client might write it: integer, half, exponent, with spaces; rows lie in x -10..12.5, y -5..2.5. */
  const coord = fc.tuple(fc.integer({ min: -30, max: 30 }), fc.constantFrom('plain', 'half', 'exp', 'spaced')).map(([n, form]) =>
    form === 'half' ? String(n / 2) : form === 'exp' ? `${n / 10}e1` : form === 'spaced' ? ` ${n} ` : String(n),
  );
  const bboxText = fc.oneof(
    fc.array(coord, { minLength: 4, maxLength: 4 }).map((a) => a.join(',')),
    fc.array(coord, { minLength: 6, maxLength: 6 }).map((a) => a.join(',')),
    fc.array(coord, { minLength: 1, maxLength: 7 }).map((a) => a.join(',')),
    junk,
  );
  const parameters = fc.record({ limit: fc.option(limitText), offset: fc.option(offsetText), bbox: fc.option(bboxText) }, { requiredKeys: [] });

  /** What the service should answer: the rows of the page, or the parameter a 400 names. */
  function expected(q: { limit?: string | null; offset?: string | null; bbox?: string | null }): { bad: string } | { ids: number[]; matched: number } {
    let limit = 10;
    if (q.limit != null) {
      if (!/^\d+$/.test(q.limit) || Number(q.limit) < 1) return { bad: 'limit' };
      limit = Math.min(Number(q.limit), MAX);
    }
    let offset = 0;
    if (q.offset != null) {
      if (!/^\d+$/.test(q.offset) || Number(q.offset) > Number.MAX_SAFE_INTEGER) return { bad: 'offset' };
      offset = Number(q.offset);
    }
    let inBox = (_r: Row) => true;
    if (q.bbox != null) {
      const parts = q.bbox.split(',').map((p) => (p.trim() === '' ? NaN : Number(p)));
      if ((parts.length !== 4 && parts.length !== 6) || !parts.every(Number.isFinite)) return { bad: 'bbox' };
      const [w, so, e, n] = parts.length === 6 ? [parts[0], parts[1], parts[3], parts[4]] : parts;
      if (so > n) return { bad: 'bbox' };
      // West above east crosses the antimeridian.
      inBox = (r) => r.y >= so && r.y <= n && (w <= e ? r.x >= w && r.x <= e : r.x >= w || r.x <= e);
    }
    const matching = rows.filter(inBox).map((r) => r.id);
    return { ids: matching.slice(offset, offset + limit), matched: matching.length };
  }

  test('generated limit, offset and bbox: 200 with the rows they select, or a 400 naming the parameter', async () => {
    const seen = { ok: 0, limit: 0, offset: 0, bbox: 0, partial: 0 };
    await fc.assert(
      fc.asyncProperty(parameters, async (q) => {
        const query: Record<string, string> = {};
        for (const [k, v] of Object.entries(q)) if (v != null) query[k] = v;
        const res = await items('points', query);
        const want = expected(q);
        const what = `${JSON.stringify(query)} -> ${res.status} ${res.body.toString().slice(0, 300)}`;
        if ('bad' in want) {
          assert.equal(res.status, 400, what);
          assert.equal(res.type, 'application/problem+json', what);
          assert.equal(res.json().parameter, want.bad, what);
          assert.ok(res.json().detail.includes(want.bad), what);
          seen[want.bad as 'limit' | 'offset' | 'bbox']++;
        } else {
          assert.equal(res.status, 200, what);
          const doc = res.json();
          assert.deepEqual(doc.features.map((f: { id: number }) => f.id), want.ids, what);
          assert.equal(doc.numberMatched, want.matched, what);
          assert.equal(doc.numberReturned, want.ids.length, what);
          seen.ok++;
          // A page holding some rows but not all: the selection itself was checked.
          if (want.ids.length > 0 && want.matched < rows.length) seen.partial++;
        }
      }),
      { numRuns: 300 },
    );
    // Every outcome was exercised, not only the easy one.
    for (const [k, n] of Object.entries(seen)) assert.ok(n >= 10, `${k}: ${n} of 300`);
  });
});

describe('CQL2 filters', () => {
  test('each operator, in text and JSON, selects the rows the predicate holds for', async () => {
    const cases: E[] = [
      { op: 'cmp', cmp: '=', prop: 'kind', value: 'park', flipped: false },
      { op: 'cmp', cmp: '>=', prop: 'score', value: 20, flipped: false },
      { op: 'cmp', cmp: '<', prop: 'name', value: 'O', flipped: true },
      { op: 'like', prop: 'name', pattern: '50\\% off%' },
      { op: 'like', prop: 'name', pattern: '_nïcödé %' },
      { op: 'between', prop: 'rank', low: 1, high: 2 },
      { op: 'in', prop: 'id', list: [1, 5, 57, 99] },
      { op: 'isNull', prop: 'name' },
      { op: 'not', arg: { op: 'isNull', prop: 'active' } },
      { op: 'bbox', box: [-6, -5, 1, -2] },
      { op: 'and', args: [{ op: 'cmp', cmp: '=', prop: 'active', value: true, flipped: false }, { op: 'or', args: [{ op: 'cmp', cmp: '<>', prop: 'kind', value: 'shop', flipped: false }, { op: 'isNull', prop: 'score' }] }] },
    ];
    for (const e of cases) {
      const want = rows.filter((r) => evaluate(e, r) === true).map((r) => r.id);
      assert.ok(want.length > 0, `case ${toText(e)} selects something`);
      for (const [filter, lang] of [[toText(e), 'cql2-text'], [JSON.stringify(toJson(e)), 'cql2-json']] as const) {
        const res = await filtered(filter, lang);
        assert.equal(res.status, 200, `${filter}: ${res.body.toString().slice(0, 300)}`);
        assert.deepEqual(res.json().features.map((f: { id: number }) => f.id), want, filter);
      }
    }
    // S_INTERSECTS with a WKT polygon, on a table in web mercator.
    const roads = (await items('roads', { filter: 'S_INTERSECTS(geom, POLYGON((-122.43 37.79, -122.40 37.79, -122.40 37.81, -122.43 37.81, -122.43 37.79)))' })).json();
    assert.deepEqual(roads.features.map((f: { properties: { gid: number } }) => f.properties.gid).sort(), [10, 11]);
    const point = (await items('roads', { filter: 'S_INTERSECTS(geom, POINT(0 90))' })).json();
    assert.equal(point.numberMatched, 0, 'a latitude of 90 is a valid query point, even against web mercator data');
  });

  test('property: generated filters return exactly the rows the same predicate selects here (text and JSON)', async () => {
    let nonEmpty = 0;
    const geometryHits = { Point: 0, Polygon: 0 };
    /** Counts the geometry leaves that select some rows but not all, so the shapes are really put to the test. */
    const countShapes = (e: E): void => {
      if (e.op === 'and' || e.op === 'or') e.args.forEach(countShapes);
      else if (e.op === 'not') countShapes(e.arg);
      else if (e.op === 'geom') {
        const n = rows.filter((r) => evaluate(e, r)).length;
        if (n > 0 && n < rows.length) geometryHits[e.shape.type]++;
      }
    };
    await fc.assert(
      fc.asyncProperty(expr, fc.boolean(), async (e, asJson) => {
        const want = rows.filter((r) => evaluate(e, r) === true).map((r) => r.id);
        if (want.length > 0 && want.length < rows.length) nonEmpty++;
        countShapes(e);
        const filter = asJson ? JSON.stringify(toJson(e)) : toText(e);
        const res = await filtered(filter, asJson ? 'cql2-json' : 'cql2-text');
        assert.equal(res.status, 200, `${filter}: ${res.body.toString().slice(0, 300)}`);
        const page = res.json();
        assert.deepEqual(page.features.map((f: { id: number }) => f.id), want, filter);
        assert.equal(page.numberMatched, want.length);
      }),
      { numRuns: 300 },
    );
    assert.ok(nonEmpty >= 60, `only ${nonEmpty} generated filters selected some but not all rows`);
    assert.ok(geometryHits.Point >= 5 && geometryHits.Polygon >= 10, `too few geometry leaves that select rows: ${JSON.stringify(geometryHits)}`);
  });

  test('unknown properties and malformed filters are 400 naming what is wrong', async () => {
    const bad: [string, 'cql2-text' | 'cql2-json', RegExp][] = [
      ['nosuch = 1', 'cql2-text', /unknown property "nosuch"/],
      ['"na""me" = 1', 'cql2-text', /unknown property "na\\"me"/],
      ['name = ', 'cql2-text', /expected a property or a value, found the end/],
      ["name = 'x", 'cql2-text', /unterminated string/],
      ['name = 5', 'cql2-text', /compares "name" \(string\) with 5 \(number\)/],
      ['rank LIKE 1', 'cql2-text', /LIKE needs a string/],
      ["name LIKE 'abc\\'", 'cql2-text', /unpaired escape/],
      ['score < TRUE', 'cql2-text', /compares "score" \(number\) with true \(boolean\)/],
      ['(rank = 1', 'cql2-text', /expected "\)"/],
      ['rank = 1 rank = 2', 'cql2-text', /unexpected rank at position 10/],
      ['T_BEFORE(a, b)', 'cql2-text', /unknown function T_BEFORE/],
      ['S_INTERSECTS(geom, POLYGON((0 0, 1 1, 0 0)))', 'cql2-text', /at least 4 positions/],
      ['S_INTERSECTS(geom, BBOX(0, 5, 1, 2))', 'cql2-text', /south 5 is above north 2/],
      ['S_INTERSECTS(name, BBOX(0, 0, 1, 1))', 'cql2-text', /"name" is not a geometry/],
      ['geom = 1', 'cql2-text', /"geom" is a geometry/],
      ["name = 'a\u0000b'", 'cql2-text', /U\+0000/],
      ['NOT '.repeat(80) + 'rank = 1', 'cql2-text', /nests deeper than 64/],
      ['{"op": "=", "args": [{"property": "nosuch"}, 1]}', 'cql2-json', /unknown property "nosuch"/],
      ['{"op": "~", "args": []}', 'cql2-json', /unknown operator "~"/],
      ['{"op": "between", "args": [{"property": "rank"}, 1]}', 'cql2-json', /takes 3 arguments, not 2/],
      ['{"op": "in", "args": [{"property": "rank"}, []]}', 'cql2-json', /non-empty array/],
      ['{"op": "=", "args": [{"property": "rank"}, null]}', 'cql2-json', /filter.args\[1\]: expected/],
      ['{"op": "s_intersects", "args": [{"property": "geom"}, {"type": "Point", "coordinates": [1]}]}', 'cql2-json', /2 or 3 finite numbers/],
      ['not json', 'cql2-json', /not JSON/],
    ];
    for (const [filter, lang, detail] of bad) {
      const res = await filtered(filter, lang);
      assert.equal(res.status, 400, `${filter}: ${res.status} ${res.body.toString().slice(0, 200)}`);
      assert.equal(res.type, 'application/problem+json');
      const p = res.json();
      assert.equal(p.parameter, 'filter');
      assert.match(p.detail, detail, filter);
    }
  });

  const HOSTILE = ["'", '"', ';', '--', '/*', '*/', '\\', '%', '_', ')', '(', ' OR 1=1', "' OR '1'='1", '; DROP TABLE ogc_points; --', 'é', '日', '🙂', '\u0000', '\u202e', '$1', '::text', 'name', 'E\'', '\n'];
  const hostile = fc.array(fc.constantFrom(...HOSTILE), { minLength: 1, maxLength: 6 }).map((a) => a.join(''));

  test('property: injection attempts in property names and literals give 400 or the right rows, never an SQL error', async () => {
    await fc.assert(
      fc.asyncProperty(hostile, fc.constantFrom('name-text', 'literal-text', 'name-json', 'literal-json', 'raw-text', 'param'), async (s, where) => {
        let res: Fetched;
        let want: number[] | undefined;
        switch (where) {
          case 'name-text':
            res = await filtered(`"${s.replace(/"/g, '""')}" = 'x'`, 'cql2-text');
            break;
          case 'name-json':
            res = await filtered(JSON.stringify({ op: '=', args: [{ property: s }, 'x'] }), 'cql2-json');
            break;
          case 'literal-text':
            res = await filtered(`name = '${s.replace(/'/g, "''")}' OR kind = '${s.replace(/'/g, "''")}'`, 'cql2-text');
            want = rows.filter((r) => r.name === s || r.kind === s).map((r) => r.id);
            break;
          case 'literal-json':
            res = await filtered(JSON.stringify({ op: 'like', args: [{ property: 'name' }, `%${s.replace(/\\/g, '\\\\').replace(/%/g, '\\%').replace(/_/g, '\\_')}%`] }), 'cql2-json');
            want = rows.filter((r) => r.name !== null && r.name.includes(s)).map((r) => r.id);
            break;
          case 'raw-text':
            res = await filtered(s, 'cql2-text');
            break;
          default:
            res = await items('points', { name: s, limit: '10000' });
            want = rows.filter((r) => r.name === s).map((r) => r.id);
        }
        const seen = `${where} ${JSON.stringify(s)}: ${res.status} ${res.body.toString().slice(0, 200)}`;
        assert.ok(res.status === 200 || res.status === 400, seen);
        // None of these strings is a boolean CQL2 expression on its own: the filter check refuses each, so a raw
        // text never reaches the database (and a 200 here, with rows no one could predict, fails the test).
        if (where === 'raw-text') assert.equal(res.status, 400, seen);
        if (res.status === 400) {
          assert.equal(res.type, 'application/problem+json');
          // The 400 comes from the service's own check of the filter or parameter, never from a database error
          // (which the pool would also answer with a 400, titled "Invalid tile parameters").
          const problem = res.json();
          const parameter = where === 'param' ? 'name' : 'filter';
          assert.deepEqual({ parameter: problem.parameter, title: problem.title }, { parameter, title: where === 'param' ? 'Invalid parameter' : 'Invalid filter' }, seen);
          // A literal is refused only for what text cannot hold.
          if (where.startsWith('literal') || where === 'param') assert.ok(s.includes('\u0000'), `${where} ${JSON.stringify(s)} refused: ${res.body}`);
        } else if (want) {
          assert.deepEqual(res.json().features.map((f: { id: number }) => f.id), want, `${where} ${JSON.stringify(s)}`);
        } else if (where === 'name-text' || where === 'name-json') {
          // Accepted only where the name is a text column's (the hostile pieces include "name"): nothing equals 'x'.
          assert.ok(s === 'name' || s === 'kind', `a property named ${JSON.stringify(s)} was accepted`);
          assert.equal(res.json().numberMatched, 0);
        }
      }),
      { numRuns: 300 },
    );
    // The table is still there.
    assert.equal((await items('points')).json().numberMatched, 57);
  });

  test('a name with quotes, a semicolon and a comment is matched as data', async () => {
    const res = await filtered(`name = 'O''Brien 2' OR name LIKE '--dash%' OR name = 'semi;colon 3'`, 'cql2-text');
    assert.equal(res.status, 200);
    assert.deepEqual(res.json().features.map((f: { id: number }) => f.id), rows.filter((r) => r.name === "O'Brien 2" || r.name?.startsWith('--dash') || r.name === 'semi;colon 3').map((r) => r.id));
  });
});

describe("GDAL's OGCAPI driver", () => {
  const M = 20037508.342789244;
  // The world in web mercator metres, as the MINX.. open options (documented by the driver as "in SRS of
  // TileMatrixSet") give it: GDAL 3.6 needs them (below), later versions accept them as well.
  const extent = ['-oo', `MINX=${-M}`, '-oo', `MINY=${-M}`, '-oo', `MAXX=${M}`, '-oo', `MAXY=${M}`];
  const gdal = gdalVersion();
  const is36 = ogcapiDriverIs36(gdal);
  const names = (stdout: string) => [...stdout.matchAll(/^\s+name \(String\) = (.*)$/gm)].map((m) => m[1]);

  test('ogrinfo reads every feature of a PostGIS collection', async () => {
    const r = run('ogrinfo', ['-ro', '-al', '-oo', 'API=ITEMS', '-oo', 'PAGE_SIZE=20', `OGCAPI:${server.url}/ogc/collections/points`]);
    assert.equal(r.status, 0, r.stderr + r.stdout.slice(0, 2000));
    assert.match(r.stdout, /Feature Count: 57/);
    // GDAL prints a NULL as "(null)".
    assert.equal([...r.stdout.matchAll(/^OGRFeature\(points\):/gm)].length, 57);
    assert.deepEqual(names(r.stdout).filter((n) => n !== '(null)').sort(), rows.filter((row) => row.name !== null).map((row) => row.name!).sort());
    assert.match(r.stdout, /POINT \(2\.5 -3\.5\)/);
  });

  test("GDAL's MVT driver reads the features of a table's vector tile fetched through the tileset's templated link", async () => {
    // GDAL 3.6's OGCAPI driver cannot open vector tilesets (the next test); its MVT driver reads the tiles, in
    // every version.
    const ts = (await get(`${server.url}/ogc/collections/points/tiles/WebMercatorQuad`)).json();
    const item = ts.links.find((l: { rel: string }) => l.rel === 'item');
    assert.equal(item.type, 'application/vnd.mapbox-vector-tile');
    const tile = await get(item.href.replace('{tileMatrix}', '0').replace('{tileRow}', '0').replace('{tileCol}', '0'), { 'accept-encoding': 'identity' });
    assert.equal(tile.status, 200);
    const dir = mkdtempSync(path.join(os.tmpdir(), 'tsts-ogc-mvt-'));
    try {
      const file = path.join(dir, '0-0-0.pbf');
      writeFileSync(file, tile.body);
      const r = run('ogrinfo', ['-ro', '-al', '-oo', 'X=0', '-oo', 'Y=0', '-oo', 'Z=0', file]);
      assert.equal(r.status, 0, r.stderr);
      assert.match(r.stdout, /using driver `MVT'/);
      assert.equal([...r.stdout.matchAll(/^OGRFeature\(points\):/gm)].length, 57);
      assert.deepEqual(names(r.stdout).sort(), rows.filter((row) => row.name !== null).map((row) => row.name!).sort());
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  test(
    is36
      ? `GDAL ${gdal.text}, the 3.6 OGCAPI driver: ogrinfo -oo API=TILES cannot open a table's vector tileset ("Unable to open datasource")`
      : `GDAL ${gdal.text}, an OGCAPI driver after 3.6: ogrinfo -oo API=TILES reads a table's vector tiles as "Zoom level" layers with every feature`,
    () => {
      const r = run('ogrinfo', ['-ro', '-oo', 'API=TILES', `OGCAPI:${server.url}/ogc/collections/points`, 'Zoom level 0']);
      if (is36) {
        // 3.6's tiles code has no vector branch: it returns without an error, and ogrinfo says only this.
        assert.notEqual(r.status, 0, r.stdout.slice(0, 2000));
        assert.match(r.stderr + r.stdout, /Unable to open datasource/);
        return;
      }
      assert.equal(r.status, 0, r.stderr + r.stdout.slice(0, 2000));
      assert.match(r.stdout, /using driver `OGCAPI'/);
      // The one tile of zoom 0 holds every point of the table (the MVT test above reads the same tile).
      assert.equal([...r.stdout.matchAll(/^OGRFeature\(Zoom level 0\):/gm)].length, 57, r.stdout.slice(0, 2000));
      assert.deepEqual(names(r.stdout).filter((n) => n !== '(null)').sort(), rows.filter((row) => row.name !== null).map((row) => row.name!).sort());
    },
  );

  test(
    is36
      ? `GDAL ${gdal.text}, the 3.6 OGCAPI driver: gdalinfo without the extent options takes the CRS84 extent for metres and fails on an empty window`
      : `GDAL ${gdal.text}, an OGCAPI driver after 3.6: gdalinfo without the extent options transforms the CRS84 extent and opens the whole world`,
    () => {
      const info = run('gdalinfo', [`OGCAPI:${server.url}/ogc/collections/geo`]);
      if (is36) {
        // The world in degrees read as metres is narrower than a pixel of the coarsest matrix (docs/ogc.md).
        assert.notEqual(info.status, 0, info.stdout);
        assert.match(info.stderr, /Computed -srcwin .* has negative width and\/or height/);
        return;
      }
      assert.equal(info.status, 0, info.stderr);
      assert.match(info.stdout, /Driver: OGCAPI/);
      // Zoom 1 of the collection's tiles: two by two 256 px tiles covering web mercator's square.
      assert.match(info.stdout, /Size is 512, 512/);
      assert.match(info.stdout, /Upper Left\s+\(-20037508\.343,\s*20037508\.343\)/);
      assert.match(info.stdout, /Lower Right\s+\(\s*20037508\.343,\s*-20037508\.343\)/);
    },
  );

  test('gdalinfo opens a raster collection through its tileset with the extent options (every version) and reads the tiles it fetches', async () => {
    const info = run('gdalinfo', [...extent, `OGCAPI:${server.url}/ogc/collections/geo`]);
    assert.equal(info.status, 0, info.stderr);
    assert.match(info.stdout, /Driver: OGCAPI/);
    assert.match(info.stdout, /Size is 512, 512/);
    assert.match(info.stdout, /Pseudo-Mercator/);
    const dir = mkdtempSync(path.join(os.tmpdir(), 'tsts-ogc-gdal-'));
    try {
      const out = path.join(dir, 'nw.png');
      const t = run('gdal_translate', ['-q', ...extent, '-srcwin', '0', '0', '256', '256', '-of', 'PNG', `OGCAPI:${server.url}/ogc/collections/geo`, out]);
      assert.equal(t.status, 0, t.stderr);
      // The north-west quarter is tile 1/0/0: the same pixels as the service's tile.
      const tile = await get(`${server.url}/data/geo/1/0/0.png`);
      const a = await sharp(readFileSync(out)).ensureAlpha().raw().toBuffer();
      const b = await sharp(tile.body).ensureAlpha().raw().toBuffer();
      assert.equal(a.length, b.length);
      assert.ok(a.equals(b), 'GDAL read the pixels of the tile');
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
