// The render pool with a real Chromium (dist/workers/render.js, built by `make test`).
// - Cancelling a render that a thread has already taken must not end that thread. Piscina ends the thread of a
//   running task whose AbortSignal fires; that took the thread's other renders with it, and ending a thread
//   while it reads a frame upload aborts the whole Node process (a CI run hit this in the time-limit test).
// - A thread with no task still does its work: a timed-out browser is killed at once, not at the thread's next
//   task (Piscina's Atomics.wait between tasks froze the thread's event loop).
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { findChromium } from '../src/render/backends/chromium.js';
import { RenderPool } from '../src/render/pool.js';
import { RenderError, type Frame, type Resource, type StyleRef } from '../src/render/renderer.js';
import { waitFor } from './helpers/foundation.js';
import { browserPids } from './helpers/render.js';

const style = JSON.stringify({ version: 8, name: 'plain', sources: {}, layers: [{ id: 'bg', type: 'background', paint: { 'background-color': '#cc3300' } }] });
const ref: StyleRef = { id: 'plain', key: 'pool-test-1' };
const frame = (size: number): Frame => ({ width: size, height: size, ratio: 1, zoom: 1, center: [0, 0], bearing: 0, pitch: 0 });

/**
 * A style whose one tile never arrives: MapLibre waits for it, so its render runs into the time limit whatever
 * the machine's speed (a render that is merely slow would race the limit on a loaded machine).
 */
const stallStyle = (base: string) =>
  JSON.stringify({
    version: 8,
    name: 'stall',
    sources: { s: { type: 'vector', tiles: [`${base}/stall/{z}/{x}/{y}.pbf`], maxzoom: 14 } },
    layers: [
      { id: 'bg', type: 'background', paint: { 'background-color': '#cc3300' } },
      { id: 'fill', type: 'fill', source: 's', 'source-layer': 'l' },
    ],
  });
const stallRef: StyleRef = { id: 'stall', key: 'pool-test-stall' };
/** Tile requests of the stalling style, held unanswered until the suite ends. */
const stalled: (() => void)[] = [];
const NOT_FOUND: Resource = { status: 404, contentType: 'text/plain', body: Buffer.from('not found') };

async function fetchResource(path: string, base: string): Promise<Resource> {
  if (path.startsWith('/styles/plain/style.json')) return { status: 200, contentType: 'application/json', body: Buffer.from(style) };
  if (path.startsWith('/styles/stall/style.json')) return { status: 200, contentType: 'application/json', body: Buffer.from(stallStyle(base)) };
  if (path.startsWith('/stall/')) return new Promise((resolve) => stalled.push(() => resolve(NOT_FOUND)));
  return NOT_FOUND;
}

/** The RGB of one pixel of a rendered frame (RGBA rows, top to bottom). */
function framePixel(f: { data: Uint8Array; width: number }, x: number, y: number): [number, number, number] {
  const i = (y * f.width + x) * 4;
  return [f.data[i], f.data[i + 1], f.data[i + 2]];
}

/** A frame of the plain style: its size, and its background colour (#cc3300) in the middle. */
function assertPlainFrame(f: { data: Uint8Array; width: number; height: number }, size: number): void {
  assert.equal(f.width, size);
  assert.equal(f.height, size);
  assert.equal(f.data.length, size * size * 4);
  assert.deepEqual(framePixel(f, size >> 1, size >> 1), [0xcc, 0x33, 0x00]);
}

/**
 * For the enclosing suite: a warmed-up pool of one thread with one page (its threads' errors collected), closed
 * after the suite.
 */
function onePagePool(timeoutMs: number): { pool: () => RenderPool; threadErrors: Error[] } {
  let pool: RenderPool | undefined;
  const threadErrors: Error[] = [];
  before(async () => {
    const chromiumPath = findChromium(undefined);
    assert.ok(chromiumPath, 'Chromium is installed by make test');
    pool = new RenderPool({
      backend: 'chromium',
      threads: 1,
      pages: 1,
      timeoutMs,
      queueTimeoutMs: 60_000,
    maxQueue: 16,
      maxRenders: 1000,
      maxFrame: 4096,
      chromiumPath,
      flatExtrusions: false,
      fetch: fetchResource,
      onThreadError: (err) => threadErrors.push(err),
    });
    await pool.warmUp(ref, 60_000);
  });
  after(() => pool?.close());
  return { pool: () => pool!, threadErrors };
}

describe('render pool cancellation', () => {
  const { pool: current, threadErrors } = onePagePool(20_000);

  test('a render cancelled just as its thread takes it fails alone; the thread and its browser live on', async () => {
    const pool = current();
    const browsers = browserPids(process.pid);
    assert.equal(browsers.length, 1);
    const outcomes = { cancelled: 0, drawn: 0 };
    for (let round = 0; round < 3; round++) {
      const cancel = new AbortController();
      // One page: the second render waits in the queue until the first is done, and the thread takes it at once
      // when the first one's result comes in. It is cancelled in that same moment, as the service cancels the
      // sibling parts of a frame when one part fails.
      const first = pool.render(ref, frame(1024)).then((f) => {
        cancel.abort();
        return f;
      });
      const second = pool.render(ref, frame(512), { cancel: cancel.signal });
      const [a, b] = await Promise.allSettled([first, second]);
      assert.equal(a.status, 'fulfilled');
      assertPlainFrame(a.value, 1024);
      // Either outcome is right for the second render, and each is checked: cancelled with its reason, or (when
      // the cancel came too late to matter) a whole frame.
      if (b.status === 'rejected') {
        assert.ok(b.reason instanceof RenderError, String(b.reason));
        assert.equal(b.reason.reason, 'cancelled');
        assert.match(b.reason.message, /cancelled/);
        outcomes.cancelled++;
      } else {
        assertPlainFrame(b.value, 512);
        outcomes.drawn++;
      }
    }
    assert.equal(outcomes.cancelled + outcomes.drawn, 3);
    // A render cancelled while it waits is never drawn; the one before it is not disturbed.
    const cancel = new AbortController();
    const running = pool.render(ref, frame(1024));
    const waiting = pool.render(ref, frame(512), { cancel: cancel.signal });
    cancel.abort();
    await assert.rejects(waiting, (err: unknown) => err instanceof RenderError && err.reason === 'cancelled');
    assertPlainFrame(await running, 1024);
    // The same browser serves the next render: no thread was ended (an ended thread's browser is killed).
    const next = await pool.render(ref, frame(64));
    assertPlainFrame(next, 64);
    assert.deepEqual(browserPids(process.pid), browsers);
    assert.deepEqual(threadErrors, []);
  });
});

describe('render pool time limit', () => {
  // 8 s: a render whose tile never arrives reaches it whatever the machine's speed, and a fresh browser's 64 px
  // frame stays far inside it even on a loaded machine (the clock starts after the browser and style are up).
  const { pool: current, threadErrors } = onePagePool(8_000);
  after(() => {
    for (const release of stalled.splice(0)) release();
  });

  // A time limit that never fires would leave the stalled render waiting for ever: the test's own limit ends it.
  test('a timed-out browser is killed while its thread waits for work; the next render gets a new one', { timeout: 120_000 }, async () => {
    const pool = current();
    const [browser] = browserPids(process.pid);
    assert.ok(browser);
    await assert.rejects(pool.render(stallRef, frame(64)), (err: unknown) => err instanceof RenderError && err.reason === 'timeout');
    assert.ok(stalled.length > 0, 'the render was waiting for its tile');
    // No task follows: the thread alone must end the browser.
    await waitFor('the timed-out browser to end', () => (browserPids(process.pid).includes(browser) ? undefined : true), 15_000);
    const next = await pool.render(ref, frame(64));
    assertPlainFrame(next, 64);
    const now = browserPids(process.pid);
    assert.equal(now.length, 1);
    assert.notEqual(now[0], browser);
    assert.deepEqual(threadErrors, []);
  });
});
