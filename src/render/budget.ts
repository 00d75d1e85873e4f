// The time budget of one render (render.timeout_ms) as the render service sees it: it starts when the render's
// first frame begins on a renderer (after any browser start, page replacement or style load, as the render
// thread's own limit per frame does) and covers everything after: other parts, joining, overlays, encoding.
// The thread's limit bounds a frame; this one bounds the answer.
import { RenderError } from './renderer.js';

export class Budget {
  private deadline: number | undefined;
  private timer: NodeJS.Timeout | undefined;
  private fail: ((err: RenderError) => void) | undefined;
  private readonly expired: Promise<never>;
  private done = false;

  constructor(
    private readonly ms: number,
    private readonly onExpire: () => void,
  ) {
    this.expired = new Promise<never>((_, reject) => (this.fail = reject));
    // Nothing may race it (a render that failed in the queue): an expiry then goes unheard, harmlessly.
    this.expired.catch(() => {});
  }

  /** Starts the clock (the first call only). */
  start(): void {
    if (this.deadline !== undefined || this.done) return;
    this.deadline = Date.now() + this.ms;
    this.schedule();
  }

  /** `p`, or a timeout error when the budget runs out first. */
  race<T>(p: Promise<T>): Promise<T> {
    return Promise.race([p, this.expired]);
  }

  clear(): void {
    this.done = true;
    clearTimeout(this.timer);
  }

  private schedule(): void {
    clearTimeout(this.timer);
    this.timer = setTimeout(
      () => {
        this.done = true;
        this.onExpire();
        this.fail?.(new RenderError('timeout', `the render did not finish within ${this.ms} ms (render.timeout_ms)`));
      },
      Math.max(0, this.deadline! - Date.now()),
    );
  }
}
