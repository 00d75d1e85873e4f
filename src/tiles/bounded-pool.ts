// A worker pool with its own bound on the work it holds. Piscina refuses work past its `maxQueue` with a plain
// Error whose only mark is its text ("Task queue is at limit", or "No task queue available and all Workers are
// busy" without a queue): it exports no class and sets no code (node_modules/piscina/dist/errors.js). Answering
// 503 from that would mean matching a library's wording, which a minor release may change, turning every full
// queue into a 500. So the bound is counted here, and a full pool throws PoolFullError, recognised by type; the
// pool underneath is given no bound of its own.

/** What this needs of a piscina pool (tests pass a stand-in). */
export interface TaskRunner<T, R> {
  run(task: T, options?: { transferList?: ArrayBuffer[] }): Promise<R>;
}

/** The pool holds as much work as it may: the caller answers 503 with Retry-After. */
export class PoolFullError extends Error {
  override name = 'PoolFullError';
}

export class BoundedPool<T = unknown, R = unknown> {
  /** Tasks handed to the pool and not yet settled: running or waiting for a thread. */
  private held = 0;

  /** `capacity`: tasks running at once (threads x tasks per thread) plus tasks that may wait. */
  constructor(
    private readonly pool: TaskRunner<T, R>,
    private readonly capacity: number,
    private readonly what: string,
  ) {}

  async run(task: T, options?: { transferList?: ArrayBuffer[] }): Promise<R> {
    if (this.held >= this.capacity) throw new PoolFullError(`the ${this.what} holds ${this.capacity} tasks, its most`);
    this.held++;
    try {
      return await this.pool.run(task, options);
    } finally {
      this.held--;
    }
  }
}
