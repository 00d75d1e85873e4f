// The filter tree of ./ast.ts as a parameterised SQL condition. Identifiers come only from the queryables (the
// table's known columns, quoted); every value from the filter is a bound parameter with an explicit cast. The
// filter is type-checked first, so what reaches the database is a query it can run: a property that is not
// queryable, or a comparison of a number with a string, is refused here (Cql2Error) rather than by PostgreSQL.
import { escapeIdentifier as ident } from 'pg';
import { Cql2Error, type Expr, type Geometry, type Literal, type Scalar, type Spatial } from './ast.js';

export type QueryableKind = 'number' | 'string' | 'boolean' | 'geometry';

export interface Queryable {
  /** Column name (the property name a filter uses). */
  name: string;
  kind: QueryableKind;
  /** The column's SRID, for geometry. */
  srid?: number;
}

type ScalarKind = Exclude<QueryableKind, 'geometry'>;

/** Collects bound values; `$n` placeholders start after `offset` (parameters the caller binds first). */
export class SqlParams {
  readonly values: unknown[] = [];
  constructor(private readonly offset = 0) {}
  add(value: unknown, cast: string): string {
    this.values.push(value);
    return `$${this.offset + this.values.length}::${cast}`;
  }
}

const CASTS: Record<ScalarKind, string> = { number: 'double precision', string: 'text', boolean: 'boolean' };

function literalKind(v: Literal): ScalarKind {
  return typeof v === 'number' ? 'number' : typeof v === 'boolean' ? 'boolean' : 'string';
}

export class Cql2Sql {
  private readonly byName: Map<string, Queryable>;
  constructor(
    queryables: readonly Queryable[],
    private readonly params: SqlParams,
  ) {
    this.byName = new Map(queryables.map((q) => [q.name, q]));
  }

  private queryable(name: string): Queryable {
    const q = this.byName.get(name);
    if (!q) throw new Cql2Error(`unknown property ${JSON.stringify(name)} (queryables: ${[...this.byName.keys()].join(', ')})`, name);
    return q;
  }

  /** A scalar's SQL and kind; text compared by code point (COLLATE "C"), whatever the database's collation. */
  private scalar(s: Scalar): { sql: string; kind: ScalarKind; label: string } {
    if (s.kind === 'literal') {
      const kind = literalKind(s.value);
      return { sql: this.params.add(s.value, CASTS[kind]), kind, label: JSON.stringify(s.value) };
    }
    const q = this.queryable(s.name);
    if (q.kind === 'geometry') throw new Cql2Error(`property ${JSON.stringify(s.name)} is a geometry: use S_INTERSECTS or IS NULL with it`, s.name);
    const col = ident(q.name);
    // Parenthesised: BETWEEN's bounds are b_exprs in PostgreSQL's grammar, which take no bare COLLATE clause.
    return { sql: q.kind === 'string' ? `((${col})::text COLLATE "C")` : col, kind: q.kind, label: JSON.stringify(s.name) };
  }

  private sameKind(op: string, items: { kind: ScalarKind; label: string }[]): ScalarKind {
    const k = items[0].kind;
    const other = items.find((i) => i.kind !== k);
    if (other) throw new Cql2Error(`${op} compares ${items[0].label} (${k}) with ${other.label} (${other.kind})`);
    return k;
  }

  private spatial(s: Spatial, srid: number | undefined): string {
    if (s.kind === 'property') {
      const q = this.queryable(s.name);
      if (q.kind !== 'geometry') throw new Cql2Error(`property ${JSON.stringify(s.name)} is not a geometry`, s.name);
      // Input geometries are in longitude/latitude; a column in another SRID is compared after transforming it,
      // since transforming the input (a latitude of 90 into web mercator, say) can fail where the data cannot.
      return q.srid === 4326 || q.srid === srid ? ident(q.name) : `ST_Transform(${ident(q.name)}, 4326)`;
    }
    if (s.kind === 'bbox') {
      const [w, so, e, n] = s.bbox;
      const box = (a: number, b: number) =>
        `ST_MakeEnvelope(${this.params.add(a, 'double precision')}, ${this.params.add(so, 'double precision')}, ${this.params.add(b, 'double precision')}, ${this.params.add(n, 'double precision')}, 4326)`;
      // West above east crosses the antimeridian: two boxes.
      return w <= e ? box(w, e) : `ST_Collect(${box(w, 180)}, ${box(-180, e)})`;
    }
    return `ST_SetSRID(ST_GeomFromGeoJSON(${this.params.add(JSON.stringify(s.geometry satisfies Geometry), 'text')}), 4326)`;
  }

  translate(e: Expr): string {
    switch (e.op) {
      case 'literal':
        return e.value ? 'TRUE' : 'FALSE';
      case 'and':
      case 'or':
        return `(${e.args.map((a) => this.translate(a)).join(e.op === 'and' ? ' AND ' : ' OR ')})`;
      case 'not':
        return `(NOT ${this.translate(e.arg)})`;
      case 'compare': {
        const l = this.scalar(e.left);
        const r = this.scalar(e.right);
        const kind = this.sameKind(e.cmp, [l, r]);
        if (kind === 'boolean' && e.cmp !== '=' && e.cmp !== '<>') throw new Cql2Error(`${e.cmp} does not order booleans (${l.label}, ${r.label}); use = or <>`);
        return `(${l.sql} ${e.cmp} ${r.sql})`;
      }
      case 'like': {
        const v = this.scalar(e.value);
        if (v.kind !== 'string') throw new Cql2Error(`LIKE needs a string, and ${v.label} is a ${v.kind}`);
        if (e.pattern.kind !== 'literal' || typeof e.pattern.value !== 'string') throw new Cql2Error('the pattern of LIKE must be a string literal');
        // A pattern ending in an unpaired escape character is an error in PostgreSQL: refuse it here.
        if (/(^|[^\\])(\\\\)*\\$/.test(e.pattern.value)) throw new Cql2Error(`LIKE pattern ${JSON.stringify(e.pattern.value)} ends with an unpaired escape character "\\"`);
        return `(${v.sql} LIKE ${this.params.add(e.pattern.value, 'text')})`;
      }
      case 'between': {
        const items = [this.scalar(e.value), this.scalar(e.low), this.scalar(e.high)];
        const kind = this.sameKind('BETWEEN', items);
        if (kind === 'boolean') throw new Cql2Error('BETWEEN does not order booleans');
        return `(${items[0].sql} BETWEEN ${items[1].sql} AND ${items[2].sql})`;
      }
      case 'in': {
        const items = [this.scalar(e.value), ...e.list.map((s) => this.scalar(s))];
        this.sameKind('IN', items);
        return `(${items[0].sql} IN (${items.slice(1).map((i) => i.sql).join(', ')}))`;
      }
      case 'isNull': {
        // A literal is never null.
        return e.value.kind === 'property' ? `(${ident(this.queryable(e.value.name).name)} IS NULL)` : 'FALSE';
      }
      case 's_intersects': {
        if (e.left.kind !== 'property' && e.right.kind !== 'property') {
          return `ST_Intersects(${this.spatial(e.left, undefined)}, ${this.spatial(e.right, undefined)})`;
        }
        // Both sides in one SRID: a property keeps its own only when the other side is a property of that SRID too.
        const srid = (s: Spatial) => (s.kind === 'property' ? this.queryable(s.name).srid : 4326);
        const same = e.left.kind === 'property' && e.right.kind === 'property' && srid(e.left) === srid(e.right) ? srid(e.left) : undefined;
        return `ST_Intersects(${this.spatial(e.left, same)}, ${this.spatial(e.right, same)})`;
      }
    }
  }
}

/** A filter as SQL over `queryables`, with its values bound after `offset` earlier parameters. */
export function filterSql(e: Expr, queryables: readonly Queryable[], offset = 0): { sql: string; values: unknown[] } {
  const params = new SqlParams(offset);
  const sql = new Cql2Sql(queryables, params).translate(e);
  return { sql, values: params.values };
}
