// The embeddable map page (/embed/{style}): the map as the query asked for it, and the postMessage API of the
// spec's Events tables. Messages from anyone but the parent window, or of an unexpected shape, are ignored.
import { FullscreenControl, Map, Marker, NavigationControl, ScaleControl } from 'maplibre-gl';
import { clamp, followTheme, isFiniteNumber, loadCheckedWorker, readConfig } from './common.js';

const config = readConfig();
const o = config.options;
followTheme(o.theme);
await loadCheckedWorker(config.worker);

const framed = window.parent !== window;
const post = (message) => {
  if (framed) window.parent.postMessage(message, '*');
};

const interactive = o.interactive;
const map = new Map({
  container: 'map',
  style: config.style,
  center: o.center,
  zoom: o.zoom,
  bearing: o.bearing,
  pitch: o.pitch,
  ...(o.bounds ? { bounds: o.bounds } : {}),
  hash: o.hash,
  // interactive=false turns off each listed interaction; the map still answers clicks and messages.
  dragPan: interactive,
  scrollZoom: interactive,
  doubleClickZoom: interactive,
  keyboard: interactive,
  touchZoomRotate: interactive,
  touchPitch: interactive,
  boxZoom: interactive,
  dragRotate: interactive,
  attributionControl: { compact: true },
});
window.embedMap = map;

const CONTROLS = {
  navigation: () => new NavigationControl({ showCompass: interactive }),
  scale: () => new ScaleControl(),
  fullscreen: () => new FullscreenControl(),
};
for (const name of o.controls) map.addControl(CONTROLS[name](), name === 'scale' ? 'bottom-left' : 'top-right');
for (const lngLat of o.markers) new Marker().setLngLat(lngLat).addTo(map);

map.on('load', () => post({ type: 'ready', style: config.style }));

// move: at most one message per 200 ms, and always one for the position the map comes to rest at.
const MOVE_INTERVAL_MS = 200;
let lastMove = -Infinity;
let pending;
const sendMove = () => {
  pending = undefined;
  lastMove = performance.now();
  const c = map.getCenter();
  post({ type: 'move', lng: c.lng, lat: c.lat, zoom: map.getZoom(), bearing: map.getBearing(), pitch: map.getPitch() });
};
map.on('move', () => {
  const wait = MOVE_INTERVAL_MS - (performance.now() - lastMove);
  if (wait > 0) {
    pending ??= setTimeout(sendMove, wait);
    return;
  }
  // A pending timer is overdue when the page is too busy to run it on time (a loaded machine: seen on Debian 13's
  // test run, 9 messages in 871 ms); sent now, it must not also send its own message right after this one.
  clearTimeout(pending);
  sendMove();
});

map.on('click', (e) => {
  const ids = [...new Set(map.queryRenderedFeatures(e.point).map((f) => f.layer.id))];
  post({ type: 'click', lng: e.lngLat.lng, lat: e.lngLat.lat, features: ids });
});

const isLng = (n) => isFiniteNumber(n) && n >= -180 && n <= 180;
const isLat = (n) => isFiniteNumber(n) && n >= -90 && n <= 90;
const isPair = (p) => Array.isArray(p) && p.length === 2 && isLng(p[0]) && isLat(p[1]);
const knownLayer = (id) => typeof id === 'string' && map.getLayer(id) !== undefined;

const HANDLERS = {
  flyTo(m) {
    if (!isLng(m.lng) || !isLat(m.lat)) return;
    if (m.zoom !== undefined && !isFiniteNumber(m.zoom)) return;
    map.flyTo({ center: [m.lng, m.lat], ...(m.zoom !== undefined ? { zoom: clamp(m.zoom, 0, 22) } : {}) });
  },
  fitBounds(m) {
    if (!Array.isArray(m.bounds) || m.bounds.length !== 2 || !isPair(m.bounds[0]) || !isPair(m.bounds[1])) return;
    if (m.padding !== undefined && (!isFiniteNumber(m.padding) || m.padding < 0)) return;
    map.fitBounds(m.bounds, { padding: m.padding ?? 0 });
  },
  setFilter(m) {
    if (!knownLayer(m.layerId)) return;
    if (m.filter !== null && m.filter !== undefined && !Array.isArray(m.filter)) return;
    map.setFilter(m.layerId, m.filter ?? null);
  },
  setLayoutProperty(m) {
    if (!knownLayer(m.layerId) || typeof m.property !== 'string') return;
    map.setLayoutProperty(m.layerId, m.property, m.value);
  },
};

window.addEventListener('message', (event) => {
  if (!framed || event.source !== window.parent) return;
  const m = event.data;
  if (m === null || typeof m !== 'object' || typeof m.type !== 'string' || !Object.hasOwn(HANDLERS, m.type)) return;
  try {
    HANDLERS[m.type](m);
  } catch (err) {
    // A value the map refuses (a bad filter, an unknown property) must not break the page.
    console.warn(`embed: ${m.type} ignored: ${err && err.message}`);
  }
});
