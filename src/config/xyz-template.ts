// The URL template of a remote XYZ source (`type = "xyz"`, docs/xyz.md): parsed and checked once when the
// configuration is read, expanded per tile. Placeholders: `{z}`, `{x}`, `{y}` (required; `{-y}`, the TMS row,
// may stand for `{y}`), and `{s}`, one of the source's `subdomains`, chosen by tile so that one tile always goes
// to one host (its upstream cache is hit again). Anything else in braces is an error, so a typo such as `{Z}`
// fails at load, not as a 404 for every tile.

export type Part = { text: string } | { key: 'z' | 'x' | 'y' | '-y' | 's' };

export interface UrlTemplate {
  readonly parts: readonly Part[];
  /** The template has `{s}`: `subdomains` must be given. */
  readonly usesSubdomains: boolean;
}

const KEYS = new Set(['z', 'x', 'y', '-y', 's']);

/** Parses a template; a string is the problem, one line a user can act on. */
export function parseUrlTemplate(url: string): UrlTemplate | string {
  const parts: Part[] = [];
  const seen = new Set<string>();
  let text = '';
  for (let i = 0; i < url.length; ) {
    const open = url.indexOf('{', i);
    const close = url.indexOf('}', i);
    if (close >= 0 && (open < 0 || close < open)) return `an unmatched "}" at character ${close + 1}`;
    if (open < 0) {
      text += url.slice(i);
      break;
    }
    text += url.slice(i, open);
    const end = url.indexOf('}', open);
    if (end < 0) return `an unmatched "{" at character ${open + 1}`;
    const key = url.slice(open + 1, end);
    if (!KEYS.has(key)) return `unknown placeholder "{${key}}" (the template takes {z}, {x}, {y}, {-y} and {s})`;
    if (text) parts.push({ text });
    text = '';
    parts.push({ key: key as 'z' });
    seen.add(key);
    i = end + 1;
  }
  if (text) parts.push({ text });
  const missing = ['z', 'x'].filter((k) => !seen.has(k));
  if (!seen.has('y') && !seen.has('-y')) missing.push('y');
  if (missing.length) return `the template needs ${missing.map((k) => `{${k}}`).join(', ')}`;
  if (seen.has('y') && seen.has('-y')) return 'the template has both {y} and {-y}; one row is meant';
  // The scheme and host are checked with a tile put in: the placeholders must not make the URL invalid.
  const sample = expandUrl({ parts, usesSubdomains: seen.has('s') }, 0, 0, 0, 'a', false);
  let parsed: URL;
  try {
    parsed = new URL(sample);
  } catch {
    return 'not an absolute http(s) URL';
  }
  if (parsed.protocol !== 'http:' && parsed.protocol !== 'https:') return `an http(s) URL is needed, not ${parsed.protocol}//`;
  if (parsed.username || parsed.password) return 'credentials in the URL are not allowed; send them as headers_env';
  return { parts, usesSubdomains: seen.has('s') };
}

/** The URL of one tile. `tms`: the source's `scheme = "tms"` (rows counted from the south) for `{y}`. */
export function expandUrl(t: UrlTemplate, z: number, x: number, y: number, subdomain: string, tms: boolean): string {
  const flipped = 2 ** z - 1 - y;
  let out = '';
  for (const p of t.parts) {
    if ('text' in p) out += p.text;
    else if (p.key === 'z') out += z;
    else if (p.key === 'x') out += x;
    else if (p.key === 'y') out += tms ? flipped : y;
    else if (p.key === '-y') out += flipped;
    else out += subdomain;
  }
  return out;
}

/** The subdomain of a tile: fixed per tile, spread over the list. */
export function subdomainOf(subdomains: readonly string[], x: number, y: number): string {
  return subdomains.length ? subdomains[Math.abs(x + y) % subdomains.length] : '';
}

/** The template with its query string cut off, for messages and logs: keys are often passed there. */
export function redactedUrl(url: string): string {
  const q = url.indexOf('?');
  return q < 0 ? url : `${url.slice(0, q)}?…`;
}
