// OGC API - Features over a PostGIS table source (and, at the end, over a layer of a data-file source): queryables from the table's columns, and items read with one
// parameterised query (plus a count for numberMatched). Every condition (bbox, property=value, CQL2) becomes SQL
// through ./cql2/sql.ts, so identifiers come from the catalogue and values are bound.
import { escapeIdentifier as ident } from 'pg';
import type { FeatureTable } from '../sources/postgres/table.js';
import { TileUnavailableError } from '../sources/source.js';
import { checkBbox, checkString, Cql2Error, storableText, type Expr, type Literal } from '../cql2/ast.js';
import { Cql2Sql, SqlParams, type Queryable, type QueryableKind } from '../cql2/sql.js';
import { kindOf, queryables } from '../sources/postgres/queryables.js';
import { compileFilter } from '../cql2/evaluate.js';
import type { FileSource } from '../sources/files/source.js';
import { GEOMETRY_QUERYABLE, type Reading } from '../sources/files/reading.js';
import type { FileFeature } from '../sources/files/reader.js';
import { CRS84_ENTRY, isLonLat, type Crs } from './crs.js';

export { queryables };

export const DEFAULT_LIMIT = 10;
export const MAX_LIMIT = 10_000;

const JSON_SCHEMA_TYPE: Record<QueryableKind, Record<string, string>> = {
  number: { type: 'number' },
  string: { type: 'string' },
  boolean: { type: 'boolean' },
  geometry: { format: 'geometry-any' },
};

/** The queryables as the JSON Schema OGC API - Features Part 3 asks for. */
export function queryablesSchema(t: FeatureTable, id: string, title: string): Record<string, unknown> {
  const props: Record<string, unknown> = {};
  for (const q of queryables(t)) {
    const integer = q.kind === 'number' && /^(smallint|integer|bigint)$/.test([t.idColumn, ...t.properties].find((c) => c?.name === q.name)?.type ?? '');
    props[q.name] = { title: q.name, ...(integer ? { type: 'integer' } : JSON_SCHEMA_TYPE[q.kind]) };
  }
  return { $schema: 'https://json-schema.org/draft/2020-12/schema', $id: id, type: 'object', title, properties: props, additionalProperties: false };
}

export interface ItemsQuery {
  /** west, south, east, north in `bboxCrs` (CRS84 when absent), already in x/y order. */
  bbox?: number[];
  /** The CRS of bbox when it is not longitude/latitude (CRS84 or EPSG:4326, which take the CRS84 path). */
  bboxCrs?: Crs;
  /** The CRS the geometries are answered in (CRS84 when absent). */
  crs?: Crs;
  /** property=value conditions from the query string (the value as given). */
  equals: [string, string][];
  filter?: Expr;
  limit: number;
  offset: number;
}

export interface Feature {
  type: 'Feature';
  id?: string | number;
  geometry: unknown;
  properties: Record<string, unknown>;
}

/** A property=value condition's value in the column's kind (a query string holds only text). */
function equalsLiteral(q: Queryable, value: string): Literal {
  switch (q.kind) {
    case 'number': {
      const n = value.trim() === '' ? NaN : Number(value);
      if (!Number.isFinite(n)) throw new Cql2Error(`${q.name}=${JSON.stringify(value)}: ${q.name} is a number`, q.name);
      return n;
    }
    case 'boolean':
      if (value !== 'true' && value !== 'false') throw new Cql2Error(`${q.name}=${JSON.stringify(value)}: ${q.name} is true or false`, q.name);
      return value === 'true';
    default:
      return checkString(value);
  }
}

/** The WHERE clause of a query and its values (parameters $1...). */
function whereOf(t: FeatureTable, q: Omit<ItemsQuery, 'limit' | 'offset'>, params: SqlParams): string {
  const all = queryables(t);
  const sql = new Cql2Sql(all, params);
  const parts: string[] = [];
  if (q.bbox && q.bboxCrs && !isLonLat(q.bboxCrs)) {
    parts.push(projectedBboxSql(t, q.bbox, q.bboxCrs, params));
  } else if (q.bbox) {
    let b;
    try {
      b = checkBbox(q.bbox);
    } catch (err) {
      if (err instanceof Cql2Error) throw new Cql2Error(err.detail, undefined, 'bbox');
      throw err;
    }
    parts.push(sql.translate({ op: 's_intersects', left: { kind: 'property', name: t.geometryColumn }, right: { kind: 'bbox', bbox: b } }));
  }
  for (const [name, value] of q.equals) {
    const qa = all.find((x) => x.name === name);
    if (!qa || qa.kind === 'geometry') throw new Cql2Error(`unknown property ${JSON.stringify(name)}`, name, name);
    try {
      parts.push(sql.translate({ op: 'compare', cmp: '=', left: { kind: 'property', name }, right: { kind: 'literal', value: equalsLiteral(qa, value) } }));
    } catch (err) {
      if (err instanceof Cql2Error) throw new Cql2Error(err.detail, name, name);
      throw err;
    }
  }
  if (q.filter) parts.push(sql.translate(q.filter));
  return parts.length ? `WHERE ${parts.join(' AND ')}` : '';
}

const from = (t: FeatureTable) => `${ident(t.schema)}.${ident(t.table)}`;
/**
 * A bbox in a projected CRS (west, south, east, north in its x/y) as a condition on the table's geometry: the box,
 * densified so that its edges follow the CRS's straight lines once transformed, in the table's SRID. The SRIDs
 * are integers of the server's list of CRSs (crs.ts), never request text; the corners are bound.
 */
function projectedBboxSql(t: FeatureTable, bbox: readonly number[], crs: Crs, params: SqlParams): string {
  const [w, s, e, n] = bbox;
  if (![w, s, e, n].every(Number.isFinite)) throw new Cql2Error('bbox: four finite numbers', undefined, 'bbox');
  if (w > e) throw new Cql2Error(`bbox: west ${w} is above east ${e} (only a longitude/latitude bbox may cross the antimeridian)`, undefined, 'bbox');
  const step = Math.max(e - w, n - s) / 32 || 1;
  const box = `ST_MakeEnvelope(${params.add(w, 'double precision')}, ${params.add(s, 'double precision')}, ${params.add(e, 'double precision')}, ${params.add(n, 'double precision')}, ${Number(crs.srid)})`;
  const area = crs.srid === t.srid ? box : `ST_Transform(ST_Segmentize(${box}, ${params.add(step, 'double precision')}), ${Number(t.srid)})`;
  return `ST_Intersects(${ident(t.geometryColumn)}, ${area})`;
}

/**
 * The geometry as GeoJSON in `crs` (CRS84 when absent): transformed from the table's SRID in the statement, axes
 * swapped where the CRS puts y first. Options 0: no `crs` member inside the geometry (Content-Crs says it). The
 * SRIDs are integers of the server's list (crs.ts), never request text.
 */
const geometrySql = (t: FeatureTable, crs: Crs = CRS84_ENTRY) => {
  let g = ident(t.geometryColumn);
  if (t.srid !== crs.srid) g = `ST_Transform(${g}, ${Number(crs.srid)})`;
  if (crs.swap) g = `ST_FlipCoordinates(${g})`;
  return `ST_AsGeoJSON(${g}, 9, 0)::json AS "__geometry"`;
};
/** Properties a GeoJSON member can carry as they come from node-postgres; geometries elsewhere as text. */
const propertySql = (c: { name: string; type: string }) => (/^(geometry|geography)/.test(c.type) ? `(${ident(c.name)})::text AS ${ident(c.name)}` : ident(c.name));

/** A decimal as PostgreSQL writes it, in the shortest form: no trailing fractional zeros, no "-0". */
function shortestDecimal(text: string): string {
  const s = text.includes('.') ? text.replace(/0+$/, '').replace(/\.$/, '') : text;
  return s === '-0' ? '0' : s;
}

/**
 * A value as JSON. node-postgres gives bigint and numeric as strings (exact). They become JSON numbers only when
 * the number writes back as the same decimal, so nothing is rounded (12345678901234567890.1 or 0.1000000000000000000001
 * stay strings); bigint ids past 2^53 stay strings too, as JavaScript clients would round them.
 */
function jsonValue(v: unknown, type: string): unknown {
  if (typeof v === 'string' && /^(bigint|numeric)/.test(type)) {
    const n = Number(v);
    const exact = Number.isFinite(n) && String(n) === shortestDecimal(v);
    return exact && (type !== 'bigint' || Number.isSafeInteger(n)) ? n : v;
  }
  return v;
}

function toFeature(t: FeatureTable, row: Record<string, unknown>): Feature {
  const properties: Record<string, unknown> = Object.create(null);
  for (const c of t.properties) properties[c.name] = jsonValue(row[c.name], c.type);
  const f: Feature = { type: 'Feature', geometry: row.__geometry ?? null, properties: { ...properties } };
  if (t.idColumn) f.id = jsonValue(row.__id, t.idColumn.type) as string | number;
  return f;
}

/**
 * The id as handed out: numbers and strings as node-postgres reads them; any other type (uuid, date, ...) in
 * PostgreSQL's own text form, which the cast in readItem turns back into the same value.
 */
function idSql(c: { name: string; type: string }): string {
  const kind = kindOf(c.type);
  return `${ident(c.name)}${kind === 'number' || kind === 'string' ? '' : '::text'} AS "__id"`;
}

function selectList(t: FeatureTable, crs?: Crs): string {
  return [...(t.idColumn ? [idSql(t.idColumn)] : []), geometrySql(t, crs), ...t.properties.map(propertySql)].join(', ');
}

/** One page of features, and how many match. Throws Cql2Error for a filter that cannot be used. */
export async function readItems(t: FeatureTable, q: ItemsQuery): Promise<{ features: Feature[]; numberMatched: number }> {
  const params = new SqlParams();
  const where = whereOf(t, q, params);
  // Stable pages need a stable order: the feature id, else the row's physical position.
  const order = t.idColumn ? ident(t.idColumn.name) : 'ctid';
  const n = params.values.length;
  const [page, count] = await Promise.all([
    t.pool.query<Record<string, unknown>>({
      text: `SELECT ${selectList(t, q.crs)} FROM ${from(t)} ${where} ORDER BY ${order} LIMIT $${n + 1}::bigint OFFSET $${n + 2}::bigint`,
      values: [...params.values, q.limit, q.offset],
    }),
    t.pool.query<{ n: string }>({ text: `SELECT count(*) AS n FROM ${from(t)} ${where}`, values: params.values }),
  ]);
  return { features: page.rows.map((r) => toFeature(t, r)), numberMatched: Number(count.rows[0]?.n ?? 0) };
}

/** A feature of a table and its ETag (md5 of its stored row as text: the tag writes check, feature-writes.ts). */
export interface TaggedFeature {
  feature: Feature;
  etag: string;
}

/**
 * One feature by id, or undefined (also for an id that cannot be one of the column's values). The id is bound as
 * text and cast in SQL to the column's type, so every one-column key type round-trips exactly (a bigint above
 * 2^53 included, which a JavaScript number would round). The type is the catalogue's format_type, not input.
 */
export async function readItem(t: FeatureTable, featureId: string, crs?: Crs): Promise<TaggedFeature | undefined> {
  const idCol = t.idColumn;
  if (!idCol || !storableText(featureId)) return undefined;
  try {
    const { rows } = await t.pool.query<Record<string, unknown>>({
      text: `SELECT ${selectList(t, crs)}, md5(t::text) AS "__etag" FROM ${from(t)} AS t WHERE ${ident(idCol.name)} = $1::text::${idCol.type} LIMIT 1`,
      values: [featureId],
    });
    return rows[0] ? { feature: toFeature(t, rows[0]), etag: String(rows[0].__etag) } : undefined;
  } catch (err) {
    // The only value in the query is the id: a data exception (status 400 from the pool) says it is not a value
    // of the column's type ("abc" for a uuid), so there is no such feature.
    if (err instanceof TileUnavailableError && err.status === 400) return undefined;
    throw err;
  }
}

/**
 * The queryables of one layer of a file source as JSON Schema: the layer's served properties and its geometry.
 * A file source's collections each read one layer (feature-collections.ts): the source's own when it has one
 * layer, `{source}:{layer}` when it has several.
 */
export function fileQueryablesSchema(s: FileSource, layer: string, id: string, title: string): Record<string, unknown> {
  const props: Record<string, unknown> = {};
  for (const q of s.layerQueryables(layer)) props[q.name] = { title: q.name, ...JSON_SCHEMA_TYPE[q.kind] };
  return { $schema: 'https://json-schema.org/draft/2020-12/schema', $id: id, type: 'object', title, properties: props, additionalProperties: false };
}

/** A file feature as OGC API answers it, with `served`, the served properties of its layer. */
function fileFeature(served: readonly string[], f: FileFeature): Feature {
  // Null prototype, then spread (own data properties): a property named __proto__ stays a property.
  const properties: Record<string, unknown> = Object.create(null);
  for (const name of served) {
    // Readers leave missing values out; a feature lists every served property, null when missing (as PostGIS's do).
    properties[name] = Object.hasOwn(f.properties, name) ? f.properties[name] : null;
  }
  return { type: 'Feature', ...(f.id !== undefined ? { id: f.id } : {}), geometry: f.geometry, properties: { ...properties } };
}

/**
 * One page of the features of a layer of a file source and how many match; memory follows the page, not the file.
 * Conditions may name only that layer's properties (another layer's are unknown properties, 400).
 */
export function readFileItems(s: FileSource, layer: string, q: ItemsQuery): Promise<{ features: Feature[]; numberMatched: number }> {
  // One reading of the file from the queryables to the last feature, though a reload may replace it meanwhile.
  return s.onCurrentReading((gen) => readLayerItems(gen, layer, q));
}

async function readLayerItems(gen: Reading, layer: string, q: ItemsQuery): Promise<{ features: Feature[]; numberMatched: number }> {
  const all = gen.layerQueryables.get(layer) ?? [];
  const conditions: Expr[] = [];
  let box: [number, number, number, number] | undefined;
  if (q.bbox) {
    try {
      box = checkBbox(q.bbox);
    } catch (err) {
      if (err instanceof Cql2Error) throw new Cql2Error(err.detail, undefined, 'bbox');
      throw err;
    }
    conditions.push({ op: 's_intersects', left: { kind: 'property', name: GEOMETRY_QUERYABLE }, right: { kind: 'bbox', bbox: box } });
  }
  for (const [name, value] of q.equals) {
    const qa = all.find((x) => x.name === name);
    if (!qa || qa.kind === 'geometry') throw new Cql2Error(`unknown property ${JSON.stringify(name)}`, name, name);
    try {
      conditions.push({ op: 'compare', cmp: '=', left: { kind: 'property', name }, right: { kind: 'literal', value: equalsLiteral(qa, value) } });
    } catch (err) {
      if (err instanceof Cql2Error) throw new Cql2Error(err.detail, name, name);
      throw err;
    }
  }
  if (q.filter) conditions.push(q.filter);
  const keep = conditions.length ? compileFilter({ op: 'and', args: conditions }, all) : () => true;
  // The index is asked for the bbox's box; across the antimeridian (west above east) for every feature.
  const search = box && box[0] <= box[2] ? box : undefined;
  const served = gen.served.get(layer) ?? [];
  const page: Feature[] = [];
  let matched = 0;
  for await (const f of gen.reader.features(layer, search)) {
    if (!keep(f)) continue;
    if (matched >= q.offset && page.length < q.limit) page.push(fileFeature(served, f));
    matched++;
  }
  return { features: page, numberMatched: matched };
}

/** One feature of a layer of a file source by its id (a non-negative integer), or undefined. */
export async function readFileItem(s: FileSource, layer: string, featureId: string): Promise<Feature | undefined> {
  if (!/^\d{1,15}$/.test(featureId)) return undefined;
  const id = Number(featureId);
  return s.onCurrentReading(async (gen) => {
    for await (const f of gen.reader.features(layer, undefined)) if (f.id === id) return fileFeature(gen.served.get(layer) ?? [], f);
    return undefined;
  });
}
