// The filter tree of ./ast.ts evaluated in memory over a feature, for sources that are not databases (data files).
// It keeps exactly the features the SQL of ./sql.ts keeps in PostgreSQL: the same type checks first (a filter the
// database would refuse is refused here with the same Cql2Error), then SQL's three-valued logic (a comparison with a
// missing value is unknown, and a feature is kept only when the whole filter is true), text ordered by code point
// (COLLATE "C"), LIKE with `%`, `_` and `\` escapes, and S_INTERSECTS as ST_Intersects on longitude/latitude.
import type { Geometry as GeoJsonGeometry } from 'geojson';
import type { Expr, Literal, Scalar, Spatial } from './ast.js';
import { boxPolygon, geometriesIntersect } from './intersects.js';
import { filterSql, type Queryable } from './sql.js';

/** What a filter reads of a feature: its properties (missing ones are null) and its geometry. */
export interface EvalFeature {
  properties: Readonly<Record<string, Literal | null | undefined>>;
  geometry: GeoJsonGeometry | null;
}

/** SQL's truth values: true, false, or unknown (null). */
type Truth = boolean | null;
type Value = Literal | null;

/** Code-point order of two strings (UTF-16 order differs past U+D7FF: surrogates sort above U+E000..U+FFFF here). */
export function compareCodePoints(a: string, b: string): number {
  const n = Math.min(a.length, b.length);
  for (let i = 0; i < n; i++) {
    let x = a.charCodeAt(i);
    let y = b.charCodeAt(i);
    if (x === y) continue;
    if (x >= 0xd800 && y >= 0xd800) {
      x = x >= 0xe000 ? x - 0x800 : x + 0x2000;
      y = y >= 0xe000 ? y - 0x800 : y + 0x2000;
    }
    return x - y;
  }
  return a.length - b.length;
}

function order(a: Literal, b: Literal): number {
  if (typeof a === 'string' && typeof b === 'string') return compareCodePoints(a, b);
  if (typeof a === 'number' && typeof b === 'number') return a < b ? -1 : a > b ? 1 : 0;
  // Booleans are only compared with = and <> (the type check refuses ordering them): false < true as in SQL.
  return Number(a) - Number(b);
}

/** A LIKE pattern as a regular expression over code points: `%` any run, `_` one character, `\x` the character x. */
export function likePattern(pattern: string): RegExp {
  let re = '';
  const chars = [...pattern];
  for (let i = 0; i < chars.length; i++) {
    const c = chars[i];
    if (c === '\\' && i + 1 < chars.length) re += escapeRe(chars[++i]);
    else if (c === '%') re += '.*';
    else if (c === '_') re += '.';
    else re += escapeRe(c);
  }
  return new RegExp(`^${re}$`, 'su');
}

const escapeRe = (c: string) => c.replace(/[\\^$.*+?()[\]{}|/-]/g, '\\$&');

const and = (a: Truth, b: Truth): Truth => (a === false || b === false ? false : a === null || b === null ? null : true);
const or = (a: Truth, b: Truth): Truth => (a === true || b === true ? true : a === null || b === null ? null : false);

function compare(cmp: string, l: Value, r: Value): Truth {
  if (l === null || r === null) return null;
  const o = order(l, r);
  switch (cmp) {
    case '=':
      return o === 0;
    case '<>':
      return o !== 0;
    case '<':
      return o < 0;
    case '<=':
      return o <= 0;
    case '>':
      return o > 0;
    default:
      return o >= 0;
  }
}

export type Predicate = (f: EvalFeature) => boolean;

/**
 * A filter as a predicate over features with these queryables. Throws Cql2Error where the SQL translation would
 * (an unknown property, a comparison of a number with a string, a LIKE pattern ending in an escape).
 */
export function compileFilter(e: Expr, queryables: readonly Queryable[]): Predicate {
  // The SQL translation is the type checker: what it refuses is refused here with the same words.
  filterSql(e, queryables);
  const geometryNames = new Set(queryables.filter((q) => q.kind === 'geometry').map((q) => q.name));
  const likes = new Map<string, RegExp>();
  // Own properties only: a feature without a property named like one of Object.prototype's (`__proto__`) lacks it.
  const read = (f: EvalFeature, name: string): Value => (Object.hasOwn(f.properties, name) ? (f.properties[name] ?? null) : null);
  const value = (s: Scalar, f: EvalFeature): Value => (s.kind === 'literal' ? s.value : read(f, s.name));
  const spatial = (s: Spatial, f: EvalFeature): GeoJsonGeometry[] | null => {
    if (s.kind === 'property') return f.geometry ? [f.geometry] : null;
    if (s.kind === 'geometry') return [s.geometry as GeoJsonGeometry];
    const [w, so, ea, n] = s.bbox;
    // West above east crosses the antimeridian: two boxes, as the SQL builds them.
    return w <= ea ? [boxPolygon(w, so, ea, n)] : [boxPolygon(w, so, 180, n), boxPolygon(-180, so, ea, n)];
  };
  const run = (e: Expr, f: EvalFeature): Truth => {
    switch (e.op) {
      case 'literal':
        return e.value;
      case 'and': {
        let t: Truth = true;
        for (const a of e.args) {
          t = and(t, run(a, f));
          if (t === false) return false;
        }
        return t;
      }
      case 'or': {
        let t: Truth = false;
        for (const a of e.args) {
          t = or(t, run(a, f));
          if (t === true) return true;
        }
        return t;
      }
      case 'not': {
        const t = run(e.arg, f);
        return t === null ? null : !t;
      }
      case 'compare':
        return compare(e.cmp, value(e.left, f), value(e.right, f));
      case 'like': {
        const v = value(e.value, f);
        if (v === null) return null;
        const pattern = (e.pattern as { value: string }).value;
        let re = likes.get(pattern);
        if (!re) likes.set(pattern, (re = likePattern(pattern)));
        return re.test(String(v));
      }
      case 'between': {
        const v = value(e.value, f);
        return and(compare('>=', v, value(e.low, f)), compare('<=', v, value(e.high, f)));
      }
      case 'in': {
        const v = value(e.value, f);
        if (v === null) return null;
        let t: Truth = false;
        for (const item of e.list) t = or(t, compare('=', v, value(item, f)));
        return t;
      }
      case 'isNull':
        if (e.value.kind === 'literal') return false;
        return geometryNames.has(e.value.name) ? f.geometry === null : read(f, e.value.name) === null;
      case 's_intersects': {
        const l = spatial(e.left, f);
        const r = spatial(e.right, f);
        if (l === null || r === null) return null;
        // ST_Collect of the two boxes is one geometry: meeting either half is meeting it.
        return l.some((a) => r.some((b) => geometriesIntersect(a, b)));
      }
    }
  };
  return (f) => run(e, f) === true;
}
