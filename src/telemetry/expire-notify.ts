// The counters of the database listener (expire/notify.ts), read at each scrape from what it counted. They exist
// in the process that listens (the only one, or the cluster's primary, whose scrape adds them to the workers' sum).
import { Counter, type Registry } from 'prom-client';
import { notifyCounts } from '../expire/notify.js';

export function registerNotifyMetrics(registers: Registry[]): void {
  new Counter({
    name: 'expire_notify_rejected_total',
    help: 'NOTIFY payloads on [postgres] expire_channel that were ignored, by reason (not_json, shape, bbox, unknown_table, unknown_source, tile)',
    labelNames: ['reason'],
    registers,
    collect() {
      this.reset();
      for (const [reason, n] of notifyCounts.rejected) this.inc({ reason }, n);
    },
  });
  new Counter({
    name: 'expire_notify_sessions_total',
    help: 'The LISTEN session of [postgres] expire_channel: lost, and back after a loss or a failed attempt',
    labelNames: ['event'],
    registers,
    collect() {
      this.reset();
      for (const [event, n] of notifyCounts.connection) this.inc({ event }, n);
    },
  });
}
