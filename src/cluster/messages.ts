// Messages between the primary process and its HTTP workers.
import type { LoadedConfig } from '../config/load.js';
import type { StateFigures } from '../state/reload-result.js';
import type { UploadRecord } from '../uploads/registry.js';

/** Workers are stopped with SIGTERM, not a message (see primary.ts). */
export type ToWorker =
  /** Adopt `loaded` (a build unless the hash is the active one and not `flush`); answered by `reloaded` with the same id. */
  | { type: 'reload'; id: number; loaded: LoadedConfig; flush: boolean }
  /** What is not ready in each worker process (by worker id), for every process's /ready. */
  | { type: 'readiness'; notReady: Record<string, string[]> }
  /** Serve (open) an upload another worker received; answered with `upload-applied` of the same `request`. */
  | { type: 'upload-add'; request: number; upload: UploadRecord }
  /** Stop serving an upload; answered with `upload-applied`. */
  | { type: 'upload-remove'; request: number; id: string }
  /** The answer to this worker's `upload-added` / `upload-removed`: every other worker has (or has not) followed. */
  | { type: 'upload-done'; request: number; ok: boolean; error?: string }
  /** The cluster's uploads now: a worker that started while they changed catches up (adds and drops). */
  | { type: 'upload-sync'; uploads: UploadRecord[] }
  /** One part of an expiry batch the machine accepted (cluster/expire-relay.ts). */
  | ExpirePart;
export type ToPrimary =
  | { type: 'ready' }
  /** What is not ready in this process now (empty: ready); sent when it changes. */
  | { type: 'readiness'; notReady: string[] }
  | { type: 'reloaded'; id: number; ok: boolean; reloaded: boolean; figures?: StateFigures; error?: string }
  /** The worker could not start (one line); it exits after sending this. */
  | { type: 'failed'; error: string }
  /** This worker received and serves an upload: every other worker should serve it too. */
  | { type: 'upload-added'; request: number; upload: UploadRecord }
  /** This worker removed an upload: every other worker should drop it too. */
  | { type: 'upload-removed'; request: number; id: string }
  /** The answer to the primary's `upload-add` / `upload-remove` of the same `request`. */
  | { type: 'upload-applied'; request: number; ok: boolean; error?: string }
  /** This worker listens for expiry batches: the primary sends it what it missed since it was forked. */
  | { type: 'expire-listening' }
  /** One part of an expiry batch accepted in this worker: the primary takes it into the machine. */
  | ExpirePart;

/** A part of an encoded expiry batch (src/expire/parts.ts), its bytes as bytes (the channel's advanced serialization). */
export interface ExpirePart {
  type: 'expire';
  id: string;
  part: number;
  parts: number;
  data: Uint8Array;
}

/** Environment variable carrying the validated configuration to a forked worker. */
export const CONFIG_ENV = 'TILESERVER_TS_LOADED_CONFIG';

/** Environment variable carrying the cluster's current uploads (JSON UploadRecord[]) to a forked worker. */
export const UPLOADS_ENV = 'TILESERVER_TS_UPLOADS';
