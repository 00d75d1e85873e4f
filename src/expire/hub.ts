// Where an expiry enters the service. Whatever its input (the admin listener, NOTIFY, a replaced archive), a new
// batch is handed to the process's hub, which stamps it (id, time), applies it here and spreads it. This file
// holds the interface and the hub of a process alone; the hubs of a cluster and of a fleet replace it at start.
import { hostname } from 'node:os';
import type { ExpiryBatch } from './batch.js';
import { expiries } from './expiries.js';
import { expiryMetrics } from './metrics.js';

/**
 * A batch before it is accepted: the hub gives it its time and its id. An input may name the change (a replaced
 * archive does): the name starts the id, which stays unique to the process. Every process that finds the same
 * change spreads its own batch on purpose: a worker that swaps to the new archive later than another may draw
 * from the old one until it does, and only its own batch, stamped at its own swap, covers those tiles.
 */
export type NewBatch = Omit<ExpiryBatch, 'id' | 'at'> & { id?: string };

export interface ExpiryHub {
  /** Stamps, applies in this process and spreads a batch; resolves with it once it is applied here. */
  accept(batch: NewBatch): Promise<ExpiryBatch>;
}

let counter = 0;

/** An id no other process of the fleet gives: the host, the process, its start and a counter. */
export function newBatchId(): string {
  return `${hostname()}:${process.pid}:${STARTED}:${++counter}`;
}

const STARTED = Date.now().toString(36);

/** A new batch with its id and the time it is accepted at. */
export function stamp(batch: NewBatch): ExpiryBatch {
  return { ...batch, id: batch.id === undefined ? newBatchId() : `${batch.id}@${newBatchId()}`, at: Date.now() };
}

/** The hub of a process that spreads nothing: applies here only. */
export class LocalHub implements ExpiryHub {
  async accept(batch: NewBatch): Promise<ExpiryBatch> {
    const stamped = stamp(batch);
    expiries.apply(stamped);
    expiryMetrics.emit('accepted', stamped);
    return stamped;
  }
}

let current: ExpiryHub = new LocalHub();

/** The process's hub (like `sharedCache`, one per process). */
export function expiryHub(): ExpiryHub {
  return current;
}

/** Installs the hub of this process (cluster/fleet start-up). */
export function setExpiryHub(hub: ExpiryHub): void {
  current = hub;
}
