// The checks of `[[composites]]` that need only the configuration; raster members and zoom ranges need the
// opened sources and are checked when the state is built (src/sources/composite.ts, buildComposites).
import type { Config } from './schema.js';

/** Ids distinct from every source id and from each other, members naming configured sources, each once. One message per problem. */
export function compositeConfigProblems(config: Pick<Config, 'sources' | 'composites'> & Partial<Pick<Config, 'postgres'>>): string[] {
  const pg = config.postgres;
  // Configured database sources may be members too (auto-published ones are known only once the database is read).
  const sourceIds = new Set([...config.sources, ...(pg?.tables ?? []), ...(pg?.functions ?? []), ...(pg?.outdb_rasters ?? [])].map((s) => s.id));
  const problems: string[] = [];
  const seen = new Set<string>();
  config.composites.forEach((c, i) => {
    if (sourceIds.has(c.id)) problems.push(`composites[${i}].id: "${c.id}" is also the id of a source`);
    else if (seen.has(c.id)) problems.push(`composites[${i}].id: duplicate composite id "${c.id}"`);
    seen.add(c.id);
    const unknown = c.sources.filter((m) => !sourceIds.has(m));
    if (unknown.length) problems.push(`composites[${i}].sources: no source with id ${unknown.map((u) => `"${u}"`).join(', ')}`);
    const repeated = c.sources.filter((m, j) => c.sources.indexOf(m) !== j);
    if (repeated.length) problems.push(`composites[${i}].sources: "${repeated[0]}" is listed more than once`);
  });
  return problems;
}
