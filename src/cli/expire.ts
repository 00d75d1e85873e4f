// `tileserver-ts expire`: sends an expire list (a file or stdin) to a running server's admin listener, streamed as
// it is read, so osm2pgsql's replication script can hand over each update's list (docs/live-data.md). Prints the
// answer (`{"lines": n, "tiles": n}`) and exits 0; a refusal prints the problem's detail and exits 1; a usage
// mistake exits 2.
import { createReadStream } from 'node:fs';
import { Readable } from 'node:stream';
import { expireUrl, parseExpireArgs } from './expire-args.js';

export const EXPIRE_USAGE = `Usage:
  tileserver-ts expire --admin http://HOST:PORT (--source ID | --table SCHEMA.NAME) [--min-zoom N] [--max-zoom N] [FILE|-]
Sends an expire list (one z/x/y a line, as osm2pgsql writes it) from FILE or stdin to a running server's
admin listener (server.admin_bind), which marks those tiles, their parents and their children as changed.
Options:
  --admin URL         the admin listener, e.g. http://127.0.0.1:8081
  --source ID         the source whose data changed (a composite id names its members), or
  --table S.NAME      every [[postgres.tables]] source reading that table
  --min-zoom N        the shallowest zoom of the products expired (default 0)
  --max-zoom N        the deepest zoom of the products expired (default: the deepest served)
Exit status: 0 accepted, 1 refused or unreachable, 2 a usage mistake.
`;

export async function runExpireCommand(argv: readonly string[]): Promise<number> {
  const args = parseExpireArgs(argv);
  if (args.kind === 'help') {
    process.stdout.write(EXPIRE_USAGE);
    return 0;
  }
  if (args.kind === 'usage') {
    process.stderr.write(`tileserver-ts expire: ${args.message} (see tileserver-ts expire --help)\n`);
    return 2;
  }
  const file = args.input === '-' ? process.stdin : createReadStream(args.input);
  // A missing file is reported before anything is sent.
  const opened = await new Promise<string | undefined>((resolve) => {
    if (file === process.stdin) return resolve(undefined);
    file.once('error', (err: NodeJS.ErrnoException) => resolve(err.code === 'ENOENT' ? `no such file ${args.input}` : err.message));
    file.once('readable', () => resolve(undefined));
  });
  if (opened) {
    process.stderr.write(`tileserver-ts expire: ${opened}\n`);
    return 1;
  }
  let res: Response;
  try {
    res = await fetch(expireUrl(args), {
      method: 'POST',
      headers: { 'content-type': 'text/plain' },
      body: Readable.toWeb(file) as ReadableStream,
      duplex: 'half',
    } as RequestInit);
  } catch (err) {
    const cause = (err as { cause?: { message?: string } }).cause?.message ?? (err as Error).message;
    process.stderr.write(`tileserver-ts expire: cannot reach ${args.admin.origin}: ${cause}\n`);
    return 1;
  }
  const text = await res.text();
  if (res.ok) {
    process.stdout.write(`${text}\n`);
    return 0;
  }
  let detail = text;
  try {
    detail = (JSON.parse(text) as { detail?: string }).detail ?? text;
  } catch {
    // Not a problem body (a proxy's page): printed as it came.
  }
  process.stderr.write(`tileserver-ts expire: ${res.status}: ${detail}\n`);
  return 1;
}
