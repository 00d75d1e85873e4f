// Who a request without credentials is, for its budget: the address of the connection's peer, or, when that peer
// is a trusted proxy (`[rate_limits] trusted_proxies`), the rightmost hop of `X-Forwarded-For` that is not a
// trusted proxy. A client can write anything into the header it sends; only the hops that trusted proxies
// appended can be believed, so the walk goes from the right and stops at the first untrusted hop. An IPv6 client
// is counted by its /64: a host (or one customer's network) gets a /64 and can pick any address in it.
import { cidrContains, formatIp, parseIp, type Cidr, type IpAddress } from '../config/cidr.js';

/** Hops read from the right of `X-Forwarded-For` at most: a chain of proxies is short, a forged list is not. */
export const MAX_HOPS = 32;

export function isTrusted(ip: IpAddress, trusted: readonly Cidr[]): boolean {
  for (const range of trusted) if (cidrContains(range, ip)) return true;
  return false;
}

/**
 * The client's address: the peer itself unless it is trusted; else the rightmost untrusted hop of `forwardedFor`.
 * When every hop read is trusted, the leftmost of them; an unreadable hop ends the walk at the hop before it (the
 * nearest trusted proxy), so garbage in the header never chooses whom a request is counted against.
 * Undefined only when the peer address itself cannot be read (a socket already closed).
 */
export function clientAddress(peer: string | undefined, forwardedFor: string | string[] | undefined, trusted: readonly Cidr[]): IpAddress | undefined {
  const first = parseIp(peer);
  if (!first || trusted.length === 0 || forwardedFor === undefined || !isTrusted(first, trusted)) return first;
  const header = Array.isArray(forwardedFor) ? forwardedFor.join(',') : forwardedFor;
  let client = first;
  let end = header.length;
  for (let hops = 0; hops < MAX_HOPS && end >= 0; hops++) {
    const comma = header.lastIndexOf(',', end - 1);
    const hop = parseIp(header.slice(comma + 1, end));
    if (!hop) return client;
    client = hop;
    if (!isTrusted(hop, trusted)) return hop;
    if (comma < 0) break;
    end = comma;
  }
  return client;
}

/** The budget key of an address: IPv4 as written, IPv6 as its /64 (`2001:db8:1:2::/64`). */
export function addressKey(ip: IpAddress): string {
  if (ip.v === 4) return formatIp(ip);
  const b = ip.bytes;
  const g = (i: number) => ((b[i] << 8) | b[i + 1]).toString(16);
  return `${g(0)}:${g(2)}:${g(4)}:${g(6)}::/64`;
}
