// Requests node:http's parser refuses before there is a request object: a malformed request line, bytes a
// target may not hold (space, NUL, non-ASCII), bare LF line ends, a doubled or invalid Content-Length, a header
// section over server.max_header_bytes, a head that never completes. Node answers those with a bare
// `400 Bad Request` (or 431) and no body; here they get what every other error of the service gets: problem
// JSON in the service's own words (never the parser's), CORS headers, a request id, and an access line. The
// connection is closed after the answer, since nothing more can be read from it reliably.
import type { Server } from 'node:http';
import type { Socket } from 'node:net';
import { requestId } from './access-log.js';
import { simpleCorsHeaders } from './cors.js';
import { problemBody } from '../problem.js';

/** What is logged of an answer given here (there is no request object: the method and path are unknown). */
export interface ClientErrorAnswer {
  status: number;
  bytes: number;
  reqId: string;
  /** The parser's code (`HPE_INVALID_URL`...), for the operator: it is not sent to the client. */
  code: string;
}

const REASONS: Record<number, string> = { 400: 'Bad Request', 408: 'Request Timeout', 431: 'Request Header Fields Too Large' };

/** The status and the client's explanation of a parser error code. */
export function clientErrorProblem(code: string, maxHeaderBytes: number): { status: number; title: string; detail: string } {
  switch (code) {
    case 'HPE_HEADER_OVERFLOW':
      return {
        status: 431,
        title: 'Request header fields too large',
        detail:
          `the request line and headers are larger than ${maxHeaderBytes} bytes (server.max_header_bytes); ` +
          'a static map with long overlays can send them as JSON in the body of POST /styles/{style}/static/{view}/{size}',
      };
    case 'ERR_HTTP_REQUEST_TIMEOUT':
    case 'ERR_HTTP_HEADERS_TIMEOUT':
      return { status: 408, title: 'Request timeout', detail: 'the request did not arrive in full in time' };
    case 'HPE_INVALID_URL':
      return { status: 400, title: 'Bad request', detail: 'the request target holds a character a URL may not (a space, a control character or a non-ASCII byte must be percent-encoded)' };
    case 'HPE_INVALID_METHOD':
    case 'HPE_INVALID_VERSION':
    case 'HPE_INVALID_CONSTANT':
      return { status: 400, title: 'Bad request', detail: 'the request line is not METHOD TARGET HTTP/1.1 ending in CRLF (a space in the target must be percent-encoded as %20)' };
    case 'HPE_LF_EXPECTED':
    case 'HPE_CR_EXPECTED':
    case 'HPE_STRICT':
      return { status: 400, title: 'Bad request', detail: 'the request\'s lines must end in CRLF' };
    case 'HPE_UNEXPECTED_CONTENT_LENGTH':
    case 'HPE_INVALID_CONTENT_LENGTH':
      return { status: 400, title: 'Bad request', detail: 'Content-Length must be given once, as a number, and not together with Transfer-Encoding' };
    case 'HPE_INVALID_TRANSFER_ENCODING':
    case 'HPE_INVALID_CHUNK_SIZE':
    case 'HPE_CHUNK_EXTENSIONS_OVERFLOW':
      return { status: 400, title: 'Bad request', detail: 'the chunked request body is malformed' };
    case 'HPE_INVALID_HEADER_TOKEN':
      return { status: 400, title: 'Bad request', detail: 'a header name or value holds a character HTTP does not allow' };
    default:
      return { status: 400, title: 'Bad request', detail: 'the request is not valid HTTP/1.1' };
  }
}

/** The Origin header of the part of the request that was read, when there is one before what was refused. */
function originOf(raw: unknown): string | undefined {
  if (!Buffer.isBuffer(raw)) return undefined;
  const m = /\r?\norigin:[ \t]*([\x21-\x7e]{1,2048})[ \t]*\r?\n/i.exec(raw.toString('latin1'));
  return m?.[1];
}

/** How long a client may go on sending after the answer before the connection is cut (see linger.ts). */
const LINGER_MS = 1_000;

/**
 * Answers parser errors of `server` (its 'clientError' event) as described above. A connection whose answer
 * to an earlier request has started cannot take another answer: it is closed without one, as Node does.
 */
export function answerClientErrors(server: Server, corsOrigins: readonly string[], maxHeaderBytes: number, onAnswer?: (a: ClientErrorAnswer) => void): void {
  const corsFor = simpleCorsHeaders(corsOrigins);
  const answered = new WeakSet<Socket>();
  server.on('clientError', (err: NodeJS.ErrnoException & { rawPacket?: unknown }, socket: Socket) => {
    // The parser reports every later chunk of a refused connection again: one answer per connection.
    if (answered.has(socket)) return;
    answered.add(socket);
    const inFlight = (socket as Socket & { _httpMessage?: { headersSent?: boolean } })._httpMessage;
    if (err.code === 'ECONNRESET' || !socket.writable || inFlight?.headersSent) {
      socket.destroy();
      return;
    }
    const code = err.code ?? 'unknown';
    const p = clientErrorProblem(code, maxHeaderBytes);
    const body = JSON.stringify(problemBody(p.status, p.title, p.detail));
    const id = requestId(undefined);
    const cors = corsFor(originOf(err.rawPacket));
    const headers: Record<string, string> = {
      'x-request-id': id,
      ...cors.headers,
      ...(cors.varyOrigin ? { vary: 'Origin' } : {}),
      'content-type': 'application/problem+json',
      'content-length': String(Buffer.byteLength(body)),
      connection: 'close',
    };
    const head = Object.entries(headers).map(([k, v]) => `${k}: ${v}\r\n`).join('');
    socket.on('error', () => {});
    // End (a FIN after the answer), keep reading what still comes so that no reset overtakes the answer, and
    // close when the client does or after a short time.
    socket.end(`HTTP/1.1 ${p.status} ${REASONS[p.status]}\r\n${head}\r\n${body}`);
    socket.resume();
    const timer = setTimeout(() => socket.destroy(), LINGER_MS);
    timer.unref();
    socket.once('close', () => clearTimeout(timer));
    socket.once('end', () => socket.destroy());
    onAnswer?.({ status: p.status, bytes: Buffer.byteLength(body), reqId: id, code });
  });
}
