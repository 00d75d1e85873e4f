// The pull side: a prom-client registry holding the spec's ten metrics and the render-pool metrics of this
// process. In a cluster, every worker's registry is summed by the primary on each scrape (scrape-listener.ts).
import cluster from 'node:cluster';
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import { registerNotifyMetrics } from './expire-notify.js';
import { fileSourceMemory } from '../sources/files/metrics.js';
import { expiries } from '../expire/expiries.js';
import { LAG_SECONDS, REQUEST_SECONDS, RENDER_SECONDS, TILE_BYTES, type TileOutcome } from './labels.js';
import type { RenderLoad } from './render-load.js';

interface TileSeries {
  requests: Counter.Internal;
  duration: Histogram.Internal<string>;
}

interface HttpSeries {
  requests: Counter.Internal;
  duration: Histogram.Internal<string>;
}

export class PromMetrics {
  readonly registry = new Registry();
  private readonly httpRequests: Counter<'route' | 'status_class'>;
  private readonly httpDuration: Histogram<'route' | 'status_class'>;
  private readonly inFlight: Gauge;
  private readonly tileRequests: Counter<'source' | 'format' | 'z_bucket' | 'outcome'>;
  private readonly tileDuration: Histogram<'source' | 'format' | 'z_bucket' | 'outcome'>;
  private readonly tileBytes: Histogram<'source' | 'format'>;
  private readonly cacheHits: Counter<'source'>;
  private readonly cacheMisses: Counter<'source'>;
  private readonly renderDuration: Histogram<'style' | 'format'>;
  private readonly renderErrors: Counter<'style' | 'reason'>;
  private readonly staleAnswers: Counter<'style'>;
  private readonly rerenders: Counter<'style' | 'result'>;
  private readonly freshnessLag: Histogram<'style'>;
  private readonly dirtyDrops: Counter;
  private readonly styleLoads: Counter<'style'>;
  private readonly bulkFrames: Counter<'style' | 'result'>;
  private readonly bulkTiles: Counter<'style'>;
  private readonly sharedHits: Counter<'kind'>;
  private readonly sharedMisses: Counter<'kind'>;
  private readonly sharedErrors: Counter<'op'>;
  private readonly storageReads: Counter<'source' | 'provider'>;
  private readonly storageBytes: Counter<'source' | 'provider'>;
  private readonly storageErrors: Counter<'source' | 'provider' | 'kind'>;
  // prom-client hashes the label object on every call; the children of series already seen are kept instead.
  private readonly httpSeries = new Map<string, HttpSeries>();
  private readonly tileSeries = new Map<string, TileSeries>();

  constructor(load: () => RenderLoad) {
    const registers = [this.registry];
    // A worker never listens for database notifications: the primary adds its own counters to the cluster's sum.
    if (!cluster.isWorker) registerNotifyMetrics(registers);
    this.httpRequests = new Counter({ name: 'http_requests_total', help: 'HTTP requests answered, by matched route template and status class', labelNames: ['route', 'status_class'], registers });
    this.httpDuration = new Histogram({ name: 'http_request_duration_seconds', help: 'Time from request to the end of the answer, in seconds', labelNames: ['route', 'status_class'], buckets: REQUEST_SECONDS, registers });
    this.inFlight = new Gauge({ name: 'http_requests_in_flight', help: 'HTTP requests being answered now', registers });
    const tileLabels = ['source', 'format', 'z_bucket', 'outcome'] as const;
    this.tileRequests = new Counter({ name: 'tile_requests_total', help: 'Tile requests by source, format, zoom bucket and outcome (hit, miss, not_found, error)', labelNames: tileLabels, registers });
    this.tileDuration = new Histogram({ name: 'tile_request_duration_seconds', help: 'Time to produce a tile answer, in seconds', labelNames: tileLabels, buckets: REQUEST_SECONDS, registers });
    this.tileBytes = new Histogram({ name: 'tile_request_bytes', help: 'Bytes of tile bodies sent', labelNames: ['source', 'format'], buckets: TILE_BYTES, registers });
    this.cacheHits = new Counter({ name: 'tile_cache_hits_total', help: 'Tile lookups answered from the tile cache', labelNames: ['source'], registers });
    this.cacheMisses = new Counter({ name: 'tile_cache_misses_total', help: 'Tile lookups the tile cache could not answer', labelNames: ['source'], registers });
    this.renderDuration = new Histogram({ name: 'render_duration_seconds', help: 'Time to render an image, in seconds', labelNames: ['style', 'format'], buckets: RENDER_SECONDS, registers });
    this.renderErrors = new Counter({ name: 'render_errors_total', help: 'Failed renders by style and reason', labelNames: ['style', 'reason'], registers });
    this.staleAnswers = new Counter({ name: 'render_stale_answers_total', help: 'Expired rendered tiles answered from their old image while a re-render replaces it, by style', labelNames: ['style'], registers });
    this.rerenders = new Counter({ name: 'render_rerenders_total', help: 'Background re-renders of expired tiles, by style and result (done, failed, skipped: load above render.stale_threshold)', labelNames: ['style', 'result'], registers });
    this.freshnessLag = new Histogram({ name: 'render_freshness_lag_seconds', help: 'Time from a tile\'s expiry to its fresh image stored by a re-render, in seconds', labelNames: ['style'], buckets: LAG_SECONDS, registers });
    this.styleLoads = new Counter({ name: 'render_style_loads_total', help: 'Styles loaded into a renderer for a render (a new page, another style, a reload), by style', labelNames: ['style'], registers });
    this.bulkFrames = new Counter({ name: 'render_bulk_frames_total', help: 'Frames of bulk work (seeding, background re-renders), by style and result (drawn; smaller: the block passed render.bulk_max_frame; failed: its tiles drawn in smaller frames)', labelNames: ['style', 'result'], registers });
    this.bulkTiles = new Counter({ name: 'render_bulk_tiles_total', help: 'Tiles cut from the bulk frames drawn, by style (divided by the frames drawn: tiles per bulk frame)', labelNames: ['style'], registers });
    this.dirtyDrops = new Counter({ name: 'render_dirty_queue_drops_total', help: 'Expired tiles the eager dirty queue had no room for (render.dirty_queue_size)', registers });
    this.sharedHits = new Counter({ name: 'shared_cache_hits_total', help: 'Lookups answered by the shared (fleet) cache, by kind (tile, image, transcoded)', labelNames: ['kind'], registers });
    this.sharedMisses = new Counter({ name: 'shared_cache_misses_total', help: 'Lookups the shared (fleet) cache could not answer, by kind', labelNames: ['kind'], registers });
    this.sharedErrors = new Counter({ name: 'shared_cache_errors_total', help: 'Shared-cache commands that failed or timed out, by operation (get, set, lock, unlock)', labelNames: ['op'], registers });
    this.storageReads = new Counter({ name: 'storage_reads_total', help: 'Range requests answered by the object store (or http server) of a remote source', labelNames: ['source', 'provider'], registers });
    this.storageBytes = new Counter({ name: 'storage_read_bytes_total', help: 'Bytes read from the store of a remote source', labelNames: ['source', 'provider'], registers });
    this.storageErrors = new Counter({ name: 'storage_errors_total', help: 'Failed requests to the store of a remote source, by kind (unavailable, timeout, missing, denied, changed, invalid)', labelNames: ['source', 'provider', 'kind'], registers });

    // Beyond the spec, for a rendering host: read from the pool when scraped.
    new Gauge({
      name: 'render_queue_depth',
      help: 'Renders waiting for a renderer in this process (summed over processes)',
      registers,
      collect() {
        this.set(load().queued);
      },
    });
    new Gauge({
      name: 'render_busy_renderers',
      help: 'Renderers drawing now (summed over processes)',
      registers,
      collect() {
        this.set(load().busy);
      },
    });
    new Gauge({
      name: 'render_dirty_queue_length',
      help: 'Expired tiles waiting for an eager re-render (summed over processes)',
      registers,
      collect() {
        this.set(load().dirty);
      },
    });
    new Gauge({
      name: 'file_source_memory_bytes',
      help: 'Memory a data-file source holds between requests (in-memory features and indexes, SQLite page cache), by source; estimated',
      labelNames: ['source'],
      registers,
      collect() {
        this.reset();
        for (const [source, bytes] of fileSourceMemory()) this.set({ source }, bytes);
      },
    });
    new Gauge({
      name: 'expire_index_tiles',
      help: 'Entries of the expiry index (expired tiles, about 12 bytes each) held, summed over processes',
      registers,
      collect() {
        this.set(expiries.tiles);
      },
    });
    new Gauge({
      name: 'expire_index_bytes',
      help: "Bytes of the expiry index's arrays held, summed over processes (each process holds its own copy)",
      registers,
      collect() {
        this.set(expiries.bytes);
      },
    });
    new Counter({
      name: 'render_renderer_restarts_total',
      help: 'Renderers restarted: replaced after a failure, recycled after max_renders, or a browser page replaced',
      labelNames: ['reason'],
      registers,
      collect() {
        this.reset();
        for (const [reason, n] of Object.entries(load().restarts)) this.inc({ reason }, n);
      },
    });
  }

  requestStarted(): void {
    this.inFlight.inc();
  }

  requestDone(route: string, statusClass: string, seconds: number): void {
    this.inFlight.dec();
    const key = `${route}\u0000${statusClass}`;
    let s = this.httpSeries.get(key);
    if (!s) {
      s = { requests: this.httpRequests.labels(route, statusClass), duration: this.httpDuration.labels(route, statusClass) };
      this.httpSeries.set(key, s);
    }
    s.requests.inc();
    s.duration.observe(seconds);
  }

  /** `cache`: what the tile cache said, when it was asked (an empty tile can come from the cache too). */
  tile(source: string, format: string, zBucket: string, outcome: TileOutcome, cache: 'hit' | 'miss' | undefined, seconds: number, bytes: number | undefined): void {
    const key = `${source}\u0000${format}\u0000${zBucket}\u0000${outcome}`;
    let s = this.tileSeries.get(key);
    if (!s) {
      s = { requests: this.tileRequests.labels(source, format, zBucket, outcome), duration: this.tileDuration.labels(source, format, zBucket, outcome) };
      this.tileSeries.set(key, s);
    }
    s.requests.inc();
    s.duration.observe(seconds);
    if (cache === 'hit') this.cacheHits.inc({ source });
    else if (cache === 'miss') this.cacheMisses.inc({ source });
    if (bytes !== undefined) this.tileBytes.observe({ source, format }, bytes);
  }

  render(style: string, format: string, seconds: number): void {
    this.renderDuration.observe({ style, format }, seconds);
  }

  renderError(style: string, reason: string): void {
    this.renderErrors.inc({ style, reason });
  }

  stale(style: string): void {
    this.staleAnswers.inc({ style });
  }

  rerender(style: string, result: string): void {
    this.rerenders.inc({ style, result });
  }

  lag(style: string, seconds: number): void {
    this.freshnessLag.observe({ style }, seconds);
  }

  styleLoad(style: string): void {
    this.styleLoads.inc({ style });
  }

  bulkFrame(style: string, result: string, tiles: number): void {
    this.bulkFrames.inc({ style, result });
    if (result !== 'failed') this.bulkTiles.inc({ style }, tiles);
  }

  dirtyDrop(): void {
    this.dirtyDrops.inc();
  }

  shared(event: 'hit' | 'miss' | 'error', label: string): void {
    if (event === 'error') this.sharedErrors.inc({ op: label });
    else (event === 'hit' ? this.sharedHits : this.sharedMisses).inc({ kind: label });
  }

  storageRead(source: string, provider: string, bytes: number): void {
    this.storageReads.inc({ source, provider });
    this.storageBytes.inc({ source, provider }, bytes);
  }

  storageError(source: string, provider: string, kind: string): void {
    this.storageErrors.inc({ source, provider, kind });
  }
}
