// Expiry batches between the primary (the machine's hub, expire/machine-hub.ts) and its workers. The primary
// sends every batch the machine takes to each worker, in parts (expire/parts.ts); a worker sends the batches born
// in it (a replaced archive found while it builds its state) to the primary, having applied them itself.
//
// A worker starting (or replacing one that crashed) catches up in two steps: it first listens for batches and
// says so (`expire-listening`), then reads the journal before it serves. The primary keeps, from the fork on,
// what it would have sent to that worker, together with its last few batches (their journal writes may still be
// under way when the worker reads), and sends them on `expire-listening`. Whatever the journal and these both
// hold is applied once (batch ids).
import type { Worker } from 'node:cluster';
import type { ExpiryBatch } from '../expire/batch.js';
import { encodeBatch } from '../expire/batch.js';
import { expiries } from '../expire/expiries.js';
import { stamp, type ExpiryHub, type NewBatch } from '../expire/hub.js';
import { PartAssembler, splitParts } from '../expire/parts.js';
import { expiryMetrics } from '../expire/metrics.js';
import type { Logger } from '../log.js';
import type { ExpirePart, ToPrimary, ToWorker } from './messages.js';

/** Batches kept for a worker that forks now (their journal writes may not have reached the disk). */
const RECENT = 32;

function partsOf(batch: ExpiryBatch, encoded: Buffer): ExpirePart[] {
  const parts = splitParts(encoded);
  return parts.map((p, i) => ({ type: 'expire', id: batch.id, part: i, parts: parts.length, data: p.toString('base64') }));
}

function received(assembler: PartAssembler, msg: ExpirePart): ExpiryBatch | undefined {
  return assembler.add({ id: msg.id, part: msg.part, parts: msg.parts, data: Buffer.from(msg.data, 'base64') });
}

/** The primary's side. */
export class PrimaryExpireRelay {
  private readonly live = new Set<Worker>();
  private readonly pending = new Map<Worker, ExpirePart[][]>();
  private readonly assemblers = new Map<Worker, PartAssembler>();
  private readonly recent: ExpirePart[][] = [];

  constructor(
    /** The machine hub's `take` for a batch a worker accepted. */
    private readonly take: (batch: ExpiryBatch) => void,
    private readonly log: Logger,
  ) {}

  /** A worker was forked: it gets the recent batches and everything from now on once it listens. */
  forked(w: Worker): void {
    this.pending.set(w, [...this.recent]);
  }

  /** Handles an expiry message of `w` (true), or leaves it to others (false). */
  onMessage(w: Worker, msg: ToPrimary): boolean {
    if (msg.type === 'expire-listening') {
      const missed = this.pending.get(w) ?? [];
      this.pending.delete(w);
      this.live.add(w);
      for (const parts of missed) this.send(w, parts);
      return true;
    }
    if (msg.type !== 'expire') return false;
    let a = this.assemblers.get(w);
    if (!a) this.assemblers.set(w, (a = new PartAssembler()));
    try {
      const batch = received(a, msg);
      if (batch) this.take(batch);
    } catch (err) {
      this.log.warn({ worker: w.id, err: (err as Error).message }, 'expiry relay: a worker sent a part that is not a batch');
    }
    return true;
  }

  /** Hands a batch the machine took to every worker (the one it came from drops it by its id). */
  toWorkers(batch: ExpiryBatch, encoded: Buffer): void {
    const parts = partsOf(batch, encoded);
    this.recent.push(parts);
    if (this.recent.length > RECENT) this.recent.shift();
    for (const list of this.pending.values()) list.push(parts);
    for (const w of this.live) this.send(w, parts);
  }

  exited(w: Worker): void {
    this.live.delete(w);
    this.pending.delete(w);
    this.assemblers.delete(w);
  }

  private send(w: Worker, parts: ExpirePart[]): void {
    if (!w.isConnected()) return;
    for (const p of parts) w.send(p satisfies ToWorker);
  }
}

/** A worker's hub: applies a batch here at once and hands it to the primary, which spreads it. */
export class WorkerExpiryHub implements ExpiryHub {
  private readonly assembler = new PartAssembler();

  constructor(
    private readonly send: (msg: ToPrimary) => void,
    private readonly log: Logger,
  ) {}

  async accept(batch: NewBatch): Promise<ExpiryBatch> {
    const stamped = stamp(batch);
    // Counted by the machine's hub when it takes the batch (once, however many workers found it).
    expiries.apply(stamped);
    for (const p of partsOf(stamped, encodeBatch(stamped))) this.send(p);
    return stamped;
  }

  /** Starts applying the primary's batches, and asks for the ones it missed since the fork. */
  listen(): void {
    process.on('message', (msg: ToWorker) => {
      if (msg.type !== 'expire') return;
      try {
        const batch = received(this.assembler, msg);
        if (batch) expiries.apply(batch);
      } catch (err) {
        this.log.warn({ err: (err as Error).message }, 'expiry relay: the primary sent a part that is not a batch');
      }
    });
    this.send({ type: 'expire-listening' });
  }
}
