// At most N upstream requests of one xyz source in flight per process, and at most M waiting for a slot: beyond
// that the request is refused at once (503 with Retry-After) rather than queued without end behind a slow upstream.
export class QueueFullError extends Error {
  constructor() {
    super('the upstream queue is full');
    this.name = 'QueueFullError';
  }
}

export class BoundedLimiter {
  private active = 0;
  private readonly waiting: (() => void)[] = [];

  constructor(
    private readonly max: number,
    private readonly maxQueue: number,
  ) {}

  /** Runs `work` once a slot is free; `signal` bounds the wait for the slot (the promise rejects with its reason). */
  async run<T>(work: () => Promise<T>, signal?: AbortSignal): Promise<T> {
    if (this.active < this.max) this.active++;
    else if (this.waiting.length >= this.maxQueue) throw new QueueFullError();
    else await this.turn(signal);
    try {
      return await work();
    } finally {
      // The slot passes straight to the next waiter, so a newcomer never jumps the queue.
      const next = this.waiting.shift();
      if (next) next();
      else this.active--;
    }
  }

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
