// The supervisor: forks HTTP workers, replaces one that dies, turns SIGHUP into a reload of every worker and
// SIGTERM/SIGINT into a drain of every worker followed by exit 0.
import cluster, { type Worker } from 'node:cluster';
import type { LoadedConfig } from '../config/load.js';
import { log } from '../log.js';
import { rereadConfig } from '../server.js';
import { CONFIG_ENV, type ToPrimary, type ToWorker } from './messages.js';

export function runPrimary(initial: LoadedConfig, count: number): void {
  let loaded = initial;
  let stopping = false;
  const recentDeaths: number[] = [];

  const fork = (): Worker => {
    const worker = cluster.fork({ [CONFIG_ENV]: JSON.stringify(loaded) });
    worker.on('message', (msg: ToPrimary) => {
      if (msg.type === 'reloaded' && !msg.ok) log.error({ worker: worker.id, error: msg.error }, 'worker kept its previous configuration');
    });
    return worker;
  };

  cluster.on('exit', (worker, code, signal) => {
    if (stopping) {
      if (Object.keys(cluster.workers ?? {}).length === 0) process.exit(0);
      return;
    }
    const now = Date.now();
    recentDeaths.push(now);
    while (recentDeaths.length && now - recentDeaths[0] > 10_000) recentDeaths.shift();
    log.warn({ worker: worker.id, code, signal }, 'worker exited; starting a replacement');
    // A crash loop (a worker dying again and again at once) is slowed down rather than spinning the CPU.
    const delay = recentDeaths.length > count * 3 ? 1000 : 0;
    setTimeout(fork, delay);
  });

  for (let i = 0; i < count; i++) fork();

  process.on('SIGHUP', () => {
    try {
      const next = rereadConfig(loaded);
      if (!next) return log.warn('SIGHUP: started from file arguments, there is no config file to re-read');
      loaded = next;
      const msg: ToWorker = { type: 'reload', loaded, flush: false };
      for (const w of Object.values(cluster.workers ?? {})) w?.send(msg);
    } catch (err) {
      log.error({ err: (err as Error).message }, 'SIGHUP: the configuration is invalid; keeping the current one');
    }
  });

  const stop = () => {
    if (stopping) return;
    stopping = true;
    log.info('stopping: draining workers');
    const workers = Object.values(cluster.workers ?? {});
    if (workers.length === 0) process.exit(0);
    for (const w of workers) w?.send({ type: 'shutdown' } satisfies ToWorker);
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);
}
