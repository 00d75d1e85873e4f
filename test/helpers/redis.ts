// A real redis-server (the Debian package) for a test, on a free port, with persistence off; it can be killed,
// paused and started again on the same port (outage tests). A missing redis-server is a failure, not a skip.
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { Redis } from 'ioredis';
import { freePort } from './server.js';

export interface RedisServer {
  port: number;
  url: string;
  /** A client of the test's own (for looking at keys and planting locks). */
  client: Redis;
  output(): string;
  /** SIGKILL: the server is gone at once, its data with it. */
  kill(): Promise<void>;
  /** A fresh, empty server on the same port. */
  restart(): Promise<void>;
  pause(): void;
  resume(): void;
  stop(): Promise<void>;
}

export interface RedisOptions {
  /** `requirepass`: clients must send it. */
  password?: string;
  /** TLS only (no plain port), with this certificate and key; clients trust `cert`. */
  tls?: { cert: string; key: string };
}

export async function startRedis(opts: RedisOptions = {}): Promise<RedisServer> {
  const port = await freePort();
  const listen = opts.tls
    ? ['--port', '0', '--tls-port', String(port), '--tls-cert-file', opts.tls.cert, '--tls-key-file', opts.tls.key, '--tls-auth-clients', 'no']
    : ['--port', String(port)];
  const auth = opts.password ? ['--requirepass', opts.password] : [];
  const connection = { port, host: '127.0.0.1', password: opts.password, tls: opts.tls ? { ca: readFileSync(opts.tls.cert) } : undefined };
  let proc: ChildProcess | undefined;
  let out = '';
  const launch = async () => {
    const p = spawn('redis-server', [...listen, ...auth, '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no'], { stdio: ['ignore', 'pipe', 'pipe'] });
    p.stdout!.on('data', (d) => (out += d));
    p.stderr!.on('data', (d) => (out += d));
    const failed = new Promise<never>((_, reject) => p.once('error', (err) => reject(new Error(`cannot start redis-server (the Debian package redis-server): ${err.message}`))));
    proc = p;
    const deadline = Date.now() + 10_000;
    for (;;) {
      const probe = new Redis({ ...connection, lazyConnect: true, retryStrategy: () => null, maxRetriesPerRequest: 0 });
      probe.on('error', () => {});
      const ok = await Promise.race([probe.connect().then(() => probe.ping()).then(() => true, () => false), failed]);
      probe.disconnect();
      if (ok) return;
      if (Date.now() > deadline) throw new Error(`redis-server did not answer on port ${port}:\n${out}`);
      await new Promise((r) => setTimeout(r, 50));
    }
  };
  const exit = (signal: NodeJS.Signals) =>
    new Promise<void>((resolve) => {
      const p = proc;
      if (!p || p.exitCode !== null || p.signalCode !== null) return resolve();
      p.once('exit', () => resolve());
      p.kill(signal);
    });
  await launch();
  const client = new Redis({ ...connection, maxRetriesPerRequest: 1, retryStrategy: () => 100 });
  client.on('error', () => {});
  return {
    port,
    url: `${opts.tls ? 'rediss' : 'redis'}://${opts.password ? `:${encodeURIComponent(opts.password)}@` : ''}127.0.0.1:${port}/0`,
    client,
    output: () => out,
    kill: () => exit('SIGKILL'),
    restart: launch,
    pause: () => proc?.kill('SIGSTOP'),
    resume: () => proc?.kill('SIGCONT'),
    async stop() {
      client.disconnect();
      proc?.kill('SIGCONT');
      await exit('SIGKILL');
    },
  };
}
