// The render pool of one HTTP process across reloads: started in the background when the state has something to
// render (at once for configured styles, on the first render request when only generated styles exist), the
// GL stacks and backends tried in order until one draws its canary frame, restarted when the [render] settings
// change, stopped when nothing is left to render. It keeps the runtime status (/ping, /ready) true meanwhile.
import { createHash } from 'node:crypto';
import type { LanguageTag } from '../config/language-tag.js';
import type { RenderConfig } from '../config/schema.js';
import { renderersPerProcess } from '../config/sizing.js';
import { startValues } from '../config/restart-only.js';
import type { Logger } from '../log.js';
import type { RuntimeStatus } from '../runtime.js';
import { firstRenderableStyle } from '../serve/generated.js';
import type { AppState } from '../state/app-state.js';
import type { LoadedStyle } from '../styles/loaded-style.js';
import { backendCandidates } from './backends/select.js';
import { RenderPool } from './pool.js';
import { RenderError, type RendererEvent, type StyleRef } from './renderer.js';
import { inProcessFetcher, type AppFetch } from './resources.js';
import { remoteRevisions } from '../shared-cache/identity.js';
import { withExpiredTiles } from './expired-source-tiles.js';

/** Largest frame edge a renderer draws at once (SwiftShader allows 8192; memory per frame stays bounded). */
export const MAX_FRAME = 4096;
/** How long a request waits for renderers that are still starting. */
export const START_WAIT_MS = 60_000;

/**
 * Renderer identity of a style in a state (changes with the style, the configuration, any reload, or a remote
 * archive replaced in its store): a page keeps the tiles it parsed while the key stays, so the key must change
 * whenever those tiles may have, but for expiries: `revision` (the last expiry of a source the style draws) lets
 * a renderer reload only the tiles an expiry reached (expired-source-tiles.ts).
 */
export function styleRef(state: AppState, style: LoadedStyle, lang?: LanguageTag, revision = 0): StyleRef {
  const key = createHash('sha256').update(`${style.hash}\n${state.configHash}\n${state.loadedAt}\n${remoteRevisions(state)}\n${lang?.tag ?? ''}`).digest('hex').slice(0, 16);
  const ref: StyleRef = lang ? { id: style.id, key, lang: lang.tag } : { id: style.id, key };
  if (revision) ref.revision = revision;
  return ref;
}

export class RenderPoolKeeper {
  private pool: RenderPool | undefined;
  private starting: Promise<void> | undefined;
  private reason: string | undefined = 'rendering has not started';
  private poolKey: string | undefined;
  /** Starts the pool of the current state when the first render asks for it (only generated styles to render). */
  private deferredStart: (() => void) | undefined;
  /** Counts pool changes: a pool that finishes starting after a newer change closes itself. */
  private generation = 0;
  private workers: AppState['config']['server']['workers'] | undefined;
  /** The pool being warmed up, so that a stop does not wait for its browsers to start. */
  private warming: RenderPool | undefined;
  private fetcher: AppFetch | undefined;
  /** The state last followed: renderer pages ask which of their source tiles it has expired. */
  private state: AppState | undefined;
  /** Renderer replacements and failed starts since this process started (logged as they happen). */
  readonly events = { pagesReplaced: 0, renderersReplaced: 0, renderersRecycled: 0, startFailures: 0 };
  private closed = false;

  constructor(
    private readonly runtime: RuntimeStatus,
    private readonly log: Logger,
    /** Pools keep a renderer for interactive renders (false: `tileserver-ts seed`, where no one asks interactively). */
    private readonly reserveInteractive = true,
  ) {}

  /** The app whose routes answer the renderers' resource requests (in-process). */
  attach(fetch: AppFetch): void {
    this.fetcher = fetch;
  }

  /** Follows the active state: starts, keeps, restarts or stops the pool. */
  follow(state: AppState): void {
    if (this.closed) return;
    this.state = state;
    const cfg = state.config.render;
    this.runtime.renderRoutesMounted = !state.config.server.disable_render;
    // Generated styles are rendered too: a vector source is something to render even without a configured style.
    const firstStyle = firstRenderableStyle(state);
    const wanted = !state.config.server.disable_render && firstStyle !== undefined;
    // The number of worker processes cannot change without a restart: size pools by the one the process began with.
    this.workers ??= startValues(state.config).server.workers;
    const key = JSON.stringify(cfg);
    if (!wanted) {
      this.reason = state.config.server.disable_render ? 'server.disable_render is set' : 'no styles are configured and no vector source has a generated style';
      void this.stop();
      this.runtime.rendererState = 'unavailable';
      this.runtime.rendererWanted = false;
      return;
    }
    if (key === this.poolKey && (this.pool || this.starting)) return;
    // The old pool (if any) is closed before the new one starts: never two sets of browsers at once.
    const previous = this.stop();
    this.poolKey = key;
    const generation = this.generation;
    const start = () => {
      const starting = previous.then(() => this.start(cfg, state, firstStyle!, generation));
      this.starting = starting;
      const done = () => {
        if (this.starting === starting) this.starting = undefined;
      };
      starting.then(done, done);
    };
    // With generated styles only (archives served without a config, say), browsers start with the first render
    // request instead of in every server that may never render.
    // Readiness waits only for a pool that starts with the process; one started on demand is reported by
    // renderer_state (idle until asked, then starting and ready) but never holds the service back.
    this.runtime.rendererWanted = state.styles.size > 0;
    if (state.styles.size > 0) {
      this.runtime.rendererState = 'starting';
      start();
    } else {
      // Rendering works (the first request starts the browsers): enabled, and idle until asked.
      this.runtime.rendererEnabled = true;
      this.runtime.rendererState = 'idle';
      this.deferredStart = start;
    }
  }

  private async start(cfg: RenderConfig, state: AppState, warmStyle: LoadedStyle, generation: number): Promise<void> {
    const fetcher = this.fetcher;
    if (!fetcher) throw new Error('RenderPoolKeeper.attach was not called');
    this.runtime.rendererEnabled = false;
    this.runtime.renderer = undefined;
    this.runtime.rendererState = 'starting';
    const renderers = renderersPerProcess(cfg.pool_size, this.workers ?? 'auto');
    const choice = await backendCandidates(cfg);
    const reasons = [...choice.reasons];
    /** GL stacks passed over because their canary failed (only these make a slower start worth a warning). */
    const glPassedOver: string[] = [];
    for (const [i, c] of choice.candidates.entries()) {
      // A candidate with another after it is a trial: its failed starts are the next candidate's business.
      const trial = i < choice.candidates.length - 1;
      const pages = c.backend === 'chromium' ? Math.min(cfg.pages_per_browser, renderers) : 1;
      const pool = new RenderPool({
        backend: c.backend,
        threads: Math.ceil(renderers / pages),
        pages,
        timeoutMs: cfg.timeout_ms,
        maxQueue: cfg.max_queue,
        queueTimeoutMs: cfg.queue_timeout_ms,
        maxRenders: cfg.max_renders,
        maxFrame: MAX_FRAME,
        chromiumPath: c.chromiumPath,
        flatExtrusions: cfg.flat_extrusions,
        gl: c.gl,
        fetch: withExpiredTiles(inProcessFetcher(fetcher), () => this.state),
        onThreadError: (err) => this.log.error({ err: err.message }, 'render thread error'),
        onEvent: (e, thread) => this.onRendererEvent(e, thread, trial && this.pool !== pool),
        reserveInteractive: this.reserveInteractive,
      });
      this.warming = pool;
      try {
        // The warm-up loads a style and draws a frame: allow it more than one render's time (browser start).
        await pool.warmUp(styleRef(state, warmStyle), Math.max(cfg.timeout_ms, START_WAIT_MS));
      } catch (err) {
        await pool.close();
        if (generation !== this.generation) return;
        reasons.push(`${c.backend}${c.gl ? ` (${c.gl})` : ''}: ${(err as Error).message}`);
        if (c.gl) glPassedOver.push(`${c.gl}: ${(err as Error).message}`);
        continue;
      } finally {
        if (this.warming === pool) this.warming = undefined;
      }
      // Stopped or replaced while starting (a reload, a shutdown): this pool is not wanted any more.
      if (this.closed || generation !== this.generation) return void (await pool.close());
      this.pool = pool;
      this.reason = undefined;
      this.runtime.rendererEnabled = true;
      this.runtime.renderer = c.backend;
      this.runtime.rendererGl = c.gl;
      this.runtime.rendererState = 'ready';
      // A GL stack passed over (its canary failed) is worth a warning: this host renders slower than it could.
      if (glPassedOver.length) this.log.warn({ gl: c.gl, passed_over: glPassedOver }, 'renderer started on a slower GL stack');
      this.log.info({ backend: c.backend, gl: c.gl, threads: Math.ceil(renderers / pages), pages }, 'renderer ready');
      return;
    }
    if (generation !== this.generation) return;
    this.reason = `no renderer could start: ${reasons.join('; ')}`;
    this.runtime.rendererState = 'unavailable';
    this.log.warn(this.reason);
  }

  /** Logs and counts what happened to a renderer; a crash loop is an error, routine recycling is info. */
  private onRendererEvent(e: RendererEvent, thread: number, trial = false): void {
    const fields = { thread, reason: e.reason, failures: e.failures, backoff_ms: e.backoffMs };
    // A GL stack (or backend) being tried that does not start: the next candidate starts at once, no back-off, and
    // the outcome is logged once by start() (a warning naming what was passed over).
    if (trial && e.kind === 'renderer-start-failed') return this.log.info(fields, 'renderer candidate did not start; trying the next');
    switch (e.kind) {
      case 'page-replaced':
      case 'map-replaced':
        this.events.pagesReplaced++;
        return this.log.warn(fields, e.kind === 'page-replaced' ? 'renderer page failed and was replaced' : 'native map failed and was replaced');
      case 'renderer-replaced':
        this.events.renderersReplaced++;
        return (e.failures ?? 0) > 1
          ? this.log.error(fields, 'renderer crash loop: renderers keep failing before their first frame; backing off')
          : this.log.warn(fields, 'renderer failed and is being replaced');
      case 'renderer-recycled':
        this.events.renderersRecycled++;
        return this.log.info(fields, 'renderer recycled');
      case 'encoder-fallback':
        return this.log.warn(fields, 'renderer page writes PNGs without its deflate module');
      case 'renderer-start-failed':
        this.events.startFailures++;
        // Not ready until a renderer draws again (drew() flips it back): a load balancer should look elsewhere.
        if (this.pool) this.runtime.rendererState = 'unavailable';
        return this.log.error(fields, 'renderer did not start; backing off before the next try');
    }
  }

  /** A renderer of `pool` has drawn: after failed starts, the pool is ready again. */
  drew(pool: RenderPool): void {
    if (this.pool === pool) this.runtime.rendererState = 'ready';
  }

  /** Renders waiting for a renderer and renders being drawn in this process now. */
  get load(): { queued: number; busy: number } {
    return { queued: this.pool?.queued ?? 0, busy: this.pool?.busy ?? 0 };
  }

  /** Counters of the current pool (renders done, failed, retried, dropped, expired in the queue). */
  get counts(): RenderPool['counts'] | undefined {
    return this.pool?.counts;
  }

  /** Takes the pool out of service now; resolves when it (and any pool still starting) is closed. */
  private stop(): Promise<void> {
    this.generation++;
    const pool = this.pool;
    const starting = this.starting;
    // A pool still warming up is closed now, not after its browsers have finished starting.
    void this.warming?.close();
    this.warming = undefined;
    this.pool = undefined;
    this.starting = undefined;
    this.poolKey = undefined;
    this.deferredStart = undefined;
    this.runtime.rendererEnabled = false;
    this.runtime.renderer = undefined;
    this.runtime.rendererGl = undefined;
    this.runtime.rendererState = 'unavailable';
    return Promise.all([pool?.close(), starting?.catch(() => {})]).then(() => {});
  }

  async close(): Promise<void> {
    this.closed = true;
    await this.stop();
  }

  /** The pool, starting it if it waits for a first render and waiting while it starts; RenderError 'unavailable' when there is none. */
  async ready(): Promise<RenderPool> {
    const deferred = this.deferredStart;
    this.deferredStart = undefined;
    deferred?.();
    if (this.starting) await Promise.race([this.starting.catch(() => {}), new Promise((r) => setTimeout(r, START_WAIT_MS).unref())]);
    if (this.pool) return this.pool;
    throw new RenderError('unavailable', this.starting ? 'the renderer is still starting' : (this.reason ?? 'rendering is not available'));
  }
}
