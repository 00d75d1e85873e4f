// Label values of the spec's metrics. Every value here comes from a small fixed set (or from the configuration:
// source and style ids), so no request, however made up, can add a series. Uploads are the exception to
// "from the configuration": each one is a new id, so under strict they share one label value.
import { UPLOAD_ID_PREFIX } from '../config/load.js';
import { COMPOSITE_SEPARATOR, compositeMembers } from '../sources/source-ids.js';

export type Cardinality = 'strict' | 'verbose';
export type TileOutcome = 'hit' | 'miss' | 'not_found' | 'error';

/** The `route` of a request that matched no route (a scan of random URLs all lands here). */
export const UNMATCHED_ROUTE = 'unmatched';

/** `z_bucket`: low (z 0-6), mid (7-12), high (13+) under strict; the zoom itself under verbose. */
export function zLabel(z: number, cardinality: Cardinality): string {
  if (cardinality === 'verbose') return String(z);
  return z <= 6 ? 'low' : z <= 12 ? 'mid' : 'high';
}

/** The label value every uploaded source (`upload-<uuid>`) is counted under with strict cardinality. */
export const UPLOAD_LABEL = 'upload';

/**
 * `source` and `style` values: the id itself, except that under strict every uploaded source, alone or as a
 * member of an ad-hoc composite (`a+upload-…`), is `upload`. Uploads come and go at run time and their ids are
 * never reused, so one series each would grow without bound on a host that takes uploads.
 */
export function idLabel(id: string, cardinality: Cardinality): string {
  if (cardinality === 'verbose' || !id.includes(UPLOAD_ID_PREFIX)) return id;
  return compositeMembers(id)
    .map((member) => (member.startsWith(UPLOAD_ID_PREFIX) ? UPLOAD_LABEL : member))
    .join(COMPOSITE_SEPARATOR);
}

/** `status_class` of an HTTP status: 1xx..5xx. */
export function statusClass(status: number): string {
  const c = Math.floor(status / 100);
  return c >= 1 && c <= 5 ? `${c}xx` : '5xx';
}

/** The outcome of a tile lookup that gave an answer: empty is not_found; a tile is a cache hit or miss. */
export function tileOutcome(result: { kind: 'tile' | 'empty'; cache?: 'hit' | 'miss' }): TileOutcome {
  if (result.kind === 'empty') return 'not_found';
  return result.cache === 'hit' ? 'hit' : 'miss';
}

/** Bucket bounds (seconds) of request durations: a cached tile takes well under a millisecond. */
export const REQUEST_SECONDS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
/** Bucket bounds (seconds) of renders: tens of milliseconds to the render timeout. */
/** Freshness lag (an expiry to the fresh tile stored): seconds at the bench's scale, up to the minutes of a queue. */
export const LAG_SECONDS = [0.1, 0.25, 0.5, 1, 2, 3, 5, 10, 30, 60, 300];
export const RENDER_SECONDS = [0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60];
/** Bucket bounds (bytes) of tile bodies. */
export const TILE_BYTES = [256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304];
