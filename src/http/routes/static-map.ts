// Static maps: `GET /styles/{style}/static/{view}/{size}` with the overlays in the query, and the same route as
// POST with the overlays in a JSON body. The POST form exists for overlays too long for a URL: a request line
// and headers are limited to server.max_header_bytes (16 KiB by default), and a long path or many markers pass
// that. Both forms read the same parameters through one accessor, so the grammar, the limits and the image are
// the same; a POST draws exactly what the GET with the same values draws, and shares its render cache entry when the
// values are the same text.
import type { Context } from 'hono';
import * as v from 'valibot';
import { styleAttribution } from '../../render/attribution.js';
import {
  parseSizeSegment,
  parseStaticQuery,
  parseViewSegment,
  STATIC_PARAMETERS,
  staticCamera,
  withinPixelBudget,
  type ParameterKind,
  type Problem,
  type StaticParameterName,
} from '../../render/static-params.js';
import { readBoundedText } from '../body.js';
import { problem } from '../problem.js';
import { param, type Router } from '../router.js';
import { PUBLIC } from '../../routes/public-routes.js';
import { clientOf, invalid, PROBLEM, renderAbsence, renderOutput, renderProblem, requestKey, send, RENDER_QUERY, RENDER_RESPONSES, STYLE_PARAM, type Begun } from './render-answer.js';

/** Largest JSON body of the POST form: far beyond any URL, small enough to parse at once. */
export const STATIC_BODY_MAX_BYTES = 1024 * 1024;

/** The parameters of a static map by name: the query of a GET, the JSON members of a POST. */
interface StaticParams {
  one(name: string): string | undefined;
  all(name: string): string[];
}

const PATH_PARAMS = {
  ...STYLE_PARAM,
  view: { schema: v.string(), description: 'centre, bounding box or auto' },
  size: { schema: v.string(), description: '{width}x{height}[@{scale}x].{format}' },
};
const DESCRIPTION =
  '`view`: `lon,lat,zoom[@bearing[,pitch]]`, `minLon,minLat,maxLon,maxLat` or `auto` (fitted to the overlays). `size`: `{width}x{height}[@{scale}x].{png|jpg|jpeg|webp|avif|auto}`, width and height 1..4096, scale 1..3.';
const RAW_DESCRIPTION = ' Under `/static/raw/` the coordinates of the view, paths and markers are EPSG:3857 metres (x,y) instead of degrees, as in tileserver-gl.';

/** What a member of each kind may be in the JSON body. */
const KIND_SCHEMA: Record<ParameterKind, v.GenericSchema> = {
  text: v.string(),
  number: v.union([v.number(), v.string()]),
  boolean: v.union([v.boolean(), v.string()]),
  geojson: v.union([v.string(), v.record(v.string(), v.unknown())]),
};
const KIND_TEXT: Record<ParameterKind, string> = {
  text: 'a string',
  number: 'a number',
  boolean: 'true or false',
  geojson: 'a GeoJSON object or a string of one',
};
/** The same for a repeatable parameter. */
const KIND_TEXT_MANY: Record<ParameterKind, string> = {
  text: 'a string or an array of strings',
  number: 'a number or an array of numbers',
  boolean: 'a boolean or an array of booleans',
  geojson: 'a GeoJSON object, a string of one, or an array of them',
};
const QUERY_SCHEMA: Record<ParameterKind, v.GenericSchema> = { text: v.string(), number: v.number(), boolean: v.boolean(), geojson: v.string() };
const PARAMETER_NAMES = Object.keys(STATIC_PARAMETERS) as StaticParameterName[];

/** The members of the POST body: the query parameters of the GET form, as JSON (one entry per parameter). */
const oneOrMany = (item: v.GenericSchema) => v.union([item, v.array(item)]);
const StaticBodySchema = v.strictObject(
  Object.fromEntries(PARAMETER_NAMES.map((name) => {
    const p = STATIC_PARAMETERS[name];
    const item = KIND_SCHEMA[p.kind];
    return [name, v.optional('many' in p ? oneOrMany(item) : item)];
  })),
);

/** The query parameters of the GET form, documented from the same table. */
const QUERY_DOCS = Object.fromEntries(
  PARAMETER_NAMES.map((name) => {
    const p = STATIC_PARAMETERS[name];
    return [name, { schema: QUERY_SCHEMA[p.kind], description: `${p.kind === 'geojson' ? 'URL-encoded ' : ''}${p.description}${'many' in p ? '; repeatable' : ''}` }];
  }),
);

/** One JSON value of a member as the text its query parameter would carry, or undefined when it is of the wrong type. */
function memberText(kind: ParameterKind, item: unknown): string | undefined {
  if (typeof item === 'string') return item;
  if (kind === 'geojson' && item !== null && typeof item === 'object' && !Array.isArray(item)) return JSON.stringify(item);
  if (kind === 'number' && typeof item === 'number') return String(item);
  if (kind === 'boolean' && typeof item === 'boolean') return String(item);
  return undefined;
}

/** Reads the POST body as static-map parameters, or the problem with it (which member, and why). */
export function bodyParams(raw: unknown): { ok: true; params: StaticParams } | { ok: false; problem: Problem } {
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) return { ok: false, problem: { parameter: 'body', detail: `the body must be a JSON object with the members ${PARAMETER_NAMES.join(', ')}` } };
  const values = new Map<string, string[]>();
  for (const [name, value] of Object.entries(raw)) {
    if (!Object.hasOwn(STATIC_PARAMETERS, name)) return { ok: false, problem: { parameter: name, detail: `unknown member ${JSON.stringify(name.slice(0, 100))}: the members are ${PARAMETER_NAMES.join(', ')}` } };
    const p = STATIC_PARAMETERS[name as StaticParameterName];
    const many = 'many' in p;
    const list = many && Array.isArray(value) ? value : [value];
    const texts: string[] = [];
    for (const item of list) {
      const text = memberText(p.kind, item);
      if (text === undefined) return { ok: false, problem: { parameter: name, detail: `${name} must be ${(many ? KIND_TEXT_MANY : KIND_TEXT)[p.kind]}` } };
      texts.push(text);
    }
    values.set(name, texts);
  }
  return { ok: true, params: { one: (n) => values.get(n)?.[0], all: (n) => values.get(n) ?? [] } };
}

/** The render cache key of a POST: the key its GET form would have, so that both share an image. */
function bodyKey(c: Context, params: StaticParams): string {
  const search = new URLSearchParams();
  for (const name of PARAMETER_NAMES) for (const value of params.all(name)) search.append(name, value);
  search.sort();
  return `${new URL(c.req.url).pathname}?${search.toString()}`;
}

/**
 * Validates every part of a static map, fetches its icon images, then renders it (both forms). `metres`: the
 * `raw` routes, whose coordinates are EPSG:3857 metres.
 */
async function drawStatic(c: Context, b: Exclude<Begun, { res: Response }>, params: StaticParams, key: string, metres: boolean): Promise<Response> {
  const size = parseSizeSegment(param(c, 'size'));
  if (!size.ok) return invalid(c, size.problem);
  const query = parseStaticQuery(params, metres);
  if (!query.ok) return invalid(c, query.problem);
  const view = parseViewSegment(param(c, 'view'), query.value.latlng, metres);
  if (!view.ok) return invalid(c, view.problem);
  const tooLarge = withinPixelBudget(size.value.width, size.value.height, size.value.scale, b.state.config.render.max_pixels);
  if (tooLarge) return invalid(c, tooLarge);
  const cam = staticCamera(view.value, query.value, size.value.width, size.value.height);
  if (!cam.ok) return invalid(c, cam.problem);
  // Encoding and language: members of a POST body, else the query string (GET reads its query through `params`).
  const output = renderOutput(c, b, size.value.format, { one: (n) => params.one(n) ?? c.req.query(n) });
  if (!output.ok) return output.res;
  try {
    const withIcons = await b.render.markerIcons.resolve(b.state, b.style, query.value.overlays, size.value.scale, c.req.raw.signal);
    if (!withIcons.ok) return invalid(c, withIcons.problem);
    const overlays = { ...withIcons.value };
    if (query.value.attribution && b.state.config.render.static_attribution) {
      const text = styleAttribution(b.state, b.style);
      if (text) overlays.attribution = text;
    }
    const watermark = overlays.watermark ?? b.state.config.styles.find((s) => s.id === b.style.id)?.watermark;
    if (watermark) overlays.watermark = watermark;
    const img = await b.render.image(b.state, b.style, cam.value, size.value.scale, output.out, overlays, key, { signal: c.req.raw.signal, client: clientOf(c) });
    return send(c, img, b.state.config.server.tile_cache_control, output.headers);
  } catch (err) {
    return renderProblem(c, b.style.id, err);
  }
}

export function registerStaticMapRoutes(r: Router, begin: (c: Context) => Begun): void {
  // The same routes under /static/raw/ read coordinates as EPSG:3857 metres (tileserver-gl's raw endpoints).
  for (const metres of [false, true]) {
    const rawText = metres ? RAW_DESCRIPTION : '';
    r.add(
      metres ? PUBLIC.staticMapRaw : PUBLIC.staticMap,
      {
        summary: `Static map image with optional path, marker and GeoJSON overlays${metres ? ' (EPSG:3857 coordinates)' : ''}`,
        tag: 'Rendering',
        description: `${DESCRIPTION}${rawText} Overlays longer than a URL may be (server.max_header_bytes) go in the body of the POST form.`,
        params: PATH_PARAMS,
        query: { ...QUERY_DOCS, ...RENDER_QUERY },
        responses: RENDER_RESPONSES,
      },
      async (c) => {
        const b = begin(c);
        if (b.res) return b.res;
        return drawStatic(c, b, { one: (n) => c.req.query(n), all: (n) => c.req.queries(n) ?? [] }, requestKey(c), metres);
      },
      renderAbsence,
    );

    r.add(
      metres ? PUBLIC.staticMapRawPost : PUBLIC.staticMapPost,
      {
        summary: `Static map image with the overlays in a JSON body (for overlays too long for a URL)${metres ? ' (EPSG:3857 coordinates)' : ''}`,
        tag: 'Rendering',
        description:
          `${DESCRIPTION}${rawText} The body is a JSON object with the query parameters of the GET form as members: \`path\` and \`marker\` a string or an array of strings, ` +
          `\`geojson\` a GeoJSON object (or a string of one, or an array of either), numbers as numbers, booleans as booleans, texts as strings. ` +
          `Same grammar and limits as the GET form; the body is at most ${STATIC_BODY_MAX_BYTES} bytes.`,
        params: PATH_PARAMS,
        body: { contentType: 'application/json', schema: StaticBodySchema },
        responses: {
          ...RENDER_RESPONSES,
          413: { description: `body larger than ${STATIC_BODY_MAX_BYTES} bytes`, content: PROBLEM },
          415: { description: 'the body is not application/json', content: PROBLEM },
        },
      },
      async (c) => {
        const b = begin(c);
        if (b.res) return b.res;
        const type = c.req.header('content-type') ?? '';
        if (!/^application\/(?:[\w.+-]+\+)?json\s*(?:;|$)/i.test(type)) {
          return problem(c, 415, 'Unsupported media type', `the body must be application/json, not ${JSON.stringify(type.slice(0, 100) || '(none)')}`);
        }
        const text = await readBoundedText(c, STATIC_BODY_MAX_BYTES);
        if (text === undefined) return problem(c, 413, 'Body too large', `a static-map body is at most ${STATIC_BODY_MAX_BYTES} bytes`);
        let raw: unknown;
        try {
          raw = JSON.parse(text);
        } catch {
          return invalid(c, { parameter: 'body', detail: 'the body is not valid JSON' });
        }
        const parsed = bodyParams(raw);
        if (!parsed.ok) return invalid(c, parsed.problem);
        return drawStatic(c, b, parsed.params, bodyKey(c, parsed.params), metres);
      },
      renderAbsence,
    );
  }
}
