// The k6 browse script (bench/k6/browse.ts) and the scenario it shares with bench/browse.bench.ts
// (bench/k6/browse-scenario.ts). k6 is not installed here, so the script is type-checked against @types/k6 with its
// own tsconfig (k6 would strip the types and run it), and a copy with a planted type error shows that check can
// fail; then the script runs with stubs in place of k6's modules, to see what it asks for and records. The
// scenario's walks are checked as properties over seeds, users and settings: both runners rely on them.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync, copyFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import fc from './helpers/fast-check.js';
import { areaAt, BROWSE, userWalk, viewTiles, type BrowseSettings, type View } from '../bench/k6/browse-scenario.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const K6_DIR = path.join(ROOT, 'bench/k6');
// The project's own TypeScript compiler, run by node: `npx tsc` would fetch an unrelated "tsc" package if
// typescript were missing from node_modules, and its npm warnings would clutter the output shown on failure.
const TSC = createRequire(import.meta.url).resolve('typescript/bin/tsc');

function tsc(project: string): { status: number | null; output: string } {
  const r = spawnSync(process.execPath, [TSC, '-p', project, '--pretty', 'false'], { cwd: ROOT, encoding: 'utf8', timeout: 120_000 });
  return { status: r.status, output: `${r.stdout ?? ''}${r.stderr ?? ''}${r.error ? String(r.error) : ''}` };
}

describe('bench/k6/browse.ts type-checks against @types/k6', () => {
  const dirs: string[] = [];
  after(() => {
    for (const d of dirs) rmSync(d, { recursive: true, force: true });
  });

  /** A copy of the script and the scenario in a temp dir, checked with the same compiler options. */
  function copyAndCheck(edit: (script: string) => string): { status: number | null; output: string } {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'tsts-k6-script-'));
    dirs.push(dir);
    writeFileSync(path.join(dir, 'browse.ts'), edit(readFileSync(path.join(K6_DIR, 'browse.ts'), 'utf8')));
    copyFileSync(path.join(K6_DIR, 'browse-scenario.ts'), path.join(dir, 'browse-scenario.ts'));
    // types: ["k6"] and `k6/http` resolve from the config's directory: give the copy the project's node_modules.
    symlinkSync(path.join(ROOT, 'node_modules'), path.join(dir, 'node_modules'), 'dir');
    writeFileSync(
      path.join(dir, 'tsconfig.json'),
      JSON.stringify({ extends: path.join(K6_DIR, 'tsconfig.json'), files: ['browse.ts', 'browse-scenario.ts'] }),
    );
    return tsc(path.join(dir, 'tsconfig.json'));
  }

  test('tsc -p bench/k6/tsconfig.json passes', () => {
    const r = tsc(path.join(K6_DIR, 'tsconfig.json'));
    assert.equal(r.status, 0, `tsc -p bench/k6/tsconfig.json failed:\n${r.output}`);
  });

  test('the same check fails on a copy with a wrong option type, and only there', () => {
    // The unchanged copy passes: the temp setup itself (paths, types) is sound, so the failure below is the edit's.
    const clean = copyAndCheck((s) => s);
    assert.equal(clean.status, 0, `the unchanged copy should pass:\n${clean.output}`);

    const planted = "      iterations: '1',";
    const broken = copyAndCheck((s) => {
      const edited = s.replace(/^ {6}iterations: 1,$/m, planted);
      assert.notEqual(edited, s, 'the script no longer has the line `      iterations: 1,` to break');
      return edited;
    });
    assert.notEqual(broken.status, 0, `a string for the scenario's iterations should not type-check:\n${broken.output}`);
    const line = readFileSync(path.join(K6_DIR, 'browse.ts'), 'utf8').split('\n').findIndex((l) => /^ {6}iterations: 1,$/.test(l)) + 1;
    assert.match(broken.output, new RegExp(`browse\\.ts\\(${line},\\d+\\): error TS2322`), `expected the error on line ${line}:\n${broken.output}`);
  });
});

// ---- The script's behaviour, with k6's modules played by stubs ----
// esbuild (which k6 itself uses to strip the types) bundles browse.ts with browse-scenario.ts, the k6 modules
// replaced by stubs that record what the script asks of them; the bundle then runs in this process.

interface StubRequest {
  method: string;
  url: string;
  params?: { tags?: Record<string, string>; timeout?: string };
}
interface StubAnswer {
  status: number;
  headers: Record<string, string>;
  timings: { duration: number };
}
interface K6Stub {
  vu: number;
  answer: (r: StubRequest) => StubAnswer;
  batches: StubRequest[][];
  sleeps: number[];
  metrics: Record<string, { value: number | boolean; tags?: Record<string, string> }[]>;
  checks: Record<string, number>;
}
interface LoadedScript {
  options: {
    scenarios: Record<string, { executor: string; vus: number; iterations: number }>;
    batch: number;
    batchPerHost: number;
    thresholds: Record<string, string[]>;
  };
  default: () => void;
}

const STUBS: Record<string, string> = {
  k6: `export function check(value, sets) {
    let ok = true;
    for (const [name, f] of Object.entries(sets)) {
      const passed = !!f(value);
      globalThis.__k6stub.checks[name + (passed ? ' ok' : ' failed')] = (globalThis.__k6stub.checks[name + (passed ? ' ok' : ' failed')] ?? 0) + 1;
      ok = ok && passed;
    }
    return ok;
  }
  export function sleep(s) { globalThis.__k6stub.sleeps.push(s); }`,
  'k6/http': `export default { batch(requests) {
    globalThis.__k6stub.batches.push(requests);
    return requests.map((r) => globalThis.__k6stub.answer(r));
  } };`,
  'k6/execution': `export default { vu: { get idInTest() { return globalThis.__k6stub.vu; } } };`,
  'k6/metrics': `class Metric {
    constructor(name, isTime) { this.name = name; this.isTime = isTime; globalThis.__k6stub.metrics[name] = []; }
    add(value, tags) { globalThis.__k6stub.metrics[this.name].push({ value, tags }); }
  }
  export class Trend extends Metric {}
  export class Counter extends Metric {}
  export class Rate extends Metric {}`,
};

let bundled: Promise<string> | undefined;
let loads = 0;
const stub = () => (globalThis as unknown as { __k6stub: K6Stub }).__k6stub;

/** Evaluates browse.ts afresh (its init code reads __ENV) with the given environment. */
async function loadScript(env: Record<string, string>): Promise<LoadedScript> {
  const { build } = await import('esbuild');
  bundled ??= build({
    entryPoints: [path.join(K6_DIR, 'browse.ts')],
    bundle: true,
    write: false,
    format: 'esm',
    platform: 'neutral',
    logLevel: 'silent',
    plugins: [
      {
        name: 'k6-stubs',
        setup(b) {
          b.onResolve({ filter: /^k6(\/|$)/ }, (a) => ({ path: a.path, namespace: 'k6-stub' }));
          b.onLoad({ filter: /.*/, namespace: 'k6-stub' }, (a) => {
            const contents = STUBS[a.path];
            if (contents === undefined) throw new Error(`no stub for ${a.path}`);
            return { contents, loader: 'js' };
          });
        },
      },
    ],
  }).then((r) => r.outputFiles[0].text);
  const code = await bundled;
  (globalThis as unknown as { __k6stub: K6Stub }).__k6stub = {
    vu: 1,
    answer: () => ({ status: 200, headers: { 'Content-Type': 'image/png' }, timings: { duration: 5 } }),
    batches: [],
    sleeps: [],
    metrics: {},
    checks: {},
  };
  (globalThis as unknown as { __ENV: Record<string, string> }).__ENV = env;
  // A different URL each time, so the module is evaluated again rather than taken from the module cache.
  const url = `data:text/javascript;base64,${Buffer.from(`${code}\n// load ${++loads}\n`).toString('base64')}`;
  return (await import(url)) as LoadedScript;
}

/** What one user should ask for, view by view, when every tile arrives: the tiles of each view not seen before. */
function expectedBatches(s: BrowseSettings, user: number, seed: number): string[][] {
  const seen = new Set<string>();
  return userWalk(s, user, seed)
    .map((v) => viewTiles(s, v).filter((t) => !seen.has(t) && (seen.add(t), true)))
    .filter((b) => b.length > 0);
}

describe('bench/k6/browse.ts run against stubs of the k6 modules', () => {
  test('options: per-vu-iterations, one walk per VU, 6 requests per host, the fill target by user count', async () => {
    const four = await loadScript({});
    assert.deepEqual(
      { ...four.options.scenarios.browse, maxDuration: undefined },
      { executor: 'per-vu-iterations', vus: 4, iterations: 1, maxDuration: undefined },
    );
    assert.equal(four.options.batch, 6);
    assert.equal(four.options.batchPerHost, 6);
    assert.deepEqual(four.options.thresholds.screen_fill, ['p(95)<1000']);
    assert.deepEqual(four.options.thresholds.tile_errors, ['rate==0']);
    const one = await loadScript({ USERS: '1' });
    assert.equal(one.options.scenarios.browse.vus, 1);
    assert.deepEqual(one.options.thresholds.screen_fill, ['p(95)<400']);
    assert.deepEqual((await loadScript({ USERS: '4', FILL_P95_MS: '700' })).options.thresholds.screen_fill, ['p(95)<700']);
  });

  test("each VU walks its user's views: one batch of the new tiles per view, a fill each, 1 s between views", async () => {
    for (const [env, base, style, seed] of [
      [{}, 'http://127.0.0.1:8080', 'osm-liberty', 1],
      [{ BASE_URL: 'https://tiles.example.com/', STYLE: 'basic', SEED: '7' }, 'https://tiles.example.com', 'basic', 7],
    ] as const) {
      const script = await loadScript(env);
      for (const vu of [1, 2, 3, 4]) {
        const before = { batches: stub().batches.length, fills: stub().metrics.screen_fill.length, sleeps: stub().sleeps.length };
        stub().vu = vu;
        script.default();
        const batches = stub().batches.slice(before.batches);
        const want = expectedBatches(BROWSE, vu - 1, seed);
        assert.deepEqual(
          batches.map((b) => b.map((r) => r.url)),
          want.map((b) => b.map((t) => `${base}/styles/${style}/${t}`)),
          `VU ${vu} (user ${vu - 1}), seed ${seed}`,
        );
        assert.ok(batches.every((b) => b.every((r) => r.method === 'GET' && r.params?.tags?.name === `${base}/styles/${style}/{z}/{x}/{y}.png`)));
        assert.equal(stub().metrics.screen_fill.length - before.fills, want.length, 'one screen fill per view with new tiles');
        assert.deepEqual(stub().sleeps.slice(before.sleeps), Array(BROWSE.views - 1).fill(BROWSE.thinkMs / 1000));
      }
      const all = stub().batches.flat().length;
      assert.equal(stub().metrics.tiles.length, all);
      assert.equal(stub().metrics.tile_duration.length, all);
      assert.ok(stub().metrics.tile_errors.every((m) => m.value === false));
    }
  });

  test('a tile that failed is counted as an error and asked for again when a later view shows it', async () => {
    const script = await loadScript({ SEED: '1' });
    // User 0's first tile answered 500 and its second a 200 that is not a PNG, the first time only; a user who pans
    // keeps part of the screen, so the first tile shows again.
    const walk = userWalk(BROWSE, 0, 1);
    const [first, second] = viewTiles(BROWSE, walk[0]);
    const again = walk.findIndex((v, i) => i > 0 && viewTiles(BROWSE, v).includes(first));
    const failed = new Set<string>();
    stub().answer = (r): StubAnswer => {
      const t = [first, second].find((x) => r.url.endsWith(`/${x}`));
      if (t !== undefined && !failed.has(t)) {
        failed.add(t);
        if (t === first) return { status: 500, headers: { 'Content-Type': 'application/problem+json' }, timings: { duration: 3 } };
        return { status: 200, headers: { 'Content-Type': 'text/html' }, timings: { duration: 3 } };
      }
      return { status: 200, headers: { 'content-type': 'image/png' }, timings: { duration: 5 } };
    };
    stub().vu = 1;
    script.default();
    const asked = stub().batches.flat().filter((r) => r.url.endsWith(`/${first}`)).length;
    assert.equal(stub().metrics.tile_errors.filter((m) => m.value === true).length, 2);
    assert.equal(stub().checks['tile status is 200 failed'], 1);
    assert.equal(stub().checks['tile content-type is image/png failed'], 2);
    // Seed 1 brings the first tile back into view; if a change of the scenario stops doing so, say so.
    assert.ok(again > 0, 'user 0 of seed 1 never sees its first tile again: pick another tile for this test');
    assert.equal(asked, 2, 'the failed tile is asked for again');
  });

  test('settings the walk cannot keep are refused before the test starts', async () => {
    await assert.rejects(loadScript({ USERS: 'four' }), /USERS=four: expected a whole number/);
    await assert.rejects(loadScript({ USERS: '0' }), /USERS=0: expected 1\.\./);
    await assert.rejects(loadScript({ MIN_ZOOM: '14', MAX_ZOOM: '14', START_ZOOM: '14' }), /at least two zoom levels/);
    await assert.rejects(loadScript({ START_ZOOM: '16' }), /MIN_ZOOM <= START_ZOOM <= MAX_ZOOM/);
    await assert.rejects(loadScript({ AREA_SIZE: '16', MIN_ZOOM: '12' }), /4 tiles across at z12/);
    await assert.rejects(loadScript({ AREA_Z: '3', AREA_X0: '6', AREA_Y0: '0', AREA_SIZE: '4', MIN_ZOOM: '3', START_ZOOM: '3', MAX_ZOOM: '5' }), /leaves the world/);
    const custom = await loadScript({ AREA_Z: '10', AREA_X0: '512', AREA_Y0: '340', AREA_SIZE: '8', MIN_ZOOM: '10', START_ZOOM: '11', MAX_ZOOM: '12' });
    stub().vu = 2;
    custom.default();
    const s: BrowseSettings = { ...BROWSE, area: { z: 10, x0: 512, y0: 340, size: 8 }, minZoom: 10, startZoom: 11, maxZoom: 12 };
    assert.deepEqual(
      stub().batches.map((b) => b.map((r) => r.url.replace('http://127.0.0.1:8080/styles/osm-liberty/', ''))),
      expectedBatches(s, 1, 1),
    );
  });
});

/** Where a view's screen covers at its zoom: [x0, x1) x [y0, y1) in tiles. */
const box = (s: BrowseSettings, v: View) => ({ x0: v.x, x1: v.x + s.cols, y0: v.y, y1: v.y + s.rows });

/** Whether the area's corners and edge fall on tile edges of the lowest zoom (the default area does). */
function sameAreaAtEveryZoom(s: BrowseSettings): boolean {
  const step = 2 ** Math.max(0, s.area.z - s.minZoom);
  return s.area.x0 % step === 0 && s.area.y0 % step === 0 && s.area.size % step === 0;
}

/** Asserts everything both runners take for granted about one user's walk. */
function checkWalk(s: BrowseSettings, user: number, seed: number): void {
  const walk = userWalk(s, user, seed);
  assert.deepEqual(userWalk(s, user, seed), walk, 'the same seed and user give the same walk');
  assert.equal(walk.length, s.views);
  assert.equal(walk[0].z, s.startZoom, 'the walk starts at the start zoom');
  const scale = (user + 1) % s.hiDpiEvery === 0 ? 2 : 1;
  for (const v of walk) {
    assert.equal(v.scale, scale, `user ${user}: users n*${s.hiDpiEvery}-1 are @2x, no others`);
    assert.ok(v.z >= s.minZoom && v.z <= s.maxZoom, `z${v.z} outside z${s.minZoom}-${s.maxZoom}`);
    const a = areaAt(s, v.z);
    const b = box(s, v);
    assert.ok(
      b.x0 >= a.x0 && b.x1 <= a.x0 + a.size && b.y0 >= a.y0 && b.y1 <= a.y0 + a.size,
      `view ${JSON.stringify(v)} leaves the area at z${v.z} (${JSON.stringify(a)})`,
    );
  }
  for (let i = 1; i < walk.length; i++) {
    const [p, v] = [walk[i - 1], walk[i]];
    const move = `move ${i}: ${JSON.stringify(p)} -> ${JSON.stringify(v)}`;
    if (v.z === p.z) {
      assert.equal(Math.abs(v.x - p.x) + Math.abs(v.y - p.y), 1, `${move} is not a one-tile pan`);
    } else {
      assert.equal(Math.abs(v.z - p.z), 1, `${move} is not a one-level zoom`);
      // About the screen's centre: the new screen still shows the point the old one was centred on. Only when the
      // area is the same at every zoom: areaAt rounds each end down, so an area not on a tile edge of the lowest zoom
      // is narrower there, and zooming out near its far edge pushes the screen off the old centre.
      if (!sameAreaAtEveryZoom(s)) continue;
      const f = 2 ** (v.z - p.z);
      const cx = (p.x + s.cols / 2) * f;
      const cy = (p.y + s.rows / 2) * f;
      const b = box(s, v);
      assert.ok(cx >= b.x0 && cx <= b.x1 && cy >= b.y0 && cy <= b.y1, `${move} does not keep the old centre (${cx}, ${cy}) on screen`);
    }
  }
}

/**
 * Settings a user can give bench/k6/browse.ts through its environment, within what it accepts: an area inside the
 * world whose edge at the lowest zoom is still wider than a screen, and at least two zoom levels (with one, a zoom
 * move leaves the range: browse-scenario.ts turns it around onto a level that is out of range as well).
 */
const settingsArb: fc.Arbitrary<BrowseSettings> = fc
  .record({
    cols: fc.integer({ min: 1, max: 6 }),
    rows: fc.integer({ min: 1, max: 6 }),
    z: fc.integer({ min: 4, max: 18 }),
    below: fc.integer({ min: 0, max: 3 }),
    span: fc.integer({ min: 1, max: 5 }),
    startAt: fc.nat(),
    extra: fc.integer({ min: 1, max: 4 }),
    views: fc.integer({ min: 1, max: 12 }),
    hiDpiEvery: fc.integer({ min: 1, max: 6 }),
    aligned: fc.boolean(),
  })
  .chain((r) => {
    const minZoom = r.z - r.below;
    const maxZoom = minZoom + r.span;
    const need = (Math.max(r.cols, r.rows) + 1) * 2 ** r.below;
    const size = Math.min(2 ** r.z, need * r.extra);
    const step = r.aligned ? 2 ** r.below : 1;
    const slots = Math.floor((2 ** r.z - size) / step);
    return fc.record({ x: fc.integer({ min: 0, max: slots }), y: fc.integer({ min: 0, max: slots }) }).map(
      ({ x, y }): BrowseSettings => ({
        ...BROWSE,
        cols: r.cols,
        rows: r.rows,
        views: r.views,
        hiDpiEvery: r.hiDpiEvery,
        minZoom,
        maxZoom,
        startZoom: minZoom + (r.startAt % (r.span + 1)),
        area: { z: r.z, x0: x * step, y0: y * step, size },
      }),
    );
  })
  .filter((s) => areaAt(s, s.minZoom).size > Math.max(s.cols, s.rows));

describe('the browse scenario both runners share', () => {
  test('the default walk: deterministic, inside the area and the zoom range, one pan or one zoom per move', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 1_000_000 }), fc.integer({ min: 0, max: 999 }), (seed, user) => checkWalk(BROWSE, user, seed)),
      { numRuns: 3000 },
    );
  });

  test('walks over the settings bench/k6/browse.ts accepts keep the same rules', () => {
    fc.assert(
      fc.property(settingsArb, fc.integer({ min: 0, max: 1_000_000 }), fc.integer({ min: 0, max: 999 }), (s, seed, user) => checkWalk(s, user, seed)),
      { numRuns: 3000 },
    );
  });

  test('every fourth user (users 3, 7, 11, ...) has a @2x screen in the default settings', () => {
    const scales = Array.from({ length: 12 }, (_, u) => userWalk(BROWSE, u, 1)[0].scale);
    assert.deepEqual(scales, [1, 1, 1, 2, 1, 1, 1, 2, 1, 1, 1, 2]);
  });

  test('viewTiles: cols x rows distinct paths covering the screen, @2x only on a @2x screen', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 8 }),
        fc.integer({ min: 1, max: 8 }),
        fc.integer({ min: 0, max: 22 }),
        fc.constantFrom<1 | 2>(1, 2),
        fc.nat(),
        fc.nat(),
        (cols, rows, z, scale, xs, ys) => {
          const s: BrowseSettings = { ...BROWSE, cols, rows };
          const v: View = { z, x: xs % 2 ** z, y: ys % 2 ** z, scale };
          const paths = viewTiles(s, v);
          assert.equal(paths.length, cols * rows);
          assert.equal(new Set(paths).size, paths.length, 'paths are distinct');
          const want = new Set<string>();
          for (let y = v.y; y < v.y + rows; y++) for (let x = v.x; x < v.x + cols; x++) want.add(`${z}/${x}/${y}${scale === 2 ? '@2x' : ''}.png`);
          assert.deepEqual(new Set(paths), want);
        },
      ),
      { numRuns: 2000 },
    );
  });

  test('the first view asks for 12 tiles and a walk asks for at least one tile after it (default settings)', () => {
    // What the runners count: a view with no new tile is no screen fill; a walk that never moved would give one.
    fc.assert(
      fc.property(fc.integer({ min: 0, max: 1_000_000 }), fc.integer({ min: 0, max: 999 }), (seed, user) => {
        const seen = new Set<string>();
        const fresh = userWalk(BROWSE, user, seed).map((v) => {
          const wanted = viewTiles(BROWSE, v).filter((t) => !seen.has(t));
          for (const t of wanted) seen.add(t);
          return wanted.length;
        });
        assert.equal(fresh[0], BROWSE.cols * BROWSE.rows);
        assert.ok(fresh.slice(1).some((n) => n > 0), `no new tile after the first view: ${fresh}`);
      }),
      { numRuns: 1000 },
    );
  });
});
