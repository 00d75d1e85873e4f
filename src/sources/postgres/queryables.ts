// The properties of a PostGIS table that CQL2 filters may name (OGC API - Features' queryables, and the filters of
// filtered tiles): the feature id, the served properties of a type a filter can compare, and the geometry.
import type { Queryable, QueryableKind } from '../../cql2/sql.js';
import type { ColumnInfo } from './discover.js';

/** What a filter reads of a table: its id, served properties and geometry (a FeatureTable has them). */
export interface FilterableTable {
  idColumn?: ColumnInfo;
  properties: ColumnInfo[];
  geometryColumn: string;
  srid: number;
}

/** The queryable kind of a column type, or undefined for types a filter cannot use (json, dates, arrays...). */
export function kindOf(pgType: string): QueryableKind | undefined {
  if (/^(smallint|integer|bigint|real|double precision|numeric)/.test(pgType)) return 'number';
  if (pgType === 'boolean') return 'boolean';
  if (/^(text|character varying|character\b|"char"|name)/.test(pgType)) return 'string';
  if (/^geometry/.test(pgType)) return 'geometry';
  return undefined;
}

/** The properties a filter may name: the id, the served properties of a filterable type, and the geometry. */
export function queryables(t: FilterableTable): Queryable[] {
  const out: Queryable[] = [];
  for (const c of [...(t.idColumn ? [t.idColumn] : []), ...t.properties]) {
    const kind = kindOf(c.type);
    if (kind && kind !== 'geometry' && !out.some((q) => q.name === c.name)) out.push({ name: c.name, kind });
  }
  out.push({ name: t.geometryColumn, kind: 'geometry', srid: t.srid });
  return out;
}
