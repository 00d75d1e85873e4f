// Where a request's credentials are: `Authorization: Bearer <token>` or the `key` query parameter (decisions.md:
// the metadata routes already forward `?key=` into the URLs they hand out, so a map library keeps sending it).
// A credential shaped like a JWT (three base64url parts) is verified as one; anything else is an API key.
// Nothing here throws: malformed input is a value the gate answers 401.

/** A credential as the request carries it; never logged, never echoed. */
export type Credential = { kind: 'key' | 'jwt'; value: string } | { kind: 'malformed' };

/** Longest credential looked at: a key is 40-odd characters, a JWT a few hundred; anything much longer is refused unread. */
export const MAX_CREDENTIAL = 8192;

const JWT_SHAPE = /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]*$/;
/** RFC 6750 2.1: `Bearer` then one token68. */
const BEARER = /^Bearer +([A-Za-z0-9\-._~+/]+=*) *$/i;

export function looksLikeJwt(s: string): boolean {
  return JWT_SHAPE.test(s);
}

function classify(value: string): Credential {
  if (value.length === 0 || value.length > MAX_CREDENTIAL) return { kind: 'malformed' };
  return { kind: looksLikeJwt(value) ? 'jwt' : 'key', value };
}

/**
 * The credential of an Authorization header: undefined when there is none or it is not a bearer credential
 * (Basic and other schemes belong to someone else), `malformed` when it says Bearer but is not one token.
 */
export function bearerCredential(header: string | string[] | undefined): Credential | undefined {
  if (header === undefined) return undefined;
  const h = Array.isArray(header) ? header[0] : header;
  if (typeof h !== 'string' || !/^bearer(\s|$)/i.test(h)) return undefined;
  if (h.length > MAX_CREDENTIAL + 16) return { kind: 'malformed' };
  const m = BEARER.exec(h);
  return m ? classify(m[1]) : { kind: 'malformed' };
}

/** The first `key` query parameter of a request target, decoded as URLSearchParams does (`+` a space). */
export function queryKey(url: string): string | undefined {
  const q = url.indexOf('?');
  if (q < 0) return undefined;
  // Cheap refusal first: most requests with a query carry no key (a name may be percent-encoded: `k%65y`).
  if (url.indexOf('key', q) < 0 && url.indexOf('%', q) < 0) return undefined;
  const hash = url.indexOf('#', q);
  const value = new URLSearchParams(url.slice(q + 1, hash < 0 ? undefined : hash)).get('key');
  return value ?? undefined;
}

/** The request's credential: the bearer header first, else `?key=`; undefined when it carries none. */
export function credentialOf(url: string, authorization: string | string[] | undefined, bearerAllowed = true): Credential | undefined {
  const bearer = bearerAllowed ? bearerCredential(authorization) : undefined;
  if (bearer) return bearer;
  const key = queryKey(url);
  return key === undefined ? undefined : classify(key);
}
