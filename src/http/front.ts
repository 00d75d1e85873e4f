// What node:http hands over before Hono can: request targets Hono cannot make a URL of (a backslash in the
// path, `*`, no usable Host), CONNECT, and request bodies that never arrive in full. Each gets an answer like
// every other error of the service (problem JSON with CORS) instead of an empty 400 or a closed socket.
import type { IncomingMessage, RequestListener, Server, ServerResponse } from 'node:http';
import type { Duplex } from 'node:stream';
import { requestId } from './access-log.js';
import { CORS_ALLOW_METHODS, simpleCorsHeaders, type SimpleCors } from './cors.js';
import { problemBody } from '../problem.js';
import { spellLocation } from './header-case.js';

/** Why a request target cannot be routed, or undefined when it can. Mirrors what @hono/node-server refuses. */
export function malformedTarget(url: string | undefined, host: string | undefined): string | undefined {
  const target = url ?? '';
  const query = target.indexOf('?');
  const path = query < 0 ? target : target.slice(0, query);
  if (path.includes('\\')) return 'a backslash is not allowed in the request path';
  if (target.startsWith('/')) {
    if (!host) return 'the request has no Host header';
    try {
      const parsed = new URL(`http://${host}`);
      if (parsed.hostname.length !== host.length && parsed.hostname !== host.replace(/:\d+$/, '')) return 'the Host header is not a host name';
    } catch {
      return 'the Host header is not a host name';
    }
    return undefined;
  }
  if (/^https?:\/\//i.test(target)) {
    try {
      new URL(target);
      return undefined;
    } catch {
      return 'the absolute request target is not a valid URL';
    }
  }
  if (target === '*') return 'the request target "*" names no resource';
  return 'the request target is not a path';
}

type CorsFor = (origin: string | undefined) => SimpleCors;

/** The CORS headers of an answer to `req`, with `Vary: Origin` when the answer depends on the origin. */
function corsHeaders(req: IncomingMessage, corsFor: CorsFor): Record<string, string> {
  const cors = corsFor(req.headers.origin);
  return cors.varyOrigin ? { ...cors.headers, vary: 'Origin' } : { ...cors.headers };
}

function problemJson(status: number, title: string, detail: string): string {
  return JSON.stringify(problemBody(status, title, detail));
}

/**
 * Answers `res` with a problem, CORS headers for the request's Origin, and `Connection: close` when the rest
 * of the request cannot be trusted (an unfinished body).
 */
function sendProblem(req: IncomingMessage, res: ServerResponse, corsFor: CorsFor, status: number, title: string, detail: string, close: boolean, extra: Record<string, string> = {}): void {
  const body = problemJson(status, title, detail);
  res.writeHead(status, {
    ...corsHeaders(req, corsFor),
    ...extra,
    'content-type': 'application/problem+json',
    'content-length': String(Buffer.byteLength(body)),
    ...(close ? { connection: 'close' } : {}),
  });
  res.end(body);
}

/** `OPTIONS *` asks about the server as a whole (RFC 9110 9.3.7): the methods it supports, with CORS. */
function answerServerOptions(req: IncomingMessage, res: ServerResponse, corsFor: CorsFor): void {
  res.writeHead(204, { ...corsHeaders(req, corsFor), allow: CORS_ALLOW_METHODS.join(', ') });
  res.end();
}

export interface FrontOptions {
  corsOrigins: readonly string[];
  /** server.request_timeout_ms: time from the request's start for its whole body to arrive. */
  bodyTimeoutMs: number;
}

/**
 * Wraps the Hono listener: malformed targets answered here, and a timer on every request with a body that
 * ends it with 408 (or, once an answer has started, closes the connection) when the body is not complete in
 * time. Requests without a body (GET, HEAD: the tile traffic) pay for one header read.
 */
export function front(opts: FrontOptions, next: RequestListener): RequestListener {
  const corsFor = simpleCorsHeaders(opts.corsOrigins);
  return (req, res) => {
    const why = malformedTarget(req.url, req.headers.host);
    if (why !== undefined) {
      if (req.url === '*' && req.method === 'OPTIONS') return answerServerOptions(req, res, corsFor);
      return sendProblem(req, res, corsFor, 400, 'Bad request', why, !req.complete);
    }
    const hasBody = req.headers['transfer-encoding'] !== undefined || (req.headers['content-length'] !== undefined && req.headers['content-length'] !== '0');
    if (hasBody && !req.complete) watchBody(req, res, opts.bodyTimeoutMs, corsFor);
    if (req.method === 'POST') spellLocation(res);
    next(req, res);
  };
}

/**
 * HTTP/1.1 requires a Host header (RFC 9112 3.2). node:http's own check (its `requireHostHeader`) answers a
 * request without one with a bare 400 and no body before any listener runs, so the server turns it off
 * (src/server.ts) and this answers the same requests with problem JSON like every other malformed request. It
 * stands ahead of the tile fast lane, so that no route sees an HTTP/1.1 request without Host, as before.
 */
export function requireHost(corsOrigins: readonly string[], next: RequestListener): RequestListener {
  const corsFor = simpleCorsHeaders(corsOrigins);
  return (req, res) => {
    if (req.headers.host === undefined && req.httpVersionMajor === 1 && req.httpVersionMinor === 1) {
      return sendProblem(req, res, corsFor, 400, 'Bad request', 'the request has no Host header (HTTP/1.1 requires one)', true);
    }
    next(req, res);
  };
}

/**
 * Marks `res` as answered by the front. The route still holds the request (an upload ends once its response
 * closes, src/http/routes/uploads.ts) and answers it in the end; that answer reaches nobody, and a second head
 * on one response would make node:http throw, which @hono/node-server reports with a stack trace. So later
 * writes are dropped.
 */
function answeredHere(res: ServerResponse): void {
  res.writeHead = function (this: ServerResponse) {
    return this;
  } as typeof res.writeHead;
  res.write = () => true;
  res.end = function (this: ServerResponse, ...args: unknown[]) {
    const done = args.find((a) => typeof a === 'function') as (() => void) | undefined;
    done?.();
    return this;
  } as typeof res.end;
}

function watchBody(req: IncomingMessage, res: ServerResponse, timeoutMs: number, corsFor: CorsFor): void {
  const timer = setTimeout(() => {
    if (req.complete) return;
    const detail = `the request body did not arrive in full within ${timeoutMs} ms`;
    if (res.headersSent) {
      res.destroy();
      return;
    }
    sendProblem(req, res, corsFor, 408, 'Request timeout', detail, true);
    answeredHere(res);
    // Whatever still trickles in is not read: the connection ends once the answer is out.
    res.once('finish', () => req.socket.destroySoon());
  }, timeoutMs);
  timer.unref();
  const done = () => clearTimeout(timer);
  req.once('end', done);
  res.once('close', done);
  req.socket.once('close', done);
}

/**
 * CONNECT asks the server to be a tunnel, which it is not: 405 with `Allow` and a problem body, written on the
 * raw socket (node:http hands CONNECT to this event instead of the request listener), then the socket ends.
 */
export function answerConnect(server: Server, corsOrigins: readonly string[], onAnswer?: (req: IncomingMessage, id: string, status: number, bytes: number) => void): void {
  const corsFor = simpleCorsHeaders(corsOrigins);
  server.on('connect', (req: IncomingMessage, socket: Duplex) => {
    const body = problemJson(405, 'Method not allowed', 'CONNECT is not supported: this server is not a proxy');
    const id = requestId(req.headers['x-request-id']);
    const headers: Record<string, string> = {
      'x-request-id': id,
      ...corsHeaders(req, corsFor),
      allow: CORS_ALLOW_METHODS.join(', '),
      'content-type': 'application/problem+json',
      'content-length': String(Buffer.byteLength(body)),
      connection: 'close',
    };
    const head = Object.entries(headers).map(([k, v]) => `${k}: ${v}\r\n`).join('');
    socket.on('error', () => {});
    socket.end(`HTTP/1.1 405 Method Not Allowed\r\n${head}\r\n${body}`);
    onAnswer?.(req, id, 405, Buffer.byteLength(body));
  });
}
