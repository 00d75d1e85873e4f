// IP addresses and CIDR ranges as the rate limits read them (`[rate_limits] trusted_proxies`, the peer address of a
// connection, the hops of `X-Forwarded-For`). Parsing never throws: anything that is not an address is undefined.
// An IPv4-mapped IPv6 address (`::ffff:192.0.2.1`, what a dual-stack socket reports for an IPv4 peer) is the IPv4
// address it maps, so `10.0.0.0/8` matches it; a range written in the mapped form (`::ffff:10.0.0.0/104`) is the
// IPv4 range. Lives with the configuration because the schema checks `trusted_proxies` with it.
import { isIPv4, isIPv6 } from 'node:net';

export interface IpAddress {
  v: 4 | 6;
  /** 4 or 16 bytes, network order. */
  bytes: Uint8Array;
}

export interface Cidr {
  v: 4 | 6;
  /** The range's first address (host bits cleared). */
  bytes: Uint8Array;
  prefix: number;
}

/** Longest text taken as one address: the longest IPv6 text with a zone and a port is well under this. */
const MAX_ADDRESS_TEXT = 100;

function v4Bytes(s: string): Uint8Array {
  const out = new Uint8Array(4);
  const parts = s.split('.');
  for (let i = 0; i < 4; i++) out[i] = Number(parts[i]);
  return out;
}

/** `s` must pass isIPv6 (zone removed). */
function v6Bytes(s: string): Uint8Array {
  const out = new Uint8Array(16);
  let text = s;
  // An IPv4 tail (`::ffff:1.2.3.4`) is two groups.
  const lastColon = text.lastIndexOf(':');
  const tail = text.slice(lastColon + 1);
  let tailBytes: Uint8Array | undefined;
  if (tail.includes('.')) {
    tailBytes = v4Bytes(tail);
    text = text.slice(0, lastColon + 1) + '0:0';
  }
  const [head, rest] = text.includes('::') ? (text.split('::') as [string, string]) : [text, undefined];
  const headGroups = head === '' ? [] : head.split(':');
  const restGroups = rest === undefined || rest === '' ? [] : rest.split(':');
  const groups = [...headGroups, ...new Array<string>(8 - headGroups.length - restGroups.length).fill('0'), ...restGroups];
  for (let i = 0; i < 8; i++) {
    const g = parseInt(groups[i], 16);
    out[i * 2] = g >> 8;
    out[i * 2 + 1] = g & 0xff;
  }
  if (tailBytes) out.set(tailBytes, 12);
  return out;
}

function isMapped(b: Uint8Array): boolean {
  for (let i = 0; i < 10; i++) if (b[i] !== 0) return false;
  return b[10] === 0xff && b[11] === 0xff;
}

/**
 * An address as written in a header or a socket: `192.0.2.1`, `192.0.2.1:8080`, `2001:db8::1`, `[2001:db8::1]`,
 * `[2001:db8::1]:443`, `fe80::1%eth0`, surrounding spaces and quotes allowed. IPv4-mapped IPv6 is read as IPv4.
 */
export function parseIp(text: string | undefined): IpAddress | undefined {
  if (text === undefined || text.length > MAX_ADDRESS_TEXT) return undefined;
  let s = text.trim();
  if (s.length >= 2 && s.startsWith('"') && s.endsWith('"')) s = s.slice(1, -1).trim();
  if (s.startsWith('[')) {
    const close = s.indexOf(']');
    if (close < 0) return undefined;
    const after = s.slice(close + 1);
    if (after !== '' && !/^:\d{1,5}$/.test(after)) return undefined;
    s = s.slice(1, close);
  } else if (s.indexOf(':') > 0 && s.indexOf(':') === s.lastIndexOf(':')) {
    // One colon: an IPv4 address with a port.
    const [host, port] = s.split(':') as [string, string];
    if (!/^\d{1,5}$/.test(port)) return undefined;
    s = host;
  }
  const zone = s.indexOf('%');
  if (zone >= 0) s = s.slice(0, zone);
  if (isIPv4(s)) return { v: 4, bytes: v4Bytes(s) };
  if (!isIPv6(s)) return undefined;
  const bytes = v6Bytes(s);
  if (isMapped(bytes)) return { v: 4, bytes: bytes.slice(12) };
  return { v: 6, bytes };
}

/** A range, `10.0.0.0/8`, `2001:db8::/32`, or one address (`/32`, `/128`); host bits are cleared. Undefined when malformed. */
export function parseCidr(text: string): Cidr | undefined {
  if (text.length > MAX_ADDRESS_TEXT) return undefined;
  const s = text.trim();
  const slash = s.indexOf('/');
  const addrText = slash < 0 ? s : s.slice(0, slash);
  // A range is written bare: no brackets, ports or zones.
  if (!isIPv4(addrText) && !isIPv6(addrText)) return undefined;
  const writtenV6 = isIPv6(addrText);
  const full = writtenV6 ? v6Bytes(addrText) : v4Bytes(addrText);
  const max = writtenV6 ? 128 : 32;
  let prefix = max;
  if (slash >= 0) {
    const p = s.slice(slash + 1);
    if (!/^\d{1,3}$/.test(p)) return undefined;
    prefix = Number(p);
    if (prefix > max) return undefined;
  }
  let v: 4 | 6 = writtenV6 ? 6 : 4;
  let bytes = full;
  if (writtenV6 && isMapped(full) && prefix >= 96) {
    v = 4;
    bytes = full.slice(12);
    prefix -= 96;
  }
  bytes = bytes.slice();
  for (let bit = prefix; bit < bytes.length * 8; bit++) bytes[bit >> 3] &= ~(0x80 >> (bit & 7));
  return { v, bytes, prefix };
}

export function cidrContains(range: Cidr, ip: IpAddress): boolean {
  if (range.v !== ip.v) return false;
  const full = range.prefix >> 3;
  for (let i = 0; i < full; i++) if (range.bytes[i] !== ip.bytes[i]) return false;
  const rest = range.prefix & 7;
  if (rest === 0) return true;
  const mask = (0xff << (8 - rest)) & 0xff;
  return (ip.bytes[full] & mask) === range.bytes[full];
}

/** The entries of a `trusted_proxies` list that are not ranges (for the configuration's error message). */
export function invalidCidrs(list: readonly string[]): string[] {
  return list.filter((s) => parseCidr(s) === undefined);
}

/** An address in its canonical text: dotted IPv4, or eight lower-case hex groups joined by `:` for IPv6. */
export function formatIp(ip: IpAddress): string {
  if (ip.v === 4) return ip.bytes.join('.');
  const groups: string[] = [];
  for (let i = 0; i < 16; i += 2) groups.push(((ip.bytes[i] << 8) | ip.bytes[i + 1]).toString(16));
  return groups.join(':');
}
