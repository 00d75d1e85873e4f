// What one route is, declared once: its method and path, the listener that serves it, what it reads and how its
// ids come out of the path, whether it is a listing, whether a bearer header there is this service's, and the
// budget it spends. The router mounts handlers on declarations only (src/http/router.ts), and the access gate
// (src/auth/gate.ts) and the rate limiter (src/limits/limits.ts) read the same declaration of the request, found
// by Hono's rules (match.ts): a new route cannot be served without saying what it touches, and what the gate
// checks is what the route reads. The tables: public-routes.ts and admin-routes.ts.
import type { AppState } from '../state/app-state.js';

export type Method = 'get' | 'post' | 'delete' | 'put';

/** The public listener (`server.port`) or the admin listener (`server.admin_bind`, src/http/admin/listener.ts). */
export type Listener = 'public' | 'admin';

/** Which budget of the rate limits a request spends (docs/rate-limits.md). */
export type Budget = 'cheap' | 'expensive';

/** The path parameters of a matched request. */
export interface Params {
  /** The parameter `name`, decoded as Hono decodes it; undefined when the route has none of that name. */
  param(name: string): string | undefined;
}

/** A budget fixed by the route, or one that depends on the source the path names (a stored tile or a transcode). */
export type BudgetRule = Budget | ((state: AppState, params: Params) => Budget);

/**
 * What a route reads, and from which path parameter its id comes. `suffix`: the parameter is `{id}{suffix}`
 * (`/data/{source}.json` is matched as one parameter `x.json`).
 *
 * - `source`: a source, named composite or ad-hoc composite `a+b` (each member: src/sources/source-ids.ts);
 * - `collection`: an OGC collection, a source as above or one layer `{source}:{layer}` of it (src/ogc/layer-ids.ts);
 * - `style`: a configured style, or the generated style of the source of that id;
 * - `upload`: an upload named by its UUID or its source id `upload-<uuid>` (src/uploads/names.ts): that source;
 * - `shared`: the service's shared things (the files directory, uploads).
 */
export type Read =
  | { kind: 'source' | 'collection' | 'style'; param: string; suffix?: string }
  | { kind: 'upload'; param: string }
  | { kind: 'shared' };

export interface RouteDeclaration {
  readonly method: Method;
  /** OpenAPI path template, e.g. `/data/{source}/{z}/{x}/{y}.{format}`. */
  readonly path: string;
  /** The Hono pattern that matches it, e.g. `/data/:source/:z/:x/:file`. */
  readonly hono: string;
  readonly listener: Listener;
  /** What the route reads (empty: nothing protected). */
  readonly reads: readonly Read[];
  /** A listing (`/data.json`, `/ogc/collections`...): it filters itself by what the request's credentials allow. */
  readonly listing: boolean;
  /** Whether `Authorization: Bearer` may carry this service's credentials (not on /mcp and the OAuth routes: MCP's own). */
  readonly bearer: boolean;
  readonly budget: BudgetRule;
  /**
   * When the route is mounted only under a condition of the process (a render service, `[mcp]`, `[mcp.oauth]`,
   * uploads), that condition; the router then accepts that no handler comes for it. Every other declaration of a
   * listener must get its handler, or the listener does not start.
   */
  readonly mountedWith?: string;
  /** Served but left out of /openapi.json (the OAuth protocol endpoints, the 405 answers of /mcp, the admin listener). */
  readonly undocumented?: boolean;
}

type Options = Partial<Pick<RouteDeclaration, 'reads' | 'listing' | 'bearer' | 'budget' | 'mountedWith' | 'undocumented'>>;

/** A declaration with the defaults of most routes: reads nothing, no listing, bearer credentials, cheap. */
export function route(listener: Listener, method: Method, path: string, hono: string, o: Options = {}): RouteDeclaration {
  return Object.freeze({ method, path, hono, listener, reads: o.reads ?? [], listing: o.listing ?? false, bearer: o.bearer ?? true, budget: o.budget ?? 'cheap', ...(o.mountedWith ? { mountedWith: o.mountedWith } : {}), ...(o.undocumented ? { undocumented: true } : {}) });
}

export const source = (param: string, suffix?: string): Read => ({ kind: 'source', param, ...(suffix ? { suffix } : {}) });
export const collection = (param: string): Read => ({ kind: 'collection', param });
export const style = (param: string, suffix?: string): Read => ({ kind: 'style', param, ...(suffix ? { suffix } : {}) });
export const upload = (param: string): Read => ({ kind: 'upload', param });
export const SHARED: Read = { kind: 'shared' };
