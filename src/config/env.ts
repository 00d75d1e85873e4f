// `${VAR}` expansion in string values. An unset variable is an error naming it and the key that used it:
// silently serving a literal "${DATA_DIR}/x.pmtiles" path would only fail later and less clearly.
import { ConfigError } from './errors.js';

const PATTERN = /\$\{([A-Za-z_][A-Za-z0-9_]*)\}/g;

export function expandString(value: string, env: NodeJS.ProcessEnv, where: string): string {
  return value.replace(PATTERN, (_, name: string) => {
    // Own variables only: `${constructor}` names no variable, whatever process.env inherits.
    const found = Object.hasOwn(env, name) ? env[name] : undefined;
    if (found === undefined) throw new ConfigError(`${where}: environment variable ${name} is not set`);
    return found;
  });
}

/** Returns a copy of `value` with every string expanded; `label` prefixes error messages. */
export function expandEnv(value: unknown, env: NodeJS.ProcessEnv, label: string, keyPath = ''): unknown {
  if (typeof value === 'string') return expandString(value, env, `${label}: ${keyPath || '(root)'}`);
  if (Array.isArray(value)) return value.map((item, i) => expandEnv(item, env, label, `${keyPath}[${i}]`));
  if (value !== null && typeof value === 'object' && !(value instanceof Date)) {
    // fromEntries defines every key as an own property: a key `__proto__` stays a key (reported as unknown) instead of
    // replacing the copy's prototype.
    return Object.fromEntries(Object.entries(value).map(([k, item]) => [k, expandEnv(item, env, label, keyPath ? `${keyPath}.${k}` : k)]));
  }
  return value;
}
