// An HTTP worker: serves, reloads on the primary's message, drains and exits 0 on SIGTERM.
import type { LoadedConfig } from '../config/load.js';
import cluster from 'node:cluster';
import { localNotReady } from '../http/routes/operational.js';
import { log } from '../log.js';
import { startServer, type RunningServer } from '../server.js';
import { ServiceReloader } from './reloader.js';
import { listenErrorLine } from './listen-error.js';
import { CONFIG_ENV, type ToPrimary, type ToWorker } from './messages.js';
import { ClusterUploadPeers, uploadsFromEnv } from './upload-peers.js';
import { WorkerExpiryHub } from './expire-relay.js';
import { expiries } from '../expire/expiries.js';
import { setExpiryHub } from '../expire/hub.js';
import { replayJournal } from '../expire/journal.js';
import { startMachineExpiries } from '../expire/machine.js';
import { resolvedCacheDir } from '../config/paths.js';

function send(msg: ToPrimary) {
  process.send?.(msg);
}

export async function runWorker(): Promise<void> {
  const loaded = JSON.parse(process.env[CONFIG_ENV] ?? 'null') as LoadedConfig;
  // Signal handlers come before the server starts: a SIGTERM while it starts ends the worker at once (nothing
  // is in flight yet), and a SIGHUP or SIGINT meant for the primary's process group must not kill it.
  let server: RunningServer | undefined;
  let draining = false;
  const drain = async () => {
    if (draining) return;
    draining = true;
    // While the server is still starting there is nothing in flight to wait for.
    await server?.drain();
    process.exit(0);
  };
  // The primary stops workers with SIGTERM and decides about signals sent to the whole process group.
  process.on('SIGTERM', () => void drain());
  process.on('SIGINT', () => {});
  process.on('SIGHUP', () => {});
  // The machine's expiries before serving: listen for the primary's batches first, then read the journal (what
  // the primary takes in between reaches this worker by message; cluster/expire-relay.ts).
  const expireHub = new WorkerExpiryHub(send, log);
  setExpiryHub(expireHub);
  expireHub.listen();
  expiries.maxTiles = loaded.config.cache.expiry_max_tiles;
  replayJournal(resolvedCacheDir(loaded), expiries);
  // Uploads another worker received reach this one through the primary (src/cluster/upload-relay.ts).
  const uploadPeers = new ClusterUploadPeers(send, log);
  try {
    server = await startServer(loaded, { uploads: uploadsFromEnv(), uploadPeers });
  } catch (err) {
    // The primary reports it, once for all workers: the same cause would stop each of them.
    const error = listenErrorLine(err) ?? (err instanceof Error ? err.message : String(err));
    process.send?.({ type: 'failed', error } satisfies ToPrimary, undefined, {}, () => process.exit(1));
    return;
  }
  const running = server;
  uploadPeers.attach(running.ctx.uploads!.registry);
  // The primary sends messages only after `ready`.
  process.on('message', (msg: ToWorker) => {
    if (uploadPeers.onMessage(msg)) return;
    if (msg.type === 'readiness') {
      const self = String(cluster.worker?.id);
      running.ctx.runtime.peersNotReady = Object.entries(msg.notReady)
        .filter(([id]) => id !== self)
        .flatMap(([id, items]) => items.map((item) => `process ${id}: ${item}`));
      return;
    }
    if (msg.type !== 'reload') return;
    running.reload(msg.loaded, msg.flush).then(
      (r) => send({ type: 'reloaded', id: msg.id, ok: true, reloaded: r.reloaded, figures: r.figures }),
      (err: Error) => send({ type: 'reloaded', id: msg.id, ok: false, reloaded: false, error: err.message }),
    );
  });
  send({ type: 'ready' });
  // Readiness changes (renderers warm up, or fail) are told to the primary, which tells every process.
  let told = '';
  const tell = () => {
    const notReady = localNotReady(running.ctx);
    const now = JSON.stringify(notReady);
    if (now === told) return;
    told = now;
    send({ type: 'readiness', notReady });
  };
  tell();
  setInterval(tell, 250).unref();
}

/** workers = 1: one process does everything, signals included. */
export async function runSingle(loaded: LoadedConfig): Promise<{ server: RunningServer; reloader: ServiceReloader }> {
  // The machine's expiries (journal, hub, fleet) before the first request.
  let reloaderOf: ServiceReloader | undefined;
  const machine = startMachineExpiries(loaded.config, log, undefined, () => reloaderOf?.active.config ?? loaded.config);
  const server = await startServer(loaded);
  const reloader = new ServiceReloader(loaded, async (next, flush) => [await server.reload(next, flush)], log);
  reloaderOf = reloader;
  let draining = false;
  const drain = async () => {
    if (draining) return;
    draining = true;
    log.info('stopping: draining');
    await server.drain();
    await machine.close();
    process.exit(0);
  };
  process.on('SIGTERM', () => void drain());
  process.on('SIGINT', () => void drain());
  // The reloader logs the outcome (and why a failed one failed).
  process.on('SIGHUP', () => void reloader.reload(false, 'SIGHUP'));
  return { server, reloader };
}
