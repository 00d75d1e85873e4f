// `[telemetry]`: metrics (a pull listener, OTLP push) and traces (OTLP).
import * as v from 'valibot';
import { bindAddress, nonEmpty } from './common.js';
import { section } from './section.js';

/** Metrics (pull listener, OTLP push) and traces (OTLP); see docs/metrics.md. */
export const TelemetrySchema = v.object({
  enabled: v.optional(v.boolean(), false),
  /** OTLP gRPC endpoint, e.g. http://collector:4317. */
  endpoint: v.optional(v.pipe(v.string(), v.url('an absolute URL such as http://collector:4317')), 'http://localhost:4317'),
  service_name: v.optional(nonEmpty, 'tileserver-ts'),
  sample_rate: v.optional(v.pipe(v.number(), v.minValue(0), v.maxValue(1)), 1),
  metrics_enabled: v.optional(v.boolean(), true),
  /** Fractions are allowed (tests push every fraction of a second). */
  metrics_export_interval_secs: v.optional(v.pipe(v.number(), v.minValue(0.1), v.maxValue(86_400)), 60),
  /** `host:port` or `[ipv6]:port` of the metrics pull listener (parsed by telemetry/bind.ts); unset: no listener. */
  scrape_bind: v.optional(bindAddress),
  scrape_path: v.optional(v.pipe(v.string(), v.regex(/^\/[A-Za-z0-9._~!$&'()*+,;=:@\/-]*$/, 'an absolute URL path such as /metrics')), '/metrics'),
  metrics_label_cardinality: v.optional(v.picklist(['strict', 'verbose']), 'strict'),
});

// The spec lists telemetry among the moves that need a restart: the exporters and the listener start with the process.
export const telemetry = section(v.optional(TelemetrySchema, {}), 'all');
