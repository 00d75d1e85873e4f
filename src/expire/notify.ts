// Expiries sent by the database itself: one LISTEN on `[postgres] expire_channel` per machine, in the process that
// holds the expiry hub (the cluster's primary, or the only process), which spreads each batch to the rest.
// LISTEN belongs to one session, so this is a `pg.Client` of its own, never a pool connection, opened with the
// pool's connection settings. A NOTIFY payload (notify-payload.ts) becomes a batch with input "notify";
// payloads arriving within COALESCE_MS of each other become one batch per source. A payload that cannot be read
// is logged, counted and dropped.
// What a lost session misses: NOTIFY is not queued for a listener that is gone, so changes committed while it is
// down are never told. When the session comes back (after a loss, or after a first attempt failed) every
// source of the database is expired whole (input "reconnect"): each of their cached products is then answered
// once more as stale while it is made again, which is sound and costs one re-render per tile actually asked for.
import pg from 'pg';
import type { Config, PostgresConfig } from '../config/schema.js';
import type { Logger } from '../log.js';
import { tlsOptions } from '../sources/postgres/pool.js';
import { ALL_ZOOMS, unique } from './area-times.js';
import { expiryHub, type NewBatch } from './hub.js';
import { parseNotify, type RejectReason } from './notify-payload.js';
import { DATABASE_ALIAS } from '../sources/postgres/expiry-aliases.js';

/** Notifications this close together are applied as one batch per source (a writer's burst of statements). */
const COALESCE_MS = 5;
/** The first wait before connecting again, doubled up to BACKOFF_MAX_MS after each failure. */
const BACKOFF_MIN_MS = 250;
const BACKOFF_MAX_MS = 30_000;
/** How much of a refused payload the log line quotes. */
const QUOTED_CHARS = 200;

/** What the listener has counted since the process started (telemetry reads them at each scrape). */
export const notifyCounts = {
  /** Payloads refused, by reason. */
  rejected: new Map<RejectReason, number>(),
  /** Sessions lost, and sessions established again after a loss or a failed attempt. */
  connection: new Map<'lost' | 'back', number>(),
};

const bump = <K>(m: Map<K, number>, k: K) => m.set(k, (m.get(k) ?? 0) + 1);

/** The settings that decide which session listens where: a reload changing one of them re-listens. */
function sessionKey(pg: PostgresConfig): string {
  return JSON.stringify([pg.connection_string, pg.ssl_mode ?? null, pg.ssl_root_cert ?? null, pg.expire_channel]);
}

/** Every source reading the database: what a lost session makes uncertain. */
function databaseSources(config: Config): string[] {
  const p = config.postgres;
  const ids = [...(p?.tables ?? []), ...(p?.functions ?? []), ...(p?.outdb_rasters ?? [])].map((s) => s.id);
  // Discovered sources are known only where the catalogue is read: they answer to the database's name.
  return p?.auto_publish ? [...ids, DATABASE_ALIAS] : ids;
}

/** One LISTEN session and its reconnections; `config()` is the configuration in force at each notification. */
class Session {
  private client: pg.Client | undefined;
  private closed = false;
  private wait = BACKOFF_MIN_MS;
  private timer: NodeJS.Timeout | undefined;
  /** Something may have been missed: the next established session expires the database's sources whole. */
  private missed = false;
  private readonly pending = new Map<string, number[]>();
  private flushTimer: NodeJS.Timeout | undefined;

  constructor(
    private readonly settings: PostgresConfig & { expire_channel: string },
    private readonly config: () => Config,
    private readonly log: Logger,
  ) {}

  /** Connects and listens; resolves after the first attempt, whatever its outcome (failures retry with back-off). */
  async start(): Promise<void> {
    await this.connect();
  }

  private async connect(): Promise<void> {
    if (this.closed) return;
    const cfg = this.settings;
    let ssl = tlsOptions(cfg);
    const open = async () => {
      const client = new pg.Client({ connectionString: cfg.connection_string, application_name: 'tileserver-ts expire', ...(ssl !== undefined ? { ssl } : {}) });
      // Without an 'error' listener a session killed by the server would end the process.
      client.on('error', (err) => this.lost(client, err));
      client.on('end', () => this.lost(client, new Error('the connection ended')));
      try {
        await client.connect();
      } catch (err) {
        client.removeAllListeners('end');
        await client.end().catch(() => {});
        throw err;
      }
      return client;
    };
    let client: pg.Client | undefined;
    try {
      try {
        client = await open();
      } catch (err) {
        // libpq's `prefer`: TLS when the server offers it, else a plain connection (as the pool does).
        if (cfg.ssl_mode !== 'prefer' || !/SSL|TLS/i.test((err as Error).message)) throw err;
        ssl = false;
        client = await open();
      }
      client.on('notification', (msg) => {
        if (msg.channel === cfg.expire_channel) this.received(msg.payload ?? '');
      });
      // Quoted: the channel is checked to be a lower-case identifier, the name NOTIFY and pg_notify() use.
      await client.query(`LISTEN "${cfg.expire_channel}"`);
    } catch (err) {
      // Connected but LISTEN failed (a permission, say): that session is of no use.
      if (client) {
        client.removeAllListeners('end');
        await client.end().catch(() => {});
      }
      this.missed = true;
      this.log.warn({ channel: cfg.expire_channel, err: (err as Error).message, retry_ms: this.wait }, 'expire: cannot listen for database notifications; trying again');
      this.retry();
      return;
    }
    if (this.closed) {
      await client.end().catch(() => {});
      return;
    }
    this.client = client;
    this.wait = BACKOFF_MIN_MS;
    if (this.missed) {
      this.missed = false;
      bump(notifyCounts.connection, 'back');
      const sources = databaseSources(this.config());
      this.log.info({ channel: cfg.expire_channel, sources: sources.length }, 'expire: listening for database notifications again; every source of the database expired, as changes made meanwhile were not told');
      if (sources.length) this.accept({ sources, tiles: new Float64Array([0]), band: ALL_ZOOMS, input: 'reconnect', lines: 0 });
    } else this.log.info({ channel: cfg.expire_channel }, 'expire: listening for database notifications');
  }

  private lost(client: pg.Client, err: Error): void {
    if (this.client !== client || this.closed) return;
    this.client = undefined;
    this.missed = true;
    bump(notifyCounts.connection, 'lost');
    this.log.warn({ channel: this.settings.expire_channel, err: err.message, retry_ms: this.wait }, 'expire: lost the database session listening for notifications; reconnecting');
    client.removeAllListeners('end');
    void client.end().catch(() => {});
    this.retry();
  }

  private retry(): void {
    if (this.closed || this.timer) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      void this.connect();
    }, this.wait);
    this.timer.unref();
    this.wait = Math.min(BACKOFF_MAX_MS, this.wait * 2);
  }

  private received(payload: string): void {
    const parsed = parseNotify(payload, this.config());
    if (!parsed.ok) {
      bump(notifyCounts.rejected, parsed.reason);
      const quoted = payload.length > QUOTED_CHARS ? `${payload.slice(0, QUOTED_CHARS)}...` : payload;
      this.log.warn({ channel: this.settings.expire_channel, reason: parsed.reason, payload: quoted }, `expire: notification ignored: ${parsed.detail}`);
      return;
    }
    for (const source of parsed.expiry.sources) {
      const keys = this.pending.get(source);
      if (keys) for (const k of parsed.expiry.keys) keys.push(k);
      else this.pending.set(source, [...parsed.expiry.keys]);
    }
    this.flushTimer ??= setTimeout(() => this.flush(), COALESCE_MS);
  }

  private flush(): void {
    this.flushTimer = undefined;
    for (const [source, keys] of this.pending) {
      const tiles = unique(Float64Array.from(keys).sort());
      this.accept({ sources: [source], tiles, band: ALL_ZOOMS, input: 'notify', lines: keys.length });
    }
    this.pending.clear();
  }

  private accept(batch: NewBatch): void {
    expiryHub()
      .accept(batch)
      .catch((err: Error) => this.log.error({ err: err.message, sources: batch.sources, input: batch.input }, 'expire: a batch from the database could not be applied'));
  }

  async close(): Promise<void> {
    this.closed = true;
    if (this.timer) clearTimeout(this.timer);
    // What arrived before the close is still applied.
    if (this.flushTimer) {
      clearTimeout(this.flushTimer);
      this.flush();
    }
    const client = this.client;
    this.client = undefined;
    if (client) {
      client.removeAllListeners('end');
      await client.end().catch(() => {});
    }
  }
}

/** The machine's listener: follows the configuration (start-up, then every reload). */
export class NotifyListener {
  private session: Session | undefined;
  private key = '';
  private config: Config | undefined;

  constructor(private readonly log: Logger) {}

  /**
   * Adopts the configuration now in force: a new channel, connection string or TLS setting opens a new session
   * before the old one is closed, so no notification falls between them; no channel stops listening.
   */
  async configure(config: Config): Promise<void> {
    this.config = config;
    const p = config.postgres;
    const key = p?.expire_channel ? sessionKey(p) : '';
    if (key === this.key) return;
    this.key = key;
    const old = this.session;
    this.session = undefined;
    if (p?.expire_channel) {
      this.session = new Session({ ...p, expire_channel: p.expire_channel }, () => this.config!, this.log);
      await this.session.start();
    }
    await old?.close();
  }

  async close(): Promise<void> {
    this.key = '';
    await this.session?.close();
    this.session = undefined;
  }
}
