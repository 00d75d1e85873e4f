// What route modules get: the state holder and process-wide facts. Routes read `holder.current` once per request.
import type { Context } from 'hono';
import type { StateHolder } from '../state/holder.js';
import type { AppState } from '../state/app-state.js';
import type { UrlContext } from '../sources/tilejson.js';
import type { RenderService } from '../render/service.js';
import type { RenderRequestEnv, RuntimeStatus } from '../runtime.js';
import type { Uploads } from '../uploads/service.js';

// Still importable from here for code written before they moved to src/runtime.ts.
export type { RenderRequestEnv, RuntimeStatus };

export interface ServerContext {
  holder: StateHolder;
  version: string;
  runtime: RuntimeStatus;
  /** Server-side rendering of this process (src/render/service.ts); absent when the process renders nothing. */
  render?: RenderService;
  /** The uploads this process serves (src/uploads/); kept across reloads. */
  uploads?: Uploads;
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
