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

/**
 * valibot's message for a missing required key reads "Invalid key: Expected "path" but received undefined", and
 * a failed integer check does not say what it wanted: both are put in words a user editing the file understands.
 */
export function issueMessage(issue: v.BaseIssue<unknown>): string {
  // A source kind words its own missing keys (sources/index.ts); valibot's default starts "Invalid key".
  if (issue.kind === 'schema' && (issue.type === 'object' || issue.type === 'loose_object') && issue.input === undefined && issue.message.startsWith('Invalid key')) return 'required key is missing';
  if (issue.type === 'integer') return `expected an integer but received ${issue.received}`;
  return issue.message;
}
