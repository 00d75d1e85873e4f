// Glob patterns of ids and origins (`"osm-*"`, `"*"`, `"https://*.example.com"`): `*` stands for any run of
// characters (none included), every other character for itself. Compiled once per state into one predicate.

/** A predicate over ids: true when some pattern matches the whole id. */
export type Matcher = (id: string) => boolean;

const NONE: Matcher = () => false;
const ANY: Matcher = () => true;

/** Whether `pattern` matches all of `text` (`*` any run of characters). Linear-time-ish, no regular expression. */
export function globMatch(pattern: string, text: string): boolean {
  // The classic two-pointer wildcard match with backtracking to the last star: O(|p|·|t|) worst case, no recursion.
  let p = 0;
  let t = 0;
  let star = -1;
  let mark = 0;
  while (t < text.length) {
    if (p < pattern.length && pattern[p] !== '*' && pattern[p] === text[t]) {
      p++;
      t++;
    } else if (p < pattern.length && pattern[p] === '*') {
      star = p++;
      mark = t;
    } else if (star >= 0) {
      p = star + 1;
      t = ++mark;
    } else {
      return false;
    }
  }
  while (p < pattern.length && pattern[p] === '*') p++;
  return p === pattern.length;
}

/** One predicate for a list of patterns: exact ids by a Set lookup, `*` alone as "everything", the rest by globMatch. */
export function compileMatcher(patterns: readonly string[] | undefined): Matcher {
  if (!patterns || patterns.length === 0) return NONE;
  if (patterns.includes('*')) return ANY;
  const exact = new Set(patterns.filter((p) => !p.includes('*')));
  const globs = patterns.filter((p) => p.includes('*'));
  if (globs.length === 0) return (id) => exact.has(id);
  return (id) => exact.has(id) || globs.some((g) => globMatch(g, id));
}

/** Patterns given as a list or as one space-separated string (a JWT claim may hold either); anything else: none. */
export function patternList(value: unknown): string[] {
  if (typeof value === 'string') return value.split(/\s+/).filter((s) => s.length > 0);
  if (Array.isArray(value)) return value.filter((s): s is string => typeof s === 'string' && s.length > 0);
  return [];
}
