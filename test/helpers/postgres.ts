// A throwaway PostgreSQL + PostGIS cluster for a test file: `initdb` into a temp dir, `pg_ctl start` on a free
// port with its socket in that dir, `CREATE EXTENSION postgis`, seeded from SQL kept in test/sql. Run as root,
// the server runs as the `postgres` user (PostgreSQL refuses to run as root). `stop()`/`start()` take the same
// cluster down and up again (outage tests); `destroy()` stops it and removes the directory.
import { execFileSync, spawnSync } from 'node:child_process';
import { chmodSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import pg from 'pg';
import { freePort, ROOT } from './server.js';

// Debian keeps each PostgreSQL major version's server binaries in /usr/lib/postgresql/<major>/bin, and the
// `postgresql` metapackage installs the release's default one (15 on Debian 12, 17 on Debian 13). The newest
// version present is used, so the version is never named here; the PostGIS of that version comes with the
// `postgresql-postgis` metapackage.
const PG_LIB = '/usr/lib/postgresql';

function pgBin(name: string): string {
  const majors = existsSync(PG_LIB) ? readdirSync(PG_LIB).filter((d) => /^\d+$/.test(d)) : [];
  majors.sort((a, b) => Number(b) - Number(a));
  for (const major of majors) {
    const bin = path.join(PG_LIB, major, 'bin', name);
    if (existsSync(bin)) return bin;
  }
  // A missing PostgreSQL is a failure, not a skip: `make test` installs it (Makefile APT_PACKAGES).
  throw new Error(`PostgreSQL's ${name} is not installed (Debian packages postgresql and postgresql-postgis; run make test)`);
}

const asRoot = typeof process.getuid === 'function' && process.getuid() === 0;

function run(bin: string, args: string[]): string {
  const cmd = asRoot ? 'runuser' : bin;
  const argv = asRoot ? ['-u', 'postgres', '--', bin, ...args] : args;
  const r = spawnSync(cmd, argv, { encoding: 'utf8', timeout: 60_000 });
  if (r.status !== 0) throw new Error(`${path.basename(bin)} ${args.join(' ')} failed (${r.status}): ${r.stderr}${r.stdout}`);
  return r.stdout;
}

export interface PostgresCluster {
  host: string;
  port: number;
  database: string;
  user: string;
  /** `postgres://user@127.0.0.1:port/db` */
  url: string;
  /** Runs SQL as the superuser. */
  sql(text: string, values?: unknown[]): Promise<pg.QueryResult>;
  stop(): void;
  start(): void;
  destroy(): void;
}

/** Starts a cluster, creates PostGIS and runs each seed file of test/sql (by name, e.g. "seed.sql"). */
export async function startPostgres(seeds: string[] = ['seed.sql']): Promise<PostgresCluster> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'tsts-pg-'));
  chmodSync(dir, 0o777);
  if (asRoot) execFileSync('chown', ['postgres:postgres', dir]);
  const data = path.join(dir, 'data');
  const logFile = path.join(dir, 'server.log');
  run(pgBin('initdb'), ['-D', data, '-U', 'postgres', '--auth=trust', '-E', 'UTF8', '--locale=C.UTF-8']);
  const port = await freePort();
  const ctl = pgBin('pg_ctl');
  const options = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=60`;
  const start = () => run(ctl, ['-D', data, '-l', logFile, '-o', options, '-w', '-t', '60', 'start']);
  const stop = () => run(ctl, ['-D', data, '-m', 'fast', '-w', '-t', '60', 'stop']);
  start();
  const url = `postgres://postgres@127.0.0.1:${port}/postgres`;
  const sql = async (text: string, values?: unknown[]) => {
    const client = new pg.Client({ connectionString: url });
    await client.connect();
    try {
      return await client.query(text, values);
    } finally {
      await client.end();
    }
  };
  try {
    await sql('CREATE EXTENSION postgis');
    for (const seed of seeds) await sql(readFileSync(path.join(ROOT, 'test/sql', seed), 'utf8'));
  } catch (err) {
    const logText = existsSync(logFile) ? readFileSync(logFile, 'utf8') : '';
    try {
      stop();
    } catch {
      /* already down */
    }
    throw new Error(`seeding the test database failed: ${(err as Error).message}\n${logText}`);
  }
  let running = true;
  return {
    host: '127.0.0.1',
    port,
    database: 'postgres',
    user: 'postgres',
    url,
    sql,
    stop() {
      if (running) stop();
      running = false;
    },
    start() {
      if (!running) start();
      running = true;
    },
    destroy() {
      try {
        if (running) stop();
      } finally {
        running = false;
        rmSync(dir, { recursive: true, force: true });
      }
    },
  };
}
