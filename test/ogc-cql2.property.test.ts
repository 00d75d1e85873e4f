// The CQL2 parsers (text and JSON) and the OGC Accept negotiation as pure functions, under generated input: a
// filter either parses or is refused with a Cql2Error naming what is wrong (never another exception, never a
// stack overflow), the text and JSON encodings of one generated tree parse to the same tree, and the SQL of any
// parsed filter binds every literal (none appears in the SQL text).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from './helpers/fast-check.js';
import { Cql2Error, storableText, type Expr, type Scalar } from '../src/cql2/ast.js';
import { parseCql2Json } from '../src/cql2/json.js';
import { parseCql2Text } from '../src/cql2/text.js';
import { filterSql, type Queryable } from '../src/cql2/sql.js';
import { prefersHtml } from '../src/http/routes/ogc/negotiate.js';

const QUERYABLES: Queryable[] = [
  { name: 'name', kind: 'string' },
  { name: 'rank', kind: 'number' },
  { name: 'open', kind: 'boolean' },
  { name: 'geom', kind: 'geometry', srid: 4326 },
];

/** Runs `f`; a Cql2Error is a refusal (returned), anything else fails the property. */
function refusedOrParsed<T>(f: () => T): T | Cql2Error {
  try {
    return f();
  } catch (err) {
    if (err instanceof Cql2Error) {
      assert.ok(err.detail.length > 0);
      return err;
    }
    throw err;
  }
}

const TOKENS = ['name', 'rank', 'open', 'geom', '"na""me"', "'it''s'", "'%_\\'", '=', '<>', '<', '<=', '>', '>=', '(', ')', ',', 'AND', 'or', 'NOT', 'LIKE', 'BETWEEN', 'IN', 'IS', 'NULL', 'TRUE', 'false', 'S_INTERSECTS', 'BBOX', 'POINT', 'POLYGON', 'MULTIPOINT', '1', '-2.5', '1e400', '.5', ';', '--', '/*', '日本', '\u0000', ' '];

test('property: any text is parsed or refused with a Cql2Error; what parses translates to SQL with every literal bound', () => {
  fc.assert(
    fc.property(fc.oneof(fc.array(fc.constantFrom(...TOKENS), { maxLength: 25 }).map((t) => t.join(' ')), fc.string({ unit: 'binary', maxLength: 60 })), (src) => {
      const parsed = refusedOrParsed(() => parseCql2Text(src));
      if (parsed instanceof Cql2Error) return;
      const sql = refusedOrParsed(() => filterSql(parsed, QUERYABLES));
      if (sql instanceof Cql2Error) return;
      assert.doesNotMatch(sql.sql, /'/, `no quoted literal in ${sql.sql}`);
    }),
    { numRuns: 3000 },
  );
});

test('property: any JSON is parsed or refused with a Cql2Error', () => {
  fc.assert(
    fc.property(fc.oneof(fc.json({ maxDepth: 6 }), fc.string({ maxLength: 40 })), (src) => {
      const parsed = refusedOrParsed(() => parseCql2Json(src));
      if (!(parsed instanceof Cql2Error)) refusedOrParsed(() => filterSql(parsed, QUERYABLES));
    }),
    { numRuns: 2000 },
  );
});

test('deep nesting is refused, not a stack overflow', () => {
  for (const src of ['('.repeat(5000) + 'rank = 1' + ')'.repeat(5000), 'NOT '.repeat(3000) + 'rank = 1', `S_INTERSECTS(geom, MULTIPOLYGON(${'('.repeat(3000)}`]) {
    const r = refusedOrParsed(() => parseCql2Text(src));
    assert.ok(r instanceof Cql2Error, src.slice(0, 40));
  }
  const json = '{"op":"not","args":['.repeat(500) + 'true' + ']}'.repeat(500);
  assert.ok(refusedOrParsed(() => parseCql2Json(json)) instanceof Cql2Error);
});

// One tree, two encodings.
const scalarProp = fc.constantFrom('name', 'rank', 'open', 'weird "name"').map((name): Scalar => ({ kind: 'property', name }));
const scalarLit = fc.oneof(fc.string({ maxLength: 8 }).filter(storableText), fc.integer({ min: -1000, max: 1000 }), fc.double({ noNaN: true, noDefaultInfinity: true }), fc.boolean()).map((value): Scalar => ({ kind: 'literal', value }));
const scalar = fc.oneof(scalarProp, scalarLit);
const tree: fc.Arbitrary<Expr> = fc.letrec<{ e: Expr }>((tie) => ({
  e: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    fc.record({ op: fc.constant('compare' as const), cmp: fc.constantFrom('=', '<>', '<', '<=', '>', '>=' as const), left: scalar, right: scalar }),
    fc.record({ op: fc.constant('like' as const), value: scalar, pattern: scalar }),
    fc.record({ op: fc.constant('between' as const), value: scalar, low: scalar, high: scalar }),
    fc.record({ op: fc.constant('in' as const), value: scalar, list: fc.array(scalar, { minLength: 1, maxLength: 3 }) }),
    fc.record({ op: fc.constant('isNull' as const), value: scalarProp }),
    fc.record({ op: fc.constant('s_intersects' as const), left: fc.constant({ kind: 'property' as const, name: 'geom' }), right: fc.tuple(fc.integer({ min: -180, max: 0 }), fc.integer({ min: -90, max: 0 }), fc.integer({ min: 0, max: 180 }), fc.integer({ min: 0, max: 90 })).map((bbox) => ({ kind: 'bbox' as const, bbox })) }),
    fc.record({ op: fc.constantFrom('and', 'or' as const), args: fc.array(tie('e'), { minLength: 2, maxLength: 3 }) }),
    fc.record({ op: fc.constant('not' as const), arg: tie('e') }),
  ),
})).e;

const textOf = (s: Scalar) =>
  s.kind === 'property' ? `"${s.name.replace(/"/g, '""')}"` : typeof s.value === 'string' ? `'${s.value.replace(/'/g, "''")}'` : typeof s.value === 'boolean' ? String(s.value).toUpperCase() : Object.is(s.value, -0) ? '0' : String(s.value);
function toText(e: Expr): string {
  switch (e.op) {
    case 'and':
    case 'or':
      return `(${e.args.map(toText).join(` ${e.op} `)})`;
    case 'not':
      return `NOT (${toText(e.arg)})`;
    case 'literal':
      return String(e.value);
    case 'compare':
      return `${textOf(e.left)} ${e.cmp} ${textOf(e.right)}`;
    case 'like':
      return `${textOf(e.value)} LIKE ${textOf(e.pattern)}`;
    case 'between':
      return `${textOf(e.value)} BETWEEN ${textOf(e.low)} AND ${textOf(e.high)}`;
    case 'in':
      return `${textOf(e.value)} IN (${e.list.map(textOf).join(',')})`;
    case 'isNull':
      return `${textOf(e.value)} IS NULL`;
    case 's_intersects':
      return `S_INTERSECTS(geom, BBOX(${(e.right as { bbox: number[] }).bbox.join(',')}))`;
  }
}
const jsonOf = (s: Scalar) => (s.kind === 'property' ? { property: s.name } : Object.is(s.value, -0) ? 0 : s.value);
function toJson(e: Expr): unknown {
  switch (e.op) {
    case 'and':
    case 'or':
      return { op: e.op, args: e.args.map(toJson) };
    case 'not':
      return { op: 'not', args: [toJson(e.arg)] };
    case 'literal':
      return e.value;
    case 'compare':
      return { op: e.cmp, args: [jsonOf(e.left), jsonOf(e.right)] };
    case 'like':
      return { op: 'like', args: [jsonOf(e.value), jsonOf(e.pattern)] };
    case 'between':
      return { op: 'between', args: [jsonOf(e.value), jsonOf(e.low), jsonOf(e.high)] };
    case 'in':
      return { op: 'in', args: [jsonOf(e.value), e.list.map(jsonOf)] };
    case 'isNull':
      return { op: 'isNull', args: [jsonOf(e.value)] };
    case 's_intersects':
      return { op: 's_intersects', args: [{ property: 'geom' }, { bbox: (e.right as { bbox: number[] }).bbox }] };
  }
}
/** -0 and 0 are one number to a filter. */
const normal = (e: Expr) => JSON.parse(JSON.stringify(e));

test('property: the text and JSON encodings of a tree parse back to that tree', () => {
  fc.assert(
    fc.property(tree, (e) => {
      assert.deepEqual(parseCql2Text(toText(e)), normal(e), toText(e));
      assert.deepEqual(parseCql2Json(JSON.stringify(toJson(e))), normal(e));
    }),
    { numRuns: 1500 },
  );
});

test('property: Accept negotiation never throws; HTML only when text/html outranks JSON', () => {
  const range = fc.constantFrom('text/html', 'application/json', 'application/geo+json', '*/*', 'text/*', 'application/*', 'image/png', '');
  const q = fc.option(fc.constantFrom('0', '0.5', '1', '0.9', 'x', ''), { nil: undefined });
  fc.assert(
    fc.property(fc.array(fc.tuple(range, q), { maxLength: 5 }), fc.string({ maxLength: 30 }), (parts, junk) => {
      const accept = parts.map(([r, qv]) => (qv === undefined ? r : `${r};q=${qv}`)).join(', ');
      const html = prefersHtml(accept, ['application/json']);
      if (html) assert.ok(/text\/(html|\*)|\*\/\*/.test(accept), accept);
      if (!accept.includes('html') && !accept.includes('text/*') && !accept.includes('*/*')) assert.equal(html, false, accept);
      prefersHtml(junk, ['application/json']);
    }),
    { numRuns: 2000 },
  );
  assert.equal(prefersHtml('text/html,application/xhtml+xml,*/*;q=0.8', ['application/json']), true);
  assert.equal(prefersHtml('application/json, text/html', ['application/json']), false);
  assert.equal(prefersHtml(undefined, ['application/json']), false);
});
