// The user input of the elevation API, validated: one point (query text), a batch of points (JSON) and a profile
// line (JSON). Every parser returns a value or a problem string that names what is wrong, with the index of the
// point when there are several (`points[3]: lat must be ...`); the route answers 400 problem+json with it. No
// input makes a parser throw: the bodies arrive as whatever JSON.parse made of the request.
//
// Coordinates must lie where the elevation tiles are: longitudes -180..180 and latitudes within Web Mercator's
// limit (±85.0511287798066°, where the square world of tiles ends), not the poles.
import { lineLength, sampleCount, type LonLat, type SampleSpec } from './profile.js';

export type Parsed<T> = { ok: true; value: T } | { ok: false; problem: string };

/** Web Mercator's latitude limit, atan(sinh(π)) in degrees: the top and bottom edges of the tile pyramid. */
export const MERCATOR_MAX_LAT = 85.0511287798066;
/** The highest zoom a point may ask for (tileserver-gl's `z`), the same ceiling as the rendering routes'. */
export const MAX_POINT_ZOOM = 22;

/**
 * Points in one batch, unless configured otherwise: Google's Elevation API takes at most 512 locations a
 * request, so clients are used to it. Points far apart cost a tile read and decode each (a 512-pixel PNG, a few
 * milliseconds of CPU), so this bounds the work of one request at a few seconds of one core in the worst case.
 */
export const DEFAULT_MAX_POINTS = 512;

export interface ProfileLimits {
  /** The most samples along the line (the points of the answer). */
  maxSamples: number;
  /** The longest line, in metres along its great circles. */
  maxLengthM: number;
  /** The most vertices of the line given. */
  maxVertices: number;
}

/**
 * Profile limits, unless configured otherwise. 10,000 samples are more than any chart can show (a 4K screen is
 * 3,840 pixels wide) and an answer of about 600 KB of JSON; over the longest line, 1,000 km (a long day's drive,
 * beyond which the lon/lat interpolation of long segments drifts; see profile.ts), they are still one every
 * 100 m, about the resolution of the elevation tiles a line that long is read at. 10,000 vertices hold a GPS
 * track of a long hike simplified to a few metres; measuring them is cheap, and the request body stays near
 * 300 KB.
 */
export const DEFAULT_PROFILE_LIMITS: ProfileLimits = { maxSamples: 10_000, maxLengthM: 1_000_000, maxVertices: 10_000 };

/** Which form a batch of points came in: ours (`[[lon, lat], ...]`) or tileserver-gl's (`[{lon, lat, z}, ...]`). */
export type PointsForm = 'pairs' | 'objects';

export interface PointsBody {
  form: PointsForm;
  points: LonLat[];
  /** The zoom given with each point (tileserver-gl's form), undefined where none was given; parallel to points. */
  z: (number | undefined)[];
}

export type ProfileForm = 'geometry' | 'feature' | 'polyline';

export interface ProfileRequest {
  form: ProfileForm;
  /** The line's vertices as given (altitudes dropped), lon/lat. */
  coords: LonLat[];
  spec: SampleSpec;
  /** The line's great-circle length in metres (profile.ts). */
  length_m: number;
  /** How many samples the spec gives over that length. */
  samples: number;
}

const fail = (problem: string): { ok: false; problem: string } => ({ ok: false, problem });

// ---- Showing what was given -----------------------------------------------------------------------------------

/** Text quoted for a problem, cut short: a problem repeats the user's input, not a megabyte of it. */
function quote(text: string): string {
  return JSON.stringify(text.length > 40 ? `${text.slice(0, 40)}…` : text);
}

/** What a JSON value is, for "must be a number, not ...". */
function describe(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return `an array of ${v.length}`;
  if (typeof v === 'string') return `the string ${quote(v)}`;
  if (typeof v === 'number') return String(v);
  if (typeof v === 'object') return 'an object';
  return typeof v === 'boolean' ? String(v) : typeof v;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

/** An own member of an object: a body's "__proto__" or "toString" key is data, not something inherited. */
const member = (o: Record<string, unknown>, key: string): unknown => (Object.hasOwn(o, key) ? o[key] : undefined);

/** The first member not among `allowed`, for refusing a typo such as "lng" instead of silently ignoring it. */
const unknownMember = (o: Record<string, unknown>, allowed: readonly string[]) => Object.keys(o).find((k) => !allowed.includes(k));

// ---- Coordinates ----------------------------------------------------------------------------------------------

// Decimal only: Number() would also read "0x10", "0b1", " 1 ", "" (as 0) and "Infinity".
const DECIMAL = /^-?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?$/;

/** A longitude as a number: finite and -180..180; `prefix` says which point (`points[3]: `). */
function checkLon(v: unknown, prefix = ''): Parsed<number> {
  if (typeof v !== 'number') return fail(`${prefix}lon must be a number, not ${describe(v)}`);
  if (!(v >= -180 && v <= 180)) return fail(`${prefix}lon must be within -180..180, not ${v}`);
  return { ok: true, value: v };
}

/** A latitude as a number: finite and within Web Mercator's limit. */
function checkLat(v: unknown, prefix = ''): Parsed<number> {
  if (typeof v !== 'number') return fail(`${prefix}lat must be a number, not ${describe(v)}`);
  if (!(v >= -MERCATOR_MAX_LAT && v <= MERCATOR_MAX_LAT)) {
    return fail(`${prefix}lat must be within ±85.05112878 (Web Mercator's limit: the elevation tiles end there), not ${v}`);
  }
  return { ok: true, value: v };
}

/** A lon/lat pair of JSON values, each checked; `prefix` names the point. */
function checkPoint(lon: unknown, lat: unknown, prefix: string): Parsed<LonLat> {
  const x = checkLon(lon, prefix);
  if (!x.ok) return x;
  const y = checkLat(lat, prefix);
  if (!y.ok) return y;
  return { ok: true, value: [x.value, y.value] };
}

/** Query text as a number: decimal digits with an optional sign, point and exponent, and nothing around them. */
function readDecimal(text: string | undefined, field: 'lon' | 'lat'): Parsed<number> {
  if (text === undefined) return fail(`${field} is required`);
  if (!DECIMAL.test(text)) return fail(`${field} must be a decimal number (such as -12.5 or 1.25e1), not ${quote(text)}`);
  return { ok: true, value: Number(text) };
}

/** `lon` and `lat` of a query (absent: undefined) as a point inside the tiles. */
export function parsePoint(lonText: string | undefined, latText: string | undefined): Parsed<LonLat> {
  const lon = readDecimal(lonText, 'lon');
  if (!lon.ok) return lon;
  const lat = readDecimal(latText, 'lat');
  if (!lat.ok) return lat;
  // A decimal too long for a double reads as ±Infinity, which the range checks refuse.
  return checkPoint(lon.value, lat.value, '');
}

// ---- A batch of points ----------------------------------------------------------------------------------------

const POINTS_FORMS = '[[lon, lat], ...] or [{"lon": ..., "lat": ..., "z": ...}, ...]';

/**
 * `{"points": [[lon, lat], ...]}` or tileserver-gl's `{"points": [{"lon", "lat", "z"?}, ...]}`: one form for all
 * points, 1..max of them. The body has no other members, and the objects none but lon, lat and z, so that a typo
 * ("lng") is refused instead of read as a missing value.
 */
export function parsePointsBody(json: unknown, max: number): Parsed<PointsBody> {
  if (!isObject(json)) return fail(`the body must be a JSON object {"points": ${POINTS_FORMS}}, not ${describe(json)}`);
  const extra = unknownMember(json, ['points']);
  if (extra !== undefined) return fail(`unknown member ${quote(extra)}: the body has one member, points`);
  const points = member(json, 'points');
  if (points === undefined) return fail(`points is required: ${POINTS_FORMS}`);
  if (!Array.isArray(points)) return fail(`points must be an array, ${POINTS_FORMS}, not ${describe(points)}`);
  if (points.length === 0) return fail('points is empty: give at least one point');
  if (points.length > max) return fail(`points holds ${points.length} points, more than the limit of ${max}`);
  const form: PointsForm | undefined = Array.isArray(points[0]) ? 'pairs' : isObject(points[0]) ? 'objects' : undefined;
  if (form === undefined) return fail(`points[0]: must be a [lon, lat] pair or a {"lon", "lat"} object, not ${describe(points[0])}`);
  const out: LonLat[] = [];
  const zooms: (number | undefined)[] = [];
  for (let i = 0; i < points.length; i++) {
    const p: unknown = points[i];
    const prefix = `points[${i}]: `;
    if (form === 'pairs') {
      if (!Array.isArray(p)) return fail(`${prefix}must be a [lon, lat] pair like points[0], not ${describe(p)} (one form for all points)`);
      if (p.length !== 2) return fail(`${prefix}must be a [lon, lat] pair, not ${describe(p)}`);
      const pt = checkPoint(p[0], p[1], prefix);
      if (!pt.ok) return pt;
      out.push(pt.value);
      zooms.push(undefined);
      continue;
    }
    if (!isObject(p)) return fail(`${prefix}must be a {"lon", "lat"} object like points[0], not ${describe(p)} (one form for all points)`);
    const unknown = unknownMember(p, ['lon', 'lat', 'z']);
    if (unknown !== undefined) return fail(`${prefix}unknown member ${quote(unknown)} (a point has lon, lat and an optional z)`);
    if (!Object.hasOwn(p, 'lon')) return fail(`${prefix}lon is required`);
    if (!Object.hasOwn(p, 'lat')) return fail(`${prefix}lat is required`);
    const pt = checkPoint(p.lon, p.lat, prefix);
    if (!pt.ok) return pt;
    const z = member(p, 'z');
    if (z !== undefined && !(typeof z === 'number' && Number.isInteger(z) && z >= 0 && z <= MAX_POINT_ZOOM)) {
      return fail(`${prefix}z must be an integer zoom 0..${MAX_POINT_ZOOM}, not ${describe(z)}`);
    }
    out.push(pt.value);
    zooms.push(z);
  }
  return { ok: true, value: { form, points: out, z: zooms } };
}

// ---- Encoded polylines ----------------------------------------------------------------------------------------

/**
 * A value of Google's encoded polyline algorithm runs for at most 6 characters when it holds a coordinate
 * difference (360° at precision 6, zigzagged, is under 2^30: six 5-bit chunks). One more is allowed for
 * encoders that pad; anything longer is not a polyline, and stopping there keeps the arithmetic exact.
 */
const MAX_CHUNKS = 7;

/**
 * Google's encoded polyline (latitude first, then longitude, each a zigzagged difference from the previous point
 * in 5-bit chunks, characters "?" to "~") at `precision` decimal places, as lon/lat points. Malformed text (a
 * character outside the alphabet, a value cut off at the end, a latitude without its longitude) is a problem.
 * Differences are summed as integers and divided once, so a long polyline does not drift.
 */
export function decodePolyline(text: string, precision: 5 | 6): Parsed<LonLat[]> {
  const factor = 10 ** precision;
  const values: number[] = [];
  let result = 0;
  let chunks = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i) - 63;
    if (c < 0 || c > 63) return fail(`polyline: ${quote(text[i])} at index ${i} is not a character of an encoded polyline ("?" to "~")`);
    // Multiplication rather than shifts: JavaScript's bit operators work on 32 bits, and 7 chunks need 35.
    result += (c & 0x1f) * 2 ** (5 * chunks);
    chunks++;
    if (c >= 0x20) {
      if (chunks === MAX_CHUNKS) return fail(`polyline: the value ending at index ${i} runs on for more than ${MAX_CHUNKS} characters`);
      continue;
    }
    // Zigzag: even numbers are the non-negative values doubled, odd ones the negative values.
    values.push(result % 2 === 1 ? -(result + 1) / 2 : result / 2);
    result = 0;
    chunks = 0;
  }
  if (chunks > 0) return fail('polyline: the text ends in the middle of a value (its last character says more follow)');
  if (values.length % 2 === 1) return fail('polyline: the text ends after a latitude, with no longitude for it');
  const out: LonLat[] = [];
  let lat = 0;
  let lon = 0;
  for (let i = 0; i < values.length; i += 2) {
    lat += values[i];
    lon += values[i + 1];
    out.push([lon / factor, lat / factor]);
  }
  return { ok: true, value: out };
}

// ---- A profile line -------------------------------------------------------------------------------------------

const PROFILE_FORMS = 'a GeoJSON LineString, a Feature with a LineString geometry, or {"polyline": "..."}';

/** GeoJSON positions as lon/lat: [lon, lat] or [lon, lat, altitude] (the altitude is checked and dropped). */
function readPositions(v: unknown, field: string, limits: ProfileLimits): Parsed<LonLat[]> {
  if (!Array.isArray(v)) return fail(`${field} must be an array of positions [lon, lat], not ${describe(v)}`);
  const vertices = checkVertexCount(v.length, field, limits);
  if (!vertices.ok) return vertices;
  const out: LonLat[] = [];
  for (let i = 0; i < v.length; i++) {
    const p: unknown = v[i];
    const prefix = `${field}[${i}]: `;
    if (!Array.isArray(p) || p.length < 2 || p.length > 3) return fail(`${prefix}must be a position [lon, lat] or [lon, lat, altitude], not ${describe(p)}`);
    if (p.length === 3 && !(typeof p[2] === 'number' && Number.isFinite(p[2]))) return fail(`${prefix}altitude must be a number, not ${describe(p[2])}`);
    const pt = checkPoint(p[0], p[1], prefix);
    if (!pt.ok) return pt;
    out.push(pt.value);
  }
  return { ok: true, value: out };
}

function checkVertexCount(n: number, field: string, limits: ProfileLimits): Parsed<number> {
  if (n < 2) return fail(`${field} has ${n} ${n === 1 ? 'vertex' : 'vertices'}: a line needs at least 2`);
  if (n > limits.maxVertices) return fail(`${field} has ${n} vertices, more than the limit of ${limits.maxVertices}`);
  return { ok: true, value: n };
}

/** The decoded polyline, its points checked like positions (`polyline point 3: lat ...`). */
function readPolyline(body: Record<string, unknown>, limits: ProfileLimits): Parsed<LonLat[]> {
  const extra = unknownMember(body, ['polyline', 'precision', 'samples', 'step_m']);
  // Strict here (unlike GeoJSON, which allows foreign members): a misspelt "precision" would decode every point
  // at the wrong scale without a word.
  if (extra !== undefined) return fail(`unknown member ${quote(extra)}: a polyline body has polyline, precision, and samples or step_m`);
  const text = member(body, 'polyline');
  if (typeof text !== 'string') return fail(`polyline must be a string (Google's encoded polyline), not ${describe(text)}`);
  const given = member(body, 'precision');
  const precision = given === undefined ? 5 : given;
  if (precision !== 5 && precision !== 6) return fail(`precision must be 5 or 6 (the decimal places of the encoded coordinates), not ${describe(precision)}`);
  const decoded = decodePolyline(text, precision);
  if (!decoded.ok) return decoded;
  const vertices = checkVertexCount(decoded.value.length, 'polyline', limits);
  if (!vertices.ok) return vertices;
  for (let i = 0; i < decoded.value.length; i++) {
    const [lon, lat] = decoded.value[i];
    const pt = checkPoint(lon, lat, `polyline point ${i}: `);
    if (!pt.ok) return pt;
  }
  return decoded;
}

/** `samples` or `step_m`, exactly one of them, each in its range (the sample count is checked once the length is known). */
function readSpec(body: Record<string, unknown>, limits: ProfileLimits): Parsed<SampleSpec> {
  const samples = member(body, 'samples');
  const step = member(body, 'step_m');
  if (samples !== undefined && step !== undefined) return fail('give samples or step_m, not both');
  if (samples !== undefined) {
    if (!(typeof samples === 'number' && Number.isInteger(samples) && samples >= 2 && samples <= limits.maxSamples)) {
      return fail(`samples must be an integer 2..${limits.maxSamples}, not ${describe(samples)}`);
    }
    return { ok: true, value: { samples } };
  }
  if (step !== undefined) {
    if (!(typeof step === 'number' && Number.isFinite(step) && step > 0)) return fail(`step_m must be a number of metres above 0, not ${describe(step)}`);
    return { ok: true, value: { step_m: step } };
  }
  return fail(`give samples (how many points along the line, 2..${limits.maxSamples}) or step_m (metres between them)`);
}

/** The line of a body in one of the three forms, and which form it was. */
function readLine(body: Record<string, unknown>, limits: ProfileLimits): Parsed<{ form: ProfileForm; coords: LonLat[] }> {
  const type = member(body, 'type');
  if (Object.hasOwn(body, 'polyline')) {
    if (type !== undefined) return fail('give a GeoJSON line (with "type") or a polyline, not both');
    const coords = readPolyline(body, limits);
    return coords.ok ? { ok: true, value: { form: 'polyline', coords: coords.value } } : coords;
  }
  if (type === 'LineString') {
    const coords = readPositions(member(body, 'coordinates'), 'coordinates', limits);
    return coords.ok ? { ok: true, value: { form: 'geometry', coords: coords.value } } : coords;
  }
  if (type === 'Feature') {
    const geometry = member(body, 'geometry');
    if (!isObject(geometry)) return fail(`geometry must be a LineString geometry, not ${describe(geometry)}`);
    const gtype = member(geometry, 'type');
    if (gtype !== 'LineString') return fail(`geometry.type must be "LineString" (a profile follows one line), not ${describe(gtype)}`);
    const coords = readPositions(member(geometry, 'coordinates'), 'geometry.coordinates', limits);
    return coords.ok ? { ok: true, value: { form: 'feature', coords: coords.value } } : coords;
  }
  if (type !== undefined) return fail(`type must be "LineString" or "Feature" (a profile follows one line), not ${describe(type)}`);
  return fail(`the body must be ${PROFILE_FORMS}`);
}

/**
 * The body of a profile request: the line as a GeoJSON LineString geometry, a Feature whose geometry is one, or
 * `{"polyline": "...", "precision": 5 | 6}`, with `samples` or `step_m` beside it at the top level. GeoJSON
 * members the profile does not use (properties, id, bbox, ...) are allowed, as GeoJSON allows foreign members.
 * The line needs 2..maxVertices vertices, a length above 0 and at most maxLengthM, and the spec at most
 * maxSamples samples over it.
 */
export function parseProfileBody(json: unknown, limits: ProfileLimits): Parsed<ProfileRequest> {
  if (!isObject(json)) return fail(`the body must be ${PROFILE_FORMS}, as a JSON object, not ${describe(json)}`);
  // The line first: when the body is not a line at all, that is the problem to report, not a missing `samples`.
  const line = readLine(json, limits);
  if (!line.ok) return line;
  const spec = readSpec(json, limits);
  if (!spec.ok) return spec;
  const length = lineLength(line.value.coords);
  if (!(length > 0)) return fail('the line has no length: all its vertices are the same point');
  if (length > limits.maxLengthM) return fail(`the line is ${Math.ceil(length)} m long, more than the limit of ${limits.maxLengthM} m`);
  const samples = sampleCount(length, spec.value);
  if (samples > limits.maxSamples) {
    // The smallest step, to the centimetre, that keeps the count within the limit.
    const least = Math.ceil((length / (limits.maxSamples - 1)) * 100) / 100;
    return fail(`step_m ${describe(member(json, 'step_m'))} over a line of ${Math.round(length)} m gives ${samples} samples, more than the limit of ${limits.maxSamples}: use a step of at least ${least} m`);
  }
  return { ok: true, value: { form: line.value.form, coords: line.value.coords, spec: spec.value, length_m: length, samples } };
}
