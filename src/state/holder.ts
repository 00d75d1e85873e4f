// Holds the active AppState and swaps it on reload. Requests take `holder.current` once at their start;
// the previous snapshot is closed after a grace period long enough for in-flight requests to finish.
import type { AppState } from './app-state.js';

export class StateHolder {
  constructor(private state: AppState) {}

  get current(): AppState {
    return this.state;
  }

  /** Makes `next` active; the old snapshot is closed after `drainMs`. */
  swap(next: AppState, drainMs = 30_000): void {
    const old = this.state;
    this.state = next;
    if (old !== next) setTimeout(() => void old.close(), drainMs).unref();
  }
}
