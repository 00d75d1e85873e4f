// OGC API - Features (Part 1, read-only), Part 2 (crs and bbox-crs, src/ogc/crs.ts) and Part 3 filtering for PostGIS table sources and the layers of data-file
// sources (a one-layer source's own collection, `{source}:{layer}` for each layer of a source of several): items with bbox,
// limit/offset paging, property=value and CQL2 filters, one item by id, and the queryables.
import type { Context } from 'hono';
import * as v from 'valibot';
import { Cql2Error, type Expr } from '../../../cql2/ast.js';
import { parseCql2Json } from '../../../cql2/json.js';
import { parseCql2Text } from '../../../cql2/text.js';
import { GEOJSON_TYPE, HTML_TYPE, Hrefs, JSON_TYPE, SCHEMA_TYPE, seg, type Link } from '../../../ogc/documents.js';
import { findLayerCollection, layerCollections, ownFeatures, type FeatureCollectionOf } from '../../../ogc/feature-collections.js';
import { DEFAULT_LIMIT, fileQueryablesSchema, MAX_LIMIT, queryables, queryablesSchema, readFileItem, readFileItems, readItem, readItems } from '../../../ogc/features.js';
import { GEOMETRY_QUERYABLE } from '../../../sources/files/source.js';
import { CRS84 } from '../../../ogc/tms.js';
import { bboxToXy, collectionCrss, contentCrs, CRS84_ENTRY, crsNamed, isLonLat, type Crs } from '../../../ogc/crs.js';
import { urlContext, type ServerContext } from '../../context.js';
import { problem } from '../../problem.js';
import { KEY_QUERY, param, type Router } from '../../router.js';
import { PUBLIC } from '../../../routes/public-routes.js';
import { DOC_QUERY, ogcAbsence, PROBLEM, sendDoc } from './negotiate.js';
import { METADATA_CACHE_CONTROL, notModified } from '../../respond.js';

const COLLECTION = {
  collectionId: { schema: v.string(), description: 'id of a [[postgres.tables]] source or of a data-file source with one layer, or `{source}:{layer}` for a layer of a data-file source with several (a GeoPackage of several tables)' },
};
const GEOJSON = { 'application/geo+json': true as const, 'text/html': true as const };
/** Query parameters items understands besides property names. */
const ITEMS_PARAMS = new Set(['f', 'key', 'bbox', 'limit', 'offset', 'filter', 'filter-lang', 'filter-crs', 'crs', 'bbox-crs']);
/**
 * OGC API - Features Part 2: `crs` (the CRS of the geometries answered) and `bbox-crs` (the CRS of bbox) name one
 * of the CRSs the collection lists (src/ogc/crs.ts); anything else is refused naming the parameter. GDAL 3.10's
 * OGCAPI driver (Debian 13) sends `crs=<storageCrs>` with every items request, so the storage CRS must be one of
 * them. Every answer of items or an item says its geometries' CRS in `Content-Crs`.
 */
const CRS_PARAMS = ['crs', 'bbox-crs'] as const;
const CRS_DOC = 'the URI of one of the CRSs the collection lists in `crs` (OGC API - Features Part 2): CRS84 (default), EPSG:4326 (latitude first), EPSG:3857 and the table\'s own; a data-file layer lists CRS84 only';

/** The CRS a Part 2 parameter names (CRS84 when absent), or the 400 naming it. */
function crsParam(c: Context, t: FeatureCollectionOf, name: (typeof CRS_PARAMS)[number]): Crs | Response {
  const text = c.req.query(name);
  if (text === undefined) return CRS84_ENTRY;
  const { list } = collectionCrss(t);
  return crsNamed(list, text) ?? invalid(c, name, `${name} ${JSON.stringify(text.slice(0, 200))} is not one of the CRSs collection "${t.id}" offers: ${list.map((x) => x.uri).join(', ')}`);
}

/** The collection of features a request names, or the 404 to answer (no such collection, or one without features). */
export function featuresOf(c: Context, ctx: ServerContext): FeatureCollectionOf | Response {
  const id = param(c, 'id');
  const state = ctx.holder.current;
  const lookup = (sid: string) => state.sources.get(sid) ?? state.composites.get(sid);
  const s = lookup(id);
  if (s) {
    const own = ownFeatures(s);
    if (own) return own;
    const layers = layerCollections(s);
    if (layers.length) return problem(c, 404, 'Not found', `collection "${id}" has tiles only; the features of its layers are the collections ${layers.map((l) => `"${l.id}"`).join(', ')}`);
    return problem(c, 404, 'Not found', `collection "${id}" has tiles only; features are offered for [[postgres.tables]] sources and the layers of data-file sources`);
  }
  const layer = findLayerCollection(id, lookup);
  if (layer && 'found' in layer) return layer.found;
  if (layer) {
    const own = ownFeatures(layer.source);
    const layers = layerCollections(layer.source);
    const where = own ? `its features are the collection "${own.id}"` : layers.length ? `its layers are the collections ${layers.map((l) => `"${l.id}"`).join(', ')}` : 'it has tiles only';
    return problem(c, 404, 'Collection not found', `no collection "${id}": source "${layer.source.info.id}" has no layer collection of that name (${where})`);
  }
  return problem(c, 404, 'Collection not found', `no collection "${id}"`);
}

/** The queryable names of a collection, and the name of its geometry (not a property=value parameter). */
const namesOf = (t: FeatureCollectionOf) =>
  t.kind === 'table'
    ? { names: new Set(queryables(t.source.features).map((x) => x.name)), geometry: t.source.features.geometryColumn }
    : { names: new Set(t.source.layerQueryables(t.layer).map((x) => x.name)), geometry: GEOMETRY_QUERYABLE };

const invalid = (c: Context, parameter: string, detail: string, extra: Record<string, unknown> = {}) => problem(c, 400, 'Invalid parameter', detail, { parameter, ...extra });

/** A run of ASCII digits as a number, saturated at `cap` (a long run of digits is still a whole number). */
function parseDigits(text: string, cap: number): number | undefined {
  if (!/^\d+$/.test(text)) return undefined;
  const n = Number(text);
  return n > cap ? cap : n;
}

export function registerOgcFeatureRoutes(r: Router, ctx: ServerContext): void {
  r.add(
    PUBLIC.ogcItems,
    {
      summary: 'Features of a PostGIS table or of a layer of a data file, filtered and paged',
      tag: 'OGC API',
      description:
        'Any queryable name may also be given as a parameter (`name=value`: equality). `filter` takes CQL2 (text or JSON): comparisons, AND/OR/NOT, LIKE, IN, BETWEEN, IS NULL and S_INTERSECTS with a BBOX or a geometry. ' +
        'numberMatched counts every match; next/prev links page through them.',
      params: COLLECTION,
      query: {
        ...DOC_QUERY,
        bbox: { schema: v.string(), description: 'the box\'s lower and upper corners in bbox-crs (default CRS84: west,south,east,north in longitude/latitude); west above east crosses the antimeridian (longitude/latitude only)' },
        limit: { schema: v.pipe(v.number(), v.integer(), v.minValue(1)), description: `features per page, default ${DEFAULT_LIMIT}, at most ${MAX_LIMIT} (larger values are capped)` },
        offset: { schema: v.pipe(v.number(), v.integer(), v.minValue(0)), description: 'features to skip (default 0)' },
        filter: { schema: v.string(), description: 'a CQL2 expression over the queryables' },
        'filter-lang': { schema: v.picklist(['cql2-text', 'cql2-json']), description: 'default cql2-text' },
        'filter-crs': { schema: v.literal(CRS84), description: 'only CRS84 (longitude/latitude)' },
        crs: { schema: v.string(), description: `the CRS of the geometries answered: ${CRS_DOC}` },
        'bbox-crs': { schema: v.string(), description: `the CRS of bbox, whose numbers follow that CRS's axis order: ${CRS_DOC}` },
      },
      responses: {
        200: { description: 'a GeoJSON FeatureCollection with numberMatched, numberReturned and links', content: GEOJSON },
        400: { description: 'an unknown parameter or property, a malformed bbox/limit/offset, or a filter that cannot be parsed or typed (the problem names it)', content: PROBLEM },
        404: { description: 'no such collection, or a collection without features (a data file of several layers: its layers are collections `{source}:{layer}`)', content: PROBLEM },
        503: { description: 'the database is unreachable or too slow (Retry-After)', content: PROBLEM },
      },
    },
    async (c) => {
      const state = ctx.holder.current;
      const t = featuresOf(c, ctx);
      if (t instanceof Response) return t;
      const url = new URL(c.req.url);
      const q = url.searchParams;
      const { names, geometry } = namesOf(t);
      const equals: [string, string][] = [];
      for (const [k, value] of q) {
        if (ITEMS_PARAMS.has(k)) continue;
        if (!names.has(k) || k === geometry) return invalid(c, k, `unknown parameter "${k}" (items takes ${[...ITEMS_PARAMS].join(', ')} and the queryables: ${[...names].join(', ')})`);
        equals.push([k, value]);
      }
      const limitText = q.get('limit');
      // Any count above the maximum is capped, however many digits it has; the links say the capped value.
      const limit = limitText === null ? DEFAULT_LIMIT : parseDigits(limitText, MAX_LIMIT);
      if (limit === undefined || limit < 1) return invalid(c, 'limit', `limit "${limitText}" is not an integer of 1 or more`);
      const offsetText = q.get('offset');
      const offset = offsetText === null ? 0 : parseDigits(offsetText, Number.MAX_SAFE_INTEGER + 1);
      if (offset === undefined) return invalid(c, 'offset', `offset "${offsetText}" is not a non-negative integer`);
      // Past 2^53 an offset is no longer exact; no table has that many rows, so it is refused rather than rounded.
      if (offset > Number.MAX_SAFE_INTEGER) return invalid(c, 'offset', `offset "${offsetText}" is larger than ${Number.MAX_SAFE_INTEGER}`);
      let bbox: number[] | undefined;
      const bboxText = q.get('bbox');
      if (bboxText !== null) {
        const parts = bboxText.split(',').map((p) => (p.trim() === '' ? NaN : Number(p)));
        if ((parts.length !== 4 && parts.length !== 6) || !parts.every(Number.isFinite)) return invalid(c, 'bbox', `bbox "${bboxText}" is not four (or six) comma-separated numbers`);
        bbox = parts.length === 6 ? [parts[0], parts[1], parts[3], parts[4]] : parts;
      }
      const filterCrs = q.get('filter-crs');
      if (filterCrs !== null && filterCrs !== CRS84) return invalid(c, 'filter-crs', `filter-crs "${filterCrs}" is not offered (only ${CRS84})`);
      const crs = crsParam(c, t, 'crs');
      if (crs instanceof Response) return crs;
      const bboxCrs = crsParam(c, t, 'bbox-crs');
      if (bboxCrs instanceof Response) return bboxCrs;
      if (bbox) {
        bbox = bboxToXy(bbox, bboxCrs);
        if (bbox[1] > bbox[3]) return invalid(c, 'bbox', `bbox "${bboxText}": its lower corner is above its upper one`);
      }
      const lang = q.get('filter-lang') ?? 'cql2-text';
      if (lang !== 'cql2-text' && lang !== 'cql2-json') return invalid(c, 'filter-lang', `filter-lang "${lang}" is not cql2-text or cql2-json`);
      let filter: Expr | undefined;
      const filterText = q.get('filter');
      try {
        if (filterText !== null) filter = lang === 'cql2-json' ? parseCql2Json(filterText) : parseCql2Text(filterText);
      } catch (err) {
        if (err instanceof Cql2Error) return problem(c, 400, 'Invalid filter', err.detail, { parameter: 'filter' });
        throw err;
      }
      let page;
      try {
        const query = { bbox, ...(isLonLat(bboxCrs) ? {} : { bboxCrs }), ...(crs === CRS84_ENTRY ? {} : { crs }), equals, filter, limit, offset };
        page = t.kind === 'table' ? await readItems(t.source.features, query) : await readFileItems(t.source, t.layer, query);
      } catch (err) {
        if (err instanceof Cql2Error) {
          const parameter = err.parameter ?? 'filter';
          return problem(c, 400, parameter === 'filter' ? 'Invalid filter' : 'Invalid parameter', err.detail, { parameter, ...(err.property !== undefined ? { property: err.property } : {}) });
        }
        throw err;
      }
      const h = new Hrefs(urlContext(c, state));
      const path = `/collections/${seg(t.id)}/items`;
      // Paging links repeat the request's own parameters (the key is added by Hrefs).
      const keep: Record<string, string> = {};
      for (const [k, value] of q) if (k !== 'key' && k !== 'offset' && k !== 'f' && !(k in keep)) keep[k] = value;
      const at = (o: number, f: string) => h.ogc(path, { ...keep, limit: String(limit), ...(o > 0 ? { offset: String(o) } : {}), f });
      const links: Link[] = [
        { href: at(offset, 'json'), rel: 'self', type: GEOJSON_TYPE, title: 'this page' },
        { href: at(offset, 'html'), rel: 'alternate', type: HTML_TYPE, title: 'this page as HTML' },
        { href: h.ogc(`/collections/${seg(t.id)}`), rel: 'collection', type: JSON_TYPE, title: 'the collection' },
      ];
      if (offset + page.features.length < page.numberMatched) links.push({ href: at(offset + limit, 'json'), rel: 'next', type: GEOJSON_TYPE, title: 'next page' });
      if (offset > 0) links.push({ href: at(Math.max(0, offset - limit), 'json'), rel: 'prev', type: GEOJSON_TYPE, title: 'previous page' });
      const doc = {
        type: 'FeatureCollection',
        features: page.features,
        numberMatched: page.numberMatched,
        numberReturned: page.features.length,
        timeStamp: new Date().toISOString(),
        links,
      };
      return sendDoc(c, state, `${t.title} features`, doc, GEOJSON_TYPE, { 'Content-Crs': contentCrs(crs) });
    },
    ogcAbsence,
  );

  r.add(
    PUBLIC.ogcItem,
    {
      summary: 'One feature of a PostGIS table (by id_column, else the one-column primary key) or of a layer of a data file (by its integer feature id)',
      tag: 'OGC API',
      params: { ...COLLECTION, featureId: { schema: v.string() } },
      query: { ...DOC_QUERY, crs: { schema: v.string(), description: `the CRS of the geometry answered: ${CRS_DOC}` } },
      responses: {
        200: { description: 'a GeoJSON Feature (its CRS in Content-Crs)', content: GEOJSON },
        400: { description: 'an unknown f, or a crs the collection does not list', content: PROBLEM },
        404: { description: 'no such collection or feature (or the table has no id column)', content: PROBLEM },
        503: { description: 'the database is unreachable or too slow (Retry-After)', content: PROBLEM },
      },
    },
    async (c) => {
      const state = ctx.holder.current;
      const t = featuresOf(c, ctx);
      if (t instanceof Response) return t;
      const fid = param(c, 'fid');
      const crs = crsParam(c, t, 'crs');
      if (crs instanceof Response) return crs;
      const crsHeader = { 'Content-Crs': contentCrs(crs) };
      if (t.kind === 'table' && !t.source.features.idColumn) return problem(c, 404, 'Feature not found', `collection "${t.id}" has no feature ids (set id_column, or give the table a one-column primary key)`);
      const tagged = t.kind === 'table' ? await readItem(t.source.features, fid, crs) : undefined;
      const f = t.kind === 'table' ? tagged?.feature : await readFileItem(t.source, t.layer, fid);
      if (!f) return problem(c, 404, 'Feature not found', `collection "${t.id}" has no feature "${fid}"`);
      const h = new Hrefs(urlContext(c, state));
      const path = `/collections/${seg(t.id)}/items/${seg(fid)}`;
      const links: Link[] = [
        { href: h.ogc(path, { f: 'json' }), rel: 'self', type: GEOJSON_TYPE, title: 'this feature' },
        { href: h.ogc(path, { f: 'html' }), rel: 'alternate', type: HTML_TYPE, title: 'this feature as HTML' },
        { href: h.ogc(`/collections/${seg(t.id)}`), rel: 'collection', type: JSON_TYPE, title: 'the collection' },
      ];
      if (!tagged) return sendDoc(c, state, `${t.title} feature ${fid}`, { ...f, links }, GEOJSON_TYPE, crsHeader);
      // A table's feature carries the strong ETag of its stored row, the one If-Match checks (docs/editing.md). A
      // writable table's features are revalidated on every use (no-cache): an edit must not hide behind max-age.
      const etag = `"${tagged.etag}"`;
      const editable = t.kind === 'table' && t.source.features.edit !== undefined;
      const cacheControl = editable ? 'no-cache' : METADATA_CACHE_CONTROL;
      if (notModified(c, etag)) return c.body(null, 304, { ETag: etag, 'Cache-Control': cacheControl, Vary: 'Accept-Encoding, Accept', ...crsHeader });
      return sendDoc(c, state, `${t.title} feature ${fid}`, { ...f, links }, GEOJSON_TYPE, { ETag: etag, ...crsHeader }, cacheControl);
    },
    ogcAbsence,
  );

  r.add(
    PUBLIC.ogcQueryables,
    {
      summary: 'The properties filters may use (JSON Schema)',
      tag: 'OGC API',
      params: COLLECTION,
      query: { ...DOC_QUERY, ...KEY_QUERY },
      responses: {
        200: { description: 'JSON Schema of the queryables', content: { 'application/schema+json': true, 'text/html': true } },
        400: { description: 'an unknown f', content: PROBLEM },
        404: { description: 'no such collection, or a collection without features', content: PROBLEM },
      },
    },
    (c) => {
      const state = ctx.holder.current;
      const t = featuresOf(c, ctx);
      if (t instanceof Response) return t;
      const h = new Hrefs(urlContext(c, state));
      const schemaId = h.ogc(`/collections/${seg(t.id)}/queryables`);
      const schema = t.kind === 'table' ? queryablesSchema(t.source.features, schemaId, t.title) : fileQueryablesSchema(t.source, t.layer, schemaId, t.title);
      return sendDoc(c, state, `${t.title} queryables`, schema, SCHEMA_TYPE);
    },
    ogcAbsence,
  );
}
