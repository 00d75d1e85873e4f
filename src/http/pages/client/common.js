// Shared by the pages' scripts (served as they are, no build step): the page's options, the theme, and the map
// library's worker loaded with its integrity checked.
import { setWorkerUrl } from 'maplibre-gl';

/** The options the server wrote into the page's JSON block (never executed, only parsed). */
export function readConfig() {
  const el = document.getElementById('page-config');
  return JSON.parse(el ? el.textContent : '{}');
}

/**
 * Sets `data-theme` on <html>: the fixed theme when the page has one, else the client's colour-scheme
 * preference, followed live. No server round trip.
 */
export function followTheme(fixed) {
  const root = document.documentElement;
  if (fixed === 'light' || fixed === 'dark') {
    root.dataset.theme = fixed;
    return;
  }
  const query = window.matchMedia('(prefers-color-scheme: dark)');
  const apply = () => {
    root.dataset.theme = query.matches ? 'dark' : 'light';
  };
  apply();
  query.addEventListener('change', apply);
}

/**
 * maplibre-gl starts its worker from a file beside its own module, which the import map's integrity does not
 * cover. The page fetches that file itself with the integrity the server computed and hands the library a blob:
 * URL of the checked bytes (the Content-Security-Policy allows workers from blob: only).
 */
export async function loadCheckedWorker(worker) {
  const res = await fetch(worker.url, { integrity: worker.integrity, credentials: 'omit' });
  if (!res.ok) throw new Error(`map library worker: HTTP ${res.status}`);
  const blob = new Blob([await res.text()], { type: 'text/javascript' });
  setWorkerUrl(URL.createObjectURL(blob));
}

export const isFiniteNumber = (n) => typeof n === 'number' && Number.isFinite(n);
export const clamp = (n, lo, hi) => Math.min(hi, Math.max(lo, n));
