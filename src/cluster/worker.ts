// An HTTP worker: serves, reloads on the primary's message, drains and exits 0 on shutdown.
import type { LoadedConfig } from '../config/load.js';
import { log } from '../log.js';
import { startServer, rereadConfig, type RunningServer } from '../server.js';
import { listenErrorLine } from './listen-error.js';
import { CONFIG_ENV, type ToPrimary, type ToWorker } from './messages.js';

function send(msg: ToPrimary) {
  process.send?.(msg);
}

export async function runWorker(): Promise<void> {
  const loaded = JSON.parse(process.env[CONFIG_ENV] ?? 'null') as LoadedConfig;
  // Handlers come first: a shutdown that arrived while the server was starting would be lost (and the primary
  // would wait for this worker forever), and so would a reload (leaving this worker on the old configuration).
  let server: RunningServer | undefined;
  let pendingReload: Extract<ToWorker, { type: 'reload' }> | undefined;
  let draining = false;
  const drain = async () => {
    if (draining) return;
    draining = true;
    // Not serving yet: nothing is in flight.
    await server?.drain();
    process.exit(0);
  };
  const reload = (running: RunningServer, msg: Extract<ToWorker, { type: 'reload' }>) =>
    running.reload(msg.loaded, msg.flush).then(
      (r) => send({ type: 'reloaded', ok: true, reloaded: r.reloaded }),
      (err: Error) => send({ type: 'reloaded', ok: false, reloaded: false, error: err.message }),
    );
  process.on('message', (msg: ToWorker) => {
    if (msg.type === 'shutdown') void drain();
    else if (msg.type === 'reload') {
      if (server) reload(server, msg);
      else pendingReload = msg;
    }
  });
  // The primary decides about signals sent to the whole process group; a worker told directly drains too.
  process.on('SIGTERM', () => void drain());
  process.on('SIGINT', () => {});
  process.on('SIGHUP', () => {});
  try {
    server = await startServer(loaded);
  } catch (err) {
    // The primary reports it, once for all workers: the same cause would stop each of them.
    const error = listenErrorLine(err) ?? (err instanceof Error ? err.message : String(err));
    process.send?.({ type: 'failed', error } satisfies ToPrimary, undefined, {}, () => process.exit(1));
    return;
  }
  if (pendingReload) reload(server, pendingReload);
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
