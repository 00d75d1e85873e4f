// A worker's part in uploads (src/cluster/upload-relay.ts is the primary's): tells the primary about an upload
// this worker received or removed and waits for every other worker to follow; opens or drops the uploads other
// workers received when the primary relays them.
import type { Logger } from '../log.js';
import type { UploadRecord, UploadRegistry } from '../uploads/registry.js';
import type { UploadPeers } from '../uploads/service.js';
import { UPLOADS_ENV, type ToPrimary, type ToWorker } from './messages.js';

/** Longer than the primary's own wait for each worker, so its answer (a failure, say) arrives first. */
const DONE_TIMEOUT_MS = 90_000;

/** The uploads a forked worker starts with (from its environment). */
export function uploadsFromEnv(env: NodeJS.ProcessEnv = process.env): UploadRecord[] {
  const text = env[UPLOADS_ENV];
  return text ? (JSON.parse(text) as UploadRecord[]) : [];
}

export class ClusterUploadPeers implements UploadPeers {
  private nextRequest = 0;
  private readonly waiting = new Map<number, (answer: { ok: boolean; error?: string }) => void>();
  private registry: UploadRegistry | undefined;
  /**
   * The primary's upload messages, applied one after the other in the order they came: an open takes a while,
   * and a removal that overtook it (a sync being applied, then a delete) would leave the upload served.
   */
  private applying: Promise<void> = Promise.resolve();

  constructor(
    private readonly send: (msg: ToPrimary) => void,
    private readonly log: Logger,
  ) {}

  /** The registry relayed uploads go to; set once the server has started (relays come only after `ready`). */
  attach(registry: UploadRegistry): void {
    this.registry = registry;
  }

  added(record: UploadRecord): Promise<void> {
    return this.ask((request) => ({ type: 'upload-added', request, upload: record }));
  }

  removed(id: string): Promise<void> {
    return this.ask((request) => ({ type: 'upload-removed', request, id }));
  }

  private ask(make: (request: number) => ToPrimary): Promise<void> {
    const request = ++this.nextRequest;
    return new Promise<void>((resolve, reject) => {
      const timer = setTimeout(() => finish({ ok: false, error: `the primary did not answer within ${DONE_TIMEOUT_MS} ms` }), DONE_TIMEOUT_MS);
      const finish = (a: { ok: boolean; error?: string }) => {
        clearTimeout(timer);
        this.waiting.delete(request);
        if (a.ok) resolve();
        else reject(new Error(a.error ?? 'another worker did not follow'));
      };
      this.waiting.set(request, finish);
      this.send(make(request));
    });
  }

  /** Handles the primary's upload messages; false for every other message. */
  onMessage(msg: ToWorker): boolean {
    const registry = this.registry;
    switch (msg.type) {
      case 'upload-done':
        this.waiting.get(msg.request)?.({ ok: msg.ok, error: msg.error });
        return true;
      case 'upload-add':
        if (!registry) return true;
        this.inTurn(() =>
          registry.openAndAdd(msg.upload).then(
            () => this.send({ type: 'upload-applied', request: msg.request, ok: true }),
            (err: Error) => {
              this.log.error({ upload: msg.upload.id, err: err.message }, 'uploads: cannot open an upload another worker received');
              this.send({ type: 'upload-applied', request: msg.request, ok: false, error: err.message });
            },
          ),
        );
        return true;
      case 'upload-remove':
        this.inTurn(async () => {
          registry?.remove(msg.id);
          this.send({ type: 'upload-applied', request: msg.request, ok: true });
        });
        return true;
      case 'upload-sync':
        if (registry) this.inTurn(() => this.sync(registry, msg.uploads));
        return true;
      default:
        return false;
    }
  }

  private inTurn(step: () => Promise<void>): void {
    this.applying = this.applying.then(step).catch((err: Error) => this.log.error({ err: err.message }, 'uploads: applying a relayed change failed'));
  }

  /** Serves exactly `uploads`: opens the missing ones, drops the others. */
  private async sync(registry: UploadRegistry, uploads: UploadRecord[]): Promise<void> {
    const wanted = new Set(uploads.map((u) => u.id));
    for (const r of registry.list()) if (!wanted.has(r.id)) registry.remove(r.id);
    for (const u of uploads) {
      await registry.openAndAdd(u).catch((err: Error) => this.log.error({ upload: u.id, err: err.message }, 'uploads: cannot open an upload the cluster serves'));
    }
  }
}
