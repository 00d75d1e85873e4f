// Hooks for the storage metrics (storage_reads_total, storage_read_bytes_total, storage_errors_total, by
// source): the shared reader reports every request it makes to a store here; the telemetry subscribes and
// turns the events into prom-client/OTLP instruments, as it does for the render metrics.
import { EventEmitter } from 'node:events';
import type { Provider } from '../../config/object-location.js';
import type { StoreFailure } from './store.js';

export interface StorageRead {
  source: string;
  provider: Provider;
  bytes: number;
}

export interface StorageFailure {
  source: string;
  provider: Provider;
  kind: StoreFailure | 'timeout';
}

interface Events {
  read: [StorageRead];
  failure: [StorageFailure];
}

export const storageMetrics = new EventEmitter<Events>();
