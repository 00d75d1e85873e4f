// Static maps: `GET /styles/{style}/static/{view}/{size}` with the overlays in the query, and the same route as
// POST with the overlays in a JSON body. The POST form exists for overlays too long for a URL: a request line
// and headers are limited to server.max_header_bytes (16 KiB by default), and a long path or many markers pass
// that. Both forms read the same parameters through one accessor, so the grammar, the limits and the image are
// the same; a POST draws exactly what the GET with the same values draws, and shares its render cache entry when the
// values are the same text.
import type { Context } from 'hono';
import * as v from 'valibot';
import { parseSizeSegment, parseStaticQuery, parseViewSegment, staticCamera, withinPixelBudget, type Problem } from '../../render/static-params.js';
import { readBoundedText } from '../body.js';
import { problem } from '../problem.js';
import { param, type Router } from '../router.js';
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
const OVERLAY_TEXT = {
  path: 'path-{strokeWidth}+{strokeColor}[-{fillColor}]({lon},{lat}|…), several joined by ~',
  marker: 'pin-{s|m|l}[-{label}]+{color}({lon},{lat}), several joined by ~',
  geojson: 'GeoJSON geometry, Feature or FeatureCollection with simplestyle properties',
  padding: 'auto-fit padding, a fraction of the image on each side (default 0.1)',
  maxzoom: 'largest zoom of an auto-fit (default 18)',
  latlng: 'coordinates are lat,lng (default false)',
};

/** The members of the POST body: the query parameters of the GET form, as JSON. */
const oneOrMany = (item: v.GenericSchema) => v.union([item, v.array(item)]);
const StaticBodySchema = v.strictObject({
  path: v.optional(oneOrMany(v.string())),
  marker: v.optional(oneOrMany(v.string())),
  geojson: v.optional(oneOrMany(v.union([v.string(), v.record(v.string(), v.unknown())]))),
  padding: v.optional(v.union([v.number(), v.string()])),
  maxzoom: v.optional(v.union([v.number(), v.string()])),
  latlng: v.optional(v.union([v.boolean(), v.string()])),
});
const BODY_MEMBERS = new Set(Object.keys(StaticBodySchema.entries));

/** Reads the POST body as static-map parameters, or the problem with it (which member, and why). */
export function bodyParams(raw: unknown): { ok: true; params: StaticParams } | { ok: false; problem: Problem } {
  if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) return { ok: false, problem: { parameter: 'body', detail: 'the body must be a JSON object with the members path, marker, geojson, padding, maxzoom, latlng' } };
  const values = new Map<string, string[]>();
  for (const [name, value] of Object.entries(raw)) {
    if (!BODY_MEMBERS.has(name)) return { ok: false, problem: { parameter: name, detail: `unknown member ${JSON.stringify(name.slice(0, 100))}: the members are ${[...BODY_MEMBERS].join(', ')}` } };
    const many = name === 'path' || name === 'marker' || name === 'geojson';
    const list = many && Array.isArray(value) ? value : [value];
    const texts: string[] = [];
    for (const item of list) {
      if (typeof item === 'string') texts.push(item);
      else if (name === 'geojson' && item !== null && typeof item === 'object' && !Array.isArray(item)) texts.push(JSON.stringify(item));
      else if ((name === 'padding' || name === 'maxzoom') && typeof item === 'number') texts.push(String(item));
      else if (name === 'latlng' && typeof item === 'boolean') texts.push(String(item));
      else return { ok: false, problem: { parameter: name, detail: `${name} must be ${expected(name)}` } };
    }
    values.set(name, texts);
  }
  return { ok: true, params: { one: (n) => values.get(n)?.[0], all: (n) => values.get(n) ?? [] } };
}

function expected(name: string): string {
  switch (name) {
    case 'path':
    case 'marker':
      return 'a string or an array of strings';
    case 'geojson':
      return 'a GeoJSON object, a string of one, or an array of them';
    case 'latlng':
      return 'true or false';
    default:
      return 'a number';
  }
}

/** The render cache key of a POST: the key its GET form would have, so that both share an image. */
function bodyKey(c: Context, params: StaticParams): string {
  const search = new URLSearchParams();
  for (const name of BODY_MEMBERS) for (const value of params.all(name)) search.append(name, value);
  search.sort();
  return `${new URL(c.req.url).pathname}?${search.toString()}`;
}

/** Validates every part of a static map, then renders it (both forms). */
async function drawStatic(c: Context, b: Exclude<Begun, { res: Response }>, params: StaticParams, key: string): Promise<Response> {
  const size = parseSizeSegment(param(c, 'size'));
  if (!size.ok) return invalid(c, size.problem);
  const query = parseStaticQuery(params);
  if (!query.ok) return invalid(c, query.problem);
  const view = parseViewSegment(param(c, 'view'), query.value.latlng);
  if (!view.ok) return invalid(c, view.problem);
  const tooLarge = withinPixelBudget(size.value.width, size.value.height, size.value.scale, b.state.config.render.max_pixels);
  if (tooLarge) return invalid(c, tooLarge);
  const cam = staticCamera(view.value, query.value, size.value.width, size.value.height);
  if (!cam.ok) return invalid(c, cam.problem);
  // Encoding and language come from the query string in both forms (POST included).
  const output = renderOutput(c, b, size.value.format);
  if (!output.ok) return output.res;
  try {
    const img = await b.render.image(b.state, b.style, cam.value, size.value.scale, output.out, query.value.overlays, key, { signal: c.req.raw.signal, client: clientOf(c) });
    return send(c, img, b.state.config.server.tile_cache_control, output.headers);
  } catch (err) {
    return renderProblem(c, b.style.id, err);
  }
}

export function registerStaticMapRoutes(r: Router, begin: (c: Context) => Begun): void {
  r.add(
    {
      method: 'get',
      path: '/styles/{style}/static/{view}/{size}',
      hono: '/styles/:style/static/:view/:size',
      summary: 'Static map image with optional path, marker and GeoJSON overlays',
      tag: 'Rendering',
      description: `${DESCRIPTION} Overlays longer than a URL may be (server.max_header_bytes) go in the body of the POST form.`,
      params: PATH_PARAMS,
      query: {
        path: { schema: v.string(), description: `${OVERLAY_TEXT.path}; repeatable` },
        marker: { schema: v.string(), description: `${OVERLAY_TEXT.marker}; repeatable` },
        geojson: { schema: v.string(), description: `URL-encoded ${OVERLAY_TEXT.geojson}` },
        padding: { schema: v.number(), description: OVERLAY_TEXT.padding },
        maxzoom: { schema: v.number(), description: OVERLAY_TEXT.maxzoom },
        latlng: { schema: v.boolean(), description: OVERLAY_TEXT.latlng },
        ...RENDER_QUERY,
      },
      responses: RENDER_RESPONSES,
    },
    async (c) => {
      const b = begin(c);
      if (b.res) return b.res;
      return drawStatic(c, b, { one: (n) => c.req.query(n), all: (n) => c.req.queries(n) ?? [] }, requestKey(c));
    },
    renderAbsence,
  );

  r.add(
    {
      method: 'post',
      path: '/styles/{style}/static/{view}/{size}',
      hono: '/styles/:style/static/:view/:size',
      summary: 'Static map image with the overlays in a JSON body (for overlays too long for a URL)',
      tag: 'Rendering',
      description:
        `${DESCRIPTION} The body is a JSON object with the query parameters of the GET form as members: \`path\` and \`marker\` a string or an array of strings, ` +
        `\`geojson\` a GeoJSON object (or a string of one, or an array of either), \`padding\` and \`maxzoom\` numbers, \`latlng\` a boolean. ` +
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
      return drawStatic(c, b, parsed.params, bodyKey(c, parsed.params));
    },
    renderAbsence,
  );
}
