// Which sources read a database table: an expiry naming a table (`table=schema.name`, a NOTIFY payload's
// `table`) reaches every `[[postgres.tables]]` entry on it, whatever their ids, columns or filters, and, with
// `auto_publish`, every discovered source on it through the table's own name (sources/postgres/expiry-aliases.ts).
import type { Config } from '../config/schema.js';
import { tableAlias } from '../sources/postgres/expiry-aliases.js';

/** `schema.name` (or `name`, in `public`) as its two parts; the table name may itself hold dots. */
export function tableName(qualified: string): { schema: string; table: string } {
  const dot = qualified.indexOf('.');
  return dot < 0 ? { schema: 'public', table: qualified } : { schema: qualified.slice(0, dot), table: qualified.slice(dot + 1) };
}

/**
 * The ids of the configured table sources reading `qualified`, and the table's name when tables are discovered
 * (`auto_publish`: whether one serves it is known only where the catalogue is read; if none does, it reaches nothing).
 */
export function tableSources(config: Config, qualified: string): string[] {
  const { schema, table } = tableName(qualified);
  const ids = (config.postgres?.tables ?? []).filter((t) => t.schema === schema && t.table === table).map((t) => t.id);
  return config.postgres?.auto_publish ? [...ids, tableAlias(schema, table)] : ids;
}
