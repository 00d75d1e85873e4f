// At most N reads of one source in flight against its store (`[storage] max_concurrent_reads`): a burst of
// cold tiles queues here instead of opening hundreds of connections to the bucket. An xyz source bounds the queue
// too (`max_queue`): beyond it a request is refused at once rather than queued without end behind a slow upstream.

/** Thrown by `run` when the queue already holds `maxQueue` waiters. */
export class QueueFullError extends Error {
  constructor() {
    super('the queue is full');
    this.name = 'QueueFullError';
  }
}

export class Limiter {
  private active = 0;
  private readonly waiting: (() => void)[] = [];

  constructor(
    private readonly max: number,
    private readonly maxQueue = Number.POSITIVE_INFINITY,
  ) {}

  /**
   * Runs `work` once a slot is free. `signal` bounds the wait for the slot: when it aborts first, the caller
   * leaves the queue and the promise rejects with the signal's reason (the read timeout covers the queue too).
   */
  async run<T>(work: () => Promise<T>, signal?: AbortSignal): Promise<T> {
    if (this.active < this.max) this.active++;
    else if (this.waiting.length >= this.maxQueue) throw new QueueFullError();
    else await this.turn(signal);
    try {
      return await work();
    } finally {
      // The slot passes straight to the next waiter, so `active` never dips and lets a newcomer jump the queue.
      const next = this.waiting.shift();
      if (next) next();
      else this.active--;
    }
  }

  /** Resolves when a finishing run hands its slot over; rejects, out of the queue, when `signal` aborts first. */
  private turn(signal: AbortSignal | undefined): Promise<void> {
    return new Promise<void>((resolve, reject) => {
      if (signal?.aborted) return reject(signal.reason);
      const leave = () => {
        const at = this.waiting.indexOf(grant);
        if (at >= 0) this.waiting.splice(at, 1);
        reject(signal!.reason);
      };
      const grant = () => {
        signal?.removeEventListener('abort', leave);
        resolve();
      };
      this.waiting.push(grant);
      signal?.addEventListener('abort', leave, { once: true });
    });
  }

  get inFlight(): number {
    return this.active;
  }
}
