// Signed distance fields from a coverage (alpha) bitmap, as MapLibre's SDF icons and glyphs expect them: one byte
// per pixel, 192 (0.75) on the shape's edge, rising inside and falling outside by 255/radius per pixel.
// Distances come from the exact Euclidean distance transform of Felzenszwalb and Huttenlocher ("Distance
// Transforms of Sampled Functions", 2012): a lower envelope of parabolas, once along every column and once along
// every row. Partly covered pixels start at a sub-pixel distance from the edge, so antialiased outlines keep
// their smoothness in the field.

const INF = 1e20;

/** The byte of the shape's edge; MapLibre's SDF shaders draw the outline at this value (0.75). */
export const SDF_EDGE = 192;
/** Distance (pixels) over which the field falls from the edge to 0 outside; MapLibre's glyphs use 8. */
export const SDF_RADIUS = 8;

/** One pass of the 1-D transform over `n` values of `grid` from `offset` with `stride`, in place. */
function edt1d(grid: Float64Array, offset: number, stride: number, n: number, f: Float64Array, v: Uint16Array, z: Float64Array): void {
  for (let q = 0; q < n; q++) f[q] = grid[offset + q * stride];
  v[0] = 0;
  z[0] = -INF;
  z[1] = INF;
  let k = 0;
  for (let q = 1; q < n; q++) {
    // Intersection of the parabola at q with the rightmost one of the envelope; drop envelope parabolas it hides.
    let s = (f[q] + q * q - (f[v[k]] + v[k] * v[k])) / (2 * q - 2 * v[k]);
    while (s <= z[k]) {
      k--;
      s = (f[q] + q * q - (f[v[k]] + v[k] * v[k])) / (2 * q - 2 * v[k]);
    }
    k++;
    v[k] = q;
    z[k] = s;
    z[k + 1] = INF;
  }
  k = 0;
  for (let q = 0; q < n; q++) {
    while (z[k + 1] < q) k++;
    const d = q - v[k];
    grid[offset + q * stride] = d * d + f[v[k]];
  }
}

/** Squared distance of every cell to the nearest cell whose value is 0, in place (2-D, separable). */
function edt(grid: Float64Array, width: number, height: number): void {
  const n = Math.max(width, height);
  const f = new Float64Array(n);
  const v = new Uint16Array(n);
  const z = new Float64Array(n + 1);
  for (let x = 0; x < width; x++) edt1d(grid, x, width, height, f, v, z);
  for (let y = 0; y < height; y++) edt1d(grid, y * width, 1, width, f, v, z);
}

/**
 * The SDF bytes of a coverage bitmap (`alpha`: 0..255 per pixel, row-major). The bitmap should already have
 * room around the shape (a buffer) for the field to fall off in.
 */
export function sdfFromAlpha(alpha: Uint8Array, width: number, height: number, radius = SDF_RADIUS): Uint8Array {
  const size = width * height;
  const outer = new Float64Array(size);
  const inner = new Float64Array(size);
  for (let i = 0; i < size; i++) {
    const a = alpha[i] / 255;
    if (a >= 1) {
      outer[i] = 0;
      inner[i] = INF;
    } else if (a <= 0) {
      outer[i] = INF;
      inner[i] = 0;
    } else {
      // A pixel half covered sits on the edge; more coverage puts its centre inside, less outside.
      const d = 0.5 - a;
      outer[i] = d > 0 ? d * d : 0;
      inner[i] = d < 0 ? d * d : 0;
    }
  }
  edt(outer, width, height);
  edt(inner, width, height);
  const out = new Uint8Array(size);
  const cutoff = 1 - SDF_EDGE / 255;
  for (let i = 0; i < size; i++) {
    const d = Math.sqrt(outer[i]) - Math.sqrt(inner[i]);
    out[i] = Math.max(0, Math.min(255, Math.round(255 - 255 * (d / radius + cutoff))));
  }
  return out;
}
