// The files `[auth]` names, read when the configuration is: `keys_file` (more API keys, TOML or JSON) and
// `jwt.jwks_file` (a JSON Web Key Set). Reading them here, not when the first request needs them, means that a
// broken file fails start-up or the reload (the running keys stay), and that the configuration's hash covers
// them: a reload after only the keys file changed rebuilds the state, so a removed key is refused from the next
// request on. The JWT secret is read from the environment validation is given (its variable must be set) and
// carried in the configuration too, so that the verifier never looks at `process.env` on its own.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parse as parseToml } from 'smol-toml';
import * as v from 'valibot';
import { ConfigError } from './errors.js';
import { AuthKeySchema, type AuthConfig, type AuthJwtConfig, type AuthKeyConfig } from './schema.js';

/**
 * `[auth.jwt]` as validation leaves it: with `secret_env`, `secret` is the secret that variable held in the
 * environment validation was given (not a key of the file: the schema has none, and drops one written there).
 */
export type JwtSettings = AuthJwtConfig & { secret?: string };

const KeyListSchema = v.array(AuthKeySchema);

function issueWhere(issue: v.BaseIssue<unknown>): string {
  let out = '';
  for (const item of issue.path ?? []) {
    const key = (item as { key: unknown }).key;
    out += typeof key === 'number' ? `[${key}]` : out ? `.${String(key)}` : String(key);
  }
  return out || '(root)';
}

/** The keys of a keys file: TOML `[[keys]]`, or JSON `{"keys": [...]}` or `[...]`. Throws ConfigError naming the file. */
export function parseKeysFile(text: string, file: string): AuthKeyConfig[] {
  let doc: unknown;
  const json = file.toLowerCase().endsWith('.json') || /^\s*[[{]/.test(text) && !/^\s*\[\[/.test(text);
  try {
    doc = json ? JSON.parse(text) : parseToml(text);
  } catch (err) {
    throw new ConfigError(`${file}: not valid ${json ? 'JSON' : 'TOML'}: ${String((err as Error).message).split('\n')[0]}`);
  }
  const list = Array.isArray(doc) ? doc : (doc as { keys?: unknown } | null)?.keys;
  if (!Array.isArray(list)) throw new ConfigError(`${file}: expected a list of keys ([[keys]] in TOML, {"keys": [...]} or [...] in JSON)`);
  const parsed = v.safeParse(KeyListSchema, list);
  if (!parsed.success) throw new ConfigError(parsed.issues.map((i) => `${file}: keys${issueWhere(i)}: ${i.message}`).join('\n'));
  return parsed.output;
}

function read(file: string, what: string): Buffer {
  try {
    return readFileSync(file);
  } catch (err) {
    throw new ConfigError(`${what}: cannot read ${file}: ${(err as Error).message}`);
  }
}

/**
 * `[auth]` with its files read: keys of `keys_file` after those of the configuration, the JWKS of `jwks_file`
 * inline, paths absolute. `digest` is the SHA-256 of the files read (empty when none), for the configuration hash.
 */
export function resolveAuth(auth: AuthConfig, baseDir: string, label: string, env: NodeJS.ProcessEnv): { auth: AuthConfig; digest: string } {
  const hash = createHash('sha256');
  let readAny = false;
  const keys = [...auth.keys];
  let keysFile = auth.keys_file;
  if (keysFile !== undefined) {
    keysFile = path.resolve(baseDir, keysFile);
    const bytes = read(keysFile, `${label}: auth.keys_file`);
    hash.update(bytes);
    readAny = true;
    keys.push(...parseKeysFile(bytes.toString('utf8'), keysFile));
  }
  const names = new Set<string>();
  const hashes = new Set<string>();
  for (const k of keys) {
    if (names.has(k.name)) throw new ConfigError(`${label}: auth.keys: the name "${k.name}" is used by two keys`);
    // Two entries for one key would make what it may read depend on their order.
    if (hashes.has(k.hash)) throw new ConfigError(`${label}: auth.keys: "${k.name}" has the hash of another key`);
    names.add(k.name);
    hashes.add(k.hash);
  }
  let jwt: JwtSettings | undefined = auth.jwt;
  if (jwt) {
    const sources = [jwt.jwks_file, jwt.jwks, jwt.jwks_url, jwt.secret_env].filter((x) => x !== undefined).length;
    if (sources !== 1) throw new ConfigError(`${label}: auth.jwt: set exactly one of jwks_file, jwks, jwks_url and secret_env (where the keys that sign tokens come from)`);
    if (jwt.secret_env !== undefined) {
      const secret = env[jwt.secret_env];
      if (secret === undefined || secret === '') throw new ConfigError(`${label}: auth.jwt.secret_env: the environment variable ${jwt.secret_env} is not set`);
      if (Buffer.byteLength(secret) < 32) throw new ConfigError(`${label}: auth.jwt.secret_env: the secret in ${jwt.secret_env} is shorter than 32 bytes`);
      if (jwt.algorithms?.some((a) => !a.startsWith('HS'))) throw new ConfigError(`${label}: auth.jwt.algorithms: a shared secret signs with HS256, HS384 or HS512 only`);
      // Carried like the JWKS file below (workers get the configuration from the primary, not the environment).
      jwt = { ...jwt, secret };
    } else if (jwt.algorithms?.some((a) => a.startsWith('HS'))) {
      throw new ConfigError(`${label}: auth.jwt.algorithms: HS256/384/512 need a shared secret (secret_env), not a key set`);
    }
    if (jwt.jwks !== undefined) checkKeySet(jwt.jwks, `${label}: auth.jwt.jwks`);
    if (jwt.jwks_file !== undefined) {
      const file = path.resolve(baseDir, jwt.jwks_file);
      const bytes = read(file, `${label}: auth.jwt.jwks_file`);
      hash.update(bytes);
      readAny = true;
      let set: unknown;
      try {
        set = JSON.parse(bytes.toString('utf8'));
      } catch (err) {
        throw new ConfigError(`${label}: auth.jwt.jwks_file: ${file} is not JSON: ${(err as Error).message}`);
      }
      checkKeySet(set, `${label}: auth.jwt.jwks_file: ${file}`);
      // Carried in the configuration itself: cluster workers get their configuration as JSON from the primary.
      jwt = { ...jwt, jwks_file: file, jwks: set as { keys: Record<string, unknown>[] } };
    }
  }
  return { auth: { ...auth, keys, ...(keysFile === undefined ? {} : { keys_file: keysFile }), ...(jwt ? { jwt } : {}) }, digest: readAny ? hash.digest('hex') : '' };
}

/** Throws unless `set` is a JSON Web Key Set of public keys. */
function checkKeySet(set: unknown, where: string): void {
  const ks = (set as { keys?: unknown } | null)?.keys;
  if (!Array.isArray(ks) || ks.length === 0 || ks.some((k) => k === null || typeof k !== 'object' || typeof (k as { kty?: unknown }).kty !== 'string'))
    throw new ConfigError(`${where}: not a JSON Web Key Set ({"keys": [{"kty": ...}, ...]})`);
  if (ks.some((k) => 'd' in (k as object) || 'k' in (k as object))) throw new ConfigError(`${where}: holds private or symmetric key material; give the public keys only`);
}
