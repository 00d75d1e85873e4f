// Rate limits (`[rate_limits]`, docs/rate-limits.md): every request spends one unit of a budget of its client's
// rate class, the cheap budget or the expensive one by its route (classify.ts); a request over budget is answered
// 429 here with `Retry-After` and the IETF RateLimit headers, and one within budget goes on carrying the headers.
// The client is the API key or token's principal (auth/principal.ts, set by the access gate that runs before
// this), else the client address (client.ts). Budgets are rate-limiter-flexible limiters (budget.ts): counted in
// Redis for the whole fleet when one is configured, with this machine's own count as the insurance limiter while
// Redis is down or slow (so an outage fails to local limits: neither open nor closed); counted for the machine by
// the cluster's primary when there are several worker processes (cluster.ts), else in this process.
//
// It sits at the node:http level, in front of the tile fast lane and Hono (src/server.ts), because the fast lane
// answers tiles without Hono and every answer must be counted; `rateLimits.listener` wraps the fast lane there and
// the access gate wraps it in turn, so the principal is known here. Without `[rate_limits]` (or with `enabled =
// false`) a request costs two property reads and gets no header (with telemetry's registry it is still counted
// in the usage metrics, usage.ts).
import cluster from 'node:cluster';
import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { RateLimiterAbstract, RateLimiterCompatibleAbstract, RateLimiterRes } from 'rate-limiter-flexible';
import { principalOf, type Principal } from '../auth/principal.js';
import { parseCidr, parseIp, type Cidr } from '../config/cidr.js';
import type { CacheConfig, RateBudgetConfig, RateLimitsConfig } from '../config/schema.js';
import type { Logger } from '../log.js';
import { problemBody } from '../problem.js';
import type { AppState } from '../state/app-state.js';
import { bucketShape, type BucketShape } from './budget.js';
import { requestBudget, type Kind } from './classify.js';
import { addressKey, clientAddress, isTrusted } from './client.js';
import { loadFlexible, machineBucket, machineChannel, type Flexible } from './cluster.js';
import { LimitsRedis, type LimitsRedisState } from './redis.js';
import { countUsage, keyNames, usageCounters, usageLabel } from './usage.js';

/** Answers are counted under keys starting with this (beside the shared cache's `tsts:v1:`). */
export const LIMIT_KEY_PREFIX = 'tsts:v1:rl:';

/** Counts through Redis that all take the whole timeout for this long: Redis is counted as down. */
const SLOW_FOR_MS = 1_000;

/** How long a worker waits for the primary's count before it lets the request through (logged). */
const CLUSTER_TIMEOUT_MS = 1_000;

/** Requests never counted: CORS preflights (answered by the CORS layer, and a 429 to one hides the real answer) and the probes of load balancers and orchestrators. */
const EXEMPT_PATHS = new Set(['/health', '/ready']);

type Limiter = RateLimiterAbstract | RateLimiterCompatibleAbstract;

interface Bucket {
  kind: Kind;
  shape: BucketShape;
  /** This machine's count (the cluster's primary, or this process). */
  local: Limiter;
  /** The fleet's count in Redis (with `local` as its insurance limiter), when a Redis is configured. */
  shared: Limiter | undefined;
  /** `RateLimit-Policy` value. */
  policy: string;
}

interface ClassBuckets {
  name: string;
  cheap: Bucket | undefined;
  expensive: Bucket | undefined;
}

interface Active {
  classes: Map<string, ClassBuckets>;
  defaultClass: ClassBuckets | undefined;
  anonymous: ClassBuckets | undefined;
  trusted: Cidr[];
}

/** The CORS headers of an answer to a request from `origin` (http/cors.ts's simpleCorsHeaders). */
export type CorsFor = (origin: string | undefined) => { headers: Readonly<Record<string, string>>; varyOrigin: boolean };

export class RateLimits {
  private active: Active | undefined;
  private log: Logger | undefined;
  private readonly redis = new LimitsRedis();
  /**
   * The limiters of the active configuration by key prefix. A reload hands on those of the budgets it keeps (their
   * counts with them) and drops the others: a removed or changed budget leaves nothing behind.
   */
  private locals = new Map<string, Limiter>();
  private shared = new Map<string, Limiter>();
  private sharedGeneration = -1;
  private failing = false;
  /** `redis_timeout_ms` of the active configuration. */
  private timeoutMs = 100;
  /** When counts through Redis began to take the whole timeout. */
  private slowSince: number | undefined;
  /** rate-limiter-flexible, loaded by the first configuration that enables limits. */
  private rlf: Flexible | undefined;

  /** Follows the configuration (start and every reload): budgets, classes, proxies and the Redis they are counted in. */
  async configure(limits: RateLimitsConfig | undefined, cache: CacheConfig, log: Logger): Promise<void> {
    this.log = log;
    if (!limits || !limits.enabled) {
      this.active = undefined;
      this.keep(new Map(), new Map());
      await this.redis.configure(undefined, 0, log);
      return;
    }
    this.rlf ??= await loadFlexible();
    this.timeoutMs = limits.redis_timeout_ms;
    const url = limits.shared ? (limits.redis ?? cache.shared) : undefined;
    await this.redis.configure(url, limits.redis_timeout_ms, log);
    if (this.redis.generation !== this.sharedGeneration) {
      this.shared.clear();
      this.sharedGeneration = this.redis.generation;
    }
    const locals = new Map<string, Limiter>();
    const shared = new Map<string, Limiter>();
    const classes = new Map<string, ClassBuckets>();
    for (const [name, c] of Object.entries(limits.classes)) {
      const bucket = (kind: Kind, budget: RateBudgetConfig | undefined) => budget && this.bucket(name, kind, budget, locals, shared);
      classes.set(name, { name, cheap: bucket('cheap', c.cheap), expensive: bucket('expensive', c.expensive) });
    }
    this.keep(locals, shared);
    this.active = {
      classes,
      defaultClass: limits.default_class === undefined ? undefined : classes.get(limits.default_class),
      anonymous: limits.anonymous_class === undefined ? undefined : classes.get(limits.anonymous_class),
      trusted: limits.trusted_proxies.map((s) => parseCidr(s)!),
    };
  }

  get enabled(): boolean {
    return this.active !== undefined;
  }

  /** For /ping and the tests: whether budgets are shared, and the state of the Redis they are shared through. */
  get redisState(): LimitsRedisState {
    return this.redis.state;
  }

  /**
   * The bucket of a budget, with the limiters of the same prefix in the configuration before (`this.locals`,
   * `this.shared`) or new ones, recorded in the new configuration's `locals` and `shared`.
   */
  private bucket(className: string, kind: Kind, budget: RateBudgetConfig, locals: Map<string, Limiter>, sharedLimiters: Map<string, Limiter>): Bucket {
    const rlf = this.rlf!;
    const shape = bucketShape(budget);
    // The shape is in the prefix: a reload that changes a budget starts new counts, one that keeps it keeps them.
    const keyPrefix = `${LIMIT_KEY_PREFIX}${className}:${kind}:${shape.points}:${shape.duration}`;
    let local = this.locals.get(keyPrefix);
    if (!local) {
      const opts = { keyPrefix, points: shape.points, duration: shape.duration };
      local = cluster.isWorker ? machineBucket(rlf, machineChannel(rlf, CLUSTER_TIMEOUT_MS), opts) : new rlf.RateLimiterMemory(opts);
    }
    locals.set(keyPrefix, local);
    let shared: Limiter | undefined;
    const client = this.redis.client;
    if (client) {
      shared = this.shared.get(keyPrefix);
      shared ??= new rlf.RateLimiterRedis({ storeClient: client, keyPrefix, points: shape.points, duration: shape.duration, insuranceLimiter: local, rejectIfRedisNotReady: true });
      sharedLimiters.set(keyPrefix, shared);
    }
    return { kind, shape, local, shared, policy: `"${kind}";q=${shape.points};w=${shape.duration}` };
  }

  /** The limiters of the configuration just read, and nothing else; in a worker, the primary forgets the rest too. */
  private keep(locals: Map<string, Limiter>, shared: Map<string, Limiter>): void {
    this.locals = locals;
    this.shared = shared;
    if (cluster.isWorker && this.rlf) machineChannel(this.rlf, CLUSTER_TIMEOUT_MS).follow({ prefixes: new Set(locals.keys()), timeoutMs: CLUSTER_TIMEOUT_MS });
  }

  /** The class whose budgets `principal` (or, without one, the client address) spends; undefined: not limited. */
  private classOf(a: Active, principal: Principal | undefined): ClassBuckets | undefined {
    if (!principal) return a.anonymous;
    if (principal.rateClass === undefined) return a.defaultClass;
    // A class the key names but the configuration does not have (a reload removed it): the default class.
    return a.classes.get(principal.rateClass) ?? a.defaultClass;
  }

  /**
   * Spends one unit of `req`'s budget. True (or a promise of true) when the request may go on, with the
   * RateLimit headers set on `res`; false once it has been answered 429 here. Runs after the access gate.
   */
  limitRequest(req: IncomingMessage, res: ServerResponse, state: AppState, corsFor: CorsFor): boolean | Promise<boolean> {
    const a = this.active;
    const counters = usageCounters();
    if (!a && !counters) return true;
    const method = req.method ?? 'GET';
    // CORS preflights are free; a plain OPTIONS (the methods of a resource) is a request like any other.
    if (method === 'OPTIONS' && req.headers['access-control-request-method'] !== undefined) return true;
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    const path = q < 0 ? url : url.slice(0, q);
    if (EXEMPT_PATHS.has(path)) return true;
    const kind = requestBudget(state, req);
    const principal = principalOf(req);
    const label = counters ? usageLabel(principal, keyNames(state)) : '';
    if (counters) countUsage(counters, label, kind, res);
    if (!a) return true;
    const cls = this.classOf(a, principal);
    const bucket = cls?.[kind];
    if (!bucket) return true;
    let who: string | undefined;
    if (principal) who = `${principal.via}:${principal.name}`;
    else {
      who = clientKey(a, req);
      // A socket closed before its request is read has no address: nothing to answer.
      if (who === undefined) return true;
    }
    // While Redis is down (or counted as down for being slow) the machine's own count answers at once.
    const viaRedis = bucket.shared !== undefined && this.redis.usable;
    const started = viaRedis ? performance.now() : 0;
    return (viaRedis ? bucket.shared! : bucket.local).consume(who).then(
      (r) => {
        if (viaRedis) this.timed(started);
        this.answered();
        res.setHeader('RateLimit-Policy', bucket.policy);
        res.setHeader('RateLimit', rateLimitValue(bucket.kind, r));
        return true;
      },
      (r: unknown) => {
        if (viaRedis) this.timed(started);
        if (r instanceof this.rlf!.RateLimiterRes) {
          this.answered();
          if (counters) counters.limited.inc({ key: label, budget: kind });
          tooMany(req, res, bucket, r, corsFor);
          return false;
        }
        // No count could be had (the primary did not answer in time): the request goes on, and this is said once.
        if (!this.failing) {
          this.failing = true;
          this.log?.warn({ err: r instanceof Error ? r.message : String(r) }, 'rate limits: a budget could not be counted; requests go on uncounted until counting works again');
        }
        return true;
      },
    );
  }

  private answered(): void {
    if (this.failing) {
      this.failing = false;
      this.log?.info('rate limits: budgets are counted again');
    }
  }

  /**
   * A count through Redis that took the whole timeout went to the insurance count. When such counts go on for a
   * second with no quick one between them, Redis is counted as down (a busy event loop can make one count late;
   * a paused or overloaded Redis makes them all late).
   */
  private timed(started: number): void {
    const now = performance.now();
    if (now - started < this.timeoutMs) {
      this.slowSince = undefined;
      return;
    }
    this.slowSince ??= now;
    if (now - this.slowSince >= SLOW_FOR_MS) {
      this.slowSince = undefined;
      this.redis.slow(this.timeoutMs);
    }
  }

  /** Wraps a node:http listener: every request spends its budget first. */
  listener(state: () => AppState, corsFor: CorsFor, next: RequestListener): RequestListener {
    return (req, res) => {
      const go = this.limitRequest(req, res, state(), corsFor);
      if (go === true) return next(req, res);
      if (go === false) return;
      go.then((ok) => {
        if (ok) next(req, res);
      }).catch((err: Error) => {
        // What would have been an uncaught exception of the listener is not left as an unhandled rejection.
        this.log?.error({ err }, 'request failed after its rate limit was counted');
        res.destroy(err);
      });
    };
  }

  async close(): Promise<void> {
    this.active = undefined;
    this.redis.disconnect();
  }
}

/**
 * The budget key of a request without credentials. A connection's peer does not change between its keep-alive
 * requests, so whether it is a trusted proxy, and the key of a peer that is not, is read once per connection
 * (and per configuration); only a trusted proxy's requests read X-Forwarded-For each time.
 */
const peers = new WeakMap<Socket, { active: Active; key: string | undefined; trusted: boolean }>();

function clientKey(a: Active, req: IncomingMessage): string | undefined {
  const socket = req.socket;
  let peer = peers.get(socket);
  if (!peer || peer.active !== a) {
    const ip = parseIp(socket.remoteAddress);
    peer = { active: a, key: ip && `ip:${addressKey(ip)}`, trusted: ip !== undefined && isTrusted(ip, a.trusted) };
    if (ip) peers.set(socket, peer);
  }
  if (!peer.trusted) return peer.key;
  const ip = clientAddress(socket.remoteAddress, req.headers['x-forwarded-for'], a.trusted);
  return ip && `ip:${addressKey(ip)}`;
}

/** `RateLimit: "cheap";r=42;t=1`: what is left of the budget and the seconds until the window ends. */
export function rateLimitValue(kind: Kind, r: RateLimiterRes): string {
  return `"${kind}";r=${Math.max(0, r.remainingPoints)};t=${Math.max(0, Math.ceil(r.msBeforeNext / 1000))}`;
}

/** Seconds a refused client should wait: the rest of its window, at least 1. */
export function retryAfterSeconds(r: RateLimiterRes): number {
  return Math.max(1, Math.ceil(r.msBeforeNext / 1000));
}

function tooMany(req: IncomingMessage, res: ServerResponse, bucket: Bucket, r: RateLimiterRes, corsFor: CorsFor): void {
  const retry = retryAfterSeconds(r);
  const body = JSON.stringify(
    problemBody(429, 'Too many requests', `the ${bucket.kind} budget of this client is spent (${bucket.shape.points} requests per ${bucket.shape.duration} s); retry in ${retry} s`),
  );
  const cors = corsFor(req.headers.origin);
  const headers: Record<string, string> = {
    ...cors.headers,
    'content-type': 'application/problem+json',
    'content-length': String(Buffer.byteLength(body)),
    'retry-after': String(retry),
    'ratelimit-policy': bucket.policy,
    ratelimit: rateLimitValue(bucket.kind, r),
  };
  if (cors.varyOrigin) headers.vary = 'Origin';
  if (res.headersSent || res.writableEnded) return;
  res.writeHead(429, headers);
  res.end(req.method === 'HEAD' ? undefined : body);
}

/** The process-wide rate limits (like `sharedCache`): configured from each state by the server. */
export const rateLimits = new RateLimits();

/** See RateLimits.limitRequest. */
export function limitRequest(req: IncomingMessage, res: ServerResponse, state: AppState, corsFor: CorsFor): boolean | Promise<boolean> {
  return rateLimits.limitRequest(req, res, state, corsFor);
}
