// The JSON Web Key Set of `[auth.jwt] jwks_url`: jose's remote set (fetched with the first token, kept 10 minutes,
// fetched again at most every 30 s when a token names a key it lacks), owned by the verifier of the configuration
// that names the URL. A reload that keeps the URL hands the set on to the next verifier, its fetched keys with
// it; one that changes or removes the URL lets the set go with the old policy, so nothing outlives the
// configuration that asked for it.
//
// jose turns a set it cannot fetch (the provider down, slow, answering garbage) into the error of the token being
// checked, and every such token is answered 401 like a badly signed one: without a line here an operator would see
// only refusals. So the failures are said here, once when they start (with the URL and the reason) and once when
// the set can be had again; the tokens in between are refused without a line each, and a token naming a key the
// set lacks is the token's fault, not the provider's.
import type { Logger } from '../log.js';

type Jose = typeof import('jose');
type RemoteSet = ReturnType<Jose['createRemoteJWKSet']>;

/** How jose's `jwtVerify` asks for the key of a token: its protected header (and the token) in, a key out. */
export type KeyLookup = (...args: Parameters<RemoteSet>) => ReturnType<RemoteSet>;

/** Why a fetch failed, in one line: Node's fetch hides the socket's error (ECONNREFUSED…) in `cause`. */
export function failureReason(err: unknown): string {
  if (!(err instanceof Error)) return String(err);
  const cause = err.cause instanceof Error ? err.cause.message : undefined;
  return cause && !err.message.includes(cause) ? `${err.message}: ${cause}` : err.message;
}

export class RemoteKeySet {
  private remote: RemoteSet | undefined;
  /** Fetching (or using) the set failed and has not worked since: the failure has been logged. */
  private failing = false;

  constructor(
    readonly url: string,
    private readonly log: Logger | undefined,
  ) {}

  /** The key lookup for `jwtVerify`; the remote set is made on first use (jose is loaded with the first token). */
  lookup(jose: Jose): KeyLookup {
    const remote = (this.remote ??= jose.createRemoteJWKSet(new URL(this.url), { timeoutDuration: 5_000, cooldownDuration: 30_000, cacheMaxAge: 600_000 }));
    return async (header, token) => {
      try {
        const key = await remote(header, token);
        this.answers();
        return key;
      } catch (err) {
        if (err instanceof jose.errors.JWKSNoMatchingKey || err instanceof jose.errors.JWKSMultipleMatchingKeys) {
          // The set was had (a fetch within the cool-down means one just worked): the token names a key it lacks.
          if (remote.coolingDown) this.answers();
        } else this.fails(err);
        throw err;
      }
    };
  }

  private fails(err: unknown): void {
    if (this.failing) return;
    this.failing = true;
    this.log?.warn({ url: this.url, reason: failureReason(err) }, 'auth: cannot get the JSON Web Key Set of auth.jwt.jwks_url; its tokens are refused (401) until it answers');
  }

  private answers(): void {
    if (!this.failing) return;
    this.failing = false;
    this.log?.info({ url: this.url }, 'auth: the JSON Web Key Set of auth.jwt.jwks_url answers again');
  }
}
