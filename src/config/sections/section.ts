// A section of the configuration file: its schema (with its default when the file leaves it out) and the keys
// of it that only a restart changes, declared side by side so that a new start-time setting cannot be added
// without saying so. `restart-only.ts` reads these declarations; nothing keeps a second list.
import type * as v from 'valibot';

type KeysOf<S extends v.GenericSchema> = keyof NonNullable<v.InferOutput<S>> & string;

/** Every key of the section is read once at start (`'all'`), or the keys listed are, or none. */
export type RestartOnly<S extends v.GenericSchema> = 'all' | readonly KeysOf<S>[];

export interface Section<S extends v.GenericSchema, R extends RestartOnly<S>> {
  schema: S;
  restartOnly: R;
}

/** A section whose keys are all applied by a reload, except those `restartOnly` names. */
export function section<S extends v.GenericSchema, const R extends RestartOnly<S> = readonly []>(schema: S, restartOnly?: R): Section<S, R> {
  return { schema, restartOnly: restartOnly ?? ([] as unknown as R) };
}
