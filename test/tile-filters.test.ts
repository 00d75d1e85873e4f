// Filtered tiles of a PostGIS table (`filter`, `filter-lang`, `properties` on tile routes) against a real
// PostgreSQL + PostGIS (test/sql/ogc.sql): the tile holds exactly the rows the same CQL2 filter selects through
// OGC API - Features and through a predicate evaluated here; text and JSON spellings share one cache entry; chosen
// properties are the only ones carried; TileJSON hands the filter on; bad filters, filters too long or too costly,
// sources that take none, and injection attempts get a 400 naming the parameter or exactly the rows their values
// select (the table unchanged after each), never a 500; the MLT tile of a filtered view holds the MVT tile's features.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import fc from './helpers/fast-check.js';
import { startPostgres, type PostgresCluster } from './helpers/postgres.js';
import { fixture, startServer, type TestServer } from './helpers/server.js';
import { comparableProps, get, readMlt, readMvt } from './helpers/vector-tiles.js';
import { parseTileFilter } from '../src/serve/tile-filter.js';

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

let db: PostgresCluster;
let server: TestServer;
let dir: string;
let rows: Row[];

before(async () => {
  db = await startPostgres(['seed.sql', 'ogc.sql']);
  dir = mkdtempSync(path.join(os.tmpdir(), 'tsts-tile-filters-'));
  const places = path.join(dir, 'places.geojson');
  writeFileSync(places, JSON.stringify({
    type: 'FeatureCollection',
    features: ['park', 'lake', 'park'].map((kind, i) => ({ type: 'Feature', id: i + 1, properties: { kind, rank: i }, geometry: { type: 'Point', coordinates: [10 * i, 5 * i] } })),
  }));
  server = await startServer({
    toml: `
[[sources]]
id = "world"
type = "pmtiles"
path = "${fixture('vector/omt-planet-z0-1.pmtiles')}"
[[sources]]
id = "places"
type = "geojson"
path = "${places}"
filter_max_length = 40
filter_max_terms = 4
[postgres]
connection_string = "${db.url}"
pool_size = 4
tile_filter_max_length = 300
tile_filter_max_terms = 20
[[postgres.tables]]
id = "points"
table = "ogc_points"
id_column = "id"
[[postgres.tables]]
id = "fixed"
table = "ogc_points"
id_column = "id"
allow_filters = false
`,
  });
  const { rows: r } = await db.sql('SELECT id, name, kind, score, rank, active, ST_X(geom) AS x, ST_Y(geom) AS y FROM ogc_points ORDER BY id');
  rows = r as Row[];
});
after(async () => {
  await server?.stop();
  db?.destroy();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const tileUrl = (query: Record<string, string>, source = 'points', fmt = 'pbf') => `${server.url}/data/${source}/0/0/0.${fmt}?${new URLSearchParams(query)}`;

/** Feature ids of the z0 tile with this query (204: none). */
async function tileIds(query: Record<string, string>): Promise<number[]> {
  const res = await get(tileUrl(query));
  if (res.status === 204) return [];
  assert.equal(res.status, 200, res.body.toString());
  const layer = readMvt(res.body).get('points');
  return (layer?.features ?? []).map((f) => Number(f.id)).sort((a, b) => a - b);
}

async function itemIds(filter: string): Promise<number[]> {
  const res = await fetch(`${server.url}/ogc/collections/points/items?${new URLSearchParams({ filter, limit: '1000' })}`);
  assert.equal(res.status, 200);
  const body = (await res.json()) as { features: { id: number }[] };
  return body.features.map((f) => Number(f.id)).sort((a, b) => a - b);
}

test('a filtered tile holds the rows the filter selects: the same as OGC API - Features and as the predicate evaluated here', async () => {
  const cases: [string, (r: Row) => boolean][] = [
    ["kind = 'park'", (r) => r.kind === 'park'],
    ['score > 10 AND active = true', (r) => r.score !== null && r.score > 10 && r.active === true],
    ["name LIKE '%a%'", (r) => r.name !== null && /a/.test(r.name)],
    ['rank IN (1, 3)', (r) => r.rank === 1 || r.rank === 3],
    ['NOT (kind IS NULL)', (r) => r.kind !== null],
    ['S_INTERSECTS(geom, BBOX(-10, -5, 0, 0))', (r) => r.x >= -10 && r.x <= 0 && r.y >= -5 && r.y <= 0],
    ["name = 'O''Brien 2'", (r) => r.name === "O'Brien 2"],
  ];
  const all = await tileIds({});
  assert.equal(all.length, rows.length, 'the unfiltered tile holds every row');
  for (const [filter, keep] of cases) {
    const want = rows.filter(keep).map((r) => r.id);
    assert.ok(want.length > 0 && want.length < rows.length, `${filter} selects some rows, not all`);
    assert.deepEqual(await tileIds({ filter }), want, filter);
    assert.deepEqual(await itemIds(filter), want, `${filter} (items)`);
  }
});

test('text and JSON spellings of one filter, and properties in another order, are one tile: the same ETag and bytes', async () => {
  const text = await get(tileUrl({ filter: "kind = 'cafe' AND rank >= 2", properties: 'name,kind' }));
  const json = await get(
    tileUrl({
      filter: JSON.stringify({ op: 'and', args: [{ op: '=', args: [{ property: 'kind' }, 'cafe'] }, { op: '>=', args: [{ property: 'rank' }, 2] }] }),
      'filter-lang': 'cql2-json',
      properties: 'kind, name',
    }),
  );
  assert.equal(text.status, 200);
  assert.equal(json.status, 200);
  assert.equal(json.headers.etag, text.headers.etag);
  assert.deepEqual(json.body, text.body);
  const plain = await get(tileUrl({}));
  assert.notEqual(plain.headers.etag, text.headers.etag, 'the unfiltered tile is another cache entry');
});

test('properties: only the chosen ones are carried, none with an empty list; the feature ids stay', async () => {
  const some = readMvt((await get(tileUrl({ properties: 'name,score' }))).body).get('points')!;
  assert.equal(some.features.length, rows.length);
  for (const f of some.features) assert.deepEqual(Object.keys(f.properties).sort(), Object.keys(f.properties).filter((k) => k === 'name' || k === 'score').sort());
  assert.ok(some.features.some((f) => 'name' in f.properties && 'score' in f.properties));
  const none = readMvt((await get(tileUrl({ properties: '' }))).body).get('points')!;
  assert.ok(none.features.every((f) => Object.keys(f.properties).length === 0 && f.id !== undefined));
  // MLT answers the same view: the shops only, with the same ids, geometry and chosen properties as the MVT tile.
  const view = { filter: "kind = 'shop'", properties: 'name,kind' };
  const mlt = await get(tileUrl(view, 'points', 'mlt'));
  assert.equal(mlt.status, 200);
  const mltLayer = readMlt(mlt.body).get('points');
  assert.ok(mltLayer, 'the MLT tile has the points layer');
  const shops = rows.filter((r) => r.kind === 'shop');
  assert.deepEqual(mltLayer.features.map((f) => Number(f.id)).sort((a, b) => a - b), shops.map((r) => r.id));
  const mvtLayer = readMvt((await get(tileUrl(view))).body).get('points')!;
  const byId = (layer: typeof mvtLayer) => new Map(layer.features.map((f) => [Number(f.id), f]));
  const mvtById = byId(mvtLayer);
  for (const [id, f] of byId(mltLayer)) {
    const m = mvtById.get(id)!;
    assert.deepEqual(f.geometry, m.geometry, `feature ${id}: geometry`);
    assert.deepEqual(comparableProps(f.properties), comparableProps(m.properties), `feature ${id}: properties`);
    const row = shops.find((r) => r.id === id)!;
    assert.deepEqual(comparableProps(f.properties), comparableProps({ kind: row.kind, name: row.name }), `feature ${id}: its row's name and kind, nothing else`);
  }
});

test('TileJSON of a filtered view: its tile URL carries the filter, its layer lists the chosen properties', async () => {
  const res = await fetch(`${server.url}/data/points.json?${new URLSearchParams({ filter: "kind = 'park'", properties: 'name' })}`);
  assert.equal(res.status, 200);
  const doc = (await res.json()) as { tiles: string[]; vector_layers: { id: string; fields: Record<string, string> }[] };
  const url = new URL(doc.tiles[0].replace('{z}/{x}/{y}', '0/0/0'));
  assert.equal(url.searchParams.get('filter'), "kind = 'park'");
  assert.equal(url.searchParams.get('properties'), 'name');
  assert.deepEqual(Object.keys(doc.vector_layers[0].fields), ['name']);
  const viaJson = await get(url.toString());
  assert.deepEqual(readMvt(viaJson.body).get('points')!.features.map((f) => Number(f.id)).sort((a, b) => a - b), rows.filter((r) => r.kind === 'park').map((r) => r.id));
});

test('bad input: 400 problem+json naming the parameter; never a 500', async () => {
  const cases: [Record<string, string>, string, RegExp, string?][] = [
    [{ filter: 'kind = ' }, 'filter', /Invalid filter/],
    [{ filter: "nosuch = 'x'" }, 'filter', /Invalid filter/],
    [{ filter: "score = 'text'" }, 'filter', /Invalid filter/],
    [{ filter: "kind = 'park'", 'filter-lang': 'sql' }, 'filter-lang', /Invalid filter/],
    [{ 'filter-lang': 'cql2-text' }, 'filter-lang', /Invalid filter/],
    [{ properties: 'name,nosuch' }, 'properties', /Invalid properties/],
    [{ properties: 'name;drop' }, 'properties', /Invalid properties/],
    [{ filter: `name = '${'x'.repeat(400)}'` }, 'filter', /Filter too long/],
    [{ filter: Array.from({ length: 12 }, (_, i) => `rank = ${i}`).join(' OR ') }, 'filter', /Filter too costly/],
    [{ filter: "kind = 'park'" }, '', /Filters not available/, 'world'],
    [{ filter: "kind = 'park'" }, '', /Filters not available/, 'fixed'],
  ];
  for (const [query, parameter, title, source] of cases) {
    const res = await get(tileUrl(query, source ?? 'points'));
    assert.equal(res.status, 400, `${JSON.stringify(query)} on ${source ?? 'points'}: ${res.body}`);
    assert.match(String(res.headers['content-type']), /application\/problem\+json/);
    const body = JSON.parse(res.body.toString());
    assert.match(body.title, title, JSON.stringify(query));
    if (parameter) assert.equal(body.parameter, parameter, JSON.stringify(query));
    assert.doesNotMatch(body.detail, /at .*\.(js|ts):\d+|syntax error at/i, 'no internal text');
  }
  // The unfiltered source that forbids filters still serves its tiles.
  assert.equal((await get(tileUrl({}, 'fixed'))).status, 200);
});

test("a data-file source has its own limits (filter_max_length, filter_max_terms), not the [postgres] section's", async () => {
  const long = `kind = 'park' OR kind = '${'x'.repeat(20)}'`;
  assert.ok(long.length > 40 && long.length <= 300);
  const costly = 'rank = 0 OR rank = 1 OR rank = 2';
  const body = async (query: Record<string, string>, source: string) => {
    const res = await get(tileUrl(query, source));
    return { status: res.status, json: res.status === 400 ? JSON.parse(res.body.toString()) : undefined, body: res.body };
  };
  // Within the table's limits (300 characters, 20 terms), past the file source's.
  assert.ok([200, 204].includes((await body({ filter: long }, 'points')).status));
  const tooLong = await body({ filter: long }, 'places');
  assert.equal(tooLong.status, 400);
  assert.match(tooLong.json.title, /Filter too long/);
  assert.match(tooLong.json.detail, /at most 40/);
  assert.equal(tooLong.json.parameter, 'filter');
  const tooCostly = await body({ filter: costly }, 'places');
  assert.equal(tooCostly.status, 400);
  assert.match(tooCostly.json.title, /Filter too costly/);
  // Within its own limits the file source filters: the two parks of the three places.
  const ok = await body({ filter: "kind = 'park'" }, 'places');
  assert.equal(ok.status, 200);
  assert.deepEqual((readMvt(ok.body).get('places')?.features ?? []).map((f) => Number(f.id)).sort(), [1, 3]);
});

test('injection attempts reach no SQL: each gets exactly the rows its literal values select, or a 400, and the table is unchanged', async () => {
  const table = async () => (await db.sql('SELECT id, name, kind, score, rank, active, ST_X(geom) AS x, ST_Y(geom) AS y FROM ogc_points ORDER BY id')).rows as Row[];
  const named = (name: string) => (r: Row) => r.name === name;
  // Rows whose names hold SQL's own characters (test/sql/ogc.sql): a comment marker, a semicolon, a quote.
  const dash = rows.find((r) => r.name?.startsWith('--'))!.name!;
  const semi = rows.find((r) => r.name?.includes(';'))!.name!;
  const quote = rows.find((r) => r.name?.includes("'"))!.name!;
  const cases: [string, ((r: Row) => boolean) | 'refused'][] = [
    // Quotes end nowhere but in the literal: the whole text is one value, which no row has.
    ["name = 'x''; DROP TABLE ogc_points; --'", named("x'; DROP TABLE ogc_points; --")],
    ["kind = 'park'' OR ''1''=''1'", named("park' OR '1'='1")],
    // A comparison of two literals is CQL2, and true: every row, as PostgreSQL gives for name = 'x' OR 1 = 1.
    ["name = 'x' OR 1=1", () => true],
    // SQL's characters inside a literal are data: the one row of that name.
    [`name = '${dash}'`, named(dash)],
    [`name = '${semi}'`, named(semi)],
    [`name = '${quote.replaceAll("'", "''")}'`, named(quote)],
    ["name LIKE '%;%'", (r) => r.name !== null && r.name.includes(';')],
    // Outside a literal, SQL's statement separator, comment and a stray parenthesis are not CQL2.
    ['rank = 1; DELETE FROM ogc_points', 'refused'],
    ["kind = 'park' --", 'refused'],
    ["kind = 'park') OR (1=1", 'refused'],
    ['"name; DROP TABLE ogc_points" = 1', 'refused'],
  ];
  for (const [filter, want] of cases) {
    const res = await get(tileUrl({ filter }));
    if (want === 'refused') {
      assert.equal(res.status, 400, `${filter}: ${res.body}`);
      assert.equal(JSON.parse(res.body.toString()).parameter, 'filter', filter);
    } else {
      const ids = rows.filter(want).map((r) => r.id);
      if (!ids.length) assert.equal(res.status, 204, `${filter}: no row matches, so no tile (${res.status})`);
      else {
        assert.equal(res.status, 200, `${filter}: ${res.body}`);
        assert.deepEqual(readMvt(res.body).get('points')!.features.map((f) => Number(f.id)).sort((a, b) => a - b), ids, `${filter}: exactly the rows it selects`);
      }
      // The same rows through OGC API - Features, whose SQL is built the same way.
      assert.deepEqual(await itemIds(filter), ids, `${filter} (items)`);
    }
    assert.deepEqual(await table(), rows, `${filter}: the table is as it was`);
  }
  // The names of SQL's characters are some rows, not all: the cases above could tell a leak from a match.
  assert.ok(rows.filter(named(dash)).length === 1 && rows.filter(named(semi)).length === 1 && rows.length > 10);
});

test('the filter parser never throws, names the parameter it refuses, and gives one key to one filter however written (fast-check)', () => {
  const limits = { maxLength: 500, maxTerms: 40 };
  fc.assert(
    fc.property(fc.dictionary(fc.constantFrom('filter', 'filter-lang', 'properties', 'other'), fc.string({ maxLength: 60 })), (query) => {
      const r = parseTileFilter(new URLSearchParams(query), limits);
      if (!r.ok) assert.ok(['filter', 'filter-lang', 'properties'].includes(r.parameter) && r.detail.length > 0);
    }),
    { numRuns: 400 },
  );
  fc.assert(
    fc.property(fc.uniqueArray(fc.constantFrom('name', 'kind', 'score', 'rank', 'active'), { minLength: 1 }), (names) => {
      const a = parseTileFilter(new URLSearchParams({ filter: 'rank > 1', properties: names.join(',') }), limits);
      const b = parseTileFilter(new URLSearchParams({ filter: ' rank>1 ', properties: [...names].reverse().join(' , ') }), limits);
      assert.ok(a.ok && b.ok && a.filter && b.filter);
      assert.equal(a.filter.key, b.filter.key);
    }),
    { numRuns: 200 },
  );
});
