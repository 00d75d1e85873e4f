// A PostGIS table (or view) served as MVT: one layer named after the source, built in the database with
// ST_AsMVT over ST_AsMVTGeom of the geometry in web mercator, clipped to ST_TileEnvelope. The bbox filter is on
// the column itself (`geom && <envelope in the column's SRID>`), so the spatial index serves it. Identifiers come
// from configuration or the catalogue and are quoted; z, x, y are bound parameters.
import { createHash } from 'node:crypto';
import { escapeIdentifier as ident, escapeLiteral as literal } from 'pg';
import type { PgTableConfig } from '../../config/schema.js';
import { describedSource, SourceOpenError, TileUnavailableError, WORLD_BOUNDS, type Bounds, type SourceInfo, type TileFilter, type TileParams, type TileSource } from '../source.js';
import type { TileFormat } from '../../tiles/format.js';
import { Cql2Error } from '../../cql2/ast.js';
import { filterSql } from '../../cql2/sql.js';
import { queryables } from './queryables.js';
import { dataBounds, fieldType, mvtCast, type ColumnInfo, type GeometryTable } from './discover.js';
import type { PgPool } from './pool.js';
import { DATABASE_ALIAS, tableAlias } from './expiry-aliases.js';

/**
 * A prepared statement's name, from its text: pooled connections outlive a reload that keeps the pool, and a
 * name must not be reused for different SQL on one connection.
 */
export const statementName = (sql: string) => `tsts_${createHash('sha1').update(sql).digest('hex').slice(0, 20)}`;

const INTEGER_ID = /^(smallint|integer|bigint)$/;

/**
 * The SQL of a table's tiles: $1 = z, $2 = x, $3 = y. A filtered tile adds `where` (a condition whose values are
 * bound from $4 on) and carries only `properties`. Exported for the EXPLAIN test and the bench.
 */
export function tableTileSql(cfg: PgTableConfig, t: GeometryTable, layer: string, where?: string, properties?: readonly string[]): string {
  const g = ident(t.geometryColumn);
  const byName = new Map(t.columns.map((c) => [c.name, c]));
  const idCol = cfg.id_column;
  const props = (properties ?? cfg.properties ?? t.columns.map((c) => c.name)).filter((n) => n !== t.geometryColumn && n !== idCol);
  const propSql = props.map((n) => `${ident(n)}${mvtCast(byName.get(n)!.type)} AS ${ident(n)}`);
  const envelope = 'ST_TileEnvelope($1::int, $2::int, $3::int)';
  const margin = `ST_TileEnvelope($1::int, $2::int, $3::int, margin => ${cfg.buffer / cfg.extent})`;
  const geom3857 = t.srid === 3857 ? g : `ST_Transform(${g}, 3857)`;
  // Clipped to the world first: past the antimeridian a transform to degrees wraps around (-182° becomes 178°).
  const filter = t.srid === 3857 ? `${g} && ${margin}` : `${g} && ST_Transform(ST_ClipByBox2D(${margin}, ST_TileEnvelope(0, 0, 0)), ${t.srid})`;
  const columns = [`ST_AsMVTGeom(${geom3857}, ${envelope}, ${cfg.extent}, ${cfg.buffer}, true) AS "__geom"`, ...(idCol ? [`${ident(idCol)} AS "__id"`] : []), ...propSql];
  return (
    `SELECT ST_AsMVT(t, ${literal(layer)}, ${cfg.extent}, '__geom'${idCol ? `, '__id'` : ''}) AS mvt FROM (` +
    `SELECT ${columns.join(', ')} FROM ${ident(t.schema)}.${ident(t.table)} WHERE ${filter}${where ? ` AND ${where}` : ''}` +
    `${cfg.max_features ? ` LIMIT ${cfg.max_features}` : ''}) AS t WHERE "__geom" IS NOT NULL`
  );
}

/** What OGC API - Features reads of a table source: where the rows are, which columns, and the feature id. */
export interface FeatureTable {
  pool: PgPool;
  schema: string;
  table: string;
  geometryColumn: string;
  srid: number;
  /** The feature id: `id_column`, else a one-column primary key; absent when the table has neither. */
  idColumn?: ColumnInfo;
  /** The columns served as properties (as in the tiles: `properties`, or every column but the geometry and id). */
  properties: ColumnInfo[];
  /** Set when the table is `writable` (OGC API - Features Part 4, docs/editing.md); absent: read-only. */
  edit?: EditRules;
  /**
   * The axis order of the table's SRID as an EPSG code, when it is neither 4326 nor 3857 and GDAL knows it: set
   * by the state after the sources opened (own-crs.ts), so that OGC API - Features Part 2 lists the table's own CRS.
   */
  ownCrs?: { swap: boolean };
}

/** How a writable table takes writes. */
export interface EditRules {
  /** PUT, PATCH and DELETE must carry If-Match (`require_if_match`). */
  requireIfMatch: boolean;
  /** The geometry column's `format_type` (`geometry(Point,4326)`, `geometry`): what a written geometry must be. */
  geometryType: string;
}

export class PgTableSource implements TileSource {
  private constructor(
    readonly info: SourceInfo,
    private readonly pool: PgPool,
    private readonly sql: string,
    private readonly statement: string,
    readonly features: FeatureTable,
    private readonly cfg: PgTableConfig,
    private readonly table: GeometryTable,
  ) {}

  /** Its table's name and the database's, for expiries by name (expiry-aliases.ts). */
  get expiryAliases(): readonly string[] {
    return [tableAlias(this.table.schema, this.table.table), DATABASE_ALIAS];
  }

  /** `table` is the catalogue's entry for the configured (or discovered) table. */
  static async open(cfg: PgTableConfig, table: GeometryTable, pool: PgPool): Promise<PgTableSource> {
    const byName = new Map(table.columns.map((c) => [c.name, c]));
    for (const p of cfg.properties ?? []) {
      if (!byName.has(p)) throw new SourceOpenError(cfg.id, `table ${table.schema}.${table.table} has no column "${p}" (properties)`);
    }
    if (cfg.id_column) {
      const col = byName.get(cfg.id_column);
      if (!col) throw new SourceOpenError(cfg.id, `table ${table.schema}.${table.table} has no column "${cfg.id_column}" (id_column)`);
      if (!INTEGER_ID.test(col.type)) throw new SourceOpenError(cfg.id, `id_column "${cfg.id_column}" is ${col.type}; MVT feature ids must be integers`);
    }
    if (cfg.writable && !(cfg.id_column ?? table.primaryKey)) throw new SourceOpenError(cfg.id, `writable needs feature ids: set id_column, or give ${table.schema}.${table.table} a one-column primary key`);
    if (!table.srid) throw new SourceOpenError(cfg.id, `${table.schema}.${table.table}.${table.geometryColumn} has no SRID (declare it, e.g. geometry(Point, 4326))`);
    const layer = cfg.id;
    const sql = tableTileSql(cfg, table, layer);
    // A writable table's features may go anywhere: bounds measured from today's rows would hide tomorrow's edits.
    const bounds: Bounds =
      (cfg.bounds as Bounds | undefined) ??
      (cfg.writable ? WORLD_BOUNDS : undefined) ??
      (await dataBounds(pool, `${ident(table.schema)}.${ident(table.table)}`, ident(table.geometryColumn), table.srid)) ??
      WORLD_BOUNDS;
    const fields: Record<string, string> = {};
    for (const c of table.columns) {
      if (c.name === table.geometryColumn || c.name === cfg.id_column) continue;
      if (cfg.properties && !cfg.properties.includes(c.name)) continue;
      fields[c.name] = fieldType(c.type);
    }
    const info: SourceInfo = {
      type: 'postgres-table',
      format: 'pbf',
      compression: 'none',
      ...describedSource(cfg, cfg.minzoom, cfg.maxzoom, bounds),
      description: cfg.description ?? `${table.schema}.${table.table}.${table.geometryColumn}`,
      vectorLayers: [{ id: layer, fields, minzoom: cfg.minzoom, maxzoom: cfg.maxzoom }],
      filterable: cfg.allow_filters !== false,
    };
    const idName = cfg.id_column ?? table.primaryKey;
    const features: FeatureTable = {
      pool,
      schema: table.schema,
      table: table.table,
      geometryColumn: table.geometryColumn,
      srid: table.srid,
      idColumn: idName ? byName.get(idName) : undefined,
      properties: table.columns.filter((c) => c.name !== table.geometryColumn && c.name !== cfg.id_column && (!cfg.properties || cfg.properties.includes(c.name))),
      ...(cfg.writable ? { edit: { requireIfMatch: cfg.require_if_match === true, geometryType: byName.get(table.geometryColumn)?.type ?? 'geometry' } } : {}),
    };
    return new PgTableSource(info, pool, sql, statementName(sql), features, cfg, table);
  }

  async getTile(z: number, x: number, y: number, _params?: TileParams, _format?: TileFormat, filter?: TileFilter): Promise<Uint8Array | undefined> {
    // A named statement is parsed and planned once per connection; a filtered tile's query is unnamed (each
    // filter would otherwise leave a statement behind on every connection).
    const query = filter ? this.filteredQuery(z, x, y, filter) : { name: this.statement, text: this.sql, values: [z, x, y] };
    const { rows } = await this.pool.query<{ mvt: Buffer | null }>(query);
    const mvt = rows[0]?.mvt;
    return mvt && mvt.byteLength > 0 ? new Uint8Array(mvt.buffer, mvt.byteOffset, mvt.byteLength) : undefined;
  }

  /** The tile query of a filter: its condition through the CQL2-to-SQL translation (values bound, names checked). */
  private filteredQuery(z: number, x: number, y: number, filter: TileFilter): { text: string; values: unknown[] } {
    const served = new Set(this.features.properties.map((c) => c.name));
    for (const p of filter.properties ?? []) {
      if (!served.has(p)) throw new TileUnavailableError(400, 'Invalid properties', `source "${this.info.id}" has no property "${p}"; it serves ${[...served].join(', ') || 'none'}`, undefined, undefined, { parameter: 'properties' });
    }
    let where: string | undefined;
    let values: unknown[] = [];
    if (filter.expr) {
      try {
        ({ sql: where, values } = filterSql(filter.expr, queryables(this.features), 3));
      } catch (err) {
        if (err instanceof Cql2Error) throw new TileUnavailableError(400, 'Invalid filter', err.detail, undefined, undefined, { parameter: 'filter', ...(err.property !== undefined ? { property: err.property } : {}) });
        throw err;
      }
    }
    return { text: tableTileSql(this.cfg, this.table, this.info.id, where, filter.properties), values: [z, x, y, ...values] };
  }

  async close(): Promise<void> {
    // The pool belongs to the state, which closes it.
  }
}
