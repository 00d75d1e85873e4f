// An HTTP worker: serves, reloads on the primary's message, drains and exits 0 on shutdown.
import type { LoadedConfig } from '../config/load.js';
import { log } from '../log.js';
import { startServer, rereadConfig, type RunningServer } from '../server.js';
import { CONFIG_ENV, type ToPrimary, type ToWorker } from './messages.js';

function send(msg: ToPrimary) {
  process.send?.(msg);
}

export async function runWorker(): Promise<void> {
  const loaded = JSON.parse(process.env[CONFIG_ENV] ?? 'null') as LoadedConfig;
  const server = await startServer(loaded);
  let draining = false;
  const drain = async () => {
    if (draining) return;
    draining = true;
    await server.drain();
    process.exit(0);
  };
  process.on('message', (msg: ToWorker) => {
    if (msg.type === 'shutdown') void drain();
    else if (msg.type === 'reload') {
      server.reload(msg.loaded, msg.flush).then(
        (r) => send({ type: 'reloaded', ok: true, reloaded: r.reloaded }),
        (err: Error) => send({ type: 'reloaded', ok: false, reloaded: false, error: err.message }),
      );
    }
  });
  // The primary decides about signals sent to the whole process group; a worker told directly drains too.
  process.on('SIGTERM', () => void drain());
  process.on('SIGINT', () => {});
  process.on('SIGHUP', () => {});
  send({ type: 'ready' });
}

/** workers = 1: one process does everything, signals included. */
export async function runSingle(loaded: LoadedConfig): Promise<RunningServer> {
  let current = loaded;
  const server = await startServer(loaded);
  let draining = false;
  const drain = async () => {
    if (draining) return;
    draining = true;
    log.info('stopping: draining');
    await server.drain();
    process.exit(0);
  };
  process.on('SIGTERM', () => void drain());
  process.on('SIGINT', () => void drain());
  process.on('SIGHUP', () => {
    try {
      const next = rereadConfig(current);
      if (!next) return log.warn('SIGHUP: started from file arguments, there is no config file to re-read');
      server.reload(next).then(
        () => {
          current = next;
        },
        (err: Error) => log.error({ err: err.message }, 'SIGHUP: reload failed; keeping the current configuration'),
      );
    } catch (err) {
      log.error({ err: (err as Error).message }, 'SIGHUP: the configuration is invalid; keeping the current one');
    }
  });
  return server;
}
