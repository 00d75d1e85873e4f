// "Did you mean": the known name one edit away from what was typed. One edit is one character inserted,
// deleted or replaced, or two neighbouring characters swapped (Damerau), the usual shapes of a typo:
// `source` for `sources`, `max_zoom` for `maxzoom`, `sevrer` for `server`.

/** Whether `a` becomes `b` with at most one edit. Linear: walks both strings once. */
export function withinOneEdit(a: string, b: string): boolean {
  if (a === b) return true;
  const la = a.length;
  const lb = b.length;
  if (Math.abs(la - lb) > 1) return false;
  let i = 0;
  while (i < la && i < lb && a[i] === b[i]) i++;
  if (la === lb) {
    // One replacement, or a swap of positions i and i+1.
    if (a.slice(i + 1) === b.slice(i + 1)) return true;
    return i + 1 < la && a[i] === b[i + 1] && a[i + 1] === b[i] && a.slice(i + 2) === b.slice(i + 2);
  }
  // One insertion or deletion at i.
  return la > lb ? a.slice(i + 1) === b.slice(i) : a.slice(i) === b.slice(i + 1);
}

/**
 * The known name one edit away from `typed`, compared without case; undefined when there is none or more than
 * one (a guess between two would mislead).
 */
export function didYouMean(typed: string, known: readonly string[]): string | undefined {
  const lower = typed.toLowerCase();
  const close = known.filter((k) => k !== typed && withinOneEdit(lower, k.toLowerCase()));
  return close.length === 1 ? close[0] : undefined;
}
