// /mcp: the Model Context Protocol endpoint (Streamable HTTP, the SDK's Web-standard transport, which takes a
// fetch Request and answers a Response, as Hono routes do), and, with [mcp.oauth], the OAuth 2.1 endpoints that
// issue its tokens. Routes only: the tools are in src/mcp/tools.ts, the OAuth logic in src/mcp/oauth/.
// The endpoint is stateless (no MCP session id): each POST gets a fresh server and transport, so any worker
// process answers any request and nothing is held between them. The tools answer through this app's own
// routes, in-process.
// The SDK's OAuth server helpers (mcpAuthRouter, requireBearerAuth) are Express middleware; the endpoints here
// are Hono routes over src/mcp/oauth/, which keeps one HTTP stack and one error format for the whole service.
import type { IncomingMessage } from 'node:http';
import { timingSafeEqual, createHash } from 'node:crypto';
import type { Context } from 'hono';
import type { AuthInfo } from '@modelcontextprotocol/sdk/server/auth/types.js';
import { resolvedCacheDir } from '../../config/paths.js';
import type { Logger } from '../../log.js';
import { AuthorizationServer, type OAuthAnswer } from '../../mcp/oauth/authorization-server.js';
import { loadSigningKey } from '../../mcp/oauth/signing-key.js';
import { OAuthStore } from '../../mcp/oauth/store.js';
import { createMcpServer } from '../../mcp/server.js';
import type { Config } from '../../config/schema.js';
import { ConfigError } from '../../config/errors.js';
import type { ServerContext } from '../context.js';
import { problem } from '../problem.js';
import type { Router } from '../router.js';
import { PUBLIC } from '../../routes/public-routes.js';
import { readBoundedText } from '../body.js';

const PROBLEM = { 'application/problem+json': true as const };
/** Tool calls are small JSON-RPC messages; an OAuth form or registration is smaller still. */
const MAX_MCP_BODY = 1024 * 1024;
const MAX_OAUTH_BODY = 16 * 1024;

/** The address a request's connection came from: the consent limit counts wrong secrets per address. */
const addressOf = (c: Context): string | undefined => (c.env as { incoming?: IncomingMessage } | undefined)?.incoming?.socket?.remoteAddress;

/** Where the OAuth store lives unless `store_path` says: the state directory. */
export function oauthStorePath(config: Config): string {
  return config.mcp.oauth.store_path ?? `${resolvedCacheDir({ config })}/mcp-oauth.sqlite`;
}

/** The authorization server of a configuration with [mcp.oauth] enabled: its store opened, its key loaded or made. */
export async function openAuthorizationServer(config: Config): Promise<AuthorizationServer> {
  const o = config.mcp.oauth;
  // Either failing stops start-up with one line naming the setting (cli.ts opens both before any worker starts).
  // jose is imported only here, when OAuth is on (it is not needed at every start).
  const jose = await import('jose');
  const key = await loadSigningKey(jose, resolvedCacheDir({ config })).catch((err: Error) => {
    throw new ConfigError(`cache.dir: the OAuth signing key cannot be kept there: ${err.message}`);
  });
  const file = oauthStorePath(config);
  let store: OAuthStore;
  try {
    store = new OAuthStore(file);
  } catch (err) {
    throw new ConfigError(`mcp.oauth.store_path: cannot open ${file}: ${(err as Error).message}`);
  }
  return new AuthorizationServer(jose, { ...o, consent_secret: o.consent_secret ?? '' }, store, key, config.server.public_url);
}

function origin(c: Context): string {
  return new URL(c.req.url).origin;
}

function answer(c: Context, a: OAuthAnswer): Response {
  const headers = new Headers(a.headers);
  if (a.json !== undefined) {
    headers.set('content-type', 'application/json');
    return new Response(JSON.stringify(a.json), { status: a.status, headers });
  }
  if (a.html !== undefined) {
    headers.set('content-type', 'text/html; charset=utf-8');
    // The consent page must not be framed by another site (a hidden frame could collect the operator's click).
    headers.set('x-frame-options', 'DENY');
    headers.set('content-security-policy', "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'");
    return new Response(a.html, { status: a.status, headers });
  }
  return new Response(null, { status: a.status, headers });
}

/** A 401/403 of /mcp: problem JSON with the RFC 6750 challenge (and where OAuth clients find the metadata). */
function refuse(c: Context, status: number, detail: string, challenge: string): Response {
  return problem(c, status, status === 401 ? 'Unauthorized' : 'Forbidden', detail, {}, { 'WWW-Authenticate': challenge });
}

const quote = (s: string) => `"${s.replace(/["\\]/g, '')}"`;

async function formOf(c: Context): Promise<URLSearchParams | undefined> {
  const type = c.req.header('content-type') ?? '';
  if (!type.toLowerCase().startsWith('application/x-www-form-urlencoded')) return undefined;
  const text = await readBoundedText(c, MAX_OAUTH_BODY);
  return text === undefined ? undefined : new URLSearchParams(text);
}

export function registerMcpRoutes(r: Router, ctx: ServerContext, log: Logger): void {
  // [mcp] is read once, from the configuration the process started with (a reload keeps it: restart-only).
  const config = ctx.holder.current.config;
  if (!config.mcp.enabled) return;
  const staticToken = config.mcp.auth_token;
  const oauth = config.mcp.oauth.enabled ? openAuthorizationServer(config) : undefined;
  if (staticToken === undefined && !oauth) log.warn('mcp: /mcp is open to anyone who reaches this port (neither mcp.auth_token nor [mcp.oauth] is set)');
  oauth?.catch((err: Error) => log.error({ err: err.message }, 'mcp: the OAuth server cannot start; /mcp refuses every request'));

  const dispatch = (c: Context) => (req: Request) => r.fetch(req, { incoming: (c.env as { incoming?: IncomingMessage } | undefined)?.incoming });

  /** Checks the bearer token of a /mcp request: the refusal to answer, or who is calling (absent on an open endpoint). */
  const authenticate = async (c: Context): Promise<{ refused: Response } | { authInfo: AuthInfo | undefined }> => {
    if (staticToken !== undefined) {
      const header = c.req.header('authorization');
      const m = header ? /^Bearer +(\S+) *$/i.exec(header) : null;
      if (!header) return { refused: refuse(c, 401, 'a bearer token is required (Authorization: Bearer ...)', 'Bearer realm="mcp"') };
      const given = createHash('sha256').update(m?.[1] ?? '').digest();
      const expected = createHash('sha256').update(staticToken).digest();
      if (!m || !timingSafeEqual(given, expected)) return { refused: refuse(c, 401, 'the bearer token is not the configured one', 'Bearer realm="mcp", error="invalid_token"') };
      return { authInfo: undefined };
    }
    if (!oauth) return { authInfo: undefined };
    const o = origin(c);
    const as = await oauth;
    const check = await as.verifyBearer(c.req.header('authorization'), o);
    if (!check.ok) {
      const parts = [`resource_metadata=${quote(as.resourceMetadataUrl(o))}`, ...(check.error ? [`error=${quote(check.error)}`, `error_description=${quote(check.detail)}`] : []), `scope="mcp"`];
      return { refused: refuse(c, check.status, check.detail, `Bearer ${parts.join(', ')}`) };
    }
    return { authInfo: { token: check.info.token, clientId: check.info.clientId, scopes: check.info.scopes, expiresAt: check.info.expiresAt, extra: { sessionId: check.info.sessionId } } };
  };

  const handleMcp = async (c: Context): Promise<Response> => {
    const o = origin(c);
    const auth = await authenticate(c);
    if ('refused' in auth) return auth.refused;
    const { authInfo } = auth;
    const state = ctx.holder.current;
    const { WebStandardStreamableHTTPServerTransport } = await import('@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js');
    const server = await createMcpServer({
      version: ctx.version,
      renderingOn: !state.config.server.disable_render && ctx.render !== undefined,
      dispatch: dispatch(c),
      origin: o,
    });
    const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true, maxRequestBodySize: MAX_MCP_BODY });
    await server.connect(transport);
    try {
      return await transport.handleRequest(c.req.raw, authInfo ? { authInfo } : undefined);
    } finally {
      // With JSON responses the answer is complete when handleRequest returns; nothing is kept between requests.
      void server.close();
    }
  };

  const MCP_RESPONSES = {
    200: { description: 'a JSON-RPC answer', content: { 'application/json': true as const } },
    202: { description: 'a notification was accepted' },
    401: { description: 'no or a wrong bearer token (WWW-Authenticate tells how to get one)', content: PROBLEM },
  };
  r.add(
    PUBLIC.mcp,
    {
      summary: 'Model Context Protocol endpoint (Streamable HTTP, JSON responses)',
      tag: 'MCP',
      description: 'JSON-RPC messages of the Model Context Protocol: tools to list sources and styles, read TileJSON, schema and stats, query features, read a tile as GeoJSON and render a static map. See docs/mcp.md.',
      responses: MCP_RESPONSES,
    },
    handleMcp,
  );
  // GET (a server-to-client event stream) and DELETE (ending a session) have nothing to do on a stateless
  // endpoint: no session is kept, and a server made for one POST is gone once it has answered, so a GET stream
  // could never carry anything. They are answered 405 here, after the same authentication (a client without a
  // token still learns where to get one). Handed to the SDK's transport instead, a GET was a 200 event stream
  // closed at once, which its client re-opened about once a second for as long as it stayed connected; on 405 the
  // client takes it that the server offers no such stream and never asks again.
  const notStateful = async (c: Context) => {
    const auth = await authenticate(c);
    if ('refused' in auth) return auth.refused;
    return problem(c, 405, 'Method not allowed', `${c.req.method} is not allowed on /mcp: the endpoint is stateless (no event stream, no session to end); send JSON-RPC messages with POST`, {}, { Allow: 'POST' });
  };
  r.add(PUBLIC.mcpStream, undefined, notStateful);
  r.add(PUBLIC.mcpEnd, undefined, notStateful);

  if (!oauth) return;
  const as = () => oauth;
  const json = (c: Context, body: unknown) => c.json(body as object, 200, { 'cache-control': 'no-store' });

  // RFC 8414 only: this is an OAuth server, not an OpenID provider (no ID tokens, no JWKS), so it serves no
  // `/.well-known/openid-configuration`; MCP clients look for the RFC 8414 document first.
  for (const route of [PUBLIC.oauthServerMetadata, PUBLIC.oauthServerMetadataFor]) r.add(route, undefined, async (c) => json(c, (await as()).authorizationServerMetadata(origin(c))));
  for (const route of [PUBLIC.oauthResourceMetadata, PUBLIC.oauthResourceMetadataFor]) r.add(route, undefined, async (c) => json(c, (await as()).protectedResourceMetadata(origin(c))));

  r.add(PUBLIC.oauthRegister, undefined, async (c) => {
    const text = await readBoundedText(c, MAX_OAUTH_BODY);
    if (text === undefined) return answer(c, { status: 413, json: { error: 'invalid_client_metadata', error_description: `the body is larger than ${MAX_OAUTH_BODY} bytes` } });
    let body: unknown;
    try {
      body = JSON.parse(text);
    } catch {
      return answer(c, { status: 400, json: { error: 'invalid_client_metadata', error_description: 'the body is not JSON' } });
    }
    const a = (await as()).register(body);
    if (a.status === 201) log.info({ client_id: (a.json as { client_id: string }).client_id }, 'mcp oauth: client registered');
    return answer(c, a);
  });
  r.add(PUBLIC.oauthAuthorizePage, undefined, async (c) => answer(c, (await as()).authorizePage(new URL(c.req.url).searchParams, origin(c))));
  r.add(PUBLIC.oauthAuthorize, undefined, async (c) => {
    const form = await formOf(c);
    if (!form) return answer(c, { status: 400, html: 'the consent form is sent as application/x-www-form-urlencoded, at most 16 KiB' });
    const a = (await as()).authorizeDecision(form, origin(c), addressOf(c));
    if (a.status === 403 || a.status === 429) log.warn({ client_id: form.get('client_id'), address: addressOf(c), status: a.status }, 'mcp oauth: consent refused');
    return answer(c, a);
  });
  r.add(PUBLIC.oauthToken, undefined, async (c) => {
    const form = await formOf(c);
    if (!form) return answer(c, { status: 400, headers: { 'cache-control': 'no-store' }, json: { error: 'invalid_request', error_description: 'the body is application/x-www-form-urlencoded, at most 16 KiB' } });
    return answer(c, await (await as()).token(form, c.req.header('authorization'), origin(c)));
  });
}
