// Budgets per machine, not per process: with several worker processes and no Redis (or Redis down) the primary
// holds every bucket, as rate-limiter-flexible RateLimiterMemory limiters, and the workers consume from it over the
// cluster's IPC channel. rate-limiter-flexible's own RateLimiterCluster does exactly this with one IPC round trip
// per request; measured on the hot cached tile (bench/auth.bench.ts, 2 workers) that added about 50 us of CPU to a
// request of 86 us. Here a worker sends the consumes of one turn of its event loop as one message, and the primary
// answers them in one: under load a turn holds many requests, so the IPC cost is shared between them. The
// answers are the same as RateLimiterCluster's (the primary runs the same RateLimiterMemory); only the messages
// are batched.
//
// The primary must listen before any worker sends its first message, so `serveClusterLimits` is called before the
// first fork, whether or not rate limits are configured (a reload may turn them on); it costs one listener on
// cluster messages. A worker whose message the primary does not answer within `timeoutMs` gets an Error (not a
// RateLimiterRes) for each consume of it, and the limiter lets those requests through (limits.ts).
import cluster from 'node:cluster';
import type { RateLimiterCompatibleAbstract, RateLimiterMemory, RateLimiterRes } from 'rate-limiter-flexible';

/** rate-limiter-flexible, loaded on first use: importing it costs a process 50-90 ms, and most never limit. */
export type Flexible = typeof import('rate-limiter-flexible');
let flexible: Promise<Flexible> | undefined;
export function loadFlexible(): Promise<Flexible> {
  return (flexible ??= import('rate-limiter-flexible'));
}

const CHANNEL = 'tsts-rate-limits';

/** One consume: key prefix (the bucket), points and window of the bucket, and the client's key. */
type Op = [prefix: string, points: number, duration: number, key: string];
/** Its answer: consumed (1) or refused (0), remaining points, ms before the window ends, points consumed. */
type Answer = [ok: 0 | 1, remaining: number, msBeforeNext: number, consumed: number];

interface Ask {
  channel: typeof CHANNEL;
  id: number;
  ops: Op[];
}
interface Reply {
  channel: typeof CHANNEL;
  id: number;
  answers: Answer[];
}

let served = false;

export function serveClusterLimits(): void {
  if (served) return;
  served = true;
  const buckets = new Map<string, RateLimiterMemory>();
  let rlf: Flexible | undefined;
  cluster.on('message', (worker, msg: Ask) => {
    if (msg?.channel !== CHANNEL) return;
    // The first message waits for the library; messages keep their order (each waits for the same promise).
    if (!rlf) {
      void loadFlexible().then((loaded) => {
        rlf = loaded;
        answer(worker, msg);
      });
      return;
    }
    answer(worker, msg);
  });
  const answer = (worker: import('node:cluster').Worker, msg: Ask) => {
    const answers = msg.ops.map(([prefix, points, duration, key]) => {
      let limiter = buckets.get(prefix);
      if (!limiter) {
        limiter = new rlf!.RateLimiterMemory({ keyPrefix: prefix, points, duration });
        buckets.set(prefix, limiter);
      }
      return limiter.consume(key).then(
        (r): Answer => [1, r.remainingPoints, r.msBeforeNext, r.consumedPoints],
        (r: RateLimiterRes): Answer => [0, r.remainingPoints, r.msBeforeNext, r.consumedPoints],
      );
    });
    void Promise.all(answers).then((a) => {
      if (worker.isConnected()) worker.send({ channel: CHANNEL, id: msg.id, answers: a } satisfies Reply);
    });
  };
}

interface Waiting {
  resolve: (r: RateLimiterRes) => void;
  reject: (r: RateLimiterRes | Error) => void;
}

/** The worker's end of the channel: consumes queued during a turn of the event loop go to the primary as one message. */
class Channel {
  private queue: Op[] = [];
  private waiting: Waiting[] = [];
  private readonly sent = new Map<number, { waiting: Waiting[]; timer: NodeJS.Timeout }>();
  private lastId = 0;
  private listening = false;

  constructor(
    private readonly timeoutMs: number,
    private readonly rlf: Flexible,
  ) {}

  consume(op: Op): Promise<RateLimiterRes> {
    if (!this.listening) {
      this.listening = true;
      process.on('message', (msg: Reply) => {
        if (msg?.channel === CHANNEL) this.answer(msg);
      });
    }
    return new Promise((resolve, reject) => {
      if (this.queue.length === 0) setImmediate(() => this.flush());
      this.queue.push(op);
      this.waiting.push({ resolve, reject });
    });
  }

  private flush(): void {
    const ops = this.queue;
    const waiting = this.waiting;
    this.queue = [];
    this.waiting = [];
    const id = ++this.lastId;
    const timer = setTimeout(() => {
      this.sent.delete(id);
      const err = new Error(`the primary process did not count ${ops.length} request(s) within ${this.timeoutMs} ms`);
      for (const w of waiting) w.reject(err);
    }, this.timeoutMs);
    this.sent.set(id, { waiting, timer });
    try {
      process.send!({ channel: CHANNEL, id, ops } satisfies Ask);
    } catch (err) {
      clearTimeout(timer);
      this.sent.delete(id);
      for (const w of waiting) w.reject(err as Error);
    }
  }

  private answer(msg: Reply): void {
    const entry = this.sent.get(msg.id);
    if (!entry) return;
    this.sent.delete(msg.id);
    clearTimeout(entry.timer);
    msg.answers.forEach(([ok, remaining, ms, consumed], i) => {
      const res = new this.rlf.RateLimiterRes(remaining, ms, consumed);
      if (ok) entry.waiting[i].resolve(res);
      else entry.waiting[i].reject(res);
    });
  }
}

let channel: Channel | undefined;

export interface MachineBucketOptions {
  keyPrefix: string;
  points: number;
  duration: number;
  timeoutMs: number;
}

let machineBucketClass: (new (opts: MachineBucketOptions) => RateLimiterCompatibleAbstract) | undefined;

/**
 * A bucket held by the primary, usable wherever a rate-limiter-flexible limiter is (as RateLimiterRedis's
 * insurance limiter too). Only `consume` is offered: the limits use nothing else. For cluster workers only.
 */
export function machineBucket(rlf: Flexible, opts: MachineBucketOptions): RateLimiterCompatibleAbstract {
  if (!cluster.isWorker) throw new Error('a machine bucket is for cluster workers');
  channel ??= new Channel(opts.timeoutMs, rlf);
  machineBucketClass ??= defineMachineBucket(rlf);
  return new machineBucketClass(opts);
}

function defineMachineBucket(rlf: Flexible): new (opts: MachineBucketOptions) => RateLimiterCompatibleAbstract {
  const unsupported = () => Promise.reject(new Error('a machine bucket offers consume only'));
  class MachineBucket extends rlf.RateLimiterCompatibleAbstract {
    constructor(readonly opts: MachineBucketOptions) {
      super();
    }
    override consume(key: string | number): Promise<RateLimiterRes> {
      return channel!.consume([this.opts.keyPrefix, this.opts.points, this.opts.duration, String(key)]);
    }
    override penalty = unsupported;
    override reward = unsupported;
    override get = unsupported;
    override set = unsupported;
    override block = unsupported;
    override delete = unsupported;
  }
  // The compatible base class has getters that throw until overridden; its types declare them as properties, so
  // the accessors are defined here rather than in the class body.
  Object.defineProperties(MachineBucket.prototype, {
    keyPrefix: {
      get(this: MachineBucket) {
        return this.opts.keyPrefix;
      },
    },
    blockDuration: { get: () => 0, set: () => {} },
    execEvenly: { get: () => false, set: () => {} },
  });
  return MachineBucket;
}
