// The JSON documents of OGC API - Tiles and - Features (landing page, conformance, collections, tilesets,
// styles) built from a state. Every href is absolute and carries the request's `key`, like TileJSON URLs.
import { terrainProductSources } from '../serve/terrain-tiles.js';
import type { AppState } from '../state/app-state.js';
import type { LoadedStyle } from '../styles/loaded-style.js';
import { withKey, type UrlContext } from '../sources/tilejson.js';
import type { TileSource } from '../sources/source.js';
import { isVector, type TileFormat } from '../tiles/format.js';
import { PgTableSource } from '../sources/postgres/table.js';
import { layerCollections, ownFeatures, type FeatureCollectionOf, type FileCollection } from './feature-collections.js';
import { collectionCrss } from './crs.js';
import { CRS84, CRS_3857, TMS_ID, TMS_URI, tileMatrixLimits, type TileMatrixLimits } from './tms.js';

export const REL = {
  conformance: 'http://www.opengis.net/def/rel/ogc/1.0/conformance',
  data: 'http://www.opengis.net/def/rel/ogc/1.0/data',
  tilingSchemes: 'http://www.opengis.net/def/rel/ogc/1.0/tiling-schemes',
  tilingScheme: 'http://www.opengis.net/def/rel/ogc/1.0/tiling-scheme',
  tilesetsVector: 'http://www.opengis.net/def/rel/ogc/1.0/tilesets-vector',
  tilesetsMap: 'http://www.opengis.net/def/rel/ogc/1.0/tilesets-map',
  queryables: 'http://www.opengis.net/def/rel/ogc/1.0/queryables',
  styles: 'http://www.opengis.net/def/rel/ogc/1.0/styles',
} as const;

export const JSON_TYPE = 'application/json';
export const GEOJSON_TYPE = 'application/geo+json';
export const HTML_TYPE = 'text/html';
export const SCHEMA_TYPE = 'application/schema+json';
/** The media type OGC API names an OpenAPI 3.0 document by (and GDAL's OGCAPI driver asks for). */
export const OPENAPI_30_TYPE = 'application/vnd.oai.openapi+json;version=3.0';
/** The registered media type of Mapbox Vector Tiles (what OGC API - Tiles names MVT by). */
export const MVT_TYPE = 'application/vnd.mapbox-vector-tile';

const TILE_TYPES: Record<TileFormat, string> = { pbf: MVT_TYPE, mlt: 'application/vnd.maplibre-vector-tile', png: 'image/png', jpg: 'image/jpeg', webp: 'image/webp' };

export interface Link {
  href: string;
  rel: string;
  type?: string;
  title?: string;
  templated?: boolean;
}

const CONF = {
  common: ['core', 'landing-page', 'json', 'html', 'oas30'].map((c) => `http://www.opengis.net/spec/ogcapi-common-1/1.0/conf/${c}`).concat('http://www.opengis.net/spec/ogcapi-common-2/1.0/conf/collections'),
  tiles: ['core', 'tileset', 'tilesets-list', 'geodata-tilesets', 'mvt', 'png', 'jpeg', 'oas30'].map((c) => `http://www.opengis.net/spec/ogcapi-tiles-1/1.0/conf/${c}`),
  datasetTiles: 'http://www.opengis.net/spec/ogcapi-tiles-1/1.0/conf/dataset-tilesets',
  tms: ['http://www.opengis.net/spec/tms/2.0/conf/tilematrixset', 'http://www.opengis.net/spec/tms/2.0/conf/json-tilematrixset'],
  features: [
    'http://www.opengis.net/spec/ogcapi-features-1/1.0/conf/core',
    'http://www.opengis.net/spec/ogcapi-features-1/1.0/conf/geojson',
    'http://www.opengis.net/spec/ogcapi-features-1/1.0/conf/html',
    'http://www.opengis.net/spec/ogcapi-features-1/1.0/conf/oas30',
    'http://www.opengis.net/spec/ogcapi-features-2/1.0/conf/crs',
    'http://www.opengis.net/spec/ogcapi-features-3/1.0/conf/queryables',
    'http://www.opengis.net/spec/ogcapi-features-3/1.0/conf/queryables-query-parameters',
    'http://www.opengis.net/spec/ogcapi-features-3/1.0/conf/filter',
    'http://www.opengis.net/spec/ogcapi-features-3/1.0/conf/features-filter',
    'http://www.opengis.net/spec/cql2/1.0/conf/cql2-text',
    'http://www.opengis.net/spec/cql2/1.0/conf/cql2-json',
    'http://www.opengis.net/spec/cql2/1.0/conf/basic-cql2',
    'http://www.opengis.net/spec/cql2/1.0/conf/advanced-comparison-operators',
    'http://www.opengis.net/spec/cql2/1.0/conf/basic-spatial-functions',
    'http://www.opengis.net/spec/cql2/1.0/conf/basic-spatial-functions-plus',
  ],
};

/** Builds the absolute, key-carrying hrefs of one response. */
export class Hrefs {
  constructor(private readonly u: UrlContext) {}
  /** `path` is below /ogc, e.g. `/collections/roads`. */
  ogc(path: string, query: Record<string, string> = {}): string {
    const q = new URLSearchParams(query).toString();
    return withKey(`${this.u.base}/ogc${path}${q ? `?${q}` : ''}`, this.u.key);
  }
  /** A path of the service outside /ogc (the OpenAPI document). */
  root(path: string): string {
    return withKey(`${this.u.base}${path}`, this.u.key);
  }
  /** A templated href: `{` and `}` stay literal. */
  template(path: string): string {
    return withKey(`${this.u.base}/ogc${path}`, this.u.key);
  }
}

/** The self link (JSON) and the HTML alternate of a document at `path`. */
export function selfLinks(h: Hrefs, path: string, title: string, type = JSON_TYPE): Link[] {
  return [
    { href: h.ogc(path, { f: 'json' }), rel: 'self', type, title },
    { href: h.ogc(path, { f: 'html' }), rel: 'alternate', type: HTML_TYPE, title: `${title} as HTML` },
  ];
}

/** An id as a path segment. A layer collection's ":" stays as it is (a path may hold it), so `city:roads` reads as typed. */
export const seg = (id: string) => encodeURIComponent(id).replaceAll('%3A', ':');

/** The sources OGC API offers as collections: configured sources, named composites, elevation sources' hillshade and contours. */
export function collectionSources(state: AppState): TileSource[] {
  return [...state.sources.values(), ...state.composites.values(), ...terrainProductSources(state)];
}

/** Styles whose map tiles are offered (rendering on, and a render service in the process). */
export function mapStyles(state: AppState, rendering: boolean): LoadedStyle[] {
  return rendering && !state.config.server.disable_render ? [...state.styles.values()] : [];
}

export function landingPage(h: Hrefs, styles: boolean): Record<string, unknown> {
  const links: Link[] = [
    ...selfLinks(h, '', 'this document'),
    { href: h.ogc('/api'), rel: 'service-desc', type: OPENAPI_30_TYPE, title: 'the OpenAPI 3.0 description of this API' },
    { href: h.root('/openapi.json'), rel: 'service-desc', type: 'application/vnd.oai.openapi+json;version=3.1', title: 'the OpenAPI 3.1 description of the whole service' },
    { href: h.ogc('/conformance'), rel: REL.conformance, type: JSON_TYPE, title: 'conformance classes' },
    { href: h.ogc('/collections'), rel: REL.data, type: JSON_TYPE, title: 'collections (sources)' },
    // The same two under the short relation names of OGC API - Features Part 1 1.0, which QGIS's OAPIF provider
    // (3.40 and later) matches exactly: without `data` it finds no collections and opens no layer.
    { href: h.ogc('/conformance'), rel: 'conformance', type: JSON_TYPE, title: 'conformance classes' },
    { href: h.ogc('/collections'), rel: 'data', type: JSON_TYPE, title: 'collections (sources)' },
    { href: h.ogc('/tileMatrixSets'), rel: REL.tilingSchemes, type: JSON_TYPE, title: 'tile matrix sets' },
  ];
  if (styles) {
    links.push(
      { href: h.ogc('/styles'), rel: REL.styles, type: JSON_TYPE, title: 'styles (rendered map tiles)' },
      // What the dataset-tilesets class asks of a landing page: the list of the dataset's map tilesets.
      { href: h.ogc('/map/tiles'), rel: REL.tilesetsMap, type: JSON_TYPE, title: 'map tilesets of the dataset (one per style)' },
    );
  }
  return { title: 'tileserver-ts', description: 'Map tiles of every source and style (OGC API - Tiles) and features of PostGIS tables and data files (OGC API - Features).', links };
}

/**
 * OGC API - Features Part 4 (draft 20-002r1): creating, replacing and deleting, updating with PATCH, and the
 * optimistic locking by ETag. Declared only while some collection is writable (docs/editing.md).
 */
export const WRITE_CONFORMANCE = [
  'http://www.opengis.net/spec/ogcapi-features-4/1.0/conf/create-replace-delete',
  'http://www.opengis.net/spec/ogcapi-features-4/1.0/conf/update',
  'http://www.opengis.net/spec/ogcapi-features-4/1.0/conf/optimistic-locking-etags',
  'http://www.opengis.net/spec/ogcapi-features-4/1.0/conf/features',
];

export function conformance(hasFeatures: boolean, styles: boolean, writable = false): { conformsTo: string[] } {
  return { conformsTo: [...CONF.common, ...CONF.tiles, ...(styles ? [CONF.datasetTiles] : []), ...CONF.tms, ...(hasFeatures ? CONF.features : []), ...(writable ? WRITE_CONFORMANCE : [])] };
}

export function tileMatrixSets(h: Hrefs): Record<string, unknown> {
  return {
    tileMatrixSets: [
      {
        id: TMS_ID,
        title: 'Google Maps Compatible for the World',
        uri: TMS_URI,
        crs: CRS_3857,
        links: [{ href: h.ogc(`/tileMatrixSets/${TMS_ID}`), rel: 'self', type: JSON_TYPE, title: TMS_ID }],
      },
    ],
    links: selfLinks(h, '/tileMatrixSets', 'tile matrix sets'),
  };
}

const dataType = (s: TileSource) => (isVector(s.info.format) ? 'vector' : 'map');

/** What a collection with features adds to its document: its CRSs and the items and queryables links. */
function addFeatures(doc: Record<string, unknown>, links: Link[], h: Hrefs, path: string, of: FeatureCollectionOf): void {
  doc.itemType = 'feature';
  // OGC API - Features Part 2: the CRSs items answer in and take bboxes in (crs.ts decides which), the stored one.
  const crss = collectionCrss(of);
  doc.crs = crss.list.map((c) => c.uri);
  if (crss.storage) doc.storageCrs = crss.storage.uri;
  links.push(
    { href: h.ogc(`${path}/items`, { f: 'json' }), rel: 'items', type: GEOJSON_TYPE, title: 'features' },
    { href: h.ogc(`${path}/items`, { f: 'html' }), rel: 'items', type: HTML_TYPE, title: 'features as HTML' },
    { href: h.ogc(`${path}/queryables`), rel: REL.queryables, type: SCHEMA_TYPE, title: 'queryables' },
  );
}

export function collection(h: Hrefs, s: TileSource): Record<string, unknown> {
  const info = s.info;
  const path = `/collections/${seg(info.id)}`;
  const links: Link[] = [
    ...selfLinks(h, path, info.name),
    { href: h.ogc(`${path}/tiles`), rel: isVector(info.format) ? REL.tilesetsVector : REL.tilesetsMap, type: JSON_TYPE, title: `${dataType(s)} tilesets` },
  ];
  const doc: Record<string, unknown> = {
    id: info.id,
    title: info.name,
    ...(info.description ? { description: info.description } : {}),
    ...(info.attribution ? { attribution: info.attribution } : {}),
    extent: { spatial: { bbox: [info.bounds], crs: CRS84 } },
    dataType: dataType(s),
  };
  const own = ownFeatures(s);
  if (own) addFeatures(doc, links, h, path, own);
  // A file of several layers: its tiles here, each layer's features in a collection of its own.
  for (const l of layerCollections(s)) {
    links.push({ href: h.ogc(`/collections/${seg(l.id)}`), rel: 'related', type: JSON_TYPE, title: `features of layer ${l.layer} (collection ${l.id})` });
  }
  doc.links = links;
  return doc;
}

/**
 * The collection of one layer of a file source of several layers (`{source}:{layer}`): features only, its extent
 * the layer's own. Its tiles are that layer of the source's tiles, so it links up to the source's collection
 * rather than offering a tileset of its own.
 */
export function layerCollection(h: Hrefs, c: FileCollection): Record<string, unknown> {
  const info = c.source.info;
  const path = `/collections/${seg(c.id)}`;
  const layer = c.source.layers.find((l) => l.name === c.layer);
  const links: Link[] = [
    ...selfLinks(h, path, c.title),
    { href: h.ogc(`/collections/${seg(info.id)}`), rel: 'up', type: JSON_TYPE, title: `the source ${info.id}, whose vector tiles carry this layer as "${c.layer}"` },
  ];
  const doc: Record<string, unknown> = {
    id: c.id,
    title: c.title,
    description: `Layer "${c.layer}" of ${info.name}${info.description ? `: ${info.description}` : ''}`,
    ...(info.attribution ? { attribution: info.attribution } : {}),
    // An empty layer has no extent of its own: the source's stands for it.
    extent: { spatial: { bbox: [layer?.bounds ?? info.bounds], crs: CRS84 } },
    dataType: 'vector',
  };
  addFeatures(doc, links, h, path, c);
  doc.links = links;
  return doc;
}

/** `keep`: which sources the request may see (access control, docs/access.md); default all. A source's layer collections follow it. */
export function collections(h: Hrefs, state: AppState, keep: (s: TileSource) => boolean = () => true): Record<string, unknown> {
  const docs = collectionSources(state)
    .filter(keep)
    .flatMap((s) => [collection(h, s), ...layerCollections(s).map((l) => layerCollection(h, l))]);
  return { links: selfLinks(h, '/collections', 'collections'), collections: docs };
}

/** The tile matrix limits of a source: its zoom range, cut to its bounds unless its tiles exist everywhere. */
export function sourceLimits(s: TileSource): TileMatrixLimits[] {
  return tileMatrixLimits(s.info.tilesOutsideBounds ? undefined : s.info.bounds, s.info.minzoom, s.info.maxzoom);
}

/** Where a tileset lives: a source's, or a style's map tiles. */
export type TilesetOf = { kind: 'source'; source: TileSource } | { kind: 'style'; style: LoadedStyle; minzoom: number; maxzoom: number };

function tilesetPath(t: TilesetOf): string {
  return t.kind === 'source' ? `/collections/${seg(t.source.info.id)}/tiles` : `/styles/${seg(t.style.id)}/map/tiles`;
}

function tilesetSummary(h: Hrefs, t: TilesetOf): Record<string, unknown> {
  const title = t.kind === 'source' ? t.source.info.name : t.style.name;
  return {
    title,
    dataType: t.kind === 'source' ? dataType(t.source) : 'map',
    crs: CRS_3857,
    tileMatrixSetURI: TMS_URI,
    links: [
      { href: h.ogc(`${tilesetPath(t)}/${TMS_ID}`), rel: 'self', type: JSON_TYPE, title: `${title} in ${TMS_ID}` },
      { href: h.ogc(`/tileMatrixSets/${TMS_ID}`), rel: REL.tilingScheme, type: JSON_TYPE, title: TMS_ID },
    ],
  };
}

export function tilesetList(h: Hrefs, t: TilesetOf): Record<string, unknown> {
  return { links: selfLinks(h, tilesetPath(t), 'tilesets'), tilesets: [tilesetSummary(h, t)] };
}

/** The dataset's map tilesets (/map/tiles): every style's rendered tileset, each linking to its own metadata. */
export function datasetMapTilesets(h: Hrefs, styles: Extract<TilesetOf, { kind: 'style' }>[]): Record<string, unknown> {
  return { links: selfLinks(h, '/map/tiles', 'map tilesets of the dataset'), tilesets: styles.map((t) => tilesetSummary(h, t)) };
}

const MERCATOR_RADIUS = 6378137;
const MAX_LAT = 85.0511287798066;
/** Longitude/latitude in web mercator metres (latitude clamped to the square world). */
function mercator(lon: number, lat: number): [number, number] {
  const phi = (Math.max(-MAX_LAT, Math.min(MAX_LAT, lat)) * Math.PI) / 180;
  return [(lon * Math.PI * MERCATOR_RADIUS) / 180, MERCATOR_RADIUS * Math.log(Math.tan(Math.PI / 4 + phi / 2))];
}

/** JSON Schema type of a TileJSON field type. */
const FIELD_TYPES: Record<string, string> = { Number: 'number', Boolean: 'boolean', String: 'string' };

export function tileset(h: Hrefs, t: TilesetOf): Record<string, unknown> {
  const summary = tilesetSummary(h, t);
  const base = `${tilesetPath(t)}/${TMS_ID}`;
  const format: TileFormat = t.kind === 'source' ? t.source.info.format : 'png';
  const limits = t.kind === 'source' ? sourceLimits(t.source) : tileMatrixLimits(undefined, t.minzoom, t.maxzoom);
  const bounds = t.kind === 'source' ? t.source.info.bounds : [-180, -85.0511287798066, 180, 85.0511287798066];
  const doc: Record<string, unknown> = {
    title: summary.title,
    ...(t.kind === 'source' && t.source.info.description ? { description: t.source.info.description } : {}),
    ...(t.kind === 'source' && t.source.info.attribution ? { attribution: t.source.info.attribution } : {}),
    dataType: summary.dataType,
    crs: CRS_3857,
    tileMatrixSetURI: TMS_URI,
    tileMatrixSetLimits: limits,
    // In the tileset's own CRS (web mercator metres), the CRS its tile matrices and limits are in.
    boundingBox: { lowerLeft: mercator(bounds[0], bounds[1]), upperRight: mercator(bounds[2], bounds[3]), crs: CRS_3857 },
    minTileMatrix: limits[0]?.tileMatrix,
    maxTileMatrix: limits[limits.length - 1]?.tileMatrix,
  };
  if (t.kind === 'source' && t.source.info.vectorLayers) {
    doc.layers = t.source.info.vectorLayers.map((l) => ({
      id: l.id,
      dataType: 'vector',
      ...(l.description ? { description: l.description } : {}),
      ...(l.minzoom !== undefined ? { minTileMatrix: String(l.minzoom) } : {}),
      ...(l.maxzoom !== undefined ? { maxTileMatrix: String(l.maxzoom) } : {}),
      propertiesSchema: { type: 'object', properties: Object.fromEntries(Object.entries(l.fields).map(([k, v]) => [k, { type: FIELD_TYPES[v] ?? 'string' }])) },
    }));
  }
  doc.links = [
    ...selfLinks(h, base, `${String(summary.title)} tileset`),
    { href: h.ogc(`/tileMatrixSets/${TMS_ID}`), rel: REL.tilingScheme, type: JSON_TYPE, title: TMS_ID },
    { href: h.template(`${base}/{tileMatrix}/{tileRow}/{tileCol}`), rel: 'item', type: TILE_TYPES[format], title: 'tiles', templated: true },
    ...(t.kind === 'source' ? [{ href: h.ogc(`/collections/${seg(t.source.info.id)}`), rel: 'collection', type: JSON_TYPE, title: 'the collection' }] : []),
  ];
  return doc;
}

export function stylesList(h: Hrefs, styles: LoadedStyle[]): Record<string, unknown> {
  return {
    links: selfLinks(h, '/styles', 'styles'),
    styles: styles.map((s) => ({
      id: s.id,
      title: s.name,
      links: [{ href: h.ogc(`/styles/${seg(s.id)}/map/tiles`), rel: REL.tilesetsMap, type: JSON_TYPE, title: 'rendered map tilesets' }],
    })),
  };
}
