// One render's frame, whatever its size, within the render's time budget: drawn whole, drawn smaller and scaled
// (a pitched view past the largest frame), or drawn in overlapping parts concurrently and joined.
import { setMaxListeners } from 'node:events';
import { Budget } from './budget.js';
import { cropRaw, pasteRaw, resizeRaw, type RawImage } from './image.js';
import type { RenderCall, RenderPool } from './pool.js';
import type { Frame, RenderedFrame, StyleRef } from './renderer.js';
import { splitFrame } from './tile-render.js';

/** Overlap of the parts of a split frame, CSS pixels. */
const SPLIT_BUFFER = 64;

export interface DrawnFrame {
  raw: RawImage;
  /** The tiles the frame asked for (`Frame.encode`), encoded by the renderer; else the caller encodes from `raw`. */
  tiles?: Uint8Array[];
  timing: Record<string, number>;
}

/**
 * Runs one render within `render.timeout_ms`: the clock starts when its first frame begins on a renderer (a
 * browser start, a page replacement or a style load before it are not counted, as in the render thread's own
 * limit) and covers drawing, joining parts, overlays and encoding. Past it the answer is a timeout at once and
 * parts still queued are dropped; work already under way finishes in the background and is cached.
 */
export async function withinBudget<T>(timeoutMs: number, signal: AbortSignal, run: (budget: Budget, cancel: AbortSignal) => Promise<T>): Promise<T> {
  const expired = new AbortController();
  const budget = new Budget(timeoutMs, () => expired.abort());
  try {
    return await budget.race(run(budget, AbortSignal.any([signal, expired.signal])));
  } finally {
    budget.clear();
  }
}

const sum = (t: RenderedFrame['timings']) => t.resources + t.draw + t.readback + t.transfer + t.style;

/**
 * Pixels of a frame of any size on `pool`. `drew` is told of every frame a renderer finished (the pool is ready
 * again after failed starts).
 */
export async function drawFrame(
  pool: RenderPool,
  ref: StyleRef,
  frame: Frame,
  budget: Budget,
  signal: AbortSignal,
  asker: Pick<RenderCall, 'client' | 'priority' | 'shared'>,
  drew: (pool: RenderPool) => void,
): Promise<DrawnFrame> {
  const call = (cancel: AbortSignal): RenderCall => ({ cancel, ...asker, onStart: () => budget.start() });
  const drawnBy = (f: RenderedFrame) => {
    drew(pool);
    return f;
  };
  const pw = Math.round(frame.width * frame.ratio);
  const ph = Math.round(frame.height * frame.ratio);
  const timing = (t: RenderedFrame['timings']): Record<string, number> => ({ ...t });
  if (pw <= pool.maxFrame && ph <= pool.maxFrame) {
    const f = drawnBy(await pool.render(ref, frame, call(signal)));
    return { raw: f, tiles: f.tiles, timing: timing(f.timings) };
  }
  // Tiles encoded in the renderer are cut from one whole frame; a frame drawn smaller or in parts hands back pixels.
  const { encode: _whole, ...bare } = frame;
  frame = bare;
  const parts = splitFrame(frame, pool.maxFrame, SPLIT_BUFFER);
  if (parts.length === 1) {
    const ratio = pool.maxFrame / Math.max(frame.width, frame.height);
    const smaller = drawnBy(await pool.render(ref, { ...frame, ratio }, call(signal)));
    return { raw: await resizeRaw(smaller, pw, ph), timing: timing(smaller.timings) };
  }
  // When one part fails the answer is an error: parts still waiting in the queue are dropped.
  const cancel = new AbortController();
  // One listener per part (and per retry): not a leak.
  setMaxListeners(2 * parts.length, cancel.signal);
  const either = AbortSignal.any([signal, cancel.signal]);
  setMaxListeners(2 * parts.length + 2, either);
  const drawn = await Promise.all(
    parts.map((p) =>
      pool.render(ref, p.frame, call(either)).then(drawnBy, (err: unknown) => {
        cancel.abort();
        throw err;
      }),
    ),
  );
  const whole: RawImage = { data: new Uint8Array(pw * ph * 4), width: pw, height: ph, opaque: drawn.every((d) => d.opaque === true) };
  parts.forEach((p, i) => pasteRaw(whole, cropRaw(drawn[i], { left: p.cropLeft, top: p.cropTop, width: p.width, height: p.height }), p.left, p.top));
  // Parts run concurrently: report the slowest part's phases.
  const slowest = drawn.reduce((a, b) => (sum(b.timings) > sum(a.timings) ? b : a));
  return { raw: whole, timing: { ...timing(slowest.timings), parts: parts.length } };
}
