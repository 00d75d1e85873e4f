// Lists the keys of a parsed document that a valibot schema does not declare, by key path.
// valibot's `object` drops unknown keys silently; a user who typos `max_zoom` deserves to hear about it.
import type * as v from 'valibot';

type AnySchema = v.GenericSchema & { type: string; entries?: Record<string, AnySchema>; item?: AnySchema; wrapped?: AnySchema; options?: AnySchema[] };

function unwrap(schema: AnySchema): AnySchema {
  let s = schema;
  while (s.wrapped) s = s.wrapped;
  if (s.type === 'pipe' || (s as { pipe?: AnySchema[] }).pipe) {
    const first = (s as { pipe?: AnySchema[] }).pipe?.[0];
    if (first && first !== s) return unwrap(first);
  }
  return s;
}

export function unknownKeys(schema: v.GenericSchema, value: unknown, keyPath = ''): string[] {
  const s = unwrap(schema as AnySchema);
  const out: string[] = [];
  if (s.entries && value !== null && typeof value === 'object' && !Array.isArray(value)) {
    for (const [k, item] of Object.entries(value)) {
      const child = keyPath ? `${keyPath}.${k}` : k;
      const sub = s.entries[k];
      if (!sub) out.push(child);
      else out.push(...unknownKeys(sub, item, child));
    }
  } else if (s.item && Array.isArray(value)) {
    value.forEach((item, i) => out.push(...unknownKeys(s.item!, item, `${keyPath}[${i}]`)));
  }
  return out;
}
