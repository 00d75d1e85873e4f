// The parsed form of a CQL2 filter (OGC 21-065), shared by the text and JSON parsers and the SQL translation.
// Only the subset this service offers exists here: comparisons, AND/OR/NOT, LIKE, IN, BETWEEN, IS NULL and
// S_INTERSECTS with a bounding box or a geometry.

export type Literal = string | number | boolean;

/** A property (column) name, or a literal value. */
export type Scalar = { kind: 'property'; name: string } | { kind: 'literal'; value: Literal };

/** GeoJSON geometry in longitude/latitude (CRS84), as the parsers produced it from WKT, GeoJSON or BBOX. */
export type Geometry =
  | { type: 'Point'; coordinates: number[] }
  | { type: 'MultiPoint' | 'LineString'; coordinates: number[][] }
  | { type: 'MultiLineString' | 'Polygon'; coordinates: number[][][] }
  | { type: 'MultiPolygon'; coordinates: number[][][][] };

export type Spatial = { kind: 'property'; name: string } | { kind: 'bbox'; bbox: [number, number, number, number] } | { kind: 'geometry'; geometry: Geometry };

export type Comparison = '=' | '<>' | '<' | '<=' | '>' | '>=';

export type Expr =
  | { op: 'and' | 'or'; args: Expr[] }
  | { op: 'not'; arg: Expr }
  | { op: 'literal'; value: boolean }
  | { op: 'compare'; cmp: Comparison; left: Scalar; right: Scalar }
  | { op: 'like'; value: Scalar; pattern: Scalar }
  | { op: 'between'; value: Scalar; low: Scalar; high: Scalar }
  | { op: 'in'; value: Scalar; list: Scalar[] }
  | { op: 'isNull'; value: Scalar }
  | { op: 's_intersects'; left: Spatial; right: Spatial };

/** A filter that cannot be used: `detail` names the part that is wrong (a property, a token, a position). */
export class Cql2Error extends Error {
  constructor(
    readonly detail: string,
    /** The property the problem is about, when it is one. */
    readonly property?: string,
    /** The query parameter that held it, when not `filter` (a property=value parameter, bbox). */
    readonly parameter?: string,
  ) {
    super(detail);
    this.name = 'Cql2Error';
  }
}

/** Nesting past this is refused: a filter is a query, not a program, and recursion must stay bounded. */
export const MAX_DEPTH = 64;
/** Longest filter accepted (characters of text, or of the JSON document). */
export const MAX_FILTER_LENGTH = 16_384;

/** Checks what a geometry must be for PostGIS to accept it: finite coordinates, 2+ line points, closed rings of 4+. */
export function checkGeometry(g: Geometry): void {
  const pos = (p: number[]) => {
    if (p.length < 2 || p.length > 3 || !p.every((n) => typeof n === 'number' && Number.isFinite(n))) {
      throw new Cql2Error(`a position must be 2 or 3 finite numbers, not ${JSON.stringify(p)}`);
    }
  };
  const line = (l: number[][], min: number) => {
    if (!Array.isArray(l) || l.length < min) throw new Cql2Error(`a ${min === 2 ? 'line' : 'polygon ring'} needs at least ${min} positions`);
    l.forEach(pos);
  };
  const ring = (r: number[][]) => {
    line(r, 4);
    const a = r[0];
    const b = r[r.length - 1];
    if (a[0] !== b[0] || a[1] !== b[1]) throw new Cql2Error('a polygon ring must end where it starts');
  };
  const polygon = (p: number[][][]) => {
    if (!Array.isArray(p) || p.length === 0) throw new Cql2Error('a polygon needs at least one ring');
    p.forEach(ring);
  };
  switch (g.type) {
    case 'Point':
      return pos(g.coordinates);
    case 'MultiPoint':
      if (g.coordinates.length === 0) throw new Cql2Error('an empty MULTIPOINT');
      return g.coordinates.forEach(pos);
    case 'LineString':
      return line(g.coordinates, 2);
    case 'MultiLineString':
      if (g.coordinates.length === 0) throw new Cql2Error('an empty MULTILINESTRING');
      return g.coordinates.forEach((l) => line(l, 2));
    case 'Polygon':
      return polygon(g.coordinates);
    case 'MultiPolygon':
      if (g.coordinates.length === 0) throw new Cql2Error('an empty MULTIPOLYGON');
      return g.coordinates.forEach(polygon);
  }
}

/** Checks a bounding box: four finite numbers, south not above north. */
export function checkBbox(b: number[]): [number, number, number, number] {
  if (b.length !== 4 || !b.every((n) => typeof n === 'number' && Number.isFinite(n))) throw new Cql2Error(`a bbox is four finite numbers (west, south, east, north), not ${JSON.stringify(b)}`);
  if (b[1] > b[3]) throw new Cql2Error(`bbox south ${b[1]} is above north ${b[3]}`);
  return b as [number, number, number, number];
}

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;

/** Text a PostgreSQL text value can hold: valid Unicode (no lone surrogate) without U+0000. */
export const storableText = (s: string) => !LONE_SURROGATE.test(s) && !s.includes('\u0000');

/** A string literal must be valid Unicode without NUL (PostgreSQL text can hold neither a lone surrogate nor U+0000). */
export function checkString(s: string): string {
  if (LONE_SURROGATE.test(s)) throw new Cql2Error('a string literal holds a lone surrogate (not valid Unicode)');
  if (s.includes('\u0000')) throw new Cql2Error('a string literal holds the character U+0000, which text values cannot contain');
  return s;
}
