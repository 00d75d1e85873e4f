// Writes to a PostGIS table through OGC API - Features Part 4 (docs/editing.md): create (one feature, or a
// collection in one INSERT, so one bad member leaves nothing behind), replace, and delete, each ONE statement.
// Identifiers are the catalogue's (quoted); every value is a bound parameter: the features travel as one JSON
// parameter, each value read out of it as text and cast to its column's type from the catalogue.
//
// Optimistic locking: a feature's ETag is md5 of its whole row as text (`md5(t::text)`), computed by the database
// from the stored row, so every process and machine gives the same tag for the same row. A conditional write
// selects the row `FOR UPDATE` where both the id and the tag still match, and writes it in the same statement:
// when two editors send the same tag, the second waits for the first's row lock, PostgreSQL re-checks its
// condition against the row the first committed (READ COMMITTED's re-evaluation of updated rows), the tag no
// longer matches, and the second writes nothing (412). Each write returns the boxes of the old and the new
// geometry (longitude/latitude), which the route expires.
import { escapeIdentifier as ident } from 'pg';
import type { FeatureTable } from '../sources/postgres/table.js';
import { TileUnavailableError } from '../sources/source.js';
import { kindOf } from '../sources/postgres/queryables.js';
import type { FeatureInput, WriteSchema } from './feature-input.js';
import { geometryRule } from './feature-input.js';

/** A box in longitude/latitude: west, south, east, north. */
export type Box = [number, number, number, number];

/** A feature as written: its id (text), its new ETag and the boxes of what it covered before and covers now. */
export interface Written {
  id: string;
  etag: string;
  boxes: Box[];
}

/** What a conditional write of one feature found. */
export type WriteOutcome = { kind: 'written'; written: Written } | { kind: 'missing' } | { kind: 'stale'; etag: string };

/** The database refused a write: a constraint (409), or a value its column's type does not read (400). */
export class WriteRefusedError extends Error {
  constructor(
    readonly status: 400 | 409,
    readonly detail: string,
    readonly extra: Record<string, string>,
  ) {
    super(detail);
  }
}

/** The columns a feature may set and what its geometry must be. */
export function writeSchema(t: FeatureTable): WriteSchema {
  return {
    ...(t.idColumn ? { id: t.idColumn } : {}),
    properties: t.properties.filter((c) => c.name !== t.idColumn?.name),
    geometryColumn: t.geometryColumn,
    geometryType: t.edit?.geometryType ?? 'geometry',
  };
}

const from = (t: FeatureTable) => `${ident(t.schema)}.${ident(t.table)}`;
/** The ETag expression of the row `t`. */
const ETAG = 'md5(t::text)';

/** A geometry column's box in longitude/latitude, as text (`BOX(w s,e n)`), or NULL. */
function boxSql(t: FeatureTable, row: string): string {
  const g = `${row}.${ident(t.geometryColumn)}`;
  return `box2d(${t.srid === 4326 ? g : `ST_Transform(${g}, 4326)`})::text`;
}

/**
 * The geometry read from the JSON member `__g` of `r` (x/y order, in `srid`: 4326 for CRS84, else the Content-Crs
 * of the request), in the column's SRID and (multi) type. `srid` is an integer of the server's list of CRSs
 * (crs.ts) that the header was matched against, never the header's text.
 */
function geometrySql(t: FeatureTable, srid: number): string {
  let g = `ST_SetSRID(ST_GeomFromGeoJSON(r->>'__g'), ${Number(srid)})`;
  if (t.srid !== srid) g = `ST_Transform(${g}, ${Number(t.srid)})`;
  if (geometryRule(t.edit?.geometryType ?? 'geometry').type?.startsWith('Multi')) g = `ST_Multi(${g})`;
  return g;
}

/** The value of column `c` read from the JSON row `r`, cast to its type (format_type from the catalogue). */
const valueSql = (c: { name: string; type: string }) => `(r->>${literalKey(c.name)})::${c.type}`;
/** A JSON member name as an SQL string literal: the names are the catalogue's, quoted all the same. */
const literalKey = (name: string) => `'${name.replace(/'/g, "''")}'`;

/** One feature as the JSON object the SQL reads: `__id`, `__g` and the columns by name, all text or null. */
function rowJson(f: FeatureInput, columns: readonly string[]): Record<string, string | null> {
  const row: Record<string, string | null> = Object.create(null);
  for (const c of columns) row[c] = f.values.get(c) ?? null;
  row.__g = f.geometry === null ? null : JSON.stringify(f.geometry);
  if (f.id !== undefined) row.__id = f.id;
  return { ...row };
}

function parseBox(text: unknown): Box | undefined {
  if (typeof text !== 'string') return undefined;
  const m = /^BOX\(([^ ]+) ([^,]+),([^ ]+) ([^)]+)\)$/.exec(text);
  if (!m) return undefined;
  const b = [Number(m[1]), Number(m[2]), Number(m[3]), Number(m[4])] as Box;
  return b.every(Number.isFinite) ? b : undefined;
}

/** Runs a write, turning the database's refusals into WriteRefusedError. */
async function run<R extends Record<string, unknown>>(t: FeatureTable, text: string, values: unknown[], unchecked: () => string[]): Promise<R[]> {
  try {
    const { rows } = await t.pool.query<R>({ text, values });
    return rows;
  } catch (err) {
    // The pool answers a data exception (SQLSTATE class 22) as a 400 of its own: a value only the database could
    // check (a uuid, a date) is not one of its column's type.
    if (err instanceof TileUnavailableError && err.status === 400) {
      const names = unchecked();
      throw new WriteRefusedError(400, `a value is not one of its column's type (checked by the database: ${names.join(', ') || 'the feature id'})`, names.length === 1 ? { property: names[0] } : {});
    }
    const e = err as { code?: string; constraint?: string; column?: string };
    if (typeof e.code === 'string' && e.code.startsWith('23')) {
      if (e.code === '23502') throw new WriteRefusedError(409, `column "${e.column ?? '?'}" cannot be null`, { constraint: 'not null', ...(e.column ? { property: e.column } : {}) });
      throw new WriteRefusedError(409, `the write breaks constraint "${e.constraint ?? '?'}" of the table`, e.constraint ? { constraint: e.constraint } : {});
    }
    throw err;
  }
}

/** Columns of types only the database checks (cast from text there), among `names`. */
function uncheckedOf(t: FeatureTable, names: Iterable<string>, withId: boolean): string[] {
  const byName = new Map(t.properties.map((c) => [c.name, c]));
  const out = [...names].filter((n) => {
    const c = byName.get(n);
    return c !== undefined && kindOf(c.type) === undefined && c.type !== 'json' && c.type !== 'jsonb';
  });
  if (withId && t.idColumn && kindOf(t.idColumn.type) === undefined) out.push(t.idColumn.name);
  return out;
}

type WriteRow = { id: string; etag: string; old_box?: string | null; new_box?: string | null };

const written = (r: WriteRow): Written => ({ id: r.id, etag: r.etag, boxes: [parseBox(r.old_box), parseBox(r.new_box)].filter((b): b is Box => b !== undefined) });

/**
 * Creates features in one INSERT (all or none). The columns are those any of them sets: in a collection, a member
 * that leaves out a property another member sets writes NULL there (one statement has one column list).
 */
export async function insertFeatures(t: FeatureTable, features: readonly FeatureInput[], srid = 4326): Promise<Written[]> {
  const idCol = t.idColumn!;
  const names = new Set<string>();
  for (const f of features) for (const k of f.values.keys()) names.add(k);
  const columns = t.properties.filter((c) => names.has(c.name));
  const withId = features.some((f) => f.id !== undefined);
  const targets = [...(withId ? [ident(idCol.name)] : []), ...columns.map((c) => ident(c.name)), ident(t.geometryColumn)];
  const exprs = [...(withId ? [`(r->>'__id')::${idCol.type}`] : []), ...columns.map(valueSql), geometrySql(t, srid)];
  const text =
    `INSERT INTO ${from(t)} AS t (${targets.join(', ')}) ` +
    `SELECT ${exprs.join(', ')} FROM json_array_elements($1::json) WITH ORDINALITY AS e(r, n) ORDER BY n ` +
    `RETURNING (t.${ident(idCol.name)})::text AS id, ${ETAG} AS etag, ${boxSql(t, 't')} AS new_box`;
  const json = JSON.stringify(features.map((f) => rowJson(f, columns.map((c) => c.name))));
  const rows = await run<WriteRow>(t, text, [json], () => uncheckedOf(t, names, withId));
  return rows.map(written);
}

/** 2^(bits-1) of each integer type: its values are -bound..bound-1. */
const INTEGER_BOUND: Record<string, bigint> = { smallint: 2n ** 15n, integer: 2n ** 31n, bigint: 2n ** 63n };

/** Whether `fid` can be a value of the id column at all (else: no such feature, 404). */
export async function isIdValue(t: FeatureTable, fid: string): Promise<boolean> {
  const type = t.idColumn!.type;
  const kind = kindOf(type);
  if (kind === 'string') return !fid.includes('\u0000');
  const bound = INTEGER_BOUND[type];
  if (bound !== undefined) return /^-?\d{1,19}$/.test(fid) && BigInt(fid) >= -bound && BigInt(fid) < bound;
  try {
    await t.pool.query({ text: `SELECT $1::text::${type}`, values: [fid] });
    return true;
  } catch (err) {
    if (err instanceof TileUnavailableError && err.status === 400) return false;
    throw err;
  }
}

/** The current ETag of a feature, or undefined when there is none of that id. */
export async function currentEtag(t: FeatureTable, fid: string): Promise<string | undefined> {
  const { rows } = await t.pool.query<{ etag: string }>({ text: `SELECT ${ETAG} AS etag FROM ${from(t)} AS t WHERE t.${ident(t.idColumn!.name)} = $1::text::${t.idColumn!.type}`, values: [fid] });
  return rows[0]?.etag;
}

/** What a conditional write found when it wrote nothing: no such feature, or another version of it. */
async function notWritten(t: FeatureTable, fid: string): Promise<WriteOutcome> {
  const etag = await currentEtag(t, fid);
  return etag === undefined ? { kind: 'missing' } : { kind: 'stale', etag };
}

/** The CTE locking the feature `$1` (and, with `ifMatch`, only while its ETag is one of `$2`), with its old box. */
function lockSql(t: FeatureTable, ifMatch: boolean): string {
  const id = t.idColumn!;
  return (
    `WITH old AS (SELECT t.ctid AS row, ${boxSql(t, 't')} AS box FROM ${from(t)} AS t ` +
    `WHERE t.${ident(id.name)} = $1::text::${id.type}${ifMatch ? ` AND ${ETAG} = ANY($2::text[])` : ''} FOR UPDATE)`
  );
}

/**
 * Replaces feature `fid` by `f`: every writable property (NULL where `f` has none) and the geometry; with
 * `ifMatch`, only while the stored row's ETag is still one of those.
 */
export async function replaceFeature(t: FeatureTable, fid: string, f: FeatureInput, ifMatch: readonly string[] | undefined, srid = 4326): Promise<WriteOutcome> {
  const columns = writeSchema(t).properties;
  const n = ifMatch === undefined ? 2 : 3;
  const sets = [...columns.map((c) => `${ident(c.name)} = ${valueSql(c)}`), `${ident(t.geometryColumn)} = ${geometrySql(t, srid)}`];
  const text =
    `${lockSql(t, ifMatch !== undefined)} UPDATE ${from(t)} AS t SET ${sets.join(', ')} FROM old, (SELECT $${n}::json AS r) AS input ` +
    `WHERE t.ctid = old.row RETURNING (t.${ident(t.idColumn!.name)})::text AS id, ${ETAG} AS etag, old.box AS old_box, ${boxSql(t, 't')} AS new_box`;
  const json = JSON.stringify(rowJson(f, columns.map((c) => c.name)));
  const values = ifMatch === undefined ? [fid, json] : [fid, ifMatch, json];
  const rows = await run<WriteRow>(t, text, values, () => uncheckedOf(t, f.values.keys(), false));
  return rows[0] ? { kind: 'written', written: written(rows[0]) } : notWritten(t, fid);
}

/** Deletes feature `fid`; with `ifMatch`, only while its ETag is still one of those. */
export async function deleteFeature(t: FeatureTable, fid: string, ifMatch: readonly string[] | undefined): Promise<WriteOutcome> {
  const text = `${lockSql(t, ifMatch !== undefined)} DELETE FROM ${from(t)} AS t USING old WHERE t.ctid = old.row RETURNING $1::text AS id, '' AS etag, old.box AS old_box`;
  const rows = await run<WriteRow>(t, text, ifMatch === undefined ? [fid] : [fid, ifMatch], () => []);
  return rows[0] ? { kind: 'written', written: written(rows[0]) } : notWritten(t, fid);
}
