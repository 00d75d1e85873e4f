// Remote XYZ tile sources (`type = "xyz"`, docs/xyz.md): tiles fetched one by one from another tile server by a
// URL template, then cached, transcoded, composited, rendered and seeded like any source's (the tile service in
// front does all that; this module only fetches).
//
// What a failure looks like to a client: the upstream's 5xx or a connection error (after `retries` further tries)
// is 502 `Upstream failed`, no answer within `timeout_ms` is 504 `Upstream timeout`, a 429 is 503 with Retry-After,
// and more than `max_concurrency` requests in flight plus `max_queue` waiting is 503 with Retry-After. A request
// never waits longer than `timeout_ms` for a slot plus `timeout_ms` for each try, so a render that needs an
// xyz tile is never held by a silent upstream. When a failed tile was read successfully before, the error carries
// that copy (a per-process LRU of `stale_cache_mb`, beyond the tile cache's TTL) and the client gets it marked
// stale instead of the error. The upstream's health is not part of readiness: a third party's outage must not
// take this service out of its load balancer while cached and stale tiles can still be served.
//
// Secrets: `headers_env` names environment variables, read here when the source opens, so keys are never in the
// configuration file or the parsed configuration. Messages and logs name the URL without its query string and
// never a header.
import { LRUCache } from 'lru-cache';
import type { XyzSourceConfig } from '../../config/schema.js';
import { expandUrl, parseUrlTemplate, redactedUrl, subdomainOf, type UrlTemplate } from '../../config/xyz-template.js';
import { log } from '../../log.js';
import type { TileFormat } from '../../tiles/format.js';
import { describedSource, parseVectorLayers, SourceOpenError, TileUnavailableError, WORLD_BOUNDS, type Bounds, type SourceInfo, type TileSource } from '../source.js';
import { Limiter, QueueFullError } from '../object-store/limiter.js';

export const XYZ_DEFAULTS = { timeout_ms: 10_000, max_concurrency: 16, max_queue: 256, retries: 1, stale_cache_mb: 16 } as const;
/** Seconds a client is asked to wait when the queue is full or the upstream throttles without saying how long. */
const RETRY_AFTER = 1;
const MAX_REDIRECTS = 3;

/** Why one try failed: `retry` for a connection error or a 5xx. */
class Attempt extends Error {
  constructor(
    readonly status: 502 | 503 | 504,
    readonly title: string,
    readonly reason: string,
    readonly retry: boolean,
    readonly retryAfter?: number,
  ) {
    super(reason);
  }
}

export class XyzSource implements TileSource {
  private readonly limiter: Limiter;
  private readonly stale: LRUCache<string, Uint8Array> | undefined;
  private readonly timeoutMs: number;
  private readonly retries: number;
  private readonly where: string;

  private constructor(
    readonly info: SourceInfo,
    private readonly template: UrlTemplate,
    private readonly cfg: XyzSourceConfig,
    private readonly headers: Record<string, string>,
  ) {
    this.timeoutMs = cfg.timeout_ms ?? XYZ_DEFAULTS.timeout_ms;
    this.retries = cfg.retries ?? XYZ_DEFAULTS.retries;
    this.limiter = new Limiter(cfg.max_concurrency ?? XYZ_DEFAULTS.max_concurrency, cfg.max_queue ?? XYZ_DEFAULTS.max_queue);
    const mb = cfg.stale_cache_mb ?? XYZ_DEFAULTS.stale_cache_mb;
    this.stale = mb > 0 ? new LRUCache({ maxSize: Math.max(1, Math.floor(mb * 1024 * 1024)), sizeCalculation: (b) => Math.max(1, b.byteLength) }) : undefined;
    this.where = redactedUrl(cfg.url ?? cfg.path);
  }

  /** Checks the template and reads the header values from the environment; no request is made (an upstream down at start must not stop the service). */
  static async open(cfg: XyzSourceConfig, env: NodeJS.ProcessEnv = process.env): Promise<XyzSource> {
    const url = cfg.url ?? cfg.path;
    const template = parseUrlTemplate(url);
    if (typeof template === 'string') throw new SourceOpenError(cfg.id, `url: ${template}`);
    if (!cfg.format) throw new SourceOpenError(cfg.id, 'an xyz source needs format');
    const headers: Record<string, string> = { ...(cfg.headers ?? {}) };
    for (const [name, variable] of Object.entries(cfg.headers_env ?? {})) {
      const value = env[variable];
      if (value === undefined || value === '') throw new SourceOpenError(cfg.id, `headers_env: the environment variable ${variable} (for the ${name} header) is not set`);
      if (/[\r\n\0]/.test(value)) throw new SourceOpenError(cfg.id, `headers_env: the environment variable ${variable} (for the ${name} header) holds a line break`);
      headers[name] = value;
    }
    const format = cfg.format as TileFormat;
    const vector = format === 'pbf' || format === 'mlt';
    const minzoom = cfg.minzoom ?? 0;
    const maxzoom = cfg.maxzoom ?? 22;
    const bounds = (cfg.bounds as Bounds | undefined) ?? WORLD_BOUNDS;
    const info: SourceInfo = {
      ...describedSource(cfg, minzoom, maxzoom, bounds),
      type: 'xyz',
      format,
      // Bytes are kept as the upstream sent them; the tile service recognises gzip'd MVT by its magic bytes.
      compression: 'none',
      // TileJSON 3.0.0 requires vector_layers for vector tiles: an empty list when the configuration names none.
      ...(vector ? { vectorLayers: parseVectorLayers(cfg.vector_layers ?? []) ?? [] } : {}),
    };
    return new XyzSource(info, template, cfg, headers);
  }

  async getTile(z: number, x: number, y: number): Promise<Uint8Array | undefined> {
    const key = `${z}/${x}/${y}`;
    const url = expandUrl(this.template, z, x, y, subdomainOf(this.cfg.subdomains ?? [], x, y), this.cfg.scheme === 'tms');
    try {
      const bytes = await this.limiter.run(() => this.fetchWithRetries(url), AbortSignal.timeout(this.timeoutMs));
      if (bytes) this.stale?.set(key, bytes);
      else this.stale?.delete(key);
      return bytes;
    } catch (err) {
      const stale = this.stale?.get(key);
      if (err instanceof QueueFullError || (err as Error)?.name === 'TimeoutError') {
        const detail = `source "${this.info.id}": too many upstream requests waiting; try again shortly`;
        throw new TileUnavailableError(503, 'Upstream busy', detail, RETRY_AFTER, stale);
      }
      if (err instanceof Attempt) {
        log.warn({ source: this.info.id, upstream: this.where, z, x, y, reason: err.reason, stale: stale !== undefined }, 'xyz upstream failed');
        throw new TileUnavailableError(err.status, err.title, `source "${this.info.id}": the upstream tile server ${err.reason}`, err.retryAfter, stale);
      }
      throw err;
    }
  }

  private async fetchWithRetries(url: string): Promise<Uint8Array | undefined> {
    for (let attempt = 0; ; attempt++) {
      try {
        return await this.fetchOnce(url);
      } catch (err) {
        if (!(err instanceof Attempt) || !err.retry || attempt >= this.retries) throw err;
      }
    }
  }

  private async fetchOnce(url: string): Promise<Uint8Array | undefined> {
    const signal = AbortSignal.timeout(this.timeoutMs);
    let res: Response;
    try {
      res = await this.fetchFollowing(url, signal);
    } catch (err) {
      if (err instanceof Attempt) throw err;
      throw failure(err, this.timeoutMs);
    }
    try {
      if (res.status === 204 || res.status === 404) {
        await res.body?.cancel();
        return undefined;
      }
      if (res.status === 200) {
        const body = new Uint8Array(await res.arrayBuffer());
        return body.byteLength ? body : undefined;
      }
      await res.body?.cancel();
      if (res.status === 429) {
        const after = Number(res.headers.get('retry-after'));
        throw new Attempt(503, 'Upstream busy', 'throttled the request (HTTP 429)', false, Number.isInteger(after) && after > 0 ? Math.min(after, 3600) : RETRY_AFTER);
      }
      return failStatus(res.status);
    } catch (err) {
      if (err instanceof Attempt) throw err;
      throw failure(err, this.timeoutMs);
    }
  }

  /**
   * A GET that follows up to MAX_REDIRECTS redirects itself: the headers go along only while the origin stays the
   * upstream's, so a redirect to another host (a CDN, or anyone) never receives the source's keys.
   */
  private async fetchFollowing(url: string, signal: AbortSignal): Promise<Response> {
    const origin = new URL(url).origin;
    let at = url;
    for (let hops = 0; ; hops++) {
      const sameOrigin = new URL(at).origin === origin;
      const res = await fetch(at, { headers: sameOrigin ? this.headers : {}, signal, redirect: 'manual' });
      const location = res.headers.get('location');
      if (res.status < 300 || res.status > 399 || res.status === 304 || !location) return res;
      await res.body?.cancel();
      if (hops >= MAX_REDIRECTS) throw new Attempt(502, 'Upstream failed', `redirected more than ${MAX_REDIRECTS} times`, false);
      at = new URL(location, at).href;
      if (!/^https?:$/.test(new URL(at).protocol)) throw new Attempt(502, 'Upstream failed', 'redirected to a URL that is not http(s)', false);
    }
  }

  async close(): Promise<void> {
    this.stale?.clear();
  }
}

function failStatus(status: number): never {
  if (status >= 500) throw new Attempt(502, 'Upstream failed', `answered HTTP ${status}`, true);
  throw new Attempt(502, 'Upstream failed', `answered HTTP ${status}${status === 401 || status === 403 ? ' (check the source\'s headers_env)' : ''}`, false);
}

/** A fetch that threw: the timeout (504, not retried: the client has waited long enough) or a connection error (502, retried). */
function failure(err: unknown, timeoutMs: number): Attempt {
  if ((err as Error)?.name === 'TimeoutError' || (err as Error)?.name === 'AbortError') return new Attempt(504, 'Upstream timeout', `did not answer within ${timeoutMs} ms`, false);
  let e = err as { code?: string; cause?: unknown } | undefined;
  while (e?.cause && !e.code) e = e.cause as typeof e;
  return new Attempt(502, 'Upstream failed', `could not be reached (${e?.code ?? 'connection error'})`, true);
}
