// Encoded polylines (Google's "Encoded Polyline Algorithm Format"): each coordinate is the difference from the
// previous one, times 10^precision, rounded, zig-zag signed (left shift, inverted when negative), then written
// five bits at a time from the lowest, each chunk plus 63 as one character, all but the last chunk ORed with 0x20.
// Pairs are latitude first. Precision 5 is Google's; 6 is what OSRM and Valhalla write.

export type PolylinePrecision = 5 | 6;

/** [longitude, latitude] (the overlays' LonLat; declared here so that overlays.ts can import this module). */
type Point = [number, number];
type Decoded = { ok: true; value: Point[] } | { ok: false; problem: string };

/** More points than any static map can use: a bound on the work a single value can ask for. */
export const MAX_POLYLINE_POINTS = 100_000;

/**
 * The points of an encoded polyline as [lon, lat], or the problem: a character outside '?'..'~', a value cut
 * short, an odd number of values, a coordinate outside the ranges of longitudes and latitudes.
 */
export function decodePolyline(text: string, precision: PolylinePrecision = 5): Decoded {
  const factor = 10 ** precision;
  const points: Point[] = [];
  let lat = 0;
  let lon = 0;
  let i = 0;
  // One signed value from position i; undefined when the text ends inside it.
  const next = (): number | undefined => {
    let result = 0;
    let shift = 0;
    for (;;) {
      if (i >= text.length) return undefined;
      const b = text.charCodeAt(i++) - 63;
      // Past 2^35 the value is no coordinate at all; stopping here also keeps the arithmetic exact.
      if (shift > 30) return Number.NaN;
      result += (b & 0x1f) * 2 ** shift;
      shift += 5;
      if (b < 0x20) break;
    }
    return result % 2 === 1 ? -(result + 1) / 2 : result / 2;
  };
  for (let c = 0; c < text.length; c++) {
    const code = text.charCodeAt(c);
    if (code < 63 || code > 126) return { ok: false, problem: `character ${JSON.stringify(text[c])} at position ${c + 1} is not part of an encoded polyline (only '?' to '~')` };
  }
  while (i < text.length) {
    const start = i;
    const dLat = next();
    if (dLat === undefined) return { ok: false, problem: `the encoded polyline ends inside a value (at position ${start + 1})` };
    const dLon = next();
    if (dLon === undefined) return { ok: false, problem: `the encoded polyline ends after a latitude without its longitude (at position ${start + 1})` };
    if (Number.isNaN(dLat) || Number.isNaN(dLon)) return { ok: false, problem: `the value at position ${start + 1} of the encoded polyline is too long to be a coordinate` };
    lat += dLat;
    lon += dLon;
    const point: Point = [lon / factor, lat / factor];
    if (Math.abs(point[1]) > 90 || Math.abs(point[0]) > 180) {
      return { ok: false, problem: `point ${points.length + 1} of the encoded polyline (${point[1]},${point[0]} lat,lon at precision ${precision}) is outside latitude -90..90, longitude -180..180` };
    }
    if (points.length >= MAX_POLYLINE_POINTS) return { ok: false, problem: `the encoded polyline has more than ${MAX_POLYLINE_POINTS} points` };
    points.push(point);
  }
  return { ok: true, value: points };
}
