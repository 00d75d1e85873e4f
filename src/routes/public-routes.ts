// Every route of the public listener, in the order the router mounts them: where two patterns match one path,
// the first declared answers (Hono's rule), so the order is part of the table. What each route reads, its
// listing and bearer flags and its budget are declared here (declaration.ts says what they mean); the handlers
// and the OpenAPI text are in src/http/routes/*.
//
// Budgets (docs/rate-limits.md has the table): cheap answers are read from storage or a cache (stored tiles,
// TileJSON, styles, fonts, sprites, pages), expensive ones are made on request (renders, static maps, social
// cards, transcodes, composites, raster and database tiles, hillshade and contours, elevation batches and
// profiles, uploads, spatial queries, MCP calls). The route decides, before the answer is made: whether a render or
// transcode will be found in a cache is known only once it has been served, and a limiter that charged by outcome
// would let a client probe uncached tiles for the price of cached ones. A path the route would refuse as
// malformed (coordinates that are not numbers) is cheap: it is answered 400 without work.
import type { AppState } from '../state/app-state.js';
import { isCompositeId, terrainProductOf } from '../sources/source-ids.js';
import { formatFromExtension } from '../tiles/format.js';
import { collection, route, SHARED, source, style, upload, type Budget, type BudgetRule, type Method, type Params, type Read, type RouteDeclaration } from './declaration.js';

/** Stored tiles of an archive served in the format they are stored in: the cheap tile. */
const ARCHIVES = new Set(['pmtiles', 'mbtiles']);

/** A tile of source `id` in extension `ext` (undefined: in the source's own format, as OGC tiles are). */
function dataTileBudget(state: AppState, id: string, ext: string | undefined): Budget {
  // A terrain product's tiles (an OGC collection `{dem}.hillshade`) are drawn on request like /data/{dem}/hillshade/….
  if (ext === 'geojson' || isCompositeId(id) || terrainProductOf(id) !== undefined) return 'expensive';
  const found = state.sources.get(id);
  if (!found) return state.composites.has(id) ? 'expensive' : 'cheap';
  if (!ARCHIVES.has(found.info.type)) return 'expensive';
  // pbf of an MLT archive, mlt of an MVT archive: transcoded on the fly.
  return ext === undefined || formatFromExtension(ext) === found.info.format ? 'cheap' : 'expensive';
}

const DIGITS = /^\d+$/;
const digits = (p: Params, ...names: string[]) => names.every((n) => DIGITS.test(p.param(n) ?? ''));
/** `{y}.{ext}` of a data tile (no scale). */
const DATA_FILE = /^\d+\.([a-z]+)$/;
/** `{y}[@{s}x].{ext}` of a rendered tile. */
const RENDER_FILE = /^\d+(?:@\d+(?:\.\d+)?x)?\.[a-z]+$/;

const dataTile: BudgetRule = (state, p) => {
  const file = DATA_FILE.exec(p.param('file') ?? '');
  return file && digits(p, 'z', 'x') ? dataTileBudget(state, p.param('source') ?? '', file[1]) : 'cheap';
};
const terrainTile: BudgetRule = (_state, p) => (digits(p, 'z', 'x') && /^\d/.test(p.param('file') ?? '') ? 'expensive' : 'cheap');
/** A rendered tile's coordinates and file, as a render route takes them (else it answers 400). */
const renderedTile = (p: Params) => digits(p, 'z', 'x') && RENDER_FILE.test(p.param('file') ?? '');
const styleTile: BudgetRule = (_state, p) => (renderedTile(p) ? 'expensive' : 'cheap');
// Both sizes the route draws (256 and 512) are renders; another size is answered 400 without work. Before this
// table the hand-written classifier knew only `/256/`, so a 512 px render was charged as a stored tile.
const sizedStyleTile: BudgetRule = (_state, p) => ((p.param('size') === '256' || p.param('size') === '512') && renderedTile(p) ? 'expensive' : 'cheap');
const ogcTile: BudgetRule = (state, p) => (digits(p, 'z', 'row', 'col') ? dataTileBudget(state, p.param('id') ?? '', undefined) : 'cheap');
const ogcMapTile: BudgetRule = (_state, p) => (digits(p, 'z', 'row', 'col') ? 'expensive' : 'cheap');

const at = (method: Method, path: string, hono: string, o: Parameters<typeof route>[4] = {}) => route('public', method, path, hono, o);
const reads = (...r: Read[]) => ({ reads: r });
const SOURCE = reads(source('source'));
const STYLE = reads(style('style'));
const COLLECTION = reads(collection('id'));
const LISTING = { listing: true };
const RENDER = 'a render service';
/** /mcp has its own authentication (docs/mcp.md): a bearer header there is MCP's. */
const MCP = { listing: true, bearer: false, mountedWith: '[mcp]' };
const OAUTH = { bearer: false, mountedWith: '[mcp.oauth]', undocumented: true };
const UPLOADS = 'server.upload_dir';

export const PUBLIC = {
  health: at('get', '/health', '/health'),
  ready: at('get', '/ready', '/ready'),
  ping: at('get', '/ping', '/ping'),
  openapi: at('get', '/openapi.json', '/openapi.json'),
  openapiViewer: at('get', '/_openapi', '/_openapi'),
  openapiAsset: at('get', '/_openapi/{asset}', '/_openapi/:asset'),
  // Before the data routes: /data/{id}/hillshade.json would otherwise be read as the TileJSON of a source "{id}/hillshade".
  hillshadeJson: at('get', '/data/{source}/hillshade.json', '/data/:source/hillshade.json', SOURCE),
  hillshadeTile: at('get', '/data/{source}/hillshade/{z}/{x}/{y}.{format}', '/data/:source/hillshade/:z/:x/:file', { ...SOURCE, budget: terrainTile }),
  contoursJson: at('get', '/data/{source}/contours.json', '/data/:source/contours.json', SOURCE),
  contoursTile: at('get', '/data/{source}/contours/{z}/{x}/{y}.{format}', '/data/:source/contours/:z/:x/:file', { ...SOURCE, budget: terrainTile }),
  hillshadeWmts: at('get', '/data/{source}/hillshade/wmts.xml', '/data/:source/hillshade/wmts.xml', SOURCE),
  elevationPoint: at('get', '/api/elevation/{source}', '/api/elevation/:source', SOURCE),
  elevationBatch: at('post', '/api/elevation/{source}', '/api/elevation/:source', { ...SOURCE, budget: 'expensive' }),
  elevationProfile: at('post', '/api/elevation/{source}/profile', '/api/elevation/:source/profile', { ...SOURCE, budget: 'expensive' }),
  // tileserver-gl's elevation routes: one point (a lookup) and a batch.
  dataElevationPoint: at('get', '/data/{source}/elevation/{z}/{x}/{y}', '/data/:source/elevation/:z/:x/:y', SOURCE),
  dataElevationBatch: at('post', '/data/{source}/elevation', '/data/:source/elevation', { ...SOURCE, budget: 'expensive' }),
  dataList: at('get', '/data.json', '/data.json', LISTING),
  index: at('get', '/index.json', '/index.json', LISTING),
  tileJson: at('get', '/data/{source}.json', '/data/:file{.+\\.json}', reads(source('file', '.json'))),
  dataTile: at('get', '/data/{source}/{z}/{x}/{y}.{format}', '/data/:source/:z/:x/:file', { ...SOURCE, budget: dataTile }),
  files: at('get', '/files/{filepath}', '/files/*', reads(SHARED)),
  spatialSchema: at('get', '/api/spatial/schema/{source}', '/api/spatial/schema/:source', SOURCE),
  spatialStats: at('get', '/api/spatial/stats/{source}', '/api/spatial/stats/:source', { ...SOURCE, budget: 'expensive' }),
  // The source is named in the body: the route checks it (src/http/access-gate.ts refuseSources).
  spatialQuery: at('post', '/api/spatial/query', '/api/spatial/query', { budget: 'expensive' }),
  upload: at('post', '/api/upload', '/api/upload', { ...reads(SHARED), budget: 'expensive', mountedWith: UPLOADS }),
  uploads: at('get', '/api/upload', '/api/upload', { ...reads(SHARED), mountedWith: UPLOADS }),
  uploadDelete: at('delete', '/api/upload/{id}', '/api/upload/:id', { ...reads(SHARED, upload('id')), mountedWith: UPLOADS }),
  styleList: at('get', '/styles.json', '/styles.json', LISTING),
  style: at('get', '/styles/{style}/style.json', '/styles/:style/style.json', STYLE),
  styleJson: at('get', '/styles/{style}.json', '/styles/:file{[^/]+\\.json}', reads(style('file', '.json'))),
  styleWmts: at('get', '/styles/{style}/wmts.xml', '/styles/:style/wmts.xml', STYLE),
  sprite: at('get', '/styles/{style}/sprite{scale}.{format}', '/styles/:style/:file{sprite[^/]*}', STYLE),
  fontList: at('get', '/fonts.json', '/fonts.json'),
  glyphs: at('get', '/fonts/{fontstack}/{range}.pbf', '/fonts/:fontstack/:file{[^/]+\\.pbf}'),
  embed: at('get', '/embed/{style}', '/embed/:style', STYLE),
  home: at('get', '/', '/', LISTING),
  stylePage: at('get', '/styles/{style}/', '/styles/:style/', STYLE),
  dataPage: at('get', '/data/{source}/', '/data/:source/', SOURCE),
  pageAsset: at('get', '/assets/pages/{file}', '/assets/pages/:file'),
  asset: at('get', '/assets/{version}/{file}', '/assets/:version/:file'),
  ogcLanding: at('get', '/ogc', '/ogc'),
  ogcApi: at('get', '/ogc/api', '/ogc/api'),
  ogcConformance: at('get', '/ogc/conformance', '/ogc/conformance'),
  ogcTileMatrixSets: at('get', '/ogc/tileMatrixSets', '/ogc/tileMatrixSets'),
  ogcTileMatrixSet: at('get', '/ogc/tileMatrixSets/{tileMatrixSetId}', '/ogc/tileMatrixSets/:tms'),
  // Before the tile routes: /collections/{id}/items and /queryables are not tilesets. Features: a query per page.
  ogcItems: at('get', '/ogc/collections/{collectionId}/items', '/ogc/collections/:id/items', { ...COLLECTION, budget: 'expensive' }),
  ogcItem: at('get', '/ogc/collections/{collectionId}/items/{featureId}', '/ogc/collections/:id/items/:fid', { ...COLLECTION, budget: 'expensive' }),
  ogcQueryables: at('get', '/ogc/collections/{collectionId}/queryables', '/ogc/collections/:id/queryables', COLLECTION),
  ogcCollections: at('get', '/ogc/collections', '/ogc/collections', LISTING),
  ogcCollection: at('get', '/ogc/collections/{collectionId}', '/ogc/collections/:id', COLLECTION),
  ogcTilesets: at('get', '/ogc/collections/{collectionId}/tiles', '/ogc/collections/:id/tiles', COLLECTION),
  ogcTileset: at('get', '/ogc/collections/{collectionId}/tiles/{tileMatrixSetId}', '/ogc/collections/:id/tiles/:tms', COLLECTION),
  ogcTile: at('get', '/ogc/collections/{collectionId}/tiles/{tileMatrixSetId}/{tileMatrix}/{tileRow}/{tileCol}', '/ogc/collections/:id/tiles/:tms/:z/:row/:col', { ...COLLECTION, budget: ogcTile }),
  // The rendered map tiles of styles, and the documents that offer them: only where this process renders.
  ogcStyles: at('get', '/ogc/styles', '/ogc/styles', { ...LISTING, mountedWith: RENDER }),
  ogcMapTilesets: at('get', '/ogc/map/tiles', '/ogc/map/tiles', { ...LISTING, mountedWith: RENDER }),
  ogcStyleMapTilesets: at('get', '/ogc/styles/{styleId}/map/tiles', '/ogc/styles/:style/map/tiles', { ...STYLE, mountedWith: RENDER }),
  ogcStyleMapTileset: at('get', '/ogc/styles/{styleId}/map/tiles/{tileMatrixSetId}', '/ogc/styles/:style/map/tiles/:tms', { ...STYLE, mountedWith: RENDER }),
  ogcStyleMapTile: at('get', '/ogc/styles/{styleId}/map/tiles/{tileMatrixSetId}/{tileMatrix}/{tileRow}/{tileCol}', '/ogc/styles/:style/map/tiles/:tms/:z/:row/:col', { ...STYLE, budget: ogcMapTile, mountedWith: RENDER }),
  // Its tools render, query and sample.
  mcp: at('post', '/mcp', '/mcp', { ...MCP, budget: 'expensive' }),
  // Answered 405 after the same authentication (src/http/routes/mcp.ts says why).
  mcpStream: at('get', '/mcp', '/mcp', { ...MCP, undocumented: true }),
  mcpEnd: at('delete', '/mcp', '/mcp', { ...MCP, undocumented: true }),
  oauthServerMetadata: at('get', '/.well-known/oauth-authorization-server', '/.well-known/oauth-authorization-server', OAUTH),
  oauthServerMetadataFor: at('get', '/.well-known/oauth-authorization-server/{resource}', '/.well-known/oauth-authorization-server/*', OAUTH),
  oauthResourceMetadata: at('get', '/.well-known/oauth-protected-resource', '/.well-known/oauth-protected-resource', OAUTH),
  oauthResourceMetadataFor: at('get', '/.well-known/oauth-protected-resource/{resource}', '/.well-known/oauth-protected-resource/*', OAUTH),
  oauthRegister: at('post', '/oauth/register', '/oauth/register', OAUTH),
  oauthAuthorizePage: at('get', '/oauth/authorize', '/oauth/authorize', OAUTH),
  oauthAuthorize: at('post', '/oauth/authorize', '/oauth/authorize', OAUTH),
  oauthToken: at('post', '/oauth/token', '/oauth/token', OAUTH),
  // Last: the render routes' wide patterns (/styles/{style}/{z}/{x}/{y}.png) must not shadow other /styles routes,
  // and the static maps come before the tiles: `/styles/{style}/static/…` has as many segments as a tile path.
  staticMap: at('get', '/styles/{style}/static/{view}/{size}', '/styles/:style/static/:view/:size', { ...STYLE, budget: 'expensive', mountedWith: RENDER }),
  staticMapPost: at('post', '/styles/{style}/static/{view}/{size}', '/styles/:style/static/:view/:size', { ...STYLE, budget: 'expensive', mountedWith: RENDER }),
  staticMapRaw: at('get', '/styles/{style}/static/raw/{view}/{size}', '/styles/:style/static/raw/:view/:size', { ...STYLE, budget: 'expensive', mountedWith: RENDER }),
  staticMapRawPost: at('post', '/styles/{style}/static/raw/{view}/{size}', '/styles/:style/static/raw/:view/:size', { ...STYLE, budget: 'expensive', mountedWith: RENDER }),
  styleTile: at('get', '/styles/{style}/{z}/{x}/{y}{scale}.{format}', '/styles/:style/:z/:x/:file', { ...STYLE, budget: styleTile, mountedWith: RENDER }),
  sizedStyleTile: at('get', '/styles/{style}/{tile_size}/{z}/{x}/{y}{scale}.{format}', '/styles/:style/:size/:z/:x/:file', { ...STYLE, budget: sizedStyleTile, mountedWith: RENDER }),
  socialCard: at('get', '/og/{style}', '/og/:style', { ...STYLE, budget: 'expensive', mountedWith: RENDER }),
} as const satisfies Record<string, RouteDeclaration>;

/** The public listener's routes in mounting order. */
export const PUBLIC_ROUTES: readonly RouteDeclaration[] = Object.values(PUBLIC);
