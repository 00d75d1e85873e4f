// Glyph ranges of font files, generated on demand: in a Piscina thread (a range of a Latin font takes tens of
// milliseconds of CPU, too long to hold the event loop), one range generated once however many requests ask
// for it at the same time, and kept in a byte-bounded LRU cache afterwards.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { LRUCache } from 'lru-cache';
import { Piscina } from 'piscina';
import { HttpProblem } from '../../problem.js';
import { BoundedPool, PoolFullError } from '../../tiles/bounded-pool.js';
import { runGlyphTask, type GlyphTask } from './glyph-task.js';
import type { FontFileRef } from './scan.js';

/** Generated ranges kept in memory (a Latin range is 30-60 KB; a CJK one up to about 200 KB). */
const CACHE_BYTES = 32 * 1024 * 1024;

const cache = new LRUCache<string, Uint8Array>({ maxSize: CACHE_BYTES, sizeCalculation: (b) => Math.max(1, b.byteLength) });
const inFlight = new Map<string, Promise<Uint8Array>>();
/** Distinct ranges waiting for the thread; past this, 503 (a client asking for every range of a CJK font at once). */
const MAX_QUEUE = 64;
let pool: BoundedPool<GlyphTask, Uint8Array> | undefined;
let noPool = false;

/** The built worker beside the bundle (dist/workers/glyphs.js); absent when running from the sources. */
function getPool(): BoundedPool<GlyphTask, Uint8Array> | undefined {
  if (pool || noPool) return pool;
  const file = fileURLToPath(new URL('./workers/glyphs.js', import.meta.url));
  if (!existsSync(file)) {
    noPool = true;
    return undefined;
  }
  // One thread, at a lower priority: glyphs are asked for once per range and then cached (here and by clients).
  const piscina = new Piscina<GlyphTask, Uint8Array>({ filename: file, minThreads: 0, maxThreads: 1, idleTimeout: 30_000, niceIncrement: 10 });
  pool = new BoundedPool(piscina, 1 + MAX_QUEUE, 'glyph pool');
  return pool;
}

/** The glyphs PBF of one range of a font file, served under `name`. */
export function fontFileGlyphs(ref: FontFileRef, name: string, start: number): Promise<Uint8Array> {
  const key = `${ref.file}\n${ref.postscriptName}\n${ref.version}\n${name}\n${start}`;
  const hit = cache.get(key);
  if (hit) return Promise.resolve(hit);
  let running = inFlight.get(key);
  if (!running) {
    const task: GlyphTask = { file: ref.file, postscriptName: ref.postscriptName, version: ref.version, name, start };
    const p = getPool();
    const generated = p
      ? p.run(task).then(
          (b) => new Uint8Array(b),
          (err: unknown) => {
            if (!(err instanceof PoolFullError)) throw err;
            throw new HttpProblem(503, 'Busy', 'too many glyph ranges are being generated; retry shortly', {}, { 'Retry-After': '1' });
          },
        )
      : Promise.resolve().then(() => runGlyphTask(task));
    running = generated.then(
      (bytes) => {
        cache.set(key, bytes);
        return bytes;
      },
    );
    const done = () => inFlight.delete(key);
    running.then(done, done);
    inFlight.set(key, running);
  }
  return running;
}
