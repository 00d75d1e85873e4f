// The access gate: decides, for one request and the state it is served from, whether it may go on, and records
// who it speaks for (src/auth/principal.ts) and what its credentials allow (for listings and in-process calls).
// It runs at the node:http level, ahead of the tile fast lane and Hono (src/http/access-gate.ts sends its
// refusals), so no request passes by it; what a request touches is what its route declares it reads
// (src/routes/public-routes.ts, read by resources.ts), and a route cannot be mounted without that declaration.
// docs/access.md has the rules; in short:
//
//   closed, or not served at all                 -> judged as an id of `default_access` that nothing is configured
//                                                   for; if that passes, the one "unseen" 404 (below);
//   key-level and no credential                  -> 401 with `WWW-Authenticate: Bearer realm="tileserver-ts"`;
//   key-level and a credential that is not valid -> 401 (error="invalid_token");
//   valid, but not for this resource or origin   -> 403 (error="insufficient_scope");
//   public                                       -> on, whatever credentials come along (a wrong one is ignored).
//
// Closed means unseen: a closed id and an id that does not exist get the same answer, byte for byte, whoever asks.
// Both are judged alike (the level `default_access`, the key's patterns for what the path names), and the 404 that
// follows is not sent here but marked on the request (unseen.ts): the rate limiter counts it like any request and
// src/http/access-gate.ts answers it after the limiter, so its RateLimit headers are those of any answer. The
// routes' own 404s for unknown ids are not reached while access control is on: the gate answers every id it
// cannot find itself, from the path alone.
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
import { pathTargets, requestTargets, type Named, type PathTargets, type Target } from './resources.js';
import type { AccessLevel } from '../config/schema.js';

/** What a request's valid credential allows. */
export interface Grant {
  principal: Principal;
  sources: Matcher;
  styles: Matcher;
}

export interface Refusal {
  ok: false;
  status: 401 | 403 | 404;
  title: string;
  detail: string;
  /** The WWW-Authenticate header of a 401 or 403. */
  challenge?: string;
  /** The 404 of an id the request may not see or that does not exist: answered after the rate limiter counted it. */
  unseen?: true;
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

const UNSEEN_TITLE: Record<Named['kind'], string> = { source: 'Source not found', collection: 'Collection not found', style: 'Style not found' };

/**
 * The one answer for an id that is closed or absent: made of the kind the path names only, so it cannot tell which.
 * It does not repeat the id either: then two refusals of one route are the same bytes whatever ids they name (a
 * client knows what it asked for), and a cache or a log keyed by the answer learns nothing from it.
 */
export function unseen(named: Named): Refusal {
  return { ok: false, status: 404, title: UNSEEN_TITLE[named.kind], detail: `no ${named.kind} with the id this request names`, unseen: true };
}

const grants = new WeakMap<IncomingMessage, Grant>();

/** What the credentials of `req` (checked by the gate) allow; undefined when it had none valid. */
export function grantOf(req: IncomingMessage | undefined): Grant | undefined {
  return req ? grants.get(req) : undefined;
}

/**
 * A target as the rules see it: a style path may lead to a source's generated style. `hidden`: what the path
 * names when the target is closed or not served; the target is then judged as it is spelt in the path, at the
 * level `default_access`.
 */
interface Judged {
  target: Target;
  level: AccessLevel;
  hidden?: Named;
}

/** Whether `id` is served now: a source (uploads included), a named composite, or a terrain product of a source. */
function served(state: AppState, id: string): boolean {
  if (state.sources.has(id) || state.composites.has(id)) return true;
  const product = terrainProductOf(id);
  return product !== undefined && state.sources.has(product.source);
}

function judge(state: AppState, policy: Policy, where: Pick<PathTargets, 'targets' | 'named'>): Judged[] {
  return where.targets.map((t, i) => {
    if (t.kind === 'shared') return { target: t, level: policy.defaultLevel };
    const spelt: Named = { kind: t.kind };
    const r = t.kind === 'source' ? { kind: t.kind, id: t.id, level: policy.sourceLevel(t.id) } : policy.style(t.id);
    const here = r.kind === 'style' ? state.styles.has(r.id) : served(state, r.id);
    if (here && r.level !== 'closed') return { target: { kind: r.kind, id: r.id }, level: r.level };
    // Closed or absent: an id nothing is configured for, so `default_access`, and the key's patterns of what the
    // path names (a style path is judged by `styles`, whether a closed style or a closed source's generated style
    // hides behind it, as an unknown style id would be).
    return { target: t, level: policy.defaultLevel, hidden: where.named[i] ?? spelt };
  });
}

function allows(grant: Grant, t: Target): boolean {
  if (t.kind === 'shared') return true;
  if (t.kind === 'style') return grant.styles(t.id);
  if (grant.sources(t.id)) return true;
  const product = terrainProductOf(t.id);
  return product !== undefined && grant.sources(product.source);
}

/**
 * The verdict on `judged` for a request with `grant` (or none): key without a grant -> `noGrant`, key the grant
 * does not cover -> 403; then a hidden target -> the unseen 404. (A hidden target at level closed, under
 * `default_access = "closed"`, asks for no credential: nothing could open it.)
 */
function verdictOn(judged: readonly Judged[], grant: Grant | undefined, noGrant: Refusal): Verdict {
  let guarded = false;
  let hidden: Named | undefined;
  for (const j of judged) {
    hidden ??= j.hidden;
    if (j.level !== 'key') continue;
    if (!grant) return noGrant;
    if (!allows(grant, j.target)) return FORBIDDEN;
    guarded = true;
  }
  if (hidden) return unseen(hidden);
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
  return { principal: { name: entry.name, via: 'key', rateClass: entry.rateClass }, sources: entry.sources, styles: entry.styles };
}

async function jwtGrant(policy: Policy, token: string): Promise<Checked> {
  if (!policy.jwt) return 'invalid';
  const v = await policy.jwt.verify(token, Date.now());
  if (!v.ok) return 'invalid';
  return { principal: { name: v.name, via: 'jwt', rateClass: v.rateClass }, sources: v.sources, styles: v.styles };
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
function publicTile(state: AppState, policy: Policy, url: string, req: IncomingMessage): boolean {
  if (!url.startsWith('/data/') || req.headers.authorization !== undefined) return false;
  const q = url.indexOf('?');
  const path = q < 0 ? url : url.slice(0, q);
  if (q >= 0 && (url.includes('key', q) || url.includes('%', q))) return false;
  if (path.includes('%') || path.includes('/.')) return false;
  const end = path.indexOf('/', 6);
  if (end <= 6) return false;
  const id = path.slice(6, end);
  // A public level is also what an unknown id has under the default `public`: only a source served is let by.
  return !isCompositeId(id) && policy.sourceLevel(id) === 'public' && (state.sources.has(id) || state.composites.has(id));
}

/**
 * The gate's verdict on `req` under `state`: synchronous unless the request carries a JWT not verified yet.
 * Records the principal and the grant of a request whose credentials are valid.
 */
export function checkRequest(state: AppState, req: IncomingMessage): Verdict | Promise<Verdict> {
  const policy = policyOf(state);
  if (policy.open || req.method === 'OPTIONS') return PASS;
  const url = req.url ?? '';
  if (publicTile(state, policy, url, req)) return PASS;
  const where = requestTargets(req);
  const judged = where.targets.length ? judge(state, policy, where) : [];
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
  return verdictOn(judge(state, policy, pathTargets(method, url)), grant, MISSING);
}

/** The verdict on sources a route learnt from a request body (`POST /api/spatial/query`). */
export function checkSources(state: AppState, ids: readonly string[], grant: Grant | undefined): Verdict {
  const policy = policyOf(state);
  if (policy.open) return PASS;
  const targets: Target[] = [];
  for (const id of ids) for (const m of compositeMembers(id)) targets.push({ kind: 'source', id: m });
  const named: Named[] = targets.map(() => ({ kind: 'source' }));
  return verdictOn(judge(state, policy, { targets, named }), grant, MISSING);
}

/** Whether a listing shown to a request with `grant` includes a source or style: public ones, and key ones the grant allows. */
export function visible(state: AppState, grant: Grant | undefined): (kind: 'source' | 'style', id: string) => boolean {
  const policy = policyOf(state);
  if (policy.open) return () => true;
  // What a listing offers is served by construction (a layer collection `{source}:{layer}` among them): only levels.
  return (kind, id) => {
    const j = kind === 'source' ? { kind, id, level: policy.sourceLevel(id) } : policy.style(id);
    if (j.level === 'public') return true;
    if (j.level === 'closed') return false;
    return grant !== undefined && allows(grant, { kind: j.kind, id: j.id });
  };
}
