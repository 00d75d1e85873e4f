// The files `[auth]` names, read when the configuration is: `keys_file` (more API keys, TOML or JSON) and
// `jwt.jwks_file` (a JSON Web Key Set). Reading them here, not when the first request needs them, means that a
// broken file fails start-up or the reload (the running keys stay), and that the configuration's hash covers
// them: a reload after only the keys file changed rebuilds the state, so a removed key is refused from the next
// request on. The JWT secret is read from the environment validation is given (its variable must be set) and
// carried in the configuration too, so that the verifier never looks at `process.env` on its own. Every problem
// is collected, not only the first (load.ts reports them with the rest of the file's).
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { parse as parseToml } from 'smol-toml';
import * as v from 'valibot';
import { ConfigError, issuePath } from './errors.js';
import { AuthKeySchema } from './sections/auth.js';
import type { AuthConfig, AuthJwtConfig, AuthKeyConfig } from './schema.js';

/**
 * `[auth.jwt]` as validation leaves it: with `secret_env`, `secret` is the secret that variable held in the
 * environment validation was given (not a key of the file: the schema has none, and drops one written there).
 */
export type JwtSettings = AuthJwtConfig & { secret?: string };

const KeyListSchema = v.array(AuthKeySchema);

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
  if (!parsed.success) throw new ConfigError(parsed.issues.map((i) => `${file}: keys${issuePath(i)}: ${i.message}`).join('\n'));
  return parsed.output;
}

function read(file: string, what: string, problems: string[]): Buffer | undefined {
  try {
    return readFileSync(file);
  } catch (err) {
    problems.push(`${what}: cannot read ${file}: ${(err as Error).message}`);
    return undefined;
  }
}

/**
 * `[auth]` with its files read: keys of `keys_file` after those of the configuration, the JWKS of `jwks_file`
 * inline, paths absolute. `digest` is the SHA-256 of the files read (empty when none), for the configuration hash.
 * `problems` lists every problem found (each line naming the file or key), none when `auth` is usable.
 */
export function resolveAuth(auth: AuthConfig, baseDir: string, label: string, env: NodeJS.ProcessEnv): { auth: AuthConfig; digest: string; problems: string[] } {
  const problems: string[] = [];
  const hash = createHash('sha256');
  let readAny = false;
  const keys = [...auth.keys];
  let keysFile = auth.keys_file;
  if (keysFile !== undefined) {
    keysFile = path.resolve(baseDir, keysFile);
    const bytes = read(keysFile, `${label}: auth.keys_file`, problems);
    if (bytes) {
      hash.update(bytes);
      readAny = true;
      try {
        keys.push(...parseKeysFile(bytes.toString('utf8'), keysFile));
      } catch (err) {
        problems.push((err as Error).message);
      }
    }
  }
  const names = new Set<string>();
  const hashes = new Set<string>();
  for (const k of keys) {
    if (names.has(k.name)) problems.push(`${label}: auth.keys: the name "${k.name}" is used by two keys`);
    // Two entries for one key would make what it may read depend on their order.
    else if (hashes.has(k.hash)) problems.push(`${label}: auth.keys: "${k.name}" has the hash of another key`);
    names.add(k.name);
    hashes.add(k.hash);
  }
  let jwt: JwtSettings | undefined = auth.jwt;
  // Which one of jwks_file, jwks, jwks_url and secret_env is set, and which algorithms go with it, the schema checks.
  if (jwt?.secret_env !== undefined) {
    const secret = env[jwt.secret_env];
    if (secret === undefined || secret === '') problems.push(`${label}: auth.jwt.secret_env: the environment variable ${jwt.secret_env} is not set`);
    else if (Buffer.byteLength(secret) < 32) problems.push(`${label}: auth.jwt.secret_env: the secret in ${jwt.secret_env} is shorter than 32 bytes`);
    // Carried like the JWKS file below (workers get the configuration from the primary, not the environment).
    else jwt = { ...jwt, secret };
  }
  if (jwt?.jwks !== undefined) checkKeySet(jwt.jwks, `${label}: auth.jwt.jwks`, problems);
  if (jwt?.jwks_file !== undefined) {
    const file = path.resolve(baseDir, jwt.jwks_file);
    const bytes = read(file, `${label}: auth.jwt.jwks_file`, problems);
    if (bytes) {
      hash.update(bytes);
      readAny = true;
      let set: unknown;
      try {
        set = JSON.parse(bytes.toString('utf8'));
      } catch (err) {
        problems.push(`${label}: auth.jwt.jwks_file: ${file} is not JSON: ${(err as Error).message}`);
      }
      if (set !== undefined && checkKeySet(set, `${label}: auth.jwt.jwks_file: ${file}`, problems)) {
        // Carried in the configuration itself: cluster workers get their configuration as JSON from the primary.
        jwt = { ...jwt, jwks_file: file, jwks: set as { keys: Record<string, unknown>[] } };
      }
    }
  }
  return { auth: { ...auth, keys, ...(keysFile === undefined ? {} : { keys_file: keysFile }), ...(jwt ? { jwt } : {}) }, digest: readAny ? hash.digest('hex') : '', problems };
}

/** Whether `set` is a JSON Web Key Set of public keys; adds what is wrong with it to `problems` when not. */
function checkKeySet(set: unknown, where: string, problems: string[]): boolean {
  const ks = (set as { keys?: unknown } | null)?.keys;
  if (!Array.isArray(ks) || ks.length === 0 || ks.some((k) => k === null || typeof k !== 'object' || typeof (k as { kty?: unknown }).kty !== 'string')) {
    problems.push(`${where}: not a JSON Web Key Set ({"keys": [{"kty": ...}, ...]})`);
    return false;
  }
  if (ks.some((k) => 'd' in (k as object) || 'k' in (k as object))) {
    problems.push(`${where}: holds private or symmetric key material; give the public keys only`);
    return false;
  }
  return true;
}
