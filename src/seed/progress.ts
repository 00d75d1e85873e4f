// How a seed tells its progress: on a terminal, one line redrawn in place (a bar, done/total, tiles/s, ETA,
// errors), on stderr; otherwise (a pipe, a log collector) one JSON object per line every few seconds and a final
// one, on stdout, so a script can follow the run without parsing a bar or telling progress from log lines.

export interface ProgressCounts {
  /** Tiles of the plan. */
  total: number;
  /** Tiles finished this run or before it: fetched (written, empty or failed) plus skipped. */
  done: number;
  /** Tiles the output already held when the run began (--resume). */
  skipped: number;
  /** Tiles asked of the service in this run. */
  fetched: number;
  /** Tiles written into the output (or warmed). */
  written: number;
  /** Tiles the service had nothing for (204); not written unless --keep-empty. */
  empty: number;
  /** Tiles that failed after their retries; not written, so a --resume asks for them again. */
  errors: number;
}

export interface ProgressLine extends ProgressCounts {
  type: 'progress' | 'done' | 'interrupted';
  elapsed_s: number;
  tiles_per_s: number;
  /** Seconds left at the current rate; null before any tile was fetched. */
  eta_s: number | null;
}

export interface ProgressSink {
  write(text: string): void;
}

const JSON_EVERY_MS = 2000;
const TTY_EVERY_MS = 200;
const BAR = 24;

function fmtDuration(s: number): string {
  if (!Number.isFinite(s)) return '--';
  const t = Math.round(s);
  const h = Math.floor(t / 3600);
  const m = Math.floor((t % 3600) / 60);
  const sec = t % 60;
  return h > 0 ? `${h}h${String(m).padStart(2, '0')}m` : m > 0 ? `${m}m${String(sec).padStart(2, '0')}s` : `${sec}s`;
}

export class ProgressReporter {
  private readonly started = performance.now();
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly counts: ProgressCounts,
    private readonly sink: ProgressSink,
    private readonly tty: boolean,
    private readonly columns = 100,
  ) {}

  start(): void {
    this.timer = setInterval(() => this.emit('progress'), this.tty ? TTY_EVERY_MS : JSON_EVERY_MS);
    this.timer.unref();
    if (this.tty) this.emit('progress');
  }

  /** The figures now: the rate counts only this run's tiles, so a resumed run's ETA is not flattered by skips. */
  line(type: ProgressLine['type']): ProgressLine {
    const elapsed = (performance.now() - this.started) / 1000;
    const rate = elapsed > 0 ? this.counts.fetched / elapsed : 0;
    const left = this.counts.total - this.counts.done;
    return {
      type,
      ...this.counts,
      elapsed_s: Math.round(elapsed * 10) / 10,
      tiles_per_s: Math.round(rate * 10) / 10,
      eta_s: this.counts.fetched > 0 && rate > 0 ? Math.round(left / rate) : null,
    };
  }

  private emit(type: ProgressLine['type']): void {
    const l = this.line(type);
    if (!this.tty) return this.sink.write(`${JSON.stringify(l)}\n`);
    const share = l.total > 0 ? l.done / l.total : 1;
    const filled = Math.round(share * BAR);
    const bar = `[${'#'.repeat(filled)}${'.'.repeat(BAR - filled)}]`;
    const eta = type === 'progress' ? `ETA ${l.eta_s === null ? '--' : fmtDuration(l.eta_s)}` : `in ${fmtDuration(l.elapsed_s)}`;
    const text = `${bar} ${l.done}/${l.total} ${(share * 100).toFixed(1)}% ${l.tiles_per_s.toFixed(1)} tiles/s ${eta} errors ${l.errors}`;
    // \r back to the line's start, \x1b[K clears what a longer earlier line left; cut to the terminal's width.
    this.sink.write(`\r${text.slice(0, Math.max(20, this.columns - 1))}\x1b[K${type === 'progress' ? '' : '\n'}`);
  }

  /** The last line (and the end of the in-place one on a terminal). */
  finish(type: 'done' | 'interrupted'): ProgressLine {
    clearInterval(this.timer);
    this.emit(type);
    return this.line(type);
  }
}
