// The render queue's classes, as renderd has them: a tile nobody has (someone waits for it) before a tile that
// expired (its old image is being answered meanwhile), and that before bulk work (seeding). Within a class clients
// take turns (fair-queue.ts). Background work (expired, bulk) never takes the last renderer: a person asking for a
// missing tile finds one free, or waits only for a render of its own class, never behind a re-render.
import { FairQueue } from './fair-queue.js';

export type RenderPriority = 'interactive' | 'expired' | 'bulk';

/** Highest first. */
export const PRIORITIES: readonly RenderPriority[] = ['interactive', 'expired', 'bulk'];

/**
 * Renderers background classes may hold at once out of `capacity`: all but one, so one stays for interactive
 * renders. A pool of one renderer lends it (else background work would never run); an interactive render then
 * waits for at most the one background frame being drawn. A pool nobody asks interactively (`tileserver-ts seed`'s
 * own) keeps none back: `reserve` false gives background work every renderer.
 */
export function backgroundShare(capacity: number, reserve = true): number {
  return reserve ? Math.max(1, capacity - 1) : capacity;
}

export class PriorityQueue<T> {
  /** `reserveInteractive` false: background work may hold every renderer (a pool that serves no one interactively). */
  constructor(private readonly reserveInteractive = true) {}

  private readonly classes = new Map<RenderPriority, FairQueue<T>>(PRIORITIES.map((p) => [p, new FairQueue<T>()]));

  get size(): number {
    let n = 0;
    for (const q of this.classes.values()) n += q.size;
    return n;
  }

  /** Waiting items of one class. */
  sizeOf(priority: RenderPriority): number {
    return this.classes.get(priority)!.size;
  }

  /** Whether a new item of `priority` may start now with `running` of `capacity` renderers busy: nothing it must yield to waits, and its class has room. */
  mayStart(priority: RenderPriority, running: number, capacity: number): boolean {
    if (running >= (priority === 'interactive' ? capacity : backgroundShare(capacity, this.reserveInteractive))) return false;
    for (const p of PRIORITIES) {
      if (this.classes.get(p)!.size) return false;
      if (p === priority) return true;
    }
    return true;
  }

  push(priority: RenderPriority, client: string, item: T): void {
    this.classes.get(priority)!.push(client, item);
  }

  /** The next item that may start with `running` of `capacity` renderers busy, highest class first; undefined: none may. */
  shift(running: number, capacity: number): T | undefined {
    if (running >= capacity) return undefined;
    const interactive = this.classes.get('interactive')!;
    if (interactive.size) return interactive.shift();
    if (running >= backgroundShare(capacity, this.reserveInteractive)) return undefined;
    return this.classes.get('expired')!.shift() ?? this.classes.get('bulk')!.shift();
  }

  remove(priority: RenderPriority, client: string, item: T): boolean {
    return this.classes.get(priority)!.remove(client, item);
  }

  items(): T[] {
    return [...this.classes.values()].flatMap((q) => q.items());
  }
}
