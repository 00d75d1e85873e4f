// The OAuth 2.1 authorization server of /mcp, and the check of the tokens it issues. The endpoints' logic lives
// here, free of the HTTP framework: each answers with an `OAuthAnswer` the route (src/http/routes/oauth.ts) sends.
//  - metadata: RFC 8414 (authorization server) and RFC 9728 (protected resource, the `/mcp` endpoint);
//  - dynamic client registration (RFC 7591): anyone may register, and registering grants nothing;
//  - authorization code with PKCE, S256 only; the consent page passes only with the operator's consent secret
//    (compared in constant time; wrong answers over all processes limited per minute, then 429);
//  - access tokens: JWTs signed with the service's key (audience: the /mcp URL); refresh tokens are opaque, stored
//    as digests, and rotated on every use (the old one is then refused; presenting it again ends the session).
// A JWT alone would outlive a revocation until it expires: every /mcp call also checks that its session exists.
import { randomBytes, randomUUID, timingSafeEqual, createHash } from 'node:crypto';
import type { McpOAuthConfig } from '../../config/schema.js';
import { consentPage, errorPage } from './consent-page.js';
import { SIGNING_ALG, type JoseModule, type SigningKey } from './signing-key.js';
import { digest, type ClientRecord, type OAuthStore } from './store.js';

export interface OAuthAnswer {
  status: number;
  headers?: Record<string, string>;
  json?: unknown;
  html?: string;
}

/** Who a valid bearer token speaks for. */
export interface TokenInfo {
  token: string;
  clientId: string;
  sessionId: string;
  scopes: string[];
  expiresAt: number;
}

export type BearerCheck = { ok: true; info: TokenInfo } | { ok: false; status: 401 | 403; error?: 'invalid_request' | 'invalid_token' | 'insufficient_scope'; detail: string };

export const SCOPE = 'mcp';
/** An authorization code is good for this long, and once. */
const CODE_TTL_SECS = 60;
const CONSENT_WINDOW_MS = 60_000;
/**
 * `consent_attempts_per_minute` is each address's budget of wrong secrets; all addresses together get this many
 * times as much. One address (say, whoever registered a client and keeps guessing) cannot lock the operator out
 * on its own, and guessing from many addresses is still bounded per minute.
 */
export const CONSENT_ALL_ADDRESSES_FACTOR = 10;
/** The address of a consent form whose connection's address is not known (not seen with Node's HTTP server). */
const UNKNOWN_ADDRESS = 'unknown';
/** Registrations accepted per minute over all processes: registering is open to anyone, the store's size is not. */
export const REGISTRATIONS_PER_MINUTE = 60;
const METHODS = ['none', 'client_secret_post', 'client_secret_basic'] as const;
const GRANTS = ['authorization_code', 'refresh_token'] as const;
const NO_STORE = { 'cache-control': 'no-store', pragma: 'no-cache' };

const b64url = (buf: Buffer) => buf.toString('base64url');
const token = (bytes = 32) => b64url(randomBytes(bytes));

function sameSecret(given: string, expected: string): boolean {
  // Digests first: equal lengths for timingSafeEqual, and the comparison's time says nothing about the secret's length.
  const a = createHash('sha256').update(given).digest();
  const b = createHash('sha256').update(expected).digest();
  return timingSafeEqual(a, b);
}

/** Redirect URIs a client may register: https anywhere, http only to this machine (RFC 8252), or an app's own scheme. */
export function redirectUriProblem(uri: unknown): string | undefined {
  if (typeof uri !== 'string' || uri.length === 0 || uri.length > 2000) return 'a redirect URI is a string of 1..2000 characters';
  let u: URL;
  try {
    u = new URL(uri);
  } catch {
    return `"${uri.slice(0, 100)}" is not an absolute URI`;
  }
  if (u.hash || uri.includes('#')) return `"${uri.slice(0, 100)}" has a fragment`;
  const scheme = u.protocol.slice(0, -1);
  if (scheme === 'https') return undefined;
  if (scheme === 'http') return ['localhost', '127.0.0.1', '[::1]'].includes(u.hostname) ? undefined : `"${uri.slice(0, 100)}": plain http is allowed only to localhost`;
  if (['javascript', 'data', 'file', 'vbscript', 'blob', 'about', 'ftp', 'ws', 'wss'].includes(scheme)) return `"${uri.slice(0, 100)}": the scheme ${scheme} cannot receive a redirect`;
  return undefined;
}

function oauthError(status: number, error: string, description: string, headers: Record<string, string> = {}): OAuthAnswer {
  return { status, headers: { ...NO_STORE, ...headers }, json: { error, error_description: description } };
}

function redirectWith(uri: string, params: Record<string, string | undefined>): OAuthAnswer {
  const u = new URL(uri);
  for (const [k, v] of Object.entries(params)) if (v !== undefined) u.searchParams.set(k, v);
  return { status: 302, headers: { location: u.toString(), 'cache-control': 'no-store' } };
}

export class AuthorizationServer {
  constructor(
    private readonly jose: JoseModule,
    private readonly config: McpOAuthConfig & { consent_secret: string },
    readonly store: OAuthStore,
    private readonly key: SigningKey,
    private readonly publicUrl: string | undefined,
  ) {}

  /** The issuer: `issuer_url`, else server.public_url, else the origin the request came to. */
  issuer(origin: string): string {
    return (this.config.issuer_url ?? this.publicUrl ?? origin).replace(/\/+$/, '');
  }

  /** The protected resource's identifier: the /mcp URL (the tokens' audience). */
  resource(origin: string): string {
    return `${(this.publicUrl ?? this.config.issuer_url ?? origin).replace(/\/+$/, '')}/mcp`;
  }

  resourceMetadataUrl(origin: string): string {
    const r = new URL(this.resource(origin));
    return `${r.origin}/.well-known/oauth-protected-resource${r.pathname}`;
  }

  authorizationServerMetadata(origin: string): unknown {
    const iss = this.issuer(origin);
    return {
      issuer: iss,
      authorization_endpoint: `${iss}/oauth/authorize`,
      token_endpoint: `${iss}/oauth/token`,
      registration_endpoint: `${iss}/oauth/register`,
      scopes_supported: [SCOPE],
      response_types_supported: ['code'],
      response_modes_supported: ['query'],
      grant_types_supported: [...GRANTS],
      token_endpoint_auth_methods_supported: [...METHODS],
      code_challenge_methods_supported: ['S256'],
      authorization_response_iss_parameter_supported: true,
    };
  }

  protectedResourceMetadata(origin: string): unknown {
    return {
      resource: this.resource(origin),
      authorization_servers: [this.issuer(origin)],
      scopes_supported: [SCOPE],
      bearer_methods_supported: ['header'],
      resource_name: 'tileserver-ts MCP tools',
    };
  }

  /** RFC 7591 registration. The client gets an id (and a secret unless it is public); nothing else. */
  register(body: unknown): OAuthAnswer {
    if (body === null || typeof body !== 'object' || Array.isArray(body)) return oauthError(400, 'invalid_client_metadata', 'the body is a JSON object of client metadata');
    if (this.store.clientsRegisteredSince(Math.floor(Date.now() / 1000) - 60) >= REGISTRATIONS_PER_MINUTE)
      return oauthError(429, 'temporarily_unavailable', `more than ${REGISTRATIONS_PER_MINUTE} clients registered in the last minute; retry later`, { 'retry-after': '60' });
    const m = body as Record<string, unknown>;
    const uris = m.redirect_uris;
    if (!Array.isArray(uris) || uris.length === 0 || uris.length > 20) return oauthError(400, 'invalid_redirect_uri', 'redirect_uris: an array of 1..20 redirect URIs is required');
    for (const u of uris) {
      const p = redirectUriProblem(u);
      if (p) return oauthError(400, 'invalid_redirect_uri', `redirect_uris: ${p}`);
    }
    const method = m.token_endpoint_auth_method ?? 'client_secret_basic';
    if (!(METHODS as readonly unknown[]).includes(method)) return oauthError(400, 'invalid_client_metadata', `token_endpoint_auth_method: one of ${METHODS.join(', ')}`);
    const grants = m.grant_types ?? [...GRANTS];
    if (!Array.isArray(grants) || grants.length === 0 || grants.some((g) => !(GRANTS as readonly unknown[]).includes(g)) || !grants.includes('authorization_code'))
      return oauthError(400, 'invalid_client_metadata', `grant_types: authorization_code, optionally refresh_token (only those are supported)`);
    const responseTypes = m.response_types ?? ['code'];
    if (!Array.isArray(responseTypes) || responseTypes.some((r) => r !== 'code')) return oauthError(400, 'invalid_client_metadata', 'response_types: only "code" is supported');
    const name = m.client_name;
    if (name !== undefined && (typeof name !== 'string' || name.length > 200)) return oauthError(400, 'invalid_client_metadata', 'client_name: a string of at most 200 characters');
    const scope = m.scope;
    if (scope !== undefined && (typeof scope !== 'string' || scope.split(' ').some((s) => s !== SCOPE)))
      return oauthError(400, 'invalid_client_metadata', `scope: the only scope is "${SCOPE}"`);
    const record: ClientRecord = {
      client_id: randomUUID(),
      client_name: (name as string | undefined) ?? null,
      redirect_uris: uris as string[],
      grant_types: [...new Set(grants as string[])],
      token_endpoint_auth_method: method as ClientRecord['token_endpoint_auth_method'],
      scope: (scope as string | undefined) ?? SCOPE,
      client_id_issued_at: Math.floor(Date.now() / 1000),
    };
    const secret = method === 'none' ? undefined : token();
    this.store.addClient(record, secret);
    const { client_id, client_id_issued_at, ...metadata } = record;
    return {
      status: 201,
      headers: NO_STORE,
      json: {
        client_id,
        client_id_issued_at,
        ...(secret !== undefined ? { client_secret: secret, client_secret_expires_at: 0 } : {}),
        ...metadata,
        client_name: record.client_name ?? undefined,
      },
    };
  }

  /**
   * Checks an authorization request. Problems with the client or its redirect URI are told to the person (a
   * page: the request cannot be trusted to redirect anywhere); others go back to the client by redirect.
   */
  private checkAuthorization(p: URLSearchParams, origin: string): { ok: false; answer: OAuthAnswer } | { ok: true; client: ClientRecord; redirectUri: string; fields: Record<string, string> } {
    const clientId = p.get('client_id') ?? '';
    const client = clientId ? this.store.client(clientId) : undefined;
    if (!client) return { ok: false, answer: { status: 400, html: errorPage('Unknown client', 'The client_id of this request is not registered here (or was deleted).') } };
    const redirectUri = p.get('redirect_uri') ?? (client.redirect_uris.length === 1 ? client.redirect_uris[0] : '');
    if (!client.redirect_uris.includes(redirectUri))
      return { ok: false, answer: { status: 400, html: errorPage('Unregistered redirect URI', 'The redirect_uri of this request is not one the client registered.') } };
    const state = p.get('state') ?? undefined;
    const iss = this.issuer(origin);
    const refuse = (error: string, description: string) => ({ ok: false as const, answer: redirectWith(redirectUri, { error, error_description: description, state, iss }) });
    if (p.get('response_type') !== 'code') return refuse('unsupported_response_type', 'response_type must be "code"');
    const challenge = p.get('code_challenge') ?? '';
    if (!challenge) return refuse('invalid_request', 'code_challenge is required (PKCE)');
    if (p.get('code_challenge_method') !== 'S256') return refuse('invalid_request', 'code_challenge_method must be S256');
    if (!/^[A-Za-z0-9_-]{43}$/.test(challenge)) return refuse('invalid_request', 'code_challenge is not a base64url SHA-256 digest');
    const scope = p.get('scope') ?? SCOPE;
    if (scope.split(' ').some((s) => s !== SCOPE)) return refuse('invalid_scope', `the only scope is "${SCOPE}"`);
    const resource = p.get('resource');
    if (resource !== null && resource.replace(/\/+$/, '') !== this.resource(origin)) return refuse('invalid_target', `this server grants access only to ${this.resource(origin)}`);
    const fields: Record<string, string> = {
      response_type: 'code',
      client_id: clientId,
      redirect_uri: redirectUri,
      code_challenge: challenge,
      code_challenge_method: 'S256',
      scope,
      ...(state !== undefined ? { state } : {}),
      ...(resource !== null ? { resource } : {}),
    };
    return { ok: true, client, redirectUri, fields };
  }

  /** GET /oauth/authorize: the consent page. */
  authorizePage(p: URLSearchParams, origin: string): OAuthAnswer {
    const checked = this.checkAuthorization(p, origin);
    if (!checked.ok) return checked.answer;
    return { status: 200, headers: { 'cache-control': 'no-store' }, html: this.page(checked) };
  }

  private page(c: { client: ClientRecord; redirectUri: string; fields: Record<string, string> }, error?: string): string {
    return consentPage({ clientName: c.client.client_name ?? 'An unnamed client', clientId: c.client.client_id, redirectUri: c.redirectUri, fields: c.fields, error });
  }

  /**
   * POST /oauth/authorize: the operator's answer, sent from `address` (the connection's). Right secret: a code to
   * the client; wrong: the page again, 403.
   */
  authorizeDecision(form: URLSearchParams, origin: string, address: string | undefined): OAuthAnswer {
    const checked = this.checkAuthorization(form, origin);
    if (!checked.ok) return checked.answer;
    const from = address ?? UNKNOWN_ADDRESS;
    const limit = this.config.consent_attempts_per_minute;
    const failures = this.store.consentFailures(CONSENT_WINDOW_MS, from);
    // Once a limit is reached every attempt it covers waits, the right secret too: otherwise guessing would only
    // slow down.
    if (failures.fromAddress >= limit || failures.all >= limit * CONSENT_ALL_ADDRESSES_FACTOR)
      return { status: 429, headers: { 'retry-after': '60', 'cache-control': 'no-store' }, html: this.page(checked, 'Too many wrong secrets in the last minute; wait a minute and try again.') };
    if (!sameSecret(form.get('consent_secret') ?? '', this.config.consent_secret)) {
      this.store.noteConsentFailure(CONSENT_WINDOW_MS, from);
      return { status: 403, headers: { 'cache-control': 'no-store' }, html: this.page(checked, 'That is not the consent secret.') };
    }
    const code = token();
    const f = checked.fields;
    this.store.addCode(code, {
      client_id: checked.client.client_id,
      redirect_uri: checked.redirectUri,
      code_challenge: f.code_challenge,
      scope: f.scope,
      resource: this.resource(origin),
      expires_at: Math.floor(Date.now() / 1000) + CODE_TTL_SECS,
    });
    return redirectWith(checked.redirectUri, { code, state: f.state, iss: this.issuer(origin) });
  }

  /** The client a token request authenticates as (RFC 6749 2.3), or the refusal. */
  private authenticateClient(form: URLSearchParams, authorization: string | undefined): { ok: true; client: ClientRecord } | { ok: false; answer: OAuthAnswer } {
    let id = form.get('client_id') ?? undefined;
    let secret = form.get('client_secret') ?? undefined;
    let basic = false;
    if (authorization?.toLowerCase().startsWith('basic ')) {
      const decoded = Buffer.from(authorization.slice(6).trim(), 'base64').toString('utf8');
      const colon = decoded.indexOf(':');
      if (colon < 0) return { ok: false, answer: oauthError(401, 'invalid_client', 'malformed Basic credentials', { 'www-authenticate': 'Basic realm="oauth"' }) };
      try {
        id = decodeURIComponent(decoded.slice(0, colon).replace(/\+/g, ' '));
        secret = decodeURIComponent(decoded.slice(colon + 1).replace(/\+/g, ' '));
      } catch {
        return { ok: false, answer: oauthError(401, 'invalid_client', 'malformed Basic credentials', { 'www-authenticate': 'Basic realm="oauth"' }) };
      }
      basic = true;
    }
    const failed = (why: string) => ({ ok: false as const, answer: oauthError(401, 'invalid_client', why, basic ? { 'www-authenticate': 'Basic realm="oauth"' } : {}) });
    if (!id) return failed('client_id is required');
    const client = this.store.client(id);
    if (!client) return failed('unknown client');
    if (client.token_endpoint_auth_method === 'none') {
      if (secret !== undefined || basic) return failed('this client is public: it has no secret');
      return { ok: true, client };
    }
    if (secret === undefined || client.secret_digest === null) return failed('the client secret is required');
    if (!timingSafeEqual(Buffer.from(digest(secret)), Buffer.from(client.secret_digest))) return failed('wrong client secret');
    return { ok: true, client };
  }

  private async accessToken(clientId: string, sessionId: string, scope: string, resource: string, origin: string): Promise<{ token: string; expiresIn: number }> {
    const ttl = this.config.token_ttl_secs;
    const jwt = await new this.jose.SignJWT({ client_id: clientId, sid: sessionId, scope })
      .setProtectedHeader({ alg: SIGNING_ALG, kid: this.key.kid, typ: 'at+jwt' })
      .setIssuer(this.issuer(origin))
      .setAudience(resource)
      .setSubject(clientId)
      .setIssuedAt()
      .setJti(randomUUID())
      .setExpirationTime(`${ttl}s`)
      .sign(this.key.privateKey);
    return { token: jwt, expiresIn: ttl };
  }

  /** POST /oauth/token: authorization_code (with the PKCE verifier) and refresh_token grants. */
  async token(form: URLSearchParams, authorization: string | undefined, origin: string): Promise<OAuthAnswer> {
    const grant = form.get('grant_type');
    if (grant !== 'authorization_code' && grant !== 'refresh_token') return oauthError(400, 'unsupported_grant_type', 'grant_type: authorization_code or refresh_token');
    const auth = this.authenticateClient(form, authorization);
    if (!auth.ok) return auth.answer;
    const client = auth.client;
    if (!client.grant_types.includes(grant)) return oauthError(400, 'unauthorized_client', `this client did not register the ${grant} grant`);

    if (grant === 'authorization_code') {
      const code = form.get('code');
      const verifier = form.get('code_verifier');
      if (!code) return oauthError(400, 'invalid_request', 'code is required');
      if (!verifier) return oauthError(400, 'invalid_request', 'code_verifier is required (PKCE)');
      const pending = this.store.takeCode(code);
      if (!pending || pending.client_id !== client.client_id) return oauthError(400, 'invalid_grant', 'the code is unknown, used, expired or not this client\'s');
      if (form.has('redirect_uri') && form.get('redirect_uri') !== pending.redirect_uri) return oauthError(400, 'invalid_grant', 'redirect_uri differs from the authorization request\'s');
      if (!/^[A-Za-z0-9._~-]{43,128}$/.test(verifier)) return oauthError(400, 'invalid_grant', 'the code_verifier is not 43..128 unreserved characters');
      if (b64url(createHash('sha256').update(verifier).digest()) !== pending.code_challenge) return oauthError(400, 'invalid_grant', 'the code_verifier does not match the code_challenge');
      const sessionId = randomUUID();
      const refresh = client.grant_types.includes('refresh_token') ? `${token()}` : undefined;
      // A session exists for every grant (revocation works on it); without the refresh grant its refresh token is never handed out.
      this.store.addSession({ token_id: sessionId, client_id: client.client_id, scope: pending.scope, resource: pending.resource }, refresh ?? token());
      const at = await this.accessToken(client.client_id, sessionId, pending.scope ?? SCOPE, pending.resource, origin);
      return {
        status: 200,
        headers: NO_STORE,
        json: { access_token: at.token, token_type: 'Bearer', expires_in: at.expiresIn, scope: pending.scope ?? SCOPE, ...(refresh ? { refresh_token: refresh } : {}) },
      };
    }

    const presented = form.get('refresh_token');
    if (!presented) return oauthError(400, 'invalid_request', 'refresh_token is required');
    const next = token();
    const rotated = this.store.rotate(presented, next, client.client_id);
    if (!rotated.ok)
      return oauthError(400, 'invalid_grant', rotated.reused ? 'this refresh token was already used; its session has been ended' : 'the refresh token is unknown or revoked');
    const s = rotated.session;
    const at = await this.accessToken(client.client_id, s.token_id, s.scope ?? SCOPE, s.resource, origin);
    return { status: 200, headers: NO_STORE, json: { access_token: at.token, token_type: 'Bearer', expires_in: at.expiresIn, scope: s.scope ?? SCOPE, refresh_token: next } };
  }

  /** Checks the Authorization header of a /mcp request (RFC 6750). */
  async verifyBearer(authorization: string | undefined, origin: string): Promise<BearerCheck> {
    if (!authorization) return { ok: false, status: 401, detail: 'an access token is required (Authorization: Bearer ...)' };
    const m = /^Bearer +([A-Za-z0-9\-._~+/]+=*) *$/i.exec(authorization);
    if (!m) return { ok: false, status: 401, error: 'invalid_request', detail: 'the Authorization header is not "Bearer <token>"' };
    let payload;
    try {
      ({ payload } = await this.jose.jwtVerify(m[1], this.key.publicKey, { issuer: this.issuer(origin), audience: this.resource(origin), algorithms: [SIGNING_ALG], typ: 'at+jwt' }));
    } catch (err) {
      if (err instanceof this.jose.errors.JWTExpired) return { ok: false, status: 401, error: 'invalid_token', detail: 'the access token has expired' };
      if (err instanceof this.jose.errors.JWTClaimValidationFailed && err.claim === 'aud') return { ok: false, status: 401, error: 'invalid_token', detail: 'the access token is for another resource' };
      return { ok: false, status: 401, error: 'invalid_token', detail: 'the access token is not valid here' };
    }
    const sid = typeof payload.sid === 'string' ? payload.sid : '';
    const session = sid ? this.store.session(sid) : undefined;
    if (!session || session.client_id !== payload.sub) return { ok: false, status: 401, error: 'invalid_token', detail: 'the access token\'s session was revoked' };
    const scopes = typeof payload.scope === 'string' ? payload.scope.split(' ') : [];
    if (!scopes.includes(SCOPE)) return { ok: false, status: 403, error: 'insufficient_scope', detail: `the token lacks the "${SCOPE}" scope` };
    return { ok: true, info: { token: m[1], clientId: session.client_id, sessionId: sid, scopes, expiresAt: payload.exp ?? 0 } };
  }
}
