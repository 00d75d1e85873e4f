// Names an expiry may reach a database source by besides its id. With `auto_publish`, the sources of a database
// are discovered in each serving process, with ids chosen there from the whole catalogue; expiries by table
// (`table=schema.name`, a NOTIFY payload's `table`) and the whole-database expiry after a lost NOTIFY session are
// accepted where no catalogue is read (a cluster's primary). They name the table or the database instead, and
// every database source answers to those names too (expire/dependencies.ts).

/** The name of a table's data: `table:schema.name`. */
export function tableAlias(schema: string, table: string): string {
  return `table:${schema}.${table}`;
}

/** The name of everything read from the configured database. */
export const DATABASE_ALIAS = 'postgres:database';
