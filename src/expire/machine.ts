// The expiries of a machine set up at start, in the process holding the admin listener: the journal (read, then
// appended), the machine hub installed as the process's hub, and the fleet stream when `[cache] shared` is set.
import { resolvedCacheDir } from '../config/paths.js';
import type { Config } from '../config/schema.js';
import type { Logger } from '../log.js';
import type { EncodedBatch, ExpiryBatch } from './batch.js';
import { expiries } from './expiries.js';
import { FleetStream } from './fleet.js';
import { setExpiryHub, stamp } from './hub.js';
import { ALL_ZOOMS } from './area-times.js';
import { everySource } from './targets.js';
import { ExpiryJournal } from './journal.js';
import { MachineHub } from './machine-hub.js';
import { machineFigures } from './machine-metrics.js';

export interface MachineExpiries {
  hub: MachineHub;
  journal: ExpiryJournal;
  fleet: FleetStream | undefined;
  close(): Promise<void>;
}

/**
 * `toWorkers`: how a cluster's primary hands each batch to its workers (absent in a single process); `current`: the
 * configuration in force (after reloads), whose sources are expired whole when the fleet's stream lost entries.
 */
export function startMachineExpiries(config: Config, log: Logger, toWorkers?: (batch: ExpiryBatch, encoded: EncodedBatch, written: Promise<boolean>) => void, current: () => Config = () => config): MachineExpiries {
  expiries.maxTiles = config.cache.expiry_max_tiles;
  const journal = new ExpiryJournal(resolvedCacheDir({ config }), expiries, config.cache.expiry_journal_max_mb * 2 ** 20, log, (bytes) => (machineFigures.journalBytes = bytes));
  const hub = new MachineHub(journal, { workers: toWorkers });
  let fleet: FleetStream | undefined;
  if (config.cache.shared !== undefined) {
    // Taken as from the fleet: applied on this machine (its processes, its journal), never published to the others.
    const lost = () => void hub.take(stamp({ sources: everySource(current()), tiles: new Float64Array([0]), band: ALL_ZOOMS, input: 'reconnect', lines: 0 }), 'fleet');
    fleet = new FleetStream(config.cache.shared, config.cache.shared_timeout_ms, journal, (batch) => hub.take(batch, 'fleet'), log, lost);
    const link = fleet;
    hub.outlets.fleet = (batch, encoded) => link.publish(batch, encoded);
    void link.start().catch((err: Error) => log.error({ err: err.message }, 'expiry fleet: cannot start'));
  }
  setExpiryHub(hub);
  return {
    hub,
    journal,
    fleet,
    async close() {
      await fleet?.close();
      await journal.close();
    },
  };
}
