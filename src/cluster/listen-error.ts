// A listener that cannot be opened (port taken, no permission, no such local address) described in one line a
// user can act on, instead of a stack trace. Used by the single process and by workers reporting to the primary.

const REASONS: Record<string, string> = {
  EADDRINUSE: 'the address is already in use',
  EACCES: 'permission denied',
  EADDRNOTAVAIL: 'no such local address',
};

/** The one line for a listen/bind error, or undefined when `err` is something else. */
export function listenErrorLine(err: unknown): string | undefined {
  const e = err as (NodeJS.ErrnoException & { address?: string; port?: number }) | undefined;
  if (!e || typeof e.code !== 'string' || (e.syscall !== 'listen' && e.syscall !== 'bind')) return undefined;
  const reason = REASONS[e.code] ?? e.code;
  return `cannot listen on ${e.address ?? '?'}:${e.port ?? '?'}: ${reason}`;
}
