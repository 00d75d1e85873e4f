// What the expiries report to telemetry (src/telemetry/ subscribes): each batch accepted by this process's hub,
// counted once where it entered, not in every process it reaches.
import { EventEmitter } from 'node:events';
import type { ExpiryBatch } from './batch.js';

type Events = { accepted: [ExpiryBatch] };

export const expiryMetrics = new EventEmitter<Events>();
