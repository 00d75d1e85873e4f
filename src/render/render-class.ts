// The queue class of a render that several requests share (shared-renders.ts). A render started in the background
// (an expired tile's re-render, eager mode's dirty queue, seeding) may be joined by a person waiting for one of its
// tiles: from then on the render is that person's, and waits in the interactive class, not behind the rest of the
// background work (renderd's rule: interactive renders are never delayed by re-renders).
import { PRIORITIES, type RenderPriority } from './priority-queue.js';

/** Lower is more urgent. */
const rank = (p: RenderPriority) => PRIORITIES.indexOf(p);

export class RenderClass {
  private readonly listeners = new Set<(to: RenderPriority) => void>();

  constructor(private current: RenderPriority) {}

  get priority(): RenderPriority {
    return this.current;
  }

  /** A request of class `p` joined: the render moves up to it when more urgent; never down. */
  raise(p: RenderPriority): void {
    if (rank(p) >= rank(this.current)) return;
    this.current = p;
    for (const fn of this.listeners) fn(p);
  }

  /** Hears each raise while the render waits (the pool moves its waiter); returns the way to stop hearing. */
  onRaise(fn: (to: RenderPriority) => void): () => void {
    this.listeners.add(fn);
    return () => this.listeners.delete(fn);
  }
}
