// JSON Merge Patch (RFC 7396), the body of a PATCH of one feature (docs/editing.md): a member set to null is
// removed, an object is merged member by member, anything else replaces what was there. Pure and total over JSON
// values; objects are built with a null prototype and copied member by member, so a member named `__proto__` is a
// member like any other and cannot reach Object.prototype.

export type Json = null | boolean | number | string | Json[] | { [k: string]: Json };

const isObject = (v: unknown): v is Record<string, Json> => v !== null && typeof v === 'object' && !Array.isArray(v);

/** `target` with `patch` applied; neither argument is changed. */
export function applyMergePatch(target: Json | undefined, patch: Json): Json {
  if (!isObject(patch)) return patch;
  const out: Record<string, Json> = Object.create(null);
  if (isObject(target)) for (const k of Object.keys(target)) out[k] = target[k];
  for (const k of Object.keys(patch)) {
    const v = patch[k];
    if (v === null) delete out[k];
    else out[k] = applyMergePatch(out[k], v);
  }
  return out;
}
