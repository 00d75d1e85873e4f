// OGC API - Features Part 4 on writable PostGIS tables, through the real server and a real PostgreSQL + PostGIS:
// every method and status (201/200/204, 400 naming the member, 401/403, 404, 405 with Allow, 409 naming the
// constraint, 412, 413, 415, 428), ETags that If-Match checks, two editors sending the same ETag at once (exactly
// one wins, the row is the winner's), a FeatureCollection rolled back whole by one bad member, and the expiry of
// what a write touched (a cached vector tile shows the edit right after the answer, at the old place and the new).
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync } from 'node:fs';
import { request } from 'node:http';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { Validator } from '@seriousme/openapi-schema-validator';
import { hashKey } from '../src/auth/keys.js';
import { scopeOf } from '../src/auth/jwt.js';
import { WRITE_CONFORMANCE } from '../src/ogc/documents.js';
import { call as callAt, tileOf } from './helpers/feature-writes.js';
import { startPostgres, type PostgresCluster } from './helpers/postgres.js';
import { fixture, startServer, type TestServer } from './helpers/server.js';
import { get as getTile, readMvt } from './helpers/vector-tiles.js';

const EDITOR = 'tsk_editor-key-for-the-edits-test-000000000000';
const READER = 'tsk_reader-key-for-the-edits-test-000000000000';

let db: PostgresCluster;
let server: TestServer;
let scratch: string;

const call = (method: string, p: string, body?: unknown, headers: Record<string, string> = {}) => callAt(server.url, method, p, body, headers);

const editor = { authorization: `Bearer ${EDITOR}` };
const point = (lon: number, lat: number) => ({ type: 'Point', coordinates: [lon, lat] });
const feature = (properties: Record<string, unknown>, geometry: unknown = point(10, 20)) => ({ type: 'Feature', properties, geometry });


before(async () => {
  db = await startPostgres(['seed.sql']);
  await db.sql(`
    CREATE TABLE public.edit_points (
      id serial PRIMARY KEY,
      name text UNIQUE,
      kind varchar(8),
      rank integer CONSTRAINT edit_points_rank_check CHECK (rank >= 0),
      day date,
      tags jsonb,
      geom geometry(Point, 4326)
    );
    CREATE INDEX ON public.edit_points USING gist (geom);
    INSERT INTO public.edit_points (name, kind, rank, geom) VALUES ('first', 'cafe', 1, ST_SetSRID(ST_MakePoint(1, 1), 4326));
    CREATE TABLE public.edit_areas (gid bigint PRIMARY KEY, label text NOT NULL, geom geometry(MultiPolygon, 3857));`);
  scratch = mkdtempSync(path.join(os.tmpdir(), 'tsts-ogc-edits-'));
  server = await startServer({
    // Info: the writes' log lines are checked.
    env: { LOG_LEVEL: 'info' },
    toml: `
[server]
disable_render = true

[[sources]]
id = "omt"
type = "pmtiles"
path = "${fixture('vector/omt-planet-z0-1.pmtiles')}"

[auth]
[[auth.keys]]
name = "editor"
hash = "${hashKey(EDITOR)}"
write = ["edit*", "areas"]
[[auth.keys]]
name = "reader"
hash = "${hashKey(READER)}"

[postgres]
connection_string = "${db.url}"
pool_size = 6
write_max_bytes = 4096

[[postgres.tables]]
id = "edits"
table = "edit_points"
writable = true

[[postgres.tables]]
id = "edits_strict"
table = "edit_points"
writable = true
require_if_match = true

[[postgres.tables]]
id = "areas"
table = "edit_areas"
writable = true

[[postgres.tables]]
id = "places"
table = "places"
id_column = "id"

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

const rowCount = async () => Number((await db.sql('SELECT count(*) AS n FROM edit_points')).rows[0].n);

describe('what the service declares', () => {
  test('conformance lists the Part 4 classes; the OpenAPI document has the write operations; OPTIONS says which methods', async () => {
    const conf = (await call('GET', '/ogc/conformance?f=json')).json();
    for (const c of WRITE_CONFORMANCE) assert.ok(conf.conformsTo.includes(c), c);
    const api = (await call('GET', '/openapi.json')).json();
    assert.ok(api.paths['/ogc/collections/{collectionId}/items'].post, 'POST items documented');
    assert.ok(api.paths['/ogc/collections/{collectionId}/items/{featureId}'].patch, 'PATCH item documented');
    // The OpenAPI 3.0 document (the oas30 classes) with the write operations is still a valid one.
    const api30 = (await call('GET', '/ogc/api', undefined, { accept: 'application/vnd.oai.openapi+json;version=3.0' })).json();
    assert.ok(api30.paths['/ogc/collections/{collectionId}/items'].post);
    const valid = await new Validator().validate(api30);
    assert.equal(valid.valid, true, JSON.stringify(valid.errors)?.slice(0, 2000));
    const w = await call('OPTIONS', '/ogc/collections/edits/items/1');
    assert.equal(w.status, 204);
    assert.deepEqual(w.headers.get('allow')?.split(', '), ['GET', 'HEAD', 'PUT', 'PATCH', 'DELETE', 'OPTIONS']);
    assert.equal((await call('OPTIONS', '/ogc/collections/edits/items')).headers.get('allow'), 'GET, HEAD, POST, OPTIONS');
    assert.equal((await call('OPTIONS', '/ogc/collections/places/items')).headers.get('allow'), 'GET, HEAD, OPTIONS');
    // A browser's preflight for a write is allowed where CORS is configured (the default: any origin).
    const pre = await call('OPTIONS', '/ogc/collections/edits/items/1', undefined, { origin: 'https://editor.example', 'access-control-request-method': 'PATCH', 'access-control-request-headers': 'if-match, content-type' });
    assert.equal(pre.status, 204);
    assert.match(pre.headers.get('access-control-allow-methods') ?? '', /PATCH/);
    assert.match(pre.headers.get('access-control-allow-methods') ?? '', /PUT/);
  });

  test('a JWT grants writes through its scope claim`s `write` or an OAuth scope `write:{pattern}`', () => {
    const s = scopeOf({ sources: '*', write: ['roads'] }, 'openid write:edit* profile');
    assert.ok(s.write('roads') && s.write('edits') && s.write('edit_x'));
    assert.ok(!s.write('places'));
    assert.ok(!scopeOf({ sources: '*' }, 'write: read:x').write('x'), 'no write grant without write members');
  });
});

describe('access', () => {
  test('writes need a credential with a write grant: 401 without or with a wrong one, 403 with a reader key', async () => {
    const none = await call('POST', '/ogc/collections/edits/items', feature({ name: 'nobody' }));
    assert.equal(none.status, 401);
    assert.match(none.headers.get('www-authenticate') ?? '', /^Bearer realm="tileserver-ts"$/);
    const wrong = await call('POST', '/ogc/collections/edits/items', feature({ name: 'wrong' }), { authorization: 'Bearer tsk_not-a-configured-key' });
    assert.equal(wrong.status, 401);
    assert.match(wrong.headers.get('www-authenticate') ?? '', /invalid_token/);
    const reader = await call('DELETE', '/ogc/collections/edits/items/1', undefined, { authorization: `Bearer ${READER}` });
    assert.equal(reader.status, 403);
    assert.match(reader.headers.get('www-authenticate') ?? '', /insufficient_scope/);
    assert.equal(await rowCount(), 1, 'nothing was written');
    // The key's `?key=` form works as the header does.
    const viaQuery = await call('OPTIONS', `/ogc/collections/edits/items?key=${EDITOR}`);
    assert.equal(viaQuery.status, 204);
  });

  test('read-only collections answer 405 with Allow, even to an editor', async () => {
    const r = await call('POST', '/ogc/collections/places/items', feature({ name: 'x' }), editor);
    assert.equal(r.status, 405);
    assert.equal(r.headers.get('allow'), 'GET, HEAD, OPTIONS');
    const d = await call('DELETE', '/ogc/collections/places/items/1', undefined, editor);
    assert.equal(d.status, 405);
    assert.equal(d.headers.get('allow'), 'GET, HEAD, OPTIONS');
    assert.equal((await call('POST', '/ogc/collections/omt/items', feature({}), editor)).status, 404, 'an archive has no items at all');
  });
});

describe('create, read, replace, update, delete', () => {
  test('POST -> 201 with Location and ETag; GET carries the same strong ETag; every write answer is no-store', async () => {
    const r = await call('POST', '/ogc/collections/edits/items', feature({ name: 'second', kind: 'park', rank: 2, day: '2026-12-06', tags: { a: [1, 'b'] } }, point(13.4, 52.5)), editor);
    assert.equal(r.status, 201, r.text);
    assert.equal(r.headers.get('cache-control'), 'no-store');
    const location = r.headers.get('location')!;
    assert.match(location, /\/ogc\/collections\/edits\/items\/\d+$/);
    const etag = r.headers.get('etag')!;
    assert.match(etag, /^"[0-9a-f]{32}"$/);
    const f = r.json();
    assert.deepEqual(f.properties, { id: f.id, name: 'second', kind: 'park', rank: 2, day: f.properties.day, tags: { a: [1, 'b'] } });
    assert.deepEqual(f.geometry, point(13.4, 52.5));
    const got = await fetch(location, { headers: { accept: 'application/geo+json' } });
    assert.equal(got.status, 200);
    assert.equal(got.headers.get('etag'), etag);
    assert.equal(got.headers.get('cache-control'), 'no-cache', 'a writable table`s feature is revalidated');
    const again = await fetch(location, { headers: { 'if-none-match': etag } });
    assert.equal(again.status, 304);
    assert.match(server.output(), new RegExp(`"principal":"editor".*"feature":"${f.id}"|"feature":"${f.id}".*"principal":"editor"`), 'the write is logged with its principal and id');
  });

  test('the Location of a create is spelled `Location` on the wire, as QGIS 3.40 looks for it (a client comparing names exactly)', async () => {
    const body = JSON.stringify(feature({ name: 'spelled', rank: 3 }));
    const raw = await new Promise<string[]>((resolve, reject) => {
      const req = request(`${server.url}/ogc/collections/edits/items`, { method: 'POST', headers: { ...editor, 'content-type': 'application/geo+json', 'content-length': Buffer.byteLength(body) } }, (res) => {
        res.resume();
        res.on('end', () => (res.statusCode === 201 ? resolve(res.rawHeaders) : reject(new Error(`status ${res.statusCode}`))));
      });
      req.on('error', reject);
      req.end(body);
    });
    const names = raw.filter((_, i) => i % 2 === 0);
    assert.ok(names.includes('Location'), `header names sent: ${names.join(', ')}`);
    assert.ok(!names.includes('location'), 'one Location, not two spellings');
    assert.match(raw[names.indexOf('Location') * 2 + 1], /\/ogc\/collections\/edits\/items\/\d+$/);
  });

  test('a null id column is no id: POST with properties.id null (as QGIS sends a new feature) lets the database number it', async () => {
    const r = await call('POST', '/ogc/collections/edits/items', feature({ id: null, name: 'from-a-form', rank: 2 }), editor);
    assert.equal(r.status, 201, r.text);
    const id = r.json().id;
    assert.equal(typeof id, 'number');
    assert.equal((await db.sql('SELECT name FROM edit_points WHERE id = $1', [id])).rows[0].name, 'from-a-form');
    const bad = await call('POST', '/ogc/collections/edits/items', feature({ id: true, name: 'x' }), editor);
    assert.equal(bad.status, 400, 'an id of the wrong type is still refused');
  });

  test('PUT replaces (left-out properties become null) with If-Match; a stale ETag is 412; PATCH merges; DELETE is 204', async () => {
    const created = await call('POST', '/ogc/collections/edits/items', feature({ name: 'third', kind: 'shop', rank: 3 }), editor);
    const id = created.json().id;
    const item = `/ogc/collections/edits/items/${id}`;
    const e1 = created.headers.get('etag')!;
    const put = await call('PUT', item, feature({ name: 'third-b' }, point(-3, 4)), { ...editor, 'if-match': e1 });
    assert.equal(put.status, 200, put.text);
    assert.deepEqual(put.json().properties, { id, name: 'third-b', kind: null, rank: null, day: null, tags: null });
    const e2 = put.headers.get('etag')!;
    assert.notEqual(e2, e1);
    const stale = await call('PUT', item, feature({ name: 'lost' }), { ...editor, 'if-match': e1 });
    assert.equal(stale.status, 412);
    assert.equal(stale.headers.get('etag'), e2, 'a 412 tells the current ETag');
    const patch = await call('PATCH', item, { properties: { kind: 'bar', name: null }, geometry: { coordinates: [5, 6] } }, { ...editor, 'content-type': 'application/merge-patch+json', 'if-match': e2 });
    assert.equal(patch.status, 200, patch.text);
    assert.deepEqual(patch.json().properties, { id, name: null, kind: 'bar', rank: null, day: null, tags: null });
    assert.deepEqual(patch.json().geometry, point(5, 6));
    const minimal = await call('PATCH', item, { properties: { rank: 7 } }, { ...editor, 'content-type': 'application/merge-patch+json', prefer: 'return=minimal' });
    assert.equal(minimal.status, 204);
    assert.match(minimal.headers.get('etag') ?? '', /^"[0-9a-f]{32}"$/);
    assert.equal((await db.sql('SELECT rank FROM edit_points WHERE id = $1', [id])).rows[0].rank, 7);
    const idChange = await call('PUT', item, { ...feature({ name: 'x' }), id: 999999 }, editor);
    assert.equal(idChange.status, 400);
    assert.equal(idChange.json().member, 'id');
    assert.equal((await call('DELETE', item, undefined, { ...editor, 'if-match': e1 })).status, 412);
    const any = await call('PATCH', item, { properties: { rank: 8 } }, { ...editor, 'content-type': 'application/merge-patch+json', 'if-match': '*' });
    assert.equal(any.status, 200, `If-Match: * on a feature that exists: ${any.text}`);
    const del = await call('DELETE', item, undefined, editor);
    assert.equal(del.status, 204);
    assert.equal((await call('GET', item)).status, 404);
    assert.equal((await call('DELETE', item, undefined, editor)).status, 404);
    // RFC 9110 13.2.1: a precondition is not evaluated when the answer without it would be neither 2xx nor 412, so a
    // feature that is not there is 404 whatever If-Match says, `*` included (docs/editing.md).
    for (const [m, body, type] of [['PUT', feature({ name: 'gone' }), 'application/geo+json'], ['PATCH', { properties: { rank: 1 } }, 'application/merge-patch+json'], ['DELETE', undefined, undefined]] as const) {
      const r = await call(m, item, body, { ...editor, 'if-match': '*', ...(type ? { 'content-type': type } : {}) });
      assert.equal(r.status, 404, `${m} If-Match: * of a missing feature: ${r.text}`);
      assert.equal(r.headers.get('content-type'), 'application/problem+json');
    }
    assert.equal((await call('PUT', '/ogc/collections/edits/items/not-a-number', feature({}), editor)).status, 404);
  });

  test('require_if_match: PUT, PATCH and DELETE without If-Match are 428', async () => {
    for (const m of ['PUT', 'PATCH', 'DELETE']) {
      const r = await call(m, '/ogc/collections/edits_strict/items/1', m === 'DELETE' ? undefined : feature({ name: 'first' }), editor);
      assert.equal(r.status, 428, m);
      assert.equal(r.json().member, 'If-Match');
    }
    const etag = (await call('GET', '/ogc/collections/edits_strict/items/1')).headers.get('etag')!;
    const ok = await call('PATCH', '/ogc/collections/edits_strict/items/1', { properties: { rank: 4 } }, { ...editor, 'if-match': etag, 'content-type': 'application/merge-patch+json' });
    assert.equal(ok.status, 200, ok.text);
  });

  test('a geometry in another SRID and a multi type: a Polygon goes into a MultiPolygon column in web mercator and reads back in CRS84', async () => {
    const ring = [[10, 10], [11, 10], [11, 11], [10, 11], [10, 10]];
    const r = await call('POST', '/ogc/collections/areas/items', { type: 'Feature', id: 42, properties: { label: 'square' }, geometry: { type: 'Polygon', coordinates: [ring] } }, editor);
    assert.equal(r.status, 201, r.text);
    assert.match(r.headers.get('location') ?? '', /\/items\/42$/);
    const g = r.json().geometry;
    assert.equal(g.type, 'MultiPolygon');
    g.coordinates[0][0].forEach((p: number[], i: number) => p.forEach((v, j) => assert.ok(Math.abs(v - ring[i][j]) < 1e-6, `${v} ~ ${ring[i][j]}`)));
    assert.equal((await db.sql('SELECT ST_SRID(geom) AS s FROM edit_areas WHERE gid = 42')).rows[0].s, 3857);
  });
});

describe('refusals name what was wrong', () => {
  const post = (body: unknown, headers: Record<string, string> = {}) => call('POST', '/ogc/collections/edits/items', body, { ...editor, ...headers });
  const cases: [string, unknown, number, string][] = [
    ['an unknown property', feature({ nope: 1 }), 400, 'properties.nope'],
    ['a string for an integer', feature({ rank: 'x' }), 400, 'properties.rank'],
    ['a fraction for an integer', feature({ rank: 1.5 }), 400, 'properties.rank'],
    ['a string too long for varchar(8)', feature({ kind: 'much too long' }), 400, 'properties.kind'],
    ['a longitude out of range', feature({}, point(200, 0)), 400, 'geometry.coordinates'],
    ['a latitude out of range', feature({}, point(0, -91)), 400, 'geometry.coordinates'],
    ['a LineString for a Point column', feature({}, { type: 'LineString', coordinates: [[0, 0], [1, 1]] }), 400, 'geometry.type'],
    ['a 3D position in a 2D column', feature({}, { type: 'Point', coordinates: [1, 2, 3] }), 400, 'geometry'],
    ['no geometry member', { type: 'Feature', properties: {} }, 400, 'geometry'],
    ['not a Feature', { type: 'Point', coordinates: [0, 0] }, 400, 'type'],
    ['a date the database refuses', feature({ day: 'not a date' }), 400, '(body)'],
    ['a CHECK constraint', feature({ rank: -1 }), 409, ''],
    ['a unique constraint', feature({ name: 'first' }), 409, ''],
  ];
  for (const [what, body, status, member] of cases) {
    test(`${what}: ${status}${member ? ` naming ${member}` : ''}`, async () => {
      const before = await rowCount();
      const r = await post(body);
      assert.equal(r.status, status, r.text);
      assert.equal(r.headers.get('content-type'), 'application/problem+json');
      const p = r.json();
      if (status === 400 && member !== '(body)') assert.ok(String(p.member).startsWith(member), `member ${p.member}`);
      if (what === 'a date the database refuses') assert.equal(p.property, 'day');
      if (what === 'a CHECK constraint') assert.equal(p.constraint, 'edit_points_rank_check');
      if (what === 'a unique constraint') assert.equal(p.constraint, 'edit_points_name_key');
      assert.equal(await rowCount(), before, 'nothing written');
    });
  }

  test('media type 415, a Content-Crs the collection does not list 400, a body over write_max_bytes 413, a body that is not JSON 400', async () => {
    assert.equal((await post(feature({}), { 'content-type': 'text/plain' })).status, 415);
    const crs = await post(feature({}), { 'content-crs': '<http://www.opengis.net/def/crs/EPSG/0/2056>' });
    assert.equal(crs.status, 400);
    assert.equal(crs.json().member, 'Content-Crs');
    assert.equal((await post(feature({}), { 'content-crs': '<http://www.opengis.net/def/crs/OGC/1.3/CRS84>' })).status, 201);
    assert.equal((await post(feature({ name: 'x'.repeat(5000) }))).status, 413);
    assert.equal((await post('{"type": "Feature",')).status, 400);
  });

  test('a FeatureCollection is one transaction: one member breaking a constraint leaves nothing; a bad member is named', async () => {
    const before = await rowCount();
    const members = [feature({ name: 'c1' }), feature({ name: 'c2' }), feature({ name: 'c3', rank: -5 })];
    const r = await post({ type: 'FeatureCollection', features: members });
    assert.equal(r.status, 409, r.text);
    assert.equal(r.json().constraint, 'edit_points_rank_check');
    assert.equal(await rowCount(), before, 'rolled back whole');
    const named = await post({ type: 'FeatureCollection', features: [feature({ name: 'c1' }), feature({ rank: 'x' })] });
    assert.equal(named.status, 400);
    assert.equal(named.json().member, 'features[1].properties.rank');
    const ok = await post({ type: 'FeatureCollection', features: members.slice(0, 2) });
    assert.equal(ok.status, 201, ok.text);
    assert.equal(ok.json().numberCreated, 2);
    assert.equal(await rowCount(), before + 2);
  });
});

describe('concurrent edits', () => {
  test('two PUTs with the same If-Match at once: exactly one wins, the other is 412, the row is the winner`s (10 rounds)', async () => {
    const id = (await call('POST', '/ogc/collections/edits/items', feature({ name: 'contended' }), editor)).json().id;
    const item = `/ogc/collections/edits/items/${id}`;
    for (let round = 0; round < 10; round++) {
      const etag = (await call('GET', item)).headers.get('etag')!;
      const names = [`a${round}`, `b${round}`];
      const answers = await Promise.all(names.map((name) => call('PUT', item, feature({ name, rank: round }), { ...editor, 'if-match': etag })));
      assert.deepEqual(answers.map((a) => a.status).sort(), [200, 412], `round ${round}`);
      const winner = names[answers.findIndex((a) => a.status === 200)];
      assert.equal((await db.sql('SELECT name FROM edit_points WHERE id = $1', [id])).rows[0].name, winner);
    }
  });

  test('PATCHes without If-Match of different properties at once all land (each re-reads what it lost to)', async () => {
    const id = (await call('POST', '/ogc/collections/edits/items', feature({ name: 'patched' }), editor)).json().id;
    const item = `/ogc/collections/edits/items/${id}`;
    const answers = await Promise.all([call('PATCH', item, { properties: { kind: 'k' } }, { ...editor, 'content-type': 'application/merge-patch+json' }), call('PATCH', item, { properties: { rank: 9 } }, { ...editor, 'content-type': 'application/merge-patch+json' })]);
    assert.deepEqual(answers.map((a) => a.status), [200, 200]);
    const row = (await db.sql('SELECT kind, rank FROM edit_points WHERE id = $1', [id])).rows[0];
    assert.deepEqual(row, { kind: 'k', rank: 9 });
  });
});

describe('what a write touched is expired', () => {
  const names = async (t: { z: number; x: number; y: number }) => {
    const r = await getTile(`${server.url}/data/edits/${t.z}/${t.x}/${t.y}.pbf`);
    if (r.status === 204) return [];
    assert.equal(r.status, 200);
    return (readMvt(r.body).get('edits')?.features ?? []).map((f) => String(f.properties.name)).sort();
  };

  test('a cached tile shows an edit right after the answer, where the feature was and where it went', async () => {
    const from = [30.5, 50.45];
    const to = [31.5, 50.45];
    const a = tileOf(from[0], from[1], 12);
    const b = tileOf(to[0], to[1], 12);
    assert.notDeepEqual(a, b);
    const created = await call('POST', '/ogc/collections/edits/items', feature({ name: 'kyiv-old' }, point(from[0], from[1])), editor);
    assert.equal(created.status, 201);
    const item = new URL(created.headers.get('location')!).pathname;
    assert.deepEqual(await names(a), ['kyiv-old'], 'seen (and cached) after the create');
    assert.deepEqual(await names(a), ['kyiv-old']);
    // Changed behind the service's back: the cached tile does not see it (the cache is what the expiry must reach).
    await db.sql(`UPDATE edit_points SET name = 'kyiv-sneaky' WHERE name = 'kyiv-old'`);
    assert.deepEqual(await names(a), ['kyiv-old'], 'answered from the cache');
    assert.deepEqual(await names(b), [], 'the destination tile, cached empty');
    const moved = await call('PATCH', item, { properties: { name: 'kyiv-new' }, geometry: point(to[0], to[1]) }, { ...editor, 'content-type': 'application/merge-patch+json' });
    assert.equal(moved.status, 200, moved.text);
    assert.deepEqual(await names(a), [], 'the old place no longer shows it');
    assert.deepEqual(await names(b), ['kyiv-new'], 'the new place shows it');
    assert.equal((await call('DELETE', item, undefined, editor)).status, 204);
    assert.deepEqual(await names(b), [], 'deleted: gone from the tile');
  });
});
