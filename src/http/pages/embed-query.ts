// The query of `/embed/{style}` (spec, Embeddable map page): parsed and checked before any HTML is written, so
// the page only ever carries numbers, booleans and known words. Numbers must be finite decimal numbers (NaN,
// Infinity, hex and empty strings are refused); zoom, bearing and pitch are clamped to their ranges (spec,
// Limits); coordinates outside the world are refused, since clamping them would show some other place.

export type EmbedControl = 'navigation' | 'scale' | 'fullscreen';
export const EMBED_CONTROLS: readonly EmbedControl[] = ['navigation', 'scale', 'fullscreen'];
export type EmbedTheme = 'light' | 'dark';

/** Defaults of the spec's table (decisions.md: zoom 2). */
export const EMBED_DEFAULT_ZOOM = 2;
/** More markers than this are refused: a page is no place for a data layer, and the URL would be huge anyway. */
export const MAX_MARKERS = 100;

export interface EmbedOptions {
  /** [lng, lat], when `center` was given. */
  center?: [number, number];
  zoom: number;
  bearing: number;
  pitch: number;
  /** [minLng, minLat, maxLng, maxLat]; overrides center and zoom. */
  bounds?: [number, number, number, number];
  /** [lng, lat] pairs. */
  markers: [number, number][];
  controls: EmbedControl[];
  hash: boolean;
  interactive: boolean;
  /** Absent: the page follows the client's colour-scheme preference. */
  theme?: EmbedTheme;
}

export type EmbedQueryResult = { ok: true; options: EmbedOptions } | { ok: false; parameter: string; detail: string };

/** A finite decimal number, as people write them (`12`, `-0.5`, `.5`, `1e3`); anything else is not a number. */
const NUMBER = /^[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?$/;

class QueryError extends Error {
  constructor(
    readonly parameter: string,
    detail: string,
  ) {
    super(detail);
  }
}

/** Quotes a user's value for a message: JSON string syntax, cut to a readable length. */
const quote = (value: string) => JSON.stringify(value.length > 60 ? `${value.slice(0, 60)}…` : value);

function number(parameter: string, text: string, what = parameter): number {
  const t = text.trim();
  const n = NUMBER.test(t) ? Number(t) : NaN;
  if (!Number.isFinite(n)) throw new QueryError(parameter, `${what} must be a finite number, got ${quote(text)}`);
  // -0 would show as "-0" nowhere useful; it is the same place as 0.
  return n === 0 ? 0 : n;
}

const clamp = (n: number, lo: number, hi: number) => Math.min(hi, Math.max(lo, n));

function lat(parameter: string, text: string): number {
  const n = number(parameter, text, 'a latitude');
  if (n < -90 || n > 90) throw new QueryError(parameter, `latitude ${n} is outside -90..90`);
  return n;
}

function lng(parameter: string, text: string): number {
  const n = number(parameter, text, 'a longitude');
  if (n < -180 || n > 180) throw new QueryError(parameter, `longitude ${n} is outside -180..180`);
  return n;
}

function parts(parameter: string, text: string, count: number, shape: string): string[] {
  const p = text.split(',');
  if (p.length !== count) throw new QueryError(parameter, `${parameter} must be ${shape}, got ${quote(text)}`);
  return p;
}

function boolean(parameter: string, text: string): boolean {
  switch (text.trim().toLowerCase()) {
    case 'true':
    case '1':
    case 'yes':
    case '':
      return true;
    case 'false':
    case '0':
    case 'no':
      return false;
    default:
      throw new QueryError(parameter, `${parameter} must be true or false, got ${quote(text)}`);
  }
}

/** `get(name)` gives the first value of a query parameter, or undefined when it is absent. */
export function parseEmbedQuery(get: (name: string) => string | undefined): EmbedQueryResult {
  try {
    const options: EmbedOptions = {
      zoom: EMBED_DEFAULT_ZOOM,
      bearing: 0,
      pitch: 0,
      markers: [],
      controls: ['navigation'],
      hash: false,
      interactive: true,
    };
    const center = get('center');
    if (center !== undefined) {
      const [la, ln] = parts('center', center, 2, '"lat,lng"');
      options.center = [lng('center', ln), lat('center', la)];
    }
    const zoom = get('zoom');
    if (zoom !== undefined) options.zoom = clamp(number('zoom', zoom), 0, 22);
    const bearing = get('bearing');
    if (bearing !== undefined) options.bearing = clamp(number('bearing', bearing), -360, 360);
    const pitch = get('pitch');
    if (pitch !== undefined) options.pitch = clamp(number('pitch', pitch), 0, 85);
    const bounds = get('bounds');
    if (bounds !== undefined) {
      const [a, b, c, d] = parts('bounds', bounds, 4, '"minLng,minLat,maxLng,maxLat"');
      const box: [number, number, number, number] = [lng('bounds', a), lat('bounds', b), lng('bounds', c), lat('bounds', d)];
      if (box[0] > box[2] || box[1] > box[3]) {
        throw new QueryError('bounds', `bounds must have minLng <= maxLng and minLat <= maxLat, got ${quote(bounds)}`);
      }
      options.bounds = box;
    }
    const markers = get('markers');
    if (markers !== undefined && markers.trim() !== '') {
      const pairs = markers.split('|');
      if (pairs.length > MAX_MARKERS) throw new QueryError('markers', `at most ${MAX_MARKERS} markers, got ${pairs.length}`);
      options.markers = pairs.map((pair) => {
        const [ln, la] = parts('markers', pair, 2, 'pipe-separated "lng,lat" pairs');
        return [lng('markers', ln), lat('markers', la)];
      });
    }
    const controls = get('controls');
    if (controls !== undefined) {
      // Unknown tokens are dropped (spec); each known one counts once, in the order given.
      const tokens = controls.split(',').map((t) => t.trim().toLowerCase());
      options.controls = EMBED_CONTROLS.filter((c) => tokens.includes(c)).sort((x, y) => tokens.indexOf(x) - tokens.indexOf(y));
    }
    const hash = get('hash');
    if (hash !== undefined) options.hash = boolean('hash', hash);
    const interactive = get('interactive');
    if (interactive !== undefined) options.interactive = boolean('interactive', interactive);
    const theme = get('theme');
    if (theme !== undefined) {
      const t = theme.trim().toLowerCase();
      if (t === 'light' || t === 'dark') options.theme = t;
      else if (t !== 'auto' && t !== '') throw new QueryError('theme', `theme must be light, dark or auto, got ${quote(theme)}`);
    }
    return { ok: true, options };
  } catch (err) {
    if (err instanceof QueryError) return { ok: false, parameter: err.parameter, detail: err.message };
    throw err;
  }
}
