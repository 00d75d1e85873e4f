// Holds the active AppState and swaps it on reload. Requests take `holder.current` once at their start. Each
// request is counted against the state that was active when it arrived (`enter`/`leave`, done for every HTTP
// request by the server's outermost listener): a snapshot replaced by a reload is closed as soon as the
// requests that arrived under it have all ended, or after `drainMs` at the latest (a client that never reads
// its response must not keep file handles and database pools of an old configuration open for ever).
import type { AppState } from './app-state.js';

interface Retired {
  timer: NodeJS.Timeout;
}

export class StateHolder {
  private state: AppState;
  /** Requests in progress per state (only states with requests in progress have an entry). */
  private readonly inFlight = new Map<AppState, number>();
  private readonly retired = new Map<AppState, Retired>();

  constructor(state: AppState) {
    this.state = state;
  }

  get current(): AppState {
    return this.state;
  }

  /** Counts a request against the active state; pair with `leave` when the request has ended. */
  enter(): AppState {
    const s = this.state;
    this.inFlight.set(s, (this.inFlight.get(s) ?? 0) + 1);
    return s;
  }

  leave(s: AppState): void {
    const n = (this.inFlight.get(s) ?? 1) - 1;
    if (n > 0) {
      this.inFlight.set(s, n);
      return;
    }
    this.inFlight.delete(s);
    if (this.retired.has(s)) this.closeRetired(s);
  }

  /** Runs `work` counted against the active state, as a request is: the state is not closed while it runs. */
  async hold<T>(work: () => Promise<T>): Promise<T> {
    const s = this.enter();
    try {
      return await work();
    } finally {
      this.leave(s);
    }
  }

  /** States replaced by a reload and not closed yet (their requests are still running). */
  get draining(): number {
    return this.retired.size;
  }

  /** Makes `next` active; the old snapshot is closed when its requests have ended, after `drainMs` at the latest. */
  swap(next: AppState, drainMs = 30_000): void {
    const old = this.state;
    this.state = next;
    if (old === next) return;
    const timer = setTimeout(() => this.closeRetired(old), drainMs);
    timer.unref();
    this.retired.set(old, { timer });
    if (!this.inFlight.has(old)) this.closeRetired(old);
  }

  private closeRetired(s: AppState): void {
    const r = this.retired.get(s);
    if (!r) return;
    clearTimeout(r.timer);
    this.retired.delete(s);
    this.inFlight.delete(s);
    void s.close();
  }

  /** Closes the active state and every retired one now (the process is stopping). */
  async closeAll(): Promise<void> {
    const all = [this.state, ...this.retired.keys()];
    for (const r of this.retired.values()) clearTimeout(r.timer);
    this.retired.clear();
    await Promise.all(all.map((s) => s.close()));
  }
}
