// OAuth 2.1 for /mcp, end to end with the MCP SDK's own client (OAuthClientProvider, finishAuth, auth()):
// metadata, dynamic registration, PKCE authorization through the consent page (the operator's secret), the token,
// a tool call, refresh with rotation (the old refresh token refused, and its reuse ending the session),
// revocation through the admin listener (the session's next call refused), a restart keeping clients and sessions;
// and the refusals: wrong PKCE verifier, expired, tampered and other-audience tokens, a wrong consent secret (then
// the rate limit), /mcp without a token — each with its status and WWW-Authenticate.
import assert from 'node:assert/strict';
import { createHash, randomBytes } from 'node:crypto';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { auth, UnauthorizedError, type OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js';
import type { OAuthClientInformationMixed, OAuthClientMetadata, OAuthTokens } from '@modelcontextprotocol/sdk/shared/auth.js';
import { importJWK, SignJWT, type JWK } from 'jose';
import { tempDir } from './helpers/foundation.js';
import { fixture, freePort, startServer, type TestServer } from './helpers/server.js';

const SECRET = 'operator-consent-secret';
const REDIRECT = 'http://127.0.0.1:9/callback';
const timeout = () => AbortSignal.timeout(10_000);
const MCP_LIST = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list', params: {} });
const MCP_HEADERS = { 'content-type': 'application/json', accept: 'application/json, text/event-stream' };

/** An MCP client application as the SDK expects one: it keeps what the flow hands it and records the redirect. */
class TestProvider implements OAuthClientProvider {
  info: OAuthClientInformationMixed | undefined;
  saved: OAuthTokens | undefined;
  verifier = '';
  authorizationUrl: URL | undefined;
  get redirectUrl() {
    return REDIRECT;
  }
  get clientMetadata(): OAuthClientMetadata {
    return { redirect_uris: [REDIRECT], client_name: 'test agent', grant_types: ['authorization_code', 'refresh_token'], response_types: ['code'], token_endpoint_auth_method: 'none' };
  }
  clientInformation() {
    return this.info;
  }
  saveClientInformation(i: OAuthClientInformationMixed) {
    this.info = i;
  }
  tokens() {
    return this.saved;
  }
  saveTokens(t: OAuthTokens) {
    this.saved = t;
  }
  redirectToAuthorization(url: URL) {
    this.authorizationUrl = url;
  }
  saveCodeVerifier(v: string) {
    this.verifier = v;
  }
  codeVerifier() {
    return this.verifier;
  }
}

/** The consent form of an authorization request, as the page shows it, with `secret` filled in. */
async function consentForm(authorizationUrl: URL, secret: string): Promise<URLSearchParams> {
  const page = await fetch(authorizationUrl, { signal: timeout() });
  assert.equal(page.status, 200);
  const html = await page.text();
  assert.match(html, /<strong>(test agent|by hand)<\/strong> \(client <code>/);
  const form = new URLSearchParams();
  for (const m of html.matchAll(/<input type="hidden" name="([^"]+)" value="([^"]*)">/g)) form.set(m[1], m[2].replace(/&#(\d+);/g, (_, n: string) => String.fromCharCode(Number(n))));
  form.set('consent_secret', secret);
  return form;
}

/** The operator's step: opens the consent page and submits it with `secret`; answers the POST's response. */
async function consent(authorizationUrl: URL, secret: string): Promise<Response> {
  const form = await consentForm(authorizationUrl, secret);
  return fetch(new URL('/oauth/authorize', authorizationUrl), { method: 'POST', body: form, redirect: 'manual', signal: timeout() });
}

/** The consent form submitted from another local address (127.0.0.x): the status of the answer. */
async function consentFrom(localAddress: string, authorizationUrl: URL, secret: string): Promise<number> {
  const body = (await consentForm(authorizationUrl, secret)).toString();
  return new Promise((resolve, reject) => {
    const req = http.request(new URL('/oauth/authorize', authorizationUrl), { method: 'POST', localAddress, agent: false, timeout: 10_000, headers: { 'content-type': 'application/x-www-form-urlencoded', 'content-length': Buffer.byteLength(body) } }, (res) => {
      res.resume();
      res.on('end', () => resolve(res.statusCode ?? 0));
    });
    req.on('error', reject);
    req.end(body);
  });
}

/** The whole flow with the SDK client: a first connect is refused (401), the operator consents, finishAuth, connect. */
async function authorize(url: string, provider: TestProvider): Promise<Client> {
  const first = new Client({ name: 'oauth-test', version: '1.0.0' });
  await assert.rejects(first.connect(new StreamableHTTPClientTransport(new URL(`${url}/mcp`), { authProvider: provider }), { timeout: 15_000 }), UnauthorizedError);
  assert.ok(provider.authorizationUrl, 'the SDK sent the user to the authorization endpoint');
  assert.equal(provider.authorizationUrl.searchParams.get('code_challenge_method'), 'S256');
  const answer = await consent(provider.authorizationUrl, SECRET);
  assert.equal(answer.status, 302);
  const location = new URL(answer.headers.get('location')!);
  assert.equal(`${location.origin}${location.pathname}`, REDIRECT);
  assert.equal(location.searchParams.get('state'), provider.authorizationUrl.searchParams.get('state'));
  const transport = new StreamableHTTPClientTransport(new URL(`${url}/mcp`), { authProvider: provider });
  await transport.finishAuth(location.searchParams.get('code')!);
  const client = new Client({ name: 'oauth-test', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(`${url}/mcp`), { authProvider: provider }), { timeout: 15_000 });
  return client;
}

function mcpWith(url: string, token: string): Promise<Response> {
  return fetch(`${url}/mcp`, { method: 'POST', headers: { ...MCP_HEADERS, authorization: `Bearer ${token}` }, body: MCP_LIST, signal: timeout() });
}

function refreshWith(url: string, clientId: string, refreshToken: string): Promise<Response> {
  return fetch(`${url}/oauth/token`, { method: 'POST', body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: refreshToken, client_id: clientId }), signal: timeout() });
}

const admin = async (base: string, method: string, p: string) => {
  const res = await fetch(base + p, { method, signal: timeout() });
  return { status: res.status, json: (await res.json()) as Record<string, unknown> };
};

function assertRefused(res: Response, status: number, challenge: RegExp): void {
  assert.equal(res.status, status);
  const h = res.headers.get('www-authenticate') ?? '';
  assert.match(h, /^Bearer /);
  assert.match(h, /resource_metadata="http:\/\/127\.0\.0\.1:\d+\/\.well-known\/oauth-protected-resource\/mcp"/);
  assert.match(h, challenge);
}

describe('OAuth 2.1 for /mcp', () => {
  let server: TestServer;
  let adminUrl: string;
  let cacheDir: string;
  let storePath: string;
  let toml: string;
  let port: number;
  const clients: Client[] = [];
  const start = () => startServer({ toml, env: { CONSENT: SECRET } });

  before(async () => {
    cacheDir = tempDir('tsts-mcp-oauth-');
    // A store_path of the operator's, away from [cache] dir, in a directory that does not exist yet.
    storePath = path.join(tempDir('tsts-mcp-oauth-store-'), 'kept', 'oauth.sqlite');
    const adminPort = await freePort();
    adminUrl = `http://127.0.0.1:${adminPort}`;
    toml = `
[[sources]]
id = "cities"
type = "mbtiles"
path = "${fixture('vector/world_cities.mbtiles')}"
[server]
admin_bind = "127.0.0.1:${adminPort}"
disable_render = true
[cache]
dir = "${cacheDir}"
[mcp]
enabled = true
[mcp.oauth]
enabled = true
consent_secret = "\${CONSENT}"
consent_attempts_per_minute = 3
store_path = "${storePath}"
`;
    server = await start();
    port = server.port;
  });
  after(async () => {
    for (const c of clients) await c.close().catch(() => {});
    await server?.stop();
  });

  test('metadata: the protected resource names the authorization server, which announces PKCE S256 and registration', async () => {
    const prm = (await (await fetch(`${server.url}/.well-known/oauth-protected-resource/mcp`, { signal: timeout() })).json()) as Record<string, unknown>;
    assert.equal(prm.resource, `${server.url}/mcp`);
    assert.deepEqual(prm.authorization_servers, [server.url]);
    const asm = (await (await fetch(`${server.url}/.well-known/oauth-authorization-server`, { signal: timeout() })).json()) as Record<string, unknown>;
    assert.equal(asm.issuer, server.url);
    assert.equal(asm.registration_endpoint, `${server.url}/oauth/register`);
    assert.deepEqual(asm.code_challenge_methods_supported, ['S256']);
    assert.deepEqual(asm.grant_types_supported, ['authorization_code', 'refresh_token']);
    // Not an OpenID provider (no ID tokens, no JWKS): no OIDC discovery document. The SDK client, like any OAuth
    // client following RFC 8414, finds the server by the document above (the flow below).
    const oidc = await fetch(`${server.url}/.well-known/openid-configuration`, { signal: timeout() });
    assert.equal(oidc.status, 404);
    await oidc.arrayBuffer();
  });

  test('/mcp without a token: 401 with a Bearer challenge pointing at the resource metadata', async () => {
    const res = await fetch(`${server.url}/mcp`, { method: 'POST', headers: MCP_HEADERS, body: MCP_LIST, signal: timeout() });
    assertRefused(res, 401, /scope="mcp"/);
    assert.doesNotMatch(res.headers.get('www-authenticate')!, /error=/);
    assert.equal(res.headers.get('content-type'), 'application/problem+json');
  });

  let provider: TestProvider;
  test('the SDK client registers, is authorized with PKCE through the consent page, gets a token and calls a tool', async () => {
    provider = new TestProvider();
    const client = await authorize(server.url, provider);
    clients.push(client);
    const r = (await client.callTool({ name: 'get_source_stats', arguments: { source: 'cities' } }, undefined, { timeout: 10_000 })) as { content: { text: string }[] };
    assert.equal((JSON.parse(r.content[0].text) as { maxzoom: number }).maxzoom, 6);
    assert.ok(provider.saved?.refresh_token, 'a refresh token was issued');
    const token = provider.saved!.access_token;
    assert.equal(token.split('.').length, 3, 'the access token is a JWT');
    const claims = JSON.parse(Buffer.from(token.split('.')[1], 'base64url').toString()) as Record<string, unknown>;
    assert.equal(claims.aud, `${server.url}/mcp`);
    assert.equal(claims.iss, server.url);
    // token_ttl_secs is not set here: an hour.
    assert.equal(provider.saved!.expires_in, 3600);
    assert.equal((claims.exp as number) - (claims.iat as number), 3600);
  });

  test('refresh rotates the refresh token: the new pair works, the old refresh token is refused and its reuse ends the session', async () => {
    const before = provider.saved!;
    // auth() with a stored refresh token refreshes (the SDK's own refresh path).
    assert.equal(await auth(provider, { serverUrl: `${server.url}/mcp` }), 'AUTHORIZED');
    const after = provider.saved!;
    assert.notEqual(after.refresh_token, before.refresh_token);
    assert.notEqual(after.access_token, before.access_token);
    assert.equal((await mcpWith(server.url, after.access_token)).status, 200);
    const clientId = provider.info!.client_id;
    const old = await refreshWith(server.url, clientId, before.refresh_token!);
    assert.equal(old.status, 400);
    assert.equal(((await old.json()) as { error: string }).error, 'invalid_grant');
    // Reuse of a rotated token means it leaked: the session is ended, its newest tokens too.
    assertRefused(await mcpWith(server.url, after.access_token), 401, /error="invalid_token"/);
    assert.equal((await refreshWith(server.url, clientId, after.refresh_token!)).status, 400);
  });

  test('the admin listener lists clients and sessions; deleting a session refuses its next call; deletes are idempotent', async () => {
    const p = new TestProvider();
    clients.push(await authorize(server.url, p));
    const clientId = p.info!.client_id;
    const listed = await admin(adminUrl, 'GET', '/__admin/oauth/clients');
    assert.equal(listed.status, 200);
    const mine = (listed.json.clients as { client_id: string; client_name: string; sessions: number }[]).find((c) => c.client_id === clientId);
    assert.equal(mine?.client_name, 'test agent');
    assert.equal(mine?.sessions, 1);
    const sessions = (await admin(adminUrl, 'GET', '/__admin/oauth/sessions')).json.sessions as { token_id: string; client_id: string }[];
    const session = sessions.find((s) => s.client_id === clientId)!;
    assert.ok(session, 'the session is listed');
    assert.equal((await mcpWith(server.url, p.saved!.access_token)).status, 200);
    assert.deepEqual((await admin(adminUrl, 'DELETE', `/__admin/oauth/sessions/${session.token_id}`)).json.deleted, true);
    assertRefused(await mcpWith(server.url, p.saved!.access_token), 401, /error="invalid_token", error_description="the access token's session was revoked"/);
    assert.equal((await refreshWith(server.url, clientId, p.saved!.refresh_token!)).status, 400);
    const again = await admin(adminUrl, 'DELETE', `/__admin/oauth/sessions/${session.token_id}`);
    assert.deepEqual([again.status, again.json.deleted], [200, false]);

    // Deleting a client ends its sessions and its registration.
    const q = new TestProvider();
    clients.push(await authorize(server.url, q));
    const qId = q.info!.client_id;
    assert.deepEqual((await admin(adminUrl, 'DELETE', `/__admin/oauth/clients/${qId}`)).json.deleted, true);
    assertRefused(await mcpWith(server.url, q.saved!.access_token), 401, /error="invalid_token"/);
    assert.ok(!((await admin(adminUrl, 'GET', '/__admin/oauth/sessions')).json.sessions as { client_id: string }[]).some((s) => s.client_id === qId));
    assert.deepEqual((await admin(adminUrl, 'DELETE', `/__admin/oauth/clients/${qId}`)).json.deleted, false);
    assert.equal((await admin(adminUrl, 'POST', '/__admin/oauth/clients')).status, 405);
    // The admin routes are not on the public port.
    assert.equal((await fetch(`${server.url}/__admin/oauth/clients`, { signal: timeout() })).status, 404);
  });

  test('a restart keeps clients, sessions and the signing key: the token from before still works and refreshes', async () => {
    // The store is the file store_path names, not one in [cache] dir.
    assert.ok(existsSync(storePath), `the OAuth store at store_path ${storePath}`);
    assert.ok(!existsSync(path.join(cacheDir, 'mcp-oauth.sqlite')), 'no store in [cache] dir');
    const p = new TestProvider();
    clients.push(await authorize(server.url, p));
    const clientsBefore = (await admin(adminUrl, 'GET', '/__admin/oauth/clients')).json.clients;
    const sessionsBefore = (await admin(adminUrl, 'GET', '/__admin/oauth/sessions')).json.sessions;
    await server.stop();
    // The issuer and audience are the request's origin (no issuer_url here): the restart is on the same port.
    server = await startServer({ toml, env: { CONSENT: SECRET }, port });
    assert.deepEqual((await admin(adminUrl, 'GET', '/__admin/oauth/clients')).json.clients, clientsBefore);
    assert.deepEqual((await admin(adminUrl, 'GET', '/__admin/oauth/sessions')).json.sessions, sessionsBefore);
    assert.ok((sessionsBefore as unknown[]).length >= 1 && (clientsBefore as unknown[]).length >= 1, 'there was something to keep');
    assert.equal((await mcpWith(server.url, p.saved!.access_token)).status, 200);
    const refreshed = await refreshWith(server.url, p.info!.client_id, p.saved!.refresh_token!);
    assert.equal(refreshed.status, 200);
    assert.equal((await mcpWith(server.url, ((await refreshed.json()) as { access_token: string }).access_token)).status, 200);
  });

  test('refusals: wrong PKCE verifier, expired, tampered and other-audience tokens', async () => {
    // A client registered by hand (RFC 7591), the flow by hand with a known verifier.
    const reg = await fetch(`${server.url}/oauth/register`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ redirect_uris: [REDIRECT], token_endpoint_auth_method: 'none', client_name: 'by hand' }), signal: timeout() });
    assert.equal(reg.status, 201);
    const { client_id } = (await reg.json()) as { client_id: string };
    const verifier = randomBytes(32).toString('base64url');
    const challenge = createHash('sha256').update(verifier).digest('base64url');
    const url = new URL(`${server.url}/oauth/authorize`);
    for (const [k, v] of Object.entries({ response_type: 'code', client_id, redirect_uri: REDIRECT, code_challenge: challenge, code_challenge_method: 'S256', state: 'xyz' })) url.searchParams.set(k, v);
    const code = async () => new URL((await consent(url, SECRET)).headers.get('location')!).searchParams.get('code')!;
    const exchange = (c: string, v: string) =>
      fetch(`${server.url}/oauth/token`, { method: 'POST', body: new URLSearchParams({ grant_type: 'authorization_code', code: c, code_verifier: v, client_id, redirect_uri: REDIRECT }), signal: timeout() });
    const wrong = await exchange(await code(), randomBytes(32).toString('base64url'));
    assert.equal(wrong.status, 400);
    assert.deepEqual(await wrong.json(), { error: 'invalid_grant', error_description: 'the code_verifier does not match the code_challenge' });
    // A plain (non-S256) challenge is refused at the authorization endpoint, back to the client.
    const plain = new URL(url);
    plain.searchParams.set('code_challenge_method', 'plain');
    const refusedPlain = await fetch(plain, { redirect: 'manual', signal: timeout() });
    assert.equal(refusedPlain.status, 302);
    assert.equal(new URL(refusedPlain.headers.get('location')!).searchParams.get('error'), 'invalid_request');
    // The right verifier: a token; the same code a second time: refused.
    const c = await code();
    const ok = await exchange(c, verifier);
    assert.equal(ok.status, 200);
    assert.equal((await exchange(c, verifier)).status, 400);
    const good = ((await ok.json()) as { access_token: string }).access_token;
    assert.equal((await mcpWith(server.url, good)).status, 200);

    // Tampered: the payload changed (another client), the signature kept.
    const [h, p, s] = good.split('.');
    const claims = JSON.parse(Buffer.from(p, 'base64url').toString()) as Record<string, unknown>;
    const forged = `${h}.${Buffer.from(JSON.stringify({ ...claims, scope: 'mcp admin', exp: (claims.exp as number) + 3600 })).toString('base64url')}.${s}`;
    assertRefused(await mcpWith(server.url, forged), 401, /error="invalid_token", error_description="the access token is not valid here"/);
    // Signed with the service's own key (read from the state directory), but expired, or for another resource.
    const jwk = JSON.parse(readFileSync(path.join(cacheDir, 'mcp-oauth-signing-key.json'), 'utf8')) as JWK;
    const key = await importJWK(jwk, 'ES256');
    const sign = (aud: string, exp: number) =>
      new SignJWT({ client_id: claims.client_id, sid: claims.sid, scope: 'mcp' }).setProtectedHeader({ alg: 'ES256', kid: jwk.kid, typ: 'at+jwt' }).setIssuer(server.url).setSubject(String(claims.sub)).setAudience(aud).setIssuedAt(exp - 60).setExpirationTime(exp).sign(key);
    const nowS = Math.floor(Date.now() / 1000);
    assert.equal((await mcpWith(server.url, await sign(`${server.url}/mcp`, nowS + 600))).status, 200, 'a token signed so is accepted: the refusals below are about exp and aud');
    assertRefused(await mcpWith(server.url, await sign(`${server.url}/mcp`, nowS - 120)), 401, /error="invalid_token", error_description="the access token has expired"/);
    assertRefused(await mcpWith(server.url, await sign('https://elsewhere.example/mcp', nowS + 600)), 401, /error="invalid_token", error_description="the access token is for another resource"/);
    assertRefused(await mcpWith(server.url, 'not a token'), 401, /error="invalid_request"/);
  });

  test('registration alone grants nothing; a wrong consent secret is 403, and past the limit every attempt is 429 (per address, and ten times that over all)', async () => {
    const p = new TestProvider();
    const first = new Client({ name: 'oauth-test', version: '1.0.0' });
    await assert.rejects(first.connect(new StreamableHTTPClientTransport(new URL(`${server.url}/mcp`), { authProvider: p }), { timeout: 15_000 }), UnauthorizedError);
    assert.ok(p.info?.client_id, 'registered');
    // Registered, no code: the token endpoint has nothing to give.
    const noCode = await fetch(`${server.url}/oauth/token`, { method: 'POST', body: new URLSearchParams({ grant_type: 'authorization_code', code: 'guess', code_verifier: 'x'.repeat(43), client_id: p.info!.client_id }), signal: timeout() });
    assert.equal(noCode.status, 400);
    assert.equal(((await noCode.json()) as { error: string }).error, 'invalid_grant');
    for (let i = 0; i < 3; i++) {
      const wrong = await consent(p.authorizationUrl!, `${SECRET}-${i}`);
      assert.equal(wrong.status, 403);
      assert.equal(wrong.headers.get('location'), null);
      assert.match(await wrong.text(), /not the consent secret/);
    }
    const limited = await consent(p.authorizationUrl!, SECRET);
    assert.equal(limited.status, 429, 'the right secret too waits once the limit is reached');
    assert.equal(limited.headers.get('retry-after'), '60');
    // The limit is per address: the wrong secrets sent from 127.0.0.1 do not lock out the operator at another one.
    assert.equal(await consentFrom('127.0.0.2', p.authorizationUrl!, SECRET), 302, 'the right secret from 127.0.0.2 passes');
    // All addresses together get ten times the limit (30 here): 3 above, then 3 each from 9 more addresses...
    for (let a = 3; a <= 11; a++) for (let i = 0; i < 3; i++) assert.equal(await consentFrom(`127.0.0.${a}`, p.authorizationUrl!, `wrong-${a}-${i}`), 403, `127.0.0.${a}, wrong secret ${i + 1}`);
    // ...and every address waits, the right secret too.
    assert.equal(await consentFrom('127.0.0.12', p.authorizationUrl!, SECRET), 429, 'past 30 wrong secrets a minute over all addresses');
  });
});

describe('[mcp.oauth] issuer_url and token_ttl_secs', () => {
  test('the metadata, tokens and challenges name issuer_url; expires_in is token_ttl_secs and a token past it is refused; a CORS 401 exposes WWW-Authenticate', async () => {
    // issuer_url names the same server by another name (localhost), while every request goes to 127.0.0.1: what
    // the answers name comes from the setting, not from the request's origin.
    const port = await freePort();
    const issuer = `http://localhost:${port}`;
    // The smallest lifetime the setting takes (10-86400 s).
    const TTL = 10;
    const server = await startServer({
      port,
      env: { CONSENT: SECRET },
      toml: `[[sources]]\nid = "cities"\ntype = "mbtiles"\npath = "${fixture('vector/world_cities.mbtiles')}"\n[server]\ndisable_render = true\n[cache]\ndir = "${tempDir('tsts-mcp-oauth-iss-')}"\n[mcp]\nenabled = true\n[mcp.oauth]\nenabled = true\nconsent_secret = "\${CONSENT}"\nissuer_url = "${issuer}/"\ntoken_ttl_secs = ${TTL}\n`,
    });
    try {
      const asm = (await (await fetch(`${server.url}/.well-known/oauth-authorization-server`, { signal: timeout() })).json()) as Record<string, unknown>;
      assert.equal(asm.issuer, issuer);
      assert.equal(asm.authorization_endpoint, `${issuer}/oauth/authorize`);
      assert.equal(asm.token_endpoint, `${issuer}/oauth/token`);
      assert.equal(asm.registration_endpoint, `${issuer}/oauth/register`);
      const prm = (await (await fetch(`${server.url}/.well-known/oauth-protected-resource/mcp`, { signal: timeout() })).json()) as Record<string, unknown>;
      assert.deepEqual([prm.resource, prm.authorization_servers], [`${issuer}/mcp`, [issuer]]);

      // A browser-based client on another origin reads the challenge of a 401: WWW-Authenticate is exposed to it.
      const anonymous = await fetch(`${server.url}/mcp`, { method: 'POST', headers: { ...MCP_HEADERS, origin: 'https://agent.example' }, body: MCP_LIST, signal: timeout() });
      assert.equal(anonymous.status, 401);
      assert.equal(anonymous.headers.get('access-control-allow-origin'), '*');
      assert.ok((anonymous.headers.get('access-control-expose-headers') ?? '').split(/\s*,\s*/).map((h) => h.toLowerCase()).includes('www-authenticate'), anonymous.headers.get('access-control-expose-headers') ?? 'no Access-Control-Expose-Headers');
      assert.match(anonymous.headers.get('www-authenticate') ?? '', new RegExp(`resource_metadata="${issuer}/\\.well-known/oauth-protected-resource/mcp"`));

      // The flow by hand, every request to 127.0.0.1.
      const reg = await fetch(`${server.url}/oauth/register`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ redirect_uris: [REDIRECT], token_endpoint_auth_method: 'none', client_name: 'by hand' }), signal: timeout() });
      const { client_id } = (await reg.json()) as { client_id: string };
      const verifier = randomBytes(32).toString('base64url');
      const url = new URL(`${server.url}/oauth/authorize`);
      for (const [k, v] of Object.entries({ response_type: 'code', client_id, redirect_uri: REDIRECT, code_challenge: createHash('sha256').update(verifier).digest('base64url'), code_challenge_method: 'S256', state: 's' })) url.searchParams.set(k, v);
      const back = new URL((await consent(url, SECRET)).headers.get('location')!);
      assert.equal(back.searchParams.get('iss'), issuer);
      const res = await fetch(`${server.url}/oauth/token`, { method: 'POST', body: new URLSearchParams({ grant_type: 'authorization_code', code: back.searchParams.get('code')!, code_verifier: verifier, client_id, redirect_uri: REDIRECT }), signal: timeout() });
      assert.equal(res.status, 200);
      const tokens = (await res.json()) as { access_token: string; expires_in: number; refresh_token: string };
      assert.equal(tokens.expires_in, TTL);
      const claims = JSON.parse(Buffer.from(tokens.access_token.split('.')[1], 'base64url').toString()) as { iss: string; aud: string; iat: number; exp: number };
      assert.deepEqual([claims.iss, claims.aud, claims.exp - claims.iat], [issuer, `${issuer}/mcp`, TTL]);
      assert.equal((await mcpWith(server.url, tokens.access_token)).status, 200);
      // Past its expiry (a clock read, not a measure of speed), the same token is refused.
      await new Promise((resolve) => setTimeout(resolve, Math.max(0, (claims.exp + 1) * 1000 - Date.now())));
      const expired = await mcpWith(server.url, tokens.access_token);
      assert.equal(expired.status, 401);
      assert.match(expired.headers.get('www-authenticate') ?? '', /error="invalid_token", error_description="the access token has expired"/);
      // The refresh token still gives a new one, with the same lifetime.
      const refreshed = await refreshWith(server.url, client_id, tokens.refresh_token);
      assert.equal(refreshed.status, 200);
      const next = (await refreshed.json()) as { access_token: string; expires_in: number };
      assert.equal(next.expires_in, TTL);
      assert.equal((await mcpWith(server.url, next.access_token)).status, 200);
    } finally {
      await server.stop();
    }
  });
});

describe('[mcp] and reloads', () => {
  test('a reload that changes [mcp] reports it in restart_required and keeps the running endpoint', async () => {
    const adminPort = await freePort();
    const base = `[[sources]]\nid = "cities"\ntype = "mbtiles"\npath = "${fixture('vector/world_cities.mbtiles')}"\n[server]\nadmin_bind = "127.0.0.1:${adminPort}"\n[cache]\ndir = "${tempDir('tsts-mcp-reload-')}"\n`;
    const server = await startServer({ toml: `${base}[mcp]\nenabled = true\nauth_token = "first-token-0123456789"\n` });
    try {
      writeFileSync(server.configFile!, `${base}[mcp]\nenabled = true\nauth_token = "second-token-0123456789"\n`);
      const reload = await fetch(`http://127.0.0.1:${adminPort}/__admin/reload`, { method: 'POST', signal: timeout() });
      assert.equal(reload.status, 200);
      const body = (await reload.json()) as { ok: boolean; restart_required: string[] };
      assert.equal(body.ok, true);
      assert.ok(body.restart_required.includes('mcp'), JSON.stringify(body.restart_required));
      assert.equal((await mcpWith(server.url, 'first-token-0123456789')).status, 200);
      assert.equal((await mcpWith(server.url, 'second-token-0123456789')).status, 401);
    } finally {
      await server.stop();
    }
  });
});

describe('admin OAuth routes without OAuth', () => {
  test('404 on the admin listener when [mcp.oauth] is off', async () => {
    const adminPort = await freePort();
    const server = await startServer({ toml: `[[sources]]\nid = "cities"\ntype = "mbtiles"\npath = "${fixture('vector/world_cities.mbtiles')}"\n[server]\nadmin_bind = "127.0.0.1:${adminPort}"\n[mcp]\nenabled = true\n` });
    try {
      for (const [m, p] of [['GET', '/__admin/oauth/clients'], ['GET', '/__admin/oauth/sessions'], ['DELETE', '/__admin/oauth/sessions/x'], ['DELETE', '/__admin/oauth/clients/x']]) {
        const res = await fetch(`http://127.0.0.1:${adminPort}${p}`, { method: m, signal: timeout() });
        assert.equal(res.status, 404, `${m} ${p}`);
      }
    } finally {
      await server.stop();
    }
  });
});

describe('OAuth with two worker processes', () => {
  test('the SDK flow works with two processes; fresh connections (round-robin over them) all take the token, and all refuse it once revoked', async () => {
    const adminPort = await freePort();
    const server = await startServer({
      workers: 2,
      env: { CONSENT: SECRET },
      toml: `[[sources]]\nid = "cities"\ntype = "mbtiles"\npath = "${fixture('vector/world_cities.mbtiles')}"\n[server]\nadmin_bind = "127.0.0.1:${adminPort}"\ndisable_render = true\n[cache]\ndir = "${tempDir('tsts-mcp-oauth2-')}"\n[mcp]\nenabled = true\n[mcp.oauth]\nenabled = true\nconsent_secret = "\${CONSENT}"\n`,
    });
    try {
      const p = new TestProvider();
      const client = await authorize(server.url, p);
      // Fresh connections are spread over the processes: every one of them accepts the token.
      for (let i = 0; i < 8; i++) {
        const res = await fetch(`${server.url}/mcp`, { method: 'POST', headers: { ...MCP_HEADERS, authorization: `Bearer ${p.saved!.access_token}`, connection: 'close' }, body: MCP_LIST, signal: timeout() });
        assert.equal(res.status, 200);
      }
      await client.close();
      const sessions = (await admin(`http://127.0.0.1:${adminPort}`, 'GET', '/__admin/oauth/sessions')).json.sessions as { token_id: string }[];
      assert.equal(sessions.length, 1);
      assert.equal((await admin(`http://127.0.0.1:${adminPort}`, 'DELETE', `/__admin/oauth/sessions/${sessions[0].token_id}`)).json.deleted, true);
      for (let i = 0; i < 8; i++) {
        const res = await fetch(`${server.url}/mcp`, { method: 'POST', headers: { ...MCP_HEADERS, authorization: `Bearer ${p.saved!.access_token}`, connection: 'close' }, body: MCP_LIST, signal: timeout() });
        assert.equal(res.status, 401);
      }
    } finally {
      await server.stop();
    }
  });
});
