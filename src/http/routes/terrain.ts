// Terrain routes of elevation sources (docs/terrain.md): hillshade and contour tiles with their TileJSON, the
// elevation API (a point, a batch of points, a profile along a line) and tileserver-gl's elevation routes, which
// answer as tileserver-gl does so that its clients keep working.
import type { Context } from 'hono';
import * as v from 'valibot';
import type { AppState } from '../../state/app-state.js';
import { parseTileCoord, splitTileFile } from '../../tiles/coords.js';
import { acceptedEncodings } from '../../tiles/encoding.js';
import { fetchTerrainTile, productTileJson, type TerrainProduct } from '../../serve/terrain-tiles.js';
import { elevationSource, type Elevation } from '../../serve/elevation.js';
import { parseHillshadeQuery } from '../../terrain/hillshade.js';
import { parseContourQuery } from '../../terrain/contours.js';
import { parsePoint, parsePointsBody, parseProfileBody } from '../../terrain/elevation-request.js';
import { sampleLine, summarise, type LonLat } from '../../terrain/profile.js';
import { urlContext, type ServerContext } from '../context.js';
import { readBoundedText } from '../body.js';
import { problem } from '../problem.js';
import { METADATA_CACHE_CONTROL, sendBytes, sendJson } from '../respond.js';
import { withKey } from '../../sources/tilejson.js';
import { wmtsDocument } from '../../serve/wmts.js';
import { param, KEY_QUERY, type Router } from '../router.js';
import { PUBLIC } from '../../routes/public-routes.js';
import { sendTileResult } from './data.js';
import { answerKeys } from '../../expire/surrogate-keys.js';

const PROBLEM = { 'application/problem+json': true as const };
const JSON_OK = { 'application/json': true as const };
const NO_STORE = 'no-store';
const SOURCE = { source: { schema: v.string(), description: 'id of an elevation source (a source with `dem` in its configuration)' } };
const TILE_PARAMS = {
  ...SOURCE,
  z: { schema: v.pipe(v.number(), v.integer(), v.minValue(0), v.maxValue(22)) },
  x: { schema: v.pipe(v.number(), v.integer(), v.minValue(0)) },
};

const HILLSHADE_QUERY = {
  method: { schema: v.picklist(['standard', 'basic', 'combined', 'igor', 'multidirectional']), description: "MapLibre's hillshade-method (default standard)" },
  mode: { schema: v.picklist(['color', 'grey']), description: 'color: an overlay in the shadow, highlight and accent colours with alpha (default); grey: opaque grey as gdaldem writes it' },
  azimuth: { schema: v.number(), description: 'direction of the light, degrees clockwise from north, 0-360 (default 335)' },
  altitude: { schema: v.number(), description: 'height of the light above the horizon, degrees 0-90 (default 45)' },
  exaggeration: { schema: v.number(), description: 'vertical exaggeration (default 0.5)' },
  shadow: { schema: v.string(), description: 'CSS colour of shadows (default #000000)' },
  highlight: { schema: v.string(), description: 'CSS colour of lit slopes (default #FFFFFF)' },
  accent: { schema: v.string(), description: 'CSS colour of steep terrain (default #000000)' },
};
const CONTOUR_QUERY = {
  interval: { schema: v.number(), description: 'metres (or feet) between lines; default by zoom' },
  major: { schema: v.number(), description: 'every n-th line is major (level 1); default 5' },
  unit: { schema: v.picklist(['m', 'ft']), description: 'unit of ele and interval (default m)' },
};

/** A point pair in JSON is at most ~50 bytes; bodies are bounded by the configured count with room to spare. */
const bodyLimit = (state: AppState) => state.config.terrain.max_points * 64 + 64 * 1024;

const round2 = (n: number) => Math.round(n * 100) / 100;
const elevationValue = (n: number): number | null => (Number.isNaN(n) ? null : round2(n));

function lookupProblem(c: Context, state: AppState, id: string): Elevation | Response {
  const found = elevationSource(state, id);
  return found.ok ? found.elevation : problem(c, found.status, found.title, found.detail);
}

async function readJson(c: Context, state: AppState, expected: string): Promise<{ ok: true; value: unknown } | { ok: false; response: Response }> {
  const limit = bodyLimit(state);
  const text = await readBoundedText(c, limit);
  // The rest of the body is not read: the connection closes after the answer, so no client sends its next
  // request behind an upload the server has stopped reading.
  if (text === undefined) return { ok: false, response: problem(c, 413, 'Body too large', `the body is at most ${limit} bytes here`, {}, { Connection: 'close' }) };
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch {
    return { ok: false, response: problem(c, 400, 'Invalid JSON', `the body is not JSON: send ${expected}`) };
  }
}

/** The query of a product's TileJSON, checked, to be carried into its tile URL (the `key` travels on its own). */
function productQuery(c: Context, product: TerrainProduct): { ok: true; query: string } | { ok: false; problem: string } {
  const params = new URL(c.req.url).searchParams;
  params.delete('key');
  const parsed = product === 'hillshade' ? parseHillshadeQuery(params) : parseContourQuery(params, 0);
  if (!parsed.ok) return parsed;
  const s = params.toString();
  return { ok: true, query: s ? `?${s}` : '' };
}

export function registerTerrainRoutes(r: Router, ctx: ServerContext): void {
  for (const product of ['hillshade', 'contours'] as const) {
    const hillshade = product === 'hillshade';
    r.add(
      hillshade ? PUBLIC.hillshadeJson : PUBLIC.contoursJson,
      {
        summary: `TileJSON of an elevation source's ${product} tiles`,
        tag: 'Terrain',
        params: SOURCE,
        query: { ...KEY_QUERY, ...(hillshade ? HILLSHADE_QUERY : CONTOUR_QUERY) },
        responses: {
          200: { description: 'TileJSON 3.0.0; its tile URL carries the query given', content: JSON_OK },
          400: { description: 'not an elevation source, or a bad parameter', content: PROBLEM },
          404: { description: 'no such source', content: PROBLEM },
        },
      },
      (c) => {
        const state = ctx.holder.current;
        const elevation = lookupProblem(c, state, param(c, 'source'));
        if (elevation instanceof Response) return elevation;
        const q = productQuery(c, product);
        if (!q.ok) return problem(c, 400, `Invalid ${product} parameter`, q.problem);
        return sendJson(c, state, productTileJson(state, urlContext(c, state), elevation, product, q.query));
      },
    );
    r.add(
      hillshade ? PUBLIC.hillshadeTile : PUBLIC.contoursTile,
      {
        summary: hillshade ? 'A hillshade tile of an elevation source' : 'A contour-line tile of an elevation source',
        description: hillshade
          ? 'Shaded relief computed from the elevations with a border from the neighbouring data (no seams), slopes from real ground distances. `{y}@2x.png` doubles the pixels. Made above the data\'s deepest zoom too (up to 4 zooms deeper).'
          : 'Layer `contours`: lines with `ele` (number) and `level` (1 on major lines), traced on a buffered window so lines meet their neighbours\' at tile edges. Made above the data\'s deepest zoom too (up to 4 zooms deeper).',
        tag: 'Terrain',
        params: { ...TILE_PARAMS, y: { schema: v.pipe(v.number(), v.integer(), v.minValue(0)) }, format: { schema: v.picklist(hillshade ? ['png', 'webp'] : ['pbf', 'mvt', 'mlt']) } },
        query: hillshade ? HILLSHADE_QUERY : CONTOUR_QUERY,
        responses: {
          200: { description: 'the tile', content: hillshade ? { 'image/png': true, 'image/webp': true } : { 'application/x-protobuf': true, 'application/vnd.open-vector-tile': true } },
          204: { description: 'no data here, or outside the zoom range' },
          304: { description: 'the If-None-Match ETag is current' },
          400: { description: 'bad coordinates, format or parameter; not an elevation source', content: PROBLEM },
          404: { description: 'no such source', content: PROBLEM },
          503: { description: 'the terrain or raster queue is full (Retry-After)', content: PROBLEM },
        },
      },
      async (c) => {
        const state = ctx.holder.current;
        const file = splitTileFile(param(c, 'file'));
        if (!file) return problem(c, 400, 'Invalid tile path', `"${param(c, 'file')}" is not {y}.{format}`);
        const formats = hillshade ? ['png', 'webp'] : ['pbf', 'mvt', 'mlt'];
        if (!formats.includes(file.ext)) return problem(c, 400, 'Unknown tile format', `${product} tiles are ${formats.join(', ')}; ".${file.ext}" was asked for`);
        let scale = 1;
        if (file.scale !== undefined) {
          if (!hillshade || !/^[234]$/.test(file.scale)) return problem(c, 400, 'Invalid tile path', hillshade ? `@${file.scale}x: the pixel ratio is @2x, @3x or @4x` : 'contour tiles have no pixel ratio');
          scale = Number(file.scale);
        }
        const parsed = parseTileCoord(param(c, 'z'), param(c, 'x'), file.y);
        if (!parsed.ok) return problem(c, 400, 'Invalid tile coordinates', parsed.problem);
        const format = (file.ext === 'mvt' ? 'pbf' : file.ext) as 'png' | 'webp' | 'pbf' | 'mlt';
        const result = await fetchTerrainTile(state, {
          sourceId: param(c, 'source'),
          product,
          coord: parsed.coord,
          scale,
          format,
          query: new URL(c.req.url).searchParams,
          accepted: acceptedEncodings(c.req.header('accept-encoding')),
        });
        // A product reads a border from the tiles around its own: it is filed under theirs too.
        const { z, x, y } = parsed.coord;
        return sendTileResult(c, state, result, undefined, answerKeys([param(c, 'source')], z, x, y, true));
      },
    );
  }

  r.add(
    PUBLIC.hillshadeWmts,
    {
      summary: "WMTS capabilities of an elevation source's hillshade tiles",
      tag: 'Terrain',
      params: SOURCE,
      query: { ...KEY_QUERY, ...HILLSHADE_QUERY },
      responses: {
        200: { description: 'WMTS 1.0.0 GetCapabilities (RESTful), one PNG layer', content: { 'application/xml': true } },
        400: { description: 'not an elevation source, or a bad parameter', content: PROBLEM },
        404: { description: 'no such source', content: PROBLEM },
      },
    },
    (c) => {
      const state = ctx.holder.current;
      const elevation = lookupProblem(c, state, param(c, 'source'));
      if (elevation instanceof Response) return elevation;
      const q = productQuery(c, 'hillshade');
      if (!q.ok) return problem(c, 400, 'Invalid hillshade parameter', q.problem);
      const u = urlContext(c, state);
      const id = encodeURIComponent(elevation.id);
      const doc = wmtsDocument({
        title: `${elevation.info.name} hillshade`,
        identifier: `${elevation.id}.hillshade`,
        self: withKey(`${u.base}/data/${id}/hillshade/wmts.xml${q.query}`, u.key),
        template: withKey(`${u.base}/data/${id}/hillshade/{TileMatrix}/{TileCol}/{TileRow}.png${q.query}`, u.key),
        bounds: elevation.info.bounds,
        tileSize: state.config.raster.tile_size,
      });
      return sendBytes(c, state, Buffer.from(doc), 'application/xml; charset=utf-8', METADATA_CACHE_CONTROL);
    },
  );

  r.add(
    PUBLIC.elevationPoint,
    {
      summary: 'Elevation at a point',
      description: "Bilinear between the four nearest pixels at the source's full resolution (a COG's own pixels; an archive's deepest tiles). `elevation` is null where there is no data.",
      tag: 'Terrain',
      params: SOURCE,
      query: { lon: { schema: v.number(), required: true, description: 'longitude, -180..180' }, lat: { schema: v.number(), required: true, description: 'latitude, within ±85.0511' } },
      responses: {
        200: { description: '{lon, lat, elevation, source}', content: JSON_OK },
        400: { description: 'bad coordinates; not an elevation source', content: PROBLEM },
        404: { description: 'no such source', content: PROBLEM },
        503: { description: 'the raster or terrain queue is full (Retry-After)', content: PROBLEM },
      },
    },
    async (c) => {
      const state = ctx.holder.current;
      const elevation = lookupProblem(c, state, param(c, 'source'));
      if (elevation instanceof Response) return elevation;
      const point = parsePoint(c.req.query('lon'), c.req.query('lat'));
      if (!point.ok) return problem(c, 400, 'Invalid point', point.problem);
      const [value] = await elevation.points([point.value]);
      return sendJson(c, state, { lon: point.value[0], lat: point.value[1], elevation: elevationValue(value), source: elevation.id }, NO_STORE);
    },
  );

  r.add(
    PUBLIC.elevationBatch,
    {
      summary: 'Elevations at many points',
      description: 'Body `{"points": [[lon, lat], ...]}` (tileserver-gl\'s `[{"lon", "lat", "z"}]` is read too). Elevations come back in order, null where there is no data; at most `[terrain] max_points` points.',
      tag: 'Terrain',
      params: SOURCE,
      body: { contentType: 'application/json', schema: v.object({ points: v.array(v.tuple([v.number(), v.number()])) }) },
      responses: {
        200: { description: '{source, elevations}', content: JSON_OK },
        400: { description: 'bad JSON, points or count; not an elevation source', content: PROBLEM },
        404: { description: 'no such source', content: PROBLEM },
        413: { description: 'the body is too large', content: PROBLEM },
        503: { description: 'the raster or terrain queue is full (Retry-After)', content: PROBLEM },
      },
    },
    async (c) => {
      const state = ctx.holder.current;
      const read = await batchElevations(c, state, '{"points": [[lon, lat], ...]}');
      if (read instanceof Response) return read;
      return sendJson(c, state, { source: read.elevation.id, elevations: read.values }, NO_STORE);
    },
  );

  r.add(
    PUBLIC.elevationProfile,
    {
      summary: 'Elevation profile along a line',
      description:
        'Body: a GeoJSON LineString (or a Feature of one) or `{"polyline": "...", "precision": 5}`, with `samples` (a count) or `step_m` (metres between samples). ' +
        'Answers the samples `{distance_m, lon, lat, elevation}` (great-circle distances) and `ascent_m`, `descent_m`, `min`, `max`, `length_m`.',
      tag: 'Terrain',
      params: SOURCE,
      body: { contentType: 'application/json', schema: v.object({ type: v.optional(v.string()), coordinates: v.optional(v.array(v.array(v.number()))), polyline: v.optional(v.string()), samples: v.optional(v.number()), step_m: v.optional(v.number()) }) },
      responses: {
        200: { description: 'the profile', content: JSON_OK },
        400: { description: 'bad JSON or line, too long, too many samples or vertices; not an elevation source', content: PROBLEM },
        404: { description: 'no such source', content: PROBLEM },
        413: { description: 'the body is too large', content: PROBLEM },
        503: { description: 'the raster or terrain queue is full (Retry-After)', content: PROBLEM },
      },
    },
    async (c) => {
      const state = ctx.holder.current;
      const elevation = lookupProblem(c, state, param(c, 'source'));
      if (elevation instanceof Response) return elevation;
      const body = await readJson(c, state, 'a GeoJSON LineString with "samples" or "step_m"');
      if (!body.ok) return body.response;
      const t = state.config.terrain;
      const parsed = parseProfileBody(body.value, { maxSamples: t.max_profile_samples, maxLengthM: t.max_profile_km * 1000, maxVertices: t.max_points });
      if (!parsed.ok) return problem(c, 400, 'Invalid profile', parsed.problem);
      const samples = sampleLine(parsed.value.coords, parsed.value.spec);
      const values = await elevation.points(samples.map((s) => [s.lon, s.lat] as LonLat));
      const elevations = Array.from(values, elevationValue);
      const summary = summarise(elevations, samples.map((s) => s.distance_m));
      return sendJson(
        c,
        state,
        {
          source: elevation.id,
          length_m: round2(parsed.value.length_m),
          ...summary,
          samples: samples.map((s, i) => ({ distance_m: round2(s.distance_m), lon: s.lon, lat: s.lat, elevation: elevations[i] })),
        },
        NO_STORE,
      );
    },
  );

  // tileserver-gl's routes: integers are a tile (its centre is read at that zoom), other numbers a lon/lat.
  r.add(
    PUBLIC.dataElevationPoint,
    {
      summary: "Elevation at a tile's centre or at a lon/lat (tileserver-gl's route)",
      description: 'x and y integers: the centre of tile z/x/y; otherwise x is a longitude and y a latitude. Answers `{long, lat, elevation, z, x, y, pixelX, pixelY}` as tileserver-gl does; 204 where there is no data.',
      tag: 'Terrain',
      params: { ...TILE_PARAMS, x: { schema: v.number(), description: 'tile column, or a longitude' }, y: { schema: v.number(), description: 'tile row, or a latitude' } },
      responses: {
        200: { description: 'the elevation', content: JSON_OK },
        204: { description: 'no data there' },
        400: { description: 'bad numbers; not an elevation source', content: PROBLEM },
        404: { description: 'no such source; a tile outside the zoom range or the grid', content: PROBLEM },
      },
    },
    async (c) => {
      const state = ctx.holder.current;
      const elevation = lookupProblem(c, state, param(c, 'source'));
      if (elevation instanceof Response) return elevation;
      const zText = param(c, 'z');
      if (!/^\d{1,2}$/.test(zText) || Number(zText) > 22) return problem(c, 400, 'Invalid zoom', `z must be an integer 0-22, got "${zText}"`);
      const z = Number(zText);
      const { info } = elevation;
      const xText = param(c, 'x');
      const yText = param(c, 'y');
      let lon: number;
      let lat: number;
      if (/^\d+$/.test(xText) && /^\d+$/.test(yText)) {
        const x = Number(xText);
        const y = Number(yText);
        if (z < info.minzoom || z > info.maxzoom || x >= 2 ** z || y >= 2 ** z) return problem(c, 404, 'Out of bounds', `tile ${z}/${x}/${y} is outside the grid or the source's zooms ${info.minzoom}-${info.maxzoom}`);
        const n = 2 ** z;
        lon = ((x + 0.5) / n) * 360 - 180;
        lat = (Math.atan(Math.sinh(Math.PI * (1 - (2 * (y + 0.5)) / n))) * 180) / Math.PI;
      } else {
        const point = parsePoint(xText, yText);
        if (!point.ok) return problem(c, 400, 'Invalid point', point.problem);
        [lon, lat] = point.value;
      }
      const zoom = Math.min(info.maxzoom, Math.max(info.minzoom, z));
      const [value] = await elevation.points([[lon, lat]], zoom);
      if (Number.isNaN(value)) return c.body(null, 204);
      const size = info.tileSize ?? 512;
      const n = 2 ** zoom;
      const wx = ((lon + 180) / 360) * n;
      const rad = (lat * Math.PI) / 180;
      const wy = ((1 - Math.log(Math.tan(rad) + 1 / Math.cos(rad)) / Math.PI) / 2) * n;
      const tx = Math.min(n - 1, Math.floor(wx));
      const ty = Math.min(n - 1, Math.floor(wy));
      return c.json({ long: lon, lat, elevation: round2(value), z: zoom, x: tx, y: ty, pixelX: Math.min(size - 1, Math.floor((wx - tx) * size)), pixelY: Math.min(size - 1, Math.floor((wy - ty) * size)) });
    },
  );

  r.add(
    PUBLIC.dataElevationBatch,
    {
      summary: "Elevations at many points (tileserver-gl's route)",
      description: 'Body `{"points": [{"lon", "lat", "z"}, ...]}`; answers a bare array of elevations in order, null where there is no data, as tileserver-gl does.',
      tag: 'Terrain',
      params: SOURCE,
      body: { contentType: 'application/json', schema: v.object({ points: v.array(v.object({ lon: v.number(), lat: v.number(), z: v.number() })) }) },
      responses: {
        200: { description: 'the elevations', content: JSON_OK },
        400: { description: 'bad JSON or points; not an elevation source', content: PROBLEM },
        404: { description: 'no such source', content: PROBLEM },
        413: { description: 'the body is too large', content: PROBLEM },
      },
    },
    async (c) => {
      const read = await batchElevations(c, ctx.holder.current, '{"points": [{"lon": ..., "lat": ..., "z": ...}, ...]}');
      if (read instanceof Response) return read;
      return c.json(read.values);
    },
  );
}

/** A batch request of either form read, checked and answered with elevations (rounded, null without data), or its problem. */
async function batchElevations(c: Context, state: AppState, expected: string): Promise<{ elevation: Elevation; values: (number | null)[] } | Response> {
  const elevation = lookupProblem(c, state, param(c, 'source'));
  if (elevation instanceof Response) return elevation;
  const body = await readJson(c, state, expected);
  if (!body.ok) return body.response;
  const parsed = parsePointsBody(body.value, state.config.terrain.max_points);
  if (!parsed.ok) return problem(c, 400, 'Invalid points', parsed.problem);
  const values = await pointsAtZooms(elevation, parsed.value.points, parsed.value.z);
  return { elevation, values: Array.from(values, elevationValue) };
}

/** Elevations of points that may each name a zoom (tileserver-gl's form): one read per zoom asked for. */
async function pointsAtZooms(elevation: Elevation, points: LonLat[], zooms: (number | undefined)[]): Promise<Float64Array> {
  if (elevation.kind === 'raster' || zooms.every((z) => z === undefined)) return elevation.points(points);
  const out = new Float64Array(points.length);
  const byZoom = new Map<number | undefined, number[]>();
  zooms.forEach((z, i) => {
    const list = byZoom.get(z);
    if (list) list.push(i);
    else byZoom.set(z, [i]);
  });
  for (const [z, indices] of byZoom) {
    const values = await elevation.points(
      indices.map((i) => points[i]),
      z,
    );
    indices.forEach((i, k) => (out[i] = values[k]));
  }
  return out;
}
