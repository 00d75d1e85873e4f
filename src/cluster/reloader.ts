// One reload of the whole service, from whichever trigger (the admin route, SIGHUP): read the file again, keep
// the settings only a restart changes, have every process build and swap its state, and answer with the spec's
// Reload result. Reloads run one at a time: a second one waits for the first, so two never interleave their
// swaps. How processes are reached differs (one process, or a primary and its workers): `apply` does it.
import type { LoadedConfig } from '../config/load.js';
import type { Logger } from '../log.js';
import type { ReloadResult, ReloadTrigger, Reloader, StateFigures } from '../state/reload-result.js';
import { rereadConfig } from '../server.js';
import { VERSION } from '../version.js';

/** What one process answered to a reload. */
export interface ProcessReloaded {
  reloaded: boolean;
  figures: StateFigures;
}

/**
 * Has every process adopt `next` (each skips the build when it already runs that hash and `flush` is false).
 * Rejects, naming the cause, when any process could not; by then no process runs `next`.
 */
export type ApplyReload = (next: LoadedConfig, flush: boolean) => Promise<ProcessReloaded[]>;

export class ServiceReloader implements Reloader {
  private chain: Promise<unknown> = Promise.resolve();

  constructor(
    private current: LoadedConfig,
    private readonly apply: ApplyReload,
    private readonly log: Logger,
  ) {}

  private readonly listeners: ((active: LoadedConfig) => void)[] = [];

  /** Calls `fn` with the configuration every process runs after each successful reload (the file watcher re-aims). */
  onActive(fn: (active: LoadedConfig) => void): void {
    this.listeners.push(fn);
  }

  /** The configuration the processes run now (a replacement worker is started with it). */
  get active(): LoadedConfig {
    return this.current;
  }

  reload(flush: boolean, trigger: ReloadTrigger): Promise<ReloadResult> {
    const run = this.chain.then(() => this.once(flush, trigger));
    this.chain = run.catch(() => {});
    return run;
  }

  private async once(flush: boolean, trigger: ReloadTrigger): Promise<ReloadResult> {
    let next: LoadedConfig;
    let restartRequired: string[];
    try {
      ({ loaded: next, restartRequired } = rereadConfig(this.current));
    } catch (err) {
      return this.failed(`the configuration file is invalid: ${(err as Error).message}`, [], trigger);
    }
    let answers: ProcessReloaded[];
    try {
      answers = await this.apply(next, flush);
    } catch (err) {
      return this.failed((err as Error).message, restartRequired, trigger);
    }
    const reloaded = answers.some((a) => a.reloaded);
    this.current = next;
    for (const fn of this.listeners) fn(next);
    if (reloaded) this.log.info({ trigger, flush, config_hash: next.hash, processes: answers.length }, 'reload: new configuration active in every process');
    else this.log.info({ trigger, config_hash: next.hash }, 'reload: configuration unchanged; nothing rebuilt');
    if (restartRequired.length) this.log.warn({ trigger, restart_required: restartRequired }, `reload: ${restartRequired.join(', ')} changed in the file but only apply after a restart`);
    return { ok: true, reloaded, ...summary(answers), version: VERSION, restart_required: restartRequired, processes: answers.length };
  }

  /** The result of a failed reload: the figures of the configuration that stays active, and why. */
  private async failed(error: string, restartRequired: string[], trigger: string): Promise<ReloadResult> {
    this.log.error({ trigger, error }, 'reload failed; the previous configuration stays active');
    let answers: ProcessReloaded[] = [];
    try {
      answers = await this.apply(this.current, false);
    } catch {
      // Asking for the figures of the running state rebuilds nothing; should it fail anyway, answer without them.
    }
    return { ok: false, reloaded: false, ...summary(answers, this.current.hash), version: VERSION, restart_required: restartRequired, processes: answers.length, error };
  }
}

/** One set of figures for the service: the processes agree on everything but the second each one swapped in. */
function summary(answers: ProcessReloaded[], hash = ''): StateFigures {
  const first = answers[0]?.figures;
  if (!first) return { config_hash: hash, loaded_at_unix: 0, loaded_sources: 0, loaded_styles: 0, renderer_enabled: false };
  return {
    ...first,
    loaded_at_unix: Math.max(...answers.map((a) => a.figures.loaded_at_unix)),
    renderer_enabled: answers.some((a) => a.figures.renderer_enabled),
  };
}
