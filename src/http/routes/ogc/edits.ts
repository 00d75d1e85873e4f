// OGC API - Features Part 4 (draft 20-002r1) on `writable` PostGIS tables (docs/editing.md): POST items (a Feature,
// or a FeatureCollection as one transaction), PUT and PATCH (JSON Merge Patch) and DELETE of one item, OPTIONS of
// both. Each route checks, in this order: the collection takes writes (else 405 with Allow), the credential may
// write it (401/403, src/auth/gate.ts checkWrite), If-Match where the table requires it (428), the media type
// (415), the Content-Crs (400 unless the collection lists it), the size (413), the body (400 naming the member); then one statement (src/ogc/feature-writes.ts), whose
// refusals are 409 (a constraint) or 412 (the ETag moved on). A write's old and new areas are expired through
// the hub before the answer, so a map drawn after the answer shows the edit. No answer here may be stored by a
// shared cache: every one says `Cache-Control: no-store`.
import type { Context } from 'hono';
import * as v from 'valibot';
import type { Config } from '../../../config/schema.js';
import { ALL_ZOOMS } from '../../../expire/area-times.js';
import { deepestOf } from '../../../expire/expire-request.js';
import { expiryHub } from '../../../expire/hub.js';
import { boxKeys } from '../../../expire/notify-payload.js';
import { tableSources } from '../../../expire/tables.js';
import { log } from '../../../log.js';
import { GEOJSON_TYPE, Hrefs, seg } from '../../../ogc/documents.js';
import { checkFeature, checkFeatures, type FeatureInput } from '../../../ogc/feature-input.js';
import { deleteFeature, insertFeatures, isIdValue, replaceFeature, WriteRefusedError, writeSchema, type Box, type WriteOutcome } from '../../../ogc/feature-writes.js';
import { readItem } from '../../../ogc/features.js';
import { collectionCrss, contentCrs, CRS84_ENTRY, crsNamed, type Crs } from '../../../ogc/crs.js';
import { writableCollections, type FeatureCollectionOf } from '../../../ogc/feature-collections.js';
import { applyMergePatch, type Json } from '../../../ogc/merge-patch.js';
import type { FeatureTable } from '../../../sources/postgres/table.js';
import { PUBLIC } from '../../../routes/public-routes.js';
import type { AppState } from '../../../state/app-state.js';
import { refuseWrite, visibleTo } from '../../access-gate.js';
import { readBoundedText } from '../../body.js';
import { urlContext, type ServerContext } from '../../context.js';
import { problem } from '../../problem.js';
import { param, type Router } from '../../router.js';
import { featuresOf } from './features.js';
import { ogcAbsence, PROBLEM } from './negotiate.js';

/** Most features one POST of a FeatureCollection may create (one INSERT). */
export const MAX_FEATURES_PER_WRITE = 10_000;
/** How often a PATCH without If-Match re-reads and retries when another write moved the feature meanwhile. */
const PATCH_ATTEMPTS = 3;

const NO_STORE = { 'Cache-Control': 'no-store' };
const READ_ONLY_ALLOW = 'GET, HEAD, OPTIONS';
const ITEMS_ALLOW = 'GET, HEAD, POST, OPTIONS';
const ITEM_ALLOW = 'GET, HEAD, PUT, PATCH, DELETE, OPTIONS';
const FEATURE_TYPES = ['application/geo+json', 'application/json'];
const PATCH_TYPES = ['application/merge-patch+json', 'application/json', 'application/geo+json'];

/** The write routes are listed in the OpenAPI documents only while some collection is writable. */
const noWritable = (state: AppState) => (writableCollections(state).length ? undefined : 'no [[postgres.tables]] entry is writable');

const refusal = (c: Context, status: number, title: string, detail: string, extra: Record<string, unknown> = {}, headers: Record<string, string> = {}) =>
  problem(c, status, title, detail, extra, { ...NO_STORE, ...headers });

type Table = Extract<FeatureCollectionOf, { kind: 'table' }>;

/** The writable table a request names, or its answer: 404 (no such collection), 405 (one that takes no writes). */
function writableOf(c: Context, ctx: ServerContext): Table | Response {
  const t = featuresOf(c, ctx);
  if (t instanceof Response) return t;
  if (t.kind !== 'table' || !t.source.features.edit) {
    const why = t.kind === 'table' ? 'its [[postgres.tables]] entry is not `writable = true`' : 'data files are never writable';
    return refusal(c, 405, 'Method not allowed', `collection "${t.id}" is read-only (${why}); it allows ${READ_ONLY_ALLOW}`, {}, { Allow: READ_ONLY_ALLOW });
  }
  return t;
}

/** The ETags of an If-Match header (`*`: any current one), undefined without the header. */
function ifMatchOf(c: Context): { any: true } | { tags: string[] } | undefined {
  const h = c.req.header('if-match');
  if (h === undefined) return undefined;
  if (h.trim() === '*') return { any: true };
  // Strong comparison (RFC 9110 13.1.1): a weak tag never matches, so it is left out.
  const tags = h
    .split(',')
    .map((s) => s.trim())
    .filter((s) => /^"[^"]*"$/.test(s))
    .map((s) => s.slice(1, -1));
  return { tags };
}

/** The media type of Content-Type, lower case, without parameters. */
const mediaType = (c: Context) => (c.req.header('content-type') ?? '').split(';')[0].trim().toLowerCase();

/**
 * The JSON body and the CRS of its coordinates, or the 413/415/400 that refuses it. `Content-Crs` names one of
 * the CRSs the collection lists (OGC API - Features Part 2, crs.ts); without it the coordinates are CRS84.
 */
async function jsonBody(c: Context, state: AppState, t: Table, types: string[]): Promise<{ doc: unknown; crs: Crs } | Response> {
  const type = mediaType(c);
  if (!types.includes(type)) return refusal(c, 415, 'Unsupported media type', `send ${types.join(' or ')}, not ${JSON.stringify(type || 'no Content-Type')}`, { member: 'Content-Type' });
  const header = c.req.header('content-crs');
  const { list } = collectionCrss(t);
  const crs = header === undefined ? CRS84_ENTRY : crsNamed(list, header);
  if (crs === undefined) {
    return refusal(c, 400, 'Invalid request', `Content-Crs ${JSON.stringify(header!.slice(0, 200))} is not one of the CRSs collection "${t.id}" lists: ${list.map((x) => `<${x.uri}>`).join(', ')}`, { member: 'Content-Crs' });
  }
  const max = state.config.postgres?.write_max_bytes ?? 4 * 1024 * 1024;
  const declared = Number(c.req.header('content-length'));
  if (Number.isFinite(declared) && declared > max) return refusal(c, 413, 'Body too large', `a feature write is at most ${max} bytes (postgres.write_max_bytes)`, {}, { Connection: 'close' });
  const text = await readBoundedText(c, max);
  if (text === undefined) return refusal(c, 413, 'Body too large', `a feature write is at most ${max} bytes (postgres.write_max_bytes)`, {}, { Connection: 'close' });
  try {
    return { doc: JSON.parse(text), crs };
  } catch {
    return refusal(c, 400, 'Invalid body', 'the body is not JSON', { member: '(body)' });
  }
}

/** Hands the areas a write touched to the expiry hub, and waits until this process has applied them. */
async function expireWritten(config: Config, t: FeatureTable, boxes: readonly Box[]): Promise<void> {
  const sources = tableSources(config, `${t.schema}.${t.table}`);
  if (!sources.length || !boxes.length) return;
  const deepest = deepestOf(config, sources);
  const keys = [...new Set(boxes.flatMap((b) => boxKeys(b, deepest)))].sort((a, b) => a - b);
  await expiryHub().accept({ sources, tiles: Float64Array.from(keys), band: ALL_ZOOMS, input: 'edit', lines: boxes.length });
}

/** Where a feature is, without the request's key (a Location is stored by clients and logs). */
function itemUrl(c: Context, state: AppState, t: Table, id: string): string {
  return `${urlContext(c, state).base}/ogc/collections/${seg(t.id)}/items/${seg(id)}`;
}

/** Whether the client asked for no body (`Prefer: return=minimal`, RFC 7240). */
const minimal = (c: Context) => /(^|[,;\s])return=minimal\b/i.test(c.req.header('prefer') ?? '');

/** The answer to a written feature: 200 with it as stored, in the CRS it was sent in (or 204 with return=minimal), with its ETag. */
async function writtenAnswer(c: Context, state: AppState, t: Table, id: string, etag: string, crs: Crs): Promise<Response> {
  if (minimal(c)) return c.body(null, 204, { ETag: `"${etag}"`, ...NO_STORE, 'Preference-Applied': 'return=minimal' });
  const stored = await readItem(t.source.features, id, crs);
  if (!stored) return c.body(null, 204, { ETag: `"${etag}"`, ...NO_STORE });
  const h = new Hrefs(urlContext(c, state));
  const links = [{ href: h.ogc(`/collections/${seg(t.id)}/items/${seg(id)}`), rel: 'self', type: GEOJSON_TYPE, title: 'this feature' }];
  return c.body(JSON.stringify({ ...stored.feature, links }), 200, { 'Content-Type': `${GEOJSON_TYPE}; charset=utf-8`, 'Content-Crs': contentCrs(crs), ETag: `"${stored.etag}"`, ...NO_STORE });
}

/** The answer to a database refusal of a write (409 constraint, 400 value), else the error again. */
function refusedAnswer(c: Context, err: unknown): Response {
  if (err instanceof WriteRefusedError) return refusal(c, err.status, err.status === 409 ? 'Conflict' : 'Invalid feature', err.detail, err.extra);
  throw err;
}

const logWrite = (who: string, via: string, collection: string, feature: string, action: string) => log.info({ principal: who, via, collection, feature, action }, `ogc: feature ${action}`);

const COLLECTION_PARAM = { collectionId: { schema: v.string(), description: 'a writable collection (a `[[postgres.tables]]` entry with `writable = true`)' } };
const FEATURE_PARAMS = { ...COLLECTION_PARAM, featureId: { schema: v.string() } };
const WRITE_ERRORS = {
  400: { description: 'a body that is no fitting GeoJSON: the problem names the member (`member`) and the property', content: PROBLEM },
  401: { description: 'no valid API key or token', content: PROBLEM },
  403: { description: 'the credential does not allow writing this collection (or the service has no [auth])', content: PROBLEM },
  404: { description: 'no such collection (or feature)', content: PROBLEM },
  405: { description: 'the collection is read-only (Allow lists its methods)', content: PROBLEM },
  409: { description: 'the write breaks a constraint of the table (the problem names it)', content: PROBLEM },
  413: { description: 'the body is larger than postgres.write_max_bytes', content: PROBLEM },
  415: { description: 'a media type other than GeoJSON (or JSON Merge Patch for PATCH)', content: PROBLEM },
} as const;
const CONDITIONAL = {
  412: { description: 'If-Match names an ETag the feature no longer has (another write came first)', content: PROBLEM },
  428: { description: 'the table requires If-Match (require_if_match) and none was given', content: PROBLEM },
} as const;
const STORED = { 200: { description: 'the feature as stored, with its new ETag', content: { 'application/geo+json': true as const }, headers: { ETag: 'the strong ETag of the stored row' } }, 204: { description: 'with `Prefer: return=minimal`: no body, the new ETag' } };

export function registerOgcEditRoutes(r: Router, ctx: ServerContext): void {
  /** The common start of a write: the writable table, the write grant; the principal's name for the log. */
  const begin = (c: Context): { t: Table; who: { name: string; via: string } } | Response => {
    const t = writableOf(c, ctx);
    if (t instanceof Response) return t;
    const granted = refuseWrite(c, ctx.holder.current, t.source.info.id);
    if (granted instanceof Response) return granted;
    return { t, who: { name: granted.principal.name, via: granted.principal.via } };
  };

  /** The If-Match condition of a PUT, PATCH or DELETE, or its 428 where the table requires one. */
  const conditionOf = (c: Context, t: Table): ReturnType<typeof ifMatchOf> | Response => {
    const m = ifMatchOf(c);
    if (m === undefined && t.source.features.edit!.requireIfMatch) {
      return refusal(c, 428, 'Precondition required', `collection "${t.id}" requires If-Match with the feature's ETag (from GET of the item) on every change`, { member: 'If-Match' });
    }
    return m;
  };

  /** The start of a PUT or PATCH: the table and grant, the feature id, the If-Match condition, the JSON body. */
  const beginChange = async (c: Context, types: string[]) => {
    const begun = begin(c);
    if (begun instanceof Response) return begun;
    const cond = conditionOf(c, begun.t);
    if (cond instanceof Response) return cond;
    const body = await jsonBody(c, ctx.holder.current, begun.t, types);
    if (body instanceof Response) return body;
    return { ...begun, fid: param(c, 'fid'), cond, body };
  };

  /** Writes with `outcome` done, or the 404/412 of a write that found no such feature or another version. */
  const settle = async (c: Context, t: Table, fid: string, o: WriteOutcome, action: string, who: { name: string; via: string }, answer: (etag: string) => Promise<Response> | Response): Promise<Response> => {
    if (o.kind === 'missing') return refusal(c, 404, 'Feature not found', `collection "${t.id}" has no feature "${fid}"`);
    if (o.kind === 'stale') return refusal(c, 412, 'Precondition failed', `feature "${fid}" has changed: its ETag is now "${o.etag}" (read it again, then retry)`, { member: 'If-Match' }, { ETag: `"${o.etag}"` });
    logWrite(who.name, who.via, t.id, o.written.id, action);
    await expireWritten(ctx.holder.current.config, t.source.features, o.written.boxes);
    return answer(o.written.etag);
  };

  /** The etag a conditional write must find: undefined for none; `*` is "any", checked as existence. */
  const tagOf = (m: { any: true } | { tags: string[] } | undefined): string[] | undefined => (m === undefined || 'any' in m ? undefined : m.tags);

  r.add(
    PUBLIC.ogcCreate,
    {
      summary: 'Create features in a writable PostGIS table (OGC API - Features Part 4)',
      tag: 'OGC API',
      description: 'A GeoJSON Feature, or a FeatureCollection created as one transaction (all or none). Coordinates in CRS84, or in the CRS a `Content-Crs` header names (one the collection lists). `Prefer: return=minimal` answers without a body. Needs a key or token allowed to write the collection (docs/editing.md).',
      params: COLLECTION_PARAM,
      body: { contentType: 'application/geo+json', schema: v.object({ type: v.picklist(['Feature', 'FeatureCollection']) }) },
      responses: {
        201: { description: 'created: Location and ETag of a single feature, and the feature as stored (a FeatureCollection: the ids, ETags and URLs created)', content: { 'application/geo+json': true, 'application/json': true }, headers: { Location: 'the URL of the new feature', ETag: 'its strong ETag' } },
        ...WRITE_ERRORS,
      },
    },
    async (c) => {
      const state = ctx.holder.current;
      const begun = begin(c);
      if (begun instanceof Response) return begun;
      const { t, who } = begun;
      const body = await jsonBody(c, state, t, FEATURE_TYPES);
      if (body instanceof Response) return body;
      const checked = checkFeatures(body.doc, writeSchema(t.source.features), MAX_FEATURES_PER_WRITE, body.crs);
      if (!checked.ok) return refusal(c, 400, 'Invalid feature', `${checked.member}: ${checked.detail}`, { member: checked.member });
      let created;
      try {
        created = await insertFeatures(t.source.features, checked.value.features, body.crs.srid);
      } catch (err) {
        return refusedAnswer(c, err);
      }
      for (const w of created) logWrite(who.name, who.via, t.id, w.id, 'created');
      await expireWritten(state.config, t.source.features, created.flatMap((w) => w.boxes));
      if (checked.value.collection) {
        const features = created.map((w) => ({ id: w.id, etag: `"${w.etag}"`, href: itemUrl(c, state, t, w.id) }));
        return c.body(JSON.stringify({ numberCreated: features.length, features }), 201, { 'Content-Type': 'application/json; charset=utf-8', ...NO_STORE });
      }
      const w = created[0];
      const headers = { Location: itemUrl(c, state, t, w.id), ETag: `"${w.etag}"`, ...NO_STORE };
      if (minimal(c)) return c.body(null, 201, { ...headers, 'Preference-Applied': 'return=minimal' });
      const stored = await readItem(t.source.features, w.id, body.crs);
      if (!stored) return c.body(null, 201, headers);
      return c.body(JSON.stringify(stored.feature), 201, { ...headers, 'Content-Type': `${GEOJSON_TYPE}; charset=utf-8`, 'Content-Crs': contentCrs(body.crs) });
    },
    ogcAbsence,
    noWritable,
  );

  r.add(
    PUBLIC.ogcReplace,
    {
      summary: 'Replace a feature of a writable PostGIS table (OGC API - Features Part 4)',
      tag: 'OGC API',
      description: 'The body is the whole feature: properties it leaves out become null. Coordinates in CRS84, or in the CRS a `Content-Crs` header names (one the collection lists). With If-Match, only while the feature still has that ETag.',
      params: FEATURE_PARAMS,
      body: { contentType: 'application/geo+json', schema: v.object({ type: v.literal('Feature') }) },
      responses: { ...STORED, ...WRITE_ERRORS, ...CONDITIONAL },
    },
    async (c) => {
      const state = ctx.holder.current;
      const begun = await beginChange(c, FEATURE_TYPES);
      if (begun instanceof Response) return begun;
      const { t, who, fid, cond, body } = begun;
      const checked = checkFeature(body.doc, writeSchema(t.source.features), '', body.crs);
      if (!checked.ok) return refusal(c, 400, 'Invalid feature', `${checked.member}: ${checked.detail}`, { member: checked.member });
      if (checked.value.id !== undefined && checked.value.id !== fid) return refusal(c, 400, 'Invalid feature', `id: the body's id "${checked.value.id}" is not the feature "${fid}" of the URL (an id cannot be changed)`, { member: 'id' });
      if (!(await isIdValue(t.source.features, fid))) return refusal(c, 404, 'Feature not found', `collection "${t.id}" has no feature "${fid}"`);
      let o: WriteOutcome;
      try {
        o = await replaceFeature(t.source.features, fid, checked.value, tagOf(cond), body.crs.srid);
      } catch (err) {
        return refusedAnswer(c, err);
      }
      return settle(c, t, fid, o, 'replaced', who, (etag) => writtenAnswer(c, state, t, fid, etag, body.crs));
    },
    ogcAbsence,
    noWritable,
  );

  r.add(
    PUBLIC.ogcUpdate,
    {
      summary: 'Update a feature of a writable PostGIS table with a JSON Merge Patch (RFC 7396)',
      tag: 'OGC API',
      description: 'Members set to null are removed (a property: set to null); objects merge member by member; anything else replaces. A `Content-Crs` header (one of the CRSs the collection lists) says the CRS of the patch\'s coordinates; the feature is merged in it. With If-Match, only while the feature still has that ETag.',
      params: FEATURE_PARAMS,
      body: { contentType: 'application/merge-patch+json', schema: v.unknown() },
      responses: { ...STORED, ...WRITE_ERRORS, ...CONDITIONAL },
    },
    async (c) => {
      const state = ctx.holder.current;
      const begun = await beginChange(c, PATCH_TYPES);
      if (begun instanceof Response) return begun;
      const { t, who, fid, cond, body } = begun;
      const patch = body.doc;
      if (patch === null || typeof patch !== 'object' || Array.isArray(patch)) return refusal(c, 400, 'Invalid patch', '(body): a JSON Merge Patch of a feature is an object', { member: '(body)' });
      const given = tagOf(cond);
      // The patch is applied to the feature as read; the write then holds only while the row is still the one
      // read (its ETag), so a change made meanwhile is never overwritten with stale members. Without If-Match, a
      // write that lost to another is read and patched again.
      for (let attempt = 1; ; attempt++) {
        // Read in the patch's CRS, so that a geometry merged member by member stays in one CRS.
        const read = await readItem(t.source.features, fid, body.crs);
        if (!read) return refusal(c, 404, 'Feature not found', `collection "${t.id}" has no feature "${fid}"`);
        if (given !== undefined && !given.includes(read.etag)) return settle(c, t, fid, { kind: 'stale', etag: read.etag }, 'updated', who, () => c.body(null, 204));
        const current = JSON.parse(JSON.stringify(read.feature)) as Json;
        const patched = applyMergePatch(current, patch as Json) as Record<string, unknown>;
        if (patched.id !== undefined && String(patched.id) !== String(read.feature.id)) return refusal(c, 400, 'Invalid patch', `id: a feature's id cannot be changed (it is "${read.feature.id}")`, { member: 'id' });
        const checked = checkFeature({ ...patched, id: undefined }, writeSchema(t.source.features), '', body.crs);
        if (!checked.ok) return refusal(c, 400, 'Invalid patch', `${checked.member}: ${checked.detail} (after the patch)`, { member: checked.member });
        if (checked.value.id !== undefined && checked.value.id !== fid) return refusal(c, 400, 'Invalid patch', `properties: the id column cannot be changed (the feature is "${fid}")`, { member: 'properties' });
        let o: WriteOutcome;
        try {
          o = await replaceFeature(t.source.features, fid, checked.value as FeatureInput, [read.etag], body.crs.srid);
        } catch (err) {
          return refusedAnswer(c, err);
        }
        if (o.kind === 'stale' && given === undefined && attempt < PATCH_ATTEMPTS) continue;
        return settle(c, t, fid, o, 'updated', who, (etag) => writtenAnswer(c, state, t, fid, etag, body.crs));
      }
    },
    ogcAbsence,
    noWritable,
  );

  r.add(
    PUBLIC.ogcDelete,
    {
      summary: 'Delete a feature of a writable PostGIS table (OGC API - Features Part 4)',
      tag: 'OGC API',
      description: 'With If-Match, only while the feature still has that ETag.',
      params: FEATURE_PARAMS,
      responses: { 204: { description: 'deleted' }, ...WRITE_ERRORS, ...CONDITIONAL },
    },
    async (c) => {
      const begun = begin(c);
      if (begun instanceof Response) return begun;
      const { t, who } = begun;
      const fid = param(c, 'fid');
      const cond = conditionOf(c, t);
      if (cond instanceof Response) return cond;
      if (!(await isIdValue(t.source.features, fid))) return refusal(c, 404, 'Feature not found', `collection "${t.id}" has no feature "${fid}"`);
      let o: WriteOutcome;
      try {
        o = await deleteFeature(t.source.features, fid, tagOf(cond));
      } catch (err) {
        return refusedAnswer(c, err);
      }
      return settle(c, t, fid, o, 'deleted', who, () => c.body(null, 204, NO_STORE));
    },
    ogcAbsence,
    noWritable,
  );

  /** OPTIONS: the methods of a collection's items (or one item); nothing of a collection the request cannot read. */
  const options = (writable: string, readOnly: string) => (c: Context) => {
    const state = ctx.holder.current;
    const t = featuresOf(c, ctx);
    if (t instanceof Response) return t;
    if (!visibleTo(c, state)('source', t.source.info.id)) return problem(c, 404, 'Collection not found', `no collection "${t.id}"`);
    const allow = t.kind === 'table' && t.source.features.edit ? writable : readOnly;
    return c.body(null, 204, { Allow: allow, ...NO_STORE });
  };
  const OPTIONS_DOC = (what: string) => ({
    summary: `The methods ${what} takes (Allow)`,
    tag: 'OGC API',
    params: what === 'one feature' ? FEATURE_PARAMS : COLLECTION_PARAM,
    responses: { 204: { description: 'Allow lists the methods: writes only where the collection is writable', headers: { Allow: 'the methods' } }, 404: { description: 'no such collection', content: PROBLEM } },
  });
  r.add(PUBLIC.ogcItemsOptions, OPTIONS_DOC('the items of a collection'), options(ITEMS_ALLOW, READ_ONLY_ALLOW), ogcAbsence, noWritable);
  r.add(PUBLIC.ogcItemOptions, OPTIONS_DOC('one feature'), options(ITEM_ALLOW, READ_ONLY_ALLOW), ogcAbsence, noWritable);
}
