// Home page: a small live map in every card, made when the card first scrolls into view (a browser keeps only
// a limited number of WebGL contexts, so a long list must not open them all at once).
import { Map } from 'maplibre-gl';
import { followTheme, loadCheckedWorker, readConfig } from './common.js';

const config = readConfig();
followTheme();
await loadCheckedWorker(config.worker);

window.previewMaps = [];
const open = (el) => {
  const style = config.previews[Number(el.dataset.preview)];
  if (style === undefined) return;
  const map = new Map({ container: el, style, interactive: false, attributionControl: false });
  map.once('idle', () => el.classList.add('ready'));
  window.previewMaps.push(map);
};

const observer = new IntersectionObserver(
  (entries) => {
    for (const entry of entries) {
      if (!entry.isIntersecting) continue;
      observer.unobserve(entry.target);
      open(entry.target);
    }
  },
  { rootMargin: '200px' },
);
for (const el of document.querySelectorAll('[data-preview]')) observer.observe(el);
