// What the machine's hub does, for the metrics (telemetry/expire-metrics.ts subscribes in the hub's process).
import { EventEmitter } from 'node:events';

interface Events {
  /** A batch of another machine arrived from the fleet stream; `lagMs`: from its acceptance there to now. */
  received: [lagMs: number];
  /** Batches waiting in the outbox for Redis now. */
  outbox: [batches: number];
  /** A batch dropped from a full outbox (never published). */
  dropped: [];
  /** Entries trimmed from the stream before this machine read them. */
  lost: [];
  /** The journal's size now (bytes). */
  journal: [bytes: number];
}

export const machineMetrics = new EventEmitter<Events>();
