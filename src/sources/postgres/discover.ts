// What the database catalogue says: geometry columns of tables (with SRID and the type of every column),
// functions with a tile signature, and data extents. Everything here reads the catalogue with parameterised
// queries; nothing from a request ever reaches this module.
import type { PgPool } from './pool.js';
import type { Bounds } from '../source.js';

export interface ColumnInfo {
  name: string;
  /** `format_type` of the column, e.g. `integer`, `character varying(80)`. */
  type: string;
}

export interface GeometryTable {
  schema: string;
  table: string;
  geometryColumn: string;
  srid: number;
  /** Every column of the table, in table order. */
  columns: ColumnInfo[];
  /** The first geometry column of the table (the default when a config entry names none). */
  isFirstGeometry: boolean;
  /** The primary key's column when the key is one column (feature ids of OGC API - Features). */
  primaryKey?: string;
}

export type FunctionKind = 'zxy' | 'zxy_query' | 'outdb';

export interface TileFunction {
  schema: string;
  name: string;
  kind: FunctionKind;
  /** Declared argument types (`integer`, `json`, ...), used as casts of the bound parameters. */
  argTypes: string[];
  /** outdb only: the output columns the function returns. */
  outColumns: string[];
}

/** Geometry columns of tables and views the connecting role may read, with their columns' types. */
export async function geometryTables(pool: PgPool): Promise<GeometryTable[]> {
  // Without PostGIS there is no geometry_columns view, and no table to serve.
  const { rows: postgis } = await pool.query<{ ok: boolean }>({ text: "SELECT to_regclass('geometry_columns') IS NOT NULL AS ok" });
  if (!postgis[0]?.ok) return [];
  const { rows } = await pool.query<{ schema: string; table: string; geom: string; srid: number; columns: ColumnInfo[]; first: boolean; pk: string | null }>({
    text: `
      SELECT g.f_table_schema AS schema, g.f_table_name AS table, g.f_geometry_column AS geom, g.srid,
             (SELECT json_agg(json_build_object('name', a.attname, 'type', format_type(a.atttypid, a.atttypmod)) ORDER BY a.attnum)
                FROM pg_attribute a WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped) AS columns,
             g.f_geometry_column = (SELECT a.attname FROM pg_attribute a
                WHERE a.attrelid = c.oid AND a.attnum > 0 AND NOT a.attisdropped AND a.atttypid = 'geometry'::regtype
                ORDER BY a.attnum LIMIT 1) AS first,
             (SELECT a.attname FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = i.indkey[0]
                WHERE i.indrelid = c.oid AND i.indisprimary AND i.indnatts = 1) AS pk
      FROM geometry_columns g
      JOIN pg_namespace n ON n.nspname = g.f_table_schema
      JOIN pg_class c ON c.relnamespace = n.oid AND c.relname = g.f_table_name
      WHERE has_schema_privilege(n.oid, 'USAGE') AND has_table_privilege(c.oid, 'SELECT')
        AND n.nspname NOT IN ('pg_catalog', 'information_schema', 'topology', 'tiger')
      ORDER BY 1, 2, 3`,
  });
  return rows.map((r) => ({ schema: r.schema, table: r.table, geometryColumn: r.geom, srid: r.srid, columns: r.columns ?? [], isFirstGeometry: r.first, ...(r.pk ? { primaryKey: r.pk } : {}) }));
}

const INT_TYPES = new Set(['integer', 'smallint', 'bigint']);
const JSON_TYPES = new Set(['json', 'jsonb']);

/** Functions the role may execute whose arguments make them tile functions (vector or out-of-database raster). */
export async function tileFunctions(pool: PgPool): Promise<TileFunction[]> {
  const { rows } = await pool.query<{ schema: string; name: string; args: string[]; ret: string; retset: boolean; out_names: string[] | null; out_modes: string[] | null }>({
    text: `
      SELECT n.nspname AS schema, p.proname AS name,
             ARRAY(SELECT format_type(t, NULL) FROM unnest(p.proargtypes::oid[]) AS t) AS args,
             format_type(p.prorettype, NULL) AS ret, p.proretset AS retset,
             p.proargnames AS out_names, p.proargmodes::text[] AS out_modes
      FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
      WHERE p.prokind = 'f' AND has_function_privilege(p.oid, 'EXECUTE') AND has_schema_privilege(n.oid, 'USAGE')
        AND n.nspname NOT IN ('pg_catalog', 'information_schema', 'topology', 'tiger')
        AND NOT EXISTS (SELECT 1 FROM pg_depend d WHERE d.objid = p.oid AND d.deptype = 'e')
        AND p.pronargs BETWEEN 3 AND 5
      ORDER BY 1, 2`,
  });
  const out: TileFunction[] = [];
  for (const r of rows) {
    const [z, x, y, fourth, fifth] = r.args;
    if (![z, x, y].every((t) => INT_TYPES.has(t))) continue;
    if (r.args.length === 3 && r.ret === 'bytea' && !r.retset) out.push({ schema: r.schema, name: r.name, kind: 'zxy', argTypes: r.args, outColumns: [] });
    else if (r.args.length === 4 && JSON_TYPES.has(fourth) && r.ret === 'bytea' && !r.retset) out.push({ schema: r.schema, name: r.name, kind: 'zxy_query', argTypes: r.args, outColumns: [] });
    else if (r.args.length === 5 && fourth === 'geometry' && JSON_TYPES.has(fifth) && r.retset) {
      // RETURNS TABLE(...) lists its columns as arguments of mode 't'.
      const names = r.out_names ?? [];
      const modes = r.out_modes ?? [];
      const outColumns = names.filter((_, i) => modes[i] === 't' || modes[i] === 'o');
      out.push({ schema: r.schema, name: r.name, kind: 'outdb', argTypes: r.args, outColumns });
    }
  }
  return out;
}

/** The field type TileJSON's `vector_layers` names for a column type. */
export function fieldType(pgType: string): 'Number' | 'Boolean' | 'String' {
  if (/^(smallint|integer|bigint|real|double precision|numeric)/.test(pgType)) return 'Number';
  if (pgType === 'boolean') return 'Boolean';
  return 'String';
}

/**
 * How a column is selected into an MVT: ST_AsMVT encodes integers, floats, booleans and text natively and
 * would spread a jsonb into many properties, so everything else (json, numeric, dates, arrays) goes as text.
 */
export function mvtCast(pgType: string): string {
  if (/^(smallint|integer|bigint|real|double precision|boolean|text|character varying)/.test(pgType)) return '';
  if (/^numeric/.test(pgType)) return '::double precision';
  return '::text';
}

const MERC_LAT = 85.0511287798066;

/**
 * Extent of a geometry column in longitude/latitude, computed from the data (ST_Extent reads the whole column:
 * on a very large table, configure `bounds` to skip it). The planner's estimate is not used: it can be smaller
 * than the data, and bounds cut tiles.
 */
export async function dataBounds(pool: PgPool, quotedTable: string, quotedGeom: string, srid: number): Promise<Bounds | undefined> {
  const { rows } = await pool.query<{ b: number[] | null }>({
    text: `SELECT CASE WHEN e IS NULL THEN NULL ELSE ARRAY[ST_XMin(e), ST_YMin(e), ST_XMax(e), ST_YMax(e)] END AS b
           FROM (SELECT ST_Transform(ST_SetSRID(ST_Extent(${quotedGeom})::geometry, $1::int), 4326) AS e FROM ${quotedTable}) AS s`,
    values: [srid],
  });
  const b = rows[0]?.b;
  if (!b || b.some((n) => !Number.isFinite(n))) return undefined;
  return [Math.max(-180, b[0]), Math.max(-MERC_LAT, b[1]), Math.min(180, b[2]), Math.min(MERC_LAT, b[3])];
}
