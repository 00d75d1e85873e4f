// JWT bearer tokens, verified with jose against a JSON Web Key Set (a file read with the configuration, or a URL
// jose fetches, caches and refetches when a token names a key it does not know: remote-jwks.ts) or an HMAC secret
// (read from the environment by the configuration's validation, config/auth-files.ts). A token must name its
// algorithm among those allowed (jose never accepts `alg: none`), carry `sub` (the principal) and `exp` (a bounded
// lifetime), and match `issuer`/`audience` when configured, within `clock_skew_s`.
// Verified tokens are remembered by their string until they expire (a bounded LRU), so a map's hundreds of tile
// requests with one token cost one signature check; refused ones for a few seconds, so a flood of one bad token
// costs no more. One verifier per configuration state (auth/policy.ts): a reload starts a new cache.
import { LRUCache } from 'lru-cache';
import type { JWT_ALGORITHMS } from '../config/schema.js';
import type { JwtSettings } from '../config/auth-files.js';
import type { Logger } from '../log.js';
import { compileMatcher, patternList, type Matcher } from './patterns.js';
import { RemoteKeySet } from './remote-jwks.js';

type Jose = typeof import('jose');
type Algorithm = (typeof JWT_ALGORITHMS)[number];

export interface VerifiedToken {
  ok: true;
  /** The token's `sub`. */
  name: string;
  rateClass: string | undefined;
  sources: Matcher;
  styles: Matcher;
  /** Collections whose features it may write. */
  write: Matcher;
  /** Unix milliseconds of `exp` (plus the skew): past it the token is refused. */
  expiresMs: number;
}

export type TokenCheck = VerifiedToken | { ok: false };

const ASYMMETRIC: Algorithm[] = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA'];
const REFUSED: TokenCheck = { ok: false };
const REFUSED_TTL_MS = 5_000;
const CACHE_MAX = 10_000;

let josePromise: Promise<Jose> | undefined;
/** jose is loaded on the first token, not at every start (most configurations verify none). */
const loadJose = () => (josePromise ??= import('jose'));

type KeyInput = Parameters<Jose['jwtVerify']>[1];

export interface VerifierOptions {
  /** The verifier of the configuration before a reload: its remote key set is kept when the URL is the same. */
  previous?: JwtVerifier;
  /** Where a key set that cannot be fetched is reported. */
  log?: Logger;
}

/**
 * What a token allows: its scope claim's `{sources, styles, write}`, each a list or a space-separated string of
 * patterns, and the collections an OAuth `scope` string grants as `write:{pattern}` (the form identity providers
 * issue scopes in; docs/editing.md).
 */
export function scopeOf(claim: unknown, oauthScope?: unknown): { sources: Matcher; styles: Matcher; write: Matcher } {
  const o = claim !== null && typeof claim === 'object' && !Array.isArray(claim) ? (claim as Record<string, unknown>) : {};
  const scoped = patternList(oauthScope)
    .filter((s) => s.startsWith('write:') && s.length > 6)
    .map((s) => s.slice(6));
  return { sources: compileMatcher(patternList(o.sources)), styles: compileMatcher(patternList(o.styles)), write: compileMatcher([...patternList(o.write), ...scoped]) };
}

export class JwtVerifier {
  private readonly verified = new LRUCache<string, TokenCheck>({ max: CACHE_MAX, ttlAutopurge: false });
  private key: Promise<KeyInput> | undefined;
  private readonly algorithms: Algorithm[];
  /** The key set of `jwks_url`, this configuration's (or handed on from the previous one, same URL). */
  readonly remote: RemoteKeySet | undefined;

  constructor(
    private readonly cfg: JwtSettings,
    options: VerifierOptions = {},
  ) {
    this.algorithms = cfg.algorithms ?? (cfg.secret_env !== undefined ? ['HS256'] : ASYMMETRIC);
    // Validation reads the secret from the environment it is given; a configuration that skipped it is a bug here.
    if (cfg.secret_env !== undefined && cfg.secret === undefined) throw new Error(`auth.jwt.secret_env: the secret of ${cfg.secret_env} was not read by the configuration's validation`);
    if (cfg.jwks_url !== undefined) {
      const carried = options.previous?.remote;
      this.remote = carried?.url === cfg.jwks_url ? carried : new RemoteKeySet(cfg.jwks_url, options.log);
    }
  }

  private keyInput(jose: Jose): KeyInput {
    const { cfg } = this;
    if (cfg.secret !== undefined) return new TextEncoder().encode(cfg.secret);
    if (this.remote) return this.remote.lookup(jose) as KeyInput;
    return jose.createLocalJWKSet((cfg.jwks ?? { keys: [] }) as Parameters<Jose['createLocalJWKSet']>[0]) as KeyInput;
  }

  /** The token's subject and scope, or a refusal. Never throws. */
  async verify(token: string, nowMs: number): Promise<TokenCheck> {
    const known = this.verified.get(token);
    if (known) {
      if (!known.ok || nowMs < known.expiresMs) return known;
      this.verified.delete(token);
      return REFUSED;
    }
    let result: TokenCheck;
    try {
      const jose = await loadJose();
      const key = await (this.key ??= Promise.resolve(this.keyInput(jose)));
      const { cfg } = this;
      const { payload } = await jose.jwtVerify(token, key as Parameters<Jose['jwtVerify']>[1] & Uint8Array, {
        algorithms: this.algorithms,
        clockTolerance: cfg.clock_skew_s,
        currentDate: new Date(nowMs),
        requiredClaims: ['exp', 'sub'],
        ...(cfg.issuer !== undefined ? { issuer: cfg.issuer } : {}),
        ...(cfg.audience !== undefined ? { audience: cfg.audience } : {}),
      });
      const scope = scopeOf(payload[cfg.scope_claim], payload.scope);
      const rate = payload[cfg.rate_class_claim];
      result = {
        ok: true,
        name: String(payload.sub).slice(0, 128),
        rateClass: typeof rate === 'string' && rate.length > 0 ? rate : undefined,
        ...scope,
        expiresMs: (payload.exp as number) * 1000 + cfg.clock_skew_s * 1000,
      };
      this.verified.set(token, result, { ttl: Math.max(1, result.expiresMs - nowMs) });
    } catch {
      // Expired, not yet valid, wrongly signed, an algorithm not allowed (`none` included), a claim missing or
      // wrong, the key set unreachable (logged by remote-jwks.ts): all the same refusal to the client (401
      // invalid_token).
      result = REFUSED;
      this.verified.set(token, result, { ttl: REFUSED_TTL_MS });
    }
    return result;
  }
}
