// The push side: OTLP over gRPC to `[telemetry] endpoint`. Metrics are the same instruments as the pull side,
// exported every `metrics_export_interval_secs`; traces are one server span per HTTP request, sampled at
// `sample_rate`. Exports run in the background with bounded queues and timeouts: a collector that is down costs
// dropped telemetry (and a log line now and then), never a slower or failed request.
//
// The OpenTelemetry packages (and gRPC under them) are loaded by `OtelPipeline.create`, only in a process whose
// configuration enables the push: imported at the top they would add a fifth of a second to every start.
import os from 'node:os';
import type { Counter, Histogram, Span, SpanKind, Tracer, UpDownCounter } from '@opentelemetry/api';
import type { MeterProvider } from '@opentelemetry/sdk-metrics';
import type { BasicTracerProvider } from '@opentelemetry/sdk-trace-base';
import type { TelemetryConfig } from '../config/schema.js';
import type { Logger } from '../log.js';
import { expiries } from '../expire/expiries.js';
import { LAG_SECONDS, REQUEST_SECONDS, RENDER_SECONDS, TILE_BYTES, type TileOutcome } from './labels.js';
import type { RenderLoad } from './render-load.js';

/** At most one log line per this many milliseconds about failing exports. */
const LOG_EVERY_MS = 60_000;

/** The packages the pipeline is made of, loaded together on first use. */
async function otelPackages() {
  const [api, metricsExporter, traceExporter, resources, sdkMetrics, sdkTrace] = await Promise.all([
    import('@opentelemetry/api'),
    import('@opentelemetry/exporter-metrics-otlp-grpc'),
    import('@opentelemetry/exporter-trace-otlp-grpc'),
    import('@opentelemetry/resources'),
    import('@opentelemetry/sdk-metrics'),
    import('@opentelemetry/sdk-trace-base'),
  ]);
  return { api, metricsExporter, traceExporter, resources, sdkMetrics, sdkTrace };
}
type OtelPackages = Awaited<ReturnType<typeof otelPackages>>;

export class OtelPipeline {
  private readonly meterProvider: MeterProvider | undefined;
  private readonly tracerProvider: BasicTracerProvider;
  private readonly tracer: Tracer;
  private readonly serverKind: SpanKind;
  private instruments: ReturnType<typeof createInstruments> | undefined;

  /** Loads the OpenTelemetry packages and starts the pipeline. */
  static async create(cfg: TelemetryConfig, load: () => RenderLoad, log: Logger): Promise<OtelPipeline> {
    return new OtelPipeline(await otelPackages(), cfg, load, log);
  }

  private constructor(pkgs: OtelPackages, cfg: TelemetryConfig, load: () => RenderLoad, log: Logger) {
    const { diag, DiagLogLevel, SpanKind } = pkgs.api;
    const { OTLPMetricExporter } = pkgs.metricsExporter;
    const { OTLPTraceExporter } = pkgs.traceExporter;
    const { resourceFromAttributes } = pkgs.resources;
    const { MeterProvider, PeriodicExportingMetricReader } = pkgs.sdkMetrics;
    const { BasicTracerProvider, BatchSpanProcessor, TraceIdRatioBasedSampler } = pkgs.sdkTrace;
    this.serverKind = SpanKind.SERVER;
    const resource = resourceFromAttributes({
      'service.name': cfg.service_name,
      'service.instance.id': `${os.hostname()}/${process.pid}`,
    });
    // The SDK reports failed exports (timeouts, refused connections) through its diagnostic logger.
    let lastLogged = 0;
    const report = (message: string, ...args: unknown[]) => {
      const now = Date.now();
      if (now - lastLogged < LOG_EVERY_MS) return;
      lastLogged = now;
      const detail = args.map((a) => (a instanceof Error ? a.message : typeof a === 'string' ? a : JSON.stringify(a))).join(' ');
      log.warn({ endpoint: cfg.endpoint, err: `${message} ${detail}`.trim() }, 'OTLP export failed (telemetry is dropped until the collector answers)');
    };
    const quiet = () => {};
    diag.setLogger({ error: report, warn: report, info: quiet, debug: quiet, verbose: quiet }, { logLevel: DiagLogLevel.WARN, suppressOverrideMessage: true });

    if (cfg.metrics_enabled) {
      const intervalMs = Math.round(cfg.metrics_export_interval_secs * 1000);
      const reader = new PeriodicExportingMetricReader({
        exporter: new OTLPMetricExporter({ url: cfg.endpoint, timeoutMillis: Math.min(10_000, intervalMs) }),
        exportIntervalMillis: intervalMs,
        exportTimeoutMillis: Math.min(10_000, intervalMs),
      });
      this.meterProvider = new MeterProvider({ resource, readers: [reader] });
      this.instruments = createInstruments(this.meterProvider, load);
    }
    this.tracerProvider = new BasicTracerProvider({
      resource,
      sampler: new TraceIdRatioBasedSampler(cfg.sample_rate),
      // A bounded queue: spans beyond it are dropped while the collector is slow or away.
      spanProcessors: [new BatchSpanProcessor(new OTLPTraceExporter({ url: cfg.endpoint, timeoutMillis: 10_000 }), { maxQueueSize: 4096, scheduledDelayMillis: 1000 })],
    });
    this.tracer = this.tracerProvider.getTracer('tileserver-ts');
  }

  startSpan(method: string, startTime: number): Span {
    return this.tracer.startSpan(method, { kind: this.serverKind, startTime, attributes: { 'http.request.method': method } });
  }

  /** Unsampled spans record nothing and cost nothing more here. */
  endSpan(span: Span, method: string, route: string, path: string, status: number): void {
    if (!span.isRecording()) return;
    span.updateName(`${method} ${route}`);
    span.setAttributes({ 'http.route': route, 'url.path': path, 'http.response.status_code': status });
    span.end();
  }

  requestStarted(): void {
    this.instruments?.inFlight.add(1);
  }

  requestDone(route: string, statusClass: string, seconds: number): void {
    const i = this.instruments;
    if (!i) return;
    i.inFlight.add(-1);
    const attrs = { route, status_class: statusClass };
    i.httpRequests.add(1, attrs);
    i.httpDuration.record(seconds, attrs);
  }

  tile(source: string, format: string, zBucket: string, outcome: TileOutcome, cache: 'hit' | 'miss' | undefined, seconds: number, bytes: number | undefined): void {
    const i = this.instruments;
    if (!i) return;
    const attrs = { source, format, z_bucket: zBucket, outcome };
    i.tileRequests.add(1, attrs);
    i.tileDuration.record(seconds, attrs);
    if (cache === 'hit') i.cacheHits.add(1, { source });
    else if (cache === 'miss') i.cacheMisses.add(1, { source });
    if (bytes !== undefined) i.tileBytes.record(bytes, { source, format });
  }

  stale(style: string): void {
    this.instruments?.staleAnswers.add(1, { style });
  }

  rerender(style: string, result: string): void {
    this.instruments?.rerenders.add(1, { style, result });
  }

  lag(style: string, seconds: number): void {
    this.instruments?.freshnessLag.record(seconds, { style });
  }

  styleLoad(style: string): void {
    this.instruments?.styleLoads.add(1, { style });
  }

  bulkFrame(style: string, result: string, tiles: number): void {
    this.instruments?.bulkFrames.add(1, { style, result });
    if (result !== 'failed') this.instruments?.bulkTiles.add(tiles, { style });
  }

  dirtyDrop(): void {
    this.instruments?.dirtyDrops.add(1);
  }

  render(style: string, format: string, seconds: number): void {
    this.instruments?.renderDuration.record(seconds, { style, format });
  }

  renderError(style: string, reason: string): void {
    this.instruments?.renderErrors.add(1, { style, reason });
  }

  shared(event: 'hit' | 'miss' | 'error', label: string): void {
    const i = this.instruments;
    if (!i) return;
    if (event === 'error') i.sharedErrors.add(1, { op: label });
    else (event === 'hit' ? i.sharedHits : i.sharedMisses).add(1, { kind: label });
  }

  edgePurge(result: string): void {
    this.instruments?.edgePurges.add(1, { result });
  }

  expired(source: string, input: string, tiles: number): void {
    this.instruments?.expireTiles.add(tiles, { source, input });
  }

  storageRead(source: string, provider: string, bytes: number): void {
    const i = this.instruments;
    if (!i) return;
    i.storageReads.add(1, { source, provider });
    i.storageBytes.add(bytes, { source, provider });
  }

  storageError(source: string, provider: string, kind: string): void {
    this.instruments?.storageErrors.add(1, { source, provider, kind });
  }

  /** Flushes what is pending, giving up after `timeoutMs` (a collector that is away must not hold a shutdown). */
  async shutdown(timeoutMs = 2000): Promise<void> {
    const work = Promise.allSettled([this.meterProvider?.shutdown(), this.tracerProvider.shutdown()]);
    await Promise.race([work, new Promise((resolve) => setTimeout(resolve, timeoutMs).unref())]);
  }
}

function createInstruments(provider: MeterProvider, load: () => RenderLoad) {
  const meter = provider.getMeter('tileserver-ts');
  const seconds = (name: string, description: string, bounds: number[]): Histogram =>
    meter.createHistogram(name, { description, unit: 's', advice: { explicitBucketBoundaries: bounds } });
  const counter = (name: string, description: string): Counter => meter.createCounter(name, { description });
  const inFlight: UpDownCounter = meter.createUpDownCounter('http_requests_in_flight', { description: 'HTTP requests being answered now' });

  const queue = meter.createObservableGauge('render_queue_depth', { description: 'Renders waiting for a renderer in this process' });
  const busy = meter.createObservableGauge('render_busy_renderers', { description: 'Renderers drawing now in this process' });
  const restarts = meter.createObservableCounter('render_renderer_restarts_total', { description: 'Renderers restarted, by reason' });
  const dirty = meter.createObservableGauge('render_dirty_queue_length', { description: 'Expired tiles waiting for an eager re-render in this process' });
  const expiryIndex = meter.createObservableGauge('expire_index_tiles', { description: 'Entries of the expiry index held in this process' });
  expiryIndex.addCallback((r) => r.observe(expiries.tiles));
  const expiryIndexBytes = meter.createObservableGauge('expire_index_bytes', { description: "Bytes of the expiry index's arrays held in this process" });
  expiryIndexBytes.addCallback((r) => r.observe(expiries.bytes));
  meter.addBatchObservableCallback(
    (r) => {
      const l = load();
      r.observe(queue, l.queued);
      r.observe(busy, l.busy);
      r.observe(dirty, l.dirty);
      for (const [reason, n] of Object.entries(l.restarts)) r.observe(restarts, n, { reason });
    },
    [queue, busy, restarts, dirty],
  );

  return {
    inFlight,
    httpRequests: counter('http_requests_total', 'HTTP requests answered, by matched route template and status class'),
    httpDuration: seconds('http_request_duration_seconds', 'Time from request to the end of the answer', REQUEST_SECONDS),
    tileRequests: counter('tile_requests_total', 'Tile requests by source, format, zoom bucket and outcome'),
    tileDuration: seconds('tile_request_duration_seconds', 'Time to produce a tile answer', REQUEST_SECONDS),
    tileBytes: meter.createHistogram('tile_request_bytes', { description: 'Bytes of tile bodies sent', unit: 'By', advice: { explicitBucketBoundaries: TILE_BYTES } }),
    cacheHits: counter('tile_cache_hits_total', 'Tile lookups answered from the tile cache'),
    cacheMisses: counter('tile_cache_misses_total', 'Tile lookups the tile cache could not answer'),
    renderDuration: seconds('render_duration_seconds', 'Time to render an image', RENDER_SECONDS),
    renderErrors: counter('render_errors_total', 'Failed renders by style and reason'),
    staleAnswers: counter('render_stale_answers_total', 'Expired rendered tiles answered from their old image, by style'),
    rerenders: counter('render_rerenders_total', 'Background re-renders of expired tiles, by style and result'),
    freshnessLag: seconds('render_freshness_lag_seconds', "Time from a tile's expiry to its fresh image stored by a re-render", LAG_SECONDS),
    dirtyDrops: counter('render_dirty_queue_drops_total', 'Expired tiles the eager dirty queue had no room for'),
    styleLoads: counter('render_style_loads_total', 'Styles loaded into a renderer for a render, by style'),
    bulkFrames: counter('render_bulk_frames_total', 'Frames of bulk work (seeding, background re-renders), by style and result'),
    bulkTiles: counter('render_bulk_tiles_total', 'Tiles cut from the bulk frames drawn, by style'),
    sharedHits: counter('shared_cache_hits_total', 'Lookups answered by the shared (fleet) cache, by kind'),
    sharedMisses: counter('shared_cache_misses_total', 'Lookups the shared (fleet) cache could not answer, by kind'),
    sharedErrors: counter('shared_cache_errors_total', 'Shared-cache commands that failed or timed out, by operation'),
    storageReads: counter('storage_reads_total', 'Range requests answered by the store of a remote source'),
    storageBytes: meter.createCounter('storage_read_bytes_total', { description: 'Bytes read from the store of a remote source', unit: 'By' }),
    storageErrors: counter('storage_errors_total', 'Failed requests to the store of a remote source, by kind'),
    expireTiles: counter('expire_tiles_total', 'Tiles expired by accepted expiries, by source and input'),
    edgePurges: counter('edge_purge_requests_total', 'PURGE requests sent to the edge caches, by result'),
  };
}
