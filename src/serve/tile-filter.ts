// `filter`, `filter-lang` and `properties` of a tile request (docs/postgres.md, "Filtered tiles"): parsed with the
// CQL2 parsers of OGC API - Features, held to the configured limits, and normalised so that one filter written
// two ways (text or JSON, other spacing, properties in another order) is one cache entry.
import { Cql2Error, type Expr, type Scalar, type Spatial } from '../cql2/ast.js';
import { parseCql2Json } from '../cql2/json.js';
import { parseCql2Text } from '../cql2/text.js';
import type { TileFilter } from '../sources/source.js';

/** The query parameters this module reads: requests with any of them are filtered requests. */
export const FILTER_PARAMS = ['filter', 'filter-lang', 'properties'] as const;

export interface FilterLimits {
  maxLength: number;
  maxTerms: number;
}

export type TileFilterParse = { ok: true; filter: TileFilter | undefined } | { ok: false; parameter: string; title: string; detail: string };

/** Terms of a filter: conditions, values, properties and coordinates, each a part of the SQL it becomes. */
function terms(e: Expr): number {
  const scalar = (_s: Scalar) => 1;
  const spatial = (s: Spatial) => (s.kind === 'geometry' ? 1 + JSON.stringify(s.geometry).split(',').length : 1);
  switch (e.op) {
    case 'and':
    case 'or':
      return 1 + e.args.reduce((n, a) => n + terms(a), 0);
    case 'not':
      return 1 + terms(e.arg);
    case 'literal':
      return 1;
    case 'compare':
      return 1 + scalar(e.left) + scalar(e.right);
    case 'like':
      return 1 + scalar(e.value) + scalar(e.pattern);
    case 'between':
      return 1 + scalar(e.value) + scalar(e.low) + scalar(e.high);
    case 'in':
      return 1 + scalar(e.value) + e.list.reduce((n, s) => n + scalar(s), 0);
    case 'isNull':
      return 1 + scalar(e.value);
    case 's_intersects':
      return 1 + spatial(e.left) + spatial(e.right);
  }
}

const PROPERTY = /^[^\s,]+$/;

/** The filter of a tile request's query, undefined when it has none; or the problem naming the parameter. */
export function parseTileFilter(query: URLSearchParams, limits: FilterLimits): TileFilterParse {
  const text = query.get('filter');
  const lang = query.get('filter-lang');
  const props = query.get('properties');
  if (text === null && props === null) {
    if (lang !== null) return { ok: false, parameter: 'filter-lang', title: 'Invalid filter', detail: 'filter-lang is given without a filter' };
    return { ok: true, filter: undefined };
  }
  let expr: Expr | undefined;
  if (text !== null) {
    const language = lang ?? 'cql2-text';
    if (language !== 'cql2-text' && language !== 'cql2-json') return { ok: false, parameter: 'filter-lang', title: 'Invalid filter', detail: `filter-lang "${language}" is not cql2-text or cql2-json` };
    if (text.length > limits.maxLength) return { ok: false, parameter: 'filter', title: 'Filter too long', detail: `the filter has ${text.length} characters; this server takes at most ${limits.maxLength} on a tile request` };
    try {
      expr = language === 'cql2-json' ? parseCql2Json(text) : parseCql2Text(text);
    } catch (err) {
      if (err instanceof Cql2Error) return { ok: false, parameter: 'filter', title: 'Invalid filter', detail: err.detail };
      throw err;
    }
  }
  let properties: string[] | undefined;
  if (props !== null) {
    const names = props === '' ? [] : props.split(',').map((p) => p.trim());
    const bad = names.find((n) => !PROPERTY.test(n));
    if (bad !== undefined) return { ok: false, parameter: 'properties', title: 'Invalid properties', detail: `properties must be property names separated by commas, got ${JSON.stringify(props)}` };
    properties = [...new Set(names)].sort();
  }
  const cost = (expr ? terms(expr) : 0) + (properties?.length ?? 0);
  if (cost > limits.maxTerms) return { ok: false, parameter: expr ? 'filter' : 'properties', title: 'Filter too costly', detail: `the filter and properties hold ${cost} terms; this server takes at most ${limits.maxTerms} on a tile request` };
  const key = JSON.stringify({ f: expr ?? null, p: properties ?? null });
  return { ok: true, filter: { expr, properties, key } };
}

/** The query string (with its `?`) that carries a filter on into the URLs a document hands out; '' without one. */
export function filterQuery(query: URLSearchParams): string {
  const out = new URLSearchParams();
  for (const name of FILTER_PARAMS) {
    const value = query.get(name);
    if (value !== null) out.set(name, value);
  }
  const text = out.toString();
  return text ? `?${text}` : '';
}
