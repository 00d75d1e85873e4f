// Elevation profiles along a line: where to sample it, and what the sampled elevations add up to. Pure
// arithmetic, no tiles: the route reads an elevation at each sample and then calls `summarise`.
//
// Distances are great-circle distances on a sphere of radius 6,371,008.8 m (the IUGG mean Earth radius, R1),
// by the haversine formula. Against the WGS84 ellipsoid that is off by up to about 0.5 % (most along meridians
// near the poles and along the equator); a profile chart does not show the difference, and one formula for the
// length limit, the sample spacing and the reported distances keeps them consistent with each other.
//
// Within one segment a sample's position is interpolated linearly in longitude and latitude by its fraction of
// the segment's great-circle length. The gap to the great circle grows with the square of the segment's length:
// along the 60th parallel, at a segment's middle, it is 0.26 m for a 2.8 km segment, 1 m for 5.6 km, 105 m for
// 56 km and 42 km for 1,100 km (computed for this comment). The segments of drawn lines and GPS tracks are
// short, and a long one is followed as a straight line in longitude and latitude, close to how a map draws it.

export type LonLat = [number, number];

/** How to sample a line: `samples` points evenly spread over its length, or one every `step_m` metres. */
export type SampleSpec = { samples: number } | { step_m: number };

export interface ProfileSample {
  /** Great-circle distance from the line's start, in metres, along the line. */
  distance_m: number;
  lon: number;
  lat: number;
}

export interface ProfileSummary {
  /** The sum of rises between consecutive known elevations, in metres, to 0.01 m. */
  ascent_m: number;
  /** The sum of drops between consecutive known elevations, in metres (a positive number), to 0.01 m. */
  descent_m: number;
  /** The lowest and highest known elevations, or null when no sample has one. */
  min: number | null;
  max: number | null;
}

/** The mean Earth radius (IUGG R1), in metres: the sphere every distance here is measured on. */
export const EARTH_RADIUS_M = 6_371_008.8;

/**
 * Two distances closer than this are the same place (a micrometre, far below any elevation model's resolution):
 * it keeps a step that divides the length up to rounding from adding a second sample at the end.
 */
const SAME_DISTANCE_M = 1e-6;

const RAD = Math.PI / 180;

/** Great-circle distance between two lon/lat points, in metres (haversine). */
export function haversine(a: LonLat, b: LonLat): number {
  const dLat = (b[1] - a[1]) * RAD;
  const dLon = (b[0] - a[0]) * RAD;
  const h = Math.sin(dLat / 2) ** 2 + Math.cos(a[1] * RAD) * Math.cos(b[1] * RAD) * Math.sin(dLon / 2) ** 2;
  // Rounding can push h a hair above 1 for antipodal points; asin would then give NaN.
  return 2 * EARTH_RADIUS_M * Math.asin(Math.sqrt(Math.min(1, h)));
}

/** Distance from the start to each vertex: [0, d01, d01 + d12, ...]. */
export function cumulativeDistances(coords: readonly LonLat[]): number[] {
  const out = coords.length ? [0] : [];
  for (let i = 1; i < coords.length; i++) out.push(out[i - 1] + haversine(coords[i - 1], coords[i]));
  return out;
}

/** The line's length in metres: the sum of its segments' great-circle lengths. */
export function lineLength(coords: readonly LonLat[]): number {
  const d = cumulativeDistances(coords);
  return d.length ? d[d.length - 1] : 0;
}

/**
 * The steps of `step_m` that come strictly before the end of a line of `length_m` (0, step, ... while more than
 * SAME_DISTANCE_M short of the end). Zero for a line no longer than SAME_DISTANCE_M: it is one place.
 */
function stepsBeforeEnd(length_m: number, step: number): number {
  if (length_m <= SAME_DISTANCE_M) return 0;
  return Math.max(1, Math.ceil((length_m - SAME_DISTANCE_M) / step));
}

/** A step that can be used: a positive finite number (anything else samples the start and the end only). */
const usableStep = (step: number) => step > 0 && Number.isFinite(step);

/**
 * The distances from the start at which a line of `length_m` is sampled. `samples`: n distances evenly spaced,
 * the first 0 and the last the length. `step_m`: 0, step, 2·step, ... and the length itself when it is not
 * already one of them (to within a micrometre). A line of no length has one sample for a step, and n samples at
 * 0 for `samples`.
 */
export function sampleDistances(length_m: number, spec: SampleSpec): number[] {
  if ('samples' in spec) {
    const n = Math.floor(spec.samples);
    if (!(n > 0)) return [];
    if (n === 1) return [0];
    // The last one is the length itself, not (n-1)/(n-1)·length, which rounding might leave a hair short.
    return Array.from({ length: n }, (_, i) => (i === n - 1 ? length_m : (length_m * i) / (n - 1)));
  }
  if (!usableStep(spec.step_m)) return length_m > SAME_DISTANCE_M ? [0, length_m] : [0];
  const k = stepsBeforeEnd(length_m, spec.step_m);
  if (k === 0) return [0];
  const out = Array.from({ length: k }, (_, i) => i * spec.step_m);
  out.push(length_m);
  return out;
}

/** How many samples `sampleDistances` gives, without making the array (the parser checks it against a limit). */
export function sampleCount(length_m: number, spec: SampleSpec): number {
  if ('samples' in spec) {
    const n = Math.floor(spec.samples);
    return n > 0 ? n : 0;
  }
  if (!usableStep(spec.step_m)) return length_m > SAME_DISTANCE_M ? 2 : 1;
  return stepsBeforeEnd(length_m, spec.step_m) + 1;
}

/** Wraps a longitude into -180..180 (a wrapped interpolation can step just past ±180). */
function wrapLon(lon: number): number {
  if (lon > 180) return lon - 360;
  if (lon < -180) return lon + 360;
  return lon;
}

/** The point at fraction t (0..1) of the segment a→b, straight in lon/lat, across the antimeridian when shorter. */
function interpolate(a: LonLat, b: LonLat, t: number): LonLat {
  // The vertex itself, not a sum equal to it: -0 + 0 would turn a latitude of -0 into 0.
  if (t === 0) return [a[0], a[1]];
  const lat = a[1] * (1 - t) + b[1] * t;
  const dLon = b[0] - a[0];
  // This form gives exactly a at t = 0 and exactly b at t = 1, so a sample that falls on a vertex is that vertex.
  if (Math.abs(dLon) <= 180) return [a[0] * (1 - t) + b[0] * t, lat];
  // The segment crosses the antimeridian (haversine measured it the short way): interpolate the same way.
  if (t === 1) return [b[0], lat];
  const shortLon = dLon > 0 ? dLon - 360 : dLon + 360;
  return [wrapLon(a[0] + t * shortLon), lat];
}

/**
 * Samples along the line: see `sampleDistances` for where, and the module comment for how positions are
 * interpolated. Vertices are not added: a vertex appears only when a sample falls on it.
 */
export function sampleLine(coords: readonly LonLat[], spec: SampleSpec): ProfileSample[] {
  if (coords.length === 0) return [];
  const cum = cumulativeDistances(coords);
  const length = cum[cum.length - 1];
  const out: ProfileSample[] = [];
  // The distances rise, so one walk along the segments serves them all.
  let seg = 0;
  const distances = sampleDistances(length, spec);
  const last = coords[coords.length - 1];
  distances.forEach((d, i) => {
    while (seg < coords.length - 2 && cum[seg + 1] < d) seg++;
    // The last sample is the last vertex itself, even on a line of (almost) no length where every distance is 0.
    if (coords.length === 1 || (i > 0 && i === distances.length - 1)) {
      const [lon, lat] = coords.length === 1 ? coords[0] : last;
      out.push({ distance_m: d, lon, lat });
      return;
    }
    const segLength = cum[seg + 1] - cum[seg];
    // A segment of no length (a repeated vertex) has nothing to interpolate: its start is the place.
    const t = segLength > 0 ? Math.min(1, Math.max(0, (d - cum[seg]) / segLength)) : 0;
    const [lon, lat] = interpolate(coords[seg], coords[seg + 1], t);
    out.push({ distance_m: d, lon, lat });
  });
  return out;
}

const round2 = (v: number) => Math.round(v * 100) / 100 + 0; // + 0 turns -0 into 0

/**
 * Ascent, descent, lowest and highest of a profile. Missing elevations (null: no data there, or not a finite
 * number) are skipped, so a rise across a gap counts between the known samples on either side of it. Sums are
 * rounded once at the end, to 0.01 m. `distances` are the samples' distances, given so that a profile whose
 * elevations and distances do not pair up is caught here rather than summarised wrongly.
 */
export function summarise(elevations: readonly (number | null)[], distances: readonly number[]): ProfileSummary {
  if (elevations.length !== distances.length) {
    throw new RangeError(`summarise: ${elevations.length} elevations for ${distances.length} distances`);
  }
  let ascent = 0;
  let descent = 0;
  let min = Infinity;
  let max = -Infinity;
  let previous: number | undefined;
  for (const e of elevations) {
    if (e === null || !Number.isFinite(e)) continue;
    if (previous !== undefined) {
      if (e > previous) ascent += e - previous;
      else descent += previous - e;
    }
    previous = e;
    if (e < min) min = e;
    if (e > max) max = e;
  }
  const known = previous !== undefined;
  return { ascent_m: round2(ascent), descent_m: round2(descent), min: known ? round2(min) : null, max: known ? round2(max) : null };
}
