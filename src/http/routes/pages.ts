// The pages a person opens in a browser: the home page (`/`), the full-page viewer of a style
// (`/styles/{id}/`), the inspect view of a source (`/data/{id}/`), and the static files they load
// (/assets/pages/… from this project, /assets/{version}/… the map library from its npm package). The markup
// comes from src/http/pages/; the behaviour from the scripts in src/http/pages/client/.
import * as v from 'valibot';
import type { Context } from 'hono';
import { isVector } from '../../tiles/format.js';
import type { AppState } from '../../state/app-state.js';
import { urlContext, type ServerContext } from '../context.js';
import { visibleTo } from '../access-gate.js';
import { pageStyle, sourceStyle, styleCenter } from '../pages/catalog.js';
import { escapeHtml, styleOrigins, workerRef } from '../pages/html.js';
import { homePage } from '../pages/home-page.js';
import { ASSET_NAMES, asset } from '../pages/library.js';
import { PAGE_FILES, pageFile } from '../pages/page-files.js';
import { renderPage } from '../pages/shell.js';
import { problem } from '../problem.js';
import { param, type Router } from '../router.js';
import { PUBLIC } from '../../routes/public-routes.js';
import { renderAbsence } from './render.js';

const HTML = { 'text/html': true as const };
const PROBLEM = { 'application/problem+json': true as const };
const IMMUTABLE = 'public, max-age=31536000, immutable';

/** The raster tile, static image, raster TileJSON and WMTS routes answer in this process under this state. */
const rendering = (ctx: ServerContext, state: AppState) => ctx.render !== undefined && renderAbsence(state) === undefined;

function viewerBody(base: string, title: string, links: [string, string][]): string {
  const items = links.map(([href, text]) => `<a href="${escapeHtml(href)}">${escapeHtml(text)}</a>`).join(' ');
  return `<div id="map" class="full" role="region" aria-label="${escapeHtml(`Map: ${title}`)}"></div>
<header class="bar"><a class="home" href="${escapeHtml(`${base}/`)}">tileserver-ts</a> <strong>${escapeHtml(title)}</strong> <span class="links">${items}</span></header>`;
}

export function registerPageRoutes(r: Router, ctx: ServerContext): void {
  r.add(
    PUBLIC.home,
    {
      summary: 'Home page: every style and data source with a live preview and its links',
      tag: 'Pages',
      responses: { 200: { description: 'HTML page', content: HTML } },
    },
    (c) => {
      const state = ctx.holder.current;
      const u = urlContext(c, state);
      const mode = state.config.server.embed_assets;
      const home = homePage(state, u, rendering(ctx, state), visibleTo(c, state));
      return renderPage(c, {
        title: 'tileserver-ts',
        base: u.base,
        lib: { mode, css: ['maplibre-gl.css'] },
        config: { previews: home.previews, worker: workerRef(mode, u.base) },
        script: 'home.js',
        bodyClass: 'home',
        body: home.body,
        connect: home.styles.flatMap((s) => styleOrigins(s)),
      });
    },
  );

  r.add(
    PUBLIC.stylePage,
    {
      summary: 'Full-page viewer of a style (or of the generated style of a vector source)',
      tag: 'Pages',
      params: { style: { schema: v.string(), description: 'style id' } },
      responses: { 200: { description: 'HTML page', content: HTML }, 404: { description: 'no such style', content: PROBLEM } },
    },
    (c) => {
      const state = ctx.holder.current;
      const id = param(c, 'style');
      const u = urlContext(c, state);
      const s = pageStyle(state, id, u);
      if (!s) return problem(c, 404, 'Style not found', `no style and no vector source with id ${JSON.stringify(id)}`);
      const mode = state.config.server.embed_assets;
      const e = encodeURIComponent(id);
      const links: [string, string][] = [
        [s.url, 'style.json'],
        [`${u.base}/embed/${e}`, 'embed'],
        ...(rendering(ctx, state) ? ([[`${u.base}/styles/${e}.json`, 'TileJSON'], [`${u.base}/styles/${e}/wmts.xml`, 'WMTS']] as [string, string][]) : []),
      ];
      return renderPage(c, {
        title: `${s.name} · tileserver-ts`,
        base: u.base,
        lib: { mode, css: ['maplibre-gl.css'] },
        config: { style: s.url, center: styleCenter(s.style), zoom: s.style.zoom ?? 1, worker: workerRef(mode, u.base) },
        script: 'viewer.js',
        bodyClass: 'viewer',
        body: viewerBody(u.base, s.name, links),
        connect: styleOrigins(s.style),
      });
    },
  );

  r.add(
    PUBLIC.dataPage,
    {
      summary: 'Inspect view of a source: vector layers coloured with feature properties on hover, or the raster imagery',
      tag: 'Pages',
      params: { source: { schema: v.string(), description: 'source id' } },
      responses: { 200: { description: 'HTML page', content: HTML }, 404: { description: 'no such source', content: PROBLEM } },
    },
    (c) => {
      const state = ctx.holder.current;
      const id = param(c, 'source');
      const source = state.sources.get(id) ?? state.composites.get(id);
      if (!source) return problem(c, 404, 'Source not found', `no source with id ${JSON.stringify(id)}`);
      const u = urlContext(c, state);
      const mode = state.config.server.embed_assets;
      const vector = isVector(source.info.format);
      const style = sourceStyle(state, source, u);
      const e = encodeURIComponent(id);
      return renderPage(c, {
        title: `${source.info.name} · tileserver-ts`,
        base: u.base,
        lib: {
          mode,
          css: vector ? ['maplibre-gl.css', 'maplibre-gl-inspect.css'] : ['maplibre-gl.css'],
          ...(vector ? { extraModules: { '@maplibre/maplibre-gl-inspect': 'maplibre-gl-inspect.mjs' } } : {}),
        },
        config: { vector, style, center: styleCenter(style), zoom: source.info.center[2], worker: workerRef(mode, u.base) },
        script: 'data.js',
        bodyClass: 'viewer',
        body: viewerBody(u.base, source.info.name, [[`${u.base}/data/${e}.json`, 'TileJSON']]),
        connect: styleOrigins(style),
      });
    },
  );

  r.add(
    PUBLIC.pageAsset,
    {
      summary: 'Scripts and style sheet of the pages',
      tag: 'Pages',
      params: { file: { schema: v.picklist(PAGE_FILES) } },
      responses: { 200: { description: 'the file', content: { 'text/javascript': true, 'text/css': true } }, 404: { description: 'no such file', content: PROBLEM } },
    },
    (c) => {
      const name = param(c, 'file');
      const f = pageFile(name);
      if (!f) return problem(c, 404, 'Not found', `no page file ${JSON.stringify(name)}`);
      // Short-lived: these files change with the server, and their names do not.
      return c.body(f.bytes as Uint8Array<ArrayBuffer>, 200, { 'Content-Type': f.type, 'Cache-Control': 'public, max-age=300', 'X-Content-Type-Options': 'nosniff' });
    },
  );

  r.add(
    PUBLIC.asset,
    {
      summary: 'The map library (maplibre-gl, maplibre-gl-inspect) from its npm package, for server.embed_assets = "local"',
      tag: 'Pages',
      params: {
        version: { schema: v.string(), description: 'the installed version of the file\'s package' },
        file: { schema: v.picklist(ASSET_NAMES) },
      },
      responses: { 200: { description: 'the file', content: { 'text/javascript': true, 'text/css': true } }, 404: { description: 'no such file or version', content: PROBLEM } },
    },
    (c: Context) => {
      const name = param(c, 'file');
      const version = param(c, 'version');
      const a = asset(name);
      if (!a || a.version !== version) return problem(c, 404, 'Not found', `no asset ${JSON.stringify(`${version}/${name}`)}`);
      return c.body(a.bytes as Uint8Array<ArrayBuffer>, 200, { 'Content-Type': a.type, 'Cache-Control': IMMUTABLE, 'X-Content-Type-Options': 'nosniff' });
    },
  );
}
