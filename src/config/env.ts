// `${VAR}` expansion in string values. An unset variable is an error naming it and the key that used it:
// silently serving a literal "${DATA_DIR}/x.pmtiles" path would only fail later and less clearly.
import { ConfigError } from './errors.js';

const PATTERN = /\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g;

export function expandString(value: string, env: NodeJS.ProcessEnv, where: string): string {
  return value.replace(PATTERN, (_, name: string) => {
    const found = env[name];
    if (found === undefined) throw new ConfigError(`${where}: environment variable ${name} is not set`);
    return found;
  });
}

/** Returns a copy of `value` with every string expanded; `label` prefixes error messages. */
export function expandEnv(value: unknown, env: NodeJS.ProcessEnv, label: string, keyPath = ''): unknown {
  if (typeof value === 'string') return expandString(value, env, `${label}: ${keyPath || '(root)'}`);
  if (Array.isArray(value)) return value.map((item, i) => expandEnv(item, env, label, `${keyPath}[${i}]`));
  if (value !== null && typeof value === 'object' && !(value instanceof Date)) {
    const out: Record<string, unknown> = {};
    for (const [k, item] of Object.entries(value)) out[k] = expandEnv(item, env, label, keyPath ? `${keyPath}.${k}` : k);
    return out;
  }
  return value;
}
