// The checks that need more than one key, or more than one section, of a parsed configuration: ids unique and
// clear of the uploads' prefix over every kind of source, zoom ranges that are not empty, composites naming
// configured sources, API keys naming configured rate classes. Each returns every problem it finds, so that an
// operator fixes a file in one round instead of one error per start.
import type { Config } from './schema.js';
import { compositeConfigProblems } from './composites.js';

/** Source ids of uploaded files start with this (src/uploads/names.ts); configured ids may not. */
export const UPLOAD_ID_PREFIX = 'upload-';

/** Every configured entry that is served under an id, with where it is written in the file. */
function idEntries(config: Config): { where: string; id: string; minzoom?: number; maxzoom?: number }[] {
  const pg = config.postgres;
  const lists = [
    ['sources', config.sources],
    ['postgres.tables', pg?.tables ?? []],
    ['postgres.functions', pg?.functions ?? []],
    ['postgres.outdb_rasters', pg?.outdb_rasters ?? []],
    ['composites', config.composites],
  ] as const;
  return lists.flatMap(([section, entries]) => entries.map((e, i) => ({ ...e, where: `${section}[${i}]` })));
}

/** Every problem of `config` that its schema cannot see, as `key path: message` lines. */
export function configProblems(config: Config): string[] {
  const problems: string[] = [];
  const seen = new Set<string>();
  for (const s of config.sources) {
    if (seen.has(s.id)) problems.push(`sources: duplicate source id "${s.id}"`);
    seen.add(s.id);
  }
  for (const e of idEntries(config)) {
    // Uploaded files are served as `upload-<uuid>` (src/uploads/): a configured id there could collide with one.
    if (e.id.startsWith(UPLOAD_ID_PREFIX)) problems.push(`${e.where}: id "${e.id}" starts with "${UPLOAD_ID_PREFIX}", which is kept for uploaded files`);
    // An empty zoom range would make every tile of the source a silent 204.
    if (e.minzoom !== undefined && e.maxzoom !== undefined && e.minzoom > e.maxzoom) problems.push(`${e.where}: minzoom ${e.minzoom} is above maxzoom ${e.maxzoom}`);
  }
  problems.push(...compositeConfigProblems(config));
  // A key's rate class must be one [rate_limits] defines: a misspelt class would silently give the default budget.
  const classes = config.rate_limits?.classes;
  if (classes && config.auth) {
    for (const k of config.auth.keys) {
      if (k.rate_class !== undefined && !Object.hasOwn(classes, k.rate_class))
        problems.push(`auth.keys: key "${k.name}" has rate_class "${k.rate_class}", which [rate_limits.classes] does not define (it has ${Object.keys(classes).join(', ') || 'none'})`);
    }
  }
  return problems;
}
