// What route modules get: the state holder and process-wide facts. Routes read `holder.current` once per request.
import type { Context } from 'hono';
import type { StateHolder } from '../state/holder.js';
import type { AppState } from '../state/app-state.js';
import type { UrlContext } from '../sources/tilejson.js';
import type { RenderService } from '../render/service.js';

export type RendererState = 'starting' | 'ready' | 'unavailable';

/** Facts about this process that /ping reports and later capabilities (renderer, metrics) fill in. */
export interface RuntimeStatus {
  /** A renderer backend is started and answering. */
  rendererEnabled: boolean;
  /** Name of the renderer backend in use, when one is. */
  renderer: string | undefined;
  /**
   * `starting` while renderers warm up, `ready` once one has drawn a frame, `unavailable` when none can start
   * or rendering is off (disabled, or no styles).
   */
  rendererState: RendererState;
  /** Rendering is configured (enabled, with styles): readiness waits for it. */
  rendererWanted: boolean;
  /** What the other worker processes of the cluster report as not ready (from the primary); empty alone. */
  peersNotReady: string[];
  /** The static-image and social-card routes are mounted. */
  renderRoutesMounted: boolean;
  scrapeListenerActive: boolean;
  ogcEnabled: boolean;
}

export interface ServerContext {
  holder: StateHolder;
  version: string;
  runtime: RuntimeStatus;
  /** Server-side rendering of this process (src/render/service.ts); absent when the process renders nothing. */
  render?: RenderService;
}

/** Base URL and key for the URLs of one response (decisions.md: public_url, else the request's own origin). */
export function urlContext(c: Context, state: AppState): UrlContext {
  // A renderer asking in-process (src/render/resources.ts) needs URLs that lead back to itself, not to public_url.
  const internal = (c.env as RenderRequestEnv | undefined)?.renderBase;
  const configured = state.config.server.public_url;
  const base = internal ?? (configured ? configured.replace(/\/+$/, '') : new URL(c.req.url).origin);
  return { base, key: c.req.query('key'), forRenderer: internal !== undefined };
}

/** Whether this request comes from a renderer in-process (src/render/resources.ts), not from a client. */
export function isRenderRequest(c: Context): boolean {
  return (c.env as RenderRequestEnv | undefined)?.renderBase !== undefined;
}

/** The Hono `env` of a request a renderer makes in-process through `app.fetch`. */
export interface RenderRequestEnv {
  renderBase: string;
}
