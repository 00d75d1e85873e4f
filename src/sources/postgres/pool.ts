// The PostgreSQL connection pool of one process (`[postgres]`), shared by every database source of a state.
// It owns the connection's health: a query that fails because the database went away answers 503 with
// Retry-After (TileUnavailableError) and marks the pool "not connected"; a background probe then notices the
// database coming back, so sources recover without a restart and `ready()` tells readiness checks the truth.
import { readFileSync } from 'node:fs';
import type { ConnectionOptions } from 'node:tls';
import pg from 'pg';
import type { PostgresConfig } from '../../config/schema.js';
import { log } from '../../log.js';
import { SourceOpenError, TileUnavailableError } from '../source.js';

/** Seconds a client is told to wait when the database is unreachable, or a query ran out of time. */
const RETRY_AFTER_DOWN = 5;
const RETRY_AFTER_SLOW = 1;
/** How often a pool that lost its database tries it again (without traffic). */
const PROBE_INTERVAL_MS = 2000;

/** The database could not be reached at start-up: one line naming it (never the password). */
export class DatabaseUnreachableError extends SourceOpenError {
  constructor(where: string, reason: string) {
    super('postgres', reason);
    this.message = `postgres: cannot connect to ${where}: ${reason}`;
    this.name = 'DatabaseUnreachableError';
  }
}

/** SQLSTATE classes and node errors that mean "the database is not there", not "the query is wrong". */
function isConnectionError(err: unknown): boolean {
  const e = err as { code?: string; message?: string };
  const code = e?.code ?? '';
  if (/^(08|57P0[1-3]|53)/.test(code)) return true; // connection exception, admin/crash shutdown, cannot connect now, insufficient resources
  if (/^(ECONNREFUSED|ECONNRESET|ENOTFOUND|EHOSTUNREACH|ETIMEDOUT|EPIPE|ENOENT|EAI_AGAIN)$/.test(code)) return true;
  return /Connection terminated|timeout exceeded when trying to connect|Client has encountered a connection error|connection is closed/i.test(e?.message ?? '');
}

const isStatementTimeout = (err: unknown) => (err as { code?: string })?.code === '57014';

/** TLS options of `ssl_mode`/`ssl_root_cert`, in libpq's sense of the modes. */
export function tlsOptions(cfg: PostgresConfig): ConnectionOptions | false | undefined {
  const ca = cfg.ssl_root_cert ? readFileSync(cfg.ssl_root_cert, 'utf8') : undefined;
  switch (cfg.ssl_mode) {
    case undefined:
      return undefined; // whatever the connection string says (sslmode=...)
    case 'disable':
      return false;
    case 'prefer':
    case 'require':
      return { rejectUnauthorized: false, ...(ca ? { ca } : {}) };
    case 'verify-ca':
      // The chain is checked, the host name is not.
      return { rejectUnauthorized: true, ca, checkServerIdentity: () => undefined };
    case 'verify-full':
      return { rejectUnauthorized: true, ca };
  }
}

/** Host, port, database and user of a connection string, for messages (the password never appears). */
export function describeConnection(connectionString: string): string {
  try {
    const c = new pg.Client({ connectionString });
    return `${c.host}:${c.port} (database "${c.database}", user "${c.user}")`;
  } catch {
    return 'the configured database';
  }
}

const warnedOnce = new Set<string>();
/** Logs `msg` once per process for `key` (state builds repeat at start-up and on reloads). */
export function logOnce(key: string, level: 'warn' | 'info', obj: object, msg: string): void {
  if (warnedOnce.has(key)) return;
  warnedOnce.add(key);
  log[level](obj, msg);
}

export class PgPool {
  private connected = true;
  private probe: NodeJS.Timeout | undefined;
  private refs = 1;
  private closed = false;

  private constructor(
    private readonly pool: pg.Pool,
    readonly config: PostgresConfig,
    readonly where: string,
  ) {
    // An idle client whose server went away emits 'error' on the pool: without a listener the process dies.
    pool.on('error', (err) => this.lost(err));
  }

  /**
   * Creates the pool and connects once: an unreachable database fails start-up (DatabaseUnreachableError).
   * `processes` is the number of HTTP processes, each with its own pool, for the max_connections warning.
   */
  static async open(cfg: PostgresConfig, processes: number): Promise<PgPool> {
    const where = describeConnection(cfg.connection_string);
    let ssl = tlsOptions(cfg);
    const make = () =>
      new pg.Pool({
        connectionString: cfg.connection_string,
        max: cfg.pool_size,
        connectionTimeoutMillis: cfg.pool_wait_timeout_ms,
        idleTimeoutMillis: 60_000,
        // Idle connections never keep a draining process alive.
        allowExitOnIdle: true,
        application_name: 'tileserver-ts',
        ...(cfg.statement_timeout_ms > 0
          ? { statement_timeout: cfg.statement_timeout_ms, query_timeout: cfg.statement_timeout_ms + 5000 }
          : {}),
        ...(ssl !== undefined ? { ssl } : {}),
      });
    let pool = make();
    let first: pg.PoolClient;
    try {
      first = await pool.connect();
    } catch (err) {
      await pool.end().catch(() => {});
      // libpq's `prefer`: TLS when the server offers it, else a plain connection.
      if (cfg.ssl_mode === 'prefer' && /SSL|TLS/i.test((err as Error).message)) {
        ssl = false;
        pool = make();
        try {
          first = await pool.connect();
        } catch (again) {
          await pool.end().catch(() => {});
          throw new DatabaseUnreachableError(where, (again as Error).message);
        }
      } else throw new DatabaseUnreachableError(where, (err as Error).message || String(err));
    }
    try {
      const { rows } = await first.query<{ max: string; postgis: string | null }>(
        "SELECT current_setting('max_connections') AS max, (SELECT extversion FROM pg_extension WHERE extname = 'postgis') AS postgis",
      );
      const max = Number(rows[0].max);
      if (cfg.pool_size * processes > max) {
        logOnce(`max_connections:${cfg.connection_string}`, 'warn', { pool_size: cfg.pool_size, processes, max_connections: max }, `postgres: pool_size ${cfg.pool_size} x ${processes} processes = ${cfg.pool_size * processes} connections, above the server's max_connections (${max})`);
      }
      if (!rows[0].postgis) logOnce(`postgis:${cfg.connection_string}`, 'warn', {}, `postgres: the PostGIS extension is not installed in ${where}; table sources need it`);
    } finally {
      first.release();
    }
    const owner = new PgPool(pool, cfg, where);
    if (cfg.pool_pre_warm) {
      try {
        await owner.preWarm();
      } catch (err) {
        await pool.end().catch(() => {});
        throw new DatabaseUnreachableError(where, `pool_pre_warm: ${(err as Error).message}`);
      }
    }
    return owner;
  }

  /** Opens every connection of the pool now, so the first requests do not pay for connecting. */
  private async preWarm(): Promise<void> {
    const clients = await Promise.all(Array.from({ length: this.config.pool_size }, () => this.pool.connect()));
    for (const c of clients) c.release();
  }

  /** Whether the last contact with the database succeeded. Cheap: for readiness checks. */
  ready(): boolean {
    return this.connected && !this.closed;
  }

  /** Asks the database now (SELECT 1); updates and returns `ready()`. */
  async check(): Promise<boolean> {
    try {
      await this.pool.query('SELECT 1');
      this.restored();
    } catch (err) {
      if (isConnectionError(err)) this.lost(err);
      else throw err;
    }
    return this.ready();
  }

  /**
   * Runs a parameterised query. Database gone or pool exhausted: 503 (Retry-After); statement_timeout hit:
   * 503. A query that met a connection that died while idle is retried once on a fresh one.
   */
  async query<R extends pg.QueryResultRow>(q: pg.QueryConfig): Promise<pg.QueryResult<R>> {
    for (let attempt = 0; ; attempt++) {
      try {
        const result = await this.pool.query<R>(q);
        this.restored();
        return result;
      } catch (err) {
        if (isStatementTimeout(err)) {
          throw new TileUnavailableError(503, 'Database query timed out', `the database did not answer within statement_timeout_ms (${this.config.statement_timeout_ms} ms)`, RETRY_AFTER_SLOW);
        }
        const code = (err as { code?: string }).code ?? '';
        // Data exceptions and RAISE from a function: the request's parameters were not what it accepts.
        if (/^22|^P0001$/.test(code)) {
          throw new TileUnavailableError(400, 'Invalid tile parameters', `the database function rejected the request (SQLSTATE ${code})`);
        }
        if (!isConnectionError(err)) throw err;
        if (attempt === 0 && this.connected && !/timeout exceeded/.test((err as Error).message)) continue;
        if (/timeout exceeded when trying to connect/.test((err as Error).message) && this.connected) {
          throw new TileUnavailableError(503, 'Database busy', `no database connection became free within pool_wait_timeout_ms (${this.config.pool_wait_timeout_ms} ms)`, RETRY_AFTER_SLOW);
        }
        this.lost(err);
        throw new TileUnavailableError(503, 'Database unavailable', 'the database cannot be reached; tiles from it will be served again when it returns', RETRY_AFTER_DOWN);
      }
    }
  }

  private lost(err: unknown): void {
    if (this.closed) return;
    if (this.connected) log.warn({ err: (err as Error)?.message, database: this.where }, 'postgres: lost the database connection; its sources answer 503 until it returns');
    this.connected = false;
    if (!this.probe) {
      this.probe = setInterval(() => void this.check().catch(() => {}), PROBE_INTERVAL_MS);
      this.probe.unref();
    }
  }

  private restored(): void {
    if (!this.connected) log.info({ database: this.where }, 'postgres: the database is reachable again');
    this.connected = true;
    if (this.probe) clearInterval(this.probe);
    this.probe = undefined;
  }

  /** Another state shares this pool (a reload that left `[postgres]` as it was); each holder calls close(). */
  share(): this {
    this.refs++;
    return this;
  }

  /** Whether a state built from `cfg` can keep using this pool (same connection settings, not closed). */
  serves(cfg: PostgresConfig): boolean {
    const a = this.config;
    return (
      !this.closed &&
      a.connection_string === cfg.connection_string &&
      a.pool_size === cfg.pool_size &&
      a.pool_wait_timeout_ms === cfg.pool_wait_timeout_ms &&
      a.statement_timeout_ms === cfg.statement_timeout_ms &&
      a.ssl_mode === cfg.ssl_mode &&
      a.ssl_root_cert === cfg.ssl_root_cert
    );
  }

  async close(): Promise<void> {
    if (--this.refs > 0 || this.closed) return;
    this.closed = true;
    if (this.probe) clearInterval(this.probe);
    await this.pool.end().catch(() => {});
  }
}
