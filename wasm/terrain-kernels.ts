// The per-pixel passes of a hillshade tile in WebAssembly with 128-bit SIMD (AssemblyScript, compiled by
// `scripts/build.mjs` into dist/terrain-kernels.wasm and driven by src/grid/kernels.ts). In JavaScript each pass
// over a 512 px tile cost 2-10 ms. Two kinds: the bilinear resampling that makes a window without holes (bit for
// bit what src/grid/bilinear.ts computes), and the shading, which does Horn's slopes and the formula in one pass,
// four pixels at a time.
//
// Only the common shading case lives here: a window with a border and no hole, shaded grey with gdaldem's plain formula
// (`basic`; `standard` in grey mode is the same) or in colour with MapLibre's `standard` method. Everything else is
// shaded in JavaScript (src/terrain/hillshade.ts), which remains the reference: the results agree within one grey
// level (these compute in single precision), which test/terrain-hillshade.test.ts checks.
//
// Pointers are byte offsets into this module's memory, laid out by the caller: the window (f32, row-major), one or
// three f32 per tile row (the slope factor, and in colour the clamp range), the output bytes.

/** Horn's slopes (p east-positive, q south-positive) of four pixels from the three window rows around them. */
// @ts-ignore: decorator
@inline
function hornP(up: usize, mid: usize, down: usize): v128 {
  const a = v128.load(up - 4);
  const c = v128.load(up + 4);
  const d = v128.load(mid - 4);
  const f = v128.load(mid + 4);
  const g = v128.load(down - 4);
  const i = v128.load(down + 4);
  const right = f32x4.add(f32x4.add(c, i), f32x4.add(f, f));
  const left = f32x4.add(f32x4.add(a, g), f32x4.add(d, d));
  return f32x4.sub(right, left);
}

// @ts-ignore: decorator
@inline
function hornQ(up: usize, down: usize): v128 {
  const a = v128.load(up - 4);
  const b = v128.load(up);
  const c = v128.load(up + 4);
  const g = v128.load(down - 4);
  const h = v128.load(down);
  const i = v128.load(down + 4);
  const below = f32x4.add(f32x4.add(g, i), f32x4.add(h, h));
  const above = f32x4.add(f32x4.add(a, c), f32x4.add(b, b));
  return f32x4.sub(below, above);
}

/** Four values in 0..255 rounded half to even and saturated, as a Uint8ClampedArray stores them. */
// @ts-ignore: decorator
@inline
function clampedBytes(v: v128): v128 {
  const n = i32x4.trunc_sat_f32x4_s(f32x4.nearest(v));
  return i32x4.min_s(i32x4.max_s(n, i32x4.splat(0)), i32x4.splat(255));
}

/**
 * gdaldem's plain hillshade, grey, one byte per pixel: 1 + 254 * cos(incidence) (1 in full shadow), rounded half up.
 * `rowK` holds each tile row's slope factor (z-factor over 8 ground metres per pixel).
 */
export function shadeGreyBasic(win: usize, w: i32, border: i32, size: i32, rowK: usize, out: usize, sinAlt: f32, cosAzCosAlt: f32, sinAzCosAlt: f32): void {
  const lit = f32x4.splat(sinAlt);
  const towards = f32x4.splat(cosAzCosAlt);
  const across = f32x4.splat(sinAzCosAlt);
  const one = f32x4.splat(1);
  const half = f32x4.splat(0.5);
  const scale = f32x4.splat(254);
  const zero = f32x4.splat(0);
  for (let row = 0; row < size; row++) {
    const k = f32x4.splat(load<f32>(rowK + (<usize>row << 2)));
    const wr = row + border;
    const mid = win + (<usize>(wr * w + border) << 2);
    const up = mid - (<usize>w << 2);
    const down = mid + (<usize>w << 2);
    const o = out + <usize>(row * size);
    for (let col = 0; col < size; col += 4) {
      const at = <usize>col << 2;
      const p = f32x4.mul(hornP(up + at, mid + at, down + at), k);
      const q = f32x4.mul(hornQ(up + at, down + at), k);
      const norm = f32x4.sqrt(f32x4.add(one, f32x4.add(f32x4.mul(p, p), f32x4.mul(q, q))));
      const cosIncidence = f32x4.sub(f32x4.add(lit, f32x4.mul(q, towards)), f32x4.mul(p, across));
      const shade = f32x4.div(f32x4.mul(scale, cosIncidence), norm);
      const value = f32x4.add(one, f32x4.max(shade, zero));
      const grey = i32x4.trunc_sat_f32x4_s(f32x4.floor(f32x4.add(value, half)));
      const bytes = i8x16.narrow_i16x8_u(i16x8.narrow_i32x4_s(grey, grey), grey);
      v128.store32_lane(o + <usize>col, bytes, 0);
    }
  }
}

/**
 * MapLibre's `standard` hillshade method (hillshade.fragment.glsl), straight-alpha bytes: grey and alpha
 * (`channels` 2, when every colour is grey) or RGBA (4). `rows` holds, per tile row, the slope factor and the clamp
 * range of MapLibre's slope storage; `tables` the accent and shade strengths over |slope| (`entries` + 2 values
 * each, `toIndex` entries per unit of slope); `colours` the premultiplied shadow, highlight and accent (RGBA each).
 */
export function shadeColorStandard(win: usize, w: i32, border: i32, size: i32, rows: usize, out: usize, channels: i32, tables: usize, entries: i32, toIndex: f32, cosAz: f32, sinAz: f32, colours: usize): void {
  const accentTable = tables;
  const shadeTable = tables + (<usize>(entries + 2) << 2);
  const sr = f32x4.splat(load<f32>(colours)), sg = f32x4.splat(load<f32>(colours, 4)), sb = f32x4.splat(load<f32>(colours, 8)), sa = f32x4.splat(load<f32>(colours, 12));
  const hr = f32x4.splat(load<f32>(colours, 16)), hg = f32x4.splat(load<f32>(colours, 20)), hb = f32x4.splat(load<f32>(colours, 24)), ha = f32x4.splat(load<f32>(colours, 28));
  const ar = f32x4.splat(load<f32>(colours, 32)), ag = f32x4.splat(load<f32>(colours, 36)), ab = f32x4.splat(load<f32>(colours, 40)), aa = f32x4.splat(load<f32>(colours, 44));
  const dr = f32x4.sub(hr, sr), dg = f32x4.sub(hg, sg), db = f32x4.sub(hb, sb), da = f32x4.sub(ha, sa);
  const cz = f32x4.splat(cosAz);
  const sz = f32x4.splat(sinAz);
  const scaleIndex = f32x4.splat(toIndex);
  const one = f32x4.splat(1);
  const zero = f32x4.splat(0);
  const halfV = f32x4.splat(0.5);
  const pi = f32x4.splat(<f32>Math.PI);
  const invPi = f32x4.splat(<f32>(1 / Math.PI));
  const c0 = f32x4.splat(1.5707288), c1 = f32x4.splat(-0.2121144), c2 = f32x4.splat(0.074261), c3 = f32x4.splat(-0.0187293);
  const full = f32x4.splat(255);
  for (let row = 0; row < size; row++) {
    const params = rows + <usize>(row * 12);
    const k = f32x4.splat(load<f32>(params));
    const lo = f32x4.splat(load<f32>(params, 4));
    const hi = f32x4.splat(load<f32>(params, 8));
    const wr = row + border;
    const mid = win + (<usize>(wr * w + border) << 2);
    const up = mid - (<usize>w << 2);
    const down = mid + (<usize>w << 2);
    const o = out + <usize>(row * size * channels);
    for (let col = 0; col < size; col += 4) {
      const at = <usize>col << 2;
      const p = f32x4.min(f32x4.max(f32x4.mul(hornP(up + at, mid + at, down + at), k), lo), hi);
      const q = f32x4.min(f32x4.max(f32x4.mul(hornQ(up + at, down + at), k), lo), hi);
      const length = f32x4.sqrt(f32x4.add(f32x4.mul(p, p), f32x4.mul(q, q)));
      // The strengths by steepness: linear between table entries, gathered lane by lane.
      const x = f32x4.mul(length, scaleIndex);
      const j = i32x4.trunc_sat_f32x4_s(x);
      const frac = f32x4.sub(x, f32x4.convert_i32x4_s(j));
      let acc0 = f32x4.splat(0), acc1 = f32x4.splat(0), sh0 = f32x4.splat(0), sh1 = f32x4.splat(0);
      let e = <usize>i32x4.extract_lane(j, 0) << 2;
      acc0 = v128.load32_lane(accentTable + e, acc0, 0); acc1 = v128.load32_lane(accentTable + e + 4, acc1, 0);
      sh0 = v128.load32_lane(shadeTable + e, sh0, 0); sh1 = v128.load32_lane(shadeTable + e + 4, sh1, 0);
      e = <usize>i32x4.extract_lane(j, 1) << 2;
      acc0 = v128.load32_lane(accentTable + e, acc0, 1); acc1 = v128.load32_lane(accentTable + e + 4, acc1, 1);
      sh0 = v128.load32_lane(shadeTable + e, sh0, 1); sh1 = v128.load32_lane(shadeTable + e + 4, sh1, 1);
      e = <usize>i32x4.extract_lane(j, 2) << 2;
      acc0 = v128.load32_lane(accentTable + e, acc0, 2); acc1 = v128.load32_lane(accentTable + e + 4, acc1, 2);
      sh0 = v128.load32_lane(shadeTable + e, sh0, 2); sh1 = v128.load32_lane(shadeTable + e + 4, sh1, 2);
      e = <usize>i32x4.extract_lane(j, 3) << 2;
      acc0 = v128.load32_lane(accentTable + e, acc0, 3); acc1 = v128.load32_lane(accentTable + e + 4, acc1, 3);
      sh0 = v128.load32_lane(shadeTable + e, sh0, 3); sh1 = v128.load32_lane(shadeTable + e + 4, sh1, 3);
      const accent = f32x4.add(acc0, f32x4.mul(f32x4.sub(acc1, acc0), frac));
      const strength = f32x4.add(sh0, f32x4.mul(f32x4.sub(sh1, sh0), frac));
      // How far the slope faces from the light: acos of the cosine (Abramowitz and Stegun 4.4.45), over pi.
      const cosine = f32x4.div(f32x4.sub(f32x4.mul(q, cz), f32x4.mul(p, sz)), length);
      const ax = f32x4.min(f32x4.abs(cosine), one);
      const r = f32x4.mul(f32x4.sqrt(f32x4.sub(one, ax)), f32x4.add(c0, f32x4.mul(ax, f32x4.add(c1, f32x4.mul(ax, f32x4.add(c2, f32x4.mul(ax, c3)))))));
      const angle = v128.bitselect(f32x4.sub(pi, r), r, f32x4.lt(cosine, zero));
      // Flat ground has no facing: MapLibre's formula gives it one half.
      const facing = v128.bitselect(halfV, f32x4.mul(angle, invPi), f32x4.eq(length, zero));
      const shadowAlpha = f32x4.mul(f32x4.add(sa, f32x4.mul(da, facing)), strength);
      const keep = f32x4.mul(accent, f32x4.sub(one, shadowAlpha));
      const alpha = f32x4.add(f32x4.mul(aa, keep), shadowAlpha);
      const visible = f32x4.gt(alpha, zero);
      const unmultiply = f32x4.div(full, f32x4.min(alpha, one));
      const red = clampedBytes(f32x4.mul(f32x4.add(f32x4.mul(ar, keep), f32x4.mul(f32x4.add(sr, f32x4.mul(dr, facing)), strength)), unmultiply));
      const alphaByte = clampedBytes(f32x4.mul(alpha, full));
      if (channels == 2) {
        const packed = v128.and(v128.or(red, i32x4.shl(alphaByte, 8)), visible);
        v128.store64_lane(o + (<usize>col << 1), i16x8.narrow_i32x4_u(packed, packed), 0);
      } else {
        const green = clampedBytes(f32x4.mul(f32x4.add(f32x4.mul(ag, keep), f32x4.mul(f32x4.add(sg, f32x4.mul(dg, facing)), strength)), unmultiply));
        const blue = clampedBytes(f32x4.mul(f32x4.add(f32x4.mul(ab, keep), f32x4.mul(f32x4.add(sb, f32x4.mul(db, facing)), strength)), unmultiply));
        const packed = v128.or(v128.or(red, i32x4.shl(green, 8)), v128.or(i32x4.shl(blue, 16), i32x4.shl(alphaByte, 24)));
        v128.store(o + (<usize>col << 2), v128.and(packed, visible));
      }
    }
  }
}

/** Whether any of `n` f32 values from `data` is NaN (no data), four at a time. */
export function hasNaN(data: usize, n: i32): bool {
  let seen = i32x4.splat(0);
  const whole = n & ~3;
  for (let i = 0; i < whole; i += 4) {
    const v = v128.load(data + (<usize>i << 2));
    seen = v128.or(seen, f32x4.ne(v, v));
  }
  for (let i = whole; i < n; i++) {
    const v = load<f32>(data + (<usize>i << 2));
    if (v != v) return true;
  }
  return v128.any_true(seen);
}

/**
 * Bilinear samples of a grid without holes (src/grid/bilinear.ts's fast path), in double precision and in that
 * module's order of operations, so the samples are the same to the bit: each grid row the output needs is
 * interpolated along x once into `lerped` (two rows of `w` f64), and each output row blends its two rows along y,
 * two samples at a time. `colA`/`colB` (i32) are the grid columns either side of each output column and `colW`
 * (f64) the weight of B; `rowA`/`rowB` (i32) the offsets of the grid rows either side of each output row and
 * `rowW` (f64) the weight of B. Writes `w` x `h` f32 samples to `out`.
 */
export function bilinearComplete(grid: usize, colA: usize, colB: usize, colW: usize, w: i32, rowA: usize, rowB: usize, rowW: usize, h: i32, out: usize, lerped: usize): void {
  const rowBytes = <usize>w << 3;
  let firstRow = -1;
  let secondRow = -1;
  const first = lerped;
  const second = lerped + rowBytes;
  for (let r = 0; r < h; r++) {
    const a = load<i32>(rowA + (<usize>r << 2));
    const b = load<i32>(rowB + (<usize>r << 2));
    // The two interpolated rows this output row blends, computed only when the previous row did not have them.
    let upper: usize = 0;
    let lower: usize = 0;
    for (let pass = 0; pass < 2; pass++) {
      const wanted = pass == 0 ? a : b;
      const keep = pass == 0 ? b : a;
      let at: usize;
      if (firstRow == wanted) at = first;
      else if (secondRow == wanted) at = second;
      else {
        const useSecond = firstRow == keep;
        at = useSecond ? second : first;
        if (useSecond) secondRow = wanted;
        else firstRow = wanted;
        const start = grid + (<usize>wanted << 2);
        for (let c = 0; c < w; c++) {
          const i = <usize>load<i32>(colA + (<usize>c << 2)) << 2;
          const j = <usize>load<i32>(colB + (<usize>c << 2)) << 2;
          const vi = <f64>load<f32>(start + i);
          store<f64>(at + (<usize>c << 3), vi + (<f64>load<f32>(start + j) - vi) * load<f64>(colW + (<usize>c << 3)));
        }
      }
      if (pass == 0) upper = at;
      else lower = at;
    }
    const fy = load<f64>(rowW + (<usize>r << 3));
    const fyv = f64x2.splat(fy);
    const o = out + (<usize>(r * w) << 2);
    const pairs = w & ~1;
    for (let c = 0; c < pairs; c += 2) {
      const u = v128.load(upper + (<usize>c << 3));
      const l = v128.load(lower + (<usize>c << 3));
      const v = f64x2.add(u, f64x2.mul(f64x2.sub(l, u), fyv));
      v128.store64_lane(o + (<usize>c << 2), f32x4.demote_f64x2_zero(v), 0);
    }
    if (pairs < w) {
      const u = load<f64>(upper + (<usize>pairs << 3));
      store<f32>(o + (<usize>pairs << 2), <f32>(u + (load<f64>(lower + (<usize>pairs << 3)) - u) * fy));
    }
  }
}

/**
 * PNG rows filtered "up" (src/terrain/png-writer.ts): `height` rows of `stride` bytes from `pixels` to `out`, each
 * row led by its filter type (0 for the first row, unfiltered; 2 for the others, each byte minus the one above).
 */
export function pngUpFilter(pixels: usize, stride: i32, height: i32, out: usize): void {
  const rowOut = <usize>stride + 1;
  store<u8>(out, 0);
  memory.copy(out + 1, pixels, <usize>stride);
  const blocks = stride & ~15;
  for (let y = 1; y < height; y++) {
    const above = pixels + <usize>((y - 1) * stride);
    const row = above + <usize>stride;
    const o = out + <usize>y * rowOut;
    store<u8>(o, 2);
    for (let i = 0; i < blocks; i += 16) v128.store(o + 1 + <usize>i, i8x16.sub(v128.load(row + <usize>i), v128.load(above + <usize>i)));
    for (let i = blocks; i < stride; i++) store<u8>(o + 1 + <usize>i, load<u8>(row + <usize>i) - load<u8>(above + <usize>i));
  }
}
