// /health, /ping, /openapi.json and the offline API reference at /_openapi.
import { readFile } from 'node:fs/promises';
import { createRequire } from 'node:module';
import path from 'node:path';
import * as v from 'valibot';
import type { ServerContext } from '../context.js';
import { openApiDocument, param, type Router } from '../router.js';
import { PUBLIC } from '../../routes/public-routes.js';
import { problem } from '../problem.js';
import { problemBody } from '../../problem.js';
import type { AppState } from '../../state/app-state.js';
import { resolvedCacheDir } from '../../config/paths.js';
import { sharedCache } from '../../shared-cache/client.js';
import { rateLimits } from '../../limits/limits.js';

export const PingSchema = v.object({
  status: v.literal('ok'),
  config_hash: v.string(),
  loaded_at_unix: v.number(),
  loaded_sources: v.number(),
  loaded_styles: v.number(),
  renderer_enabled: v.boolean(),
  renderer: v.nullable(v.string()),
  renderer_gl: v.nullable(v.string()),
  renderer_state: v.picklist(['idle', 'starting', 'ready', 'unavailable']),
  render_stats: v.object({
    queued: v.number(),
    busy: v.number(),
    rendered: v.number(),
    failed: v.number(),
    retried: v.number(),
    dropped: v.number(),
    expired: v.number(),
    pages_replaced: v.number(),
    renderers_replaced: v.number(),
    renderers_recycled: v.number(),
    start_failures: v.number(),
    /** This process's slot among the cluster's render owners (null alone), and tiles it forwarded to their owner or drew because the owner did not answer. */
    owner_slot: v.nullable(v.number()),
    forwarded: v.number(),
    owner_fallbacks: v.number(),
  }),
  scrape_listener_active: v.boolean(),
  version: v.string(),
  cache_enabled: v.boolean(),
  cache_entries: v.number(),
  cache_bytes: v.number(),
  render_enabled: v.boolean(),
  ogc_enabled: v.boolean(),
  compression_enabled: v.boolean(),
  compression_br_quality: v.number(),
  compression_zstd_level: v.number(),
  cors_origins: v.array(v.string()),
  cache_dir: v.string(),
  /** The fleet's shared cache (`[cache] shared`) as this process sees it: `off` when not configured. */
  shared_cache: v.object({
    state: v.picklist(['off', 'connecting', 'connected', 'down']),
    /** ISO 8601 time the outage began, while `down`. */
    down_since: v.nullable(v.string()),
    hits: v.number(),
    misses: v.number(),
    errors: v.number(),
  }),
  /** Rate limits (docs/rate-limits.md) as this process sees them: counting or not, and the Redis budgets are shared through. */
  rate_limits: v.object({
    enabled: v.boolean(),
    /** `off`: no Redis (each machine counts alone); `down`: Redis unreachable, this machine counts alone until it is back. */
    redis: v.picklist(['off', 'connecting', 'connected', 'down']),
  }),
});
export type Ping = v.InferOutput<typeof PingSchema>;

export const ReadySchema = v.object({
  status: v.literal('ready'),
  components: v.array(v.object({ name: v.string(), state: v.string() })),
});

interface Component {
  name: string;
  state: string;
  ready: boolean;
}

/** What readiness waits for in this process: each configured component and whether it can serve now. */
function localComponents(ctx: ServerContext): Component[] {
  const out: Component[] = [];
  // Rendering counts only when it is configured (enabled, with styles); a renderer that cannot start on this
  // machine keeps the process unready, since its render routes answer 503.
  if (ctx.runtime.rendererWanted) out.push({ name: 'renderer', state: ctx.runtime.rendererState, ready: ctx.runtime.rendererState === 'ready' });
  // The database pool of [postgres]: ready while its last contact with the database succeeded (after an outage
  // the pool probes it every few seconds, so this turns back by itself).
  const db = ctx.holder.current.postgres;
  if (db) out.push({ name: 'database', state: db.ready() ? 'connected' : 'unreachable', ready: db.ready() });
  // Sources read from object storage or an http(s) URL: unready while their store fails (their tiles answer 503);
  // each source watches its own store and turns back by itself (src/sources/object-store/reader.ts).
  for (const source of ctx.holder.current.sources.values()) {
    if (!source.storageProblem) continue;
    const problem = source.storageProblem();
    out.push({ name: `source "${source.info.id}"`, state: problem === undefined ? 'connected' : `unreachable (${problem})`, ready: problem === undefined });
  }
  return out;
}

/** What is not ready in this process, one phrase each ("renderer is starting"); empty when it is ready. */
export function localNotReady(ctx: ServerContext): string[] {
  return localComponents(ctx)
    .filter((c) => !c.ready)
    .map((c) => `${c.name} is ${c.state}`);
}

/**
 * Readiness of the service as the answering process sees it: its own components, and the other worker
 * processes' reports (connections are spread over every process, so one that is not ready makes the whole
 * service not ready yet).
 */
export function readiness(ctx: ServerContext): Component[] {
  const peers = ctx.runtime.peersNotReady.map((p) => ({ name: p.slice(0, p.indexOf(':')), state: p.slice(p.indexOf(':') + 2), ready: false }));
  return [...localComponents(ctx), ...peers];
}

/** The render pool of this process in numbers: its queue now, and what its renders and renderers went through. */
function renderStats(ctx: ServerContext): Ping['render_stats'] {
  const r = ctx.render;
  const c = r?.poolCounts;
  const e = r?.events;
  return {
    queued: r?.load.queued ?? 0,
    busy: r?.load.busy ?? 0,
    rendered: c?.rendered ?? 0,
    failed: c?.failed ?? 0,
    retried: c?.retried ?? 0,
    dropped: c?.dropped ?? 0,
    expired: c?.expired ?? 0,
    pages_replaced: e?.pagesReplaced ?? 0,
    renderers_replaced: e?.renderersReplaced ?? 0,
    renderers_recycled: e?.renderersRecycled ?? 0,
    start_failures: e?.startFailures ?? 0,
    owner_slot: r?.ownerSlot ?? null,
    forwarded: r?.peerCounts?.forwarded ?? 0,
    owner_fallbacks: r?.peerCounts?.fellBack ?? 0,
  };
}

// Still importable from here for code written before it moved to src/config/paths.ts.
export { resolvedCacheDir };

export function registerOperationalRoutes(r: Router, ctx: ServerContext): void {
  r.add(
    PUBLIC.health,
    { summary: 'Liveness', tag: 'Operational', responses: { 200: { description: 'the text OK', content: { 'text/plain': true } } } },
    (c) => c.text('OK', 200, { 'Cache-Control': 'no-store' }),
  );

  r.add(
    PUBLIC.ready,
    {
      summary: 'Readiness: 200 once every configured component can serve (renderers warmed, database and object stores reachable), else 503',
      tag: 'Operational',
      responses: {
        200: { description: 'ready', content: { 'application/json': ReadySchema } },
        503: { description: 'a component is not ready; the problem names it (Retry-After)', content: { 'application/problem+json': true }, headers: { 'Retry-After': 'seconds' } },
      },
    },
    (c) => {
      const components = readiness(ctx);
      const waiting = components.filter((x) => !x.ready);
      const list = components.map(({ name, state }) => ({ name, state }));
      if (waiting.length === 0) return c.json({ status: 'ready' as const, components: list }, 200, { 'Cache-Control': 'no-store' });
      const detail = `not ready: ${waiting.map((x) => `${x.name} is ${x.state}`).join(', ')}`;
      return new Response(JSON.stringify({ ...problemBody(503, 'Not ready', detail), components: list }), {
        status: 503,
        headers: { 'Content-Type': 'application/problem+json', 'Retry-After': '5', 'Cache-Control': 'no-store' },
      });
    },
  );

  r.add(
    PUBLIC.ping,
    {
      summary: 'State of the service (this process)',
      tag: 'Operational',
      responses: { 200: { description: 'Ping object', content: { 'application/json': PingSchema } } },
    },
    (c) => {
      const state = ctx.holder.current;
      const { config } = state;
      const body: Ping = {
        status: 'ok',
        config_hash: state.configHash,
        loaded_at_unix: state.loadedAt,
        loaded_sources: state.sources.size,
        loaded_styles: state.styles.size,
        renderer_enabled: ctx.runtime.rendererEnabled,
        renderer: ctx.runtime.renderer ?? null,
        renderer_gl: ctx.runtime.rendererGl ?? null,
        renderer_state: ctx.runtime.rendererState,
        render_stats: renderStats(ctx),
        scrape_listener_active: ctx.runtime.scrapeListenerActive,
        version: ctx.version,
        cache_enabled: state.tileCache.enabled,
        cache_entries: state.tileCache.entries,
        cache_bytes: state.tileCache.bytes,
        render_enabled: ctx.runtime.renderRoutesMounted,
        ogc_enabled: !config.server.disable_ogc,
        compression_enabled: config.compression.enabled,
        compression_br_quality: config.compression.br_quality,
        compression_zstd_level: config.compression.zstd_level,
        cors_origins: config.server.cors_origins,
        cache_dir: resolvedCacheDir(state),
        shared_cache: { ...sharedCache.state, ...sharedCache.counts },
        rate_limits: { enabled: rateLimits.enabled, redis: rateLimits.redisState },
      };
      return c.json(body, 200, { 'Cache-Control': 'no-store' });
    },
  );

  // One document per state: which routes are mounted follows the configuration (server.disable_render).
  const docs = new WeakMap<AppState, string>();
  r.add(
    PUBLIC.openapi,
    {
      summary: 'OpenAPI 3.1 description of every route mounted under the active configuration',
      tag: 'Operational',
      responses: { 200: { description: 'OpenAPI document', content: { 'application/json': true } } },
    },
    (c) => {
      // Built on first use, when every route module has registered.
      const state = ctx.holder.current;
      let doc = docs.get(state);
      if (doc === undefined) docs.set(state, (doc = JSON.stringify(openApiDocument(r.docs(state), ctx.version))));
      return c.body(doc, 200, { 'Content-Type': 'application/json; charset=utf-8', 'Cache-Control': 'no-cache' });
    },
  );

  // The reference UI is swagger-ui from the npm package, served from here: it works with no internet.
  const uiDir = path.dirname(createRequire(import.meta.url).resolve('swagger-ui-dist/package.json'));
  // A Map: the asset name comes from the URL, and `constructor` must find nothing (not a file to read).
  const assets = new Map<string, string>([
    ['swagger-ui.css', 'text/css; charset=utf-8'],
    ['swagger-ui-bundle.js', 'text/javascript; charset=utf-8'],
  ]);
  r.add(
    PUBLIC.openapiViewer,
    {
      summary: 'Interactive API reference (works offline)',
      tag: 'Operational',
      responses: { 200: { description: 'HTML page', content: { 'text/html': true } } },
    },
    (c) => c.html(REFERENCE_PAGE, 200, { 'Cache-Control': 'no-cache' }),
  );
  r.add(
    PUBLIC.openapiAsset,
    {
      summary: 'Assets of the API reference page',
      tag: 'Operational',
      params: { asset: { schema: v.picklist([...assets.keys()]) } },
      responses: { 200: { description: 'asset' }, 404: { description: 'unknown asset' } },
    },
    async (c) => {
      const name = param(c, 'asset');
      const type = assets.get(name);
      if (!type) return problem(c, 404, 'Not found', `no asset "${name}"`);
      const bytes = await readFile(path.join(uiDir, name));
      return c.body(bytes, 200, { 'Content-Type': type, 'Cache-Control': 'public, max-age=86400' });
    },
  );
}

const REFERENCE_PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>tileserver-ts API reference</title>
<link rel="stylesheet" href="/_openapi/swagger-ui.css">
</head>
<body>
<div id="reference"></div>
<script src="/_openapi/swagger-ui-bundle.js"></script>
<script>
  window.ui = SwaggerUIBundle({ url: '/openapi.json', dom_id: '#reference', deepLinking: true });
</script>
</body>
</html>
`;
