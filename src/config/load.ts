// Reads a TOML config file into a validated, typed Config with every relative path made absolute.
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { isRemotePath } from './object-location.js';
import { parse as parseToml } from 'smol-toml';
import * as v from 'valibot';
import { ConfigSchema, type Config } from './schema.js';
import { expandEnv } from './env.js';
import { ConfigError, issueMessage, issuePath } from './errors.js';
import { didYouMean } from './suggest.js';
import { unknownKeys, type UnknownKey } from './unknown-keys.js';
import { resolveAuth } from './auth-files.js';
import { configProblems } from './checks.js';

export { ConfigError, issuePath };
export { UPLOAD_ID_PREFIX } from './checks.js';

export interface LoadedConfig {
  config: Config;
  /** SHA-256 (hex) of the file's bytes: the identity of this configuration. */
  hash: string;
  /** Absolute path of the file, for reloads. */
  file: string | undefined;
  warnings: string[];
  /** Settings given on the command line over the file's (`--host`, `--port`, `--workers`); they hold across reloads. */
  overrides?: Partial<Pick<Config['server'], 'host' | 'port' | 'workers'>>;
}

/** An unknown top-level name: an error, since a typo there drops a whole section (`[[source]]` serves nothing). */
function unknownTopLevelLine(label: string, u: UnknownKey, value: unknown): string {
  const what = value !== null && typeof value === 'object' ? 'section' : 'key';
  const guess = didYouMean(u.key, u.known);
  const hint = guess ? `did you mean "${guess}"?` : `expected one of ${u.known.join(', ')}`;
  return `${label}: ${u.path}: unknown top-level ${what} (${hint})`;
}

/** An unknown key inside a known section: a warning, the rest of the file loads. */
function unknownKeyWarning(label: string, u: UnknownKey): string {
  const guess = didYouMean(u.key, u.known);
  const elsewhere = u.declaredFor ? `; it applies to type = ${u.declaredFor.map((t) => `"${t}"`).join(', ')}` : '';
  return `${label}: unknown key ${u.path} (ignored${guess ? `; did you mean "${guess}"?` : ''}${elsewhere})`;
}

/**
 * Validates an already-parsed TOML document. `label` names the file in messages. Every problem found is
 * reported in one ConfigError, a line each: the schema's, then (on a file the schema accepts) those of the
 * files [auth] names and of the checks across sections (checks.ts).
 */
export function validateConfig(raw: unknown, label: string, baseDir: string, env: NodeJS.ProcessEnv = process.env): { config: Config; warnings: string[]; authDigest: string } {
  const expanded = expandEnv(raw, env, label);
  const unknown = unknownKeys(ConfigSchema, expanded);
  const root = expanded as Record<string, unknown>;
  const lines = unknown.filter((u) => u.topLevel).map((u) => unknownTopLevelLine(label, u, root[u.key]));
  const result = v.safeParse(ConfigSchema, expanded);
  if (!result.success) lines.push(...result.issues.map((issue) => `${label}: ${issuePath(issue)}: ${issueMessage(issue)}`));
  if (lines.length || !result.success) throw new ConfigError(lines.join('\n'));
  let config = resolvePaths(result.output, baseDir);
  // The files [auth] names are read now: a broken one fails here, and their bytes count in the hash (auth-files.ts).
  let authDigest = '';
  if (config.auth) {
    const resolved = resolveAuth(config.auth, baseDir, label, env);
    config = { ...config, auth: resolved.auth };
    authDigest = resolved.digest;
    lines.push(...resolved.problems);
  }
  lines.push(...configProblems(config).map((p) => `${label}: ${p}`));
  if (lines.length) throw new ConfigError(lines.join('\n'));
  const warnings = unknown.filter((u) => !u.topLevel).map((u) => unknownKeyWarning(label, u));
  return { config, warnings, authDigest };
}

export function loadConfigFile(file: string, env: NodeJS.ProcessEnv = process.env): LoadedConfig {
  const abs = path.resolve(file);
  let bytes: Buffer;
  try {
    bytes = readFileSync(abs);
  } catch (err) {
    throw new ConfigError(`${file}: cannot read the config file: ${(err as Error).message}`);
  }
  let raw: unknown;
  try {
    raw = parseToml(bytes.toString('utf8'));
  } catch (err) {
    throw new ConfigError(tomlSyntaxLine(file, err));
  }
  const { config, warnings, authDigest } = validateConfig(raw, file, path.dirname(abs), env);
  // A keys file or JWKS file changed with the configuration file unchanged is a new configuration too.
  const hash = createHash('sha256').update(bytes);
  if (authDigest) hash.update(`\0auth:${authDigest}`);
  return { config, hash: hash.digest('hex'), file: abs, warnings };
}

/**
 * `FILE:LINE:COLUMN: invalid TOML: what`, the form editors and terminals turn into a jump to the place. smol-toml
 * puts the place in `line`/`column` and appends a code excerpt to its message, which is left out: one line.
 */
export function tomlSyntaxLine(file: string, err: unknown): string {
  const { line, column, message } = err as { line?: unknown; column?: unknown; message?: unknown };
  const what = String(message ?? err).split('\n')[0].replace(/^Invalid TOML document:\s*/, '');
  const place = typeof line === 'number' && typeof column === 'number' ? `:${line}:${column}` : '';
  return `${file}${place}: invalid TOML: ${what}`;
}

/** Relative file paths in the config are relative to the config file, as a user editing it expects. */
function resolvePaths(config: Config, baseDir: string): Config {
  const abs = (p: string | undefined) => (p === undefined ? undefined : path.resolve(baseDir, p));
  return {
    ...config,
    fonts: abs(config.fonts),
    files: abs(config.files),
    server: { ...config.server, upload_dir: abs(config.server.upload_dir) },
    sources: config.sources.map((s) => ({ ...s, path: isRemotePath(s.path) ? s.path : path.resolve(baseDir, s.path) })),
    styles: config.styles.map((s) => ({ ...s, path: path.resolve(baseDir, s.path), ...(s.sprite_dir === undefined ? {} : { sprite_dir: abs(s.sprite_dir) }) })),
    cache: { ...config.cache, dir: abs(config.cache.dir) },
    mcp: { ...config.mcp, oauth: { ...config.mcp.oauth, store_path: abs(config.mcp.oauth.store_path) } },
    ...(config.postgres ? { postgres: { ...config.postgres, ssl_root_cert: abs(config.postgres.ssl_root_cert) } } : {}),
  };
}
