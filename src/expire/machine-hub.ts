// The hub of a machine: it lives in the process holding the admin listener (the cluster's primary, or the single
// process) and is where every batch of the machine passes once, whoever accepted it: a request here, a worker
// (a replaced archive found while it builds its state), or another machine (the fleet stream). Each new batch is
// applied to this process's index (the journal's compaction writes it out), appended to the journal, handed to
// the workers and, unless it came from the fleet, published to the fleet. A batch seen before (its id) stops here.
import { encodeBatchPieces, type EncodedBatch, type ExpiryBatch } from './batch.js';
import { expiries } from './expiries.js';
import { stamp, type ExpiryHub, type NewBatch } from './hub.js';
import type { ExpiryJournal } from './journal.js';
import { expiryMetrics } from './metrics.js';

/** Where a batch reached the machine's hub from. */
export type BatchOrigin = 'here' | 'worker' | 'fleet';

/** The parts of the machine a batch is handed to besides the index and the journal. */
export interface HubOutlets {
  /**
   * The workers of a cluster (each drops one it has: the worker that accepted it applied it already). `written`
   * resolves true once the batch is in the journal, where a worker starting from then on reads it.
   */
  workers?(batch: ExpiryBatch, encoded: EncodedBatch, written: Promise<boolean>): void;
  /** The other machines (the fleet stream), when `[cache] shared` is set. */
  fleet?(batch: ExpiryBatch, encoded: EncodedBatch): void;
}

export class MachineHub implements ExpiryHub {
  constructor(
    private readonly journal: ExpiryJournal,
    readonly outlets: HubOutlets = {},
  ) {}

  async accept(batch: NewBatch): Promise<ExpiryBatch> {
    const stamped = stamp(batch);
    this.take(stamped, 'here');
    return stamped;
  }

  /** Takes a stamped batch into the machine; false when the machine had it already. */
  take(batch: ExpiryBatch, from: BatchOrigin): boolean {
    if (!expiries.apply(batch)) return false;
    // Counted where it entered the fleet: here, for batches of this machine's processes.
    if (from !== 'fleet') expiryMetrics.emit('accepted', batch);
    const encoded = encodeBatchPieces(batch);
    const written = this.journal.append(batch, encoded);
    this.outlets.workers?.(batch, encoded, written);
    if (from !== 'fleet') this.outlets.fleet?.(batch, encoded);
    return true;
  }
}
