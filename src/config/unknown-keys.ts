// Lists the keys of a parsed document that a valibot schema does not declare, by key path, with the names the
// schema knows there. valibot's `object` drops unknown keys silently; a user who typos `max_zoom` deserves to
// hear about it, and one who typos a whole section (`[[source]]`) must not get a server without it.
import type * as v from 'valibot';

type AnySchema = v.GenericSchema & { type: string; entries?: Record<string, AnySchema>; item?: AnySchema; wrapped?: AnySchema; options?: AnySchema[]; value?: AnySchema };

export interface UnknownKey {
  /** Where it is: `sources[0].max_zoom`. */
  path: string;
  /** The key as written. */
  key: string;
  /** The keys the schema declares at that place. */
  known: string[];
  /** At the root of the document: a top-level section or key. */
  topLevel: boolean;
}

function unwrap(schema: AnySchema): AnySchema {
  let s = schema;
  while (s.wrapped) s = s.wrapped;
  if (s.type === 'pipe' || (s as { pipe?: AnySchema[] }).pipe) {
    const first = (s as { pipe?: AnySchema[] }).pipe?.[0];
    if (first && first !== s) return unwrap(first);
  }
  return s;
}

/** The keys an object schema declares; empty for any other schema. New sections added to the schema are known here at once. */
export function declaredKeys(schema: v.GenericSchema): string[] {
  return Object.keys(unwrap(schema as AnySchema).entries ?? {});
}

export function unknownKeys(schema: v.GenericSchema, value: unknown, keyPath = ''): UnknownKey[] {
  const s = unwrap(schema as AnySchema);
  const out: UnknownKey[] = [];
  if (s.entries && value !== null && typeof value === 'object' && !Array.isArray(value)) {
    const known = Object.keys(s.entries);
    for (const [k, item] of Object.entries(value)) {
      const child = keyPath ? `${keyPath}.${k}` : k;
      const sub = Object.hasOwn(s.entries, k) ? s.entries[k] : undefined;
      if (!sub) out.push({ path: child, key: k, known, topLevel: keyPath === '' });
      else out.push(...unknownKeys(sub, item, child));
    }
  } else if (s.item && Array.isArray(value)) {
    value.forEach((item, i) => out.push(...unknownKeys(s.item!, item, `${keyPath}[${i}]`)));
  } else if (s.type === 'record' && s.value && value !== null && typeof value === 'object' && !Array.isArray(value)) {
    // A table of named entries (`[rate_limits.classes.NAME]`): every entry is checked against the entry schema.
    for (const [k, item] of Object.entries(value)) out.push(...unknownKeys(s.value, item, keyPath ? `${keyPath}.${k}` : k));
  }
  return out;
}
