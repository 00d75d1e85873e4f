// maplibre-gl (the version this service ships, with its bundled MLT decoder) draws the service's MLT the same as
// the MVT it was made from: in headless Chromium, the same style over the same fixture tile, once from the
// `.pbf` URL and once from the `.mlt` URL of an MVT source, gives the same pixels and the same features per source
// layer (geometry type, id, properties as maplibre reads them), on every fixture tile.
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { PNG } from 'pngjs';
import { launchChromium, watch, startPageServer } from './helpers/browser.js';
import { startServer, type TestServer } from './helpers/server.js';
import { buildVectorArchives, omtPairs } from './helpers/vector-archives.js';
import { decodeMvt } from '../src/tiles/mvt-decode.js';


const PAGE = `<!doctype html>
<html><head><meta charset="utf-8"><link rel="icon" href="data:,">
<link rel="stylesheet" href="/lib/maplibre-gl.css">
<style>html, body { margin: 0 } #map { width: 512px; height: 512px }</style></head>
<body><div id="map"></div>
<script type="module">
import { Map } from '/lib/maplibre-gl.mjs';
// Draws the style, waits for idle, and hands back the canvas and the features maplibre decoded per source layer.
window.draw = (style, center, zoom, layers) => new Promise((resolve) => {
  const errors = [];
  const map = new Map({
    container: 'map', style, center, zoom, fadeDuration: 0, attributionControl: false, interactive: false,
    canvasContextAttributes: { preserveDrawingBuffer: true },
  });
  map.on('error', (e) => errors.push(String((e.error && e.error.message) || e.error)));
  map.once('idle', () => {
    const features = {};
    for (const layer of layers) {
      features[layer] = map.querySourceFeatures('tiles', { sourceLayer: layer }).map((f) =>
        JSON.stringify([f.geometry.type, f.id ?? null, Object.keys(f.properties).sort().map((k) => [k, f.properties[k]])]),
      ).sort();
    }
    const png = map.getCanvas().toDataURL('image/png');
    map.remove();
    resolve({ errors, features, png });
  });
});
window.ready = true;
</script></body></html>`;

/** A colour per source layer, so a feature drawn in the wrong layer or missing shows up in the pixels. */
function colour(i: number): string {
  return `hsl(${(i * 137) % 360}, 70%, ${35 + (i % 3) * 15}%)`;
}

/** Fills, lines and circles for every source layer of the tile, each in its own colour; no text (no glyphs). */
function styleFor(tiles: string, encoding: 'mvt' | 'mlt', layers: string[]): unknown {
  return {
    version: 8,
    sources: { tiles: { type: 'vector', tiles: [tiles], maxzoom: 14, encoding } },
    layers: [
      { id: 'bg', type: 'background', paint: { 'background-color': '#ffffff' } },
      ...layers.flatMap((name, i) => [
        { id: `${name}-fill`, type: 'fill', source: 'tiles', 'source-layer': name, filter: ['==', ['geometry-type'], 'Polygon'], paint: { 'fill-color': colour(i), 'fill-opacity': 0.5 } },
        { id: `${name}-line`, type: 'line', source: 'tiles', 'source-layer': name, filter: ['==', ['geometry-type'], 'LineString'], paint: { 'line-color': colour(i + 7), 'line-width': 1.5 } },
        { id: `${name}-point`, type: 'circle', source: 'tiles', 'source-layer': name, filter: ['==', ['geometry-type'], 'Point'], paint: { 'circle-color': colour(i + 3), 'circle-radius': 3 } },
      ]),
    ],
  };
}

interface Drawn {
  errors: string[];
  features: Record<string, string[]>;
  png: string;
}

function decodePng(dataUrl: string): PNG {
  return PNG.sync.read(Buffer.from(dataUrl.split(',')[1], 'base64'));
}

let server: TestServer;
let statics: http.Server;
let browser: Browser;
let page: Page;
let problems: string[];
const requested: string[] = [];

before(async () => {
  const archives = buildVectorArchives();
  server = await startServer({ toml: `[[sources]]\nid = "omt"\ntype = "pmtiles"\npath = "${archives.mvtPmtiles}"\n` });
  statics = await startPageServer(PAGE);
  browser = await launchChromium();
  page = await browser.newPage({ viewport: { width: 512, height: 512 } });
  problems = watch(page);
  page.on('request', (r) => requested.push(r.url()));
  const { port } = statics.address() as AddressInfo;
  await page.goto(`http://127.0.0.1:${port}/`);
  await page.waitForFunction(() => (window as unknown as { ready?: boolean }).ready === true, undefined, { timeout: 30_000 });
});

after(async () => {
  await browser?.close();
  statics?.close();
  await server?.stop();
});

describe('maplibre-gl draws MLT made from MVT the same as the MVT', () => {
  // Every fixture tile, from the world at zoom 0 to the densest tile at zoom 14.
  for (const p of omtPairs()) {
    test(`${p.name} (XYZ ${p.z}/${p.x}/${p.y})`, { timeout: 240_000 }, async () => {
      const layers = decodeMvt(p.mvt).map((l) => l.name);
      const n = 2 ** p.z;
      const lon = ((p.x + 0.5) / n) * 360 - 180;
      const lat = (Math.atan(Math.sinh(Math.PI * (1 - (2 * (p.y + 0.5)) / n))) * 180) / Math.PI;
      const draw = (ext: 'pbf' | 'mlt') =>
        page.evaluate(
          ([style, center, zoom, names]) =>
            (window as unknown as { draw: (...a: unknown[]) => Promise<Drawn> }).draw(style, center, zoom, names),
          [styleFor(`${server.url}/data/omt/{z}/{x}/{y}.${ext}`, ext === 'mlt' ? 'mlt' : 'mvt', layers), [lon, lat], p.z, layers] as const,
        );
      const before = requested.length;
      const mvt = await draw('pbf');
      const mlt = await draw('mlt');
      const tilePath = `/data/omt/${p.z}/${p.x}/${p.y}.mlt`;
      assert.ok(requested.slice(before).some((u) => u.startsWith(server.url) && new URL(u).pathname === tilePath), `maplibre fetched ${tilePath}`);
      assert.deepEqual(problems, [], 'no page error, failed request or console error');
      assert.deepEqual(mvt.errors, [], 'the MVT map reported no error');
      assert.deepEqual(mlt.errors, [], 'the MLT map reported no error');

      let total = 0;
      for (const layer of layers) {
        total += mvt.features[layer].length;
        const got = mlt.features[layer];
        const want = mvt.features[layer];
        const first = want.findIndex((w, i) => got[i] !== w);
        // The first difference, not both lists: a dense layer has thousands of features.
        assert.ok(got.length === want.length && first === -1, `${p.name}/${layer}: ${got.length} features from MLT, ${want.length} from MVT; first difference: ${got[first]} vs ${want[first]}`);
      }
      assert.ok(total > 0, 'the tile has features in view');

      const a = decodePng(mvt.png);
      const b = decodePng(mlt.png);
      assert.equal(a.width, b.width);
      let differing = 0;
      let drawn = 0;
      for (let i = 0; i < a.data.length; i += 4) {
        if (a.data[i] !== 255 || a.data[i + 1] !== 255 || a.data[i + 2] !== 255) drawn++;
        if (a.data[i] !== b.data[i] || a.data[i + 1] !== b.data[i + 1] || a.data[i + 2] !== b.data[i + 2]) differing++;
      }
      assert.ok(drawn > a.data.length / 4 / 100, `the MVT drew something (${drawn} pixels)`);
      assert.equal(differing, 0, `${p.name}: pixels that differ between the MVT and the MLT drawing`);
    });
  }
});
