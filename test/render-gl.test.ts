// render.gl: the software GL stack under Chromium's WebGL, through the real server (src/render/backends/gl-stack.ts).
// - Each explicit stack (lavapipe, egl, swiftshader) starts, /ping names it, and its renders are the map the
//   SwiftShader stack draws, within the rounding of another rasteriser (and not SwiftShader's own bytes).
// - `auto` takes lavapipe on a host that has it (Debian's mesa-vulkan-drivers and libvulkan1; the Makefile installs
//   them).
// - A broken lavapipe (VK_ICD_FILENAMES naming a driver manifest that is not there): Chromium then runs ANGLE's
//   Vulkan on SwiftShader's Vulkan device instead, the canary frame's renderer check refuses it, `auto` goes on to
//   the next stack and says so in a warning; an explicit `gl = "lavapipe"` starts no renderer and its render
//   routes answer 503 saying why.
// - A GL stack that does not exist is a configuration error naming render.gl.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { describe, test } from 'node:test';
import pixelmatch from 'pixelmatch';
import { waitFor } from './helpers/foundation.js';
import { chromiumProcesses, distance, distinctColors, fetchBytes, fetchImage, pixel, tilePixel, WATER, type Decoded } from './helpers/render.js';
import { osmLibertyToml, runCli, startServer, writeTempConfig, type TestServer } from './helpers/server.js';

type Stack = 'lavapipe' | 'egl' | 'swiftshader';

interface Ping {
  renderer_enabled: boolean;
  renderer: string | null;
  renderer_gl: string | null;
  renderer_state: 'starting' | 'ready' | 'unavailable';
}

/** A driver manifest that is not there: the Vulkan loader finds no lavapipe (a real failure mode of a host). */
const MISSING_ICD = '/nonexistent/lvp.json';

/** Renders compared between stacks: a z5 tile (France, the Alps, the Mediterranean), the z0 world with its labels, a static map. */
const URLS = ['/styles/osm-liberty/5/16/11.png', '/styles/osm-liberty/0/0/0.png', '/styles/osm-liberty/static/10,45,3/600x400.png'];

/**
 * Share of pixels that may differ (pixelmatch threshold 0.1) between a stack's render and SwiftShader's. Measured
 * here (Chromium 156, Mesa lavapipe and llvmpipe): at most 0.017% (44 of 262144 pixels, the z0 tile's label edges;
 * the z5 tile 0, the static map 1 pixel), the same for lavapipe and egl; the densest map here, the z14 Paris tile
 * of render-routes, 0.058%. 0.2% leaves a margin of 3.5 to 10 times; a wrong map is far outside it (the z0 tile
 * against the z5 one: 66% differ; a blank tile against the z5 one: 93%).
 */
const MAX_DIFFERING = 0.002;
/**
 * Share of pixels whose bytes must differ from SwiftShader's render for a render to count as another rasteriser's:
 * lavapipe and llvmpipe round antialiased edges and blends their own way, measured 26-70% of the pixels of each
 * URL above (up to 84 levels in one channel). A stack that silently ran on SwiftShader would give its bytes.
 */
const MIN_OWN_ROUNDING = 0.02;

const RENDER = (gl: string) => `[render]\nbackend = "chromium"\ngl = "${gl}"\npool_size = 1\n`;

async function ping(s: TestServer): Promise<Ping> {
  return (await (await fetch(`${s.url}/ping`)).json()) as Ping;
}

/** Waits until the renderer has started or given up (never 'starting'); returns /ping then. */
async function settled(s: TestServer): Promise<Ping> {
  return waitFor(
    'the renderer to start or give up',
    async () => {
      const p = await ping(s);
      return p.renderer_state === 'starting' ? undefined : p;
    },
    120_000,
  );
}

/** A server on `gl` whose renderer is ready; fails with its log when not. */
async function readyServer(gl: string, env: NodeJS.ProcessEnv = {}): Promise<{ s: TestServer; ping: Ping }> {
  const s = await startServer({ toml: osmLibertyToml(RENDER(gl)), env, timeoutMs: 60_000 });
  try {
    const p = await settled(s);
    assert.equal(p.renderer_state, 'ready', `gl = "${gl}": the renderer did not start: ${JSON.stringify(p)}\n${s.output().slice(-3000)}`);
    assert.equal((await fetch(`${s.url}/ready`)).status, 200);
    return { s, ping: p };
  } catch (err) {
    await s.stop();
    throw err;
  }
}

/** The server's JSON log lines. */
function logLines(s: TestServer): Record<string, unknown>[] {
  return s
    .output()
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

/** The z5 tile is the map: the Mediterranean is water, France is land, and it is not a flat colour. */
function assertZ5Map(img: Decoded, what: string): void {
  assert.deepEqual([img.width, img.height], [512, 512], what);
  const sea = pixel(img, ...tilePixel(5, 16, 11, 6, 42.5));
  const france = pixel(img, ...tilePixel(5, 16, 11, 2, 47));
  assert.ok(distance(sea, WATER) <= 3, `${what}: the Mediterranean is ${sea}`);
  assert.ok(distance(france, WATER) > 40, `${what}: France is drawn as water (${france})`);
  assert.ok(distinctColors(img) > 100, `${what}: a flat image, not the map`);
}

/** Pixels (0..1) of `b` whose bytes differ from `a` (RGB). */
function exactDiffering(a: Decoded, b: Decoded): number {
  let n = 0;
  for (let i = 0; i < a.data.length; i += 4) if (a.data[i] !== b.data[i] || a.data[i + 1] !== b.data[i + 1] || a.data[i + 2] !== b.data[i + 2]) n++;
  return n / (a.width * a.height);
}

/**
 * What the browser's GPU process (where WebGL draws) has loaded and runs: the shared objects it maps and its thread
 * names. (Its /proc environ is no help: Chromium writes its process title over it.)
 */
function gpuProcess(s: TestServer): { args: string; libs: string[]; threads: string[] } {
  const gpu = chromiumProcesses(s.proc.pid!).filter((p) => p.args.includes('--type=gpu-process'));
  assert.equal(gpu.length, 1, JSON.stringify(chromiumProcesses(s.proc.pid!)));
  const { pid, args } = gpu[0];
  const libs = [...new Set(readFileSync(`/proc/${pid}/maps`, 'utf8').split('\n').map((l) => l.trim().split(/\s+/)[5] ?? ''))].filter((f) => f.includes('.so'));
  const threads = readdirSync(`/proc/${pid}/task`).map((t) => {
    try {
      return readFileSync(`/proc/${pid}/task/${t}/comm`, 'utf8').trim();
    } catch {
      return ''; // a thread that ended meanwhile
    }
  });
  return { args, libs, threads };
}

/**
 * Each stack's ANGLE back end, and the rasteriser library its GPU process loads: Mesa's lavapipe Vulkan driver,
 * Mesa's software DRI driver under EGL (swrast_dri.so; newer Mesa: libgallium), SwiftShader's Vulkan inside Chromium.
 */
const STACK_PROOF: Record<Stack, { angle: string; lib: RegExp }> = {
  lavapipe: { angle: 'vulkan', lib: /\/libvulkan_lvp\.so/ },
  egl: { angle: 'gl-egl', lib: /\/(swrast_dri|libgallium[^/]*)\.so/ },
  swiftshader: { angle: 'swiftshader', lib: /\/libvk_swiftshader\.so/ },
};

describe('render.gl: the software GL stack under Chromium', () => {
  test('each explicit stack starts, /ping names it, and its renders match SwiftShader within rasteriser rounding', { timeout: 480_000 }, async () => {
    const reference: Decoded[] = [];
    // One server after the other (each starts a browser): SwiftShader first, its renders the reference.
    for (const gl of ['swiftshader', 'lavapipe', 'egl'] as Stack[]) {
      const { s, ping: p } = await readyServer(gl);
      try {
        assert.equal(p.renderer_enabled, true);
        assert.equal(p.renderer, 'chromium');
        assert.equal(p.renderer_gl, gl);
        for (const [i, url] of URLS.entries()) {
          const img = await fetchImage(s.url + url);
          if (i === 0) assertZ5Map(img, `${gl} ${url}`);
          if (gl === 'swiftshader') {
            reference.push(img);
            continue;
          }
          const ref = reference[i];
          assert.deepEqual([img.width, img.height], [ref.width, ref.height], url);
          const differing = pixelmatch(ref.data, img.data, undefined, img.width, img.height, { threshold: 0.1 }) / (img.width * img.height);
          assert.ok(differing <= MAX_DIFFERING, `${gl} ${url}: ${(differing * 100).toFixed(3)}% of the pixels differ from SwiftShader's render`);
          const own = exactDiffering(ref, img);
          assert.ok(own >= MIN_OWN_ROUNDING, `${gl} ${url}: only ${(own * 100).toFixed(3)}% of the pixels differ in their bytes from SwiftShader's: is it SwiftShader?`);
        }
        // After the renders: the browser's GPU process runs on the stack's ANGLE back end and has loaded that
        // rasteriser (and no other of the three); Mesa's rasterisers draw on its own thread (LP_NUM_THREADS=0: no
        // llvmpipe-N worker threads).
        const gpu = gpuProcess(s);
        assert.match(gpu.args, new RegExp(`--use-angle=${STACK_PROOF[gl].angle}( |$)`), gpu.args);
        for (const other of Object.keys(STACK_PROOF) as Stack[]) {
          const loaded = gpu.libs.some((f) => STACK_PROOF[other].lib.test(f));
          assert.equal(loaded, other === gl, `${gl}: the GPU process ${loaded ? 'has' : 'has not'} loaded ${other}'s rasteriser: ${gpu.libs.join(' ')}`);
        }
        if (gl !== 'swiftshader' && process.env.LP_NUM_THREADS === undefined) assert.deepEqual(gpu.threads.filter((t) => t.startsWith('llvmpipe-')), [], gpu.threads.join(','));
      } finally {
        await s.stop();
      }
    }
    // The bound catches a wrong map: the z0 world, or a blank tile, against the z5 tile.
    const blank = Buffer.alloc(512 * 512 * 4, 255);
    for (const [what, other] of [['the z0 tile', reference[1].data], ['a blank tile', blank]] as const) {
      const wrong = pixelmatch(reference[0].data, other, undefined, 512, 512, { threshold: 0.1 }) / (512 * 512);
      assert.ok(wrong > MAX_DIFFERING * 100, `${what} differs from the z5 tile in only ${(wrong * 100).toFixed(2)}% of its pixels`);
    }
  });

  test('auto takes lavapipe on this host', { timeout: 180_000 }, async () => {
    const { s, ping: p } = await readyServer('auto');
    try {
      assert.equal(p.renderer, 'chromium');
      assert.equal(p.renderer_gl, 'lavapipe', s.output().slice(-3000));
      assert.doesNotMatch(s.output(), /renderer started on a slower GL stack/);
      assertZ5Map(await fetchImage(s.url + URLS[0]), 'auto');
    } finally {
      await s.stop();
    }
  });

  // On a host without MapLibre Native, render.backend = "auto" passes the native backend over first: that alone is
  // no slower GL stack and must not be warned about.
  test(
    'the default [render] takes lavapipe without a slower-stack warning',
    { timeout: 180_000 },
    async (t) => {
      const s = await startServer({ toml: osmLibertyToml(), timeoutMs: 60_000 });
      try {
        const p = await settled(s);
        assert.deepEqual([p.renderer_state, p.renderer, p.renderer_gl], ['ready', 'chromium', 'lavapipe'], s.output().slice(-3000));
        assert.doesNotMatch(s.output(), /renderer started on a slower GL stack/);
      } finally {
        await s.stop();
      }
    },
  );

  test('auto with a missing Vulkan driver: lavapipe fails its canary (renderer check), another stack serves, a warning names lavapipe', { timeout: 180_000 }, async () => {
    const { s, ping: p } = await readyServer('auto', { VK_ICD_FILENAMES: MISSING_ICD });
    try {
      assert.equal(p.renderer, 'chromium');
      assert.ok(p.renderer_gl === 'egl' || p.renderer_gl === 'swiftshader', `renderer_gl ${p.renderer_gl}\n${s.output().slice(-3000)}`);
      assertZ5Map(await fetchImage(s.url + URLS[0]), `auto on ${p.renderer_gl}`);
      const warning = logLines(s).find((l) => l.msg === 'renderer started on a slower GL stack');
      assert.ok(warning, `no warning in the log:\n${s.output().slice(-3000)}`);
      assert.equal(warning.level, 40);
      assert.equal(warning.gl, p.renderer_gl);
      // Only GL stacks are listed (the native backend, absent here, is no slower stack).
      const passed = warning.passed_over as string[];
      assert.equal(passed.length, 1, JSON.stringify(warning));
      assert.ok(passed[0].startsWith('lavapipe: '), passed[0]);
      // Without lavapipe's driver Chromium runs ANGLE's Vulkan on SwiftShader's Vulkan device: the canary's clear
      // colour reads back right, and the renderer string gives the fallback away.
      assert.match(passed[0], /GL stack lavapipe.*WebGL runs on .*SwiftShader.*not the GL stack asked for/, passed[0]);
    } finally {
      await s.stop();
    }
  });

  test('explicit lavapipe with a missing Vulkan driver: no renderer, render routes answer 503 saying why', { timeout: 180_000 }, async () => {
    const s = await startServer({ toml: osmLibertyToml(RENDER('lavapipe')), env: { VK_ICD_FILENAMES: MISSING_ICD }, timeoutMs: 60_000 });
    try {
      const p = await settled(s);
      assert.deepEqual([p.renderer_state, p.renderer_enabled, p.renderer, p.renderer_gl], ['unavailable', false, null, null], JSON.stringify(p));
      for (const url of [URLS[0], URLS[2]]) {
        const r = await fetchBytes(s.url + url);
        assert.equal(r.status, 503, `${url}: ${r.body.toString().slice(0, 500)}`);
        assert.equal(r.headers.get('content-type'), 'application/problem+json');
        const body = JSON.parse(r.body.toString()) as { title: string; detail: string };
        assert.equal(body.title, 'Rendering unavailable');
        assert.match(body.detail, /GL stack lavapipe.*not the GL stack asked for/, body.detail);
        // What went wrong, not where in the code.
        assert.doesNotMatch(r.body.toString(), /\\n\s*at |\n\s*at |\.[cm]?[jt]s:\d+:\d+/, r.body.toString());
      }
      assert.equal((await fetch(`${s.url}/ready`)).status, 503);
      assert.match(s.output(), /Chromium did not start on GL stack lavapipe .*WebGL runs on .*SwiftShader.*not the GL stack asked for/);
    } finally {
      await s.stop();
    }
  });

  test('gl = "metal" stops start-up: one line naming render.gl and the stacks there are, exit 1, no stack trace', async () => {
    const file = writeTempConfig(osmLibertyToml('[render]\ngl = "metal"\n'));
    const r = await runCli(['--config', file, '--port', '0', '--workers', '1'], { LOG_LEVEL: 'warn' }, 60_000);
    assert.equal(r.code, 1, r.stdout + r.stderr);
    const lines = r.stderr.split('\n').filter(Boolean);
    assert.equal(lines.length, 1, r.stderr);
    assert.ok(lines[0].startsWith(`tileserver-ts: ${file}: render.gl: `), lines[0]);
    assert.match(lines[0], /"metal"/);
    for (const stack of ['auto', 'lavapipe', 'egl', 'swiftshader']) assert.ok(lines[0].includes(`"${stack}"`), lines[0]);
    assert.doesNotMatch(r.stderr, /\n\s+at |Error:/);
  });
});
