// An encoded-polyline encoder for tests, written from the format's description (Google's "Encoded Polyline
// Algorithm Format"), to check the service's decoder against.
import type { PolylinePrecision } from '../../src/render/polyline.js';

/** One signed value: zig-zag, then 5-bit chunks from the lowest, each + 63, all but the last ORed with 0x20. */
export function encodeValue(v: number): string {
  let n = v < 0 ? -2 * v - 1 : 2 * v;
  let out = '';
  while (n >= 0x20) {
    out += String.fromCharCode((0x20 | (n % 32)) + 63);
    n = Math.floor(n / 32);
  }
  return out + String.fromCharCode(n + 63);
}

/** [lon, lat] points as an encoded polyline (latitude first, differences of rounded values). */
export function encodePolyline(points: readonly [number, number][], precision: PolylinePrecision): string {
  const f = 10 ** precision;
  let lat = 0;
  let lon = 0;
  let out = '';
  for (const [x, y] of points) {
    const la = Math.round(y * f);
    const lo = Math.round(x * f);
    out += encodeValue(la - lat) + encodeValue(lo - lon);
    lat = la;
    lon = lo;
  }
  return out;
}

