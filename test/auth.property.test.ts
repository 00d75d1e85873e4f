// Property tests of the access-control parsers (docs/access.md): id patterns, the bearer header and the `key`
// query parameter, the path-to-resource reading (it must find the id a route will find, however the path is
// encoded), the keys file and the key table, the JWT scope claim, and the gate as a whole: whatever a client
// sends, it answers a verdict and never throws.
import { test } from 'node:test';
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import assert from 'node:assert/strict';
import type { IncomingMessage } from 'node:http';
import * as jose from 'jose';
import fc from './helpers/fast-check.js';
import { compileMatcher, globMatch, patternList } from '../src/auth/patterns.js';
import { bearerCredential, credentialOf, looksLikeJwt, queryKey } from '../src/auth/credentials.js';
import { pathTargets } from '../src/auth/resources.js';
import { routedPath } from '../src/routes/match.js';
import { hashKey, KeyTable, newKey } from '../src/auth/keys.js';
import { JwtVerifier, scopeOf } from '../src/auth/jwt.js';
import { parseKeysFile } from '../src/config/auth-files.js';
import { ConfigError } from '../src/config/errors.js';
import { validateConfig } from '../src/config/load.js';
import { checkRequest } from '../src/auth/gate.js';
import type { AppState } from '../src/state/app-state.js';

const RUNS = { numRuns: 2000 };

/** The reference reading of a glob: `*` is `.*`, everything else literal, anchored at both ends. */
function globReference(pattern: string, text: string): boolean {
  const re = new RegExp(`^${pattern.split('*').map((p) => p.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')).join('.*')}$`, 's');
  return re.test(text);
}

const small = (chars: string, max: number) => fc.array(fc.constantFrom(...chars.split('')), { maxLength: max }).map((a) => a.join(''));

test('globMatch agrees with the regular-expression reading of a pattern', () => {
  fc.assert(
    fc.property(small('ab*-.', 10), small('ab-.', 12), (p, t) => {
      assert.equal(globMatch(p, t), globReference(p, t));
    }),
    { numRuns: 5000 },
  );
});

test('compileMatcher: an id is allowed exactly when one of the patterns matches it', () => {
  fc.assert(
    fc.property(fc.array(small('ab*', 5), { maxLength: 4 }), small('ab', 6), (patterns, id) => {
      assert.equal(compileMatcher(patterns)(id), patterns.some((p) => globReference(p, id)));
    }),
    RUNS,
  );
  assert.equal(compileMatcher(undefined)('x'), false, 'no patterns allow nothing');
  assert.equal(compileMatcher(['*'])(''), true);
});

test('patternList reads a list or a space-separated string, and nothing else', () => {
  fc.assert(
    fc.property(fc.anything(), (value) => {
      const list = patternList(value);
      assert.ok(Array.isArray(list) && list.every((s) => typeof s === 'string' && s.length > 0));
    }),
    RUNS,
  );
  assert.deepEqual(patternList(' osm-*  basic '), ['osm-*', 'basic']);
  assert.deepEqual(patternList(['a', 3, '', 'b']), ['a', 'b']);
});

const token68 = fc.stringMatching(/^[A-Za-z0-9\-._~+/]{1,60}=*$/);

test('bearerCredential: a Bearer token68 is read back, any other header is none or malformed, never a throw', () => {
  fc.assert(
    fc.property(token68, fc.constantFrom('Bearer ', 'bearer ', 'BEARER  '), (tok, scheme) => {
      const c = bearerCredential(`${scheme}${tok}`);
      assert.ok(c && c.kind !== 'malformed');
      assert.equal(c.value, tok);
      assert.equal(c.kind, looksLikeJwt(tok) ? 'jwt' : 'key');
    }),
    RUNS,
  );
  fc.assert(
    fc.property(fc.oneof(fc.string(), fc.string().map((s) => `Bearer ${s}`), fc.array(fc.string(), { maxLength: 3 })), (h) => {
      const c = bearerCredential(h);
      if (c && c.kind !== 'malformed') assert.ok(c.value.length > 0);
    }),
    RUNS,
  );
  assert.equal(bearerCredential('Basic dXNlcjpwYXNz'), undefined, 'another scheme is not ours');
  assert.deepEqual(bearerCredential('Bearer'), { kind: 'malformed' });
  assert.deepEqual(bearerCredential('Bearer a b'), { kind: 'malformed' });
  assert.deepEqual(bearerCredential(`Bearer ${'a'.repeat(9000)}`), { kind: 'malformed' });
});

test('queryKey reads the first `key` parameter as URLSearchParams does, and never throws', () => {
  const part = fc.oneof(fc.string(), fc.constantFrom('key=', 'key=a%20b', 'key=x+y', 'akey=1', 'key', '%', '%zz', '&&', '#'));
  fc.assert(
    fc.property(fc.array(part, { maxLength: 5 }), fc.boolean(), (parts, withQuery) => {
      const url = `/data/x/0/0/0.pbf${withQuery ? '?' : ''}${parts.join('&')}`;
      const q = url.indexOf('?');
      const expected = q < 0 ? undefined : (new URLSearchParams(url.slice(q + 1).split('#')[0]).get('key') ?? undefined);
      assert.equal(queryKey(url), expected);
    }),
    RUNS,
  );
  assert.deepEqual(credentialOf('/x?key=abc', 'Bearer def'), { kind: 'key', value: 'def' }, 'the header wins');
  assert.deepEqual(credentialOf('/x?key=abc', 'Bearer def', false), { kind: 'key', value: 'abc' }, 'where the bearer is not ours, the query key');
});

const idChars = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_.-';
const id = fc
  .tuple(fc.constantFrom(...'abcXYZ019_'.split('')), small(idChars, 12))
  .map(([a, b]) => a + b)
  .filter((s) => !s.endsWith('.json'));

/** Percent-encodes some characters of `s` (upper or lower hex): the same id to the router. */
const encoded = (s: string) =>
  fc.array(fc.integer({ min: 0, max: 2 }), { minLength: s.length, maxLength: s.length }).map((how) =>
    s
      .split('')
      .map((ch, i) => (how[i] === 0 ? ch : `%${ch.charCodeAt(0).toString(16).padStart(2, '0')}`[how[i] === 1 ? 'toUpperCase' : 'toLowerCase']()))
      .join(''),
  );

test('pathTargets finds the id a route finds, however the path spells it', () => {
  fc.assert(
    fc.property(
      id.chain((i) => fc.tuple(fc.constant(i), encoded(i))),
      fc.constantFrom('/data/{}/1/0/0.pbf', '/data/{}.json', '/data/{}/hillshade/0/0/0.png', '/api/elevation/{}', '/x/../data/{}/0/0/0.pbf', '/./data/{}/'),
      fc.constantFrom('', '?key=k', '?a=1'),
      ([plain, spelled], template, query) => {
        const t = pathTargets('GET', template.replace('{}', spelled) + query);
        assert.deepEqual(t.targets, [{ kind: 'source', id: plain }]);
      },
    ),
    RUNS,
  );
  fc.assert(
    fc.property(id.chain((i) => fc.tuple(fc.constant(i), encoded(i))), fc.constantFrom('/styles/{}/style.json', '/styles/{}.json', '/embed/{}', '/ogc/styles/{}/map/tiles'), ([plain, spelled], template) => {
      assert.deepEqual(pathTargets('GET', template.replace('{}', spelled)).targets, [{ kind: 'style', id: plain }]);
    }),
    RUNS,
  );
  assert.deepEqual(pathTargets('GET', '/data/a%2Bb/0/0/0.pbf').targets, [{ kind: 'source', id: 'a' }, { kind: 'source', id: 'b' }], 'an ad-hoc composite is each member');
  assert.deepEqual(pathTargets('GET', 'http://h/data/osm/0/0/0.pbf').targets, [{ kind: 'source', id: 'osm' }], 'an absolute-form target');
  assert.equal(pathTargets('POST', '/mcp').bearer, false);
  assert.equal(pathTargets('GET', '/data.json').listing, true);
});

test('routedPath and pathTargets never throw', () => {
  fc.assert(
    fc.property(fc.oneof(fc.string(), fc.string().map((s) => `/data/${s}`), fc.string().map((s) => `/styles/${s}`), fc.constantFrom('*', '', '//', '/%', '/%E0%A4%A', 'http://[', '/data/%ZZ/0/0/0.pbf')), (url) => {
      routedPath(url);
      const t = pathTargets('GET', url);
      assert.ok(Array.isArray(t.targets));
    }),
    { numRuns: 5000 },
  );
});

test('the key table finds a key by its hash, refuses every other string and an expired key', () => {
  const keys = Array.from({ length: 3 }, () => newKey());
  const table = new KeyTable([
    ...keys.map((k, i) => ({ name: `k${i}`, hash: k.hash, sources: ['*'], styles: ['*'] })),
    { name: 'old', hash: hashKey('old-key'), sources: ['*'], styles: ['*'], expires: '2020-01-01T00:00:00Z' },
  ]);
  for (const [i, k] of keys.entries()) assert.equal(table.lookup(k.key, Date.now())?.name, `k${i}`);
  assert.equal(table.lookup('old-key', Date.parse('2019-12-31T23:59:59Z'))?.name, 'old');
  assert.equal(table.lookup('old-key', Date.now()), undefined, 'expired');
  fc.assert(
    fc.property(fc.string(), (s) => {
      assert.equal(table.lookup(s, Date.now()), undefined);
    }),
    RUNS,
  );
  assert.match(keys[0].key, /^tsk_[A-Za-z0-9_-]{43}$/);
});

test('parseKeysFile: keys from TOML or JSON, any other text a ConfigError naming the file', () => {
  const h = hashKey('k');
  assert.equal(parseKeysFile(`[[keys]]\nname = "a"\nhash = "${h}"\n`, 'k.toml')[0].name, 'a');
  assert.equal(parseKeysFile(JSON.stringify({ keys: [{ name: 'b', hash: h.toUpperCase() }] }), 'k.json')[0].hash, h, 'hashes are read in lower case');
  assert.equal(parseKeysFile(JSON.stringify([{ name: 'c', hash: h, sources: ['osm-*'] }]), 'k.json')[0].sources[0], 'osm-*');
  fc.assert(
    fc.property(fc.oneof(fc.string(), fc.json(), fc.jsonValue().map((v) => JSON.stringify({ keys: [v] }))), fc.constantFrom('keys.toml', 'keys.json'), (text, file) => {
      try {
        parseKeysFile(text, file);
      } catch (err) {
        assert.ok(err instanceof ConfigError, String(err));
        assert.ok((err as Error).message.includes(file));
      }
    }),
    RUNS,
  );
});

test('scopeOf never throws and allows only what the claim lists', () => {
  fc.assert(
    fc.property(fc.jsonValue(), (claim) => {
      const s = scopeOf(claim);
      assert.equal(typeof s.sources('x'), 'boolean');
    }),
    RUNS,
  );
  const s = scopeOf({ sources: 'osm-* dem', styles: ['basic'] });
  assert.ok(s.sources('osm-a') && s.sources('dem') && !s.sources('other'));
  assert.ok(s.styles('basic') && !s.styles('osm-a'));
  assert.equal(scopeOf(undefined).sources('x'), false, 'no claim, nothing');
});

test('the JWT verifier refuses alg none, garbage and foreign signatures without throwing', async () => {
  const { publicKey, privateKey } = await jose.generateKeyPair('ES256');
  const other = await jose.generateKeyPair('ES256');
  const jwk = { ...(await jose.exportJWK(publicKey)), kid: 'k1', alg: 'ES256' };
  const dir = mkdtempSync(path.join(os.tmpdir(), 'tsts-auth-'));
  const file = `${dir}/jwks.json`;
  writeFileSync(file, JSON.stringify({ keys: [jwk] }));
  const { config } = validateConfig({ auth: { jwt: { jwks_file: file, issuer: 'iss', audience: 'aud' } } }, 't.toml', dir, {});
  const v = new JwtVerifier(config.auth!.jwt!);
  const claims = { sub: 'alice', tiles: { sources: ['*'] } };
  const sign = (key: CryptoKey, kid = 'k1') => new jose.SignJWT(claims).setProtectedHeader({ alg: 'ES256', kid }).setIssuer('iss').setAudience('aud').setExpirationTime('10m').sign(key);
  const good = await v.verify(await sign(privateKey), Date.now());
  assert.ok(good.ok && good.name === 'alice' && good.sources('any'));
  assert.equal((await v.verify(await sign(other.privateKey), Date.now())).ok, false, 'signed by another key');
  const none = new jose.UnsecuredJWT(claims).setIssuer('iss').setAudience('aud').setExpirationTime('10m').encode();
  assert.equal((await v.verify(none, Date.now())).ok, false, 'alg none');
  const noExp = await new jose.SignJWT({ sub: 'bob' }).setProtectedHeader({ alg: 'ES256', kid: 'k1' }).setIssuer('iss').setAudience('aud').sign(privateKey);
  assert.equal((await v.verify(noExp, Date.now())).ok, false, 'a token without exp');
  await fc.assert(
    fc.asyncProperty(fc.oneof(fc.string(), fc.stringMatching(/^[A-Za-z0-9_-]{0,40}\.[A-Za-z0-9_-]{0,40}\.[A-Za-z0-9_-]{0,40}$/)), async (tok) => {
      assert.equal((await v.verify(tok, Date.now())).ok, false);
    }),
    { numRuns: 300 },
  );
});

test('the HMAC secret is the one validation read from the environment it was given, not process.env', async () => {
  const name = 'TSTS_HMAC_GIVEN_TO_VALIDATION';
  assert.equal(process.env[name], undefined, 'a variable only the given environment has');
  const secret = 's'.repeat(40);
  const { config } = validateConfig({ auth: { jwt: { secret_env: name } } }, 't.toml', '/tmp', { [name]: secret });
  const v = new JwtVerifier(config.auth!.jwt!);
  const sign = (key: string) => new jose.SignJWT({ sub: 'alice' }).setProtectedHeader({ alg: 'HS256' }).setExpirationTime('10m').sign(new TextEncoder().encode(key));
  assert.equal((await v.verify(await sign(secret), Date.now())).ok, true, 'signed with the secret validation read');
  assert.equal((await v.verify(await sign('o'.repeat(40)), Date.now())).ok, false, 'signed with another secret');
});

test('checkRequest answers a verdict for any target and headers, and never throws', async () => {
  const h = hashKey('secret-key');
  const { config } = validateConfig(
    {
      sources: [
        { id: 'pub', type: 'pmtiles', path: 'a.pmtiles' },
        { id: 'priv', type: 'pmtiles', path: 'b.pmtiles', access: 'key' },
        { id: 'shut', type: 'pmtiles', path: 'c.pmtiles', access: 'closed' },
      ],
      auth: { keys: [{ name: 'k', hash: h, sources: ['priv'], origins: ['https://ok.example'] }], jwt: { secret_env: 'S' } },
    },
    't.toml',
    '/tmp',
    { S: 'x'.repeat(40) },
  );
  // The gate asks whether an id is served (one that is not is answered as a closed one): these three are.
  const served = new Map(['pub', 'priv', 'shut'].map((id) => [id, {}]));
  const state = { config, styles: new Map(), sources: served, composites: new Map() } as unknown as AppState;
  const req = (url: string, headers: Record<string, string | string[]> = {}, method = 'GET') => ({ url, method, headers }) as unknown as IncomingMessage;
  const status = async (url: string, headers: Record<string, string> = {}) => {
    const v = await checkRequest(state, req(url, headers));
    return v.ok ? 200 : v.status;
  };
  assert.equal(await status('/data/pub/0/0/0.pbf'), 200);
  assert.equal(await status('/data/priv/0/0/0.pbf'), 401);
  assert.equal(await status('/data/priv/0/0/0.pbf?key=secret-key'), 200);
  assert.equal(await status('/data/pr%69v/0/0/0.pbf?key=wrong'), 401);
  assert.equal(await status('/data/priv/0/0/0.pbf?key=secret-key', { origin: 'https://evil.example' }), 403);
  assert.equal(await status('/data/priv/0/0/0.pbf?key=secret-key', { referer: 'https://ok.example/page' }), 200);
  assert.equal(await status('/data/shut/0/0/0.pbf?key=secret-key'), 404);
  assert.equal(await status('/data/none/0/0/0.pbf?key=secret-key'), 404, 'an id not served, as the closed one');
  assert.equal(await status('/data/none/0/0/0.pbf'), 404, 'under the default public, without a key too');
  assert.equal(await status('/data/pub+priv/0/0/0.pbf'), 401);
  const secret = new TextEncoder().encode('x'.repeat(40));
  const jwt = await new jose.SignJWT({ sub: 's', tiles: { sources: 'priv' } }).setProtectedHeader({ alg: 'HS256' }).setExpirationTime('1m').sign(secret);
  assert.equal(await status('/data/priv/0/0/0.pbf', { authorization: `Bearer ${jwt}` }), 200);
  const hs512 = await new jose.SignJWT({ sub: 's', tiles: { sources: 'priv' } }).setProtectedHeader({ alg: 'HS512' }).setExpirationTime('1m').sign(secret);
  assert.equal(await status('/data/priv/0/0/0.pbf', { authorization: `Bearer ${hs512}` }), 401, 'an algorithm not allowed');
  await fc.assert(
    fc.asyncProperty(
      fc.oneof(fc.string(), fc.string().map((s) => `/data/${s}`), fc.constantFrom('/data/priv/0/0/0.pbf', '*', '/data/%E0/x')),
      fc.dictionary(fc.constantFrom('authorization', 'origin', 'referer', 'x'), fc.oneof(fc.string(), fc.string().map((s) => `Bearer ${s}`), fc.array(fc.string(), { maxLength: 2 }))),
      fc.constantFrom('GET', 'HEAD', 'POST', 'OPTIONS', undefined),
      async (url, headers, method) => {
        const v = await checkRequest(state, req(url, headers as Record<string, string>, method as string));
        assert.ok(v.ok || [401, 403, 404].includes(v.status));
      },
    ),
    { numRuns: 1000 },
  );
});

test('no spelling of a path reaches a key-level source without a key (dot segments, percent-encoding, the tile shortcut)', async () => {
  const { config } = validateConfig(
    { sources: [{ id: 'osm', type: 'pmtiles', path: 'a.pmtiles' }, { id: 'priv', type: 'pmtiles', path: 'b.pmtiles', access: 'key' }], auth: {} },
    't.toml',
    '/tmp',
    {},
  );
  // Both served: a source that is not would be refused as unseen, and the property would hold without the key check.
  const state = { config, styles: new Map(), sources: new Map(['osm', 'priv'].map((id) => [id, {}])), composites: new Map() } as unknown as AppState;
  const seg = fc.constantFrom('data', 'osm', 'priv', '..', '.', '%2e%2e', '%2E', '%70riv', 'pri%76', '', 'x', '0', '0.pbf', 'osm+priv', 'osm%2Bpriv');
  /** How the router reads a path: URL's dot-segment resolution, then each segment percent-decoded. */
  const routed = (url: string) => {
    const segs = new URL(`http://h${url}`).pathname.split('/');
    return segs.map((s) => {
      try {
        return decodeURIComponent(s);
      } catch {
        return s;
      }
    });
  };
  await fc.assert(
    fc.asyncProperty(fc.array(seg, { minLength: 1, maxLength: 7 }), async (parts) => {
      const url = `/${parts.join('/')}`;
      const segs = routed(url);
      // The paths a route serves for a source here: its tile `/data/{id}/{z}/{x}/{y}.{ext}` (segments not empty)
      // and its page `/data/{id}/`. Any other path matches no route: it touches nothing and is answered 404.
      const served = (segs.length === 6 && segs.slice(2).every((s) => s !== '')) || (segs.length === 4 && segs[2] !== '' && segs[3] === '');
      const touchesPriv = segs[1] === 'data' && served && segs[2].split('+').includes('priv');
      const v = await checkRequest(state, { url, method: 'GET', headers: {} } as unknown as IncomingMessage);
      if (touchesPriv) assert.equal(v.ok, false, url);
    }),
    { numRuns: 5000 },
  );
});

test('[auth] configuration errors name the setting: files, key sets, secrets, duplicate keys', () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'tsts-auth-cfg-'));
  const h = hashKey('k');
  const bad = (auth: unknown, env: NodeJS.ProcessEnv, pattern: RegExp) =>
    assert.throws(() => validateConfig({ auth }, 't.toml', dir, env), (err: Error) => err instanceof ConfigError && pattern.test(err.message));
  bad({ keys_file: 'missing.toml' }, {}, /auth\.keys_file: cannot read/);
  writeFileSync(`${dir}/bad.json`, '{"keys": [{"name": "a"}]}');
  bad({ keys_file: 'bad.json' }, {}, /bad\.json: keys\[0\]\.hash/);
  bad({ keys: [{ name: 'a', hash: h }, { name: 'b', hash: h }] }, {}, /hash of another key/);
  bad({ keys: [{ name: 'a', hash: h }, { name: 'a', hash: hashKey('j') }] }, {}, /name "a" is used by two keys/);
  bad({ keys: [{ name: 'a', hash: 'abc' }] }, {}, /auth\.keys\[0\]\.hash/);
  bad({ keys: [{ name: 'a', hash: h, expires: 'tomorrow' }] }, {}, /RFC 3339/);
  bad({ jwt: {} }, {}, /exactly one of/);
  bad({ jwt: { jwks_url: 'https://idp/jwks', secret_env: 'S' } }, { S: 'x'.repeat(40) }, /exactly one of/);
  bad({ jwt: { secret_env: 'S' } }, {}, /S is not set/);
  bad({ jwt: { secret_env: 'S' } }, { S: 'short' }, /shorter than 32 bytes/);
  bad({ jwt: { secret_env: 'S', algorithms: ['RS256'] } }, { S: 'x'.repeat(40) }, /HS256, HS384 or HS512 only/);
  bad({ jwt: { jwks_url: 'https://idp/jwks', algorithms: ['none'] } }, {}, /"none" is never accepted/);
  writeFileSync(`${dir}/private.json`, JSON.stringify({ keys: [{ kty: 'EC', crv: 'P-256', x: 'a', y: 'b', d: 'secret' }] }));
  bad({ jwt: { jwks_file: 'private.json' } }, {}, /private or symmetric key material/);
  bad({ default_access: 'secret' }, {}, /auth\.default_access/);
  assert.throws(() => validateConfig({ sources: [{ id: 'a', type: 'pmtiles', path: 'a.pmtiles', access: 'private' }] }, 't.toml', dir, {}), /sources\[0\]\.access/);
  // The defaults: [auth] absent, or empty, changes nothing.
  assert.equal(validateConfig({}, 't.toml', dir, {}).config.auth, undefined);
  assert.equal(validateConfig({ auth: {} }, 't.toml', dir, {}).config.auth?.default_access, 'public');
});
