// A lingering close for answers given before the request body has arrived (an upload's 413, say). Node closes
// a `Connection: close` connection as soon as the answer is written; bytes the client is still sending then
// meet a closed socket, the kernel answers them with a reset, and a reset can discard the answer before the
// client has read it (it sees EPIPE or ECONNRESET instead of the 413). So: the answer and a FIN go out, what
// still arrives is read and dropped (never kept), and the socket is closed when the client closes its side or
// after a short, bounded time, whichever is first.
import type { IncomingMessage } from 'node:http';
import type { Socket } from 'node:net';

/** How long a client that keeps sending after the answer may do so before the connection is cut. */
export const LINGER_MS = 2_000;

const lingering = new WeakSet<Socket>();

/** Makes the close that follows the answer to `req` a lingering one (see above). */
export function lingerAfterEarlyAnswer(req: IncomingMessage, ms = LINGER_MS): void {
  const socket = req.socket as Socket | null;
  if (!socket || lingering.has(socket)) return;
  lingering.add(socket);
  // Whatever still arrives for this request is read and dropped, so the socket keeps reading.
  req.resume();
  let closing = false;
  // node:http ends a `Connection: close` exchange with destroySoon() (end, then destroy): the destroy waits here.
  socket.destroySoon = () => {
    if (closing || socket.destroyed) return;
    closing = true;
    socket.end();
    const timer = setTimeout(() => socket.destroy(), ms);
    timer.unref();
    socket.once('end', () => socket.destroy());
    socket.once('close', () => clearTimeout(timer));
  };
}
