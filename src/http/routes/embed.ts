// The embeddable map page, `/embed/{style}` (spec, Embeddable map page and Events). The route checks the style
// and the query, then writes a page that carries only checked values; the page's behaviour is in
// src/http/pages/client/embed.js. It never needs the renderer: it is mounted whatever server.disable_render says.
import * as v from 'valibot';
import { urlContext, type ServerContext } from '../context.js';
import { pageStyle, styleCenter } from '../pages/catalog.js';
import { EMBED_CONTROLS, parseEmbedQuery } from '../pages/embed-query.js';
import { escapeHtml, styleOrigins, workerRef } from '../pages/html.js';
import { renderPage } from '../pages/shell.js';
import { problem } from '../problem.js';
import { param, type Router } from '../router.js';
import { PUBLIC } from '../../routes/public-routes.js';

const PROBLEM = { 'application/problem+json': true as const };
const NUMBER_TEXT = v.pipe(v.string(), v.description('a finite decimal number'));

export const EMBED_QUERY = {
  center: { schema: v.string(), description: '`lat,lng`; lat in -90..90, lng in -180..180 (default: the style\'s centre)' },
  zoom: { schema: NUMBER_TEXT, description: 'zoom, clamped to 0..22 (default 2)' },
  bearing: { schema: NUMBER_TEXT, description: 'degrees, clamped to -360..360 (default 0)' },
  pitch: { schema: NUMBER_TEXT, description: 'degrees, clamped to 0..85 (default 0)' },
  bounds: { schema: v.string(), description: '`minLng,minLat,maxLng,maxLat`; overrides center and zoom' },
  markers: { schema: v.string(), description: 'pipe-separated `lng,lat` pairs (at most 100)' },
  controls: { schema: v.string(), description: `comma-separated from ${EMBED_CONTROLS.join(', ')}; unknown tokens dropped (default navigation; empty for none)` },
  hash: { schema: v.picklist(['true', 'false', '1', '0', 'yes', 'no', '']), description: 'keep the map position in the URL hash (default false)' },
  interactive: { schema: v.picklist(['true', 'false', '1', '0', 'yes', 'no', '']), description: 'false turns off every user interaction; the message API keeps working (default true)' },
  theme: { schema: v.picklist(['light', 'dark', 'auto']), description: 'page theme; absent or auto: the client\'s colour-scheme preference' },
  key: { schema: v.string(), description: 'API key forwarded into the style URL the page loads' },
};

export function registerEmbedRoutes(r: Router, ctx: ServerContext): void {
  r.add(
    PUBLIC.embed,
    {
      summary: 'Embeddable map page (for an iframe), driven through postMessage',
      tag: 'Pages',
      description:
        'A self-contained HTML page showing a style (or the generated style of a vector source). Parent to page messages: flyTo, fitBounds, setFilter, setLayoutProperty; page to parent: ready, move (about every 200 ms), click. Works with server-side rendering disabled.',
      params: { style: { schema: v.string(), description: 'style id, or the id of a vector source (generated style)' } },
      query: EMBED_QUERY,
      responses: {
        200: { description: 'the page', content: { 'text/html': true }, headers: { 'Content-Security-Policy': 'what the page may load' } },
        400: { description: 'a query parameter is invalid (named in the problem)', content: PROBLEM },
        404: { description: 'no such style or vector source', content: PROBLEM },
      },
    },
    (c) => {
      const state = ctx.holder.current;
      const id = param(c, 'style');
      const u = urlContext(c, state);
      const style = pageStyle(state, id, u);
      if (!style) return problem(c, 404, 'Style not found', `no style and no vector source with id ${JSON.stringify(id)}`);
      const parsed = parseEmbedQuery((name) => c.req.query(name));
      if (!parsed.ok) return problem(c, 400, 'Invalid embed parameter', parsed.detail, { parameter: parsed.parameter });
      const options = { ...parsed.options, center: parsed.options.center ?? styleCenter(style.style) };
      const mode = state.config.server.embed_assets;
      return renderPage(c, {
        title: style.name,
        base: u.base,
        lib: { mode, css: ['maplibre-gl.css'] },
        config: { style: style.url, options, worker: workerRef(mode, u.base) },
        script: 'embed.js',
        bodyClass: 'embed',
        body: `<div id="map" role="region" aria-label="${escapeHtml(`Map: ${style.name}`)}"></div>`,
        theme: options.theme,
        connect: styleOrigins(style.style),
      });
    },
  );
}
