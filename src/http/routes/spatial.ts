// Spatial API: /api/spatial/schema/{source}, /api/spatial/stats/{source} and POST /api/spatial/query.
import type { Context } from 'hono';
import * as v from 'valibot';
import { isProblem, resolveSource } from '../../serve/resolve.js';
import { spatialSchema, spatialStats } from '../../spatial/describe.js';
import { runQuery } from '../../spatial/query.js';
import { parseQueryBody, QueryBodySchema } from '../../spatial/query-body.js';
import type { ServerContext } from '../context.js';
import { refuseSources } from '../access-gate.js';
import { problem } from '../problem.js';
import { readBoundedText } from '../body.js';
import { sendJson } from '../respond.js';
import { param, type Router } from '../router.js';
import { PUBLIC } from '../../routes/public-routes.js';

const PROBLEM = { 'application/problem+json': true as const };
/** A query body is a few hundred bytes; anything past this is not one. */
const MAX_BODY_BYTES = 64 * 1024;
const NO_STORE = 'no-store';

const SOURCE_PARAM = { source: { schema: v.string(), description: 'source id, composite id, or source ids joined by "+"' } };

const SchemaDoc = v.object({
  source: v.string(),
  format: v.string(),
  minzoom: v.number(),
  maxzoom: v.number(),
  bounds: v.array(v.number()),
  layers: v.array(v.object({ id: v.string(), minzoom: v.number(), maxzoom: v.number(), fields: v.array(v.object({ name: v.string(), type: v.string() })) })),
});
const StatsDoc = v.object({
  source: v.string(),
  format: v.string(),
  minzoom: v.number(),
  maxzoom: v.number(),
  bounds: v.array(v.number()),
  center: v.array(v.number()),
  layer_count: v.number(),
  name: v.string(),
  description: v.string(),
  attribution: v.string(),
});
const QueryResponseDoc = v.object({
  source: v.string(),
  zoom: v.number(),
  bbox: v.array(v.number()),
  features: v.array(
    v.object({
      layer: v.string(),
      geometry_type: v.string(),
      properties: v.record(v.string(), v.union([v.string(), v.number(), v.boolean()])),
      id: v.optional(v.union([v.string(), v.number()])),
      geometry: v.object({ type: v.string(), coordinates: v.array(v.unknown()) }),
    }),
  ),
  total: v.number(),
  truncated: v.boolean(),
});

export function registerSpatialRoutes(r: Router, ctx: ServerContext): void {
  for (const [kind, doc, describe] of [
    ['schema', SchemaDoc, spatialSchema],
    ['stats', StatsDoc, spatialStats],
  ] as const) {
    r.add(
      kind === 'schema' ? PUBLIC.spatialSchema : PUBLIC.spatialStats,
      {
        summary: kind === 'schema' ? 'Layers and fields of a source' : 'Summary of a source',
        tag: 'Spatial',
        description: 'Read from the source metadata (TileJSON vector_layers); no tile is decoded.',
        params: SOURCE_PARAM,
        responses: { 200: { description: `spatial ${kind}`, content: { 'application/json': doc } }, 404: { description: 'no such source', content: PROBLEM } },
      },
      (c) => {
        const state = ctx.holder.current;
        const source = resolveSource(state, param(c, 'source'));
        if (isProblem(source)) return problem(c, source.status, source.title, source.detail);
        return sendJson(c, state, describe(source.info));
      },
    );
  }

  r.add(
    PUBLIC.spatialQuery,
    {
      summary: 'Features of a vector source inside a bounding box',
      tag: 'Spatial',
      description:
        'Decodes the tiles covering `bbox` at `zoom` (clamped to the source zoom range; at most 64 tiles) and returns the features whose geometry meets the box, ' +
        'optionally only from `layers`. Features split across tiles are returned once when they carry an id. Each feature also has its `geometry` as GeoJSON in longitude/latitude ' +
        '(the part from the first tile it was found in). Without `bbox`, the tile holding the source center at `zoom` is queried.',
      body: { contentType: 'application/json', schema: QueryBodySchema },
      responses: {
        200: { description: 'the features', content: { 'application/json': QueryResponseDoc } },
        400: { description: 'invalid body, a raster source, or a bbox covering too many tiles', content: PROBLEM },
        404: { description: 'no such source, or no tile at the location', content: PROBLEM },
        413: { description: 'body larger than 64 KiB', content: PROBLEM },
        503: { description: 'the vector pool queue is full (Retry-After)', content: PROBLEM },
      },
    },
    async (c) => {
      const state = ctx.holder.current;
      const text = await readBoundedText(c, MAX_BODY_BYTES);
      if (text === undefined) return problem(c, 413, 'Body too large', `a query body is at most ${MAX_BODY_BYTES} bytes`);
      let raw: unknown;
      try {
        raw = JSON.parse(text);
      } catch {
        // The parser's own message is engine text, not the service's: the client is told what was expected.
        return problem(c, 400, 'Invalid JSON', 'the body is not JSON: send one JSON object with at least "source"');
      }
      const parsed = parseQueryBody(raw);
      if (!parsed.ok) return problem(c, 400, 'Invalid query', parsed.problems.join('; '), { errors: parsed.problems });
      // The source is named in the body, where the access gate on node:http cannot see it.
      const refused = refuseSources(c, state, [parsed.body.source]);
      if (refused) return refused;
      const result = await runQuery(state, parsed.body);
      if ('kind' in result) return problem(c, result.status, result.title, result.detail);
      return sendJson(c, state, result, NO_STORE);
    },
  );
}
