// Inspect view of a source. Vector data: @maplibre/maplibre-gl-inspect draws every source-layer in its own colour
// and shows the properties of the features under the pointer. Raster data: the imagery as one raster layer.
import { Map, NavigationControl, Popup, ScaleControl } from 'maplibre-gl';
import { followTheme, loadCheckedWorker, readConfig } from './common.js';

const config = readConfig();
followTheme();
await loadCheckedWorker(config.worker);

const map = new Map({ container: 'map', style: config.style, center: config.center, zoom: config.zoom, hash: true });
map.addControl(new NavigationControl(), 'top-right');
map.addControl(new ScaleControl(), 'bottom-left');
window.viewerMap = map;

if (config.vector) {
  const { default: MaplibreInspect } = await import('@maplibre/maplibre-gl-inspect');
  const dark = () => document.documentElement.dataset.theme === 'dark';
  const inspect = new MaplibreInspect({
    showInspectMap: true,
    showInspectButton: false,
    backgroundColor: dark() ? '#1b1d21' : '#ffffff',
    popup: new Popup({ closeButton: false, closeOnClick: false, maxWidth: '360px' }),
  });
  map.addControl(inspect);
  window.viewerInspect = inspect;
}
