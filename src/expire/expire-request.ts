// What an expiry request names, checked against the configuration the admin listener's process holds (it runs
// in the cluster's primary, which has the loaded config and no opened sources): the sources reached (an id, a
// composite's members, or every source reading a table), the deepest zoom anything of theirs is served at, the
// zoom band, and the JSON body forms (a bbox or a GeoJSON geometry). Every refusal is a value naming the field.
import type { Config } from '../config/schema.js';
import { RENDER_MAXZOOM } from '../tiles/overzoom.js';
import { GeoAreaError, geojsonArea, type GeoArea } from '../tiles/geo-area.js';
import { terrainProductOf } from '../sources/source-ids.js';
import { ALL_ZOOMS, type ZoomBand } from './area-times.js';
import { tableSources } from './tables.js';
import { expirySources } from './targets.js';
import { MAX_KEY_ZOOM } from './tile-key.js';

/** A refusal: the HTTP status it is answered with and what was wrong. */
export interface Refusal {
  status: 400 | 404;
  detail: string;
}

export type Checked<T> = ({ ok: true } & T) | ({ ok: false } & Refusal);

const refuse = (status: 400 | 404, detail: string): { ok: false } & Refusal => ({ ok: false, status, detail });

/**
 * The configured sources `source` (an id, a named or ad-hoc composite: targets.ts) or `table` (`schema.name`)
 * reaches. An id no configured source has is 404, as an unknown source is on the tile routes; so is a table no
 * source reads (an expiry that would mark nothing is a mistake worth seeing, not a silent 200).
 */
export function expiredSources(config: Config, target: { source?: string; table?: string }): Checked<{ sources: string[] }> {
  if ((target.source === undefined) === (target.table === undefined)) return refuse(400, 'give exactly one of source (a source id) and table (schema.name)');
  if (target.table !== undefined) {
    const ids = tableSources(config, target.table);
    return ids.length ? { ok: true, sources: ids } : refuse(404, `no configured source reads the table ${JSON.stringify(target.table.slice(0, 100))} ([[postgres.tables]])`);
  }
  const named = expirySources(config, target.source!);
  if (named.ok) return named;
  const product = terrainProductOf(named.unknown);
  if (product) return refuse(404, `${JSON.stringify(named.unknown.slice(0, 100))} is a terrain product, not a source: expire its elevation source ${JSON.stringify(product.source.slice(0, 100))}`);
  return refuse(404, `no configured source has the id ${JSON.stringify(named.unknown.slice(0, 100))}`);
}

/**
 * The deepest zoom anything made from `source` is served at: RENDER_MAXZOOM when styles are rendered (a style's
 * rendered tiles and the vector tiles renderers are offered go that deep), else the source's configured maxzoom,
 * else RENDER_MAXZOOM (an archive's own maxzoom is known only once opened, which the primary never does).
 */
export function deepestZoom(config: Config, source: string): number {
  if (!config.server.disable_render && config.styles.length > 0) return RENDER_MAXZOOM;
  const pg = config.postgres;
  const entry = [...config.sources, ...(pg ? [...pg.tables, ...pg.functions, ...pg.outdb_rasters] : [])].find((s) => s.id === source);
  return (entry as { maxzoom?: number } | undefined)?.maxzoom ?? RENDER_MAXZOOM;
}

/** The deepest zoom anything made from any of `sources` is served at (at most MAX_KEY_ZOOM). */
export function deepestOf(config: Config, sources: readonly string[]): number {
  return Math.min(MAX_KEY_ZOOM, Math.max(0, ...sources.map((s) => deepestZoom(config, s))));
}

/** A zoom from a query parameter (text) or a JSON member (number): a whole number 0..MAX_KEY_ZOOM. */
function zoomOf(value: unknown, name: string): Checked<{ zoom: number | undefined }> {
  if (value === undefined || value === null) return { ok: true, zoom: undefined };
  const n = typeof value === 'string' && /^\d{1,2}$/.test(value) ? Number(value) : value;
  if (typeof n !== 'number' || !Number.isInteger(n) || n < 0 || n > MAX_KEY_ZOOM) return refuse(400, `${name}: expected a whole number 0..${MAX_KEY_ZOOM}, got ${JSON.stringify(value).slice(0, 40)}`);
  return { ok: true, zoom: n };
}

/** `min_zoom`/`max_zoom` as the band of products reached (render_expired's range; default every zoom). */
export function zoomBand(min: unknown, max: unknown): Checked<{ band: ZoomBand }> {
  const lo = zoomOf(min, 'min_zoom');
  if (!lo.ok) return lo;
  const hi = zoomOf(max, 'max_zoom');
  if (!hi.ok) return hi;
  const band = { min: lo.zoom ?? ALL_ZOOMS.min, max: hi.zoom ?? ALL_ZOOMS.max };
  if (band.min > band.max) return refuse(400, `min_zoom ${band.min} is above max_zoom ${band.max}`);
  return { ok: true, band };
}

/** A JSON body: its target, its area (a bbox or a geometry) and its band. */
export interface AreaRequest {
  target: { source?: string; table?: string };
  input: 'bbox' | 'geometry';
  area: GeoArea;
  band: ZoomBand;
}

const JSON_KEYS = new Set(['source', 'table', 'bbox', 'geometry', 'min_zoom', 'max_zoom']);

/** `bbox`: four numbers [west, south, east, north] in degrees, west <= east within ±180, south <= north within ±90. */
function bboxArea(value: unknown): Checked<{ area: GeoArea }> {
  if (!Array.isArray(value) || value.length !== 4 || !value.every((c) => typeof c === 'number' && Number.isFinite(c))) return refuse(400, 'bbox: expected [west, south, east, north], four numbers in degrees');
  const [w, s, e, n] = value as number[];
  if (w < -180 || e > 180 || w > e) return refuse(400, `bbox: west and east must satisfy -180 <= west <= east <= 180, got ${w} and ${e}`);
  if (s < -90 || n > 90 || s > n) return refuse(400, `bbox: south and north must satisfy -90 <= south <= north <= 90, got ${s} and ${n}`);
  return { ok: true, area: { bbox: [w, s, e, n], shapes: undefined } };
}

/** The JSON body of `POST /__admin/expire`, parsed already. */
export function areaRequest(doc: unknown): Checked<{ request: AreaRequest }> {
  if (typeof doc !== 'object' || doc === null || Array.isArray(doc)) return refuse(400, 'the body must be a JSON object with source or table, and bbox or geometry');
  const body = doc as Record<string, unknown>;
  const unknown = Object.keys(body).find((k) => !JSON_KEYS.has(k));
  if (unknown !== undefined) return refuse(400, `unknown member ${JSON.stringify(unknown).slice(0, 60)} (expected source or table, bbox or geometry, min_zoom, max_zoom)`);
  for (const k of ['source', 'table'] as const) if (body[k] !== undefined && (typeof body[k] !== 'string' || body[k] === '')) return refuse(400, `${k}: expected a non-empty string`);
  const band = zoomBand(body.min_zoom, body.max_zoom);
  if (!band.ok) return band;
  const target = { source: body.source as string | undefined, table: body.table as string | undefined };
  if ((body.bbox === undefined) === (body.geometry === undefined)) return refuse(400, 'give exactly one of bbox and geometry');
  if (body.bbox !== undefined) {
    const b = bboxArea(body.bbox);
    return b.ok ? { ok: true, request: { target, input: 'bbox', area: b.area, band: band.band } } : b;
  }
  try {
    return { ok: true, request: { target, input: 'geometry', area: geojsonArea(body.geometry, 'geometry'), band: band.band } };
  } catch (err) {
    if (err instanceof GeoAreaError) return refuse(400, err.message);
    throw err;
  }
}
