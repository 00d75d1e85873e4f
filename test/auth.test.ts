// Access control through the real server (docs/access.md): public, key and closed sources and styles, the
// tile fast lane covered, TileJSON and style.json fetched with a key handing out URLs with it, listings filtered,
// JWTs against a JWKS file and a JWKS URL (issuer, audience, expiry and skew, `alg: none`), origins, a key revoked
// by a reload while requests run, and no key ever in the access log; a JWKS URL that cannot be reached (401,
// logged once) and reloads that change the URL or the HMAC secret. Two servers: one with keys and a JWKS file
// (two workers, so a reload reaching every process is checked), one locked by default with a JWKS URL.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import * as jose from 'jose';
import { fixture, freePort, runCli, startServer, type TestServer } from './helpers/server.js';
import { request, waitFor, type RawResponse } from './helpers/foundation.js';
import { postJson } from './helpers/reload-load.js';
import { hashKey, newKey } from '../src/auth/keys.js';

const OMT = newKey();
const CITIES = newKey();
const EXPIRED = newKey();
const WEB = newKey();
const REVOCABLE = newKey();
const ALL_KEYS = [OMT, CITIES, EXPIRED, WEB, REVOCABLE].map((k) => k.key);

const NE_STYLE = JSON.stringify({ version: 8, name: 'ne', sources: { ne: { type: 'raster', url: 'pmtiles://natural_earth', tileSize: 256 } }, layers: [{ id: 'ne', type: 'raster', source: 'ne' }] });

const json = (r: RawResponse) => JSON.parse(r.body.toString('utf8')) as Record<string, unknown>;

function assertRefused(r: RawResponse, status: 401 | 403 | 404, what: string) {
  assert.equal(r.status, status, `${what}: ${r.body.toString('utf8')}`);
  assert.match(String(r.headers['content-type']), /application\/problem\+json/, what);
  assert.equal(r.headers['access-control-allow-origin'], '*', `${what}: CORS on the refusal`);
  const body = json(r);
  assert.equal(body.status, status, what);
  if (status === 401) assert.match(String(r.headers['www-authenticate']), /^Bearer realm="tileserver-ts"/, what);
  for (const k of ALL_KEYS) assert.ok(!r.body.toString('utf8').includes(k), `${what}: the key is not echoed`);
}

describe('access control: keys, a JWKS file, reload', () => {
  let svc: TestServer;
  let adminPort: number;
  let dir: string;
  let signer: CryptoKey;
  let stranger: CryptoKey;
  const keysToml = (withRevocable: boolean) => (withRevocable ? `[[keys]]\nname = "revocable"\nhash = "${REVOCABLE.hash}"\nsources = ["*"]\n` : `keys = []\n`);

  before(async () => {
    dir = mkdtempSync(path.join(os.tmpdir(), 'tsts-auth-'));
    const pair = await jose.generateKeyPair('ES256');
    signer = pair.privateKey;
    stranger = (await jose.generateKeyPair('ES256')).privateKey;
    writeFileSync(path.join(dir, 'jwks.json'), JSON.stringify({ keys: [{ ...(await jose.exportJWK(pair.publicKey)), kid: 'k1', alg: 'ES256', use: 'sig' }] }));
    writeFileSync(path.join(dir, 'keys.toml'), keysToml(true));
    writeFileSync(path.join(dir, 'ne-style.json'), NE_STYLE);
    adminPort = await freePort();
    const toml = `fonts = "${fixture('fonts')}"
[server]
disable_render = true
admin_bind = "127.0.0.1:${adminPort}"
[[sources]]
id = "openmaptiles"
type = "pmtiles"
path = "${fixture('vector/omt-planet-z0-1.pmtiles')}"
access = "key"
[[sources]]
id = "natural_earth"
type = "pmtiles"
path = "${fixture('raster/natural-earth-png-z0-1.pmtiles')}"
[[sources]]
id = "cities"
type = "mbtiles"
path = "${fixture('vector/world_cities.mbtiles')}"
access = "closed"
[[sources]]
id = "secret-cities"
type = "mbtiles"
path = "${fixture('vector/world_cities.mbtiles')}"
access = "key"
[[styles]]
id = "osm-liberty"
path = "${fixture('styles/osm-liberty/style.json')}"
[[styles]]
id = "ne"
path = "${path.join(dir, 'ne-style.json')}"
[[styles]]
id = "ne-hidden"
path = "${path.join(dir, 'ne-style.json')}"
access = "closed"
[mcp]
enabled = true
[auth]
keys_file = "${path.join(dir, 'keys.toml')}"
[[auth.keys]]
name = "omt"
hash = "${OMT.hash}"
sources = ["open*"]
styles = ["osm-*"]
[[auth.keys]]
name = "cities"
hash = "${CITIES.hash}"
sources = ["secret-*"]
styles = []
[[auth.keys]]
name = "expired"
hash = "${EXPIRED.hash}"
expires = "2020-01-01T00:00:00Z"
[[auth.keys]]
name = "web"
hash = "${WEB.hash}"
origins = ["https://maps.example.com", "https://*.example.org"]
rate_class = "gold"
[auth.jwt]
jwks_file = "${path.join(dir, 'jwks.json')}"
issuer = "https://idp.test"
audience = "tiles"
clock_skew_s = 30
`;
    svc = await startServer({ toml, workers: 2, env: { LOG_LEVEL: 'info', LOG_FORMAT: 'json' } });
    // Both workers serving: /ready needs no credentials either.
    await waitFor('both workers ready', async () => ((await request(svc.url, '/ready')).status === 200 ? true : undefined));
  });
  after(async () => {
    await svc?.stop();
  });

  const get = (p: string, headers: Record<string, string> = {}, method = 'GET') => request(svc.url, p, { headers, method });

  test('public sources and styles, /health and /ping need nothing', async () => {
    for (const p of ['/data/natural_earth/0/0/0.png', '/data/natural_earth.json', '/styles/ne/style.json', '/health', '/ping', '/ready']) {
      const r = await get(p);
      assert.equal(r.status, 200, `${p}: ${r.body.toString('utf8').slice(0, 200)}`);
    }
    // A wrong key on a public resource is ignored, not refused.
    assert.equal((await get('/data/natural_earth/0/0/0.png?key=nonsense')).status, 200);
  });

  test('a key-level source: 401 without a key (fast lane too), 200 with it in the query or the header', async () => {
    for (const p of ['/data/openmaptiles/0/0/0.pbf', '/data/openm%61ptiles/0/0/0.pbf', '/x/../data/openmaptiles/0/0/0.pbf', '/data/openmaptiles.json', '/data/natural_earth+openmaptiles/0/0/0.pbf', '/api/spatial/schema/openmaptiles']) {
      assertRefused(await get(p), 401, p);
    }
    const head = await get('/data/openmaptiles/0/0/0.pbf', {}, 'HEAD');
    assert.equal(head.status, 401);
    assert.equal(head.body.length, 0);
    const preflight = await get('/data/openmaptiles/0/0/0.pbf', { origin: 'https://maps.example.com', 'access-control-request-method': 'GET', 'access-control-request-headers': 'authorization' }, 'OPTIONS');
    assert.equal(preflight.status, 204, 'a preflight carries no credentials and is answered');
    assert.equal((await get(`/data/openmaptiles/0/0/0.pbf?key=${OMT.key}`)).status, 200);
    assert.equal((await get('/data/openmaptiles/0/0/0.pbf', { authorization: `Bearer ${OMT.key}` })).status, 200);
    assert.equal((await get('/data/openmaptiles/0/0/0.pbf', { authorization: `Bearer ${OMT.key}` })).status, 200, 'a second time, from the cache');
  });

  test('what a key opened is not for shared caches: Cache-Control private; public answers stay public', async () => {
    const open = await get('/data/natural_earth/0/0/0.png');
    assert.match(String(open.headers['cache-control']), /^public/);
    for (const p of ['/data/openmaptiles/0/0/0.pbf', '/data/openmaptiles.json', '/styles/osm-liberty/style.json', '/data.json', '/index.json']) {
      const r = await get(p, { authorization: `Bearer ${OMT.key}` });
      assert.equal(r.status, 200, p);
      assert.doesNotMatch(String(r.headers['cache-control']), /public/, p);
    }
    const tile = await get('/data/openmaptiles/0/0/0.pbf', { authorization: `Bearer ${OMT.key}` });
    assert.match(String(tile.headers['cache-control']), /^private/);
  });

  test('MCP tools see what the key given to /mcp allows, no more', async () => {
    const call = async (name: string, args: Record<string, unknown>, query = '') => {
      const res = await fetch(`${svc.url}/mcp${query}`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name, arguments: args } }),
        signal: AbortSignal.timeout(10_000),
      });
      assert.equal(res.status, 200);
      const out = (await res.json()) as { result: { content: { text: string }[]; isError?: boolean } };
      return out.result;
    };
    const ids = (r: { content: { text: string }[] }) => (JSON.parse(r.content[0].text) as { id: string }[]).map((d) => d.id).sort();
    assert.deepEqual(ids(await call('list_sources', {})), ['natural_earth']);
    assert.deepEqual(ids(await call('list_sources', {}, `?key=${OMT.key}`)), ['natural_earth', 'openmaptiles']);
    const refused = await call('get_tilejson', { source: 'openmaptiles' });
    assert.equal(refused.isError, true);
    assert.match(refused.content[0].text, /401/);
    assert.equal((await call('get_tilejson', { source: 'openmaptiles' }, `?key=${OMT.key}`)).isError, undefined);
    assert.match((await call('get_tilejson', { source: 'cities' }, `?key=${OMT.key}`)).content[0].text, /404/);
  });

  test('a wrong, expired or malformed key is 401 invalid_token; a key for another source 403', async () => {
    for (const [what, headers, query] of [
      ['unknown key', {}, `?key=${newKey().key}`],
      ['expired key', {}, `?key=${EXPIRED.key}`],
      ['malformed bearer', { authorization: 'Bearer a b c' }, ''],
      ['empty key', {}, '?key='],
    ] as const) {
      const r = await get(`/data/openmaptiles/0/0/0.pbf${query}`, headers);
      assertRefused(r, 401, what);
      assert.match(String(r.headers['www-authenticate']), /error="invalid_token"/, what);
    }
    const r = await get(`/data/openmaptiles/0/0/0.pbf?key=${CITIES.key}`);
    assertRefused(r, 403, 'a key for other sources');
    assert.match(String(r.headers['www-authenticate']), /insufficient_scope/);
    assert.equal((await get(`/data/secret-cities/0/0/0.pbf?key=${CITIES.key}`)).status, 200);
    assertRefused(await get(`/data/secret-cities/0/0/0.pbf?key=${OMT.key}`), 403, 'omt key on secret-cities');
  });

  test('POST /api/spatial/query: the source named in the body is checked by the route', async () => {
    const body = JSON.stringify({ source: 'openmaptiles', zoom: 0, limit: 1 });
    const post = (q: string, source = 'openmaptiles') =>
      request(svc.url, `/api/spatial/query${q}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: body.replace('openmaptiles', source) });
    assertRefused(await post(''), 401, 'spatial query without a key');
    assertRefused(await post(`?key=${CITIES.key}`), 403, 'spatial query with a key for other sources');
    assertRefused(await post(`?key=${OMT.key}`, 'cities'), 404, 'spatial query of a closed source');
    assert.equal((await post(`?key=${OMT.key}`)).status, 200);
  });

  test('closed sources and styles are 404 to everybody, as if they did not exist', async () => {
    for (const p of ['/data/cities/0/0/0.pbf', '/data/cities.json', `/data/cities.json?key=${OMT.key}`, '/styles/ne-hidden/style.json', `/styles/ne-hidden/style.json?key=${WEB.key}`, '/ogc/collections/cities']) {
      assertRefused(await get(p), 404, p);
    }
  });

  test('a style drawing a key-level source needs a key that allows the style', async () => {
    assertRefused(await get('/styles/osm-liberty/style.json'), 401, 'osm-liberty without a key');
    assertRefused(await get(`/styles/osm-liberty/style.json?key=${CITIES.key}`), 403, 'a key without styles');
    const r = await get(`/styles/osm-liberty/style.json?key=${OMT.key}`);
    assert.equal(r.status, 200);
    const style = json(r) as { sources: Record<string, { url?: string }>; glyphs?: string };
    const omt = style.sources.openmaptiles.url!;
    assert.ok(omt.includes(`key=${encodeURIComponent(OMT.key)}`) || omt.includes(`key=${OMT.key}`), `the source URL carries the key: ${omt}`);
    const tilejson = json(await get(`/data/openmaptiles.json?key=${OMT.key}`)) as { tiles: string[] };
    assert.ok(tilejson.tiles[0].includes(`key=${OMT.key}`), tilejson.tiles[0]);
    // The URL handed out works as it is.
    const tileUrl = new URL(tilejson.tiles[0].replace('{z}', '0').replace('{x}', '0').replace('{y}', '0'));
    assert.equal((await get(`${tileUrl.pathname}${tileUrl.search}`)).status, 200);
  });

  test('listings show public resources, and key-level ones only to a key that allows them', async () => {
    const ids = async (p: string, q = '') => (json(await get(`${p}${q}`)) as unknown as { id?: string; tilejson?: string }[]).map((d) => d.id);
    assert.deepEqual(await ids('/data.json'), ['natural_earth']);
    assert.deepEqual((await ids('/data.json', `?key=${OMT.key}`)).sort(), ['natural_earth', 'openmaptiles']);
    assert.deepEqual((await ids('/data.json', `?key=${CITIES.key}`)).sort(), ['natural_earth', 'secret-cities']);
    assert.deepEqual(await ids('/styles.json'), ['ne']);
    assert.deepEqual((await ids('/styles.json', `?key=${OMT.key}`)).sort(), ['ne', 'osm-liberty']);
    assert.deepEqual((await ids('/styles.json', `?key=${WEB.key}`)).sort(), ['ne', 'osm-liberty'], 'never the closed style');
    const index = (await ids('/index.json', '?key=nonsense')).sort();
    assert.deepEqual(index, ['natural_earth']);
    const collections = (json(await get('/ogc/collections?f=json')) as { collections: { id: string }[] }).collections.map((c) => c.id).sort();
    assert.deepEqual(collections, ['natural_earth']);
    const home = (await get('/')).body.toString('utf8');
    assert.ok(home.includes('natural_earth') && !home.includes('secret-cities') && !home.includes('ne-hidden'));
  });

  test('a key limited to origins: refused from another origin or Referer, allowed from its own and from non-browsers', async () => {
    const tile = `/data/openmaptiles/0/0/0.pbf?key=${WEB.key}`;
    assert.equal((await get(tile)).status, 200, 'no Origin: not a browser');
    assert.equal((await get(tile, { origin: 'https://maps.example.com' })).status, 200);
    assert.equal((await get(tile, { origin: 'https://a.example.org' })).status, 200, 'a glob origin');
    assertRefused(await get(tile, { origin: 'https://evil.example.com' }), 403, 'another origin');
    assertRefused(await get(tile, { referer: 'https://evil.example.com/map.html' }), 403, 'another referer');
    assert.equal((await get(tile, { referer: 'https://maps.example.com/map.html' })).status, 200);
  });

  const token = (claims: Record<string, unknown>, opts: { key?: CryptoKey; iss?: string; aud?: string; exp?: number; nbf?: number } = {}) => {
    const now = Math.floor(Date.now() / 1000);
    const jwt = new jose.SignJWT({ sub: 'alice', tiles: { sources: ['openmaptiles'], styles: 'osm-*' }, ...claims })
      .setProtectedHeader({ alg: 'ES256', kid: 'k1' })
      .setIssuer(opts.iss ?? 'https://idp.test')
      .setAudience(opts.aud ?? 'tiles')
      .setIssuedAt()
      .setExpirationTime(opts.exp ?? now + 600);
    if (opts.nbf !== undefined) jwt.setNotBefore(opts.nbf);
    return jwt.sign(opts.key ?? signer);
  };

  test('JWTs against the JWKS file: signature, issuer, audience, expiry with skew, scope, alg none', async () => {
    const now = Math.floor(Date.now() / 1000);
    const tile = '/data/openmaptiles/0/0/0.pbf';
    const bearer = async (t: string | Promise<string>) => get(tile, { authorization: `Bearer ${await t}` });
    assert.equal((await bearer(token({}))).status, 200);
    assert.equal((await get(`${tile}?key=${await token({})}`)).status, 200, 'a token in ?key= works too');
    assert.equal((await bearer(token({}, { exp: now - 10 }))).status, 200, 'expired 10 s ago: within the 30 s skew');
    assertRefused(await bearer(token({}, { exp: now - 120 })), 401, 'expired beyond the skew');
    assertRefused(await bearer(token({}, { nbf: now + 600 })), 401, 'not yet valid');
    assertRefused(await bearer(token({}, { iss: 'https://other.test' })), 401, 'wrong issuer');
    assertRefused(await bearer(token({}, { aud: 'other' })), 401, 'wrong audience');
    assertRefused(await bearer(token({}, { key: stranger })), 401, 'signed by a key not in the set');
    const none = new jose.UnsecuredJWT({ sub: 'mallory', tiles: { sources: '*' } }).setIssuer('https://idp.test').setAudience('tiles').setExpirationTime('10m').encode();
    assertRefused(await bearer(none), 401, 'alg none');
    assertRefused(await bearer('eyJhbGciOiJFUzI1NiJ9.e30.AAAA'), 401, 'garbage shaped like a JWT');
    assertRefused(await bearer(token({ tiles: { sources: ['natural_earth'] } })), 403, 'a scope without the source');
    assertRefused(await bearer(token({ tiles: undefined })), 403, 'no scope claim allows nothing');
    const style = await get('/styles/osm-liberty/style.json', { authorization: `Bearer ${await token({})}` });
    assert.equal(style.status, 200, 'styles from a space-separated pattern string');
  });

  test('a key removed from the keys file by a reload is refused from the next request on, in every worker', async () => {
    const tile = `/data/openmaptiles/0/0/0.pbf?key=${REVOCABLE.key}`;
    for (let i = 0; i < 6; i++) assert.equal((await get(tile)).status, 200, 'before the reload');
    let running = true;
    const seen = new Map<number, number>();
    const load = (async () => {
      while (running) {
        const r = await request(svc.url, tile);
        seen.set(r.status, (seen.get(r.status) ?? 0) + 1);
      }
    })();
    await new Promise((r) => setTimeout(r, 200));
    writeFileSync(path.join(dir, 'keys.toml'), keysToml(false));
    const res = await postJson(`http://127.0.0.1:${adminPort}/__admin/reload`);
    assert.equal(res.status, 200, JSON.stringify(res.json));
    assert.equal(res.json.reloaded, true, 'a keys file changed alone is a new configuration');
    running = false;
    await load;
    assert.deepEqual([...seen.keys()].filter((s) => s !== 200 && s !== 401), [], `only 200 and 401 while reloading: ${JSON.stringify([...seen])}`);
    // New connections land on either worker: all refuse it now.
    for (let i = 0; i < 8; i++) assertRefused(await get(tile), 401, `after the reload (${i})`);
    assert.equal((await get(`/data/openmaptiles/0/0/0.pbf?key=${OMT.key}`)).status, 200, 'other keys still work');
    // A broken keys file fails the reload, naming the file, and the running keys stay.
    writeFileSync(path.join(dir, 'keys.toml'), '[[keys]\nname = ');
    const failed = await postJson(`http://127.0.0.1:${adminPort}/__admin/reload`);
    assert.equal(failed.status, 500);
    assert.match(String(failed.json.error), /keys\.toml/);
    assert.equal((await get(`/data/openmaptiles/0/0/0.pbf?key=${OMT.key}`)).status, 200, 'the running keys after a failed reload');
    writeFileSync(path.join(dir, 'keys.toml'), keysToml(false));
  });

  test('no key or token is ever written to the log', async () => {
    await get(`/data/openmaptiles/0/0/0.pbf?key=${OMT.key}&x=1`);
    await new Promise((r) => setTimeout(r, 300));
    const out = svc.output();
    assert.match(out, /"path":"\/data\/openmaptiles\/0\/0\/0.pbf"/, 'access lines are written');
    for (const k of ALL_KEYS) assert.ok(!out.includes(k), 'a key in the log output');
    assert.doesNotMatch(out, /[?&]key=/, 'no key parameter in the log');
  });
});

/** An identity provider serving one JSON Web Key Set at /jwks.json, counting the fetches. */
async function keySetServer(publicKey: CryptoKey, kid: string) {
  const jwks = JSON.stringify({ keys: [{ ...(await jose.exportJWK(publicKey)), kid, alg: 'RS256', use: 'sig' }] });
  const idp = {
    hits: 0,
    server: http.createServer((req, res) => {
      idp.hits++;
      res.writeHead(req.url === '/jwks.json' ? 200 : 404, { 'content-type': 'application/json' });
      res.end(req.url === '/jwks.json' ? jwks : '{}');
    }),
    listen: (port = 0) => new Promise<void>((r) => idp.server.listen(port, '127.0.0.1', r)),
    url: () => `http://127.0.0.1:${(idp.server.address() as AddressInfo).port}/jwks.json`,
  };
  return idp;
}

describe('access control: locked by default, JWTs from a JWKS URL', () => {
  let svc: TestServer;
  let idp: Awaited<ReturnType<typeof keySetServer>>;
  let signer: CryptoKey;
  let adminPort: number;
  const SECRET_A = 'a'.repeat(40);
  const SECRET_B = 'b'.repeat(40);
  /** The configuration with `jwt` as its `[auth.jwt]` section. */
  const config = (jwt: string) => `[server]
disable_render = true
admin_bind = "127.0.0.1:${adminPort}"
[[sources]]
id = "natural_earth"
type = "pmtiles"
path = "${fixture('raster/natural-earth-png-z0-1.pmtiles')}"
[[sources]]
id = "open-cities"
type = "mbtiles"
path = "${fixture('vector/world_cities.mbtiles')}"
access = "public"
[auth]
default_access = "key"
[auth.jwt]
${jwt}
`;
  const urlJwt = (url: string, audience = '["tiles", "maps"]') => `jwks_url = "${url}"\naudience = ${audience}\nrate_class_claim = "plan"`;

  before(async () => {
    const pair = await jose.generateKeyPair('RS256');
    signer = pair.privateKey;
    idp = await keySetServer(pair.publicKey, 'r1');
    await idp.listen();
    adminPort = await freePort();
    svc = await startServer({ toml: config(urlJwt(idp.url())), env: { LOG_LEVEL: 'info', LOG_FORMAT: 'json', TSTS_JWT_A: SECRET_A, TSTS_JWT_B: SECRET_B } });
  });
  after(async () => {
    await svc?.stop();
    idp?.server.close();
  });

  /** Writes the configuration with `jwt` and reloads; the admin route answers once the new rules are in force. */
  const reload = async (jwt: string) => {
    writeFileSync(svc.configFile!, config(jwt));
    const res = await postJson(`http://127.0.0.1:${adminPort}/__admin/reload`);
    assert.equal(res.status, 200, JSON.stringify(res.json));
    assert.equal(res.json.reloaded, true, JSON.stringify(res.json));
  };
  const logLines = (pattern: RegExp) => svc.output().split('\n').filter((l) => pattern.test(l));

  const get = (p: string, headers: Record<string, string> = {}) => request(svc.url, p, { headers });
  const token = (claims: Record<string, unknown> = {}, alg = 'RS256') =>
    new jose.SignJWT({ sub: 'bob', plan: 'gold', tiles: { sources: '*' }, ...claims }).setProtectedHeader({ alg, kid: 'r1' }).setAudience('maps').setExpirationTime('5m').sign(signer);

  test('everything not public needs a token; /health, /ping and the public source do not', async () => {
    assert.equal((await get('/health')).status, 200);
    assert.equal((await get('/ping')).status, 200);
    assert.equal((await get('/data/open-cities/0/0/0.pbf')).status, 200);
    assertRefused(await get('/data/natural_earth/0/0/0.png'), 401, 'default key');
    assertRefused(await get('/files/x.txt'), 401, 'shared routes follow default_access');
    const ids = (json(await get('/data.json')) as unknown as { id: string }[]).map((d) => d.id);
    assert.deepEqual(ids, ['open-cities']);
  });

  test('a token signed by the key set at the URL opens the rest; its keys are fetched once', async () => {
    const t = await token();
    assert.equal((await get('/data/natural_earth/0/0/0.png', { authorization: `Bearer ${t}` })).status, 200);
    const again = await token({ sub: 'carol' });
    assert.equal((await get('/data/natural_earth/0/0/0.png', { authorization: `Bearer ${again}` })).status, 200);
    assert.equal(idp.hits, 1, 'the key set is cached');
    const ids = (json(await get('/data.json', { authorization: `Bearer ${t}` })) as unknown as { id: string }[]).map((d) => d.id).sort();
    assert.deepEqual(ids, ['natural_earth', 'open-cities']);
    const [h, p, signature] = t.split('.');
    const claims = Buffer.from(JSON.stringify({ ...jose.decodeJwt(t), sub: 'mallory' })).toString('base64url');
    const forged = `${h}.${claims}.${signature}`;
    // The forgery is the signed token with other claims and nothing else: its refusal is the signature's doing.
    assert.notEqual(claims, p);
    assert.equal(jose.decodeJwt(forged).sub, 'mallory');
    assert.deepEqual(jose.decodeProtectedHeader(forged), jose.decodeProtectedHeader(t));
    assertRefused(await get('/data/natural_earth/0/0/0.png', { authorization: `Bearer ${forged}` }), 401, 'claims changed after signing');
  });

  test('a JWKS URL that cannot be reached: its tokens are 401 as before, the failure is logged once with the URL and the reason, and tokens work once it answers', async () => {
    const pair = await jose.generateKeyPair('RS256');
    const down = await keySetServer(pair.publicKey, 'r2');
    // A port nothing listens on yet: the provider is down from the start.
    const port = await freePort();
    const url = `http://127.0.0.1:${port}/jwks.json`;
    await reload(urlJwt(url));
    const sign = (sub: string, key = pair.privateKey, kid = 'r2') => new jose.SignJWT({ sub, tiles: { sources: '*' } }).setProtectedHeader({ alg: 'RS256', kid }).setAudience('maps').setExpirationTime('5m').sign(key);
    const tile = '/data/natural_earth/0/0/0.png';
    // Each a token of its own (a refused token is remembered for 5 s): each one tries the URL again.
    for (const sub of ['dave', 'erin', 'frank']) {
      const r = await get(tile, { authorization: `Bearer ${await sign(sub)}` });
      assertRefused(r, 401, `${sub}: key set unreachable`);
      assert.match(String(r.headers['www-authenticate']), /error="invalid_token"/);
    }
    const failed = logLines(/cannot get the JSON Web Key Set/);
    assert.equal(failed.length, 1, `one line for the failure, not one per token:\n${failed.join('\n')}`);
    const line = JSON.parse(failed[0]) as { level: number; url: string; reason: string };
    assert.equal(line.url, url);
    assert.match(line.reason, /ECONNREFUSED/);
    assert.equal(line.level, 40, 'a warning');
    try {
      await down.listen(port);
      assert.equal((await get(tile, { authorization: `Bearer ${await sign('grace')}` })).status, 200, 'the provider is back');
      assert.equal(logLines(/JSON Web Key Set of auth\.jwt\.jwks_url answers again/).length, 1);
      assert.equal(logLines(/cannot get the JSON Web Key Set/).length, 1);
      // The first URL's tokens: not this configuration's key set.
      assertRefused(await get(tile, { authorization: `Bearer ${await token()}` }), 401, 'signed for the URL before the reload');
    } finally {
      down.server.close();
    }
  });

  test('a reload hands on the key set of a URL it keeps and drops the one of a URL it changes', async () => {
    await reload(urlJwt(idp.url()));
    const fetched = idp.hits;
    assert.equal((await get('/data/natural_earth/0/0/0.png', { authorization: `Bearer ${await token({ sub: 'heidi' })}` })).status, 200);
    // The URL was left for another by the reload before: its key set went with that configuration, and is fetched again.
    assert.equal(idp.hits, fetched + 1, 'a URL back in the configuration is fetched afresh');
    await reload(urlJwt(idp.url(), '["maps"]'));
    assert.equal((await get('/data/natural_earth/0/0/0.png', { authorization: `Bearer ${await token({ sub: 'ivan' })}` })).status, 200);
    assert.equal(idp.hits, fetched + 1, 'the same URL after a reload: the keys it fetched are kept');
  });

  test('a reload that changes the HMAC secret: tokens signed with the old one are refused, with the new one accepted', async () => {
    const tile = '/data/natural_earth/0/0/0.png';
    const sign = (secret: string) => new jose.SignJWT({ sub: 'judy', tiles: { sources: '*' } }).setProtectedHeader({ alg: 'HS256' }).setExpirationTime('5m').sign(new TextEncoder().encode(secret));
    const [a, b] = await Promise.all([sign(SECRET_A), sign(SECRET_B)]);
    await reload('secret_env = "TSTS_JWT_A"');
    assert.equal((await get(tile, { authorization: `Bearer ${a}` })).status, 200, 'the secret of TSTS_JWT_A');
    assertRefused(await get(tile, { authorization: `Bearer ${b}` }), 401, 'signed with another secret');
    assertRefused(await get(tile, { authorization: `Bearer ${await token()}` }), 401, 'a token of the key set before');
    await reload('secret_env = "TSTS_JWT_B"');
    assertRefused(await get(tile, { authorization: `Bearer ${a}` }), 401, 'the old secret, a token accepted before the reload');
    assert.equal((await get(tile, { authorization: `Bearer ${b}` })).status, 200, 'the new secret');
  });
});

test('tileserver-ts key new prints a key and the [[auth.keys]] entry with its hash', async () => {
  const r = await runCli(['key', 'new', '--name', 'web-app']);
  assert.equal(r.code, 0, r.stderr);
  const key = /^key: (tsk_[A-Za-z0-9_-]{43})$/m.exec(r.stdout)?.[1];
  assert.ok(key, r.stdout);
  assert.match(r.stdout, /^\[\[auth\.keys\]\]\nname = "web-app"\nhash = "([0-9a-f]{64})"$/m);
  assert.equal(/hash = "([0-9a-f]{64})"/.exec(r.stdout)?.[1], hashKey(key));
  const bad = await runCli(['key', 'new', '--name', 'no spaces']);
  assert.equal(bad.code, 2);
});
