// The supervisor: forks HTTP workers, replaces one that dies, turns SIGHUP into a reload of every worker and
// SIGTERM/SIGINT into a drain of every worker followed by exit 0.
import cluster, { type Worker } from 'node:cluster';
import type { LoadedConfig } from '../config/load.js';
import { log } from '../log.js';
import { rereadConfig } from '../server.js';
import { buildAppState } from '../state/build.js';
import { CONFIG_ENV, type ToPrimary, type ToWorker } from './messages.js';

/** No worker could start (the port is taken, say): the one line that says why. */
export class WorkerStartError extends Error {
  override name = 'WorkerStartError';
}

/**
 * Forks `count` workers. Resolves when the first of them listens; rejects when a worker dies before any has
 * listened, since whatever stopped it (a port in use, no permission) would stop every replacement too.
 */
export function runPrimary(initial: LoadedConfig, count: number): Promise<void> {
  let loaded = initial;
  let stopping = false;
  /** Some worker has listened: from then on a dead worker is replaced. */
  let up = false;
  let failed = false;
  /** The first start-up error a worker reported. */
  let startError: string | undefined;
  const recentDeaths: number[] = [];
  let started: { resolve: () => void; reject: (err: Error) => void };
  const startup = new Promise<void>((resolve, reject) => (started = { resolve, reject }));

  /**
   * Workers that have said `ready`. Messages go to a worker only after that: one sent while it is still loading
   * arrives before it listens for messages, and is dropped.
   */
  const ready = new Set<Worker>();
  const sendReload = (w: Worker) => w.send({ type: 'reload', loaded, flush: false } satisfies ToWorker);
  /** What each worker process reports as not ready; a worker that has not reported yet is starting. */
  const notReady = new Map<number, string[]>();
  const sendReadiness = () => {
    const msg: ToWorker = { type: 'readiness', notReady: Object.fromEntries([...notReady].map(([id, items]) => [String(id), items])) };
    for (const w of ready.keys()) if (w.isConnected()) w.send(msg);
  };

  const fork = (): Worker => {
    const forkedWith = loaded.hash;
    const worker = cluster.fork({ [CONFIG_ENV]: JSON.stringify(loaded) });
    notReady.set(worker.id, ['starting']);
    // A message sent to a worker that has just died (before its exit is seen) fails with EPIPE, emitted as an
    // 'error' on the worker: unhandled, it would end the primary and with it the whole service.
    worker.on('error', (err) => log.warn({ worker: worker.id, err: err.message }, 'message to a worker failed'));
    sendReadiness();
    worker.on('message', (msg: ToPrimary) => {
      if (msg.type === 'readiness') {
        notReady.set(worker.id, msg.notReady);
        sendReadiness();
      }
      if (msg.type === 'reloaded' && !msg.ok) log.error({ worker: worker.id, error: msg.error }, 'worker kept its previous configuration');
      if (msg.type === 'failed') startError ??= msg.error;
      if (msg.type === 'ready') {
        ready.add(worker);
        // A SIGHUP came while it was starting: it has the older configuration.
        if (forkedWith !== loaded.hash) sendReload(worker);
      }
    });
    worker.once('exit', () => {
      ready.delete(worker);
      notReady.delete(worker.id);
      sendReadiness();
    });
    return worker;
  };

  cluster.on('listening', () => {
    if (up) return;
    up = true;
    started.resolve();
  });

  cluster.on('exit', (worker, code, signal) => {
    if (failed) return;
    if (stopping) {
      if (Object.keys(cluster.workers ?? {}).length === 0) process.exit(0);
      return;
    }
    if (!up) {
      failed = true;
      for (const w of Object.values(cluster.workers ?? {})) w?.process.kill('SIGKILL');
      started.reject(new WorkerStartError(startError ?? `a worker exited during start-up (${signal ?? `exit code ${code}`})`));
      return;
    }
    const now = Date.now();
    recentDeaths.push(now);
    while (recentDeaths.length && now - recentDeaths[0] > 10_000) recentDeaths.shift();
    // A crash loop (a worker dying again and again at once) is slowed down rather than spinning the CPU.
    const delay = recentDeaths.length > count * 3 ? 1000 : 0;
    // The delay is logged so that an operator (and the tests) can see the slow-down start.
    log.warn({ worker: worker.id, code, signal, restart_delay_ms: delay }, 'worker exited; starting a replacement');
    setTimeout(fork, delay);
  });

  // Before the first fork: a SIGTERM that arrives between a fork and a later handler would meet the default
  // action, ending this process and orphaning the workers already forked.
  const stop = () => {
    if (stopping) return;
    stopping = true;
    log.info('stopping: draining workers');
    const workers = Object.values(cluster.workers ?? {});
    if (workers.length === 0) process.exit(0);
    // A signal, not a message: it cannot be lost while a worker is still loading (the default action then
    // ends it, with nothing in flight); a running worker drains on it.
    for (const w of workers) w?.process.kill('SIGTERM');
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);

  for (let i = 0; i < count; i++) fork();

  process.on('SIGHUP', () => {
    let next: LoadedConfig | undefined;
    try {
      next = rereadConfig(loaded);
      if (!next) return log.warn('SIGHUP: started from file arguments, there is no config file to re-read');
    } catch (err) {
      return log.error({ err: (err as Error).message }, 'SIGHUP: the configuration is invalid; keeping the current one');
    }
    const candidate = next;
    // Open every source once here before adopting the file: a replacement worker is forked with `loaded`, and
    // one forked with a configuration whose sources cannot be opened would die at start, again and again.
    buildAppState(candidate)
      .then((probe) => probe.close())
      .then(
        () => {
          loaded = candidate;
          for (const w of ready.keys()) sendReload(w);
        },
        (err: Error) => log.error({ err: err.message }, 'SIGHUP: the new configuration cannot be loaded; keeping the current one'),
      );
  });

  return startup;
}
