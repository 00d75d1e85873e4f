// The OAuth server's memory, in one SQLite file (`mcp.oauth.store_path`): registered clients, refresh-token
// sessions, pending authorization codes and failed consent attempts. Every process (each HTTP worker and the
// admin listener's) opens the same file, so a code issued by one worker is redeemed at another, a session
// revoked on the admin listener is refused by every worker at its next call, and everything survives a restart.
// Secrets (client secrets, refresh tokens, codes) are kept only as SHA-256 digests: the file alone grants nothing.
import { createHash } from 'node:crypto';
import { mkdirSync } from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';

export interface ClientRecord {
  client_id: string;
  client_name: string | null;
  redirect_uris: string[];
  grant_types: string[];
  token_endpoint_auth_method: 'none' | 'client_secret_post' | 'client_secret_basic';
  scope: string | null;
  /** Unix seconds. */
  client_id_issued_at: number;
}

export interface SessionRecord {
  /** The id the admin endpoints name a session by (`/__admin/oauth/sessions/{token_id}`); also the JWTs' `sid`. */
  token_id: string;
  client_id: string;
  scope: string | null;
  resource: string;
  /** Unix seconds. */
  created_at: number;
  last_refreshed_at: number | null;
  refresh_count: number;
}

export interface CodeRecord {
  client_id: string;
  redirect_uri: string;
  code_challenge: string;
  scope: string | null;
  resource: string;
  expires_at: number;
}

export const digest = (secret: string): string => createHash('sha256').update(secret).digest('hex');

const now = () => Math.floor(Date.now() / 1000);

const SCHEMA = `
CREATE TABLE IF NOT EXISTS clients (
  client_id TEXT PRIMARY KEY,
  secret_digest TEXT,
  client_name TEXT,
  redirect_uris TEXT NOT NULL,
  grant_types TEXT NOT NULL,
  token_endpoint_auth_method TEXT NOT NULL,
  scope TEXT,
  client_id_issued_at INTEGER NOT NULL
);
CREATE TABLE IF NOT EXISTS sessions (
  token_id TEXT PRIMARY KEY,
  client_id TEXT NOT NULL REFERENCES clients(client_id) ON DELETE CASCADE,
  refresh_digest TEXT NOT NULL UNIQUE,
  previous_digest TEXT,
  scope TEXT,
  resource TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  last_refreshed_at INTEGER,
  refresh_count INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX IF NOT EXISTS sessions_previous ON sessions(previous_digest);
CREATE TABLE IF NOT EXISTS codes (
  code_digest TEXT PRIMARY KEY,
  client_id TEXT NOT NULL REFERENCES clients(client_id) ON DELETE CASCADE,
  redirect_uri TEXT NOT NULL,
  code_challenge TEXT NOT NULL,
  scope TEXT,
  resource TEXT NOT NULL,
  expires_at INTEGER NOT NULL
);
-- Wrong consent secrets of the last minute, with the address each came from (consent_failures, without the
-- address, is what older stores kept; it is no longer read).
CREATE TABLE IF NOT EXISTS consent_misses (at_ms INTEGER NOT NULL, address TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS consent_misses_by_address ON consent_misses (address, at_ms);
`;

interface ClientRow {
  client_id: string;
  secret_digest: string | null;
  client_name: string | null;
  redirect_uris: string;
  grant_types: string;
  token_endpoint_auth_method: ClientRecord['token_endpoint_auth_method'];
  scope: string | null;
  client_id_issued_at: number;
}

function clientOf(row: ClientRow): ClientRecord {
  return {
    client_id: row.client_id,
    client_name: row.client_name,
    redirect_uris: JSON.parse(row.redirect_uris) as string[],
    grant_types: JSON.parse(row.grant_types) as string[],
    token_endpoint_auth_method: row.token_endpoint_auth_method,
    scope: row.scope,
    client_id_issued_at: row.client_id_issued_at,
  };
}

export class OAuthStore {
  private readonly db: Database.Database;

  constructor(readonly file: string) {
    mkdirSync(path.dirname(file), { recursive: true });
    this.db = new Database(file);
    // Several processes write the same file: WAL lets readers go on while one writes; a writer waits its turn.
    this.db.pragma('journal_mode = WAL');
    this.db.pragma('busy_timeout = 5000');
    this.db.pragma('foreign_keys = ON');
    this.db.exec(SCHEMA);
  }

  close(): void {
    this.db.close();
  }

  addClient(c: ClientRecord, secret: string | undefined): void {
    this.db
      .prepare(
        'INSERT INTO clients (client_id, secret_digest, client_name, redirect_uris, grant_types, token_endpoint_auth_method, scope, client_id_issued_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
      )
      .run(c.client_id, secret === undefined ? null : digest(secret), c.client_name, JSON.stringify(c.redirect_uris), JSON.stringify(c.grant_types), c.token_endpoint_auth_method, c.scope, c.client_id_issued_at);
  }

  client(clientId: string): (ClientRecord & { secret_digest: string | null }) | undefined {
    const row = this.db.prepare('SELECT * FROM clients WHERE client_id = ?').get(clientId) as ClientRow | undefined;
    return row ? { ...clientOf(row), secret_digest: row.secret_digest } : undefined;
  }

  clients(): (ClientRecord & { sessions: number })[] {
    const rows = this.db
      .prepare('SELECT c.*, (SELECT count(*) FROM sessions s WHERE s.client_id = c.client_id) AS sessions FROM clients c ORDER BY client_id_issued_at, client_id')
      .all() as (ClientRow & { sessions: number })[];
    return rows.map((r) => ({ ...clientOf(r), sessions: r.sessions }));
  }

  /** Clients registered since `sinceSecs` (unix seconds). */
  clientsRegisteredSince(sinceSecs: number): number {
    return (this.db.prepare('SELECT count(*) AS n FROM clients WHERE client_id_issued_at >= ?').get(sinceSecs) as { n: number }).n;
  }

  /** Deletes a client with its sessions and pending codes; false when there was none. */
  deleteClient(clientId: string): boolean {
    return this.db.prepare('DELETE FROM clients WHERE client_id = ?').run(clientId).changes > 0;
  }

  addCode(code: string, c: CodeRecord): void {
    this.db
      .prepare('INSERT INTO codes (code_digest, client_id, redirect_uri, code_challenge, scope, resource, expires_at) VALUES (?, ?, ?, ?, ?, ?, ?)')
      .run(digest(code), c.client_id, c.redirect_uri, c.code_challenge, c.scope, c.resource, c.expires_at);
  }

  /** Takes a code out (a code is good once, whatever the outcome of its redemption); undefined if unknown or expired. */
  takeCode(code: string): CodeRecord | undefined {
    const row = this.db.prepare('DELETE FROM codes WHERE code_digest = ? RETURNING *').get(digest(code)) as CodeRecord | undefined;
    this.db.prepare('DELETE FROM codes WHERE expires_at < ?').run(now());
    return row && row.expires_at >= now() ? row : undefined;
  }

  addSession(s: { token_id: string; client_id: string; scope: string | null; resource: string }, refreshToken: string): void {
    this.db
      .prepare('INSERT INTO sessions (token_id, client_id, refresh_digest, scope, resource, created_at) VALUES (?, ?, ?, ?, ?, ?)')
      .run(s.token_id, s.client_id, digest(refreshToken), s.scope, s.resource, now());
  }

  session(tokenId: string): SessionRecord | undefined {
    return this.db
      .prepare('SELECT token_id, client_id, scope, resource, created_at, last_refreshed_at, refresh_count FROM sessions WHERE token_id = ?')
      .get(tokenId) as SessionRecord | undefined;
  }

  sessions(): SessionRecord[] {
    return this.db
      .prepare('SELECT token_id, client_id, scope, resource, created_at, last_refreshed_at, refresh_count FROM sessions ORDER BY created_at, token_id')
      .all() as SessionRecord[];
  }

  deleteSession(tokenId: string): boolean {
    return this.db.prepare('DELETE FROM sessions WHERE token_id = ?').run(tokenId).changes > 0;
  }

  /**
   * Rotation: the session holding `presented` gets `next` as its refresh token, in one statement, so two
   * processes racing with the same token cannot both win. A token that was already rotated away is a sign that
   * it leaked (OAuth 2.1, 4.3.1): its session is ended. Answers the session, or why not.
   */
  rotate(presented: string, next: string, clientId: string): { ok: true; session: SessionRecord } | { ok: false; reused: boolean } {
    const d = digest(presented);
    const row = this.db
      .prepare(
        `UPDATE sessions SET previous_digest = refresh_digest, refresh_digest = ?, last_refreshed_at = ?, refresh_count = refresh_count + 1
         WHERE refresh_digest = ? AND client_id = ?
         RETURNING token_id, client_id, scope, resource, created_at, last_refreshed_at, refresh_count`,
      )
      .get(digest(next), now(), d, clientId) as SessionRecord | undefined;
    if (row) return { ok: true, session: row };
    const reused = this.db.prepare('DELETE FROM sessions WHERE previous_digest = ? AND client_id = ?').run(d, clientId).changes > 0;
    return { ok: false, reused };
  }

  /** Records a wrong consent secret sent from `address` (and forgets those older than `windowMs`). */
  noteConsentFailure(windowMs: number, address: string): void {
    const t = Date.now();
    this.db.prepare('DELETE FROM consent_misses WHERE at_ms < ?').run(t - windowMs);
    this.db.prepare('INSERT INTO consent_misses (at_ms, address) VALUES (?, ?)').run(t, address);
  }

  /** Wrong consent secrets in the last `windowMs`: from every address, and from `address` alone. */
  consentFailures(windowMs: number, address: string): { all: number; fromAddress: number } {
    const since = Date.now() - windowMs;
    const row = this.db.prepare('SELECT count(*) AS all_, coalesce(sum(address = ?), 0) AS mine FROM consent_misses WHERE at_ms >= ?').get(address, since) as { all_: number; mine: number };
    return { all: row.all_, fromAddress: row.mine };
  }
}
