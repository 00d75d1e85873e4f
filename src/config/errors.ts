import type * as v from 'valibot';

/** A configuration problem; its message names the file, the key path and what was expected. */
export class ConfigError extends Error {
  override name = 'ConfigError';
}

/** Formats a valibot issue path as `sources[2].path`. */
export function issuePath(issue: v.BaseIssue<unknown>): string {
  let out = '';
  for (const item of issue.path ?? []) {
    const key = (item as { key: unknown }).key;
    out += typeof key === 'number' ? `[${key}]` : out ? `.${String(key)}` : String(key);
  }
  return out || '(root)';
}
