// One server with every route family mounted (vector, raster and COG sources, a composite, a style, fonts,
// files, uploads, the admin and metrics listeners, rendering) and the routes it documents, each made into a
// valid request that tests can then spoil one part of at a time: the built-in property name sweep and the
// seeded fuzz run (test/builtin-names.test.ts, test/fuzz.test.ts).
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { request, tempDir, waitFor, type RawResponse } from './foundation.js';
import { fixture, freePort, startServer, type TestServer } from './server.js';

export interface EveryRouteServer {
  server: TestServer;
  uploadDir: string;
  adminUrl: string;
  metricsUrl: string;
  /** Every documented route of the main listener: method, OpenAPI template, its path and query parameter names. */
  routes: DocumentedRoute[];
}

export interface DocumentedRoute {
  method: string;
  template: string;
  pathParams: string[];
  queryParams: string[];
}

export async function startEveryRouteServer(): Promise<EveryRouteServer> {
  const uploadDir = tempDir('tsts-every-upload-');
  const adminPort = await freePort();
  const metricsPort = await freePort();
  const server = await startServer({
    toml: `fonts = "${fixture('fonts')}"
files = "${fixture('files')}"
[server]
upload_dir = "${uploadDir}"
admin_bind = "127.0.0.1:${adminPort}"
[render]
pool_size = 1
[telemetry]
scrape_bind = "127.0.0.1:${metricsPort}"
[[sources]]
id = "openmaptiles"
type = "pmtiles"
path = "${fixture('vector/omt-planet-z0-1.pmtiles')}"
[[sources]]
id = "natural_earth"
type = "pmtiles"
path = "${fixture('raster/natural-earth-png-z0-1.pmtiles')}"
[[sources]]
id = "cities"
type = "mbtiles"
path = "${fixture('vector/world_cities.mbtiles')}"
[[sources]]
id = "dem"
type = "cog"
path = "${fixture('cog/dem-small.cog.tif')}"
[[sources]]
id = "elevation"
type = "cog"
path = "${fixture('cog/dem-small.cog.tif')}"
dem = { encoding = "terrarium" }
[[composites]]
id = "both"
sources = ["openmaptiles", "cities"]
[[styles]]
id = "osm-liberty"
path = "${fixture('styles/osm-liberty/style.json')}"
`,
  });
  // Renderers warm up in the background: /ready answers 503 until they have (and a render would wait).
  await waitFor('the renderer to be ready', async () => ((await request(server.url, '/ready')).status === 200 ? true : undefined), 90_000);
  const doc = JSON.parse((await request(server.url, '/openapi.json')).body.toString('utf8')) as {
    paths: Record<string, Record<string, { parameters?: { in: string; name: string }[] }>>;
  };
  const routes: DocumentedRoute[] = [];
  for (const [template, ops] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(ops)) {
      const params = op.parameters ?? [];
      routes.push({
        method: method.toUpperCase(),
        template,
        pathParams: params.filter((p) => p.in === 'path').map((p) => p.name),
        queryParams: params.filter((p) => p.in === 'query').map((p) => p.name),
      });
    }
  }
  return { server, uploadDir, adminUrl: `http://127.0.0.1:${adminPort}`, metricsUrl: `http://127.0.0.1:${metricsPort}`, routes };
}

const mapLibreVersion = (JSON.parse(readFileSync(createRequire(import.meta.url).resolve('maplibre-gl/package.json'), 'utf8')) as { version: string }).version;

/** A valid value of each path parameter, by name, with the exceptions of routes that use a name differently. */
const PATH_SAMPLES: Record<string, string> = {
  source: 'openmaptiles',
  z: '0',
  x: '0',
  y: '0',
  format: 'pbf',
  filepath: 'README.txt',
  id: '00000000-0000-4000-8000-000000000000',
  style: 'osm-liberty',
  scale: '',
  fontstack: 'Noto%20Sans%20Regular',
  range: '0-255',
  asset: 'swagger-ui.css',
  file: 'common.js',
  version: mapLibreVersion,
  view: '0,0,1',
  size: '8x8.png',
  tile_size: '256',
  collectionId: 'openmaptiles',
  tileMatrixSetId: 'WebMercatorQuad',
  tileMatrix: '0',
  tileRow: '0',
  tileCol: '0',
  styleId: 'osm-liberty',
  featureId: '1',
};
const ROUTE_SAMPLES: Record<string, Record<string, string>> = {
  '/styles/{style}/sprite{scale}.{format}': { format: 'json' },
  '/styles/{style}/{z}/{x}/{y}{scale}.{format}': { format: 'png' },
  '/styles/{style}/{tile_size}/{z}/{x}/{y}{scale}.{format}': { format: 'png' },
  '/assets/{version}/{file}': { file: 'maplibre-gl.css' },
  // Terrain routes answer for an elevation source; the tile sits on its data (z12 over San Francisco).
  '/data/{source}/hillshade/{z}/{x}/{y}.{format}': { source: 'elevation', z: '12', x: '655', y: '1582', format: 'png' },
  '/data/{source}/contours/{z}/{x}/{y}.{format}': { source: 'elevation', z: '12', x: '655', y: '1582', format: 'pbf' },
  '/data/{source}/hillshade.json': { source: 'elevation' },
  '/data/{source}/contours.json': { source: 'elevation' },
  '/data/{source}/hillshade/wmts.xml': { source: 'elevation' },
  '/api/elevation/{source}': { source: 'elevation' },
  '/api/elevation/{source}/profile': { source: 'elevation' },
  '/data/{source}/elevation/{z}/{x}/{y}': { source: 'elevation', z: '12', x: '-122.4', y: '37.8' },
  '/data/{source}/elevation': { source: 'elevation' },
};

/** A valid value of each documented query parameter. */
export const QUERY_SAMPLES: Record<string, string> = {
  key: 'k',
  center: '10,20',
  zoom: '2',
  bearing: '0',
  pitch: '0',
  bounds: '-10,-10,10,10',
  markers: '0,0',
  controls: 'navigation',
  hash: 'false',
  interactive: 'true',
  theme: 'light',
  path: 'path-2+f00(0,0|10,10)',
  marker: 'pin-s+f00(5,5)',
  geojson: '{"type":"Point","coordinates":[1,1]}',
  padding: '0.1',
  maxzoom: '5',
  latlng: 'false',
  fill: 'red',
  stroke: '#00ff00',
  border: 'white',
  borderwidth: '1',
  linecap: 'round',
  linejoin: 'round',
  attribution: 'false',
  watermark: 'test',
  width: '8',
  height: '8',
  format: 'png',
  f: 'json',
  bbox: '-10,-10,10,10',
  limit: '5',
  offset: '0',
  filter: "name = 'x'",
  'filter-lang': 'cql2-text',
  'filter-crs': 'http://www.opengis.net/def/crs/OGC/1.3/CRS84',
  lon: '-122.4',
  lat: '37.8',
  method: 'igor',
  mode: 'grey',
  azimuth: '315',
  altitude: '45',
  exaggeration: '1',
  shadow: '#000000',
  highlight: '#ffffff',
  accent: '#000000',
  interval: '50',
  major: '5',
  unit: 'm',
};

/** The value a test puts in path parameter `name` of `template` when it is not the one being spoiled. */
export function pathSample(template: string, name: string): string {
  const own = ROUTE_SAMPLES[template];
  if (own && Object.hasOwn(own, name)) return own[name];
  if (!Object.hasOwn(PATH_SAMPLES, name)) throw new Error(`no sample value for {${name}} of ${template}`);
  return PATH_SAMPLES[name];
}

/** `template` with every parameter given a valid value, except those in `given`, which are used as they are (already encoded). */
export function fillTemplate(template: string, given: Record<string, string> = {}): string {
  return template.replace(/\{([A-Za-z_]+)\}/g, (_, name: string) => (Object.hasOwn(given, name) ? given[name] : pathSample(template, name)));
}

/** Problems of one answer of a request that must never fail on the server's side (empty when it is fine). */
export function answerProblems(label: string, res: RawResponse): string[] {
  const out: string[] = [];
  if (res.status >= 500) out.push(`${label}: ${res.status} ${res.body.toString('utf8').slice(0, 200)}`);
  if (res.status >= 400) {
    const type = String(res.headers['content-type'] ?? '');
    if (!type.startsWith('application/problem+json') && !(label.includes('/__admin/reload') && type.startsWith('application/json'))) {
      out.push(`${label}: ${res.status} with Content-Type "${type}", not problem JSON`);
    }
  }
  return out;
}
