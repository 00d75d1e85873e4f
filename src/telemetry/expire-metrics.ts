// Metrics of the machine's expiry hub (the primary, or the single process): what crosses the machine's edge,
// batches from the fleet and their lag, the outbox, the journal. (Each process's index size, `expire_index_tiles`,
// is in prom.ts: summed over a cluster's workers, two workers holding the same expiries report twice one's.)
import { Counter, Gauge, Histogram, type Registry } from 'prom-client';
import { expiries } from '../expire/expiries.js';
import { expiryMetrics } from '../expire/metrics.js';
import { purgeMetrics } from '../expire/edge-purge.js';
import { machineFigures, machineMetrics } from '../expire/machine-metrics.js';

/** Lag buckets (seconds): the fleet's target is one second. */
const LAG_SECONDS = [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 15, 60];

export function registerMachineMetrics(registry: Registry): void {
  const registers = [registry];
  const received = new Counter({ name: 'expire_fleet_batches_total', help: 'Expiry batches of other machines read from the fleet stream', registers });
  const lag = new Histogram({ name: 'expire_fleet_lag_seconds', help: 'From a batch accepted at another machine to its arrival here, in seconds', buckets: LAG_SECONDS, registers });
  new Gauge({
    name: 'expire_fleet_outbox_batches',
    help: 'Expiry batches waiting for Redis to be published',
    registers,
    collect() {
      this.set(machineFigures.outbox);
    },
  });
  const dropped = new Counter({ name: 'expire_fleet_outbox_dropped_total', help: 'Expiry batches dropped from a full outbox (never published to the fleet)', registers });
  const lost = new Counter({ name: 'expire_fleet_lost_total', help: 'Times entries were trimmed from the fleet stream before this machine read them', registers });
  new Gauge({
    name: 'expire_journal_bytes',
    help: 'Size of the expiry journal on disk',
    registers,
    collect() {
      this.set(machineFigures.journalBytes);
    },
  });
  new Gauge({
    name: 'expire_hub_index_tiles',
    help: "Entries of the expiry index of the machine's hub (what the journal's compaction writes); each worker holds the same",
    registers,
    collect() {
      this.set(expiries.tiles);
    },
  });
  new Gauge({
    name: 'expire_hub_index_bytes',
    help: "Bytes of the expiry index's arrays in the machine's hub",
    registers,
    collect() {
      this.set(expiries.bytes);
    },
  });
  machineMetrics.on('received', (ms) => {
    received.inc();
    lag.observe(Math.max(0, ms) / 1000);
  });
  const expired = new Counter({
    name: 'expire_tiles_total',
    help: 'Tiles expired by the expiries this machine accepted (after expansion over their zoom band), by source and input (list, bbox, geometry, notify, archive, reconnect)',
    labelNames: ['source', 'input'],
    registers,
  });
  expiryMetrics.on('accepted', (b) => {
    const tiles = b.marked ?? b.tiles.length;
    for (const source of b.sources) expired.inc({ source, input: b.input }, tiles);
  });
  const purges = new Counter({
    name: 'edge_purge_requests_total',
    help: 'PURGE requests sent to the edge caches of [cache] purge_urls, by result (ok, refused: a non-2xx answer, failed: no answer in time or no connection)',
    labelNames: ['result'],
    registers,
  });
  purgeMetrics.on('request', (result) => purges.inc({ result }));
  machineMetrics.on('dropped', () => dropped.inc());
  machineMetrics.on('lost', () => lost.inc());
}
