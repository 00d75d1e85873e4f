// The access gate: decides, for one request and the state it is served from, whether it may go on, and records
// who it speaks for (src/auth/principal.ts) and what its credentials allow (for listings and in-process calls).
// It runs at the node:http level, ahead of the tile fast lane and Hono (src/http/access-gate.ts sends its
// refusals), so no request passes by it; what a request touches is what its route declares it reads
// (src/routes/public-routes.ts, read by resources.ts), and a route cannot be mounted without that declaration.
// docs/access.md has the rules; in short:
//
//   closed anywhere in what the request touches -> 404, as an unknown id (its existence is not revealed);
//   key-level and no credential                  -> 401 with `WWW-Authenticate: Bearer realm="tileserver-ts"`;
//   key-level and a credential that is not valid -> 401 (error="invalid_token");
//   valid, but not for this resource or origin   -> 403 (error="insufficient_scope");
//   public                                       -> on, whatever credentials come along (a wrong one is ignored).
//
// Cost on the hot path: with no `[auth]` and no `access` anywhere, one WeakMap read. Otherwise a public tile spelt
// plainly takes the shortcut below; other requests one route match (src/routes/match.ts, 0.1-0.6 µs measured,
// kept on the request for the rate limiter) and Map reads; a key costs one SHA-256, a JWT one signature check per
// token string (then a cache hit).
import type { IncomingMessage } from 'node:http';
import type { AppState } from '../state/app-state.js';
import { credentialOf, type Credential } from './credentials.js';
import type { Matcher } from './patterns.js';
import { policyOf, type Policy } from './policy.js';
import { setPrincipal, type Principal } from './principal.js';
import { compositeMembers, isCompositeId, terrainProductOf } from '../sources/source-ids.js';
import { pathTargets, requestTargets, type Target } from './resources.js';

/** What a request's valid credential allows. */
export interface Grant {
  principal: Principal;
  sources: Matcher;
  styles: Matcher;
  /** Collections whose features it may create, change and delete (docs/editing.md). */
  write: Matcher;
}

export interface Refusal {
  ok: false;
  status: 401 | 403 | 404;
  title: string;
  detail: string;
  /** The WWW-Authenticate header of a 401 or 403. */
  challenge?: string;
}

/** `protected`: the request reads something only a key or token opens (its answer must not be cached for everybody). */
export type Verdict = { ok: true; protected?: boolean } | Refusal;

export const REALM = 'tileserver-ts';
const PASS: Verdict = { ok: true };
const PASS_PROTECTED: Verdict = { ok: true, protected: true };
const MISSING: Refusal = {
  ok: false,
  status: 401,
  title: 'Unauthorized',
  detail: 'this resource needs an API key (`key` query parameter or `Authorization: Bearer`) or a bearer token',
  challenge: `Bearer realm="${REALM}"`,
};
const INVALID: Refusal = {
  ok: false,
  status: 401,
  title: 'Unauthorized',
  detail: 'the API key or token is not valid (unknown, expired or malformed)',
  challenge: `Bearer realm="${REALM}", error="invalid_token"`,
};
const FORBIDDEN: Refusal = {
  ok: false,
  status: 403,
  title: 'Forbidden',
  detail: 'the API key or token does not allow this resource, or not from this origin',
  challenge: `Bearer realm="${REALM}", error="insufficient_scope"`,
};

function notFound(t: Target): Refusal {
  const detail = t.kind === 'style' ? `no style with id "${t.id}"` : t.kind === 'source' ? `no source with id "${t.id}"` : 'not found';
  return { ok: false, status: 404, title: t.kind === 'style' ? 'Style not found' : t.kind === 'source' ? 'Source not found' : 'Not found', detail };
}

const grants = new WeakMap<IncomingMessage, Grant>();

/** What the credentials of `req` (checked by the gate) allow; undefined when it had none valid. */
export function grantOf(req: IncomingMessage | undefined): Grant | undefined {
  return req ? grants.get(req) : undefined;
}

/** A target as the rules see it: a style path may lead to a source's generated style. */
interface Judged {
  target: Target;
  level: 'public' | 'key' | 'closed';
}

function judge(policy: Policy, targets: readonly Target[]): Judged[] {
  return targets.map((t) => {
    if (t.kind === 'source') return { target: t, level: policy.sourceLevel(t.id) };
    if (t.kind === 'style') {
      const s = policy.style(t.id);
      return { target: { kind: s.kind, id: s.id }, level: s.level };
    }
    return { target: t, level: policy.defaultLevel };
  });
}

function allows(grant: Grant, t: Target): boolean {
  if (t.kind === 'shared') return true;
  if (t.kind === 'style') return grant.styles(t.id);
  if (grant.sources(t.id)) return true;
  const product = terrainProductOf(t.id);
  return product !== undefined && grant.sources(product.source);
}

/** The verdict on `targets` for a request with `grant` (or none): closed -> 404, key without a grant -> `noGrant`. */
function verdictOn(judged: readonly Judged[], grant: Grant | undefined, noGrant: Refusal): Verdict {
  for (const j of judged) if (j.level === 'closed') return notFound(j.target);
  let guarded = false;
  for (const j of judged) {
    if (j.level !== 'key') continue;
    if (!grant) return noGrant;
    if (!allows(grant, j.target)) return FORBIDDEN;
    guarded = true;
  }
  return guarded ? PASS_PROTECTED : PASS;
}

/** The origin a browser request comes from: `Origin`, else the origin of `Referer`; undefined for other clients. */
export function requestOrigin(req: IncomingMessage): string | undefined {
  const o = req.headers.origin;
  if (typeof o === 'string' && o !== '') return o;
  const r = req.headers.referer;
  if (typeof r !== 'string' || r === '') return undefined;
  try {
    return new URL(r).origin;
  } catch {
    return 'null';
  }
}

type Checked = Grant | 'invalid' | 'origin';

function keyGrant(policy: Policy, req: IncomingMessage, key: string): Checked {
  const entry = policy.keys.lookup(key, Date.now());
  if (!entry) return 'invalid';
  if (entry.origins) {
    const origin = requestOrigin(req);
    if (origin !== undefined && !entry.origins(origin)) return 'origin';
  }
  return { principal: { name: entry.name, via: 'key', rateClass: entry.rateClass }, sources: entry.sources, styles: entry.styles, write: entry.write };
}

async function jwtGrant(policy: Policy, token: string): Promise<Checked> {
  if (!policy.jwt) return 'invalid';
  const v = await policy.jwt.verify(token, Date.now());
  if (!v.ok) return 'invalid';
  return { principal: { name: v.name, via: 'jwt', rateClass: v.rateClass }, sources: v.sources, styles: v.styles, write: v.write };
}

function conclude(req: IncomingMessage, judged: readonly Judged[], checked: Checked, listing: boolean): Verdict {
  if (typeof checked !== 'string') {
    grants.set(req, checked);
    setPrincipal(req, checked.principal);
    const v = verdictOn(judged, checked, FORBIDDEN);
    // A listing shown to a credential may name key-level things: not one for a shared cache either.
    return listing && v.ok ? PASS_PROTECTED : v;
  }
  // Credentials that do not hold are no credentials for a public resource or a listing; a protected one refuses.
  return verdictOn(judged, undefined, checked === 'origin' ? FORBIDDEN : INVALID);
}

/**
 * The tile traffic's shortcut: `/data/{id}/...` of a public source, spelt plainly (no `%`, no dot segment, no
 * composite), with no credential to record. Measured: it halves what the general path costs such a request
 * (about 1 µs), which the cached tile's whole answer would otherwise notice.
 */
function publicTile(policy: Policy, url: string, req: IncomingMessage): boolean {
  if (!url.startsWith('/data/') || req.headers.authorization !== undefined) return false;
  const q = url.indexOf('?');
  const path = q < 0 ? url : url.slice(0, q);
  if (q >= 0 && (url.includes('key', q) || url.includes('%', q))) return false;
  if (path.includes('%') || path.includes('/.')) return false;
  const end = path.indexOf('/', 6);
  if (end <= 6) return false;
  const id = path.slice(6, end);
  return !isCompositeId(id) && policy.sourceLevel(id) === 'public';
}

/**
 * The gate's verdict on `req` under `state`: synchronous unless the request carries a JWT not verified yet.
 * Records the principal and the grant of a request whose credentials are valid.
 */
export function checkRequest(state: AppState, req: IncomingMessage): Verdict | Promise<Verdict> {
  const policy = policyOf(state);
  if (policy.open || req.method === 'OPTIONS') return PASS;
  const url = req.url ?? '';
  if (publicTile(policy, url, req)) return PASS;
  const where = requestTargets(req);
  const judged = where.targets.length ? judge(policy, where.targets) : [];
  const cred: Credential | undefined = credentialOf(url, req.headers.authorization, where.bearer);
  if (!cred) return verdictOn(judged, undefined, MISSING);
  if (cred.kind === 'malformed') return verdictOn(judged, undefined, INVALID);
  if (cred.kind === 'key') return conclude(req, judged, keyGrant(policy, req, cred.value), where.listing);
  return jwtGrant(policy, cred.value).then(
    (checked) => conclude(req, judged, checked, where.listing),
    () => verdictOn(judged, undefined, INVALID),
  );
}

/** The verdict on the targets of a request already past the gate (an in-process call of an MCP tool). */
export function checkPath(state: AppState, method: string, url: string, grant: Grant | undefined): Verdict {
  const policy = policyOf(state);
  if (policy.open) return PASS;
  return verdictOn(judge(policy, pathTargets(method, url).targets), grant, MISSING);
}

const NO_WRITES: Refusal = {
  ok: false,
  status: 403,
  title: 'Forbidden',
  detail: 'writes need [auth]: this service has no API keys or tokens that could allow them',
};
const WRITE_FORBIDDEN: Refusal = { ...FORBIDDEN, detail: 'the API key or token does not allow writing the features of this collection' };

/**
 * Whether a request past the gate (which judged its reading of `collection`) may also write that collection's
 * features: only with a valid credential whose `write` patterns match, whatever the collection's read access, and
 * never without `[auth]` (nothing could be allowed then). `credentialGiven`: the request carried a key or token, so a
 * missing grant means it was not valid (401 invalid_token), not absent (401).
 */
export function checkWrite(state: AppState, req: IncomingMessage | undefined, collection: string, credentialGiven: boolean): Verdict {
  if (!state.config.auth) return NO_WRITES;
  const grant = grantOf(req);
  if (!grant) return credentialGiven ? INVALID : MISSING;
  // A layer or product id is judged as its source, as the gate judges reads.
  return grant.write(collection) ? PASS_PROTECTED : WRITE_FORBIDDEN;
}

/** The verdict on sources a route learnt from a request body (`POST /api/spatial/query`). */
export function checkSources(state: AppState, ids: readonly string[], grant: Grant | undefined): Verdict {
  const policy = policyOf(state);
  if (policy.open) return PASS;
  const targets: Target[] = ids.flatMap((id) => compositeMembers(id).map((m) => ({ kind: 'source' as const, id: m })));
  return verdictOn(judge(policy, targets), grant, MISSING);
}

/** Whether a listing shown to a request with `grant` includes a source or style: public ones, and key ones the grant allows. */
export function visible(state: AppState, grant: Grant | undefined): (kind: 'source' | 'style', id: string) => boolean {
  const policy = policyOf(state);
  if (policy.open) return () => true;
  return (kind, id) => {
    const [j] = judge(policy, [{ kind, id }]);
    if (j.level === 'public') return true;
    if (j.level === 'closed') return false;
    return grant !== undefined && allows(grant, j.target);
  };
}
