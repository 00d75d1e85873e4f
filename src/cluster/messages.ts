// Messages between the primary process and its HTTP workers.
import type { LoadedConfig } from '../config/load.js';

/** Workers are stopped with SIGTERM, not a message (see primary.ts). */
export type ToWorker =
  | { type: 'reload'; loaded: LoadedConfig; flush: boolean }
  /** What is not ready in each worker process (by worker id), for every process's /ready. */
  | { type: 'readiness'; notReady: Record<string, string[]> };
export type ToPrimary =
  | { type: 'ready' }
  /** What is not ready in this process now (empty: ready); sent when it changes. */
  | { type: 'readiness'; notReady: string[] }
  | { type: 'reloaded'; ok: boolean; reloaded: boolean; error?: string }
  /** The worker could not start (one line); it exits after sending this. */
  | { type: 'failed'; error: string };

/** Environment variable carrying the validated configuration to a forked worker. */
export const CONFIG_ENV = 'TILESERVER_TS_LOADED_CONFIG';
