// The home page (`/`): every style and every data source with a live preview and the links a user of the service
// wants (viewer, TileJSON, style.json, WMTS, embed page, tile and static-image examples), and the API reference.
// Markup only; the previews are drawn by client/home.js from the styles in the page's JSON block.
import type { StyleSpecification } from '@maplibre/maplibre-gl-style-spec';
import type { UrlContext } from '../../sources/tilejson.js';
import { withKey } from '../../sources/tilejson.js';
import type { AppState } from '../../state/app-state.js';
import { isVector } from '../../tiles/format.js';
import { pageStyle, sourceStyle, styleCenter } from './catalog.js';
import { escapeHtml } from './html.js';

export interface HomePage {
  body: string;
  /** One style (URL or object) per preview, in the order of the `data-preview` indexes. */
  previews: (string | StyleSpecification)[];
  /** Styles whose origins the page's policy must allow. */
  styles: StyleSpecification[];
}

/** The tile x, y at zoom z that holds a lng/lat (Web Mercator, XYZ). */
export function tileAt(lng: number, lat: number, z: number): [number, number] {
  const n = 2 ** z;
  const clampedLat = Math.max(-85.05112878, Math.min(85.05112878, lat));
  const x = Math.min(n - 1, Math.max(0, Math.floor(((lng + 180) / 360) * n)));
  const r = (clampedLat * Math.PI) / 180;
  const y = Math.min(n - 1, Math.max(0, Math.floor(((1 - Math.log(Math.tan(r) + 1 / Math.cos(r)) / Math.PI) / 2) * n)));
  return [x, y];
}

const enc = (id: string) => encodeURIComponent(id);
const link = (href: string, text: string, title?: string) =>
  `<a href="${escapeHtml(href)}"${title ? ` title="${escapeHtml(title)}"` : ''}>${escapeHtml(text)}</a>`;
const round = (n: number) => Math.round(n * 1e4) / 1e4;

function card(index: number, viewer: string, name: string, id: string, facts: string, links: string[]): string {
  return `<li class="card">
<a class="preview" href="${escapeHtml(viewer)}" aria-label="${escapeHtml(`Open ${name}`)}"><div class="map" data-preview="${index}"></div></a>
<div class="meta">
<h3>${link(viewer, name)}</h3>
<p class="facts"><code>${escapeHtml(id)}</code>${facts ? ` · ${escapeHtml(facts)}` : ''}</p>
<p class="links">${links.join(' ')}</p>
</div>
</li>`;
}

/**
 * `rendering`: the raster tile, static image, raster TileJSON and WMTS routes are mounted. `see`: whether
 * the page may show a style or source to this request (src/http/access-gate.ts `visibleTo`).
 */
export function homePage(state: AppState, u: UrlContext, rendering: boolean, see: (kind: 'source' | 'style', id: string) => boolean = () => true): HomePage {
  const previews: (string | StyleSpecification)[] = [];
  const styles: StyleSpecification[] = [];
  const k = (path: string) => withKey(path, u.key);

  const styleCards: string[] = [];
  for (const id of state.styles.keys()) {
    if (!see('style', id)) continue;
    const s = pageStyle(state, id, u);
    if (!s) continue;
    const [lng, lat] = styleCenter(s.style);
    const e = enc(id);
    const links = [
      link(`${u.base}/styles/${e}/`, 'viewer'),
      link(k(`${u.base}/styles/${e}/style.json`), 'style.json'),
      link(`${u.base}/embed/${e}`, 'embed'),
      ...(rendering
        ? [
            link(k(`${u.base}/styles/${e}.json`), 'TileJSON', 'raster TileJSON'),
            link(k(`${u.base}/styles/${e}/wmts.xml`), 'WMTS'),
            link(`${u.base}/styles/${e}/0/0/0.png`, 'raster tile'),
            link(`${u.base}/styles/${e}/static/${round(lng)},${round(lat)},1/600x400.png`, 'static image'),
          ]
        : []),
    ];
    styleCards.push(card(previews.length, `${u.base}/styles/${e}/`, s.name, id, '', links));
    previews.push(s.url);
    styles.push(s.style);
  }

  const dataCards: string[] = [];
  for (const [id, source] of state.sources) {
    if (!see('source', id)) continue;
    const { info } = source;
    const e = enc(id);
    const vector = isVector(info.format);
    const [x, y] = tileAt(info.center[0], info.center[1], info.minzoom);
    const ext = info.format === 'mlt' ? 'mlt' : info.format;
    // A configured style of the same id shadows the generated one: its links would lead to that style instead.
    const generated = vector && !state.styles.has(id);
    const links = [
      link(`${u.base}/data/${e}/`, vector ? 'inspect' : 'viewer'),
      link(k(`${u.base}/data/${e}.json`), 'TileJSON'),
      link(k(`${u.base}/data/${e}/${info.minzoom}/${x}/${y}.${ext}`), 'tile'),
      ...(vector ? [link(`${u.base}/data/${e}/${info.minzoom}/${x}/${y}.geojson`, 'tile as GeoJSON')] : []),
      ...(generated ? [link(k(`${u.base}/styles/${e}/style.json`), 'generated style.json'), link(`${u.base}/embed/${e}`, 'embed')] : []),
      // A generated style renders like a configured one: its raster TileJSON and WMTS document are as useful.
      ...(generated && rendering ? [link(k(`${u.base}/styles/${e}.json`), 'raster TileJSON', 'raster TileJSON of the generated style'), link(k(`${u.base}/styles/${e}/wmts.xml`), 'WMTS')] : []),
      // An elevation source's products (docs/terrain.md).
      ...(info.dem
        ? [
            link(k(`${u.base}/data/${e}/hillshade.json`), 'hillshade TileJSON'),
            link(k(`${u.base}/data/${e}/contours.json`), 'contours TileJSON'),
            link(k(`${u.base}/data/${e}/hillshade/wmts.xml`), 'hillshade WMTS'),
            link(`${u.base}/api/elevation/${e}?lon=${info.center[0]}&lat=${info.center[1]}`, 'elevation at the centre'),
          ]
        : []),
    ];
    const facts = `${info.format}, zoom ${info.minzoom}–${info.maxzoom}${info.vectorLayers ? `, ${info.vectorLayers.length} layers` : ''}`;
    const style = sourceStyle(state, source, u);
    dataCards.push(card(previews.length, `${u.base}/data/${e}/`, info.name, id, facts, links));
    previews.push(style);
    styles.push(style);
  }

  const section = (title: string, cards: string[], empty: string) =>
    `<section><h2>${title}</h2>${cards.length ? `<ul class="cards">\n${cards.join('\n')}\n</ul>` : `<p class="empty">${empty}</p>`}</section>`;
  const body = `<header class="site">
<h1>tileserver-ts</h1>
<nav>${[link(`${u.base}/_openapi`, 'API reference'), link(`${u.base}/openapi.json`, 'OpenAPI document'), link(k(`${u.base}/styles.json`), 'styles.json'), link(k(`${u.base}/data.json`), 'data.json'), link(`${u.base}/ping`, 'ping')].join(' ')}</nav>
</header>
<main>
${section('Styles', styleCards, 'No styles are configured.')}
${section('Data', dataCards, 'No sources are configured.')}
</main>`;
  return { body, previews, styles };
}
