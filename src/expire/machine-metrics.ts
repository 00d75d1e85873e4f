// What the machine's hub does, for the metrics (telemetry/expire-metrics.ts subscribes in the hub's process).
import { EventEmitter } from 'node:events';

interface Events {
  /** A batch of another machine arrived from the fleet stream; `lagMs`: from its acceptance there to now. */
  received: [lagMs: number];
  /** A batch dropped from a full outbox (never published). */
  dropped: [];
  /** Entries trimmed from the stream before this machine read them. */
  lost: [];
}

export const machineMetrics = new EventEmitter<Events>();

/** Figures read when scraped (they may be set before the metrics are registered: the journal is read first). */
export const machineFigures = {
  /** The journal's size (bytes). */
  journalBytes: 0,
  /** Batches waiting in the outbox for Redis. */
  outbox: 0,
};
