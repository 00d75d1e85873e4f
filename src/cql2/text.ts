// CQL2 text (OGC 21-065, cql2-text encoding) to the filter tree of ./ast.ts: a tokenizer and a recursive-descent
// parser of the offered subset. Keywords are case-insensitive; properties are bare identifiers or "quoted";
// strings are 'quoted' with '' for a quote inside. Every refusal names the token and its position.
import { checkBbox, checkGeometry, checkString, Cql2Error, MAX_DEPTH, MAX_FILTER_LENGTH, type Comparison, type Expr, type Geometry, type Scalar, type Spatial } from './ast.js';

type Token =
  | { t: 'ident'; v: string; quoted: boolean; at: number }
  | { t: 'string'; v: string; at: number }
  | { t: 'number'; v: number; text: string; at: number }
  | { t: 'punct'; v: string; at: number }
  | { t: 'end'; at: number };

const IDENT = /[A-Za-z_][A-Za-z0-9_.:]*/y;
const NUMBER = /-?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?/y;
const PUNCT = /<>|<=|>=|[=<>(),]/y;
const SPACE = /\s+/y;

function tokenize(src: string): Token[] {
  const out: Token[] = [];
  let i = 0;
  const at = (re: RegExp) => {
    re.lastIndex = i;
    const m = re.exec(src);
    return m ? m[0] : undefined;
  };
  while (i < src.length) {
    const space = at(SPACE);
    if (space) {
      i += space.length;
      continue;
    }
    const ch = src[i];
    if (ch === "'" || ch === '"') {
      // Quotes inside are doubled.
      let j = i + 1;
      let v = '';
      for (;;) {
        if (j >= src.length) throw new Cql2Error(`unterminated ${ch === "'" ? 'string' : 'quoted property name'} starting at position ${i + 1}`);
        if (src[j] === ch) {
          if (src[j + 1] === ch) {
            v += ch;
            j += 2;
            continue;
          }
          break;
        }
        v += src[j++];
      }
      out.push(ch === "'" ? { t: 'string', v: checkString(v), at: i + 1 } : { t: 'ident', v, quoted: true, at: i + 1 });
      i = j + 1;
      continue;
    }
    const num = at(NUMBER);
    if (num) {
      out.push({ t: 'number', v: Number(num), text: num, at: i + 1 });
      i += num.length;
      continue;
    }
    const id = at(IDENT);
    if (id) {
      out.push({ t: 'ident', v: id, quoted: false, at: i + 1 });
      i += id.length;
      continue;
    }
    const p = at(PUNCT);
    if (p) {
      out.push({ t: 'punct', v: p, at: i + 1 });
      i += p.length;
      continue;
    }
    throw new Cql2Error(`unexpected character ${JSON.stringify(ch)} at position ${i + 1}`);
  }
  out.push({ t: 'end', at: src.length + 1 });
  return out;
}

const describe = (tok: Token) =>
  tok.t === 'end' ? 'the end of the filter' : `${tok.t === 'string' ? `'${tok.v}'` : tok.t === 'number' ? tok.text : tok.t === 'ident' && tok.quoted ? `"${tok.v}"` : tok.v} at position ${tok.at}`;

const COMPARISONS = new Set(['=', '<>', '<', '<=', '>', '>=']);
const RESERVED = new Set(['AND', 'OR', 'NOT', 'LIKE', 'BETWEEN', 'IN', 'IS', 'NULL', 'TRUE', 'FALSE']);
const WKT = new Set(['POINT', 'LINESTRING', 'POLYGON', 'MULTIPOINT', 'MULTILINESTRING', 'MULTIPOLYGON']);

class Parser {
  private i = 0;
  private depth = 0;
  constructor(private readonly toks: Token[]) {}

  private peek(): Token {
    return this.toks[this.i];
  }
  private next(): Token {
    return this.toks[this.i++];
  }
  /** The next token is the keyword `kw` (a bare identifier, any case). */
  private isKeyword(kw: string, tok = this.peek()): boolean {
    return tok.t === 'ident' && !tok.quoted && tok.v.toUpperCase() === kw;
  }
  private acceptKeyword(kw: string): boolean {
    if (!this.isKeyword(kw)) return false;
    this.i++;
    return true;
  }
  private expectKeyword(kw: string): void {
    if (!this.acceptKeyword(kw)) throw new Cql2Error(`expected ${kw}, found ${describe(this.peek())}`);
  }
  private expectPunct(p: string): void {
    const tok = this.next();
    if (tok.t !== 'punct' || tok.v !== p) throw new Cql2Error(`expected "${p}", found ${describe(tok)}`);
  }
  private isPunct(p: string): boolean {
    const tok = this.peek();
    return tok.t === 'punct' && tok.v === p;
  }

  parse(): Expr {
    const e = this.orExpr();
    const tok = this.peek();
    if (tok.t !== 'end') throw new Cql2Error(`unexpected ${describe(tok)}`);
    return e;
  }

  private nested<T>(f: () => T): T {
    if (++this.depth > MAX_DEPTH) throw new Cql2Error(`the filter nests deeper than ${MAX_DEPTH} levels`);
    try {
      return f();
    } finally {
      this.depth--;
    }
  }

  private orExpr(): Expr {
    const args = [this.andExpr()];
    while (this.acceptKeyword('OR')) args.push(this.andExpr());
    return args.length === 1 ? args[0] : { op: 'or', args };
  }

  private andExpr(): Expr {
    const args = [this.notExpr()];
    while (this.acceptKeyword('AND')) args.push(this.notExpr());
    return args.length === 1 ? args[0] : { op: 'and', args };
  }

  private notExpr(): Expr {
    if (this.acceptKeyword('NOT')) return this.nested(() => ({ op: 'not', arg: this.notExpr() }));
    return this.primary();
  }

  private primary(): Expr {
    if (this.isPunct('(')) {
      this.i++;
      const e = this.nested(() => this.orExpr());
      this.expectPunct(')');
      return e;
    }
    if (this.isKeyword('S_INTERSECTS')) {
      this.i++;
      this.expectPunct('(');
      const left = this.spatial();
      this.expectPunct(',');
      const right = this.spatial();
      this.expectPunct(')');
      return { op: 's_intersects', left, right };
    }
    const tok = this.peek();
    const after = this.toks[this.i + 1];
    if (tok.t === 'ident' && !tok.quoted && after.t === 'punct' && after.v === '(') {
      throw new Cql2Error(`unknown function ${tok.v} at position ${tok.at} (offered: S_INTERSECTS)`);
    }
    // A bare TRUE/FALSE is a predicate only when no comparison follows it.
    if ((this.isKeyword('TRUE') || this.isKeyword('FALSE')) && !this.comparisonFollows(1)) {
      return { op: 'literal', value: this.acceptKeyword('TRUE') || (this.next(), false) };
    }
    const value = this.scalar();
    return this.predicate(value);
  }

  private comparisonFollows(offset: number): boolean {
    const tok = this.toks[this.i + offset];
    if (!tok) return false;
    if (tok.t === 'punct' && COMPARISONS.has(tok.v)) return true;
    return ['NOT', 'LIKE', 'BETWEEN', 'IN', 'IS'].some((kw) => this.isKeyword(kw, tok));
  }

  private predicate(value: Scalar): Expr {
    const tok = this.peek();
    if (tok.t === 'punct' && COMPARISONS.has(tok.v)) {
      this.i++;
      return { op: 'compare', cmp: tok.v as Comparison, left: value, right: this.scalar() };
    }
    if (this.acceptKeyword('IS')) {
      const not = this.acceptKeyword('NOT');
      this.expectKeyword('NULL');
      const e: Expr = { op: 'isNull', value };
      return not ? { op: 'not', arg: e } : e;
    }
    const not = this.acceptKeyword('NOT');
    let e: Expr;
    if (this.acceptKeyword('LIKE')) e = { op: 'like', value, pattern: this.scalar() };
    else if (this.acceptKeyword('BETWEEN')) {
      const low = this.scalar();
      this.expectKeyword('AND');
      e = { op: 'between', value, low, high: this.scalar() };
    } else if (this.acceptKeyword('IN')) {
      this.expectPunct('(');
      const list = [this.scalar()];
      while (this.isPunct(',')) {
        this.i++;
        list.push(this.scalar());
      }
      this.expectPunct(')');
      e = { op: 'in', value, list };
    } else throw new Cql2Error(`expected a comparison, LIKE, BETWEEN, IN or IS NULL, found ${describe(this.peek())}`);
    return not ? { op: 'not', arg: e } : e;
  }

  private scalar(): Scalar {
    const tok = this.next();
    switch (tok.t) {
      case 'string':
        return { kind: 'literal', value: tok.v };
      case 'number':
        if (!Number.isFinite(tok.v)) throw new Cql2Error(`number ${tok.text} at position ${tok.at} is out of range`);
        return { kind: 'literal', value: tok.v };
      case 'ident':
        if (!tok.quoted) {
          const up = tok.v.toUpperCase();
          if (up === 'TRUE' || up === 'FALSE') return { kind: 'literal', value: up === 'TRUE' };
          if (RESERVED.has(up)) throw new Cql2Error(`expected a property or a value, found ${describe(tok)}`);
        }
        return { kind: 'property', name: tok.v };
      default:
        throw new Cql2Error(`expected a property or a value, found ${describe(tok)}`);
    }
  }

  private spatial(): Spatial {
    const tok = this.peek();
    if (tok.t === 'ident' && !tok.quoted) {
      const up = tok.v.toUpperCase();
      if (up === 'BBOX') {
        this.i++;
        this.expectPunct('(');
        const nums = this.numberList();
        this.expectPunct(')');
        if (nums.length === 6) return { kind: 'bbox', bbox: checkBbox([nums[0], nums[1], nums[3], nums[4]]) };
        return { kind: 'bbox', bbox: checkBbox(nums) };
      }
      if (WKT.has(up)) {
        this.i++;
        const geometry = this.wkt(up);
        checkGeometry(geometry);
        return { kind: 'geometry', geometry };
      }
    }
    if (tok.t === 'ident') {
      this.i++;
      return { kind: 'property', name: tok.v };
    }
    throw new Cql2Error(`expected a property, BBOX(...) or a WKT geometry, found ${describe(tok)}`);
  }

  private numberList(): number[] {
    const out: number[] = [];
    for (;;) {
      const tok = this.next();
      if (tok.t !== 'number' || !Number.isFinite(tok.v)) throw new Cql2Error(`expected a number, found ${describe(tok)}`);
      out.push(tok.v);
      if (!this.isPunct(',')) return out;
      this.i++;
    }
  }

  /** One WKT position: 2 or 3 numbers separated by spaces. */
  private position(): number[] {
    const out: number[] = [];
    while (this.peek().t === 'number') {
      const tok = this.next() as { v: number; text: string; at: number };
      if (!Number.isFinite(tok.v)) throw new Cql2Error(`coordinate ${tok.text} at position ${tok.at} is out of range`);
      out.push(tok.v);
    }
    if (out.length < 2 || out.length > 3) throw new Cql2Error(`a position is 2 or 3 numbers, found ${out.length} before ${describe(this.peek())}`);
    return out;
  }

  /** `( item, item, ... )` of a WKT body. */
  private list<T>(item: () => T): T[] {
    this.expectPunct('(');
    const out = [item()];
    while (this.isPunct(',')) {
      this.i++;
      out.push(item());
    }
    this.expectPunct(')');
    return out;
  }

  private wkt(kind: string): Geometry {
    return this.nested(() => {
      const ring = () => this.list(() => this.position());
      switch (kind) {
        case 'POINT': {
          this.expectPunct('(');
          const p = this.position();
          this.expectPunct(')');
          return { type: 'Point', coordinates: p };
        }
        case 'MULTIPOINT':
          // Both MULTIPOINT((1 2),(3 4)) and MULTIPOINT(1 2, 3 4) are WKT.
          return {
            type: 'MultiPoint',
            coordinates: this.list(() => {
              if (!this.isPunct('(')) return this.position();
              this.i++;
              const p = this.position();
              this.expectPunct(')');
              return p;
            }),
          };
        case 'LINESTRING':
          return { type: 'LineString', coordinates: ring() };
        case 'MULTILINESTRING':
          return { type: 'MultiLineString', coordinates: this.list(ring) };
        case 'POLYGON':
          return { type: 'Polygon', coordinates: this.list(ring) };
        default:
          return { type: 'MultiPolygon', coordinates: this.list(() => this.list(ring)) };
      }
    });
  }
}

/** Parses a cql2-text filter; throws Cql2Error naming what is wrong. */
export function parseCql2Text(src: string): Expr {
  if (src.length > MAX_FILTER_LENGTH) throw new Cql2Error(`the filter is longer than ${MAX_FILTER_LENGTH} characters`);
  if (src.trim() === '') throw new Cql2Error('the filter is empty');
  return new Parser(tokenize(src)).parse();
}
