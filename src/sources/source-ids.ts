// How one id names other sources: the members of an ad-hoc composite `a+b+c`, and the terrain products
// `{dem}.hillshade` and `{dem}.contours` of an elevation source. One reading for every area that meets such an id
// (the router's source lookup, the access rules, the rate limiter's budget, style references, metric labels), so
// that what a request is allowed to touch is what it is served. Kept free of imports: the access gate reads ids
// with it before any route runs.
//
// The composite separator is `+` only. Configured ids are letters, digits, `_`, `-` and `.` (src/config/), so the
// sign never belongs to a member; `%2B` is the same id once the path is decoded. A `,` is no separator: `a,b` is
// one (unknown) id, answered 404 by the routes like any other.

export const COMPOSITE_SEPARATOR = '+';

/** Whether `id` is an ad-hoc composite of several ids. */
export function isCompositeId(id: string): boolean {
  return id.includes(COMPOSITE_SEPARATOR);
}

/**
 * The ids `id` names: its members when it is an ad-hoc composite, else itself. Members are kept as written, empty
 * ones included (`a++b` has the member "", which no source has: the composite is answered 404, never served).
 */
export function compositeMembers(id: string): string[] {
  return isCompositeId(id) ? id.split(COMPOSITE_SEPARATOR) : [id];
}

export type TerrainProduct = 'hillshade' | 'contours';

const PRODUCT_ID = /^(.+)\.(hillshade|contours)$/;

/** The elevation source and product `id` names as a terrain product (`{dem}.hillshade`), or undefined. */
export function terrainProductOf(id: string): { source: string; product: TerrainProduct } | undefined {
  const m = PRODUCT_ID.exec(id);
  return m ? { source: m[1], product: m[2] as TerrainProduct } : undefined;
}
