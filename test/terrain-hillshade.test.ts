// Hillshade on synthetic DEMs whose answers are known: planes of known slope and aspect against the textbook
// illumination formula (gdaldem's `basic`) and against MapLibre's shader maths (`standard`), no-data handling,
// the border's part in edge slopes, and the query parser (fast-check).
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from './helpers/fast-check.js';
import { sampleWindow, tileNorth } from './helpers/dem-windows.js';
import { type DemWindow, pixelCentreLonLat, tileSpan } from '../src/terrain/dem-window.js';
import { HILLSHADE_METHODS, MAX_EXAGGERATION, hillshade, hillshadeImage, maplibreZoomRelief, parseHillshadeQuery, type HillshadeOptions } from '../src/terrain/hillshade.js';
import { gridKernels } from '../src/grid/kernels.js';
import { encodePng } from '../src/terrain/png-writer.js';
import sharp from 'sharp';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { gdalTool } from './helpers/gdal.js';

// Zoom 12 tile over San Francisco (the fixture DEM's area): cos(latitude) is about 0.79 there, so a slope
// computed on mercator metres instead of ground metres would be 21 % too gentle and fail these tests.
const Z = 12;
const X = 655;
const Y = 1582;
const DEG = Math.PI / 180;

/**
 * A plane rising `east` metres per ground metre eastwards and `north` northwards. Ground distances use each
 * row's own cos(latitude), as true ground slopes on a mercator grid do.
 */
function plane(east: number, north: number, size = 64, border = 1): DemWindow {
  const north0 = tileNorth(Z, Y);
  return sampleWindow(Z, X, Y, size, border, (e, s) => {
    const lat = (2 * Math.atan(Math.exp((north0 - s) / 6378137)) - Math.PI / 2);
    const k = Math.cos(lat);
    return east * e * k - north * s * k;
  });
}

/** gdaldem's grey level for a surface of this gradient, from the textbook formula (not from gdaldem's algebra). */
function textbookGrey(east: number, north: number, azimuth: number, altitude: number, zFactor: number): number {
  const slope = Math.atan(zFactor * Math.hypot(east, north));
  // The direction the surface faces (downhill), clockwise from north.
  const aspect = Math.atan2(-east, -north);
  const zenith = (90 - altitude) * DEG;
  const cang = Math.cos(zenith) * Math.cos(slope) + Math.sin(zenith) * Math.sin(slope) * Math.cos(azimuth * DEG - aspect);
  return cang <= 0 ? 1 : 1 + 254 * cang;
}

const pixel = (rgba: Uint8Array, size: number, col: number, row: number) => [...rgba.subarray((row * size + col) * 4, (row * size + col) * 4 + 4)];

test('basic, grey: planes of known slope and aspect give the textbook illumination to one grey level', () => {
  const cases: [number, number, number, number, number][] = [
    // east slope, north slope, azimuth, altitude, z-factor
    [0, 0, 315, 45, 1],
    [0.3, 0, 315, 45, 1],
    [0, -0.5, 335, 45, 0.5],
    [-0.7, 0.7, 315, 30, 1],
    [1.2, 0.4, 90, 60, 2],
    [0.2, -0.9, 200, 20, 1],
    [3, 3, 45, 45, 1],
  ];
  for (const [east, north, azimuth, altitude, exaggeration] of cases) {
    const win = plane(east, north);
    const out = hillshade(win, { method: 'basic', mode: 'grey', azimuth, altitude, exaggeration });
    const want = textbookGrey(east, north, azimuth, altitude, exaggeration);
    for (const [col, row] of [[0, 0], [31, 31], [63, 63], [5, 60]]) {
      const [r, g, b, a] = pixel(out, 64, col, row);
      assert.equal(a, 255);
      assert.ok(r === g && g === b, `grey ${r},${g},${b}`);
      assert.ok(Math.abs(r - want) <= 1, `plane (${east}, ${north}) az ${azimuth} alt ${altitude} z ${exaggeration}: got ${r} at ${col},${row}, want ${want.toFixed(2)}`);
    }
  }
});

test('grey: the other gdaldem methods on flat ground and on a slope facing the light or away from it', () => {
  const flat = plane(0, 0);
  const opts = { mode: 'grey' as const, azimuth: 315, altitude: 45, exaggeration: 1 };
  // Flat ground: combined shades nothing (255), igor leaves it white (255), multidirectional lights it as basic.
  assert.equal(pixel(hillshade(flat, { ...opts, method: 'combined' }), 64, 10, 10)[0], 255);
  assert.equal(pixel(hillshade(flat, { ...opts, method: 'igor' }), 64, 10, 10)[0], 255);
  assert.equal(pixel(hillshade(flat, { ...opts, method: 'multidirectional' }), 64, 10, 10)[0], Math.round(1 + 254 * Math.sin(45 * DEG)));
  // Facing the light (north-west, downhill towards 315) beats facing away, for every method.
  const lit = plane(0.5, -0.5);
  const dark = plane(-0.5, 0.5);
  for (const method of HILLSHADE_METHODS) {
    const a = pixel(hillshade(lit, { ...opts, method }), 64, 20, 20)[0];
    const b = pixel(hillshade(dark, { ...opts, method }), 64, 20, 20)[0];
    assert.ok(a > b, `${method}: lit ${a} should be brighter than shaded ${b}`);
  }
  // igor on a slope facing exactly away from the light: 255 * (1 - slope / 90 degrees).
  const away = plane(-1, 0);
  const igor = pixel(hillshade(away, { ...opts, method: 'igor', azimuth: 270 }), 64, 30, 30)[0];
  assert.ok(Math.abs(igor - 255 * (1 - 45 / 90)) <= 1, `igor ${igor}`);
});

/** MapLibre's standard shading as read from hillshade.fragment.glsl, scalar, for one slope (deriv) vector. */
function shaderStandard(derivX: number, derivY: number, directionDeg: number, intensity: number): [number, number, number, number] {
  // Default colours: shadow black, highlight white, accent black, all opaque (premultiplied = straight).
  const azimuth = directionDeg * DEG + Math.PI;
  const slope = Math.atan(0.625 * Math.hypot(derivX, derivY));
  const aspect = derivX !== 0 ? Math.atan2(derivY, -derivX) : (Math.PI / 2) * (derivY > 0 ? 1 : -1);
  const base = 1.875 - intensity * 1.75;
  const scaled = intensity !== 0.5 ? ((base ** slope - 1) / (base ** (Math.PI / 2) - 1)) * (Math.PI / 2) : slope;
  const strength = Math.min(1, Math.max(0, intensity * 2));
  const accentA = (1 - Math.cos(scaled)) * strength;
  const t = (((aspect + azimuth) / Math.PI + 0.5) % 2 + 2) % 2;
  const shade = Math.abs(t - 1);
  const k = Math.sin(scaled) * strength;
  // mix(shadow, highlight, shade) * k: rgb = shade * k, alpha = k; accent adds alpha only (black).
  const alpha = accentA * (1 - k) + k;
  const rgb = (shade * k) / alpha;
  return [rgb * 255, rgb * 255, rgb * 255, alpha * 255];
}

test('standard, colour: planes against the shader maths, with the zoom relief MapLibre adds below z15', () => {
  for (const [east, north, direction, intensity] of [
    [0.3, 0, 335, 0.5],
    [0, 0.4, 335, 0.5],
    [-0.2, -0.6, 335, 0.8],
    [0.5, 0.5, 90, 0.3],
    [0.05, 0.1, 200, 1],
  ]) {
    const out = hillshade(plane(east, north), { azimuth: direction, exaggeration: intensity });
    // The shader's deriv: east-positive x, south-positive y, times the prepare pass's zoom relief.
    const relief = maplibreZoomRelief(Z);
    const want = shaderStandard(east * relief, -north * relief, direction, intensity);
    const got = pixel(out, 64, 32, 32);
    for (let c = 0; c < 4; c++) assert.ok(Math.abs(got[c] - want[c]) <= 1, `plane (${east}, ${north}) dir ${direction}: got ${got}, want ${want.map((v) => v.toFixed(1))}`);
  }
});

test('colour: flat ground is transparent, slopes facing the light are light, slopes facing away are dark', () => {
  const flat = hillshade(plane(0, 0));
  assert.deepEqual(pixel(flat, 64, 7, 7), [0, 0, 0, 0]);
  // Light from 335 degrees: a surface facing north-north-west (rising to the south-south-east) is lit.
  const lit = pixel(hillshade(plane(Math.sin(155 * DEG), Math.cos(155 * DEG))), 64, 7, 7);
  const dark = pixel(hillshade(plane(-Math.sin(155 * DEG), -Math.cos(155 * DEG))), 64, 7, 7);
  assert.ok(lit[0] > 200 && lit[3] > 0, `lit ${lit}`);
  assert.ok(dark[0] < 30 && dark[3] > lit[3] / 2, `dark ${dark}`);
  // The accent colour shows on steep slopes: with a red accent, a steep slope seen side-on turns reddish.
  const side = pixel(hillshade(plane(Math.sin(65 * DEG) * 3, Math.cos(65 * DEG) * 3), { accent: '#ff0000', shadow: 'transparent', highlight: 'transparent' }), 64, 7, 7);
  assert.ok(side[0] > 200 && side[1] < 30 && side[3] > 50, `accent ${side}`);
  // Colours are MapLibre's premultiplied maths written back as straight alpha: a half-transparent highlight
  // keeps its hue.
  const blue = pixel(hillshade(plane(0.5, -0.5), { method: 'basic', highlight: 'rgba(0, 0, 255, 0.5)' }), 64, 7, 7);
  assert.ok(blue[2] === 255 && blue[0] === 0 && blue[3] > 0 && blue[3] <= 128, `blue ${blue}`);
});

test('no data: a NaN pixel is transparent, and its neighbours shade as if it held their own centre value', () => {
  const win = plane(0.4, -0.3, 16, 1);
  const w = 18;
  const hole = { ...win, data: Float32Array.from(win.data) };
  hole.data[6 * w + 6] = NaN; // tile pixel (5, 5)
  for (const mode of ['grey', 'color'] as const) {
    const out = hillshade(hole, { method: 'basic', mode });
    assert.deepEqual(pixel(out, 16, 5, 5), [0, 0, 0, 0], mode);
    // Tile pixel (6, 5) has the hole on its left: the same as a window where the hole holds that pixel's value.
    const filled = { ...win, data: Float32Array.from(win.data) };
    filled.data[6 * w + 6] = win.data[6 * w + 7];
    assert.deepEqual(pixel(out, 16, 6, 5), pixel(hillshade(filled, { method: 'basic', mode }), 16, 6, 5), mode);
  }
});

test('border: edge pixels take their slopes from the neighbours\' data, so a plane shades evenly to its edge', () => {
  const withBorder = hillshade(plane(0.6, 0.2, 32, 1), { method: 'basic', mode: 'grey' });
  const without = hillshade(plane(0.6, 0.2, 32, 0), { method: 'basic', mode: 'grey' });
  const inner = pixel(withBorder, 32, 16, 16)[0];
  for (const [c, r] of [[0, 0], [31, 0], [0, 31], [31, 31], [0, 12], [12, 31]]) assert.equal(pixel(withBorder, 32, c, r)[0], inner, `${c},${r}`);
  // Without a border the edge's missing neighbours take the centre value: the slope there is halved.
  assert.equal(pixel(without, 32, 16, 16)[0], inner);
  assert.notEqual(pixel(without, 32, 0, 16)[0], inner);
});

test('pixel geometry: window pixel centres sit half a pixel inside the tile corner', () => {
  const win = plane(0, 0, 256, 2);
  const [lon, lat] = pixelCentreLonLat(win, 2, 2);
  const halfPixelDeg = 360 / 2 ** Z / 256 / 2;
  assert.ok(Math.abs(lon - (X / 2 ** Z * 360 - 180 + halfPixelDeg)) < 1e-9, `lon ${lon}`);
  assert.ok(lat < 37.8576 && lat > 37.857, `lat ${lat}`);
});

test('parseHillshadeQuery: defaults, accepted values and the problems of bad ones', () => {
  const ok = parseHillshadeQuery(new URLSearchParams(''));
  assert.deepEqual(ok, { ok: true, options: { method: 'standard', mode: 'color', azimuth: 335, altitude: 45, exaggeration: 0.5, shadow: '#000000', highlight: '#FFFFFF', accent: '#000000' } });
  const all = parseHillshadeQuery(new URLSearchParams('method=igor&mode=grey&azimuth=90&altitude=30&exaggeration=2&shadow=%23123&highlight=rgba(1,2,3,0.5)&accent=transparent&foo=bar'));
  assert.ok(all.ok, 'every parameter valid');
  assert.equal(all.options.method, 'igor');
  assert.equal(all.options.accent, 'transparent');
  const bad = (q: string, needle: RegExp) => {
    const r = parseHillshadeQuery(new URLSearchParams(q));
    assert.ok(!r.ok, q);
    assert.match(r.problem, needle, q);
  };
  bad('azimuth=400', /^azimuth must be a number from 0 to 360, got "400"$/);
  bad('exaggeration=-1', /^exaggeration must be a number from 0 to 10/);
  bad('altitude=91', /^altitude .*0 to 90/);
  bad('azimuth=abc', /^azimuth/);
  bad('method=fancy', /^method must be one of standard, basic, combined, igor, multidirectional/);
  bad('mode=rgb', /^mode must be one of color, grey/);
  bad('shadow=notacolour', /^shadow must be a CSS colour/);
  bad('highlight=%23ggg', /^highlight/);
});

test('property: parseHillshadeQuery never throws, accepts every in-range value and names the parameter it rejects', () => {
  const names = ['method', 'mode', 'azimuth', 'altitude', 'exaggeration', 'shadow', 'highlight', 'accent', 'other'];
  fc.assert(
    fc.property(fc.array(fc.tuple(fc.constantFrom(...names), fc.string()), { maxLength: 6 }), (pairs) => {
      const r = parseHillshadeQuery(new URLSearchParams(pairs));
      if (!r.ok) assert.ok(names.some((n) => r.problem.startsWith(`${n} `)), r.problem);
    }),
    { numRuns: 2000 },
  );
  const ranges = { azimuth: 360, altitude: 90, exaggeration: MAX_EXAGGERATION } as const;
  for (const [name, max] of Object.entries(ranges)) {
    fc.assert(
      fc.property(fc.double({ min: 0, max, noNaN: true }), (v) => {
        const text = v.toFixed(6);
        const r = parseHillshadeQuery(new URLSearchParams({ [name]: text }));
        assert.ok(r.ok, `${name}=${text}`);
        assert.equal(r.options[name as keyof typeof ranges], Number(text));
      }),
      { numRuns: 300 },
    );
    fc.assert(
      fc.property(fc.oneof(fc.double({ min: -1e6, max: -1e-3, noNaN: true }), fc.double({ min: max + 1e-3, max: 1e6, noNaN: true })), (v) => {
        const r = parseHillshadeQuery(new URLSearchParams({ [name]: v.toFixed(3) }));
        assert.ok(!r.ok && r.problem.startsWith(`${name} must be a number from 0 to ${max}`), `${name}=${v}`);
      }),
      { numRuns: 300 },
    );
  }
  fc.assert(
    fc.property(fc.integer({ min: 0, max: 255 }), fc.integer({ min: 0, max: 255 }), fc.integer({ min: 0, max: 255 }), fc.double({ min: 0, max: 1, noNaN: true }), (r, g, b, a) => {
      const hex = `#${[r, g, b].map((v) => v.toString(16).padStart(2, '0')).join('')}`;
      for (const css of [hex, `rgb(${r},${g},${b})`, `rgba(${r}, ${g}, ${b}, ${a.toFixed(2)})`]) {
        const q = parseHillshadeQuery(new URLSearchParams({ shadow: css }));
        assert.ok(q.ok && q.options.shadow === css, css);
      }
    }),
    { numRuns: 300 },
  );
});

/** The RGBA pixels of a compact image (1: grey, 2: grey and alpha, 4: RGBA). */
function expand(pixels: Uint8Array, channels: 1 | 2 | 4): Uint8Array {
  if (channels === 4) return pixels;
  const n = pixels.length / channels;
  const out = new Uint8Array(n * 4);
  for (let i = 0; i < n; i++) {
    const g = pixels[i * channels];
    out.set([g, g, g, channels === 2 ? pixels[i * 2 + 1] : 255], i * 4);
  }
  return out;
}

test('the compact image holds the same pixels in fewer channels: grey, grey with alpha where there are holes, RGBA for coloured lights', () => {
  const slope = plane(0.4, -0.3);
  const holed = plane(0.4, -0.3);
  holed.data[10 * 66 + 12] = Number.NaN;
  const cases: [DemWindow, Parameters<typeof hillshade>[1], 1 | 2 | 4][] = [
    [slope, { mode: 'grey', method: 'basic' }, 1],
    [holed, { mode: 'grey', method: 'igor' }, 2],
    [slope, {}, 2],
    [holed, { method: 'multidirectional' }, 2],
    [slope, { shadow: '#473B24' }, 4],
    [slope, { highlight: 'rgba(0, 0, 255, 0.5)', method: 'basic' }, 4],
  ];
  for (const [win, options, channels] of cases) {
    const image = hillshadeImage(win, options);
    assert.equal(image.channels, channels, JSON.stringify(options));
    assert.deepEqual(expand(image.pixels, image.channels), hillshade(win, options), JSON.stringify(options));
  }
});

test('the PNG writer: sharp and GDAL read back every pixel, in each channel count', async () => {
  const dir = mkdtempSync(path.join(tmpdir(), 'hillshade-png-'));
  try {
    const holed = plane(0.9, 0.2, 40);
    for (let i = 0; i < 30; i++) holed.data[(5 + i) * 42 + 7 + i] = Number.NaN;
    for (const [options, channels] of [[{ mode: 'grey' as const }, 2], [{ mode: 'grey' as const, method: 'basic' as const }, 1], [{ accent: '#ff0000' }, 4], [{}, 2]] as const) {
      const win = channels === 1 ? plane(0.9, 0.2, 40) : holed;
      const image = hillshadeImage(win, options);
      assert.equal(image.channels, channels);
      for (const level of [0, 1, 9]) {
        const png = encodePng(image.pixels, 40, 40, image.channels, level);
        assert.equal((await sharp(png).metadata()).channels, channels, `sharp sees ${channels} channels`);
        const back = await sharp(png).ensureAlpha().raw().toBuffer();
        assert.deepEqual(new Uint8Array(back), expand(image.pixels, image.channels), `level ${level}, ${channels} channels`);
      }
      // GDAL's PNG driver (libpng) reads the same bands: the checksum of band 1 matches the one of the same pixels written by libvips.
      const ours = path.join(dir, `ours-${channels}.png`);
      const theirs = path.join(dir, `theirs-${channels}.png`);
      writeFileSync(ours, encodePng(image.pixels, 40, 40, image.channels, 6));
      await sharp(image.pixels, { raw: { width: 40, height: 40, channels } }).toColourspace(channels === 4 ? 'srgb' : 'b-w').png().toFile(theirs);
      const checksums = (file: string) => gdalTool('gdalinfo', ['-checksum', file]).stdout.match(/Checksum=\d+/g);
      assert.equal(checksums(ours)?.length, channels);
      assert.deepEqual(checksums(ours), checksums(theirs));
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test('the PNG writer refuses a pixel buffer of the wrong length', () => {
  assert.throws(() => encodePng(new Uint8Array(10), 4, 4, 1, 1), /4x4 pixels of 1 bytes need 16 bytes, got 10/);
});

test('the WebAssembly kernels are built and shade as the JavaScript passes do, within a grey level', () => {
  // `make test` builds dist/ first: a build that lost the kernels must fail here, not quietly shade in JavaScript.
  assert.ok(gridKernels(), 'dist/terrain-kernels.wasm loads');
  fc.assert(
    fc.property(
      fc.record({
        z: fc.integer({ min: 2, max: 16 }),
        row: fc.double({ min: 0.05, max: 0.95, noNaN: true }),
        size: fc.constantFrom(64, 256),
        relief: fc.double({ min: 0, max: 3000, noNaN: true }),
        wavelength: fc.double({ min: 3, max: 200, noNaN: true }),
        seed: fc.integer({ min: 0, max: 1000 }),
      }),
      fc.constantFrom<HillshadeOptions>(
        { mode: 'grey', method: 'basic', exaggeration: 1, azimuth: 315, altitude: 45 },
        { mode: 'grey', method: 'standard', exaggeration: 2.5, azimuth: 20, altitude: 70 },
        {},
        { exaggeration: 1, azimuth: 90, altitude: 10 },
        { shadow: '#803020', highlight: 'rgba(255,255,200,0.7)', accent: '#102030', exaggeration: 0.8 },
      ),
      ({ z, row, size, relief, wavelength, seed }, options) => {
        const n = 2 ** z;
        const side = size + 2;
        const data = new Float32Array(side * side);
        for (let r = 0; r < side; r++) for (let c = 0; c < side; c++) data[r * side + c] = 500 + relief * Math.sin((c + seed) / wavelength) * Math.cos((r - seed) / (wavelength * 1.3)) + ((c * 7 + r * 13 + seed) % 5);
        const win: DemWindow = { z, x: Math.floor(n / 3), y: Math.min(n - 1, Math.floor(row * n)), size, border: 1, data };
        const fast = hillshadeImage(win, options);
        const reference = hillshadeImage(win, options, 'javascript');
        assert.equal(fast.channels, reference.channels);
        let differing = 0;
        for (let i = 0; i < fast.pixels.length; i++) {
          const d = Math.abs(fast.pixels[i] - reference.pixels[i]);
          assert.ok(d <= 1, `byte ${i}: ${fast.pixels[i]} against ${reference.pixels[i]}`);
          if (d) differing++;
        }
        assert.ok(differing <= fast.pixels.length * 0.01, `${differing} of ${fast.pixels.length} bytes differ`);
      },
    ),
    { numRuns: 40 },
  );
});

test('PNG rows filtered by the WebAssembly kernel make the same file as the JavaScript loop', () => {
  fc.assert(
    fc.property(fc.integer({ min: 1, max: 70 }), fc.integer({ min: 1, max: 40 }), fc.constantFrom<1 | 2 | 4>(1, 2, 4), fc.integer({ min: 0, max: 2 ** 31 }), (width, height, channels, seed) => {
      const pixels = Uint8Array.from({ length: width * height * channels }, (_, i) => (seed * 31 + i * 17 + ((i * i) >> 3)) & 255);
      assert.deepEqual(encodePng(pixels, width, height, channels, 1), encodePng(pixels, width, height, channels, 1, 'javascript'));
    }),
    { numRuns: 100 },
  );
});

test('a window loaded into the WebAssembly kernels shades only until another call loads something else there', () => {
  const kernels = gridKernels();
  assert.ok(kernels, 'dist/terrain-kernels.wasm loads');
  const size = 64;
  const side = size + 2;
  const win = plane(0.3, -0.2, size, 1);
  const rowK = new Float32Array(size).fill(1 / 80);
  const shade = (w: ReturnType<typeof kernels.loadWindow>) => w.greyBasic(side, 1, size, rowK, Math.sin(45 * DEG), Math.cos(315 * DEG) * Math.cos(45 * DEG), Math.sin(315 * DEG) * Math.cos(45 * DEG));
  const loaded = kernels.loadWindow(win.data);
  assert.equal(loaded.holes, false);
  const first = shade(loaded);
  // Shading does not unload the window: the same handle shades it again, to the byte.
  assert.deepEqual(shade(loaded), first);
  // Each other kind of call loads its own input into the same memory: the handle then refuses, rather than shading that.
  const steep = plane(2, 1, size, 1);
  const unloaders: [string, () => void][] = [
    ['another window', () => kernels.loadWindow(steep.data)],
    ['a PNG filter', () => kernels.pngUpFilter(new Uint8Array(side * side * 4).fill(200), side * 4, side)],
    ['a resampling', () => kernels.bilinear(steep.data, new Int32Array(4), new Int32Array(4), new Float64Array(4), new Int32Array(4), new Int32Array(4), new Float64Array(4), new Float32Array(16))],
  ];
  for (const [what, call] of unloaders) {
    const handle = kernels.loadWindow(win.data);
    call();
    assert.throws(() => shade(handle), /unloaded by a later call/, what);
    // Loaded again, it shades as before.
    assert.deepEqual(shade(kernels.loadWindow(win.data)), first, what);
  }
});
