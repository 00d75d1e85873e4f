// Settings a reload does not apply (spec, "Moves that need a restart"): the listeners' addresses, CORS and
// telemetry, plus what this implementation reads once when a process starts. Each section declares its own
// beside its schema (sections/*.ts, `section(schema, restartOnly)`); this module only reads the declarations.
// A reload keeps the running values of these and reports the ones the file changed, so an operator learns that a
// restart is needed instead of wondering why nothing happened. Code that reads a value once at start reads it
// through `startValues`, whose type holds the declared keys only: an undeclared one does not compile.
import { SECTIONS, type Config, type SectionName } from './schema.js';

type Sections = typeof SECTIONS;
type Declared<S extends SectionName> = Sections[S]['restartOnly'];
type KeysOf<S extends SectionName> = Declared<S> extends readonly (infer K)[] ? K & string : never;
type WholeSections = { [S in SectionName]: Declared<S> extends 'all' ? S : never }[SectionName];
type PartSections = { [S in SectionName]: [KeysOf<S>] extends [never] ? never : S }[SectionName];

/** A key path as written in the TOML file (`server.port`, or a whole section such as `telemetry`). */
export type RestartOnlyKey = WholeSections | { [S in PartSections]: `${S}.${KeysOf<S>}` }[PartSections];

/** The start-time values of a configuration: only what a reload keeps. */
export type StartValues = { [S in WholeSections]: Config[S] } & { [S in PartSections]: Pick<NonNullable<Config[S]>, KeysOf<S> & keyof NonNullable<Config[S]>> };

const sectionNames = Object.keys(SECTIONS) as SectionName[];

/** Key paths (as written in the TOML file) whose value only a restart changes, in the order of the sections. */
export const RESTART_ONLY_KEYS: readonly RestartOnlyKey[] = sectionNames.flatMap((name) => {
  const declared = SECTIONS[name].restartOnly;
  return (declared === 'all' ? [name] : declared.map((key) => `${name}.${key}`)) as RestartOnlyKey[];
});

function read(config: Config, key: RestartOnlyKey): unknown {
  const [section, name] = key.split('.') as [SectionName, string | undefined];
  const value = config[section] as Record<string, unknown> | undefined;
  return name === undefined ? value : value?.[name];
}

/** The restart-only keys whose values differ between the running configuration and a newly read one. */
export function restartOnlyChanges(running: Config, next: Config): string[] {
  return RESTART_ONLY_KEYS.filter((key) => JSON.stringify(read(running, key)) !== JSON.stringify(read(next, key)));
}

/** `next` with the running values of every restart-only key: what a reload actually applies. */
export function keepRestartOnly(running: Config, next: Config): Config {
  const out: Record<string, unknown> = { ...next };
  for (const name of sectionNames) {
    const declared = SECTIONS[name].restartOnly;
    if (declared === 'all') out[name] = running[name];
    else if (declared.length > 0) {
      const kept = Object.fromEntries(declared.map((key) => [key, (running[name] as Record<string, unknown> | undefined)?.[key]]));
      out[name] = { ...(next[name] as object | undefined), ...kept };
    }
  }
  return out as Config;
}

/** The values of `config` a process reads once, at its start: typed so that only declared restart-only keys exist. */
export function startValues(config: Config): StartValues {
  return config as StartValues;
}
