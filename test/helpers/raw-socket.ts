// Raw HTTP/1.1 exchanges on a socket, for requests no HTTP client would send (malformed request lines, bare LF,
// duplicate Content-Length, bodies that stop short): what was written, what came back, and whether the server
// closed the connection.
import assert from 'node:assert/strict';
import net from 'node:net';

/** Writes `head` (and `body`) on a fresh socket and collects everything until the server closes it or `idleMs` passes. */
export function rawExchange(port: number, chunks: { data: string | Buffer; delayMs?: number }[], maxMs = 20_000): Promise<{ text: string; closedByServer: boolean }> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    let text = '';
    let closedByServer = false;
    const timers: NodeJS.Timeout[] = [];
    const finish = () => {
      timers.forEach(clearTimeout);
      resolve({ text, closedByServer });
    };
    socket.on('data', (d) => (text += d.toString('latin1')));
    socket.on('end', () => {
      closedByServer = true;
    });
    socket.on('close', finish);
    socket.on('error', (err) => ((err as NodeJS.ErrnoException).code === 'ECONNRESET' ? ((closedByServer = true), finish()) : reject(err)));
    socket.on('connect', () => {
      let at = 0;
      for (const c of chunks) {
        at += c.delayMs ?? 0;
        timers.push(
          setTimeout(() => {
            if (!socket.destroyed) socket.write(c.data);
          }, at),
        );
      }
      timers.push(setTimeout(() => socket.destroy(), maxMs));
    });
  });
}

export interface Parsed {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** The first HTTP response in a raw exchange. */
export function parseResponse(text: string): Parsed {
  const end = text.indexOf('\r\n\r\n');
  assert.ok(end > 0, `no complete response head in:\n${text}`);
  const [statusLine, ...lines] = text.slice(0, end).split('\r\n');
  const headers: Record<string, string> = {};
  for (const l of lines) {
    const i = l.indexOf(':');
    headers[l.slice(0, i).trim().toLowerCase()] = l.slice(i + 1).trim();
  }
  const length = Number(headers['content-length'] ?? '0');
  return { status: Number(statusLine.split(' ')[1]), headers, body: text.slice(end + 4, end + 4 + length) };
}

export function assertProblem(r: Parsed, status: number, detail: RegExp) {
  assert.equal(r.status, status);
  assert.equal(r.headers['content-type'], 'application/problem+json');
  const body = JSON.parse(r.body) as { type: string; title: string; status: number; detail: string };
  assert.equal(body.status, status);
  assert.equal(body.type, 'about:blank');
  assert.ok(body.title.length > 0);
  assert.match(body.detail, detail);
}
