// Full-page viewer of a style: the map with navigation, scale and fullscreen controls, its position in the URL hash.
import { FullscreenControl, Map, NavigationControl, ScaleControl } from 'maplibre-gl';
import { followTheme, loadCheckedWorker, readConfig } from './common.js';

const config = readConfig();
followTheme();
await loadCheckedWorker(config.worker);

const map = new Map({ container: 'map', style: config.style, center: config.center, zoom: config.zoom, hash: true });
map.addControl(new NavigationControl(), 'top-right');
map.addControl(new FullscreenControl(), 'top-right');
map.addControl(new ScaleControl(), 'bottom-left');
window.viewerMap = map;
