// CQL2 JSON (OGC 21-065, cql2-json encoding) to the filter tree of ./ast.ts. An expression is
// `{"op": ..., "args": [...]}`; a property is `{"property": name}`; a bounding box `{"bbox": [...]}`; a geometry
// is GeoJSON. Anything else is refused, naming where in the document it was.
import { checkBbox, checkGeometry, checkString, Cql2Error, MAX_DEPTH, MAX_FILTER_LENGTH, type Comparison, type Expr, type Geometry, type Scalar, type Spatial } from './ast.js';

const COMPARISONS = new Set(['=', '<>', '<', '<=', '>', '>=']);
const GEOMETRY_TYPES = new Set(['Point', 'MultiPoint', 'LineString', 'MultiLineString', 'Polygon', 'MultiPolygon']);

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);
const show = (v: unknown) => {
  const s = JSON.stringify(v) ?? String(v);
  return s.length > 80 ? `${s.slice(0, 77)}...` : s;
};

function args(node: Record<string, unknown>, count: number | [number, number], path: string): unknown[] {
  const a = node.args;
  if (!Array.isArray(a)) throw new Cql2Error(`${path}: "${String(node.op)}" needs an "args" array`);
  const [min, max] = typeof count === 'number' ? [count, count] : count;
  if (a.length < min || a.length > max) {
    throw new Cql2Error(`${path}: "${String(node.op)}" takes ${min === max ? min : `${min} or more`} argument${max === 1 ? '' : 's'}, not ${a.length}`);
  }
  return a;
}

function scalar(v: unknown, path: string): Scalar {
  if (typeof v === 'string') return { kind: 'literal', value: checkString(v) };
  if (typeof v === 'boolean') return { kind: 'literal', value: v };
  if (typeof v === 'number') {
    if (!Number.isFinite(v)) throw new Cql2Error(`${path}: number out of range`);
    return { kind: 'literal', value: v };
  }
  if (isObject(v) && typeof v.property === 'string' && Object.keys(v).length === 1) return { kind: 'property', name: v.property };
  throw new Cql2Error(`${path}: expected a property ({"property": name}), a string, a number or a boolean, not ${show(v)}`);
}

function spatial(v: unknown, path: string): Spatial {
  if (isObject(v) && typeof v.property === 'string') return { kind: 'property', name: v.property };
  if (isObject(v) && Array.isArray(v.bbox)) {
    const b = v.bbox as number[];
    return { kind: 'bbox', bbox: checkBbox(b.length === 6 ? [b[0], b[1], b[3], b[4]] : b) };
  }
  if (isObject(v) && typeof v.type === 'string' && GEOMETRY_TYPES.has(v.type) && Array.isArray(v.coordinates)) {
    const geometry = { type: v.type, coordinates: v.coordinates } as Geometry;
    try {
      checkGeometry(geometry);
    } catch (err) {
      if (err instanceof Cql2Error) throw new Cql2Error(`${path}: ${err.detail}`);
      throw err;
    }
    return { kind: 'geometry', geometry };
  }
  throw new Cql2Error(`${path}: expected a property, {"bbox": [...]} or a GeoJSON geometry (Point ... MultiPolygon), not ${show(v)}`);
}

function expr(v: unknown, path: string, depth: number): Expr {
  if (depth > MAX_DEPTH) throw new Cql2Error(`the filter nests deeper than ${MAX_DEPTH} levels`);
  if (typeof v === 'boolean') return { op: 'literal', value: v };
  if (!isObject(v) || typeof v.op !== 'string') throw new Cql2Error(`${path}: expected an expression {"op": ..., "args": [...]}, not ${show(v)}`);
  const op = v.op;
  const at = (i: number) => `${path}.args[${i}]`;
  switch (op) {
    case 'and':
    case 'or': {
      const a = args(v, [2, Number.MAX_SAFE_INTEGER], path);
      return { op, args: a.map((x, i) => expr(x, at(i), depth + 1)) };
    }
    case 'not':
      return { op: 'not', arg: expr(args(v, 1, path)[0], at(0), depth + 1) };
    case 'like': {
      const [value, pattern] = args(v, 2, path);
      return { op: 'like', value: scalar(value, at(0)), pattern: scalar(pattern, at(1)) };
    }
    case 'between': {
      const [value, low, high] = args(v, 3, path);
      return { op: 'between', value: scalar(value, at(0)), low: scalar(low, at(1)), high: scalar(high, at(2)) };
    }
    case 'in': {
      const [value, list] = args(v, 2, path);
      if (!Array.isArray(list) || list.length === 0) throw new Cql2Error(`${at(1)}: "in" needs a non-empty array of values`);
      return { op: 'in', value: scalar(value, at(0)), list: list.map((x, i) => scalar(x, `${at(1)}[${i}]`)) };
    }
    case 'isNull':
      return { op: 'isNull', value: scalar(args(v, 1, path)[0], at(0)) };
    case 's_intersects': {
      const [left, right] = args(v, 2, path);
      return { op: 's_intersects', left: spatial(left, at(0)), right: spatial(right, at(1)) };
    }
    default:
      if (COMPARISONS.has(op)) {
        const [left, right] = args(v, 2, path);
        return { op: 'compare', cmp: op as Comparison, left: scalar(left, at(0)), right: scalar(right, at(1)) };
      }
      throw new Cql2Error(`${path}: unknown operator ${show(op)} (offered: and, or, not, =, <>, <, <=, >, >=, like, between, in, isNull, s_intersects)`);
  }
}

/** Parses a cql2-json filter (the JSON text); throws Cql2Error naming what is wrong and where. */
export function parseCql2Json(src: string): Expr {
  if (src.length > MAX_FILTER_LENGTH) throw new Cql2Error(`the filter is longer than ${MAX_FILTER_LENGTH} characters`);
  let doc: unknown;
  try {
    doc = JSON.parse(src);
  } catch (err) {
    throw new Cql2Error(`the filter is not JSON (${(err as Error).message})`);
  }
  return expr(doc, 'filter', 0);
}
