// The admin listener on `server.admin_bind`: operator actions that must never be reachable on the public port.
// It runs in one process (the primary when there are several, which is where a reload is coordinated). Its
// routes are declared in src/routes/admin-routes.ts and exist nowhere else: the main listener answers 404 for
// them. A bind address with port 0 (the default `127.0.0.1:0`) means the listener is off (spec).
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import { listenAt, parseBind } from '../../config/bind.js';
import type { Logger } from '../../log.js';
import { parseBoolean } from '../../render/static-params.js';
import type { Reloader } from '../../state/reload-result.js';
import { requestId, targetPath } from '../access-log.js';
import { problemBody } from '../../problem.js';
import type { OAuthStore } from '../../mcp/oauth/store.js';
import { ADMIN, ADMIN_ROUTES } from '../../routes/admin-routes.js';
import type { RouteDeclaration } from '../../routes/declaration.js';
import { RouteMatcher, type RouteMatch } from '../../routes/match.js';
import { answerExpire } from './expire.js';

export interface AdminListener {
  address: { host: string; port: number };
  close(): Promise<void>;
}

/** The admin routes mounted with or without [mcp.oauth] (the OAuth ones need its store). */
function adminRoutes(oauth: boolean): RouteDeclaration[] {
  return ADMIN_ROUTES.filter((r) => r.mountedWith === undefined || (oauth && r.mountedWith === '[mcp.oauth]'));
}

/** The id a matched admin path names in its one parameter, decoded strictly (null: undecodable, no route). */
function idOf(m: RouteMatch): string | undefined | null {
  const name = /:(\w+)/.exec(m.route.hono)?.[1];
  const raw = name === undefined ? undefined : m.rawParam(name);
  try {
    return raw === undefined ? undefined : decodeURIComponent(raw);
  } catch {
    return null;
  }
}

/**
 * The OAuth admin routes. Deletes are idempotent: `deleted: false` says there was nothing (left) to delete.
 * Deleting a client ends its sessions with it; a deleted session's access tokens are refused at their next call.
 */
function oauthAnswer(store: OAuthStore, route: RouteDeclaration, id: string | undefined): { status: number; body: unknown } {
  switch (route) {
    case ADMIN.oauthClients:
      return { status: 200, body: { clients: store.clients() } };
    case ADMIN.oauthSessions:
      return { status: 200, body: { sessions: store.sessions() } };
    case ADMIN.oauthClientDelete:
      return { status: 200, body: { deleted: store.deleteClient(id!), client_id: id } };
    case ADMIN.oauthSessionDelete:
      return { status: 200, body: { deleted: store.deleteSession(id!), token_id: id } };
    default:
      throw new Error(`the admin route ${route.method.toUpperCase()} ${route.path} has no handler`);
  }
}

function send(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'content-type': 'application/json', 'cache-control': 'no-store', 'content-length': Buffer.byteLength(text), ...headers });
  res.end(text);
}

function sendProblem(res: ServerResponse, status: number, title: string, detail: string, headers: Record<string, string> = {}): void {
  send(res, status, problemBody(status, title, detail), { ...headers, 'content-type': 'application/problem+json' });
}

/**
 * The path and query of a request target, read as they are: `new URL(target, base)` would take a target such as
 * `//host/x` for a host name (and throw on one that is not), where it is only a path this listener does not have.
 */
function splitTarget(target: string): { pathname: string; searchParams: URLSearchParams } {
  const q = target.indexOf('?');
  return { pathname: q < 0 ? target : target.slice(0, q), searchParams: new URLSearchParams(q < 0 ? '' : target.slice(q + 1)) };
}

/**
 * Binds the admin listener unless `bind`'s port is 0. `reloader` is asked per request: the listener is bound
 * before the processes it reloads have started (a taken address must stop start-up before anything else runs),
 * and answers 503 until they have.
 */
export async function startAdminListener(bind: string, reloader: () => Reloader | undefined, log: Logger, oauth?: OAuthStore): Promise<AdminListener | undefined> {
  const parsed = parseBind(bind);
  if (!parsed.ok) throw new Error(`server.admin_bind: ${parsed.problem}`);
  if (parsed.address.port === 0) return undefined;
  const routes = adminRoutes(oauth !== undefined);
  const matcher = new RouteMatcher(routes, false);
  const paths = [...new Set(routes.map((r) => r.path))].join(', ');

  const handle = async (req: IncomingMessage, res: ServerResponse, id: string): Promise<void> => {
    const url = splitTarget(req.url ?? '/');
    // The path as sent: a percent-encoded or dot-segment spelling of an admin path is no admin path.
    const methods = matcher.methodsAt(url.pathname);
    const param = methods.length ? idOf(matcher.match(methods[0], url.pathname)!) : null;
    if (param === null) return sendProblem(res, 404, 'Not found', `the admin listener has no route ${url.pathname}; it serves ${paths}`);
    const route = methods.includes(req.method ?? '') ? matcher.match(req.method!, url.pathname)?.route : undefined;
    if (!route) return sendProblem(res, 405, 'Method not allowed', `${req.method} is not allowed on ${url.pathname}; use ${methods.join(', ')}`, { allow: methods.join(', ') });
    if (route === ADMIN.expire) {
      // The configuration the processes run now (undefined while they start: 503).
      const a = await answerExpire(req, url.searchParams, reloader()?.active.config, log, id);
      if (a.status === 200) return send(res, 200, a.body);
      // A refused body may be left unread (too large, of the wrong type): the connection ends with the answer.
      if ('close' in a && a.close) res.once('finish', () => req.destroy());
      return send(res, a.status, a.body, { ...('headers' in a ? a.headers : {}), 'content-type': 'application/problem+json', ...('close' in a && a.close ? { connection: 'close' } : {}) });
    }
    if (route !== ADMIN.reload) {
      // The OAuth routes, mounted only with [mcp.oauth] (adminRoutes).
      req.resume();
      const a = oauthAnswer(oauth!, route, param);
      if (req.method === 'DELETE') log.info({ req_id: id, route: route.path, id: param, deleted: (a.body as { deleted: boolean }).deleted }, 'admin oauth delete');
      return send(res, a.status, a.body);
    }
    const flush = parseBoolean(url.searchParams.get('flush') ?? undefined, 'flush');
    if (!flush.ok) return sendProblem(res, 400, 'Invalid query parameter', flush.problem.detail);
    const r = reloader();
    if (!r) return sendProblem(res, 503, 'Starting', 'the service is still starting; retry shortly', { 'retry-after': '1' });
    // The request body is not used; it is read to the end so that the connection can be reused.
    req.resume();
    const result = await r.reload(flush.value, 'admin');
    log.info({ req_id: id, flush: flush.value, ok: result.ok, reloaded: result.reloaded }, 'admin reload answered');
    send(res, result.ok ? 200 : 500, result);
  };

  const server: Server = createServer((req, res) => {
    const id = requestId(req.headers['x-request-id']);
    res.setHeader('x-request-id', id);
    const started = performance.now();
    res.once('finish', () =>
      log.info({ listener: 'admin', method: req.method, path: targetPath(req.url), status: res.statusCode, duration_ms: Math.round(performance.now() - started), req_id: id }, 'request'),
    );
    handle(req, res, id).catch((err: Error) => {
      log.error({ req_id: id, err: err.message }, 'admin request failed');
      if (!res.headersSent) sendProblem(res, 500, 'Internal error', 'the admin request failed; see the server log');
      else res.destroy();
    });
  });

  const port = await listenAt(server, parsed.address);
  log.info({ host: parsed.address.host, port }, 'admin listener up');
  return {
    address: { host: parsed.address.host, port },
    close: () =>
      new Promise((resolve) => {
        server.close(() => {
          oauth?.close();
          resolve();
        });
        server.closeIdleConnections();
      }),
  };
}
