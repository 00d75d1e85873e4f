// Closed means unseen (docs/access.md): a closed id and an id that does not exist get the same answer, byte for
// byte, on every route that names an id, for every kind of client: none, an invalid key, a valid key that does
// not cover the id, a valid key that covers everything. The routes come from the route table itself
// (src/routes/public-routes.ts): a new route that reads a source, collection or style is compared without editing
// this file, and one whose path this file cannot fill fails here. The MCP tools that take an id and the spatial
// query (its source named in the body) are compared beside them, and a property sends random ids, spelt with
// random percent-escapes, through random routes.
//
// What may differ between two answers is what differs between any two answers: `Date`, the value of `X-Request-Id`
// (every answer's own, src/http/access-log.ts), and the remaining count and reset time of `RateLimit` (each request
// spends one; the test checks that the second spent exactly one more).
//
// Two servers (no renderer: the gate answers a closed or unknown id before any route, mounted or not):
// `default_access = "key"` and `default_access = "public"`, each with rate limits whose window is a day, so that
// the remaining count moves by exactly one per request.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import { randomUUID } from 'node:crypto';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import fc from './helpers/fast-check.js';
import { fixture, startServer, type TestServer } from './helpers/server.js';
import { tempDir } from './helpers/foundation.js';
import { multipartBody, postMultipart } from './helpers/upload.js';
import { newKey } from '../src/auth/keys.js';
import { PUBLIC_ROUTES } from '../src/routes/public-routes.js';
import { matchPublic } from '../src/routes/request-route.js';
import type { RouteDeclaration } from '../src/routes/declaration.js';

const ALL = newKey();
const NARROW = newKey();
const STRANGER = newKey();

/** The kinds of client, as the request's query and headers. */
const CLIENTS = {
  none: { query: '', headers: {} },
  'invalid key': { query: `key=${STRANGER.key}`, headers: {} },
  'key for other ids': { query: '', headers: { authorization: `Bearer ${NARROW.key}` } },
  'key for every id': { query: `key=${ALL.key}`, headers: {} },
} as const satisfies Record<string, { query: string; headers: Record<string, string> }>;
type Client = keyof typeof CLIENTS;

/** What each client gets for a closed or unknown id: the refusal tells nothing but what the client lacks. */
const EXPECTED: Record<'key' | 'public', Record<Client, number>> = {
  key: { none: 401, 'invalid key': 401, 'key for other ids': 403, 'key for every id': 404 },
  public: { none: 404, 'invalid key': 404, 'key for other ids': 404, 'key for every id': 404 },
};

type IdKind = 'source' | 'collection' | 'style';
/** Closed ids of each kind, each beside an unknown id of the same shape. */
const PAIRS: Record<IdKind, [closed: string, unknown: string][]> = {
  source: [
    ['hidden', 'absent'],
    ['open_cities+hidden', 'open_cities+absent'],
    ['hidden-both', 'absent-both'],
  ],
  collection: [
    ['hidden', 'absent'],
    ['hidden:cities', 'absent:cities'],
  ],
  // A closed configured style, and the generated style of a closed source.
  style: [
    ['hidden-style', 'absent-style'],
    ['hidden', 'absent'],
  ],
};
const CONFIGURED = new Set(['natural_earth', 'open_cities', 'hidden', 'hidden-both', 'ne', 'hidden-style']);

/** Values of the path parameters that are not ids: any value the route's pattern accepts. */
const FILL: Record<string, string> = {
  z: '1',
  x: '0',
  y: '0',
  format: 'pbf',
  scale: '',
  tileMatrixSetId: 'WebMercatorQuad',
  tileMatrix: '1',
  tileRow: '0',
  tileCol: '0',
  featureId: '1',
  tile_size: '256',
  view: '0,0,1',
  size: '100x100',
};
/** The placeholders of the OpenAPI templates that hold a read id. */
const ID_PLACEHOLDERS = new Set(['source', 'style', 'styleId', 'collectionId', 'id']);

interface Family {
  route: RouteDeclaration;
  kind: IdKind;
  /** The request path for an id (already spelt as it should go on the wire). */
  path(id: string): string;
}

/** Every route of the table that reads an id from its path, as a path maker; throws on a path it cannot fill. */
function families(): Family[] {
  const out: Family[] = [];
  for (const route of PUBLIC_ROUTES) {
    const read = route.reads.find((r) => r.kind !== 'shared');
    if (read === undefined || !('param' in read)) continue;
    // An upload's id is `upload-<uuid>`, which no configured id may take: nothing named by it can be closed. The
    // unknown-upload test below holds the route to the unseen answer all the same.
    if (read.kind === 'upload') continue;
    const where = `${route.method.toUpperCase()} ${route.path}`;
    const holes = [...route.path.matchAll(/\{(\w+)\}/g)].map((m) => m[1]);
    const unknown = holes.filter((h) => !ID_PLACEHOLDERS.has(h) && FILL[h] === undefined);
    assert.deepEqual(unknown, [], `${where}: a path parameter this test cannot fill; add it to FILL or ID_PLACEHOLDERS`);
    assert.equal(holes.filter((h) => ID_PLACEHOLDERS.has(h)).length, 1, `${where}: one id in the path`);
    const path = (id: string) => route.path.replace(/\{(\w+)\}/g, (_, h: string) => (ID_PLACEHOLDERS.has(h) ? id : FILL[h]));
    // The filled path must reach this route, not an earlier one of the table (or none).
    const m = matchPublic(route.method.toUpperCase(), path('absent'));
    assert.equal(m?.route, route, `${where}: ${path('absent')} is routed to ${m ? m.route.path : 'nothing'}`);
    out.push({ route, kind: read.kind, path });
  }
  return out;
}

interface Answer {
  status: number;
  reason: string;
  /** Header lines as sent (name and value, in order), Date left out. */
  lines: [string, string][];
  body: Buffer;
}

function ask(base: string, method: string, target: string, headers: Record<string, string>, body?: string): Promise<Answer> {
  const url = new URL(base);
  return new Promise((resolve, reject) => {
    const req = http.request({ host: url.hostname, port: url.port, method, path: target, headers: body === undefined ? headers : { ...headers, 'content-type': 'application/json' }, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => {
        const lines: [string, string][] = [];
        for (let i = 0; i < res.rawHeaders.length; i += 2) if (res.rawHeaders[i].toLowerCase() !== 'date') lines.push([res.rawHeaders[i], res.rawHeaders[i + 1]]);
        resolve({ status: res.statusCode ?? 0, reason: res.statusMessage ?? '', lines, body: Buffer.concat(chunks) });
      });
      res.on('error', reject);
    });
    req.on('error', reject);
    req.setTimeout(20_000, () => req.destroy(new Error(`no answer to ${method} ${target}`)));
    req.end(body);
  });
}

const RATE = /^"(\w+)";r=(\d+);t=(\d+)$/;

/**
 * Asserts that `a` (asked first) and `b` (asked right after, by the same client) are the same answer: status,
 * reason, every header line in order and the body, byte for byte, but for Date and for the count and reset time
 * in `RateLimit`, where `b` must have spent exactly one more of the same budget.
 */
function assertAlike(a: Answer, b: Answer, what: string): void {
  const rate = (x: Answer) => x.lines.find(([n]) => n.toLowerCase() === 'ratelimit')?.[1];
  const ra = rate(a);
  const rb = rate(b);
  assert.equal(ra === undefined, rb === undefined, `${what}: RateLimit on one answer only (${ra} / ${rb})`);
  if (ra !== undefined && rb !== undefined) {
    const ma = RATE.exec(ra);
    const mb = RATE.exec(rb);
    assert.ok(ma && mb, `${what}: RateLimit ${ra} / ${rb}`);
    assert.equal(ma[1], mb[1], `${what}: the same budget`);
    assert.equal(Number(mb[2]), Number(ma[2]) - 1, `${what}: each spent one (${ra}, then ${rb})`);
    assert.ok(Math.abs(Number(ma[3]) - Number(mb[3])) <= 1, `${what}: the same window (${ra}, then ${rb})`);
  }
  const without = (x: Answer) =>
    x.lines.map(([n, v]) => {
      const name = n.toLowerCase();
      if (name === 'ratelimit') return [n, v.replace(/;r=\d+;t=\d+$/, '')];
      // Present on both, in the same place; each request has its own.
      if (name === 'x-request-id') return [n, /^[0-9a-f-]{36}$/.test(v) ? '(uuid)' : v];
      return [n, v];
    });
  assert.deepEqual({ status: b.status, reason: b.reason, lines: without(b), body: b.body.toString('latin1') }, { status: a.status, reason: a.reason, lines: without(a), body: a.body.toString('latin1') }, what);
}

const withQuery = (p: string, query: string) => (query === '' ? p : `${p}${p.includes('?') ? '&' : '?'}${query}`);

/** A POST route's body: any JSON; the gate answers before it is read. */
const bodyOf = (route: RouteDeclaration) => (route.method === 'post' ? '{"points":[[0,0]]}' : undefined);

function startConfig(dir: string, defaultAccess: 'key' | 'public'): string {
  return `fonts = "${fixture('fonts')}"
[server]
disable_render = true
upload_dir = "${path.join(dir, 'uploads')}"
[mcp]
enabled = true
[rate_limits]
default_class = "day"
anonymous_class = "day"
[rate_limits.classes.day]
cheap = { rate = 1, burst = 86400 }
expensive = { rate = 1, burst = 86400 }
[[sources]]
id = "natural_earth"
type = "pmtiles"
path = "${fixture('raster/natural-earth-png-z0-1.pmtiles')}"
access = "public"
[[sources]]
id = "open_cities"
type = "mbtiles"
path = "${fixture('vector/world_cities.mbtiles')}"
access = "public"
[[sources]]
id = "hidden"
type = "mbtiles"
path = "${fixture('vector/world_cities.mbtiles')}"
access = "closed"
[[composites]]
id = "hidden-both"
sources = ["open_cities", "hidden"]
[[styles]]
id = "ne"
path = "${path.join(dir, 'ne-style.json')}"
access = "public"
[[styles]]
id = "hidden-style"
path = "${path.join(dir, 'ne-style.json')}"
access = "closed"
[auth]
default_access = "${defaultAccess}"
[[auth.keys]]
name = "all"
hash = "${ALL.hash}"
[[auth.keys]]
name = "narrow"
hash = "${NARROW.hash}"
sources = ["natural*"]
styles = ["ne"]
`;
}

const NE_STYLE = JSON.stringify({ version: 8, name: 'ne', sources: { ne: { type: 'raster', url: 'pmtiles://natural_earth', tileSize: 256 } }, layers: [{ id: 'ne', type: 'raster', source: 'ne' }] });

for (const defaultAccess of ['key', 'public'] as const) {
  describe(`closed means unseen, default_access = "${defaultAccess}"`, () => {
    let svc: TestServer;
    const table = families();

    before(async () => {
      const dir = tempDir('tsts-unseen-');
      writeFileSync(path.join(dir, 'ne-style.json'), NE_STYLE);
      svc = await startServer({ toml: startConfig(dir, defaultAccess), workers: 1 });
    });
    after(async () => {
      await svc?.stop();
    });

    test('every route family of the table: a closed id and an unknown one get one answer, for every client', async () => {
      assert.ok(table.length >= 30, `the table's id routes found: ${table.length}`);
      let compared = 0;
      for (const f of table) {
        for (const [closed, unknown] of PAIRS[f.kind]) {
          for (const [client, c] of Object.entries(CLIENTS) as [Client, (typeof CLIENTS)[Client]][]) {
            const what = `${f.route.method.toUpperCase()} ${f.path(closed)} vs ${f.path(unknown)}, ${client}`;
            const method = f.route.method.toUpperCase();
            // Asked in both orders: neither the closed id nor the unknown one is the one that comes first.
            const a = await ask(svc.url, method, withQuery(f.path(closed), c.query), c.headers, bodyOf(f.route));
            const b = await ask(svc.url, method, withQuery(f.path(unknown), c.query), c.headers, bodyOf(f.route));
            assertAlike(a, b, what);
            assert.equal(a.status, EXPECTED[defaultAccess][client], `${what}: ${a.body.toString('utf8')}`);
            if (a.status === 404) {
              const headers = Object.fromEntries(a.lines.map(([n, v]) => [n.toLowerCase(), v]));
              assert.equal(headers['cache-control'], 'no-store', `${what}: not kept by caches (it may be opened by a reload)`);
              assert.ok(headers['ratelimit-policy'] !== undefined, `${what}: counted by the rate limiter`);
              assert.match(headers['content-type'], /^application\/problem\+json/, what);
            }
            if (method === 'GET') {
              const h = await ask(svc.url, 'HEAD', withQuery(f.path(unknown), c.query), c.headers);
              const g = await ask(svc.url, 'HEAD', withQuery(f.path(closed), c.query), c.headers);
              assertAlike(h, g, `HEAD: ${what}`);
            }
            compared++;
          }
        }
      }
      assert.ok(compared > 0);
    });

    test('an existing id of each route family is not answered as unseen (the comparison above is not of two routes that never answer)', async () => {
      // natural_earth is public, and the key for every id opens it: whatever the route answers, it is not the unseen 404.
      const c = CLIENTS['key for every id'];
      for (const f of table) {
        if (f.kind === 'style' || f.route.method !== 'get') continue;
        const r = await ask(svc.url, 'GET', withQuery(f.path('natural_earth'), c.query), c.headers);
        assert.doesNotMatch(r.body.toString('utf8'), /with the id this request names/, `${f.path('natural_earth')}: ${r.status}`);
      }
      const s = await ask(svc.url, 'GET', withQuery('/styles/ne/style.json', c.query), c.headers);
      assert.equal(s.status, 200);
    });

    test('an upload is removed by its bare UUID; once gone, it is answered as an id that never was', async () => {
      const c = CLIENTS['key for every id'];
      const body = multipartBody([{ field: 'file', fileName: 'w.mbtiles', data: readFileSync(fixture('raster/webp.mbtiles')) }]);
      const up = await postMultipart(svc.url, body, withQuery('/api/upload', c.query));
      assert.ok(up.status >= 200 && up.status < 300, up.text);
      const uuid = String(up.json.id).replace(/^upload-/, '');
      const del = (id: string) => ask(svc.url, 'DELETE', withQuery(`/api/upload/${id}`, c.query), c.headers);
      const gone = await del(uuid.toUpperCase());
      assert.equal(gone.status, 204, gone.body.toString('utf8'));
      const again = await del(uuid);
      const never = await del(randomUUID());
      assertAlike(again, never, 'a removed upload and one that never was');
      assert.equal(again.status, 404);
    });

    test('POST /api/spatial/query: a closed source named in the body and an unknown one get one answer', async () => {
      for (const [client, c] of Object.entries(CLIENTS) as [Client, (typeof CLIENTS)[Client]][]) {
        for (const [closed, unknown] of PAIRS.source) {
          const body = (id: string) => JSON.stringify({ source: id, zoom: 0, limit: 1 });
          const a = await ask(svc.url, 'POST', withQuery('/api/spatial/query', c.query), c.headers, body(closed));
          const b = await ask(svc.url, 'POST', withQuery('/api/spatial/query', c.query), c.headers, body(unknown));
          assertAlike(a, b, `spatial query of ${closed} vs ${unknown}, ${client}`);
          assert.equal(a.status, EXPECTED[defaultAccess][client], `${client}: ${a.body.toString('utf8')}`);
        }
      }
    });

    test('MCP: every tool that takes an id answers a closed id as an unknown one', async () => {
      const rpc = async (query: string, method: string, params: Record<string, unknown>) => {
        const r = await ask(svc.url, 'POST', withQuery('/mcp', query), { accept: 'application/json, text/event-stream' }, JSON.stringify({ jsonrpc: '2.0', id: 1, method, params }));
        assert.equal(r.status, 200, r.body.toString('utf8'));
        return { answer: r, result: (JSON.parse(r.body.toString('utf8')) as { result: Record<string, unknown> }).result };
      };
      const { result: listed } = await rpc('', 'tools/list', {});
      const takesId = (listed.tools as { name: string; inputSchema: { properties?: Record<string, unknown> } }[]).filter((t) => 'source' in (t.inputSchema.properties ?? {}) || 'style' in (t.inputSchema.properties ?? {}));
      const ARGS: Record<string, (id: string) => Record<string, unknown>> = {
        get_tilejson: (id) => ({ source: id }),
        get_source_schema: (id) => ({ source: id }),
        get_source_stats: (id) => ({ source: id }),
        query_features: (id) => ({ source: id, zoom: 0, limit: 1 }),
        get_tile_geojson: (id) => ({ source: id, z: 0, x: 0, y: 0 }),
      };
      assert.deepEqual(takesId.map((t) => t.name).filter((n) => ARGS[n] === undefined), [], 'a tool that takes an id and is not compared here');
      for (const [client, c] of Object.entries(CLIENTS) as [Client, (typeof CLIENTS)[Client]][]) {
        // /mcp has its own authentication: the key goes in its query (docs/access.md, "MCP").
        const query = c.query !== '' ? c.query : 'authorization' in c.headers ? `key=${NARROW.key}` : '';
        for (const t of takesId) {
          for (const [closed, unknown] of PAIRS.source) {
            const a = await rpc(query, 'tools/call', { name: t.name, arguments: ARGS[t.name](closed) });
            const b = await rpc(query, 'tools/call', { name: t.name, arguments: ARGS[t.name](unknown) });
            assertAlike(a.answer, b.answer, `MCP ${t.name} ${closed} vs ${unknown}, ${client}`);
            assert.equal(a.result.isError, true, `${t.name} ${closed}: ${JSON.stringify(a.result)}`);
          }
        }
      }
    });

    test('property: random unknown ids, spelt with random escapes, on random routes and formats, answer as closed ones', async () => {
      const id = fc.stringMatching(/^[a-z][a-z0-9_.-]{0,24}$/).filter((s) => !CONFIGURED.has(s) && !s.endsWith('.json') && !s.includes('..'));
      // Each character left as it is or percent-escaped: the gate and the route both decode.
      const spell = (s: string, mask: boolean[]) => [...s].map((ch, i) => (mask[i % mask.length] ? `%${ch.charCodeAt(0).toString(16).toUpperCase().padStart(2, '0')}` : ch)).join('');
      const getFamilies = table.filter((f) => f.route.method === 'get');
      const dataTile = table.find((f) => f.route.path === '/data/{source}/{z}/{x}/{y}.{format}')!;
      await fc.assert(
        fc.asyncProperty(
          // The stored tile more often than the others: it is the route whose budget depends on the source's format.
          fc.oneof({ arbitrary: fc.constantFrom(...getFamilies), weight: 3 }, { arbitrary: fc.constant(dataTile), weight: 1 }),
          id,
          fc.array(fc.boolean(), { minLength: 1, maxLength: 8 }),
          fc.constantFrom(...(Object.keys(CLIENTS) as Client[])),
          // A format the closed source would transcode (mlt) or draw (geojson) is an expensive route for it and a
          // cheap one for an unknown id: the limiter must charge both alike.
          fc.constantFrom('pbf', 'mlt', 'geojson', 'png'),
          async (f, unknown, mask, client, format) => {
            const closed = PAIRS[f.kind][0][0];
            const c = CLIENTS[client];
            const at = (i: string) => withQuery(f.path(spell(i, mask)).replace(/\.pbf$/, `.${format}`), c.query);
            const a = await ask(svc.url, 'GET', at(closed), c.headers);
            const b = await ask(svc.url, 'GET', at(unknown), c.headers);
            assertAlike(a, b, `${at(closed)} vs ${at(unknown)}, ${client}`);
            assert.equal(a.status, EXPECTED[defaultAccess][client], `${at(closed)}, ${client}`);
          },
        ),
        { numRuns: 150 },
      );
    });
  });
}
