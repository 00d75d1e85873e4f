// The access log and the request id, at the node:http level so every answer is seen: the tile fast lane's,
// Hono's, and those the front (front.ts) gives to malformed requests. One line per request when it ends:
// method, path, route template, status, bytes, duration and request id.
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import type { Logger } from '../log.js';
import { countBytes } from '../telemetry/body-bytes.js';

/** The route template that answered (`/data/{source}/{z}/{x}/{y}.{format}`), noted by the router and the fast lane. */
const routes = new WeakMap<ServerResponse, string>();
const ids = new WeakMap<IncomingMessage, string>();

export function noteRoute(res: ServerResponse | undefined, template: string): void {
  if (res) routes.set(res, template);
}

/** The route template noted for `res`, if a route (or the fast lane) answered it; the metrics label it so. */
export function notedRoute(res: ServerResponse): string | undefined {
  return routes.get(res);
}

/** The request id of a request the access log has seen. */
export function requestIdOf(req: IncomingMessage | undefined): string | undefined {
  return req ? ids.get(req) : undefined;
}

/**
 * A proxy's `X-Request-Id` is kept when it is a reasonable token (printable ASCII without spaces, at most 128
 * characters), so one id follows a request through every hop; anything else is replaced, since it would be
 * echoed into a response header and a log line.
 */
export function requestId(header: string | string[] | undefined): string {
  const given = Array.isArray(header) ? header[0] : header;
  return given !== undefined && /^[\x21-\x7e]{1,128}$/.test(given) ? given : randomUUID();
}

/** The path of a request target without its query: queries may carry API keys (`?key=`), which logs must not keep. */
export function targetPath(url: string | undefined): string {
  const target = url ?? '';
  const q = target.indexOf('?');
  return q < 0 ? target : target.slice(0, q);
}

/**
 * How far a request had got when its client went away: still sending its body, waiting for the answer, or
 * reading an answer that was under way. This is all an operator needs of an ordinary hang-up (a phone losing
 * its network), so it is told once, in the access line, never as an error.
 */
export function departedStage(req: IncomingMessage, res: ServerResponse): 'request body' | 'handling' | 'response' {
  if (!req.complete) return 'request body';
  return res.headersSent ? 'response' : 'handling';
}

/** Whether the client of `req` has gone: its connection is closed while the request is still being answered. */
export function clientGone(req: IncomingMessage | undefined): boolean {
  return req !== undefined && (req.socket === null || req.socket.destroyed);
}

/** One access-log record of a finished (or abandoned) request. */
export function logAccess(log: Logger, req: IncomingMessage, res: ServerResponse, startNs: bigint, bytes: number): void {
  const durationMs = Number(process.hrtime.bigint() - startNs) / 1e6;
  const completed = res.writableFinished;
  // Node sends no body with these, whatever a handler passed to end().
  const bodyless = req.method === 'HEAD' || res.statusCode === 204 || res.statusCode === 304;
  log.info(
    {
      method: req.method,
      path: targetPath(req.url),
      route: routes.get(res) ?? null,
      // No answer had started: the status a handler may have set was never sent.
      status: completed || res.headersSent ? res.statusCode : null,
      bytes: bodyless ? 0 : bytes,
      duration_ms: Math.round(durationMs * 10) / 10,
      req_id: ids.get(req),
      ...(completed ? {} : { aborted: true, stage: departedStage(req, res) }),
    },
    'request',
  );
}

/**
 * Gives every request an id (echoed in `X-Request-Id`) and, when the log level includes info, logs one line when
 * its response ends or its connection closes first.
 */
export function accessLog(log: Logger, next: RequestListener): RequestListener {
  return (req, res) => {
    const id = requestId(req.headers['x-request-id']);
    ids.set(req, id);
    res.setHeader('X-Request-Id', id);
    if (log.isLevelEnabled('info')) {
      const start = process.hrtime.bigint();
      const bytes = countBytes(res);
      res.once('close', () => logAccess(log, req, res, start, bytes()));
    }
    next(req, res);
  };
}
