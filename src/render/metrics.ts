// Hooks for the render metrics of the spec (render_duration_seconds{style,format},
// render_errors_total{style,reason}). The render service reports here; the metrics capability subscribes
// and turns the events into prom-client/OTLP instruments.
import { EventEmitter } from 'node:events';

export interface RenderDuration {
  style: string;
  format: string;
  seconds: number;
}

export interface RenderFailure {
  style: string;
  /** timeout, overload, crash, style, unavailable or failed */
  reason: string;
}

/** What became of a background re-render of an expired tile: stored fresh, failed, or not begun (load above render.stale_threshold). */
export type RerenderResult = 'done' | 'failed' | 'skipped';

/**
 * A frame of bulk work (seeding, background re-renders): `drawn`; `smaller`, drawn in a block smaller than
 * render.bulk_metatile because the whole block passed the frame limit; `failed`, its tiles then asked for in
 * smaller frames.
 */
export type BulkFrameResult = 'drawn' | 'smaller' | 'failed';

interface Events {
  bulkFrame: [{ style: string; result: BulkFrameResult; tiles: number }];
  duration: [RenderDuration];
  error: [RenderFailure];
  /** An expired tile answered from its old image. */
  stale: [string];
  rerender: [{ style: string; result: RerenderResult }];
  /** Seconds from a tile's expiry to its fresh image stored by a re-render. */
  lag: [{ style: string; seconds: number }];
  /** A tile the eager dirty queue had no room for. */
  dirtyDrop: [];
  /** A renderer loaded a style for a render (a new page, another style, a reload; not an expiry). */
  styleLoad: [string];
}

export class RenderMetrics extends EventEmitter<Events> {
  observeDuration(style: string, format: string, seconds: number): void {
    this.emit('duration', { style, format, seconds });
  }

  countStale(style: string): void {
    this.emit('stale', style);
  }

  countRerender(style: string, result: RerenderResult): void {
    this.emit('rerender', { style, result });
  }

  observeLag(style: string, seconds: number): void {
    this.emit('lag', { style, seconds });
  }

  countDirtyDrop(): void {
    this.emit('dirtyDrop');
  }

  countBulkFrame(style: string, result: BulkFrameResult, tiles: number): void {
    this.emit('bulkFrame', { style, result, tiles });
  }

  countStyleLoad(style: string): void {
    this.emit('styleLoad', style);
  }

  countError(style: string, reason: string): void {
    // 'error' on an EventEmitter throws when nobody listens: only emit it to listeners.
    if (this.listenerCount('error') > 0) this.emit('error', { style, reason });
  }
}

/** The process-wide sink. */
export const renderMetrics = new RenderMetrics();
