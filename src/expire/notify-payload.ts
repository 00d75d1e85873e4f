// What a NOTIFY on `[postgres] expire_channel` may say, and the tiles it names. Two shapes (issue 47's interface):
//   {"table": "schema.name", "bbox": [w, s, e, n]}   what the trigger of sql/expire-trigger.sql sends
//   {"source": "id", "tiles": ["z/x/y", ...]}         what a trigger on an osm2pgsql expire table sends
// (a source as the admin route takes it: a configured id, a named composite or `a+b`, reaching their members).
// Anything else is refused with a reason (a metric label) and a detail (the log line); nothing here throws.
import type { Config } from '../config/schema.js';
import { tableSources } from './tables.js';
import { expirySources } from './targets.js';
import { MAX_KEY_ZOOM, tileKey, validTile } from './tile-key.js';

/** Why a payload was refused: the `reason` label of `expire_notify_rejected_total`. */
export type RejectReason = 'not_json' | 'shape' | 'bbox' | 'unknown_table' | 'unknown_source' | 'tile';

/** A payload understood: the sources whose data changed and the tile keys (unsorted, may repeat) it touches. */
export interface NotifyExpiry {
  sources: string[];
  keys: number[];
}

export type ParsedNotify = { ok: true; expiry: NotifyExpiry } | { ok: false; reason: RejectReason; detail: string };

/**
 * How far around a changed box tiles count as touched, as a share of a tile at each zoom: a vector tile carries
 * features up to its buffer (64 of 4096 by default) beyond its edge, and a rendered tile draws labels and symbols
 * that spill over from its neighbours. osm2pgsql's expire buffer (0.1 of a tile) plays the same part.
 */
export const MARGIN = 0.25;

/**
 * Most tiles a box marks at its deepest zoom. A box too big for that at the sources' deepest zoom is marked at the
 * deepest zoom where it fits: an expired tile covers every tile under it, so a coarser mark expires a little more
 * but never less, and a world-sized box costs a handful of keys rather than billions.
 */
export const MAX_BOX_TILES = 4096;

/** Web Mercator's latitude limit: tiles end there. */
const MAX_LAT = 85.0511287798066;

const refuse = (reason: RejectReason, detail: string): ParsedNotify => ({ ok: false, reason, detail });

/** Reads one payload against the configuration in force. */
export function parseNotify(payload: string, config: Config): ParsedNotify {
  let value: unknown;
  try {
    value = JSON.parse(payload);
  } catch {
    return refuse('not_json', 'the payload is not JSON');
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return refuse('shape', 'the payload is not a JSON object');
  const o = value as Record<string, unknown>;
  const keys = Object.keys(o).sort().join(',');
  if (keys === 'bbox,table') return tablePayload(o.table, o.bbox, config);
  if (keys === 'source,tiles') return sourcePayload(o.source, o.tiles, config);
  return refuse('shape', `expected {"table", "bbox"} or {"source", "tiles"}, got the keys {${keys}}`);
}

function tablePayload(table: unknown, bbox: unknown, config: Config): ParsedNotify {
  if (typeof table !== 'string' || table === '') return refuse('shape', '"table" is not a non-empty string');
  const box = readBbox(bbox);
  if (typeof box === 'string') return refuse('bbox', box);
  const sources = tableSources(config, table);
  if (sources.length === 0) return refuse('unknown_table', `no [[postgres.tables]] source reads the table "${table}"`);
  // The deepest zoom any source of the table is served at: deeper tiles are never asked for.
  const tables = config.postgres?.tables ?? [];
  const deepest = Math.max(...tables.filter((t) => sources.includes(t.id)).map((t) => t.maxzoom));
  return { ok: true, expiry: { sources, keys: boxKeys(box, Math.min(deepest, MAX_KEY_ZOOM)) } };
}

function sourcePayload(source: unknown, tiles: unknown, config: Config): ParsedNotify {
  if (typeof source !== 'string' || source === '') return refuse('shape', '"source" is not a non-empty string');
  if (!Array.isArray(tiles) || tiles.length === 0) return refuse('shape', '"tiles" is not a non-empty array');
  const named = expirySources(config, source);
  if (!named.ok) return refuse('unknown_source', `no source has the id "${named.unknown}"`);
  const keys: number[] = [];
  for (let i = 0; i < tiles.length; i++) {
    const t = readTile(tiles[i]);
    if (t === undefined) return refuse('tile', `tiles[${i}] is not a tile z/x/y with z from 0 to ${MAX_KEY_ZOOM} and x, y within the zoom`);
    keys.push(t);
  }
  return { ok: true, expiry: { sources: named.sources, keys } };
}

const TILE = /^(\d{1,2})\/(\d{1,8})\/(\d{1,8})$/;

/** The key of a `z/x/y` string, or undefined when it names no tile. */
function readTile(value: unknown): number | undefined {
  if (typeof value !== 'string') return undefined;
  const m = TILE.exec(value);
  if (!m) return undefined;
  const [z, x, y] = [Number(m[1]), Number(m[2]), Number(m[3])];
  return validTile(z, x, y) ? tileKey(z, x, y) : undefined;
}

/** A box in degrees, west to east and south to north. */
export type Bbox = [w: number, s: number, e: number, n: number];

/** The box of a payload, or what is wrong with it. A box crossing the antimeridian (w > e) is refused. */
function readBbox(value: unknown): Bbox | string {
  if (!Array.isArray(value) || value.length !== 4 || !value.every((c) => typeof c === 'number' && Number.isFinite(c))) {
    return '"bbox" is not an array of four finite numbers [west, south, east, north]';
  }
  const [w, s, e, n] = value as Bbox;
  if (w < -180 || e > 180 || w > e) return `"bbox" longitudes must satisfy -180 <= west <= east <= 180 (got ${w}, ${e})`;
  if (s < -90 || n > 90 || s > n) return `"bbox" latitudes must satisfy -90 <= south <= north <= 90 (got ${s}, ${n})`;
  return [w, s, e, n];
}

/** A longitude and latitude as fractions of the Web Mercator square (0..1, y down). */
function mercator(lon: number, lat: number): [number, number] {
  const phi = (Math.max(-MAX_LAT, Math.min(MAX_LAT, lat)) * Math.PI) / 180;
  return [(lon + 180) / 360, (1 - Math.log(Math.tan(phi) + 1 / Math.cos(phi)) / Math.PI) / 2];
}

/** The tile columns and rows at zoom z touched by the box (fractions) grown by MARGIN of a tile. */
function tileRange(x0: number, y0: number, x1: number, y1: number, z: number): [number, number, number, number] {
  const size = 2 ** z;
  const clamp = (v: number) => Math.max(0, Math.min(size - 1, Math.floor(v)));
  return [clamp(x0 * size - MARGIN), clamp(y0 * size - MARGIN), clamp(x1 * size + MARGIN), clamp(y1 * size + MARGIN)];
}

/**
 * The keys a changed box touches. Marked whole at the deepest zoom where the box (grown by MARGIN of a tile) covers
 * at most MAX_BOX_TILES tiles, at most `maxZoom`: the index answers every zoom above and below from them. A
 * coarser zoom's margin is wider in degrees, so a tile there can be touched through its buffer and still hold none
 * of those tiles: it gets one of its own tiles at the marked zoom (the one nearest the box), which reaches it.
 * Never the key 0 unless the box is marked at zoom 0 (0/0/0 marked whole is "the whole world changed").
 */
export function boxKeys(box: Bbox, maxZoom: number): number[] {
  const [x0, y1] = mercator(box[0], box[1]);
  const [x1, y0] = mercator(box[2], box[3]);
  let deep = 0;
  for (let z = 1; z <= maxZoom; z++) {
    const [c0, r0, c1, r1] = tileRange(x0, y0, x1, y1, z);
    if ((c1 - c0 + 1) * (r1 - r0 + 1) > MAX_BOX_TILES) break;
    deep = z;
  }
  const [c0, r0, c1, r1] = tileRange(x0, y0, x1, y1, deep);
  // Every tile of that zoom: the whole world changed (a TRUNCATE), one key says it.
  if (c0 === 0 && r0 === 0 && c1 === 2 ** deep - 1 && r1 === 2 ** deep - 1) return [tileKey(0, 0, 0)];
  const keys: number[] = [];
  for (let x = c0; x <= c1; x++) for (let y = r0; y <= r1; y++) keys.push(tileKey(deep, x, y));
  const clamp = (v: number, lo: number, hi: number) => Math.max(lo, Math.min(hi, v));
  for (let z = deep - 1; z >= 0; z--) {
    const span = 2 ** (deep - z);
    const [a0, b0, a1, b1] = tileRange(x0, y0, x1, y1, z);
    for (let tx = a0; tx <= a1; tx++) {
      for (let ty = b0; ty <= b1; ty++) {
        const [lo, hi, top, bottom] = [tx * span, (tx + 1) * span - 1, ty * span, (ty + 1) * span - 1];
        if (lo <= c1 && hi >= c0 && top <= r1 && bottom >= r0) continue; // holds marked tiles already
        keys.push(tileKey(deep, clamp(c0, lo, hi), clamp(r0, top, bottom)));
      }
    }
  }
  return keys;
}
