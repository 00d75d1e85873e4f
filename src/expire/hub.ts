// Where an expiry enters the service. Whatever its input (the admin listener, NOTIFY, a replaced archive), a new
// batch is handed to the process's hub, which stamps it (id, time), applies it here and spreads it. This file
// holds the interface and the hub of a process alone; the hubs of a cluster and of a fleet replace it at start.
import { hostname } from 'node:os';
import type { ExpiryBatch } from './batch.js';
import { expiries } from './expiries.js';
import { expiryMetrics } from './metrics.js';

/**
 * A batch before it is accepted: the hub gives it its time, and its id unless it has one. An input that every
 * process (and machine) finds on its own, such as a replaced archive, names it so: the same change found by N
 * processes is then applied once.
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

/** The hub of a process that spreads nothing: applies here only. */
export class LocalHub implements ExpiryHub {
  async accept(batch: NewBatch): Promise<ExpiryBatch> {
    const stamped: ExpiryBatch = { ...batch, id: batch.id ?? newBatchId(), at: Date.now() };
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
