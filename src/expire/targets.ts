// The configured sources an expiry may name: every `[[sources]]` entry and every `[[postgres.*]]` entry by id; a
// named composite or an ad-hoc composite `a+b` names its members (an expiry reaches the data, and every product
// made of it follows: dependencies.ts). Read from the configuration alone: the admin listener runs in the
// cluster's primary, which holds no AppState.
import type { Config } from '../config/schema.js';
import { compositeMembers } from '../sources/source-ids.js';
import { DATABASE_ALIAS } from '../sources/postgres/expiry-aliases.js';

/** Every source id the configuration declares. */
function declaredIds(config: Config): Set<string> {
  const pg = config.postgres;
  return new Set([...config.sources.map((s) => s.id), ...(pg ? [...pg.tables, ...pg.functions, ...pg.outdb_rasters].map((s) => s.id) : [])]);
}

/** The configured sources `id` names, or the first part of it that names nothing (an unknown id). */
export function expirySources(config: Config, id: string): { ok: true; sources: string[] } | { ok: false; unknown: string } {
  const declared = declaredIds(config);
  const out = new Set<string>();
  for (const member of compositeMembers(id)) {
    const named = config.composites.find((c) => c.id === member);
    if (named) for (const m of named.sources) out.add(m);
    else if (declared.has(member)) out.add(member);
    else return { ok: false, unknown: member };
  }
  return { ok: true, sources: [...out] };
}

/** Every source the configuration declares, and the database's discovered ones by its name (auto_publish). */
export function everySource(config: Config): string[] {
  return [...declaredIds(config), ...(config.postgres?.auto_publish ? [DATABASE_ALIAS] : [])];
}
