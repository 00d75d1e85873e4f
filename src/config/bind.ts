// Listener addresses written in the configuration (`[telemetry] scrape_bind`, `server.admin_bind`): `host:port`, or
// `[ipv6]:port`; and binding a listener to one.
import type { Server } from 'node:net';

export type BindAddress = { host: string; port: number };
export type BindParse = { ok: true; address: BindAddress } | { ok: false; problem: string };

const HOSTNAME = /^[A-Za-z0-9]([A-Za-z0-9-]{0,62})?(\.[A-Za-z0-9]([A-Za-z0-9-]{0,62})?)*$/;
const IPV6 = /^[0-9A-Fa-f:.]+(%[A-Za-z0-9_.-]+)?$/;

/** Parses `host:port` (a name or IPv4 address) or `[ipv6]:port`; port 0 asks the system for a free port. */
export function parseBind(text: string): BindParse {
  const fail = (why: string): BindParse => ({ ok: false, problem: `"${text}" is not host:port (${why})` });
  const colon = text.lastIndexOf(':');
  if (colon < 0) return fail('no port');
  let host = text.slice(0, colon);
  const portText = text.slice(colon + 1);
  if (!/^\d{1,5}$/.test(portText) || Number(portText) > 65535) return fail('the port must be an integer 0..65535');
  if (host.startsWith('[')) {
    if (!host.endsWith(']')) return fail('an IPv6 address must be written [address]');
    host = host.slice(1, -1);
    if (!host.includes(':') || !IPV6.test(host)) return fail('not an IPv6 address');
  } else if (host.includes(':')) {
    return fail('write an IPv6 address in brackets: [::1]:9464');
  } else if (!HOSTNAME.test(host) || host.length > 253) {
    return fail('not a host name or IPv4 address');
  }
  return { ok: true, address: { host, port: Number(portText) } };
}

/** Binds `server` to `address`; resolves with the port it got (the system's choice for port 0), rejects with the listen error. */
export function listenAt(server: Server, address: BindAddress): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen(address.port, address.host, () => {
      server.off('error', reject);
      const bound = server.address();
      resolve(typeof bound === 'object' && bound ? bound.port : address.port);
    });
  });
}
