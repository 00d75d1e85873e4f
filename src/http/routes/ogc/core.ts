// OGC API landing page, conformance declaration and tile matrix sets (/ogc, /ogc/conformance, /ogc/tileMatrixSets).
import * as v from 'valibot';
import { conformance, Hrefs, landingPage, mapStyles, OPENAPI_30_TYPE, tileMatrixSets } from '../../../ogc/documents.js';
import { TMS_ID, webMercatorQuad } from '../../../ogc/tms.js';
import { offersFeatures, writableCollections } from '../../../ogc/feature-collections.js';
import type { AppState } from '../../../state/app-state.js';
import { urlContext, type ServerContext } from '../../context.js';
import { problem } from '../../problem.js';
import { openApi30 } from '../../openapi30.js';
import { openApiDocument, type Router } from '../../router.js';
import { PUBLIC } from '../../../routes/public-routes.js';
import { DOC_QUERY, ogcAbsence, PROBLEM, sendDoc } from './negotiate.js';

const DOC = (description: string) => ({ description, content: { 'application/json': true as const, 'text/html': true as const } });

const hasFeatures = (state: AppState) => [...state.sources.values()].some(offersFeatures);
const hasWritable = (state: AppState) => writableCollections(state).length > 0;

export function registerOgcCoreRoutes(r: Router, ctx: ServerContext): void {
  const styled = (state: AppState) => mapStyles(state, ctx.render !== undefined).length > 0;
  r.add(
    PUBLIC.ogcLanding,
    { summary: 'OGC API landing page', tag: 'OGC API', query: DOC_QUERY, responses: { 200: DOC('links to the conformance declaration, the collections and the tile matrix sets'), 400: { description: 'an unknown f', content: PROBLEM } } },
    (c) => {
      const state = ctx.holder.current;
      return sendDoc(c, state, 'tileserver-ts OGC API', landingPage(new Hrefs(urlContext(c, state)), styled(state)));
    },
    ogcAbsence,
  );
  r.add(
    PUBLIC.ogcApi,
    {
      summary: 'OpenAPI 3.0 description of the OGC API routes (the oas30 conformance classes)',
      tag: 'OGC API',
      description: 'Converted from the same route specs as /openapi.json (OpenAPI 3.1), with the /ogc paths only.',
      query: DOC_QUERY,
      responses: { 200: { description: 'the OpenAPI 3.0 document', content: { [OPENAPI_30_TYPE]: true as const, 'text/html': true as const } }, 400: { description: 'an unknown f', content: PROBLEM } },
    },
    (c) => {
      const state = ctx.holder.current;
      const u = urlContext(c, state);
      const doc = openApi30(
        openApiDocument(r.docs(state), ctx.version),
        (p) => p === '/ogc' || p.startsWith('/ogc/'),
        { title: 'tileserver-ts OGC API', description: 'OGC API - Tiles of every source and style, and OGC API - Features of PostGIS tables and data files.' },
        u.base,
      );
      return sendDoc(c, state, 'OpenAPI 3.0 description', doc, OPENAPI_30_TYPE);
    },
    ogcAbsence,
  );
  r.add(
    PUBLIC.ogcConformance,
    { summary: 'OGC API conformance declaration', tag: 'OGC API', query: DOC_QUERY, responses: { 200: DOC('the conformance classes offered'), 400: { description: 'an unknown f', content: PROBLEM } } },
    (c) => {
      const state = ctx.holder.current;
      return sendDoc(c, state, 'Conformance', conformance(hasFeatures(state), styled(state), hasWritable(state)));
    },
    ogcAbsence,
  );
  r.add(
    PUBLIC.ogcTileMatrixSets,
    { summary: 'Tile matrix sets offered (WebMercatorQuad)', tag: 'OGC API', query: DOC_QUERY, responses: { 200: DOC('the list'), 400: { description: 'an unknown f', content: PROBLEM } } },
    (c) => {
      const state = ctx.holder.current;
      return sendDoc(c, state, 'Tile matrix sets', tileMatrixSets(new Hrefs(urlContext(c, state))));
    },
    ogcAbsence,
  );
  r.add(
    PUBLIC.ogcTileMatrixSet,
    {
      summary: 'A tile matrix set definition (OGC Two Dimensional Tile Matrix Set 2.0)',
      tag: 'OGC API',
      params: { tileMatrixSetId: { schema: v.literal(TMS_ID) } },
      query: DOC_QUERY,
      responses: { 200: DOC('the definition'), 400: { description: 'an unknown f', content: PROBLEM }, 404: { description: 'no such tile matrix set', content: PROBLEM } },
    },
    (c) => {
      const state = ctx.holder.current;
      const id = c.req.param('tms');
      if (id !== TMS_ID) return problem(c, 404, 'Tile matrix set not found', `no tile matrix set "${id}" (offered: ${TMS_ID})`);
      return sendDoc(c, state, TMS_ID, webMercatorQuad());
    },
    ogcAbsence,
  );
}
