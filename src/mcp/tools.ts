// The MCP tools: what an AI agent asks a map server (which sources and styles exist, what a source holds, the
// features in a box, a tile as GeoJSON, a picture of a place). Each tool is a request to the service's own HTTP
// routes, answered in-process (`dispatch`, the app's `fetch`): the agent gets exactly what an HTTP client gets,
// from the same validation, caches and limits, and this module imports nothing of the HTTP layer.
// Inputs are valibot schemas; their JSON Schema (for `tools/list`) is generated from the same definitions.
import { toJsonSchema } from '@valibot/to-json-schema';
import * as v from 'valibot';
import { QueryBodySchema } from '../spatial/query-body.js';

/** Answers a request the way the HTTP service would, without a socket. */
export type Dispatch = (request: Request) => Promise<Response>;

/** What a tool hands back: MCP content items, and whether it is a refusal (a tool error the agent can read). */
export interface ToolResult {
  [key: string]: unknown;
  content: ({ type: 'text'; text: string } | { type: 'image'; data: string; mimeType: string })[];
  isError?: boolean;
}

interface ToolDef<S extends v.GenericSchema> {
  name: string;
  title: string;
  description: string;
  input: S;
  /** The route request this input stands for. */
  request: (input: v.InferOutput<S>, origin: string) => Request;
}

const sourceId = v.pipe(v.string('a source id (string)'), v.minLength(1, 'a source id is not empty'), v.maxLength(512, 'at most 512 characters'));
const styleId = v.pipe(v.string('a style id (string)'), v.minLength(1, 'a style id is not empty'), v.maxLength(256, 'at most 256 characters'));
const zoomInt = v.pipe(v.number('a number'), v.integer('an integer'), v.minValue(0, 'zoom 0..22'), v.maxValue(22, 'zoom 0..22'));
const tileIndex = v.pipe(v.number('a number'), v.integer('an integer'), v.minValue(0, 'a tile index is >= 0'), v.maxValue(2 ** 22 - 1, 'a tile index is < 2^22'));
const lon = v.pipe(v.number('a number'), v.minValue(-180, 'longitudes are -180..180'), v.maxValue(180, 'longitudes are -180..180'));
const lat = v.pipe(v.number('a number'), v.minValue(-85.0511, 'latitudes are -85.0511..85.0511 (web mercator)'), v.maxValue(85.0511, 'latitudes are -85.0511..85.0511 (web mercator)'));
const pixels = v.pipe(v.number('a number'), v.integer('an integer'), v.minValue(1, '1..2048 pixels'), v.maxValue(2048, '1..2048 pixels'));

const NoInput = v.strictObject({}, 'no arguments');
const SourceInput = v.strictObject({ source: sourceId }, 'an object with the field source');
const TileInput = v.strictObject({ source: sourceId, z: zoomInt, x: tileIndex, y: tileIndex }, 'an object with the fields source, z, x, y');
const StaticMapInput = v.pipe(
  v.strictObject(
    {
      style: styleId,
      lon,
      lat,
      zoom: v.pipe(v.number('a number'), v.minValue(0, 'zoom 0..22'), v.maxValue(22, 'zoom 0..22')),
      width: v.optional(pixels, 512),
      height: v.optional(pixels, 512),
      bearing: v.optional(v.pipe(v.number('a number'), v.minValue(-360, 'bearing -360..360'), v.maxValue(360, 'bearing -360..360'))),
      pitch: v.optional(v.pipe(v.number('a number'), v.minValue(0, 'pitch 0..85'), v.maxValue(85, 'pitch 0..85'))),
      format: v.optional(v.picklist(['png', 'jpg', 'webp'], 'png, jpg or webp'), 'png'),
    },
    'an object with the fields style, lon, lat, zoom and optionally width, height, bearing, pitch, format',
  ),
);

const enc = encodeURIComponent;
const get = (origin: string, path: string) => new Request(origin + path, { headers: { accept: 'application/json' } });

function tool<S extends v.GenericSchema>(def: ToolDef<S>): ToolDef<v.GenericSchema> {
  return def as unknown as ToolDef<v.GenericSchema>;
}

const DATA_TOOLS = [
  tool({
    name: 'list_sources',
    title: 'List tile sources',
    description: 'Every tile source served (id, name, format, zoom range, bounds, vector layers), as the TileJSON list of /data.json.',
    input: NoInput,
    request: (_, origin) => get(origin, '/data.json'),
  }),
  tool({
    name: 'list_styles',
    title: 'List map styles',
    description: 'Every map style served (id, name, style URL), as /styles.json.',
    input: NoInput,
    request: (_, origin) => get(origin, '/styles.json'),
  }),
  tool({
    name: 'get_tilejson',
    title: 'TileJSON of a source',
    description: 'The TileJSON document of one source (a source id, a composite id, or ids joined by "+"): tile URL, zooms, bounds, center, vector layers.',
    input: SourceInput,
    request: (i, origin) => get(origin, `/data/${enc(i.source)}.json`),
  }),
  tool({
    name: 'get_source_schema',
    title: 'Layers and fields of a source',
    description: 'The layers of a vector source with their zoom ranges and attribute fields and types.',
    input: SourceInput,
    request: (i, origin) => get(origin, `/api/spatial/schema/${enc(i.source)}`),
  }),
  tool({
    name: 'get_source_stats',
    title: 'Summary of a source',
    description: 'Format, zoom range, bounds, center, layer count, name, description and attribution of a source.',
    input: SourceInput,
    request: (i, origin) => get(origin, `/api/spatial/stats/${enc(i.source)}`),
  }),
  tool({
    name: 'query_features',
    title: 'Features in a box',
    description:
      'Vector features of a source intersecting a bounding box [west, south, east, north] (degrees), read from its tiles at one zoom (default 14), ' +
      'optionally only some layers, at most `limit` (default 100) features with their properties and GeoJSON geometry.',
    input: QueryBodySchema,
    request: (i, origin) =>
      new Request(origin + '/api/spatial/query', { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json' }, body: JSON.stringify(i) }),
  }),
  tool({
    name: 'get_tile_geojson',
    title: 'A vector tile as GeoJSON',
    description: 'The features of one vector tile z/x/y (XYZ scheme) of a source, decoded to one GeoJSON FeatureCollection in tile coordinates, each feature naming its layer in `_layer`.',
    input: TileInput,
    request: (i, origin) => get(origin, `/data/${enc(i.source)}/${i.z}/${i.x}/${i.y}.geojson`),
  }),
];

const RENDER_TOOLS = [
  tool({
    name: 'render_static_map',
    title: 'Static map image',
    description: 'A picture of a place: a map style rendered around lon/lat at a zoom (optionally bearing and pitch), width x height pixels, as PNG, JPEG or WebP.',
    input: StaticMapInput,
    request: (i, origin) => {
      const rotation = i.bearing !== undefined || i.pitch !== undefined ? `@${i.bearing ?? 0},${i.pitch ?? 0}` : '';
      const view = `${i.lon},${i.lat},${i.zoom}${rotation}`;
      return new Request(`${origin}/styles/${enc(i.style)}/static/${view}/${i.width}x${i.height}.${i.format}`);
    },
  }),
];

/** The tools offered: the rendering tool only where rendering is on (server.disable_render off, a renderer in this process). */
export function mcpTools(renderingOn: boolean): ToolDef<v.GenericSchema>[] {
  return renderingOn ? [...DATA_TOOLS, ...RENDER_TOOLS] : DATA_TOOLS;
}

/** `tools/list` entries: name, title, description and the JSON Schema of the input. */
export function toolListing(tools: readonly ToolDef<v.GenericSchema>[]): { name: string; title: string; description: string; inputSchema: { type: 'object'; [k: string]: unknown } }[] {
  return tools.map((t) => {
    const schema = toJsonSchema(t.input, { target: 'draft-07', errorMode: 'ignore' }) as Record<string, unknown>;
    delete schema.$schema;
    return { name: t.name, title: t.title, description: t.description, inputSchema: { ...schema, type: 'object' } };
  });
}

function refusal(text: string): ToolResult {
  return { content: [{ type: 'text', text }], isError: true };
}

/** The path of a valibot issue as `bbox[2]`, or the whole input. */
function issueLine(issue: v.BaseIssue<unknown>): string {
  let where = '';
  for (const item of issue.path ?? []) {
    const key = (item as { key: unknown }).key;
    where += typeof key === 'number' ? `[${key}]` : where ? `.${String(key)}` : String(key);
  }
  return `${where || '(arguments)'}: ${issue.message}`;
}

/**
 * Runs a tool: validates its arguments, asks the route, and turns the answer into content. Expected refusals
 * (bad arguments, an unknown source, a 4xx or 5xx of the route) are tool errors naming what was wrong; the
 * route's problem body supplies the words, never an exception's text.
 */
export async function callTool(tools: readonly ToolDef<v.GenericSchema>[], name: string, args: unknown, dispatch: Dispatch, origin: string): Promise<ToolResult | undefined> {
  const t = tools.find((x) => x.name === name);
  if (!t) return undefined;
  // valibot's object schemas take arrays for objects; arguments are always an object.
  const parsed = Array.isArray(args) ? undefined : v.safeParse(t.input, args ?? {});
  if (!parsed) return refusal(`invalid arguments for ${name}: (arguments): an object`);
  if (!parsed.success) return refusal(`invalid arguments for ${name}: ${parsed.issues.map(issueLine).join('; ')}`);
  const res = await dispatch(t.request(parsed.output, origin));
  const type = res.headers.get('content-type') ?? '';
  if (res.status === 204) {
    await res.body?.cancel();
    return { content: [{ type: 'text', text: `${name}: nothing there (the source has no tile at that place)` }] };
  }
  if (res.status >= 400) {
    const body = await res.text();
    let words = `HTTP ${res.status}`;
    if (type.includes('json')) {
      try {
        const p = JSON.parse(body) as { title?: unknown; detail?: unknown };
        words = [p.title, p.detail].filter((x) => typeof x === 'string').join(': ') || words;
      } catch {
        // A non-JSON error body says nothing the status does not.
      }
    }
    return refusal(`${name} failed (${res.status}): ${words}`);
  }
  if (type.startsWith('image/')) {
    const bytes = Buffer.from(await res.arrayBuffer());
    return { content: [{ type: 'image', data: bytes.toString('base64'), mimeType: type.split(';')[0] }] };
  }
  return { content: [{ type: 'text', text: await res.text() }] };
}
