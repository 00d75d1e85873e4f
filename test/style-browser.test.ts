// The showcase style as a real client sees it: maplibre-gl in headless Chromium loads the served OSM Liberty
// style (with an API key) from the real server, fetches its TileJSON, tiles, sprites and glyphs, and reaches
// `idle` with no failed request; the canvas then shows the OpenMapTiles water in the style's colour.
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, test } from 'node:test';
import type { Browser } from 'playwright-core';
import { launchChromium, startPageServer } from './helpers/browser.js';
import { PNG } from 'pngjs';
import { osmLibertyToml, startServer, type TestServer } from './helpers/server.js';

const KEY = 'k3y with spaces&more';
/** OSM Liberty's `water` fill colour. */
const WATER = [158, 189, 255];

const PAGE = `<!doctype html>
<html><head><meta charset="utf-8"><link rel="icon" href="data:,">
<link rel="stylesheet" href="/lib/maplibre-gl.css">
<style>html, body { margin: 0 } #map { width: 512px; height: 512px }</style></head>
<body><div id="map"></div>
<script type="module">
import { Map } from '/lib/maplibre-gl.mjs';
const style = new URLSearchParams(location.search).get('style');
window.__state = { idle: false, errors: [] };
const map = new Map({
  container: 'map', style, center: [0, 20], zoom: 1, fadeDuration: 0, attributionControl: false,
  canvasContextAttributes: { preserveDrawingBuffer: true },
});
map.on('error', (e) => window.__state.errors.push(String(e.error && e.error.message || e.error)));
map.once('idle', () => { window.__state.idle = true; });
window.__map = map;
</script></body></html>`;

let server: TestServer;
let statics: http.Server;
let browser: Browser;

before(async () => {
  server = await startServer({
    toml: osmLibertyToml(),
  });
  statics = await startPageServer(PAGE);
  browser = await launchChromium();
});

after(async () => {
  await browser?.close();
  statics?.close();
  await server?.stop();
});

test('maplibre-gl loads the served OSM Liberty style, with a key, and reaches idle with no failed request', { timeout: 150_000 }, async () => {
  const page = await browser.newPage({ viewport: { width: 600, height: 600 } });
  const requests: string[] = [];
  const failures: string[] = [];
  page.on('request', (r) => requests.push(r.url()));
  page.on('requestfailed', (r) => failures.push(`${r.url()}: ${r.failure()?.errorText}`));
  page.on('response', (r) => {
    if (r.status() >= 400) failures.push(`${r.url()}: HTTP ${r.status()}`);
  });
  page.on('pageerror', (err) => failures.push(`page error: ${err.message}`));

  const styleUrl = `${server.url}/styles/osm-liberty/style.json?key=${encodeURIComponent(KEY)}`;
  const { port } = statics.address() as AddressInfo;
  await page.goto(`http://127.0.0.1:${port}/?style=${encodeURIComponent(styleUrl)}`);
  // A generous limit for a slow shared machine, not a performance assertion.
  await page.waitForFunction(() => (window as unknown as { __state: { idle: boolean } }).__state.idle, undefined, { timeout: 120_000, polling: 200 });
  const state = await page.evaluate(() => (window as unknown as { __state: { errors: string[] } }).__state);

  assert.deepEqual(failures, [], 'no request failed');
  assert.deepEqual(state.errors, [], 'the map reported no error');

  const ours = requests.filter((u) => u.startsWith(server.url));
  const paths = ours.map((u) => new URL(u).pathname);
  assert.ok(paths.includes('/data/openmaptiles.json'), 'the vector TileJSON was fetched');
  assert.ok(paths.includes('/data/natural_earth.json'), 'the raster TileJSON was fetched');
  assert.ok(paths.some((p) => /^\/data\/openmaptiles\/1\/\d+\/\d+\.pbf$/.test(p)), 'vector tiles were fetched');
  assert.ok(paths.some((p) => /^\/styles\/osm-liberty\/sprite(@2x)?\.json$/.test(p)), 'the sprite metadata was fetched');
  assert.ok(paths.some((p) => /^\/styles\/osm-liberty\/sprite(@2x)?\.png$/.test(p)), 'the sprite sheet was fetched');
  assert.ok(paths.some((p) => p.startsWith('/fonts/Noto%20Sans')), 'glyphs were fetched from this service');
  for (const u of ours) assert.equal(new URL(u).searchParams.get('key'), KEY, `the key travels with ${u}`);

  const dataUrl = await page.evaluate(() => (window as unknown as { __map: { getCanvas(): HTMLCanvasElement } }).__map.getCanvas().toDataURL('image/png'));
  const png = PNG.sync.read(Buffer.from(dataUrl.split(',')[1], 'base64'));
  let water = 0;
  for (let i = 0; i < png.data.length; i += 4) {
    const d = Math.abs(png.data[i] - WATER[0]) + Math.abs(png.data[i + 1] - WATER[1]) + Math.abs(png.data[i + 2] - WATER[2]);
    if (d < 12) water++;
  }
  const share = water / (png.width * png.height);
  assert.ok(share > 0.2, `the oceans are drawn in the style's water colour (${(share * 100).toFixed(1)}% of the pixels)`);
  await page.close();
});
