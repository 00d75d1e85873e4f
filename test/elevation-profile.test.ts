// Profiles along a line (src/terrain/profile.ts): known answers for the great-circle distance, sampling by count
// and by step, the antimeridian and the summary; then properties of sampleLine over random lines, each checked
// against what a sample must be (its count, its spacing, its distance along its own segment), not against a
// copy of the walk the module does.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import fc from './helpers/fast-check.js';
import { FormCounter } from './helpers/forms.js';
import { cumulativeDistances, EARTH_RADIUS_M, haversine, lineLength, sampleCount, sampleDistances, sampleLine, summarise, type LonLat } from '../src/terrain/profile.js';

fc.configureGlobal({ ...fc.readConfigureGlobal(), includeErrorInReport: true });

/** One degree of a great circle on the sphere of R = 6371008.8 m: 2πR / 360. */
const DEGREE_M = 111195.08;

const near = (actual: number, expected: number, tolerance: number, what: string) =>
  assert.ok(Math.abs(actual - expected) <= tolerance, `${what}: ${actual}, expected ${expected} ± ${tolerance}`);

describe('great-circle distances (known answers)', () => {
  test('one degree of longitude on the equator, and of latitude on a meridian, is 111195.08 m for R = 6371008.8 m', () => {
    assert.equal(EARTH_RADIUS_M, 6371008.8);
    near(haversine([0, 0], [1, 0]), DEGREE_M, 0.005, 'along the equator');
    near(haversine([10, 20], [10, 21]), DEGREE_M, 0.005, 'along a meridian');
    // On the 60th parallel a degree of longitude is about half as long: 55597.54 m along the parallel, and the
    // great circle between its ends, bowing towards the pole, is 0.53 m shorter.
    near(haversine([0, 60], [1, 60]), 55597.01, 0.005, 'across one degree of the 60th parallel');
  });

  test('across the antimeridian the distance is the short way round; antipodes are half the circumference', () => {
    near(haversine([179.5, 0], [-179.5, 0]), DEGREE_M, 0.005, '179.5°E to 179.5°W');
    near(haversine([0, 0], [180, 0]), Math.PI * EARTH_RADIUS_M, 1e-6, 'antipodes');
    assert.equal(haversine([12.5, 41.9], [12.5, 41.9]), 0);
  });

  test('a line is as long as its segments added up', () => {
    const line: LonLat[] = [[0, 0], [1, 0], [1, 1]];
    assert.deepEqual(cumulativeDistances(line), [0, haversine([0, 0], [1, 0]), 2 * haversine([0, 0], [1, 0])]);
    near(lineLength(line), 2 * DEGREE_M, 0.01, 'two degrees');
    assert.equal(lineLength([]), 0);
    assert.equal(lineLength([[3, 4]]), 0);
  });
});

describe('sampling a line (known answers)', () => {
  // Two segments of exactly one degree each: east along the equator, then north along 1°E. Both have the same
  // length to the last bit (the haversine of one degree either way), so the distances below are exact.
  const line: LonLat[] = [[0, 0], [1, 0], [1, 1]];
  const d = haversine([0, 0], [1, 0]);

  test('samples: 5 on a 3-vertex line are evenly spaced, start and end on the end vertices and pass the middle one', () => {
    const s = sampleLine(line, { samples: 5 });
    // 1.5·d is rounded to a double, so the fourth sample's fraction of its segment is 0.5 to within one ulp.
    near(s[3].lat, 0.5, 1e-15, 'the fourth sample, halfway up the second segment');
    assert.deepEqual(s, [
      { distance_m: 0, lon: 0, lat: 0 },
      { distance_m: d / 2, lon: 0.5, lat: 0 },
      { distance_m: d, lon: 1, lat: 0 },
      { distance_m: 1.5 * d, lon: 1, lat: s[3].lat },
      { distance_m: 2 * d, lon: 1, lat: 1 },
    ]);
    near(d / 2, 55597.54, 0.005, 'half a degree');
  });

  test('samples: 4 do not fall on the middle vertex, and it is not added', () => {
    const s = sampleLine(line, { samples: 4 });
    assert.equal(s.length, 4);
    assert.deepEqual(s.map((p) => p.distance_m), [0, (2 * d) / 3, (4 * d) / 3, 2 * d]);
    near(s[1].lon, 2 / 3, 1e-12, 'the second sample, two thirds along the first segment');
    assert.equal(s[1].lat, 0);
    assert.equal(s[2].lon, 1);
    near(s[2].lat, 1 / 3, 1e-12, 'the third sample, a third of the way up the second segment');
  });

  test('step_m: 0, 50 km, 100 km, 150 km, 200 km and then the end of the 222.39 km line', () => {
    const s = sampleLine(line, { step_m: 50_000 });
    assert.deepEqual(s.map((p) => p.distance_m), [0, 50_000, 100_000, 150_000, 200_000, 2 * d]);
    near(2 * d, 222390.16, 0.01, 'the line');
    near(s[1].lon, 50_000 / d, 1e-12, '50 km east');
    assert.deepEqual([s[3].lon, s[5].lon, s[5].lat], [1, 1, 1]);
    near(s[3].lat, (150_000 - d) / d, 1e-12, '150 km: on the second segment');
    assert.equal(sampleCount(2 * d, { step_m: 50_000 }), 6);
  });

  test('step_m that divides the length (up to rounding) ends on the end once, not with a second sample a hair away', () => {
    const s = sampleLine(line, { step_m: d / 2 });
    assert.deepEqual(s.map((p) => p.distance_m), [0, d / 2, d, 3 * (d / 2), 2 * d]);
    assert.deepEqual(s[4], { distance_m: 2 * d, lon: 1, lat: 1 });
    assert.equal(sampleCount(2 * d, { step_m: d / 2 }), 5);
    // Rounding of 0.1 · 3: the step 0.1 over 0.3 m is 0.30000000000000004 long in three steps.
    assert.deepEqual(sampleDistances(0.3, { step_m: 0.1 }), [0, 0.1, 0.2, 0.3]);
  });

  test('a step longer than the line gives its two ends', () => {
    assert.deepEqual(sampleLine(line, { step_m: 1e9 }).map((p) => [p.distance_m, p.lon, p.lat]), [[0, 0, 0], [2 * d, 1, 1]]);
  });

  test('a segment across the antimeridian is interpolated the short way, through ±180', () => {
    const s = sampleLine([[179.5, 10], [-179.5, 10]], { samples: 5 });
    assert.deepEqual(s.map((p) => p.lon), [179.5, 179.75, 180, -179.75, -179.5]);
    for (const p of s) assert.equal(p.lat, 10);
  });

  test('a repeated vertex (a segment of no length) adds no distance and does not stop the walk', () => {
    const s = sampleLine([[0, 0], [0, 0], [1, 0]], { samples: 3 });
    assert.deepEqual(s.map((p) => [p.distance_m, p.lon]), [[0, 0], [d / 2, 0.5], [d, 1]]);
  });

  test('degenerate lines: no vertices gives no samples; one place gives samples at distance 0', () => {
    assert.deepEqual(sampleLine([], { samples: 3 }), []);
    assert.deepEqual(sampleLine([[5, 6]], { samples: 2 }), [{ distance_m: 0, lon: 5, lat: 6 }, { distance_m: 0, lon: 5, lat: 6 }]);
    assert.deepEqual(sampleLine([[5, 6], [5, 6]], { step_m: 10 }), [{ distance_m: 0, lon: 5, lat: 6 }]);
    assert.equal(sampleCount(0, { step_m: 10 }), 1);
  });
});

describe('the summary of a profile (known answers)', () => {
  test('ascent and descent between consecutive known elevations, skipping nulls; min and max of the known ones', () => {
    // 100 → (gap) → 110: +10; 110 → 105: -5; 105 → (gap) → 120: +15; 120 → 90: -30.
    const e = [100, null, 110, 105, null, null, 120, 90];
    assert.deepEqual(summarise(e, e.map((_, i) => i * 10)), { ascent_m: 25, descent_m: 35, min: 90, max: 120 });
  });

  test('sums are rounded once, at the end, to 0.01 m; -0 is reported as 0', () => {
    // Each rise is 0.004 m, under half a centimetre, and together they are 0.012 m.
    assert.deepEqual(summarise([0, 0.004, 0.008, 0.012], [0, 1, 2, 3]), { ascent_m: 0.01, descent_m: 0, min: 0, max: 0.01 });
    assert.deepEqual(summarise([12.345, 12.3449, null, 10.004], [0, 1, 2, 3]), { ascent_m: 0, descent_m: 2.34, min: 10, max: 12.35 });
    const below = summarise([-0.001, -0.002], [0, 1]);
    assert.ok(Object.is(below.max, 0) && Object.is(below.min, 0), JSON.stringify(below));
  });

  test('no known elevation: nothing climbed, no min or max; NaN and Infinity count as unknown', () => {
    assert.deepEqual(summarise([null, null], [0, 1]), { ascent_m: 0, descent_m: 0, min: null, max: null });
    assert.deepEqual(summarise([], []), { ascent_m: 0, descent_m: 0, min: null, max: null });
    assert.deepEqual(summarise([5, Number.NaN, 7, Infinity, 6], [0, 1, 2, 3, 4]), { ascent_m: 2, descent_m: 1, min: 5, max: 7 });
  });

  test('elevations and distances that do not pair up are a programming error, not a summary', () => {
    assert.throws(() => summarise([1, 2], [0]), RangeError);
  });
});

// ---- Properties ----------------------------------------------------------------------------------------------

/** A line as a random walk of short steps (up to about 1 km), anywhere that stays inside -180..180 and ±80. */
const walk = fc
  .tuple(fc.double({ min: -170, max: 170, noNaN: true }), fc.double({ min: -70, max: 70, noNaN: true }), fc.array(fc.tuple(fc.double({ min: -0.01, max: 0.01, noNaN: true }), fc.double({ min: -0.01, max: 0.01, noNaN: true }), fc.integer({ min: 0, max: 9 })), { minLength: 1, maxLength: 40 }))
  .map(([lon, lat, steps]) => {
    const line: LonLat[] = [[lon, lat]];
    // Step 0 of ten repeats the last vertex: segments of no length happen in real tracks.
    for (const [dx, dy, repeat] of steps) {
      const [x, y] = line[line.length - 1];
      line.push(repeat === 0 ? [x, y] : [x + dx, y + dy]);
    }
    return line;
  });

/** The segment a distance falls on: the first whose end is at or beyond it. */
function segmentOf(cum: number[], d: number): number {
  let j = 0;
  while (j < cum.length - 2 && cum[j + 1] < d) j++;
  return j;
}

describe('sampling a line (properties)', () => {
  test('samples: n of them, evenly spaced from 0 to the length, on the end vertices, each at its distance along its own segment', () => {
    const forms = new FormCounter();
    fc.assert(
      fc.property(walk, fc.integer({ min: 2, max: 300 }), (line, n) => {
        const s = sampleLine(line, { samples: n });
        const cum = cumulativeDistances(line);
        const length = cum[cum.length - 1];
        forms.hit(length === 0 ? 'no-length' : n > line.length ? 'more-samples-than-vertices' : 'fewer-samples-than-vertices');
        assert.equal(s.length, n);
        assert.deepEqual(s[0], { distance_m: 0, lon: line[0][0], lat: line[0][1] });
        assert.deepEqual(s[n - 1], { distance_m: length, lon: line[line.length - 1][0], lat: line[line.length - 1][1] });
        const spacing = length / (n - 1);
        for (let i = 1; i < n; i++) {
          near(s[i].distance_m - s[i - 1].distance_m, spacing, 1e-9 * Math.max(1, length), `spacing ${i}`);
          const j = segmentOf(cum, s[i].distance_m);
          // Over segments of at most ~1.5 km, the lon/lat interpolation is within millimetres of the great circle.
          near(haversine(line[j], [s[i].lon, s[i].lat]), s[i].distance_m - cum[j], 0.005, `sample ${i} along segment ${j}`);
        }
      }),
      { numRuns: 400 },
    );
    forms.assertEach(['more-samples-than-vertices', 'fewer-samples-than-vertices'], 30);
  });

  test('step_m: every sample but the last at a whole number of steps, the last at the end, sampleCount agrees', () => {
    const forms = new FormCounter();
    fc.assert(
      fc.property(walk, fc.double({ min: 1, max: 20_000, noNaN: true }), (line, step) => {
        const s = sampleLine(line, { step_m: step });
        const length = lineLength(line);
        assert.equal(s.length, sampleCount(length, { step_m: step }));
        assert.equal(s.length, sampleDistances(length, { step_m: step }).length);
        assert.deepEqual([s[0].lon, s[0].lat, s[0].distance_m], [line[0][0], line[0][1], 0]);
        if (length <= 1e-6) {
          // A line no longer than a micrometre is one place: one sample, at its start.
          forms.hit('no-length');
          assert.equal(s.length, 1);
          return;
        }
        forms.hit(s.length === 2 ? 'step-beyond-the-end' : 'steps');
        for (let i = 0; i < s.length - 1; i++) assert.equal(s[i].distance_m, i * step);
        const last = s[s.length - 1];
        assert.deepEqual(last, { distance_m: length, lon: line[line.length - 1][0], lat: line[line.length - 1][1] });
        const gap = last.distance_m - s[s.length - 2].distance_m;
        assert.ok(gap > 0 && gap <= step + 1e-6, `the last gap ${gap} is within one step ${step}`);
      }),
      { numRuns: 400 },
    );
    forms.assertEach(['steps', 'step-beyond-the-end'], 20);
  });

  test('summarise: ascent minus descent is the last known elevation minus the first; min ≤ every known ≤ max', () => {
    const elevation = fc.oneof(fc.constant(null), fc.double({ min: -500, max: 9000, noNaN: true }));
    fc.assert(
      fc.property(fc.array(elevation, { maxLength: 60 }), (e) => {
        const r = summarise(e, e.map((_, i) => i));
        const known = e.filter((v): v is number => v !== null);
        if (known.length === 0) return assert.deepEqual(r, { ascent_m: 0, descent_m: 0, min: null, max: null });
        // Each figure is rounded to 0.01 m on its own, so the balance holds to within two roundings.
        near(r.ascent_m - r.descent_m, known[known.length - 1] - known[0], 0.011, 'ascent - descent');
        assert.ok(r.ascent_m >= 0 && r.descent_m >= 0);
        near(r.min!, Math.min(...known), 0.005, 'min');
        near(r.max!, Math.max(...known), 0.005, 'max');
      }),
      { numRuns: 500 },
    );
  });
});
