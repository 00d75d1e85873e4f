// The in-memory CQL2 evaluator (src/cql2/evaluate.ts) against PostgreSQL + PostGIS running the SQL translation
// (src/cql2/sql.ts) of the same filter over the same rows: for random filters from the grammar's comparisons,
// AND/OR/NOT, LIKE, IN, BETWEEN, IS NULL and S_INTERSECTS with boxes and geometries, the evaluator keeps exactly
// the rows the database keeps, or refuses the filter with the same Cql2Error. The rows hold what makes SQL differ
// from naive JavaScript: missing values (three-valued logic), text past U+FFFF and in U+E000..U+FFFF (code-point
// order), LIKE's metacharacters in the data, and polygons with holes.
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import pg from 'pg';
import type { Geometry as GeoJsonGeometry } from 'geojson';
import { Cql2Error, type Expr, type Geometry, type Scalar } from '../src/cql2/ast.js';
import { compileFilter, type EvalFeature } from '../src/cql2/evaluate.js';
import { filterSql, type Queryable } from '../src/cql2/sql.js';
import fc from './helpers/fast-check.js';
import { startPostgres, type PostgresCluster } from './helpers/postgres.js';

interface Row extends EvalFeature {
  id: number;
}

const QUERYABLES: Queryable[] = [
  { name: 'name', kind: 'string' },
  { name: 'kind', kind: 'string' },
  { name: 'score', kind: 'number' },
  { name: 'rank', kind: 'number' },
  { name: 'active', kind: 'boolean' },
  { name: 'geom', kind: 'geometry', srid: 4326 },
];

/** Characters that tell code-point order, LIKE's escapes and case apart. */
const CHARS = ['a', 'b', 'B', 'é', '%', '_', '\\', ' ', '😀', '\uE000', '\uFFFD', 'ß'];
const text = fc.string({ unit: fc.constantFrom(...CHARS), maxLength: 4 });
/**
 * Coordinates on a grid of whole multiples of 6, so that every vertex, centre and hole (below) is exact in binary
 * and touching boundaries are decided exactly on both sides (GEOS's predicates are exact; so are these small sums).
 */
const coord = fc.integer({ min: -10, max: 10 }).map((v) => v * 6);
const point = fc.tuple(coord, coord);

function triangle(a: number[], b: number[], c: number[]): number[][] {
  return [a, b, c, a];
}

/** A triangle, sometimes with a hole (the triangle shrunk toward its centre): valid polygons only. */
const polygonIn = (p: fc.Arbitrary<[number, number]>) => fc.tuple(p, p, p, fc.boolean()).filter(([a, b, c]) => (b[0] - a[0]) * (c[1] - a[1]) - (b[1] - a[1]) * (c[0] - a[0]) !== 0).map(([a, b, c, hole]) => {
  const outer = triangle(a, b, c);
  if (!hole) return [outer];
  const m = [(a[0] + b[0] + c[0]) / 3, (a[1] + b[1] + c[1]) / 3];
  const shrink = (p: number[]) => [m[0] + (p[0] - m[0]) * 0.5, m[1] + (p[1] - m[1]) * 0.5];
  return [outer, triangle(shrink(a), shrink(c), shrink(b))];
});
const polygon = polygonIn(point);
/** A valid multipolygon: one triangle west of x = 0, one east of it. */
const side = (sign: number) => fc.tuple(fc.integer({ min: 1, max: 10 }).map((v) => sign * v * 6), coord);
const geometry: fc.Arbitrary<Geometry> = fc.oneof(
  point.map((p) => ({ type: 'Point' as const, coordinates: p })),
  fc.array(point, { minLength: 2, maxLength: 4 }).map((c) => ({ type: 'LineString' as const, coordinates: c })),
  polygon.map((c) => ({ type: 'Polygon' as const, coordinates: c })),
  fc.tuple(polygonIn(side(-1)), polygonIn(side(1))).map((c) => ({ type: 'MultiPolygon' as const, coordinates: c })),
);

const row = fc.record({
  name: fc.option(text, { freq: 5 }),
  kind: fc.option(fc.constantFrom('park', 'cafe', 'shop'), { freq: 4 }),
  score: fc.option(fc.double({ min: -100, max: 100, noNaN: true }), { freq: 5 }),
  rank: fc.integer({ min: 0, max: 5 }),
  active: fc.option(fc.boolean(), { freq: 4 }),
  geom: fc.option(geometry, { freq: 10 }),
});

let db: PostgresCluster;
let client: pg.Client;
let rows: Row[];

before(async () => {
  db = await startPostgres([]);
  client = new pg.Client({ connectionString: db.url });
  await client.connect();
  const made = fc.sample(row, { numRuns: 250, seed: 36 });
  rows = made.map((r, i) => ({ id: i + 1, properties: { name: r.name, kind: r.kind, score: r.score, rank: r.rank, active: r.active }, geometry: r.geom as GeoJsonGeometry | null }));
  await client.query('CREATE TABLE t (id integer PRIMARY KEY, name text, kind text, score double precision, rank integer, active boolean, geom geometry(Geometry, 4326))');
  for (const r of rows) {
    const p = r.properties;
    await client.query('INSERT INTO t VALUES ($1, $2, $3, $4, $5, $6, ST_SetSRID(ST_GeomFromGeoJSON($7), 4326))', [r.id, p.name, p.kind, p.score, p.rank, p.active, r.geometry ? JSON.stringify(r.geometry) : null]);
  }
});

after(async () => {
  await client?.end();
  db?.destroy();
});

const prop = (name: string): Scalar => ({ kind: 'property', name });
const lit = (value: string | number | boolean): Scalar => ({ kind: 'literal', value });

/** A scalar of one kind: a property of that kind or a literal. */
const scalarOf = (kind: 'string' | 'number' | 'boolean'): fc.Arbitrary<Scalar> => {
  const props = kind === 'string' ? ['name', 'kind'] : kind === 'number' ? ['score', 'rank'] : ['active'];
  const literal = kind === 'string' ? fc.oneof(text, fc.constantFrom('park', 'cafe')) : kind === 'number' ? fc.oneof(fc.integer({ min: -1, max: 6 }), fc.double({ min: -100, max: 100, noNaN: true })) : fc.boolean();
  return fc.oneof({ weight: 2, arbitrary: fc.constantFrom(...props).map(prop) }, { weight: 1, arbitrary: literal.map(lit) });
};
const kindArb = fc.constantFrom('string' as const, 'number' as const, 'boolean' as const);
/** Boxes with an area: ST_MakeEnvelope of a zero-width box is a collapsed polygon, which GEOS does not read as the segment or point it covers. */
const bbox = fc.tuple(coord, coord, coord, coord).filter(([a, b, c, d]) => a !== c && b !== d).map(([a, b, c, d]) => [Math.min(a, c), Math.min(b, d), Math.max(a, c), Math.max(b, d)] as [number, number, number, number]);

const leaf: fc.Arbitrary<Expr> = fc.oneof(
  kindArb.chain((k) =>
    fc.record({ cmp: k === 'boolean' ? fc.constantFrom('=' as const, '<>' as const) : fc.constantFrom('=' as const, '<>' as const, '<' as const, '<=' as const, '>' as const, '>=' as const), left: scalarOf(k), right: scalarOf(k) }).map((c) => ({ op: 'compare' as const, ...c })),
  ),
  fc.record({ value: scalarOf('string'), pattern: text.map(lit) }).map((c) => ({ op: 'like' as const, ...c })),
  fc.constantFrom('string' as const, 'number' as const).chain((k) => fc.record({ value: scalarOf(k), low: scalarOf(k), high: scalarOf(k) }).map((c) => ({ op: 'between' as const, ...c }))),
  kindArb.chain((k) => fc.record({ value: scalarOf(k), list: fc.array(scalarOf(k), { minLength: 1, maxLength: 3 }) }).map((c) => ({ op: 'in' as const, ...c }))),
  fc.constantFrom('name', 'kind', 'score', 'active', 'geom').map((n) => ({ op: 'isNull' as const, value: prop(n) })),
  bbox.map((b) => ({ op: 's_intersects' as const, left: { kind: 'property' as const, name: 'geom' }, right: { kind: 'bbox' as const, bbox: b } })),
  geometry.map((g) => ({ op: 's_intersects' as const, left: { kind: 'geometry' as const, geometry: g }, right: { kind: 'property' as const, name: 'geom' } })),
  fc.boolean().map((value) => ({ op: 'literal' as const, value })),
);

const expr: fc.Arbitrary<Expr> = fc.letrec<{ e: Expr }>((tie) => ({
  e: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    leaf,
    fc.record({ op: fc.constantFrom('and' as const, 'or' as const), args: fc.array(tie('e'), { minLength: 2, maxLength: 3 }) }),
    tie('e').map((arg) => ({ op: 'not' as const, arg })),
  ),
})).e;

/** Ids the database keeps, or the Cql2Error the translation refuses the filter with. */
async function inDatabase(e: Expr): Promise<number[] | string> {
  let q;
  try {
    q = filterSql(e, QUERYABLES);
  } catch (err) {
    if (err instanceof Cql2Error) return err.message;
    throw err;
  }
  const { rows: found } = await client.query<{ id: number }>(`SELECT id FROM t WHERE ${q.sql} ORDER BY id`, q.values);
  return found.map((r) => r.id);
}

function inMemory(e: Expr): number[] | string {
  let keep;
  try {
    keep = compileFilter(e, QUERYABLES);
  } catch (err) {
    if (err instanceof Cql2Error) return err.message;
    throw err;
  }
  return rows.filter((r) => keep(r)).map((r) => r.id);
}

test('the evaluator keeps the rows PostGIS keeps for the same filter (or refuses it with the same words)', async () => {
  let selective = 0;
  await fc.assert(
    fc.asyncProperty(expr, async (e) => {
      const want = await inDatabase(e);
      assert.deepEqual(inMemory(e), want, JSON.stringify(e));
      if (Array.isArray(want) && want.length > 0 && want.length < rows.length) selective++;
    }),
    { numRuns: 600 },
  );
  // The filters must tell rows apart, not just keep all or none.
  assert.ok(selective > 150, `${selective} of 600 filters kept some rows but not all`);
});

test('each kind of condition alone, over every row: LIKE, code-point order, IN and BETWEEN with missing values, boxes', async () => {
  const cases: Expr[] = [
    { op: 'like', value: prop('name'), pattern: lit('%\\%%') },
    { op: 'like', value: prop('name'), pattern: lit('_') },
    { op: 'compare', cmp: '<', left: prop('name'), right: lit('\uFFFD') },
    { op: 'compare', cmp: '>', left: prop('name'), right: lit('😀') },
    { op: 'in', value: prop('kind'), list: [lit('park'), prop('name')] },
    { op: 'between', value: prop('score'), low: prop('rank'), high: lit(50) },
    { op: 'not', arg: { op: 'compare', cmp: '=', left: prop('active'), right: lit(true) } },
    { op: 's_intersects', left: { kind: 'property', name: 'geom' }, right: { kind: 'bbox', bbox: [-12, -12, 12, 12] } },
    { op: 'like', value: prop('name'), pattern: lit('a\\') },
  ];
  for (const e of cases) assert.deepEqual(inMemory(e), await inDatabase(e), JSON.stringify(e));
});
