// Expiry batches between the primary (the machine's hub, expire/machine-hub.ts) and its workers. The primary
// sends every batch the machine takes to each worker, in parts (expire/parts.ts); a worker sends the batches born
// in it (a replaced archive found while it builds its state) to the primary, having applied them itself.
//
// A worker starting (or replacing one that crashed) catches up in two steps: it first listens for batches and
// says so (`expire-listening`), then reads the journal before it serves. The primary keeps, from the fork on,
// what it would have sent to that worker, together with the batches not yet written to the journal when it
// forked (the worker may read the file before their writes end), and sends them on `expire-listening`. Whatever
// the journal and these both hold is applied once (batch ids). A batch leaves that set once its write ends: a
// million-tile batch is not held for the next 32 batches, as it was (its 8 MB on top of the index's 12).
//
// The primary keeps a batch it sends as its encoded pieces (its header, and a view of its keys: no copy), and sends
// each worker one part at a time (the next once the last is written to the channel). A part's bytes travel as
// bytes: the cluster's channel uses Node's advanced serialization (primary.ts), which writes a Buffer as its raw
// bytes and reads it back as one. With the JSON channel a part was a base64 string and again a JSON string in the
// primary (2.8 MB a part, 45 MB for a million-tile batch sent to two workers, all garbage waiting for a full
// collection), and a JSON parse and a base64 decode in each worker.
import type { Worker } from 'node:cluster';
import type { ExpiryBatch } from '../expire/batch.js';
import { encodeBatchPieces, type EncodedBatch } from '../expire/batch.js';
import { expiries } from '../expire/expiries.js';
import { stamp, type ExpiryHub, type NewBatch } from '../expire/hub.js';
import { batchParts, PartAssembler } from '../expire/parts.js';
import { expiryMetrics } from '../expire/metrics.js';
import type { Logger } from '../log.js';
import type { ExpirePart, ToPrimary, ToWorker } from './messages.js';

/** Batches kept for a worker that forks now at most (their journal writes have not ended, or failed). */
const RECENT = 32;

/** A batch on its way to the workers: its parts are made as they are sent. */
interface Outgoing {
  id: string;
  parts: Buffer[];
}

const outgoing = (batch: ExpiryBatch, encoded: EncodedBatch): Outgoing => ({ id: batch.id, parts: batchParts(encoded) });

const message = (o: Outgoing, i: number): ExpirePart => ({ type: 'expire', id: o.id, part: i, parts: o.parts.length, data: o.parts[i] });

function received(assembler: PartAssembler, msg: ExpirePart): ExpiryBatch | undefined {
  // Anything but bytes (a channel that is not the advanced one turns a Buffer into `{type, data}`) is no part.
  if (!(msg.data instanceof Uint8Array)) throw new Error('a part whose data is not bytes');
  const data = Buffer.isBuffer(msg.data) ? msg.data : Buffer.from(msg.data.buffer, msg.data.byteOffset, msg.data.byteLength);
  return assembler.add({ id: msg.id, part: msg.part, parts: msg.parts, data });
}

/** The primary's side. */
export class PrimaryExpireRelay {
  private readonly live = new Set<Worker>();
  private readonly pending = new Map<Worker, Outgoing[]>();
  private readonly assemblers = new Map<Worker, PartAssembler>();
  private readonly recent: Outgoing[] = [];
  /** What each live worker has still to be sent, the first batch's next part first. */
  private readonly queues = new Map<Worker, { queue: Outgoing[]; next: number; sending: boolean }>();

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
  toWorkers(batch: ExpiryBatch, encoded: EncodedBatch, written: Promise<boolean>): void {
    const o = outgoing(batch, encoded);
    this.recent.push(o);
    if (this.recent.length > RECENT) this.recent.shift();
    // A batch the journal holds is read there by a worker forked from now on. (One whose write failed stays
    // until RECENT later batches push it out.)
    void written.then((ok) => {
      const i = this.recent.indexOf(o);
      if (ok && i >= 0) this.recent.splice(i, 1);
    });
    for (const list of this.pending.values()) list.push(o);
    for (const w of this.live) this.send(w, o);
  }

  exited(w: Worker): void {
    this.live.delete(w);
    this.pending.delete(w);
    this.assemblers.delete(w);
    this.queues.delete(w);
  }

  private send(w: Worker, o: Outgoing): void {
    let q = this.queues.get(w);
    if (!q) this.queues.set(w, (q = { queue: [], next: 0, sending: false }));
    q.queue.push(o);
    if (!q.sending) this.pump(w, q);
  }

  /** Sends the next part to `w`, and the one after it once that is written; in order, batch after batch. */
  private pump(w: Worker, q: { queue: Outgoing[]; next: number; sending: boolean }): void {
    const o = q.queue[0];
    if (!o || this.queues.get(w) !== q || !w.isConnected()) {
      q.sending = false;
      return;
    }
    q.sending = true;
    const msg = message(o, q.next);
    if (++q.next === o.parts.length) {
      q.queue.shift();
      q.next = 0;
    }
    w.send(msg satisfies ToWorker, undefined, {}, (err) => {
      // A worker gone meanwhile: its queue goes with it (exited).
      if (err) q.sending = false;
      else this.pump(w, q);
    });
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
    const o = outgoing(stamped, encodeBatchPieces(stamped));
    for (let i = 0; i < o.parts.length; i++) this.send(message(o, i));
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
