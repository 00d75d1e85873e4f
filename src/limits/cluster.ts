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
// cluster messages. A worker whose message the primary does not answer within the channel's timeout gets an Error
// (not a RateLimiterRes) for each consume of it, and the limiter lets those requests through (limits.ts).
//
// Both ends hold what the current configuration says. The worker's end is told, on every configuration
// (`follow`), which buckets it has and how long to wait: it forgets the numbers of the buckets a reload dropped
// and says so with its next message. The primary holds a bucket while some worker names it (a worker that has not
// reloaded yet still spends from it) and drops it when the last one forgets it or exits, so a budget a reload
// removed or changed leaves no counts behind, and one that comes back later starts afresh.
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
 * A turn's consumes: buckets first named in it, then pairs of (bucket number, client key), flat, then the numbers
 * of buckets this worker no longer has (a reload dropped them). The answer holds three numbers per consume,
 * flat: consumed (1), refused (0) or not counted (2: a bucket the primary does not know), remaining points, ms
 * before the window ends.
 */
export interface Ask {
  channel: typeof CHANNEL;
  id: number;
  defs?: Def[];
  ops: (number | string)[];
  forget?: number[];
}
export interface Reply {
  channel: typeof CHANNEL;
  id: number;
  answers: number[];
}

/** One bucket of the primary, and how many (worker, number) names it has. */
interface Held {
  prefix: string;
  limiter: RateLimiterMemory;
  names: number;
}

/** The primary's end: the machine's buckets, by key prefix, each kept while a worker names it. */
export class MachineBuckets {
  private readonly byPrefix = new Map<string, Held>();
  /** Each worker's numbering of them (a replacement worker numbers afresh). */
  private readonly named = new Map<number, Map<number, Held>>();

  constructor(private readonly rlf: Flexible) {}

  /** The key prefixes held now (what the workers' current configurations name). */
  get prefixes(): string[] {
    return [...this.byPrefix.keys()];
  }

  /** Counts `msg`'s consumes; names and forgets its buckets. */
  answer(workerId: number, msg: Ask): Promise<Reply> {
    let mine = this.named.get(workerId);
    if (!mine) this.named.set(workerId, (mine = new Map()));
    for (const [n, prefix, points, duration] of msg.defs ?? []) {
      let held = this.byPrefix.get(prefix);
      if (!held) {
        held = { prefix, limiter: new this.rlf.RateLimiterMemory({ keyPrefix: prefix, points, duration }), names: 0 };
        this.byPrefix.set(prefix, held);
      }
      held.names++;
      mine.set(n, held);
    }
    const ops = msg.ops;
    const answers = new Array<number>((ops.length / 2) * 3);
    const pending: Promise<void>[] = [];
    for (let i = 0, j = 0; i < ops.length; i += 2, j += 3) {
      const at = j;
      const held = mine.get(ops[i] as number);
      // A bucket this worker never named (its naming message was lost): answered as not counted (2).
      if (!held) {
        answers[at] = 2;
        answers[at + 1] = answers[at + 2] = 0;
        continue;
      }
      pending.push(
        held.limiter.consume(ops[i + 1] as string).then(
          (r) => void ((answers[at] = 1), (answers[at + 1] = r.remainingPoints), (answers[at + 2] = r.msBeforeNext)),
          (r: RateLimiterRes) => void ((answers[at] = 0), (answers[at + 1] = r.remainingPoints), (answers[at + 2] = r.msBeforeNext)),
        ),
      );
    }
    // After the consumes: a message may name a bucket, spend from it and forget it (a reload in the same turn).
    for (const n of msg.forget ?? []) {
      const held = mine.get(n);
      if (held) this.unname(mine, n, held);
    }
    return Promise.all(pending).then(() => ({ channel: CHANNEL, id: msg.id, answers }));
  }

  /** A worker exited: its names go, and the buckets only it named with them. */
  workerGone(workerId: number): void {
    const mine = this.named.get(workerId);
    if (!mine) return;
    for (const [n, held] of mine) this.unname(mine, n, held);
    this.named.delete(workerId);
  }

  private unname(mine: Map<number, Held>, n: number, held: Held): void {
    mine.delete(n);
    if (--held.names === 0 && this.byPrefix.get(held.prefix) === held) this.byPrefix.delete(held.prefix);
  }
}

let served = false;

export function serveClusterLimits(): void {
  if (served) return;
  served = true;
  let buckets: MachineBuckets | undefined;
  cluster.on('exit', (worker) => buckets?.workerGone(worker.id));
  cluster.on('message', (worker, msg: Ask) => {
    if (msg?.channel !== CHANNEL) return;
    // The first message waits for the library; messages keep their order (each waits for the same promise).
    if (!buckets) {
      void loadFlexible().then((rlf) => {
        buckets ??= new MachineBuckets(rlf);
        answer(buckets, worker, msg);
      });
      return;
    }
    answer(buckets, worker, msg);
  });
  const answer = (b: MachineBuckets, worker: Worker, msg: Ask) =>
    void b.answer(worker.id, msg).then((reply) => {
      // A message that only forgets buckets waits for no answer.
      if (msg.ops.length > 0 && worker.isConnected()) worker.send(reply);
    });
}

/** How a worker's channel reaches the primary: the cluster's IPC channel, or (in a test) the primary's end in-process. */
export interface PrimaryLink {
  send(msg: Ask): void;
  listen(onReply: (msg: Reply) => void): void;
}

const processLink: PrimaryLink = {
  send: (msg) => void process.send!(msg),
  listen: (onReply) =>
    void process.on('message', (msg: Reply) => {
      if (msg?.channel === CHANNEL) onReply(msg);
    }),
};

interface Waiting {
  resolve: (r: RateLimiterRes) => void;
  reject: (r: RateLimiterRes | Error) => void;
}

/** What a worker's configuration says of its machine buckets (RateLimits.configure, on start and every reload). */
export interface ChannelSettings {
  /** The key prefixes of the machine buckets the configuration has: the others are forgotten. */
  prefixes: ReadonlySet<string>;
  /** How long to wait for the primary's answer before the requests go on uncounted. */
  timeoutMs: number;
}

/** The worker's end of the channel: consumes queued during a turn of the event loop go to the primary as one message. */
export class MachineChannel {
  private ops: (number | string)[] = [];
  private defs: Def[] = [];
  private forgets: number[] = [];
  private waiting: Waiting[] = [];
  private readonly numbers = new Map<string, number>();
  /** Numbers are never reused: a forgotten number reaching the primary late cannot name another bucket. */
  private nextNumber = 0;
  private readonly sent = new Map<number, { waiting: Waiting[]; timer: NodeJS.Timeout }>();
  private lastId = 0;
  private listening = false;
  private flushing = false;

  constructor(
    private readonly rlf: Flexible,
    private timeoutMs: number,
    private readonly link: PrimaryLink = processLink,
  ) {}

  /** Takes the current configuration's buckets and timeout; the primary learns of dropped buckets at once. */
  follow(settings: ChannelSettings): void {
    this.timeoutMs = settings.timeoutMs;
    for (const [prefix, n] of this.numbers) {
      if (settings.prefixes.has(prefix)) continue;
      this.numbers.delete(prefix);
      this.forgets.push(n);
    }
    if (this.forgets.length) this.schedule();
  }

  consume(prefix: string, points: number, duration: number, key: string): Promise<RateLimiterRes> {
    if (!this.listening) {
      this.listening = true;
      this.link.listen((msg) => this.answer(msg));
    }
    let n = this.numbers.get(prefix);
    if (n === undefined) {
      n = this.nextNumber++;
      this.numbers.set(prefix, n);
      this.defs.push([n, prefix, points, duration]);
    }
    return new Promise((resolve, reject) => {
      this.schedule();
      this.ops.push(n, key);
      this.waiting.push({ resolve, reject });
    });
  }

  private schedule(): void {
    if (this.flushing) return;
    this.flushing = true;
    setImmediate(() => {
      this.flushing = false;
      this.flush();
    });
  }

  private flush(): void {
    const { ops, defs, forgets, waiting } = this;
    this.ops = [];
    this.defs = [];
    this.forgets = [];
    this.waiting = [];
    const id = ++this.lastId;
    const timeoutMs = this.timeoutMs;
    // A message that only forgets waits for no answer.
    const timer =
      waiting.length > 0
        ? setTimeout(() => {
            this.sent.delete(id);
            const err = new Error(`the primary process did not count ${waiting.length} request(s) within ${timeoutMs} ms`);
            for (const w of waiting) w.reject(err);
          }, timeoutMs)
        : undefined;
    if (timer) this.sent.set(id, { waiting, timer });
    try {
      this.link.send({ channel: CHANNEL, id, ops, ...(defs.length ? { defs } : {}), ...(forgets.length ? { forget: forgets } : {}) } satisfies Ask);
    } catch (err) {
      clearTimeout(timer);
      this.sent.delete(id);
      // The primary never learnt these numbers: name them again with the next message; forget them with it too.
      for (const d of defs) if (this.numbers.get(d[1]) === d[0]) this.numbers.delete(d[1]);
      this.forgets.push(...forgets);
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

let channel: MachineChannel | undefined;

/** This worker's channel to the primary (one per process: it owns the listener on the IPC channel). */
export function machineChannel(rlf: Flexible, timeoutMs: number): MachineChannel {
  if (!cluster.isWorker) throw new Error('the machine channel is for cluster workers');
  return (channel ??= new MachineChannel(rlf, timeoutMs));
}

export interface MachineBucketOptions {
  keyPrefix: string;
  points: number;
  duration: number;
}

let machineBucketClass: (new (channel: MachineChannel, opts: MachineBucketOptions) => RateLimiterCompatibleAbstract) | undefined;

/**
 * A bucket held by the primary, usable wherever a rate-limiter-flexible limiter is (as RateLimiterRedis's
 * insurance limiter too), counted through `channel`. Only `consume` is offered: the limits use nothing else.
 */
export function machineBucket(rlf: Flexible, channel: MachineChannel, opts: MachineBucketOptions): RateLimiterCompatibleAbstract {
  machineBucketClass ??= defineMachineBucket(rlf);
  return new machineBucketClass(channel, opts);
}

function defineMachineBucket(rlf: Flexible): new (channel: MachineChannel, opts: MachineBucketOptions) => RateLimiterCompatibleAbstract {
  const unsupported = () => Promise.reject(new Error('a machine bucket offers consume only'));
  class MachineBucket extends rlf.RateLimiterCompatibleAbstract {
    constructor(
      private readonly channel: MachineChannel,
      readonly opts: MachineBucketOptions,
    ) {
      super();
    }
    override consume(key: string | number): Promise<RateLimiterRes> {
      return this.channel.consume(this.opts.keyPrefix, this.opts.points, this.opts.duration, String(key));
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
