// Property tests of every parser of user input on the MCP side: tool arguments (any JSON value: a tool result,
// never a throw; an error exactly when the valibot schema refuses), client registration bodies, authorization
// requests and consent forms, token requests and Authorization headers (any input: an OAuth answer with a
// 2xx/3xx/4xx status, never a throw or a 5xx), and redirect URIs (only https, loopback http or an app's scheme).
import assert from 'node:assert/strict';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import * as v from 'valibot';
import { AuthorizationServer, redirectUriProblem, REGISTRATIONS_PER_MINUTE } from '../src/mcp/oauth/authorization-server.js';
import { loadSigningKey } from '../src/mcp/oauth/signing-key.js';
import { OAuthStore } from '../src/mcp/oauth/store.js';
import { callTool, mcpTools } from '../src/mcp/tools.js';
import { tempDir } from './helpers/foundation.js';
import fc from './helpers/fast-check.js';

const ORIGIN = 'http://127.0.0.1:8080';

describe('tool arguments', () => {
  const tools = mcpTools(true);
  let dispatched = 0;
  const dispatch = async (req: Request) => {
    dispatched++;
    // The request a valid input makes is well formed: a URL on the origin, and a JSON body where there is one.
    assert.ok(req.url.startsWith(`${ORIGIN}/`), req.url);
    if (req.method === 'POST') JSON.parse(await req.text());
    return new Response('{"ok":true}', { headers: { 'content-type': 'application/json' } });
  };

  test('any JSON value as arguments: a tool result, an error exactly when the schema refuses it', async () => {
    const names = tools.map((t) => t.name);
    await fc.assert(
      fc.asyncProperty(fc.constantFrom(...names), fc.oneof(fc.jsonValue(), fc.constant({}), fc.record({ source: fc.string({ minLength: 1, maxLength: 12 }) }), fc.record({ source: fc.string({ minLength: 1, maxLength: 12 }), z: fc.integer({ min: 0, max: 22 }), x: fc.nat(64), y: fc.nat(64) }), fc.record({ style: fc.string({ minLength: 1, maxLength: 12 }), lon: fc.double({ min: -180, max: 180, noNaN: true }), lat: fc.double({ min: -85, max: 85, noNaN: true }), zoom: fc.double({ min: 0, max: 22, noNaN: true }) }), fc.record({ source: fc.oneof(fc.string(), fc.integer()), z: fc.integer({ min: -2, max: 30 }), x: fc.integer(), y: fc.integer(), lon: fc.double(), lat: fc.double(), zoom: fc.double(), style: fc.string() }, { requiredKeys: [] })), async (name, args) => {
        const t = tools.find((x) => x.name === name)!;
        const r = await callTool(tools, name, args, dispatch, ORIGIN);
        assert.ok(r);
        const accepted = !Array.isArray(args) && v.safeParse(t.input, args ?? {}).success;
        assert.equal(r.isError === true, !accepted, JSON.stringify(args));
        if (!accepted) assert.match((r.content[0] as { text: string }).text, new RegExp(`^invalid arguments for ${name}: `));
      }),
      { numRuns: 1500 },
    );
    assert.ok(dispatched > 150, `only ${dispatched} generated inputs were valid`);
  });

  test('valid tile and static map arguments build the route paths with the values given', async () => {
    const seen: string[] = [];
    const record = async (req: Request) => (seen.push(new URL(req.url).pathname), new Response('{}', { headers: { 'content-type': 'application/json' } }));
    await fc.assert(
      fc.asyncProperty(fc.string({ minLength: 1, maxLength: 20 }), fc.integer({ min: 0, max: 22 }), fc.nat(1000), fc.nat(1000), async (source, z, x, y) => {
        seen.length = 0;
        const r = await callTool(tools, 'get_tile_geojson', { source, z, x, y }, record, ORIGIN);
        assert.ok(!r?.isError);
        assert.equal(seen[0], `/data/${encodeURIComponent(source)}/${z}/${x}/${y}.geojson`);
      }),
    );
    seen.length = 0;
    await callTool(tools, 'render_static_map', { style: 's', lon: 1.5, lat: -2, zoom: 3, bearing: 10, pitch: 20, width: 100, height: 50, format: 'webp' }, record, ORIGIN);
    assert.deepEqual(seen, ['/styles/s/static/1.5,-2,3@10,20/100x50.webp']);
  });
});

describe('OAuth inputs', async () => {
  const dir = tempDir('tsts-mcp-prop-');
  const store = new OAuthStore(path.join(dir, 'oauth.sqlite'));
  const jose = await import('jose');
  const key = await loadSigningKey(jose, dir);
  const as = new AuthorizationServer(jose, { enabled: true, token_ttl_secs: 60, consent_attempts_per_minute: 1000, consent_secret: 'the-consent-secret' }, store, key, undefined);
  after(() => store.close());
  const registered = as.register({ redirect_uris: ['https://app.example/cb'], token_endpoint_auth_method: 'none' }).json as { client_id: string };
  const ok4xx = (s: number) => [200, 201, 302, 400, 401, 403, 429].includes(s);

  test('redirect URIs: accepted ones are https, loopback http, or a scheme that is not a browser-dangerous one', () => {
    fc.assert(
      fc.property(fc.oneof(fc.webUrl({ withFragments: true, withQueryParameters: true }), fc.string(), fc.constantFrom('http://localhost:3/cb', 'http://evil.example/cb', 'javascript:alert(1)', 'data:text/html,x', 'cursor://oauth/cb', 'https://a/b#c')), (uri) => {
        const problem = redirectUriProblem(uri);
        if (problem !== undefined) return;
        const u = new URL(uri);
        assert.ok(!u.hash);
        if (u.protocol === 'http:') assert.ok(['localhost', '127.0.0.1', '[::1]'].includes(u.hostname), uri);
        assert.ok(!['javascript:', 'data:', 'file:'].includes(u.protocol), uri);
      }),
      { numRuns: 3000 },
    );
    assert.equal(redirectUriProblem('http://evil.example/cb')?.includes('only to localhost'), true);
    assert.equal(redirectUriProblem('https://app.example/cb'), undefined);
  });

  test('registration: any JSON body gets 201 with a client id or 400 with an RFC 7591 error', () => {
    fc.assert(
      fc.property(fc.oneof(fc.jsonValue(), fc.record({ redirect_uris: fc.oneof(fc.array(fc.oneof(fc.webUrl(), fc.string())), fc.jsonValue()), token_endpoint_auth_method: fc.oneof(fc.constantFrom('none', 'client_secret_post', 'private_key_jwt'), fc.jsonValue()), grant_types: fc.jsonValue(), client_name: fc.jsonValue(), scope: fc.jsonValue() }, { requiredKeys: [] })), (body) => {
        const a = as.register(body);
        assert.ok(a.status === 201 || a.status === 400 || a.status === 429, String(a.status));
        const j = a.json as Record<string, unknown>;
        if (a.status === 201) assert.equal(typeof j.client_id, 'string');
        else assert.ok(['invalid_client_metadata', 'invalid_redirect_uri', 'temporarily_unavailable'].includes(j.error as string), JSON.stringify(j));
      }),
      { numRuns: 1500 },
    );
    // Past the per-minute limit every registration waits.
    for (let i = 0; i < REGISTRATIONS_PER_MINUTE; i++) as.register({ redirect_uris: ['https://app.example/cb'] });
    const limited = as.register({ redirect_uris: ['https://app.example/cb'] });
    assert.deepEqual([limited.status, (limited.json as { error: string }).error], [429, 'temporarily_unavailable']);
  });

  const paramsArb = fc.dictionary(
    fc.constantFrom('response_type', 'client_id', 'redirect_uri', 'code_challenge', 'code_challenge_method', 'scope', 'state', 'resource', 'consent_secret'),
    fc.oneof(fc.string(), fc.constantFrom('code', 'S256', 'plain', 'mcp', registered.client_id, 'https://app.example/cb', 'the-consent-secret', 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM')),
  );

  test('authorization requests and consent forms: a page, a redirect to the registered URI, or a 4xx; never a throw', () => {
    fc.assert(
      fc.property(paramsArb, fc.boolean(), (params, post) => {
        const p = new URLSearchParams(params);
        const a = post ? as.authorizeDecision(p, ORIGIN, '127.0.0.1') : as.authorizePage(p, ORIGIN);
        assert.ok(ok4xx(a.status), String(a.status));
        if (a.status === 302) assert.ok(a.headers!.location.startsWith('https://app.example/cb?'), a.headers!.location);
        if (a.status === 302 && new URL(a.headers!.location).searchParams.has('code')) assert.equal(params.consent_secret, 'the-consent-secret');
      }),
      { numRuns: 1500 },
    );
  });

  test('token requests and Authorization headers: an OAuth error or a token, never a throw or a 5xx', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.dictionary(fc.constantFrom('grant_type', 'code', 'code_verifier', 'client_id', 'client_secret', 'redirect_uri', 'refresh_token'), fc.oneof(fc.string(), fc.constantFrom('authorization_code', 'refresh_token', registered.client_id))),
        fc.option(fc.oneof(fc.string(), fc.string().map((s) => `Basic ${Buffer.from(s).toString('base64')}`), fc.string().map((s) => `Bearer ${s}`))),
        async (form, authorization) => {
          const a = await as.token(new URLSearchParams(form), authorization ?? undefined, ORIGIN);
          assert.ok(a.status === 400 || a.status === 401, `${a.status} ${JSON.stringify(a.json)}`);
          const check = await as.verifyBearer(authorization ?? undefined, ORIGIN);
          assert.equal(check.ok, false);
        },
      ),
      { numRuns: 800 },
    );
  });
});
