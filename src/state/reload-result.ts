// What a reload answers (spec, "Reload result"), and the figures of one process's active state it is made of.
import type { AppState } from './app-state.js';
import type { LoadedConfig } from '../config/load.js';

/** The active configuration of one process as a reload result reports it. */
export interface StateFigures {
  config_hash: string;
  loaded_at_unix: number;
  loaded_sources: number;
  loaded_styles: number;
  renderer_enabled: boolean;
}

export function stateFigures(state: AppState, rendererEnabled: boolean): StateFigures {
  return {
    config_hash: state.configHash,
    loaded_at_unix: state.loadedAt,
    loaded_sources: state.sources.size,
    loaded_styles: state.styles.size,
    renderer_enabled: rendererEnabled,
  };
}

/**
 * The body of `POST /__admin/reload`. Beyond the spec's fields: `restart_required` lists the settings the file
 * changes but only a restart applies (docs/operations.md), and `processes` counts the worker processes that
 * answered. On failure (`ok: false`) the figures describe the configuration that stays active.
 */
export interface ReloadResult extends StateFigures {
  ok: boolean;
  reloaded: boolean;
  version: string;
  restart_required: string[];
  processes: number;
  error?: string;
}

/** What asked for a reload: the admin route, SIGHUP, or a watched file that changed (server.watch). */
export type ReloadTrigger = 'admin' | 'SIGHUP' | 'watch';

/** Runs one reload of every process; a failure resolves `ok: false` (it never rejects). */
export interface Reloader {
  reload(flush: boolean, trigger: ReloadTrigger): Promise<ReloadResult>;
  /** The configuration the processes run now (the admin listener reads its sources). */
  readonly active: LoadedConfig;
}
