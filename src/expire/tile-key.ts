// One number per tile of any zoom (0 to MAX_KEY_ZOOM): the tiles of lower zooms first, then the tiles of a zoom
// in Z-order (Morton order: x and y bits interleaved). In that order a tile's children follow one another and the
// parents of sorted keys come out sorted, so the expiry index (area-times.ts) walks up a million tiles in linear
// passes, without sorting. At zoom 24 the largest key is below 2^49: every key is an exact double.

/** The deepest zoom a key can name; an expiry or a lookup deeper than it is taken at its ancestor of this zoom. */
export const MAX_KEY_ZOOM = 24;

/** Keys taken by the zooms below each zoom: (4^z - 1) / 3. */
const OFFSET: number[] = Array.from({ length: MAX_KEY_ZOOM + 2 }, (_, z) => (4 ** z - 1) / 3);

/** The bits of a 12-bit number spread to the even bits of a 24-bit one. */
const SPREAD = new Uint32Array(4096);
for (let i = 0; i < 4096; i++) {
  let v = 0;
  for (let b = 0; b < 12; b++) if (i & (1 << b)) v |= 1 << (2 * b);
  SPREAD[i] = v;
}

/** The Z-order index of x and y (each below 2^24). */
function morton(x: number, y: number): number {
  const lo = SPREAD[x & 0xfff] | (SPREAD[y & 0xfff] << 1);
  const hi = SPREAD[x >>> 12] | (SPREAD[y >>> 12] << 1);
  return hi * 2 ** 24 + (lo >>> 0);
}

/** The even bits of a 24-bit number gathered into 12. */
function gather(v: number): number {
  let out = 0;
  for (let b = 0; b < 12; b++) if (v & (1 << (2 * b))) out |= 1 << b;
  return out;
}

export function tileKey(z: number, x: number, y: number): number {
  return OFFSET[z] + morton(x, y);
}

/** The key of the first tile of zoom z. */
export function zoomStart(z: number): number {
  return OFFSET[z];
}

/** The zoom of a key. */
export function keyZoom(key: number): number {
  let z = 0;
  while (key >= OFFSET[z + 1]) z++;
  return z;
}

/** The parent of a key of zoom z (z > 0). */
export function parentKey(key: number, z: number): number {
  return OFFSET[z - 1] + Math.floor((key - OFFSET[z]) / 4);
}

export function keyTile(key: number): [z: number, x: number, y: number] {
  const z = keyZoom(key);
  const m = key - OFFSET[z];
  const lo = m % 2 ** 24;
  const hi = (m - lo) / 2 ** 24;
  return [z, gather(lo) | (gather(hi) << 12), gather(lo >>> 1) | (gather(hi >>> 1) << 12)];
}

/** Whether `z/x/y` names a tile (integers within the zoom's range, zoom 0 to MAX_KEY_ZOOM). */
export function validTile(z: number, x: number, y: number): boolean {
  if (!Number.isInteger(z) || z < 0 || z > MAX_KEY_ZOOM) return false;
  const n = 2 ** z;
  return Number.isInteger(x) && Number.isInteger(y) && x >= 0 && y >= 0 && x < n && y < n;
}
