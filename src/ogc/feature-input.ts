// A GeoJSON feature sent to be written (OGC API - Features Part 4, docs/editing.md), checked against the table it
// is written to before any SQL runs: the member `type`, the id, each property against its column (the name must be
// a writable column; the value must fit the column's type), and the geometry against the geometry column (its
// type, its dimension, every position a finite longitude/latitude in CRS84 range, lines and rings long enough,
// rings closed). A refusal names the member (`features[2].properties.rank`) and what was expected. What comes out
// is text for every column (the SQL casts it to the column's type from the catalogue), so no value of the request
// ever becomes SQL text.
import { storableText } from '../cql2/ast.js';
import type { ColumnInfo } from '../sources/postgres/discover.js';
import { CRS84_ENTRY, isLonLat, MERCATOR_HALF, type Crs } from './crs.js';
import { CRS84 } from './tms.js';

/** What a feature written to a table may hold: its id column, its writable columns and its geometry column. */
export interface WriteSchema {
  id?: ColumnInfo;
  /** The columns a feature's properties may set (the served properties but the id). */
  properties: ColumnInfo[];
  geometryColumn: string;
  /** The geometry column's `format_type`, e.g. `geometry(Point,4326)` or `geometry`. */
  geometryType: string;
}

/** A checked feature: its id as text (absent: none given), its geometry and every property given, as text or null. */
export interface FeatureInput {
  id?: string;
  /** The GeoJSON geometry as given (checked), or null. */
  geometry: Record<string, unknown> | null;
  /** Column name -> the value as text (cast in SQL), or null. Only the properties the feature carries. */
  values: Map<string, string | null>;
}

export interface InputRefusal {
  ok: false;
  /** Where in the body: `properties.rank`, `geometry.coordinates[0][3]`, `features[2].id`. */
  member: string;
  detail: string;
}

export type Checked<T> = { ok: true; value: T } | InputRefusal;

/** What a geometry column takes, from its `format_type`. */
export interface GeometryRule {
  /** The GeoJSON type (`Point`, `MultiPolygon`...), undefined: any. */
  type?: string;
  /** Positions carry a height (a Z column); undefined: either, as long as one geometry does not mix them. */
  z?: boolean;
  /** An M column (GeoJSON has no measure: such a column cannot be written). */
  m: boolean;
}

const GEOJSON_TYPES = ['Point', 'MultiPoint', 'LineString', 'MultiLineString', 'Polygon', 'MultiPolygon', 'GeometryCollection'];

/** The rule of a geometry column's `format_type`. */
export function geometryRule(formatType: string): GeometryRule {
  const m = /^geometry\(([A-Za-z]+?)(ZM|Z|M)?(?:,\s*-?\d+)?\)$/i.exec(formatType.trim());
  if (!m) return { m: false };
  const name = m[1].toLowerCase();
  const dims = (m[2] ?? '').toUpperCase();
  const type = GEOJSON_TYPES.find((t) => t.toLowerCase() === name);
  return { ...(type ? { type } : {}), z: dims.includes('Z'), m: dims.includes('M') };
}

const refuse = (member: string, detail: string): InputRefusal => ({ ok: false, member, detail });
const isObject = (v: unknown): v is Record<string, unknown> => v !== null && typeof v === 'object' && !Array.isArray(v);
const at = (prefix: string, name: string) => (prefix ? `${prefix}.${name}` : name);

const INT_RANGE: Record<string, [bigint, bigint]> = {
  smallint: [-32768n, 32767n],
  integer: [-2147483648n, 2147483647n],
  bigint: [-9223372036854775808n, 9223372036854775807n],
};

/** Whether text can be stored in a PostgreSQL text value (no U+0000, no lone surrogate). */
const storable = storableText;

/** A property's value as the text its column's type reads, or why it cannot be. */
export function columnValue(c: ColumnInfo, value: unknown): { text: string | null } | { error: string } {
  if (value === null) return { text: null };
  const type = c.type;
  const range = INT_RANGE[type];
  if (range) {
    const text = typeof value === 'number' && Number.isInteger(value) ? BigInt(value).toString() : typeof value === 'string' && type === 'bigint' && /^-?\d{1,19}$/.test(value) ? value : undefined;
    if (text === undefined) return { error: `${type === 'bigint' ? 'an integer (or a string of its digits)' : 'an integer'} for column type ${type}` };
    const n = BigInt(text);
    if (n < range[0] || n > range[1]) return { error: `an integer from ${range[0]} to ${range[1]} (column type ${type})` };
    return { text };
  }
  if (type === 'real' || type === 'double precision' || type.startsWith('numeric')) {
    if (typeof value === 'number' && Number.isFinite(value)) return { text: String(value) };
    if (typeof value === 'string' && type.startsWith('numeric') && /^-?\d{1,1000}(\.\d{1,1000})?$/.test(value)) return { text: value };
    return { error: `a finite number${type.startsWith('numeric') ? ' (or a string of its decimal digits)' : ''} for column type ${type}` };
  }
  if (type === 'boolean') return typeof value === 'boolean' ? { text: String(value) } : { error: 'true or false (column type boolean)' };
  if (type === 'json' || type === 'jsonb') {
    const text = JSON.stringify(value);
    return storable(text) || type === 'json' ? { text } : { error: 'JSON without U+0000 (column type jsonb)' };
  }
  if (typeof value !== 'string') return { error: `a string (column type ${type})` };
  if (!storable(value)) return { error: 'a string without U+0000 or unpaired surrogates' };
  const length = /^(character varying|character)\((\d+)\)$/.exec(type);
  if (length && [...value].length > Number(length[2])) return { error: `a string of at most ${length[2]} characters (column type ${type})` };
  return { text: value };
}

/** Deepest nesting of geometry collections taken. */
const MAX_COLLECTION_DEPTH = 8;

/** How a CRS is named in a refusal, with its axis order. */
function crsWords(crs: Crs): string {
  if (crs.uri === CRS84) return 'CRS84: longitude, latitude';
  if (isLonLat(crs)) return 'EPSG:4326: latitude, longitude';
  const code = crs.uri.split('/').pop();
  return crs.swap ? `EPSG:${code}: northing, easting` : `EPSG:${code}: easting, northing`;
}

/**
 * Checks positions in the CRS they are given in (Content-Crs, default CRS84): longitude/latitude ranges for CRS84
 * and EPSG:4326 (in each one's axis order), EPSG:3857's square for web mercator, finite numbers for a table's own
 * CRS (listed when GDAL knows its SRID, src/ogc/crs.ts; PostGIS stores them as given).
 */
class GeometryChecker {
  dims: number | undefined;
  constructor(
    private readonly rule: GeometryRule,
    private readonly crs: Crs,
  ) {}

  position(p: unknown, member: string): InputRefusal | undefined {
    const axes = isLonLat(this.crs) ? (this.crs.swap ? 'latitude, longitude' : 'longitude, latitude') : this.crs.swap ? 'northing, easting' : 'easting, northing';
    if (!Array.isArray(p) || p.length < 2 || p.length > 3 || !p.every((n) => typeof n === 'number' && Number.isFinite(n))) return refuse(member, `a position is an array of 2 or 3 finite numbers [${axes}, height]`);
    if (this.dims === undefined) this.dims = p.length;
    else if (this.dims !== p.length) return refuse(member, 'every position of a geometry has the same number of coordinates');
    const [x, y] = this.crs.swap ? [p[1] as number, p[0] as number] : (p as number[]);
    if (isLonLat(this.crs)) {
      if (x < -180 || x > 180) return refuse(member, `longitude ${x} is outside -180..180 (coordinates are ${crsWords(this.crs)})`);
      if (y < -90 || y > 90) return refuse(member, `latitude ${y} is outside -90..90 (coordinates are ${crsWords(this.crs)})`);
    } else if (this.crs.srid === 3857) {
      if (Math.abs(x) > MERCATOR_HALF || Math.abs(y) > MERCATOR_HALF) return refuse(member, `${x}, ${y} is outside web mercator's square of ±${MERCATOR_HALF} metres (coordinates are ${crsWords(this.crs)})`);
    }
    return undefined;
  }

  positions(ps: unknown, member: string, min: number, closed: boolean): InputRefusal | undefined {
    if (!Array.isArray(ps)) return refuse(member, 'an array of positions');
    if (ps.length < min) return refuse(member, `at least ${min} positions`);
    for (let i = 0; i < ps.length; i++) {
      const bad = this.position(ps[i], `${member}[${i}]`);
      if (bad) return bad;
    }
    if (closed && !(ps[0] as number[]).every((n, i) => n === (ps[ps.length - 1] as number[])[i])) return refuse(member, 'a ring ends where it starts (its first and last positions are equal)');
    return undefined;
  }

  /** Arrays nested `depth` deep around positions (1: a list of positions). */
  nested(v: unknown, member: string, depth: number, min: number, closed: boolean): InputRefusal | undefined {
    if (depth === 1) return this.positions(v, member, min, closed);
    if (!Array.isArray(v)) return refuse(member, 'an array');
    for (let i = 0; i < v.length; i++) {
      const bad = this.nested(v[i], `${member}[${i}]`, depth - 1, min, closed);
      if (bad) return bad;
    }
    return undefined;
  }

  geometry(g: unknown, member: string, depth: number): InputRefusal | undefined {
    if (!isObject(g)) return refuse(member, 'a GeoJSON geometry object (or null)');
    const type = g.type;
    if (typeof type !== 'string' || !GEOJSON_TYPES.includes(type)) return refuse(at(member, 'type'), `one of ${GEOJSON_TYPES.join(', ')}`);
    if (type === 'GeometryCollection') {
      if (depth >= MAX_COLLECTION_DEPTH) return refuse(member, `geometry collections nested at most ${MAX_COLLECTION_DEPTH} deep`);
      if (!Array.isArray(g.geometries)) return refuse(at(member, 'geometries'), 'an array of geometries');
      for (let i = 0; i < g.geometries.length; i++) {
        const bad = this.geometry(g.geometries[i], `${member}.geometries[${i}]`, depth + 1);
        if (bad) return bad;
      }
      return undefined;
    }
    const c = at(member, 'coordinates');
    switch (type) {
      case 'Point':
        return this.position(g.coordinates, c);
      case 'MultiPoint':
        return this.positions(g.coordinates, c, 0, false);
      case 'LineString':
        return this.positions(g.coordinates, c, 2, false);
      case 'MultiLineString':
        return this.nested(g.coordinates, c, 2, 2, false);
      case 'Polygon':
        return this.nested(g.coordinates, c, 2, 4, true);
      default:
        return this.nested(g.coordinates, c, 3, 4, true);
    }
  }
}

/** Checks a geometry (in `crs`) against a column's rule; null passes (a NOT NULL column refuses it in the database, 409). */
export function checkGeometry(g: unknown, rule: GeometryRule, member = 'geometry', crs: Crs = CRS84_ENTRY): InputRefusal | undefined {
  if (g === null) return undefined;
  if (rule.m) return refuse(member, 'the geometry column has an M dimension, which GeoJSON cannot carry: it is not writable here');
  const checker = new GeometryChecker(rule, crs);
  const bad = checker.geometry(g, member, 0);
  if (bad) return bad;
  const type = (g as { type: string }).type;
  // A single geometry goes into a column of its multi type (ST_Multi in the SQL), as GIS clients expect.
  if (rule.type && rule.type !== 'GeometryCollection' && type !== rule.type && `Multi${type}` !== rule.type) return refuse(at(member, 'type'), `the column takes ${rule.type}${rule.type.startsWith('Multi') ? ` (or ${rule.type.slice(5)})` : ''}, not ${type}`);
  if (rule.type === 'GeometryCollection' && type !== 'GeometryCollection') return refuse(at(member, 'type'), `the column takes GeometryCollection, not ${type}`);
  if (checker.dims !== undefined && rule.z !== undefined && rule.type !== undefined && (checker.dims === 3) !== rule.z) {
    return refuse(member, rule.z ? 'the column is 3D: every position needs a height' : 'the column is 2D: positions have two coordinates, without a height');
  }
  return undefined;
}

/** A feature id given in a body: a string or an integer, as text. */
function idText(v: unknown): string | undefined {
  if (typeof v === 'string' && v.length > 0 && v.length <= 1024 && storable(v)) return v;
  if (typeof v === 'number' && Number.isSafeInteger(v)) return String(v);
  return undefined;
}

/**
 * Checks one feature of a body against `schema`. `prefix` names it in a collection (`features[3]`); a feature's
 * id is taken from `id`, or from the id column's property, which must then agree.
 */
export function checkFeature(doc: unknown, schema: WriteSchema, prefix = '', crs: Crs = CRS84_ENTRY): Checked<FeatureInput> {
  if (!isObject(doc)) return refuse(prefix || '(body)', 'a GeoJSON Feature object');
  if (doc.type !== 'Feature') return refuse(at(prefix, 'type'), `"Feature"${prefix ? '' : ' (or "FeatureCollection" when creating several)'}`);
  let id: string | undefined;
  if (doc.id !== undefined && doc.id !== null) {
    id = idText(doc.id);
    if (id === undefined) return refuse(at(prefix, 'id'), 'a string or an integer');
  }
  const props = doc.properties ?? null;
  if (props !== null && !isObject(props)) return refuse(at(prefix, 'properties'), 'an object (or null)');
  const values = new Map<string, string | null>();
  const columns = new Map(schema.properties.map((c) => [c.name, c]));
  for (const name of Object.keys(props ?? {})) {
    const value = (props as Record<string, unknown>)[name];
    const member = `${at(prefix, 'properties')}.${name}`;
    if (schema.id && name === schema.id.name) {
      // A null id column is no id: a client listing every field sends it so for a feature not created yet (QGIS).
      if (value === null) continue;
      const given = idText(value);
      if (given === undefined) return refuse(member, 'the feature id: a string or an integer');
      if (id !== undefined && id !== given) return refuse(member, `the id column's value "${given}" differs from the feature's id "${id}"`);
      id = given;
      continue;
    }
    const c = columns.get(name);
    if (!c) return refuse(member, `no writable column "${name}" (the collection's properties: ${[...columns.keys()].join(', ') || 'none'})`);
    const v = columnValue(c, value);
    if ('error' in v) return refuse(member, `expected ${v.error}`);
    values.set(name, v.text);
  }
  if (!('geometry' in doc)) return refuse(at(prefix, 'geometry'), 'a geometry (or null): every GeoJSON Feature has the member');
  const bad = checkGeometry(doc.geometry, geometryRule(schema.geometryType), at(prefix, 'geometry'), crs);
  if (bad) return bad;
  const geometry = (doc.geometry as Record<string, unknown> | null) ?? null;
  return { ok: true, value: { ...(id !== undefined ? { id } : {}), geometry: geometry && crs.swap ? swapAxes(geometry) : geometry, values } };
}

/** A checked geometry with the first two coordinates of every position swapped: PostGIS's x, y order. */
function swapAxes(g: Record<string, unknown>): Record<string, unknown> {
  const swap = (c: unknown): unknown => (Array.isArray(c) && typeof c[0] === 'number' ? [c[1], c[0], ...c.slice(2)] : Array.isArray(c) ? c.map(swap) : c);
  if (Array.isArray(g.geometries)) return { ...g, geometries: g.geometries.map((x) => swapAxes(x as Record<string, unknown>)) };
  return { ...g, coordinates: swap(g.coordinates) };
}

/** The features of a POST body (coordinates in `crs`): one Feature, or a FeatureCollection written as one transaction. */
export function checkFeatures(doc: unknown, schema: WriteSchema, maxFeatures: number, crs: Crs = CRS84_ENTRY): Checked<{ features: FeatureInput[]; collection: boolean }> {
  if (isObject(doc) && doc.type === 'FeatureCollection') {
    if (!Array.isArray(doc.features)) return refuse('features', 'an array of GeoJSON Features');
    if (doc.features.length === 0) return refuse('features', 'at least one feature');
    if (doc.features.length > maxFeatures) return refuse('features', `at most ${maxFeatures} features in one request`);
    const out: FeatureInput[] = [];
    for (let i = 0; i < doc.features.length; i++) {
      const f = checkFeature(doc.features[i], schema, `features[${i}]`, crs);
      if (!f.ok) return f;
      out.push(f.value);
    }
    return { ok: true, value: { features: out, collection: true } };
  }
  const f = checkFeature(doc, schema, '', crs);
  return f.ok ? { ok: true, value: { features: [f.value], collection: false } } : f;
}
