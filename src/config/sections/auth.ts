// `[auth]`: API keys and JWTs, and who may read what (docs/access.md).
import * as v from 'valibot';
import { access, envName, keyPath, nonEmpty } from './common.js';
import { section } from './section.js';

/** Glob patterns of ids (`*` any run of characters): `"osm-*"`, `"*"`. */
const patterns = v.array(v.pipe(v.string(), v.minLength(1), v.maxLength(256)));

/** One API key of `[[auth.keys]]` or of `auth.keys_file`: its SHA-256 and what it may read (docs/access.md). */
export const AuthKeySchema = v.object({
  /** Safe to log and to label metrics with: never the key. */
  name: v.pipe(v.string(), v.regex(/^[A-Za-z0-9_.:@-]{1,64}$/, 'a name of 1 to 64 letters, digits, "_", ".", ":", "@" or "-"')),
  /** SHA-256 of the key, hex (`tileserver-ts key new` makes both). */
  hash: v.pipe(v.string(), v.regex(/^[0-9a-fA-F]{64}$/, 'the SHA-256 of the key as 64 hex digits'), v.toLowerCase()),
  /** Sources (and composites) it may read; default every one. */
  sources: v.optional(patterns, ['*']),
  /** Styles it may read (their style.json, sprites, renderings); default every one. */
  styles: v.optional(patterns, ['*']),
  /** Collections whose features it may create, change and delete (OGC API - Features Part 4, docs/editing.md); default none. */
  write: v.optional(patterns),
  /** Origins (`https://app.example.com`, `https://*.example.com`) a browser may use it from; absent: any. */
  origins: v.optional(patterns),
  /** Rate class of the requests it makes (`[rate_limits.classes]`); absent: the default class. */
  rate_class: v.optional(v.pipe(v.string(), v.minLength(1), v.maxLength(64))),
  /** RFC 3339 time from which it is refused. */
  expires: v.optional(
    v.pipe(
      v.string(),
      v.regex(/^\d{4}-\d{2}-\d{2}[Tt ]\d{2}:\d{2}:\d{2}(\.\d+)?([Zz]|[+-]\d{2}:\d{2})$/, 'an RFC 3339 time such as 2027-01-31T00:00:00Z'),
      v.check((s) => !Number.isNaN(Date.parse(s)), 'an RFC 3339 time such as 2027-01-31T00:00:00Z'),
    ),
  ),
});

/** JWS algorithms a token may be signed with; `none` is not among them. */
export const JWT_ALGORITHMS = ['RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA', 'HS256', 'HS384', 'HS512'] as const;

/** `[auth.jwt]`: bearer tokens signed by an identity provider (a JWKS) or with a shared secret (docs/access.md). */
export const AuthJwtSchema = v.pipe(
  v.object({
    /** A JSON Web Key Set file (read at start and on every reload). */
    jwks_file: v.optional(nonEmpty),
    /** A JSON Web Key Set written inline (`[[auth.jwt.jwks.keys]]`); `jwks_file` is read into it. Public keys only. */
    jwks: v.optional(v.object({ keys: v.pipe(v.array(v.record(v.string(), v.unknown())), v.minLength(1, 'a key set needs at least one key')) })),
    /** A JSON Web Key Set URL, fetched when a token names a key not yet known, cached and refreshed. */
    jwks_url: v.optional(v.pipe(v.string(), v.url('an absolute http(s) URL'), v.regex(/^https?:\/\//, 'an http(s) URL'))),
    /** The name of the environment variable holding an HMAC secret (HS256/384/512); never the secret itself. */
    secret_env: v.optional(envName),
    /** The `iss` every token must carry. */
    issuer: v.optional(nonEmpty),
    /** The `aud` every token must carry (one of them, when several are given). */
    audience: v.optional(v.union([nonEmpty, v.pipe(v.array(nonEmpty), v.minLength(1))])),
    /** Algorithms accepted; default the asymmetric ones with a JWKS, HS256 with a secret. */
    algorithms: v.optional(v.pipe(v.array(v.picklist(JWT_ALGORITHMS, `one of ${JWT_ALGORITHMS.join(', ')} ("none" is never accepted)`)), v.minLength(1))),
    /** Leeway for `exp` and `nbf`, in seconds. */
    clock_skew_s: v.optional(v.pipe(v.number(), v.integer(), v.minValue(0), v.maxValue(3600)), 30),
    /** The claim holding what the token may read: `{sources: [...], styles: [...]}` (arrays or space-separated patterns), and may edit (`write`). */
    scope_claim: v.optional(nonEmpty, 'tiles'),
    /** The claim holding the token's rate class. */
    rate_class_claim: v.optional(nonEmpty, 'rate_class'),
  }),
  v.rawCheck(({ dataset, addIssue }) => {
    if (!dataset.typed) return;
    const jwt = dataset.value;
    const given = [jwt.jwks_file, jwt.jwks, jwt.jwks_url, jwt.secret_env].filter((x) => x !== undefined).length;
    if (given !== 1) addIssue({ message: 'set exactly one of jwks_file, jwks, jwks_url and secret_env (where the keys that sign tokens come from)' });
    else if (jwt.secret_env !== undefined && jwt.algorithms?.some((a) => !a.startsWith('HS'))) {
      addIssue({ message: 'a shared secret signs with HS256, HS384 or HS512 only', path: keyPath(jwt, 'algorithms') });
    } else if (jwt.secret_env === undefined && jwt.algorithms?.some((a) => a.startsWith('HS'))) {
      addIssue({ message: 'HS256/384/512 need a shared secret (secret_env), not a key set', path: keyPath(jwt, 'algorithms') });
    }
  }),
);

/** `[auth]`: who may read what is served (docs/access.md). Absent: everything is public, as before. */
export const AuthSchema = v.object({
  /** Access of every source and style that does not set its own. */
  default_access: v.optional(access, 'public'),
  keys: v.optional(v.array(AuthKeySchema), []),
  /** More keys: a TOML file of `[[keys]]` or a JSON file `{"keys": [...]}` (or a bare array), re-read on every reload. */
  keys_file: v.optional(nonEmpty),
  jwt: v.optional(AuthJwtSchema),
});

export const auth = section(v.optional(AuthSchema));
