// `server.watch`: files the configuration reads (archives, styles, sprites, fonts) that change on disk run the
// same reload as SIGHUP, once for the whole service (in the cluster this runs in the primary, which reloads every
// worker). Changes are gathered for a moment (an editor saving, a copy of several files), and the reload waits
// until every changed file has kept its size and modification time for a while: a file still being written is
// never read half-way. The reload rebuilds even though the configuration file itself is unchanged.
import { watch, type FSWatcher } from 'node:fs';
import { stat } from 'node:fs/promises';
import path from 'node:path';
import type { LoadedConfig } from '../config/load.js';
import { matters, watchTargets } from '../config/watch-paths.js';
import type { Logger } from '../log.js';
import type { ServiceReloader } from './reloader.js';

export interface WatchTiming {
  /** Quiet time after the last change event before the files are looked at. */
  debounceMs: number;
  /** How long every changed file must keep its size and mtime before the reload. */
  stableMs: number;
  /** How often the changed files are looked at while they settle. */
  pollMs: number;
}

export const WATCH_TIMING: WatchTiming = { debounceMs: 250, stableMs: 1000, pollMs: 100 };

/** What a file looks like now: size and mtime, or missing. Equal strings mean no visible change. */
async function look(file: string): Promise<string> {
  try {
    const s = await stat(file);
    return `${s.size}:${s.mtimeMs}`;
  } catch {
    return 'missing';
  }
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export class FileWatch {
  private watchers: FSWatcher[] = [];
  private readonly pending = new Set<string>();
  private timer: NodeJS.Timeout | undefined;
  private running = false;
  private closed = false;

  constructor(
    private readonly reloader: ServiceReloader,
    private readonly log: Logger,
    private readonly timing: WatchTiming = WATCH_TIMING,
  ) {
    reloader.onActive((active) => this.aim(active));
    this.aim(reloader.active);
  }

  /** Watches what `loaded` reads (nothing when server.watch is off); called again after every reload. */
  aim(loaded: LoadedConfig): void {
    for (const w of this.watchers) w.close();
    this.watchers = [];
    if (this.closed || !loaded.config.server.watch) return;
    for (const target of watchTargets(loaded.config)) {
      try {
        // Not persistent: a watch never keeps the process alive on its own.
        const w = watch(target.dir, { recursive: target.names === undefined, persistent: false }, (_event, name) => {
          if (name === null) return;
          const rel = name.toString();
          if (matters(target, rel)) this.changed(path.join(target.dir, rel));
        });
        w.on('error', (err) => this.log.warn({ dir: target.dir, err: err.message }, 'watch: a watched folder cannot be watched any more'));
        this.watchers.push(w);
      } catch (err) {
        this.log.warn({ dir: target.dir, err: (err as Error).message }, 'watch: cannot watch a folder of the configuration; its changes need a reload');
      }
    }
    this.log.info({ folders: this.watchers.length }, 'watching the configuration\'s files for changes');
  }

  close(): void {
    this.closed = true;
    clearTimeout(this.timer);
    for (const w of this.watchers) w.close();
    this.watchers = [];
  }

  private changed(file: string): void {
    this.pending.add(file);
    clearTimeout(this.timer);
    this.timer = setTimeout(() => void this.settleAndReload(), this.timing.debounceMs);
  }

  private async settleAndReload(): Promise<void> {
    // One reload at a time; changes during one are gathered for the next.
    if (this.running || this.closed) return;
    this.running = true;
    try {
      const files = new Set<string>();
      const seen = new Map<string, string>();
      let since = Date.now();
      for (;;) {
        for (const f of this.pending) files.add(f);
        this.pending.clear();
        for (const f of files) {
          const now = await look(f);
          if (seen.get(f) !== now) {
            seen.set(f, now);
            since = Date.now();
          }
        }
        if (Date.now() - since >= this.timing.stableMs && this.pending.size === 0) break;
        await sleep(this.timing.pollMs);
        if (this.closed) return;
      }
      const changed = [...files].sort();
      this.log.info({ files: changed }, `watch: ${changed.length === 1 ? changed[0] : `${changed.length} files`} changed; reloading`);
      // A flush: the configuration's hash is the same, the content behind it is not.
      await this.reloader.reload(true, 'watch');
    } finally {
      this.running = false;
      if (this.pending.size > 0 && !this.closed) this.changed([...this.pending][0]);
    }
  }
}
