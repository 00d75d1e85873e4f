// The Chromium page's sizing of MapLibre's cache of source tiles out of view (chromium-page.ts, TILE_CACHE_SIZING),
// in a real browser with maplibre-gl from the npm package: frames up to a person's largest (2112 px) keep
// MapLibre's own sizing (five zoom levels' worth of the tiles in view), a bulk 8x8 frame (4160 px) one level's,
// which bounds a seeding page's memory; a frame drawn small again gets the five levels back.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { MAPLIBRE_ORIGIN, openMapLibrePage } from './helpers/browser.js';
import { TILE_CACHE_SIZING } from '../src/render/backends/chromium-page.js';

// One vector source of 512 px tiles (its tiles are not found: only the cache's size is looked at).
const STYLE = {
  version: 8,
  sources: { v: { type: 'vector', tiles: [`${MAPLIBRE_ORIGIN}/t/{z}/{x}/{y}.pbf`], tileSize: 512, maxzoom: 14 } },
  layers: [{ id: 'bg', type: 'background', paint: { 'background-color': '#fff' } }, { id: 'roads', type: 'line', source: 'v', 'source-layer': 'roads' }],
};
const PAGE = `<!doctype html><html><body style="margin:0"><div id="map" style="width:640px;height:480px"></div>
<script type="module">
import * as ml from './maplibre-gl.mjs';
${TILE_CACHE_SIZING}
window.sizeTileCaches = sizeTileCaches;
window.map = new ml.Map({ container: 'map', style: ${JSON.stringify(STYLE)}, interactive: false, fadeDuration: 0, center: [2.35, 48.85], zoom: 13 });
window.map.once('load', () => (window.ready = true));
</script></body></html>`;

describe('the page sizes MapLibre\'s cache of tiles out of view by the frame', () => {
  let browser: Browser;
  let page: Page;
  before(async () => {
    ({ browser, page } = await openMapLibrePage(PAGE));
  });
  after(() => browser?.close());

  /** The cache's bound after a frame of `edge` px square, with the page's sizing applied or not. */
  const boundAt = (edge: number, sized: boolean) =>
    page.evaluate(
      `(() => {
        const box = map.getContainer();
        box.style.width = box.style.height = '${edge}px';
        map.resize();
        if (${sized}) sizeTileCaches(map);
        map._sourcesDirty = true;
        map.redraw();
        return map.style.tileManagers.v._outOfViewCache.max;
      })()`,
    ) as Promise<number>;

  // MapLibre's own bound: (tiles across + 1) x (tiles down + 1) x 5 zoom levels.
  const maplibre = (edge: number, levels: number) => (Math.ceil(edge / 512) + 1) ** 2 * levels;

  test('up to a 4x4 frame (2112 px) MapLibre keeps its five levels', async () => {
    assert.equal(await boundAt(1088, true), maplibre(1088, 5));
    assert.equal(await boundAt(2112, true), maplibre(2112, 5));
  });

  test('an 8x8 frame (4160 px) keeps one level: 100 tiles, where MapLibre alone keeps 500', async () => {
    assert.equal(await boundAt(4160, false), maplibre(4160, 5), 'unsized, MapLibre keeps five levels of the large view');
    assert.equal(await boundAt(4160, true), maplibre(4160, 1));
  });

  test('a small frame after a large one gets the five levels back', async () => {
    await boundAt(4160, true);
    assert.equal(await boundAt(1088, true), maplibre(1088, 5));
  });
});
