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

interface Events {
  duration: [RenderDuration];
  error: [RenderFailure];
}

export class RenderMetrics extends EventEmitter<Events> {
  observeDuration(style: string, format: string, seconds: number): void {
    this.emit('duration', { style, format, seconds });
  }

  countError(style: string, reason: string): void {
    // 'error' on an EventEmitter throws when nobody listens: only emit it to listeners.
    if (this.listenerCount('error') > 0) this.emit('error', { style, reason });
  }
}

/** The process-wide sink. */
export const renderMetrics = new RenderMetrics();
