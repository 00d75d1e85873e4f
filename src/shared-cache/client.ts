// The fleet's shared cache: one Redis connection per process (ioredis), used for rendered images and transcoded
// tiles after the local caches and before the work itself (docs/deployment.md). Every command is bounded by
// `[cache] shared_timeout_ms` and never throws to its caller: with Redis down or slow a machine serves alone,
// logs once when the outage starts and once when it ends, and ioredis reconnects by itself.
import { EventEmitter } from 'node:events';
import { hostname } from 'node:os';
import { randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';
import type { CacheConfig } from '../config/schema.js';
import type { Logger } from '../log.js';

/** What the shared cache holds: rendered tiles, static images and social cards, transcoded vector tiles. */
export type SharedKind = 'tile' | 'image' | 'transcoded' | 'terrain';

export type SharedState = 'off' | 'connecting' | 'connected' | 'down';

interface Events {
  hit: [SharedKind];
  miss: [SharedKind];
  /** A command failed or timed out (named get, set, lock or unlock). Not `error`: an EventEmitter throws those. */
  failure: [string];
}

/** Counts for the metrics (telemetry/recorder.ts subscribes). */
export const sharedCacheMetrics = new EventEmitter<Events>();

/** All keys live under one prefix, so an operator can find (or drop) them with `SCAN MATCH tsts:*`. */
export const KEY_PREFIX = 'tsts:v1:';
export const LOCK_PREFIX = 'tsts:v1:lock:';

/** A render lock lasts this long unless its holder renews it: a machine that died holds nothing for long. */
const LOCK_MS = 5_000;
/** The holder renews its lock this often while it renders. */
const RENEW_MS = 1_500;

/** Deletes (or renews) a lock only while it still holds this caller's token. */
const RELEASE_SCRIPT = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('del', KEYS[1]) else return 0 end";
const RENEW_SCRIPT = "if redis.call('get', KEYS[1]) == ARGV[1] then return redis.call('pexpire', KEYS[1], ARGV[2]) else return 0 end";

/** An entry of the shared cache: its bytes and when the machine that stored it began making them (ms). */
export interface SharedEntry {
  body: Buffer;
  madeAt: number;
}

/**
 * `hit`: a fresh entry. `render`: the go-ahead (and the lock) to render here; `stale` is the expired entry found,
 * which the caller may answer with meanwhile. `stale`: only an expired entry, and another machine is drawing it
 * again (its lock is held): answer with the old bytes, do not wait.
 */
export type Claim = ({ kind: 'hit' } & SharedEntry) | { kind: 'render'; release: () => Promise<void>; stale?: SharedEntry } | ({ kind: 'stale' } & SharedEntry);

/**
 * Stored values start with this mark and the time their bytes were made (a double, 8 bytes): an expiry compares
 * it with its own time (src/expire/). A value without the mark (written before entries carried it) counts as made
 * at time 0, older than every expiry.
 */
const STAMP = Buffer.from('tsTS');
const STAMPED = STAMP.length + 8;

function stamped(body: Uint8Array, madeAt: number): Buffer {
  const out = Buffer.allocUnsafe(STAMPED + body.byteLength);
  STAMP.copy(out, 0);
  out.writeDoubleBE(madeAt, STAMP.length);
  out.set(body, STAMPED);
  return out;
}

function unstamped(value: Buffer): SharedEntry {
  if (value.length >= STAMPED && value.subarray(0, STAMP.length).equals(STAMP)) return { body: value.subarray(STAMPED), madeAt: value.readDoubleBE(STAMP.length) };
  return { body: value, madeAt: 0 };
}

const noRelease = async () => {};

/** A command that failed or timed out (counted, logged with the outage). */
const FAILED = Symbol('failed');

export class SharedCache {
  private redis: Redis | undefined;
  private settingsKey: string | undefined;
  private ttlSeconds = 86_400;
  private log: Logger | undefined;
  private status: SharedState = 'off';
  private downSince: Date | undefined;
  /** This process's lock tokens start with it: a lock it holds itself is joined in-process, not waited for. */
  readonly instance = `${hostname()}:${process.pid}:${randomBytes(4).toString('hex')}`;
  private nonce = 0;
  /** Writes under way: close() lets them end (a seed's last tiles would be lost otherwise). */
  private readonly writes = new Set<Promise<void>>();
  readonly counts = { hits: 0, misses: 0, errors: 0 };

  /** Follows the configuration: connects, keeps, reconnects to another URL or timeout, or disconnects. */
  configure(cfg: CacheConfig, log: Logger): void {
    this.log = log;
    this.ttlSeconds = cfg.shared_ttl_seconds;
    const key = cfg.shared === undefined ? undefined : JSON.stringify([cfg.shared, cfg.shared_timeout_ms]);
    if (key === this.settingsKey) return;
    this.settingsKey = key;
    this.disconnect();
    if (cfg.shared === undefined) return;
    this.status = 'connecting';
    void this.connect(cfg.shared, cfg.shared_timeout_ms, key);
  }

  /**
   * Loads ioredis and connects. Loaded on first use: importing it costs every process about 45 ms of start-up,
   * and most servers never set `[cache] shared`. Until it has loaded, lookups skip the shared cache.
   */
  private async connect(url: string, timeoutMs: number, key: string | undefined): Promise<void> {
    const { Redis } = await import('ioredis');
    // Reconfigured (or closed) while ioredis was loading: that configuration is not wanted any more.
    if (key !== this.settingsKey) return;
    const redis = new Redis(url, {
      commandTimeout: timeoutMs,
      connectTimeout: Math.max(1_000, timeoutMs * 10),
      // Without a connection a command fails at once instead of waiting in a queue: the machine renders alone.
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      // Reconnects for ever, backing off to one try every two seconds.
      retryStrategy: (times) => Math.min(100 * times, 2_000),
      lazyConnect: false,
    });
    redis.on('ready', () => this.up());
    redis.on('error', (err: Error) => this.down(err.message));
    redis.on('close', () => this.down('connection closed'));
    this.redis = redis;
  }

  private up(): void {
    if (this.status === 'down') this.log?.info({ down_since: this.downSince?.toISOString() }, 'shared cache is reachable again; sharing resumes');
    else if (this.status === 'connecting') this.log?.info('shared cache connected');
    this.status = 'connected';
    this.downSince = undefined;
  }

  private down(reason: string): void {
    if (this.status === 'off' || this.status === 'down') return;
    this.status = 'down';
    this.downSince = new Date();
    this.log?.warn({ reason }, 'shared cache unreachable; this machine renders on its own until it is back');
  }

  private disconnect(): void {
    const r = this.redis;
    this.redis = undefined;
    this.status = 'off';
    this.downSince = undefined;
    if (r) {
      r.removeAllListeners();
      // Errors of a connection being dropped are nobody's concern any more.
      r.on('error', () => {});
      r.disconnect();
    }
  }

  /** Lets the writes under way end (each is bounded by the timeout), then disconnects. */
  async close(): Promise<void> {
    this.settingsKey = undefined;
    await Promise.all(this.writes.values());
    this.disconnect();
  }

  get enabled(): boolean {
    return this.redis !== undefined;
  }

  /** For /ping: whether the cache is configured and reachable, and since when it is not. */
  get state(): { state: SharedState; down_since: string | null } {
    return { state: this.status, down_since: this.downSince?.toISOString() ?? null };
  }

  /** Runs one command; a failure is counted and ends as undefined (a slow Redis counts as down until it answers). */
  private async run<T>(op: string, command: (r: Redis) => Promise<T>): Promise<T | typeof FAILED> {
    const r = this.redis;
    if (!r) return FAILED;
    try {
      const out = await command(r);
      if (this.status === 'down' && r.status === 'ready') this.up();
      return out;
    } catch (err) {
      this.counts.errors++;
      sharedCacheMetrics.emit('failure', op);
      if (r.status === 'ready') this.down((err as Error).message);
      return FAILED;
    }
  }

  /** The entry under `key`, or undefined (absent, or Redis did not answer in time). Counts a hit or a miss. */
  async get(kind: SharedKind, key: string): Promise<SharedEntry | undefined> {
    const got = await this.run('get', (r) => r.getBuffer(KEY_PREFIX + key));
    if (got === FAILED) return undefined;
    this.count(kind, got !== null);
    return got ? unstamped(got) : undefined;
  }

  /**
   * Stores an entry for `[cache] shared_ttl_seconds`, in the background: an answer never waits for Redis to take
   * it (a stopped Redis would cost every render a second `shared_timeout_ms`). Each write is bounded by that
   * timeout all the same (ioredis's `commandTimeout`), and a failed one is counted as a `set` error.
   */
  put(key: string, body: Uint8Array, madeAt: number = Date.now()): void {
    if (!this.redis) return;
    const value = stamped(body, madeAt);
    const write: Promise<void> = this.run('set', (r) => r.set(KEY_PREFIX + key, value, 'EX', this.ttlSeconds)).then(() => void this.writes.delete(write));
    this.writes.add(write);
  }

  private count(kind: SharedKind, hit: boolean): void {
    if (hit) this.counts.hits++;
    else this.counts.misses++;
    sharedCacheMetrics.emit(hit ? 'hit' : 'miss', kind);
  }

  /**
   * Before rendering `key`: its entry when another machine has it (or finishes it within `waitMs`), else the
   * go-ahead to render it here. The first asker takes a short lock (SET NX PX with a token) that it renews while
   * it renders; the others poll the entry with back-off until it appears, or the lock is gone (its holder failed
   * or died: the next asker takes it), or `waitMs` passes. A lock this process holds is not waited for: its own
   * requests join the render in progress. Redis failing at any step means rendering here. A waiter whose
   * request has gone (`signal`) stops polling; the render it is then sent to is dropped at once.
   * An entry made at or before `staleUpTo` (ms: the last expiry touching it, src/expire/) counts as absent for
   * the lock, so an expiry is drawn again once for the fleet; while another machine holds the lock, its old bytes
   * are the answer (`stale`) instead of a wait.
   */
  async claim(kind: SharedKind, key: string, waitMs: number, signal?: AbortSignal, staleUpTo = 0): Promise<Claim> {
    if (!this.redis) return { kind: 'render', release: noRelease };
    const deadline = Date.now() + waitMs;
    const lockKey = LOCK_PREFIX + key;
    const fresh = (e: SharedEntry) => staleUpTo <= 0 || e.madeAt > staleUpTo;
    let stale: SharedEntry | undefined;
    for (let delay = 20; ; delay = Math.min(delay * 2, 250)) {
      const got = await this.run('get', (r) => r.getBuffer(KEY_PREFIX + key));
      if (got === FAILED) return { kind: 'render', release: noRelease, stale };
      if (got) {
        const entry = unstamped(got);
        if (fresh(entry)) {
          this.count(kind, true);
          return { kind: 'hit', ...entry };
        }
        stale = entry;
      }
      const token = `${this.instance}:${++this.nonce}`;
      const taken = await this.run('lock', (r) => r.set(lockKey, token, 'PX', LOCK_MS, 'NX'));
      if (taken === FAILED) return this.miss(kind, stale);
      if (taken === 'OK') {
        // The holder before us may have written its entry and released the lock between our GET and our SET NX:
        // look once more, or this tile would be rendered a second time. A failed look renders (holding the lock).
        const release = this.holdLock(lockKey, token);
        const written = await this.run('get', (r) => r.getBuffer(KEY_PREFIX + key));
        if (written !== FAILED && written && fresh(unstamped(written))) {
          // The lock is not needed any more; the answer does not wait for its release.
          void release();
          this.count(kind, true);
          return { kind: 'hit', ...unstamped(written) };
        }
        this.count(kind, false);
        return { kind: 'render', release, stale };
      }
      // Another machine is drawing an expired entry again: the old bytes now beat waiting for the new ones.
      if (stale) {
        this.count(kind, true);
        return { kind: 'stale', ...stale };
      }
      const holder = await this.run('lock', (r) => r.get(lockKey));
      if (holder === FAILED) return this.miss(kind);
      // Released or expired between the two commands: try again at once.
      if (holder === null) continue;
      if (holder.startsWith(`${this.instance}:`) || Date.now() >= deadline || signal?.aborted) return this.miss(kind);
      await new Promise((resolve) => setTimeout(resolve, delay));
    }
  }

  private miss(kind: SharedKind, stale?: SharedEntry): Claim {
    this.count(kind, false);
    return { kind: 'render', release: noRelease, stale };
  }

  /**
   * Renews the lock while the render runs; the release deletes it only while it still holds `token`. The render's
   * entry was sent (put) before the release, on the same connection: Redis stores it before it deletes the lock,
   * so a machine waiting on the lock finds the entry once the lock is gone, without the release waiting for it.
   */
  private holdLock(lockKey: string, token: string): () => Promise<void> {
    const timer = setInterval(() => void this.run('lock', (r) => r.eval(RENEW_SCRIPT, 1, lockKey, token, String(LOCK_MS))), RENEW_MS);
    timer.unref();
    let released = false;
    return async () => {
      if (released) return;
      released = true;
      clearInterval(timer);
      await this.run('unlock', (r) => r.eval(RELEASE_SCRIPT, 1, lockKey, token));
    };
  }
}

/** The process-wide shared cache (like `telemetry`): configured from each state by the server. */
export const sharedCache = new SharedCache();
