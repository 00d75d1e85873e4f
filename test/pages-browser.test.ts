// The home page and the viewers as a person sees them, in headless Chromium with the library served locally:
// each loads with no failed request, page error or policy violation, and shows a map (a screenshot with many
// colours, not a blank page). Every link of the home page answers, render examples included (rendering is on).
import assert from 'node:assert/strict';
import { after, before, test } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import { colourCount, launchChromium, screenshot, watch } from './helpers/browser.js';
import { osmLibertyToml, startServer, type TestServer } from './helpers/server.js';

let server: TestServer;
let browser: Browser;

before(async () => {
  server = await startServer({
    toml: osmLibertyToml('[server]\nembed_assets = "local"\n[render]\nbackend = "chromium"\npool_size = 1'),
    timeoutMs: 60_000,
  });
  browser = await launchChromium();
});

after(async () => {
  await browser?.close();
  await server?.stop();
});

type MapWindow = Window & { viewerMap?: { loaded(): boolean; areTilesLoaded(): boolean; isMoving(): boolean }; previewMaps?: unknown[] };

/** A map with no tile missing and nothing moving. */
const mapSettled = (page: Page) =>
  page.waitForFunction(
    () => {
      const m = (window as unknown as MapWindow).viewerMap;
      return m && m.loaded() && m.areTilesLoaded() && !m.isMoving();
    },
    undefined,
    { timeout: 90_000, polling: 200 },
  );

async function open(path: string, colorScheme: 'light' | 'dark' = 'light'): Promise<{ page: Page; problems: string[] }> {
  const page = await browser.newPage({ viewport: { width: 1100, height: 1000 }, colorScheme });
  const problems = watch(page);
  await page.goto(server.url + path);
  return { page, problems };
}

test('the home page shows a live preview of every style and source, and every link on it answers', { timeout: 240_000 }, async () => {
  const { page, problems } = await open('/');
  const previews = page.locator('[data-preview]');
  assert.equal(await previews.count(), 3, 'one preview per style and source');
  await page.waitForFunction(() => document.querySelectorAll('[data-preview].ready').length === 3, undefined, { timeout: 120_000, polling: 200 });
  for (let i = 0; i < 3; i++) {
    const colours = colourCount(await screenshot(previews.nth(i)));
    assert.ok(colours > 12, `preview ${i} shows a map (${colours} colours)`);
  }
  await page.screenshot({ path: '/tmp/tileserver-ts-home.png' });
  assert.deepEqual(problems, []);

  const hrefs = await page.$$eval('a[href]', (as) => as.map((a) => (a as HTMLAnchorElement).href));
  for (const want of ['/styles/osm-liberty/0/0/0.png', '/styles/osm-liberty/wmts.xml', '/styles/osm-liberty.json', '/styles/openmaptiles/wmts.xml', '/_openapi']) {
    assert.ok(hrefs.some((h) => new URL(h).pathname === want), `the page links to ${want}`);
  }
  assert.ok(hrefs.some((h) => new URL(h).pathname.startsWith('/styles/osm-liberty/static/')), 'and to a static image');
  for (const href of new Set(hrefs)) {
    const res = await fetch(href);
    assert.equal(res.status, 200, `${href} answers`);
    await res.arrayBuffer();
  }
  await page.close();
});

test('the home page in the dark theme', { timeout: 120_000 }, async () => {
  const light = await open('/');
  const lightBg = await light.page.evaluate(() => getComputedStyle(document.body).backgroundColor);
  await light.page.close();
  const { page, problems } = await open('/', 'dark');
  await page.waitForFunction(() => document.documentElement.dataset.theme === 'dark');
  assert.notEqual(await page.evaluate(() => getComputedStyle(document.body).backgroundColor), lightBg);
  await page.waitForFunction(() => document.querySelectorAll('[data-preview].ready').length === 3, undefined, { timeout: 120_000, polling: 200 });
  assert.deepEqual(problems, []);
  await page.close();
});

test('the style viewer shows the style full-page, with the position in the hash', { timeout: 120_000 }, async () => {
  const { page, problems } = await open('/styles/osm-liberty/');
  await mapSettled(page);
  const shot = await screenshot(page);
  assert.ok(colourCount(shot) > 40, `a map is drawn (${colourCount(shot)} colours)`);
  assert.match(await page.evaluate(() => location.hash), /^#\d+(\.\d+)?\/-?\d/);
  await page.screenshot({ path: '/tmp/tileserver-ts-style-viewer.png' });
  assert.deepEqual(problems, []);
  await page.close();
});

test('the inspect view of a vector source colours its layers and shows feature properties on hover', { timeout: 120_000 }, async () => {
  const { page, problems } = await open('/data/openmaptiles/');
  await mapSettled(page);
  const shot = await screenshot(page);
  assert.ok(colourCount(shot) > 12, `the layers are drawn (${colourCount(shot)} colours)`);
  // Hover the middle of Africa: the popup lists the features there and their properties.
  const at = await page.evaluate(() => (window as unknown as { viewerMap: { project(p: [number, number]): { x: number; y: number } } }).viewerMap.project([20, 5]));
  const popup = page.locator('.maplibregl-popup .maplibregl-inspect_popup');
  // The plugin answers mouse moves once it has drawn the features there; on a busy machine the first move can
  // come before that, so the pointer moves by a pixel until the popup shows (at most 60 s).
  for (let i = 0, end = Date.now() + 60_000; !(await popup.isVisible()); i++) {
    assert.ok(Date.now() < end, 'the inspect popup never appeared on hover');
    await page.mouse.move(at.x + (i % 2), at.y);
    await popup.waitFor({ timeout: 1_000 }).catch(() => {});
  }
  const text = await popup.innerText();
  assert.match(text, /\$type/, `the popup shows feature properties: ${text.slice(0, 200)}`);
  await page.screenshot({ path: '/tmp/tileserver-ts-inspect.png' });
  assert.deepEqual(problems, []);
  await page.close();
});

test('the view of a raster source shows its imagery', { timeout: 120_000 }, async () => {
  const { page, problems } = await open('/data/natural_earth/');
  await mapSettled(page);
  const shot = await screenshot(page);
  assert.ok(colourCount(shot) > 40, `the imagery is drawn (${colourCount(shot)} colours)`);
  assert.equal(await page.locator('.maplibregl-inspect_popup').count(), 0);
  assert.deepEqual(problems, []);
  await page.close();
});

test('the embed page on its own loads with no failed request', { timeout: 120_000 }, async () => {
  const { page, problems } = await open('/embed/osm-liberty?controls=navigation,scale,fullscreen&markers=0,0|10,10');
  await page.waitForFunction(() => {
    const m = (window as unknown as { embedMap?: { loaded(): boolean; areTilesLoaded(): boolean } }).embedMap;
    return m && m.loaded() && m.areTilesLoaded();
  }, undefined, { timeout: 90_000, polling: 200 });
  assert.equal(await page.locator('.maplibregl-marker').count(), 2);
  assert.equal(await page.locator('.maplibregl-ctrl-scale').count(), 1);
  assert.equal(await page.locator('.maplibregl-ctrl-fullscreen').count(), 1);
  const shot = await screenshot(page);
  assert.ok(colourCount(shot) > 40, `a map is drawn (${colourCount(shot)} colours)`);
  assert.deepEqual(problems, []);
  await page.close();
});
