// Lists the keys of a parsed document that a valibot schema does not declare, by key path, with the names the
// schema knows there. valibot's `object` drops unknown keys silently; a user who typos `max_zoom` deserves to
// hear about it, and one who typos a whole section (`[[source]]`) must not get a server without it. Under a
// variant (`[[sources]]` on `type`) the keys known are those of the option the value's discriminator picks: a
// key another option declares is unknown here, and says which of them take it.
import * as v from 'valibot';

type AnySchema = v.GenericSchema & {
  type: string;
  entries?: Record<string, AnySchema>;
  item?: AnySchema;
  wrapped?: AnySchema;
  options?: AnySchema[];
  value?: AnySchema;
  key?: string;
};

export interface UnknownKey {
  /** Where it is: `sources[0].max_zoom`. */
  path: string;
  /** The key as written. */
  key: string;
  /** The keys the schema declares at that place. */
  known: string[];
  /** At the root of the document: a top-level section or key. */
  topLevel: boolean;
  /** Under a variant: the discriminator values (`type = ...`) whose options declare the key. */
  declaredFor?: string[];
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

/** The discriminator values an option of a variant accepts (a literal's value, a picklist's options). */
function discriminatorValues(schema: AnySchema): string[] {
  const s = unwrap(schema) as AnySchema & { literal?: unknown; options?: unknown[] };
  if (s.type === 'literal') return [String(s.literal)];
  if (s.type === 'picklist') return (s.options ?? []).map(String);
  return [];
}

export function unknownKeys(schema: v.GenericSchema, value: unknown, keyPath = ''): UnknownKey[] {
  const s = unwrap(schema as AnySchema);
  const out: UnknownKey[] = [];
  const isTable = value !== null && typeof value === 'object' && !Array.isArray(value);
  if (s.type === 'variant' && s.key && s.options && isTable) {
    const discriminator = s.key;
    const options = s.options.map(unwrap);
    const chosen = options.find((o) => o.entries?.[discriminator] && v.is(o.entries[discriminator], (value as Record<string, unknown>)[discriminator]));
    // No option takes the discriminator: the schema reports that; which keys are unknown is moot until it is fixed.
    if (!chosen) return out;
    for (const u of unknownKeys(chosen, value, keyPath)) {
      const elsewhere = options.filter((o) => o !== chosen && o.entries && Object.hasOwn(o.entries, u.key));
      out.push(elsewhere.length ? { ...u, declaredFor: elsewhere.flatMap((o) => discriminatorValues(o.entries![discriminator])) } : u);
    }
  } else if (s.entries && isTable) {
    const known = Object.keys(s.entries);
    for (const [k, item] of Object.entries(value)) {
      const child = keyPath ? `${keyPath}.${k}` : k;
      const sub = Object.hasOwn(s.entries, k) ? s.entries[k] : undefined;
      if (!sub) out.push({ path: child, key: k, known, topLevel: keyPath === '' });
      else out.push(...unknownKeys(sub, item, child));
    }
  } else if (s.item && Array.isArray(value)) {
    value.forEach((item, i) => out.push(...unknownKeys(s.item!, item, `${keyPath}[${i}]`)));
  } else if (s.type === 'record' && s.value && isTable) {
    // A table of named entries (`[rate_limits.classes.NAME]`): every entry is checked against the entry schema.
    for (const [k, item] of Object.entries(value)) out.push(...unknownKeys(s.value, item, keyPath ? `${keyPath}.${k}` : k));
  }
  return out;
}
