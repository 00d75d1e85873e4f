// Which process of a cluster answered a request: the server side of a fresh TCP connection is found in
// /proc/net/tcp{,6}, and the worker holding that socket among the candidates' open file descriptors.
import { readdirSync, readFileSync, readlinkSync } from 'node:fs';
import net from 'node:net';

/** Live (not zombie) direct children of `parent`, from /proc. */
export function childrenOf(parent: number): number[] {
  const found: number[] = [];
  for (const name of readdirSync('/proc')) {
    if (!/^\d+$/.test(name)) continue;
    let stat: string;
    try {
      stat = readFileSync(`/proc/${name}/stat`, 'utf8');
    } catch {
      continue;
    }
    // The command name is in parentheses and may hold spaces: fields are counted after its closing one.
    const [state, ppid] = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    if (Number(ppid) === parent && state !== 'Z') found.push(Number(name));
  }
  return found.sort((a, b) => a - b);
}

/** The inode of the listening side's socket of the connection between `serverPort` and `clientPort`. */
function acceptedInode(serverPort: number, clientPort: number): string | undefined {
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let rows: string[];
    try {
      rows = readFileSync(table, 'utf8').split('\n').slice(1);
    } catch {
      continue;
    }
    for (const row of rows) {
      const cols = row.trim().split(/\s+/);
      if (cols.length < 10) continue;
      const port = (addr: string) => parseInt(addr.slice(addr.lastIndexOf(':') + 1), 16);
      if (port(cols[1]) === serverPort && port(cols[2]) === clientPort) return cols[9];
    }
  }
  return undefined;
}

function holderOf(inode: string, candidates: number[]): number | undefined {
  const target = `socket:[${inode}]`;
  for (const pid of candidates) {
    let fds: string[];
    try {
      fds = readdirSync(`/proc/${pid}/fd`);
    } catch {
      continue;
    }
    for (const fd of fds) {
      try {
        if (readlinkSync(`/proc/${pid}/fd/${fd}`) === target) return pid;
      } catch {
        // closed while looking
      }
    }
  }
  return undefined;
}

export interface Answered {
  /** The candidate that held the connection, when found. */
  pid: number | undefined;
  status: number;
  body: string;
}

/**
 * Sends `method path` on a new connection and tells which of `candidates` answered it. The connection stays
 * open until the answer is read and the socket looked up (it is gone from /proc once closed).
 */
export function askOnFreshConnection(port: number, method: string, path: string, candidates: number[]): Promise<Answered> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    let got = Buffer.alloc(0);
    const timer = setTimeout(() => {
      socket.destroy();
      reject(new Error(`no answer to ${method} ${path} within 10 s`));
    }, 10_000);
    socket.on('error', (err) => {
      clearTimeout(timer);
      reject(err);
    });
    socket.on('data', (d: Buffer) => {
      got = Buffer.concat([got, d]);
      const text = got.toString('latin1');
      const end = text.indexOf('\r\n\r\n');
      if (end < 0) return;
      const length = Number(/\r\ncontent-length:\s*(\d+)/i.exec(text.slice(0, end))?.[1] ?? 0);
      if (got.length < end + 4 + length) return;
      clearTimeout(timer);
      const inode = acceptedInode(port, socket.localPort!);
      const pid = inode ? holderOf(inode, candidates) : undefined;
      socket.destroy();
      resolve({ pid, status: Number(text.slice(9, 12)), body: got.subarray(end + 4, end + 4 + length).toString('utf8') });
    });
    socket.write(`${method} ${path} HTTP/1.1\r\nHost: test\r\n\r\n`);
  });
}

/**
 * Which of `candidates` holds the server side of the open connection from local port `clientPort` to
 * `serverPort`; undefined until one of them has taken it (in a cluster the primary accepts, then hands it on).
 */
export function connectionHolder(serverPort: number, clientPort: number, candidates: number[]): number | undefined {
  const inode = acceptedInode(serverPort, clientPort);
  return inode ? holderOf(inode, candidates) : undefined;
}
