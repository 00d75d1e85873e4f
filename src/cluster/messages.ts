// Messages between the primary process and its HTTP workers.
import type { LoadedConfig } from '../config/load.js';
import type { StateFigures } from '../state/reload-result.js';

/** Workers are stopped with SIGTERM, not a message (see primary.ts). */
export type ToWorker =
  /** Adopt `loaded` (a build unless the hash is the active one and not `flush`); answered by `reloaded` with the same id. */
  | { type: 'reload'; id: number; loaded: LoadedConfig; flush: boolean }
  /** What is not ready in each worker process (by worker id), for every process's /ready. */
  | { type: 'readiness'; notReady: Record<string, string[]> };
export type ToPrimary =
  | { type: 'ready' }
  /** What is not ready in this process now (empty: ready); sent when it changes. */
  | { type: 'readiness'; notReady: string[] }
  | { type: 'reloaded'; id: number; ok: boolean; reloaded: boolean; figures?: StateFigures; error?: string }
  /** The worker could not start (one line); it exits after sending this. */
  | { type: 'failed'; error: string };

/** Environment variable carrying the validated configuration to a forked worker. */
export const CONFIG_ENV = 'TILESERVER_TS_LOADED_CONFIG';
