// A thin registry over Hono: every route is declared with its OpenAPI description (valibot schemas for
// parameters, query and body), so /openapi.json is generated from the same definitions that route requests.
import type { Context, Hono } from 'hono';
import { toJsonSchema } from '@valibot/to-json-schema';
import * as v from 'valibot';
import type { AppState } from '../state/app-state.js';
import type { ServerResponse } from 'node:http';
import { noteRoute } from './access-log.js';
import { problem } from './problem.js';

type Schema = v.GenericSchema;

export interface ResponseDoc {
  description: string;
  /** Media types of the body; JSON schemas may be given per type. */
  content?: Record<string, Schema | true>;
  headers?: Record<string, string>;
}

export interface RouteDoc {
  method: 'get' | 'post' | 'delete' | 'put';
  /** OpenAPI path template, e.g. `/data/{source}/{z}/{x}/{y}.{format}`. */
  path: string;
  /** Hono path pattern that matches it. */
  hono: string;
  summary: string;
  tag: string;
  description?: string;
  params?: Record<string, { schema: Schema; description?: string }>;
  query?: Record<string, { schema: Schema; description?: string; required?: boolean }>;
  body?: { contentType: string; schema: Schema };
  responses: Record<number, ResponseDoc>;
}

export type Handler = (c: Context) => Response | Promise<Response>;

/**
 * Why a route is not mounted under a state (a configuration switch such as server.disable_render), or undefined
 * when it is. The configuration is reloadable, so this is asked per request and per /openapi.json document.
 */
export type Absence = (state: AppState) => string | undefined;

export class Router {
  private readonly routes: { doc: RouteDoc; absent?: Absence }[] = [];
  constructor(
    readonly app: Hono,
    /** The active state (`holder.current`). */
    private readonly current: () => AppState,
  ) {}

  /** Routes a request to `handler`; with `absent`, the route answers 404 as if it did not exist while that gives a reason. */
  add(doc: RouteDoc, handler: Handler, absent?: Absence): void {
    this.routes.push({ doc, absent });
    const gated: Handler = absent
      ? (c) => {
          const why = absent(this.current());
          return why === undefined ? handler(c) : problem(c, 404, 'Not found', `no route for ${c.req.method} ${c.req.path} (${why})`);
        }
      : handler;
    // The access log names the route template; requests a renderer makes in-process have no node response.
    const noted: Handler = (c) => {
      noteRoute((c.env as { outgoing?: ServerResponse } | undefined)?.outgoing, doc.path);
      return gated(c);
    };
    this.app.on(doc.method.toUpperCase(), doc.hono, noted);
  }

  /** The routes mounted under `state`: what /openapi.json describes. */
  docs(state: AppState): RouteDoc[] {
    return this.routes.filter((r) => r.absent?.(state) === undefined).map((r) => r.doc);
  }
}

const json = (s: Schema) => toJsonSchema(s, { target: 'draft-2020-12', errorMode: 'ignore' }) as Record<string, unknown>;

export function openApiDocument(docs: readonly RouteDoc[], version: string): Record<string, unknown> {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const d of docs) {
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
    (paths[d.path] ??= {})[d.method] = op;
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
