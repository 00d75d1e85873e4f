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
import cluster, { type Worker } from 'node:cluster';
import type { RateLimiterCompatibleAbstract, RateLimiterMemory, RateLimiterRes } from 'rate-limiter-flexible';

/** rate-limiter-flexible, loaded on first use: importing it costs a process 50-90 ms, and most never limit. */
export type Flexible = typeof import('rate-limiter-flexible');
let flexible: Promise<Flexible> | undefined;
export function loadFlexible(): Promise<Flexible> {
  return (flexible ??= import('rate-limiter-flexible'));
}

const CHANNEL = 'tsts-rate-limits';

/** A bucket as the worker names it to the primary once: its number on this worker's channel, key prefix, points, window. */
type Def = [bucket: number, prefix: string, points: number, duration: number];

/**
 * A turn's consumes: buckets first named in it, then pairs of (bucket number, client key), flat. The answer holds
 * three numbers per consume, flat: consumed (1), refused (0) or not counted (2: a bucket the primary does not
 * know), remaining points, ms before the window ends.
 */
interface Ask {
  channel: typeof CHANNEL;
  id: number;
  defs?: Def[];
  ops: (number | string)[];
}
interface Reply {
  channel: typeof CHANNEL;
  id: number;
  answers: number[];
}

let served = false;

export function serveClusterLimits(): void {
  if (served) return;
  served = true;
  /** Buckets by key prefix: every worker that names one spends from the same. */
  const buckets = new Map<string, RateLimiterMemory>();
  /** Each worker's numbering of them (a replacement worker numbers afresh). */
  const named = new Map<number, RateLimiterMemory[]>();
  cluster.on('exit', (worker) => named.delete(worker.id));
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
  const answer = (worker: Worker, msg: Ask) => {
    let mine = named.get(worker.id);
    if (!mine) named.set(worker.id, (mine = []));
    for (const [n, prefix, points, duration] of msg.defs ?? []) {
      let limiter = buckets.get(prefix);
      if (!limiter) {
        limiter = new rlf!.RateLimiterMemory({ keyPrefix: prefix, points, duration });
        buckets.set(prefix, limiter);
      }
      mine[n] = limiter;
    }
    const ops = msg.ops;
    const answers = new Array<number>((ops.length / 2) * 3);
    const pending: Promise<void>[] = [];
    for (let i = 0, j = 0; i < ops.length; i += 2, j += 3) {
      const at = j;
      const limiter = mine[ops[i] as number];
      // A bucket this worker never named (its naming message was lost): answered as not counted (2).
      if (!limiter) {
        answers[at] = 2;
        answers[at + 1] = answers[at + 2] = 0;
        continue;
      }
      pending.push(
        limiter.consume(ops[i + 1] as string).then(
          (r) => void ((answers[at] = 1), (answers[at + 1] = r.remainingPoints), (answers[at + 2] = r.msBeforeNext)),
          (r: RateLimiterRes) => void ((answers[at] = 0), (answers[at + 1] = r.remainingPoints), (answers[at + 2] = r.msBeforeNext)),
        ),
      );
    }
    void Promise.all(pending).then(() => {
      if (worker.isConnected()) worker.send({ channel: CHANNEL, id: msg.id, answers } satisfies Reply);
    });
  };
}

interface Waiting {
  resolve: (r: RateLimiterRes) => void;
  reject: (r: RateLimiterRes | Error) => void;
}

/** The worker's end of the channel: consumes queued during a turn of the event loop go to the primary as one message. */
class Channel {
  private ops: (number | string)[] = [];
  private defs: Def[] = [];
  private waiting: Waiting[] = [];
  private readonly numbers = new Map<string, number>();
  private readonly sent = new Map<number, { waiting: Waiting[]; timer: NodeJS.Timeout }>();
  private lastId = 0;
  private listening = false;

  constructor(
    private readonly timeoutMs: number,
    private readonly rlf: Flexible,
  ) {}

  consume(prefix: string, points: number, duration: number, key: string): Promise<RateLimiterRes> {
    if (!this.listening) {
      this.listening = true;
      process.on('message', (msg: Reply) => {
        if (msg?.channel === CHANNEL) this.answer(msg);
      });
    }
    let n = this.numbers.get(prefix);
    if (n === undefined) {
      n = this.numbers.size;
      this.numbers.set(prefix, n);
      this.defs.push([n, prefix, points, duration]);
    }
    return new Promise((resolve, reject) => {
      if (this.waiting.length === 0) setImmediate(() => this.flush());
      this.ops.push(n, key);
      this.waiting.push({ resolve, reject });
    });
  }

  private flush(): void {
    const { ops, defs, waiting } = this;
    this.ops = [];
    this.defs = [];
    this.waiting = [];
    const id = ++this.lastId;
    const timer = setTimeout(() => {
      this.sent.delete(id);
      const err = new Error(`the primary process did not count ${waiting.length} request(s) within ${this.timeoutMs} ms`);
      for (const w of waiting) w.reject(err);
    }, this.timeoutMs);
    this.sent.set(id, { waiting, timer });
    try {
      process.send!({ channel: CHANNEL, id, ops, ...(defs.length ? { defs } : {}) } satisfies Ask);
    } catch (err) {
      clearTimeout(timer);
      this.sent.delete(id);
      // The primary never learnt these numbers: name them again with the next message.
      for (const d of defs) this.numbers.delete(d[1]);
      for (const w of waiting) w.reject(err as Error);
    }
  }

  private answer(msg: Reply): void {
    const entry = this.sent.get(msg.id);
    if (!entry) return;
    this.sent.delete(msg.id);
    clearTimeout(entry.timer);
    const a = msg.answers;
    entry.waiting.forEach((w, i) => {
      if (a[i * 3] === 2) return w.reject(new Error('the primary process does not know this bucket'));
      const res = new this.rlf.RateLimiterRes(a[i * 3 + 1], a[i * 3 + 2]);
      if (a[i * 3] === 1) w.resolve(res);
      else w.reject(res);
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
      return channel!.consume(this.opts.keyPrefix, this.opts.points, this.opts.duration, String(key));
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
