// The Redis connection the budgets are counted in, one per process (ioredis), beside the shared cache's own
// connection to the same server by default. Like the shared cache (shared-cache/client.ts) it never makes a
// request wait for a connection: commands fail at once while it is down (no offline queue) and rate-limiter-
// flexible then counts in its insurance limiter, this machine's own. The outage is logged once when it starts
// and once when it ends; ioredis reconnects by itself.
import type { Redis } from 'ioredis';
import type { Logger } from '../log.js';

export type LimitsRedisState = 'off' | 'connecting' | 'connected' | 'down';

export class LimitsRedis {
  client: Redis | undefined;
  private key: string | undefined;
  private status: LimitsRedisState = 'off';
  private downSince: Date | undefined;
  private toldConnecting = false;
  private log: Logger | undefined;
  /** Bumped on every new connection: limiters built on an older one are rebuilt. */
  generation = 0;

  get state(): LimitsRedisState {
    return this.status;
  }

  /** Connects to `url` (or keeps the connection to it), or disconnects when undefined. */
  async configure(url: string | undefined, timeoutMs: number, log: Logger): Promise<void> {
    this.log = log;
    const key = url === undefined ? undefined : JSON.stringify([url, timeoutMs]);
    if (key === this.key) return;
    this.key = key;
    this.disconnect();
    if (url === undefined) return;
    this.status = 'connecting';
    this.toldConnecting = false;
    // Loaded on first use, as the shared cache does: most servers never set a Redis.
    const { Redis } = await import('ioredis');
    if (key !== this.key) return;
    const client = new Redis(url, {
      commandTimeout: timeoutMs,
      connectTimeout: Math.max(1_000, timeoutMs * 10),
      enableOfflineQueue: false,
      maxRetriesPerRequest: 0,
      // The ready check (an INFO after connecting) would be bounded by the per-request timeout above, and on a busy
      // machine it timed out, counting a healthy Redis as an outage: 'ready' comes with the connection instead.
      enableReadyCheck: false,
      // Every request sends one count: the counts of one event-loop turn go out in one write.
      enableAutoPipelining: true,
      retryStrategy: (times) => Math.min(100 * times, 2_000),
    });
    client.on('ready', () => this.up());
    client.on('error', (err: Error) => this.down(err.message));
    client.on('close', () => this.down('connection closed'));
    this.client = client;
    this.generation++;
  }

  private up(): void {
    this.stopProbe();
    if (this.status === 'down') this.log?.info({ down_since: this.downSince?.toISOString() }, 'rate limits: Redis is reachable again; budgets are shared by the fleet again');
    else if (this.status === 'connecting') this.log?.info('rate limits: Redis connected; budgets are shared by the fleet');
    this.status = 'connected';
    this.downSince = undefined;
  }

  /** Also called when a command fails on a connection that looked ready (a paused or overloaded server). */
  down(reason: string): void {
    if (this.status === 'off' || this.status === 'down') return;
    if (this.status === 'connecting') {
      // Not an outage yet: the first connection (its SELECT is bounded by the per-request timeout too, and timed
      // out on a busy machine) is retried; said once, and 'connected' follows when it answers.
      if (!this.toldConnecting) this.log?.warn({ reason }, 'rate limits: cannot reach Redis yet; this machine counts budgets on its own until it answers');
      this.toldConnecting = true;
      return;
    }
    this.status = 'down';
    this.downSince = new Date();
    this.log?.warn({ reason }, 'rate limits: Redis unreachable; this machine counts budgets on its own until it is back');
  }

  /** Whether requests should be counted in Redis now: connected, and not counted as down for being slow. */
  get usable(): boolean {
    return this.status === 'connected' && this.client?.status === 'ready';
  }

  private probe: NodeJS.Timeout | undefined;

  /**
   * A count took the whole timeout (the server is paused, overloaded or far away; the connection looks fine).
   * Counted as an outage like a lost connection: requests go to this machine's count at once instead of each
   * waiting `timeoutMs` first, and a PING every second (bounded by the same timeout) tells when Redis answers again.
   */
  slow(timeoutMs: number): void {
    if (this.status !== 'connected') return;
    this.down(`Redis answered no command within ${timeoutMs} ms`);
    const client = this.client;
    this.probe ??= setInterval(() => {
      client?.ping().then(
        () => {
          if (this.client === client && this.status === 'down') this.up();
        },
        () => {},
      );
    }, 1_000);
    this.probe.unref();
  }

  private stopProbe(): void {
    if (this.probe) clearInterval(this.probe);
    this.probe = undefined;
  }

  disconnect(): void {
    this.stopProbe();
    const c = this.client;
    this.client = undefined;
    this.status = 'off';
    this.downSince = undefined;
    if (c) {
      c.removeAllListeners();
      c.on('error', () => {});
      c.disconnect();
    }
  }
}
