// The router of the public listener over Hono: it mounts handlers on the declarations of
// src/routes/public-routes.ts only, in the table's order, so that the access gate and the rate limiter, which read
// the same table before Hono runs, see each request routed where Hono routes it. Each documented route carries its
// OpenAPI description (valibot schemas for parameters, query and body), so /openapi.json is generated from the
// same declarations that route requests.
import type { Context, Hono } from 'hono';
import { toJsonSchema } from '@valibot/to-json-schema';
import * as v from 'valibot';
import type { AppState } from '../state/app-state.js';
import type { ServerResponse } from 'node:http';
import type { RouteDeclaration } from '../routes/declaration.js';
import { PUBLIC_ROUTES } from '../routes/public-routes.js';
import { noteRoute } from './access-log.js';
import { problem } from './problem.js';

type Schema = v.GenericSchema;

export interface ResponseDoc {
  description: string;
  /** Media types of the body; JSON schemas may be given per type. */
  content?: Record<string, Schema | true>;
  headers?: Record<string, string>;
}

/** The OpenAPI description of a route; its method and path are its declaration's. */
export interface RouteDoc {
  summary: string;
  tag: string;
  description?: string;
  params?: Record<string, { schema: Schema; description?: string }>;
  query?: Record<string, { schema: Schema; description?: string; required?: boolean }>;
  body?: { contentType: string; schema: Schema };
  responses: Record<number, ResponseDoc>;
}

/** A documented route as /openapi.json describes it. */
export interface DocumentedRoute {
  route: RouteDeclaration;
  doc: RouteDoc;
}

export type Handler = (c: Context) => Response | Promise<Response>;

/**
 * Why a route is not mounted under a state (a configuration switch such as server.disable_render), or undefined
 * when it is. The configuration is reloadable, so this is asked per request and per /openapi.json document.
 */
export type Absence = (state: AppState) => string | undefined;

interface Bound {
  route: RouteDeclaration;
  doc: RouteDoc | undefined;
  handler: Handler;
  absent?: Absence;
  /** Served, but left out of /openapi.json while it gives a reason (the feature writes while no table is writable). */
  hidden?: Absence;
}

/** A route that cannot be mounted as it is declared: the listener does not start. */
export class RouteTableError extends Error {}

export class Router {
  private readonly bound = new Map<RouteDeclaration, Bound>();
  private mounted: Bound[] | undefined;
  constructor(
    private readonly app: Hono,
    /** The active state (`holder.current`). */
    private readonly current: () => AppState,
    /** The declarations this router may mount (the public table; a test may give another). */
    private readonly table: readonly RouteDeclaration[] = PUBLIC_ROUTES,
  ) {}

  /**
   * Binds `handler` to a declared route; with `absent`, the route answers 404 as if it did not exist while that
   * gives a reason. `doc` is its OpenAPI description: required unless the declaration is `undocumented`.
   */
  add(route: RouteDeclaration, doc: RouteDoc | undefined, handler: Handler, absent?: Absence, hidden?: Absence): void {
    const where = `${route.method.toUpperCase()} ${route.path}`;
    if (this.mounted) throw new RouteTableError(`${where}: added after the routes were mounted`);
    if (!this.table.includes(route)) throw new RouteTableError(`${where}: not a declaration of the route table (src/routes/)`);
    if (this.bound.has(route)) throw new RouteTableError(`${where}: a handler is bound to it twice`);
    if ((doc === undefined) !== (route.undocumented === true)) throw new RouteTableError(`${where}: ${doc ? 'declared undocumented but given' : 'has no'} OpenAPI description`);
    this.bound.set(route, { route, doc, handler, absent, hidden });
  }

  /**
   * Mounts every bound route on Hono in the table's order, and checks that the table and the app agree: every
   * declaration without a mounting condition has a handler, and Hono holds no route the table does not declare.
   * Throws RouteTableError otherwise.
   */
  mount(): void {
    if (this.mounted) throw new RouteTableError('the routes are mounted already');
    const missing = this.table.filter((r) => !r.mountedWith && !this.bound.has(r)).map((r) => `${r.method.toUpperCase()} ${r.path}`);
    if (missing.length) throw new RouteTableError(`declared routes without a handler: ${missing.join(', ')}`);
    const handlers = new Set<unknown>();
    this.mounted = [];
    for (const route of this.table) {
      const b = this.bound.get(route);
      if (!b) continue;
      const noted = this.wrap(b);
      handlers.add(noted);
      this.app.on(route.method.toUpperCase(), route.hono, noted);
      this.mounted.push(b);
    }
    // Middleware is mounted for every method ('ALL'); any other route of the app came from outside the table.
    const stray = this.app.routes.filter((r) => r.method !== 'ALL' && !handlers.has(r.handler)).map((r) => `${r.method} ${r.path}`);
    if (stray.length) throw new RouteTableError(`routes mounted without a declaration: ${stray.join(', ')}`);
  }

  private wrap(b: Bound): Handler {
    const { absent, handler, route } = b;
    const gated: Handler = absent
      ? (c) => {
          const why = absent(this.current());
          return why === undefined ? handler(c) : problem(c, 404, 'Not found', `no route for ${c.req.method} ${c.req.path} (${why})`);
        }
      : handler;
    // The access log names the route template; requests a renderer makes in-process have no node response.
    return (c) => {
      noteRoute((c.env as { outgoing?: ServerResponse } | undefined)?.outgoing, route.path);
      return gated(c);
    };
  }

  /** Answers a request in-process through the whole app (the MCP tools call the routes this way). */
  fetch(req: Request, env: unknown): Promise<Response> {
    return Promise.resolve(this.app.fetch(req, env));
  }

  /** The documented routes mounted under `state`: what /openapi.json describes. */
  docs(state: AppState): DocumentedRoute[] {
    return (this.mounted ?? []).filter((b): b is Bound & { doc: RouteDoc } => b.doc !== undefined && b.absent?.(state) === undefined && b.hidden?.(state) === undefined).map((b) => ({ route: b.route, doc: b.doc }));
  }
}

const json = (s: Schema) => toJsonSchema(s, { target: 'draft-2020-12', errorMode: 'ignore' }) as Record<string, unknown>;

export function openApiDocument(routes: readonly DocumentedRoute[], version: string): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const { route, doc: d } of routes) {
    const parameters: unknown[] = [];
    for (const [name, p] of Object.entries(d.params ?? {})) {
      parameters.push({ name, in: 'path', required: true, description: p.description, schema: json(p.schema) });
    }
    for (const [name, q] of Object.entries(d.query ?? {})) {
      parameters.push({ name, in: 'query', required: q.required ?? false, description: q.description, schema: json(q.schema) });
    }
    const responses: Record<string, unknown> = {};
    for (const [status, r] of Object.entries(d.responses)) {
      const content = r.content
        ? Object.fromEntries(Object.entries(r.content).map(([type, s]) => [type, s === true ? {} : { schema: json(s) }]))
        : undefined;
      const headers = r.headers ? Object.fromEntries(Object.entries(r.headers).map(([h, desc]) => [h, { description: desc, schema: { type: 'string' } }])) : undefined;
      responses[status] = { description: r.description, ...(content ? { content } : {}), ...(headers ? { headers } : {}) };
    }
    const op: Record<string, unknown> = {
      summary: d.summary,
      tags: [d.tag],
      ...(d.description ? { description: d.description } : {}),
      ...(parameters.length ? { parameters } : {}),
      ...(d.body ? { requestBody: { required: true, content: { [d.body.contentType]: { schema: json(d.body.schema) } } } } : {}),
      responses,
    };
    (paths[route.path] ??= {})[route.method] = op;
  }
  return {
    openapi: '3.1.0',
    info: { title: 'tileserver-ts', version, description: 'Map tiles, styles, fonts and rendered maps.' },
    paths,
  };
}

/** Query-parameter doc shared by every metadata route that forwards an API key into its URLs. */
export const KEY_QUERY = { key: { schema: v.string(), description: 'API key: checked when `[auth]` protects what the route serves (docs/access.md), and forwarded into every URL of the response.' } };

/** The query of routes that serve a PostGIS table's tiles or TileJSON: a filtered view (docs/postgres.md). */
export const FILTER_QUERY = {
  ...KEY_QUERY,
  filter: { schema: v.string(), description: 'CQL2 filter over the table\'s queryables (PostGIS tables only; docs/postgres.md, "Filtered tiles")' },
  'filter-lang': { schema: v.picklist(['cql2-text', 'cql2-json']), description: 'default cql2-text' },
  properties: { schema: v.string(), description: 'properties carried by the tile, separated by commas (empty: none)' },
};

/** A path parameter the route pattern guarantees (Hono's untyped Context cannot know that). */
export function param(c: Context, name: string): string {
  return c.req.param(name) ?? '';
}
