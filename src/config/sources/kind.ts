// What a source kind declares besides its keys: why it refuses keys of other kinds. Every kind's keys are its own
// (a pmtiles source's type has no `subdomains`); a key of another kind in a source is an error when either kind
// says why it cannot apply, and otherwise an ignored key with a warning (unknown-keys.ts), as any unknown key is.
import * as v from 'valibot';

/** Why a key cannot apply to a source of this `type`; undefined when this kind has nothing to say about it. */
export type Refusal = (key: string, type: string) => string | undefined;

export interface SourceKind<E extends v.ObjectEntries = v.ObjectEntries> {
  /** The `type` values of this kind. */
  readonly types: readonly string[];
  /** The keys it declares (its schema's entries), `type` among them. */
  readonly entries: E;
  /** What a required key of it should hold, said when the key is missing. */
  readonly missing?: Readonly<Record<string, string>>;
  /** Its own keys that every other kind refuses with this message: they mean nothing elsewhere. */
  readonly ownKeysElsewhere?: (key: string) => string;
  /** Keys of other kinds it refuses, and why, before their owner's message. */
  readonly refuses?: Refusal;
}

/** The kind's schema: its keys read loosely, so that a key of another kind reaches the refusals rather than vanishing. */
export function kindSchema<E extends v.ObjectEntries>(kind: SourceKind<E>) {
  return v.looseObject(kind.entries, (issue) => {
    const key = String(issue.path?.at(-1)?.key);
    if (issue.input !== undefined) return issue.message;
    if (kind.missing && Object.hasOwn(kind.missing, key)) return kind.missing[key];
    if (key === 'path') return `missing: a ${kind.types.join(' or ')} source needs a path (a file or a URL)`;
    return issue.message;
  });
}

/** The message for `key` in a source of `type` (of kind `kind`), or undefined when the key is only ignored. */
export function refusal(key: string, type: string, kind: SourceKind, kinds: readonly SourceKind[]): string | undefined {
  if (Object.hasOwn(kind.entries, key)) return undefined;
  const own = kind.refuses?.(key, type);
  if (own) return own;
  const owner = kinds.find((k) => k !== kind && k.ownKeysElsewhere && Object.hasOwn(k.entries, key));
  return owner?.ownKeysElsewhere?.(key);
}

/** The parsed keys of a kind (before the variant reduces a source to them). */
export type KindConfig<K extends SourceKind> = v.InferOutput<v.ObjectSchema<K['entries'], undefined>>;

/** A problem of one key of a source: the key it names and what is wrong. */
export type Problem = (key: string, message: string) => void;
