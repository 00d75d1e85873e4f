// The comparison `make bench-debian13` ends with (bench/floor-compare.ts): its verdicts decide whether the container
// image moves to Debian 13, so the rule that calls a difference beyond the noise is checked here. A difference
// counts only when the runs of the two sides do not overlap; the ratio is of their means.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import fc from './helpers/fast-check.js';
import { compareRuns, compareTable, type RunLine } from '../bench/floor-compare.js';

const run = (round: number, release: string, gl: string, lp: string, msPerTile: number): RunLine => ({
  round,
  release,
  versions: `mesa-vulkan-drivers ${release === 'host' ? '22.3.6' : '25.0.7'}, `,
  row: { gl, lp, renderer: 'llvmpipe', msPerTile, renderer_ms: msPerTile * 0.7, gpu_ms: msPerTile * 0.25, pssMB: 900, rssMB: 2000, lpThreads: 0, steal: 0 },
});

describe('floor comparison', () => {
  test('runs that overlap are within the noise; runs apart are beyond it', () => {
    assert.deepEqual(compareRuns([200, 260], [240, 250]), { ratio: 230 / 245, beyondNoise: false, single: false });
    assert.equal(compareRuns([150, 160], [200, 210]).beyondNoise, true);
    assert.equal(compareRuns([200, 210], [150, 160]).beyondNoise, true);
    // One run on a side (or none: a variant that failed) says nothing of the noise, however far apart.
    assert.deepEqual(compareRuns([150], [200, 210]), { ratio: 150 / 205, beyondNoise: false, single: true });
    assert.equal(compareRuns([], [200]).beyondNoise, false);
  });

  test('beyond the noise exactly when both sides have two runs or more and every run of one is below every run of the other', () => {
    const runs = fc.array(fc.integer({ min: 50, max: 500 }), { minLength: 1, maxLength: 4 });
    fc.assert(
      fc.property(runs, runs, (a, b) => {
        const apart = a.length >= 2 && b.length >= 2 && (a.every((x) => b.every((y) => x < y)) || b.every((y) => a.every((x) => y < x)));
        assert.equal(compareRuns(a, b).beyondNoise, apart);
      }),
    );
  });

  test('the table names each release against the other and each variant against the service stack, and the failed runs', () => {
    const lines: RunLine[] = [
      run(1, 'host', 'lavapipe', '0', 250),
      run(1, 'trixie', 'lavapipe', '0', 180),
      run(1, 'host', 'swiftshader', 'n/a', 330),
      run(1, 'trixie', 'swiftshader', 'n/a', 240),
      run(2, 'host', 'lavapipe', '0', 240),
      run(2, 'trixie', 'lavapipe', '0', 190),
      run(2, 'host', 'swiftshader', 'n/a', 260),
      run(2, 'trixie', 'swiftshader', 'n/a', 320),
      { round: 2, release: 'trixie', versions: '', failed: 'egl 0', log: 'run-2-trixie-egl-0.log' },
      run(1, 'host', 'egl', '0', 200),
      run(1, 'trixie', 'egl', '0', 300),
    ];
    const text = compareTable(lines).join('\n');
    assert.match(text, /^host: mesa-vulkan-drivers 22\.3\.6$/m);
    assert.match(text, /lavapipe LP_NUM_THREADS=0: Debian 13 against Debian 12: 0\.76x the CPU per tile, beyond the noise/);
    assert.match(text, /swiftshader: Debian 13 against Debian 12: 0\.95x the CPU per tile, within the noise/);
    assert.match(text, /host: swiftshader against lavapipe LP_NUM_THREADS=0: 1\.20x the CPU per tile, beyond the noise/);
    assert.match(text, /egl LP_NUM_THREADS=0: Debian 13 against Debian 12: 1\.50x the CPU per tile, one run on a side: no measure of the noise/);
    assert.match(text, /failed: trixie egl 0 \(round 2; log run-2-trixie-egl-0\.log\)/);
    assert.match(text, /^trixie\s+lavapipe LP_NUM_THREADS=0\s+2\s+180, 190\s+185\b/m);
  });
});
