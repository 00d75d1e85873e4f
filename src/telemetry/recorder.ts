// The process's telemetry: what the HTTP layer and the render service report, fanned out to the pull registry
// (when `scrape_bind` is set) and the OTLP pipeline (when `enabled`). With neither, `on` is false and every
// method returns at once: the serving code checks `on` before taking a clock reading.
import cluster from 'node:cluster';
import { AggregatorRegistry } from 'prom-client';
import type { TelemetryConfig } from '../config/schema.js';
import type { Logger } from '../log.js';
import type { RenderService } from '../render/service.js';
import { renderMetrics } from '../render/metrics.js';
import { sharedCacheMetrics } from '../shared-cache/client.js';
import { expiryMetrics } from '../expire/metrics.js';
import { purgeMetrics } from '../expire/edge-purge.js';
import { storageMetrics } from '../sources/object-store/metrics.js';
import { idLabel, statusClass, tileOutcome, zLabel, type Cardinality, type TileOutcome } from './labels.js';
import { OtelPipeline } from './otel.js';
import { PromMetrics } from './prom.js';
import { registerMachineMetrics } from './expire-metrics.js';
import { renderLoad } from './render-load.js';

/** What identifies a tile request in the tile metrics. */
export interface TileLabels {
  source: string;
  format: string;
  z: number;
}

export class Telemetry {
  /** Recording is live (a scrape listener or OTLP push is configured). */
  on = false;
  prom: PromMetrics | undefined;
  otel: OtelPipeline | undefined;
  private cardinality: Cardinality = 'strict';
  private render: RenderService | undefined;

  /** Starts recording as `cfg` says; a no-op when neither `enabled` nor `scrape_bind` is set. */
  async start(cfg: TelemetryConfig, log: Logger): Promise<void> {
    if (this.on || (!cfg.enabled && cfg.scrape_bind === undefined)) return;
    this.on = true;
    this.cardinality = cfg.metrics_label_cardinality;
    const load = () => renderLoad(this.render);
    if (cfg.scrape_bind !== undefined) {
      this.prom = new PromMetrics(load);
      // A worker answers the primary's scrape requests with this registry (prom-client's cluster protocol).
      if (cluster.isWorker) {
        AggregatorRegistry.setRegistries([this.prom.registry]);
        new AggregatorRegistry();
      } else {
        // The single process is its machine's expiry hub too (a cluster's primary registers these itself).
        registerMachineMetrics(this.prom.registry);
      }
    }
    if (cfg.enabled) this.otel = await OtelPipeline.create(cfg, load, log);
    renderMetrics.on('duration', (d) => {
      const style = idLabel(d.style, this.cardinality);
      this.prom?.render(style, d.format, d.seconds);
      this.otel?.render(style, d.format, d.seconds);
    });
    storageMetrics.on('read', (r) => {
      const source = idLabel(r.source, this.cardinality);
      this.prom?.storageRead(source, r.provider, r.bytes);
      this.otel?.storageRead(source, r.provider, r.bytes);
    });
    storageMetrics.on('failure', (f) => {
      const source = idLabel(f.source, this.cardinality);
      this.prom?.storageError(source, f.provider, f.kind);
      this.otel?.storageError(source, f.provider, f.kind);
    });
    renderMetrics.on('stale', (s) => {
      const style = idLabel(s, this.cardinality);
      this.prom?.stale(style);
      this.otel?.stale(style);
    });
    renderMetrics.on('rerender', (r) => {
      const style = idLabel(r.style, this.cardinality);
      this.prom?.rerender(style, r.result);
      this.otel?.rerender(style, r.result);
    });
    renderMetrics.on('lag', (l) => {
      const style = idLabel(l.style, this.cardinality);
      this.prom?.lag(style, l.seconds);
      this.otel?.lag(style, l.seconds);
    });
    renderMetrics.on('dirtyDrop', () => {
      this.prom?.dirtyDrop();
      this.otel?.dirtyDrop();
    });
    renderMetrics.on('bulkFrame', (f) => {
      const style = idLabel(f.style, this.cardinality);
      this.prom?.bulkFrame(style, f.result, f.tiles);
      this.otel?.bulkFrame(style, f.result, f.tiles);
    });
    renderMetrics.on('styleLoad', (s) => {
      const style = idLabel(s, this.cardinality);
      this.prom?.styleLoad(style);
      this.otel?.styleLoad(style);
    });
    renderMetrics.on('error', (e) => {
      const style = idLabel(e.style, this.cardinality);
      this.prom?.renderError(style, e.reason);
      this.otel?.renderError(style, e.reason);
    });
    // Pulled from the machine's hub registry (expire-metrics.ts); pushed from here.
    purgeMetrics.on('request', (result) => this.otel?.edgePurge(result));
    expiryMetrics.on('accepted', (b) => {
      const tiles = b.marked ?? b.tiles.length;
      for (const id of b.sources) {
        const source = idLabel(id, this.cardinality);
        this.otel?.expired(source, b.input, tiles);
      }
    });
    for (const [event, counted] of [['hit', 'hit'], ['miss', 'miss'], ['failure', 'error']] as const) {
      sharedCacheMetrics.on(event, (label: string) => {
        this.prom?.shared(counted, label);
        this.otel?.shared(counted, label);
      });
    }
  }

  /** The render pool whose queue and renderers the gauges read. */
  watchRender(render: RenderService): void {
    this.render = render;
  }

  requestStarted(): void {
    this.prom?.requestStarted();
    this.otel?.requestStarted();
  }

  requestDone(route: string, status: number, seconds: number): void {
    const cls = statusClass(status);
    this.prom?.requestDone(route, cls, seconds);
    this.otel?.requestDone(route, cls, seconds);
  }

  /**
   * One tile request answered (or failed, with `result` = 'error'); `started` is a `performance.now()` taken
   * before the lookup, `bytes` the body sent (none for 204 and 304).
   */
  tile(labels: TileLabels, result: { kind: 'tile' | 'empty'; cache?: 'hit' | 'miss' } | 'error', started: number, bytes: number | undefined): void {
    if (!this.on) return;
    const seconds = (performance.now() - started) / 1000;
    const outcome: TileOutcome = result === 'error' ? 'error' : tileOutcome(result);
    const cache = result === 'error' ? undefined : result.cache;
    const z = zLabel(labels.z, this.cardinality);
    const source = idLabel(labels.source, this.cardinality);
    this.prom?.tile(source, labels.format, z, outcome, cache, seconds, bytes);
    this.otel?.tile(source, labels.format, z, outcome, cache, seconds, bytes);
  }

  /** This process's metrics in the text exposition format (empty when there is no registry). */
  async metricsText(): Promise<string> {
    return this.prom ? this.prom.registry.metrics() : '';
  }

  async close(): Promise<void> {
    await this.otel?.shutdown();
  }
}

/** The process-wide telemetry (like `renderMetrics`): one per serving process. */
export const telemetry = new Telemetry();
