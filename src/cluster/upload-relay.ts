// The primary's part in uploads: it keeps the cluster's list of uploads, relays an upload (or a removal) one
// worker received to every other ready worker, collects their answers and tells the first worker the outcome.
// A worker forked later gets the list in its environment; one whose list went stale while it started is sent
// the current list once it is ready.
import type { Worker } from 'node:cluster';
import type { Logger } from '../log.js';
import type { UploadRecord } from '../uploads/registry.js';
import { UPLOADS_ENV, type ToPrimary, type ToWorker } from './messages.js';

/** How long a worker may take to open (or drop) an upload before the upload counts as failed. */
const ANSWER_TIMEOUT_MS = 60_000;

type Answer = { ok: boolean; error?: string };
type UploadAsk = { type: 'upload-add'; upload: UploadRecord } | { type: 'upload-remove'; id: string };

export class UploadRelay {
  private readonly uploads = new Map<string, UploadRecord>();
  /** Bumped on every change of the list: a worker forked at an older version is sent the list when ready. */
  version = 0;
  private nextRequest = 0;
  private readonly waiting = new Map<number, { worker: Worker; done: (a: Answer) => void }>();

  constructor(
    /** The workers that have said `ready` (messages reach only those). */
    private readonly ready: () => Iterable<Worker>,
    private readonly log: Logger,
  ) {}

  /** The environment of a worker forked now. */
  forkEnv(): Record<string, string> {
    return { [UPLOADS_ENV]: JSON.stringify([...this.uploads.values()]) };
  }

  /** Handles a worker's upload message; false for every other message. */
  onMessage(worker: Worker, msg: ToPrimary): boolean {
    switch (msg.type) {
      case 'upload-added':
        void this.added(worker, msg.request, msg.upload);
        return true;
      case 'upload-removed':
        void this.removed(worker, msg.request, msg.id);
        return true;
      case 'upload-applied': {
        const w = this.waiting.get(msg.request);
        if (w?.worker === worker) w.done({ ok: msg.ok, error: msg.error });
        return true;
      }
      default:
        return false;
    }
  }

  /** A worker exited: it answers nothing more. Its replacement is forked with the list, so it counts as done. */
  onExit(worker: Worker): void {
    for (const w of [...this.waiting.values()]) if (w.worker === worker) w.done({ ok: true });
  }

  /** A worker forked at `forkedAt` said `ready`: when the list changed since, it gets the current one. */
  syncIfStale(worker: Worker, forkedAt: number): void {
    if (forkedAt !== this.version && worker.isConnected()) worker.send({ type: 'upload-sync', uploads: [...this.uploads.values()] } satisfies ToWorker);
  }

  private ask(worker: Worker, what: UploadAsk): Promise<Answer> {
    const request = ++this.nextRequest;
    return new Promise<Answer>((resolve) => {
      const timer = setTimeout(() => done({ ok: false, error: `no answer within ${ANSWER_TIMEOUT_MS} ms` }), ANSWER_TIMEOUT_MS);
      const done = (a: Answer) => {
        clearTimeout(timer);
        this.waiting.delete(request);
        resolve(a);
      };
      this.waiting.set(request, { worker, done });
      if (!worker.isConnected()) return done({ ok: true });
      worker.send({ ...what, request } satisfies ToWorker);
    });
  }

  /** Asks every ready worker but `origin`; the answers with the worker that gave each. */
  private askOthers(origin: Worker, what: UploadAsk): Promise<{ worker: Worker; answer: Answer }[]> {
    const others = [...this.ready()].filter((w) => w !== origin && w.isConnected());
    return Promise.all(others.map(async (worker) => ({ worker, answer: await this.ask(worker, what) })));
  }

  private reply(origin: Worker, request: number, answer: Answer): void {
    if (origin.isConnected()) origin.send({ type: 'upload-done', request, ...answer } satisfies ToWorker);
  }

  private async added(origin: Worker, request: number, upload: UploadRecord): Promise<void> {
    // Listed before the relay: a worker forked meanwhile starts with it (or is told otherwise when ready).
    this.uploads.set(upload.id, upload);
    this.version++;
    const answers = await this.askOthers(origin, { type: 'upload-add', upload });
    const failed = answers.filter((a) => !a.answer.ok);
    if (failed.length === 0) return this.reply(origin, request, { ok: true });
    const error = failed.map((f) => `worker ${f.worker.id}: ${f.answer.error ?? 'failed'}`).join('; ');
    this.log.error({ upload: upload.id, error }, 'uploads: a worker could not open an upload; removing it everywhere');
    this.uploads.delete(upload.id);
    this.version++;
    await Promise.all(answers.filter((a) => a.answer.ok).map((a) => this.ask(a.worker, { type: 'upload-remove', id: upload.id })));
    this.reply(origin, request, { ok: false, error });
  }

  private async removed(origin: Worker, request: number, id: string): Promise<void> {
    this.uploads.delete(id);
    this.version++;
    const failed = (await this.askOthers(origin, { type: 'upload-remove', id })).filter((a) => !a.answer.ok);
    const error = failed.map((f) => `worker ${f.worker.id}: ${f.answer.error ?? 'failed'}`).join('; ');
    this.reply(origin, request, failed.length ? { ok: false, error } : { ok: true });
  }
}
