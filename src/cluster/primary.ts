// The supervisor: forks HTTP workers, replaces one that dies, runs reloads (SIGHUP, the admin route) across every
// worker and turns SIGTERM/SIGINT into a drain of every worker followed by exit 0.
import cluster, { type Worker } from 'node:cluster';
import { randomBytes } from 'node:crypto';
import type { LoadedConfig } from '../config/load.js';
import { startValues } from '../config/restart-only.js';
import { log } from '../log.js';
import { buildAppState } from '../state/build.js';
import { CONFIG_ENV, type ToPrimary, type ToWorker } from './messages.js';
import { ServiceReloader, type ApplyReload, type ProcessReloaded } from './reloader.js';
import { UploadRelay } from './upload-relay.js';
import { workerExecArgv } from './worker-flags.js';
import { PEER_ENV, type PeerLink } from '../render/peers.js';
import { serveClusterLimits } from '../limits/cluster.js';
import { startMachineExpiries } from '../expire/machine.js';
import { PrimaryExpireRelay } from './expire-relay.js';

/** How long a reload waits for a worker's answer before it gives up on it (a build opens every source). */
const RELOAD_ANSWER_MS = 120_000;

type Reloaded = Extract<ToPrimary, { type: 'reloaded' }>;

/** No worker could start (the port is taken, say): the one line that says why. */
export class WorkerStartError extends Error {
  override name = 'WorkerStartError';
}

/**
 * Forks `count` workers. Resolves (with the service's reloader) when the first of them listens; rejects when a
 * worker dies before any has listened, since whatever stopped it (a port in use, no permission) would stop every
 * replacement too.
 */
export function runPrimary(initial: LoadedConfig, count: number): Promise<ServiceReloader> {
  // Read once: every worker, replacements included, starts with the flags of the configuration the service started with.
  // The channel's advanced serialization (structured clone) carries bytes as bytes: an expiry batch's parts (8 MB
  // for a million tiles) would otherwise travel as base64 inside JSON text (cluster/expire-relay.ts). Every other
  // message is plain data, which both serializations carry alike.
  cluster.setupPrimary({ serialization: 'advanced', execArgv: workerExecArgv(process.execArgv, process.env.NODE_OPTIONS, startValues(initial.config).server.semi_space_mb) });
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
  /** The configuration hash each worker runs (from its fork, then from its answers to reloads). */
  const runs = new Map<Worker, string>();
  /** Reloads waiting for answers, by message id. */
  const asked = new Map<number, { waiting: Set<Worker>; answers: Map<Worker, Reloaded>; settle: () => void }>();
  let lastId = 0;

  /**
   * Workers that have said `ready`. Messages go to a worker only after that: one sent while it is still loading
   * arrives before it listens for messages, and is dropped.
   */
  const ready = new Set<Worker>();
  /** Brings a worker that missed a reload (it was starting) to the active configuration; nobody waits for it. */
  const sendReload = (w: Worker) => w.send({ type: 'reload', id: 0, loaded, flush: false } satisfies ToWorker);

  /** Asks `targets` to adopt `next`; resolves with their answers (a worker that exits meanwhile is left out). */
  const ask = (targets: Worker[], next: LoadedConfig, flush: boolean): Promise<Map<Worker, Reloaded>> => {
    const id = ++lastId;
    return new Promise((resolve, reject) => {
      const entry = { waiting: new Set(targets), answers: new Map<Worker, Reloaded>(), settle: () => {} };
      const timer = setTimeout(() => {
        asked.delete(id);
        reject(new Error(`worker process${entry.waiting.size > 1 ? 'es' : ''} ${[...entry.waiting].map((w) => w.id).join(', ')} did not answer the reload within ${RELOAD_ANSWER_MS / 1000} s`));
      }, RELOAD_ANSWER_MS);
      entry.settle = () => {
        if (entry.waiting.size) return;
        clearTimeout(timer);
        asked.delete(id);
        resolve(entry.answers);
      };
      asked.set(id, entry);
      for (const w of targets) w.send({ type: 'reload', id, loaded: next, flush } satisfies ToWorker);
      entry.settle();
    });
  };

  const apply: ApplyReload = async (next, flush) => {
    const targets = [...ready].filter((w) => w.isConnected());
    if (targets.length === 0) {
      // No worker to try it (all are being replaced): open it here, since replacements are forked with it.
      if (next.hash !== loaded.hash || flush) await buildAppState(next).then((probe) => probe.close());
      loaded = next;
      return [];
    }
    const answers = await ask(targets, next, flush);
    const failures = [...answers].filter(([, a]) => !a.ok);
    if (failures.length) {
      // Every process runs one configuration: the ones that adopted it go back to the active one.
      const took = [...answers].filter(([, a]) => a.ok && a.reloaded).map(([w]) => w);
      if (took.length) log.warn({ failed: failures.map(([w]) => w.id), returning: took.map((w) => w.id) }, 'reload: not every process could build the new state; the ones that did return to the previous one');
      if (took.length) await ask(took, loaded, false).catch((err: Error) => log.error({ err: err.message }, 'reload: a worker could not return to the previous configuration'));
      throw new Error(failures.map(([w, a]) => `process ${w.id}: ${a.error ?? 'failed'}`).join('; '));
    }
    loaded = next;
    // A worker that became ready during the reload was started with the configuration before it.
    for (const w of ready) if (!answers.has(w) && runs.get(w) !== loaded.hash) sendReload(w);
    return [...answers.values()].map((a): ProcessReloaded => ({ reloaded: a.reloaded, figures: a.figures! }));
  };
  const reloader = new ServiceReloader(initial, apply, log);
  /** What each worker process reports as not ready; a worker that has not reported yet is starting. */
  const notReady = new Map<number, string[]>();
  const sendReadiness = () => {
    const msg: ToWorker = { type: 'readiness', notReady: Object.fromEntries([...notReady].map(([id, items]) => [String(id), items])) };
    for (const w of ready.keys()) if (w.isConnected()) w.send(msg);
  };

  // The machine's expiries (expire/machine.ts): read from the journal before any worker starts, taken here from
  // the admin listener, the workers and the fleet, and handed to every worker.
  let relay: PrimaryExpireRelay | undefined;
  const machine = startMachineExpiries(initial.config, log, (batch, encoded, written) => relay?.toWorkers(batch, encoded, written), () => reloader.active.config);
  relay = new PrimaryExpireRelay((batch) => machine.hub.take(batch, 'worker'), log);
  const expireRelay = relay;

  /** The cluster's uploads: relayed between workers, handed to each new one. */
  const uploads = new UploadRelay(() => ready.keys(), log);

  // Render ownership (render/peers.ts): each worker holds a slot, and a replacement takes the slot of the worker it
  // replaces, so that tiles keep their owner across crashes.
  const slots: (Worker | undefined)[] = new Array(count).fill(undefined);
  const peerName = `tileserver-ts-${process.pid}-${randomBytes(4).toString('hex')}`;
  const peerToken = randomBytes(16).toString('hex');

  const fork = (): Worker => {
    const forkedWith = loaded.hash;
    const uploadsAt = uploads.version;
    let slot = slots.findIndex((w) => w === undefined);
    if (slot < 0) slot = slots.length;
    const link: PeerLink = { slot, count, name: peerName, token: peerToken };
    const peerEnv = count > 1 ? { [PEER_ENV]: JSON.stringify(link) } : {};
    const worker = cluster.fork({ [CONFIG_ENV]: JSON.stringify(loaded), ...uploads.forkEnv(), ...peerEnv });
    slots[slot] = worker;
    expireRelay.forked(worker);
    runs.set(worker, forkedWith);
    notReady.set(worker.id, ['starting']);
    // A message sent to a worker that has just died (before its exit is seen) fails with EPIPE, emitted as an
    // 'error' on the worker: unhandled, it would end the primary and with it the whole service.
    worker.on('error', (err) => log.warn({ worker: worker.id, err: err.message }, 'message to a worker failed'));
    sendReadiness();
    worker.on('message', (msg: ToPrimary) => {
      if (uploads.onMessage(worker, msg)) return;
      if (expireRelay.onMessage(worker, msg)) return;
      if (msg.type === 'readiness') {
        notReady.set(worker.id, msg.notReady);
        sendReadiness();
      }
      if (msg.type === 'reloaded') {
        if (msg.ok && msg.figures) runs.set(worker, msg.figures.config_hash);
        if (!msg.ok) log.error({ worker: worker.id, error: msg.error }, 'worker kept its previous configuration');
        const entry = asked.get(msg.id);
        if (entry?.waiting.delete(worker)) {
          entry.answers.set(worker, msg);
          entry.settle();
        }
      }
      if (msg.type === 'failed') startError ??= msg.error;
      if (msg.type === 'ready') {
        ready.add(worker);
        // A SIGHUP came while it was starting: it has the older configuration.
        if (forkedWith !== loaded.hash) sendReload(worker);
        // Uploads came or went while it was starting.
        uploads.syncIfStale(worker, uploadsAt);
      }
    });
    worker.once('exit', () => {
      if (slots[slot] === worker) slots[slot] = undefined;
      ready.delete(worker);
      runs.delete(worker);
      for (const entry of asked.values()) if (entry.waiting.delete(worker)) entry.settle();
      uploads.onExit(worker);
      expireRelay.exited(worker);
      notReady.delete(worker.id);
      sendReadiness();
    });
    return worker;
  };

  // Only the service's own TCP listener counts: each worker also listens on a Unix socket for its render peers
  // (render/peers.ts, address type -1), which says nothing about whether the service's port could be bound.
  cluster.on('listening', (_worker, address) => {
    if ((address.addressType as unknown) === -1) return;
    if (up) return;
    up = true;
    started.resolve();
  });

  cluster.on('exit', (worker, code, signal) => {
    if (failed) return;
    if (stopping) {
      if (Object.keys(cluster.workers ?? {}).length === 0) void machine.close().finally(() => process.exit(0));
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
    if (workers.length === 0) void machine.close().finally(() => process.exit(0));
    // A signal, not a message: it cannot be lost while a worker is still loading (the default action then
    // ends it, with nothing in flight); a running worker drains on it.
    for (const w of workers) w?.process.kill('SIGTERM');
  };
  process.on('SIGTERM', stop);
  process.on('SIGINT', stop);

  // The machine's rate-limit buckets live here; it listens before any worker can ask (limits/cluster.ts).
  serveClusterLimits();
  for (let i = 0; i < count; i++) fork();

  // The reloader logs the outcome (and why a failed one failed).
  process.on('SIGHUP', () => void reloader.reload(false, 'SIGHUP'));

  return startup.then(() => reloader);
}
