// The embed page in headless Chromium, framed by a parent page of another origin, with the library served
// locally (embed_assets = "local"; the machine has no internet): the postMessage API both ways (ready, flyTo ->
// move, fitBounds, click, setFilter and setLayoutProperty read back from the pixels), interactive=false, the
// theme following prefers-color-scheme, the URL hash, and injection attempts through every parameter.
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import type { Browser, Frame, Page } from 'playwright-core';
import { colourDistance, launchChromium, pixelAt, screenshot, watch, type Rgb } from './helpers/browser.js';
import { fixture, startServer, type TestServer } from './helpers/server.js';

/** The parent: frames the URL in `?src=`, keeps every message the frame sends, and sends what the test asks. */
const PARENT = `<!doctype html>
<html><head><meta charset="utf-8"><link rel="icon" href="data:,">
<style>html, body { margin: 0 } iframe { border: 0; width: 600px; height: 400px; display: block }</style></head>
<body><iframe id="embed"></iframe>
<script>
const frame = document.getElementById('embed');
window.__messages = [];
window.addEventListener('message', (e) => { if (e.source === frame.contentWindow) window.__messages.push(e.data); });
window.send = (m) => frame.contentWindow.postMessage(m, '*');
frame.src = new URLSearchParams(location.search).get('src');
</script></body></html>`;

interface Message {
  type: string;
  [field: string]: unknown;
}
type EmbedWindow = Window & { embedMap: { loaded(): boolean; isMoving(): boolean; areTilesLoaded(): boolean; getCenter(): { lng: number; lat: number }; project(p: [number, number]): { x: number; y: number }; on(e: string, f: () => void): void } };
type ParentWindow = Window & { __messages: Message[]; send(m: unknown): void };

let server: TestServer;
let parent: http.Server;
let parentOrigin: string;
let browser: Browser;

before(async () => {
  server = await startServer({
    toml: `
fonts = "${fixture('fonts')}"
[server]
disable_render = true
embed_assets = "local"
[[sources]]
id = "openmaptiles"
type = "pmtiles"
path = "${fixture('vector/omt-planet-z0-1.pmtiles')}"
[[styles]]
id = "osm-liberty"
path = "${fixture('styles/osm-liberty/style.json')}"
`,
  });
  parent = http.createServer((_req, res) => res.writeHead(200, { 'Content-Type': 'text/html; charset=utf-8' }).end(PARENT));
  await new Promise<void>((resolve) => parent.listen(0, '127.0.0.1', resolve));
  // "localhost" is another origin than the server's 127.0.0.1: the frame is cross-origin, as on a real site.
  parentOrigin = `http://localhost:${(parent.address() as AddressInfo).port}`;
  browser = await launchChromium();
});

after(async () => {
  await browser?.close();
  parent?.close();
  await server?.stop();
});

async function openParent(embedPath: string, colorScheme: 'light' | 'dark' = 'light'): Promise<{ page: Page; frame: Frame; problems: string[] }> {
  const page = await browser.newPage({ viewport: { width: 640, height: 440 }, colorScheme });
  const problems = watch(page);
  await page.goto(`${parentOrigin}/?src=${encodeURIComponent(server.url + embedPath)}`);
  await waitForMessage(page, (m) => m.type === 'ready');
  const frame = page.frames().find((f) => f.url().startsWith(`${server.url}/embed/`));
  assert.ok(frame, 'the embed frame is there');
  await settle(frame);
  return { page, frame, problems };
}

const messages = (page: Page) => page.evaluate(() => (window as unknown as ParentWindow).__messages);
const send = (page: Page, m: unknown) => page.evaluate((msg) => (window as unknown as ParentWindow).send(msg), m);
const clearMessages = (page: Page) => page.evaluate(() => void ((window as unknown as ParentWindow).__messages.length = 0));

/** Waits (generously: a slow shared machine) until a message matching `pred` has arrived; returns the last one that does. */
async function waitForMessage(page: Page, pred: (m: Message) => boolean, timeout = 60_000): Promise<Message> {
  const deadline = Date.now() + timeout;
  for (;;) {
    const found = (await messages(page)).filter(pred);
    if (found.length) return found[found.length - 1];
    if (Date.now() > deadline) throw new Error(`no matching message; got ${JSON.stringify(await messages(page)).slice(0, 2000)}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** The map has stopped moving and drawn every tile. */
function settle(frame: Frame): Promise<unknown> {
  return frame.waitForFunction(
    () => {
      const m = (window as unknown as EmbedWindow).embedMap;
      return m && m.loaded() && !m.isMoving() && m.areTilesLoaded();
    },
    undefined,
    { timeout: 60_000, polling: 100 },
  );
}

/** Reads the frame's pixel at a place until `until` holds (drawing follows a message by a frame or more). */
async function pixelOf(page: Page, frame: Frame, lngLat: [number, number], until: (c: Rgb) => boolean): Promise<Rgb> {
  const at = await frame.evaluate((p) => (window as unknown as EmbedWindow).embedMap.project(p), lngLat);
  const deadline = Date.now() + 30_000;
  for (;;) {
    await settle(frame);
    const c = pixelAt(await screenshot(page.locator('#embed')), at.x, at.y);
    if (until(c) || Date.now() > deadline) return c;
    await new Promise((r) => setTimeout(r, 200));
  }
}

const near = (a: unknown, b: number, tolerance: number) => typeof a === 'number' && Math.abs(a - b) <= tolerance;

describe('the message API', () => {
  let page: Page;
  let frame: Frame;
  let problems: string[];
  before(async () => {
    ({ page, frame, problems } = await openParent('/embed/openmaptiles?zoom=1&center=0,0'));
  });
  after(async () => {
    await page?.close();
  });

  test('ready names the style URL', async () => {
    const ready = (await messages(page)).filter((m) => m.type === 'ready');
    assert.deepEqual(ready, [{ type: 'ready', style: `${server.url}/styles/openmaptiles/style.json` }]);
  });

  test('flyTo moves the map; move reports the new centre, throttled', { timeout: 120_000 }, async () => {
    await clearMessages(page);
    // The frame's own record of every move event, to hold the messages against.
    await frame.evaluate(() => {
      const w = window as unknown as EmbedWindow & { __moves: number[] };
      w.__moves = [];
      w.embedMap.on('move', () => w.__moves.push(performance.now()));
    });
    await send(page, { type: 'flyTo', lng: -30, lat: 5, zoom: 3 });
    const last = await waitForMessage(page, (m) => m.type === 'move' && near(m.lng, -30, 1e-6) && near(m.lat, 5, 1e-6) && near(m.zoom, 3, 1e-6));
    assert.deepEqual(Object.keys(last).sort(), ['bearing', 'lat', 'lng', 'pitch', 'type', 'zoom']);
    assert.equal(last.bearing, 0);
    assert.equal(last.pitch, 0);
    await settle(frame);
    const moves = (await messages(page)).filter((m) => m.type === 'move');
    const events = await frame.evaluate(() => (window as unknown as { __moves: number[] }).__moves);
    assert.ok(events.length >= 2, `the flight moved the map (${events.length} move events)`);
    // One message per 200 ms window at most (a window cut short at either end of the flight counts whole), plus the
    // one for where the map came to rest. Unthrottled, every move event would be a message.
    const span = events[events.length - 1] - events[0];
    assert.ok(moves.length <= Math.ceil(span / 200) + 2, `${moves.length} move messages for ${events.length} move events over ${span.toFixed(0)} ms`);
  });

  test('messages of unexpected shape are ignored and the page keeps working', async () => {
    for (const junk of [null, 'flyTo', 42, [], {}, { type: 'flyTo' }, { type: 'flyTo', lng: 'x', lat: 0 }, { type: 'flyTo', lng: 0, lat: 95 }, { type: 'flyTo', lng: 0, lat: 0, zoom: null },
      { type: 'fitBounds', bounds: [[0, 0]] }, { type: 'fitBounds', bounds: 'x' }, { type: 'setFilter', layerId: 'nope', filter: ['==', 1, 1] },
      { type: 'setFilter', layerId: 'water-fill', filter: 5 }, { type: 'setLayoutProperty', layerId: 'water-fill' }, { type: 'constructor' }, { type: '__proto__' },
      { type: 'toString' }, { type: 'setLayoutProperty', layerId: 'water-fill', property: 'no-such-property', value: 1 }]) {
      await send(page, junk);
    }
    await clearMessages(page);
    await send(page, { type: 'fitBounds', bounds: [[10, 10], [20, 20]], padding: 10 });
    const m = await waitForMessage(page, (x) => x.type === 'move' && near(x.lng, 15, 1e-3) && near(x.lat, 15, 0.5));
    assert.ok(near(m.zoom, 4, 1.5), `fitBounds zoomed to the box (zoom ${m.zoom})`);
    await settle(frame);
    assert.deepEqual(problems, [], 'no page error, failed request or policy violation');
  });

  test('setLayoutProperty and setFilter change what is drawn', { timeout: 120_000 }, async () => {
    await send(page, { type: 'flyTo', lng: -30, lat: -10, zoom: 2 });
    await waitForMessage(page, (m) => m.type === 'move' && near(m.lng, -30, 1e-6) && near(m.lat, -10, 1e-6));
    // Open South Atlantic: the generated style's water fill is all there is.
    const sea: [number, number] = [-25, -25];
    const water = await pixelOf(page, frame, sea, () => true);
    await send(page, { type: 'setLayoutProperty', layerId: 'water-fill', property: 'visibility', value: 'none' });
    const hidden = await pixelOf(page, frame, sea, (c) => colourDistance(c, water) > 20);
    assert.ok(colourDistance(hidden, water) > 20, `hiding water-fill changes the sea pixel (${water} -> ${hidden})`);
    await send(page, { type: 'setLayoutProperty', layerId: 'water-fill', property: 'visibility', value: 'visible' });
    const shown = await pixelOf(page, frame, sea, (c) => colourDistance(c, water) <= 3);
    assert.ok(colourDistance(shown, water) <= 3, `showing it again restores the pixel (${shown} vs ${water})`);

    await send(page, { type: 'setFilter', layerId: 'water-fill', filter: ['==', ['get', 'class'], 'no-such-class'] });
    const filtered = await pixelOf(page, frame, sea, (c) => colourDistance(c, water) > 20);
    assert.ok(colourDistance(filtered, water) > 20, `a filter that matches nothing removes the water (${filtered})`);
    assert.ok(colourDistance(filtered, hidden) <= 3, 'and leaves what hiding the layer left');
    await send(page, { type: 'setFilter', layerId: 'water-fill', filter: ['==', ['geometry-type'], 'Polygon'] });
    const restored = await pixelOf(page, frame, sea, (c) => colourDistance(c, water) <= 3);
    assert.ok(colourDistance(restored, water) <= 3, 'the original filter brings it back');
  });

  test('a click reports its place and the layers under it', async () => {
    await settle(frame);
    const at = await frame.evaluate(() => (window as unknown as EmbedWindow).embedMap.project([-25, -25]));
    const box = await page.locator('#embed').boundingBox();
    assert.ok(box);
    await clearMessages(page);
    await page.mouse.click(box.x + at.x, box.y + at.y);
    const click = await waitForMessage(page, (m) => m.type === 'click');
    assert.deepEqual(Object.keys(click).sort(), ['features', 'lat', 'lng', 'type']);
    assert.ok(near(click.lng, -25, 0.5) && near(click.lat, -25, 0.5), `clicked at ${click.lng},${click.lat}`);
    assert.ok(Array.isArray(click.features) && click.features.includes('water-fill'), `features: ${JSON.stringify(click.features)}`);
    assert.ok((click.features as unknown[]).every((f) => typeof f === 'string'));
  });
});

/** Drags across the middle of the frame and returns the map centre before and after. */
async function drag(page: Page, frame: Frame): Promise<{ before: { lng: number; lat: number }; after: { lng: number; lat: number } }> {
  const center = () => frame.evaluate(() => (window as unknown as EmbedWindow).embedMap.getCenter()).then((c) => ({ lng: c.lng, lat: c.lat }));
  const before = await center();
  const box = (await page.locator('#embed').boundingBox())!;
  await page.mouse.move(box.x + 300, box.y + 200);
  await page.mouse.down();
  for (let i = 1; i <= 10; i++) await page.mouse.move(box.x + 300 - i * 15, box.y + 200 - i * 8);
  await page.mouse.up();
  // A click afterwards, answered by the page, shows every earlier input event has been handled.
  await clearMessages(page);
  await page.mouse.click(box.x + 50, box.y + 50);
  await waitForMessage(page, (m) => m.type === 'click');
  await settle(frame);
  return { before, after: await center() };
}

test('interactive=false: a drag does not move the map, clicks and messages still work', { timeout: 120_000 }, async () => {
  const control = await openParent('/embed/openmaptiles?zoom=2&center=0,0');
  const moved = await drag(control.page, control.frame);
  assert.ok(Math.abs(moved.after.lng - moved.before.lng) > 1, `an interactive map follows the drag (${moved.before.lng} -> ${moved.after.lng})`);
  await control.page.close();

  const { page, frame, problems } = await openParent('/embed/openmaptiles?zoom=2&center=0,0&interactive=false');
  const still = await drag(page, frame);
  assert.deepEqual(still.after, still.before, 'the map stays where it was');
  await send(page, { type: 'flyTo', lng: 40, lat: 10, zoom: 3 });
  await waitForMessage(page, (m) => m.type === 'move' && near(m.lng, 40, 1e-6) && near(m.lat, 10, 1e-6));
  assert.deepEqual(problems, []);
  await page.close();
});

test('theme: follows prefers-color-scheme live, unless the query fixes it', { timeout: 120_000 }, async () => {
  const { page, frame } = await openParent('/embed/openmaptiles', 'dark');
  const theme = () => frame.evaluate(() => document.documentElement.dataset.theme);
  const background = () => frame.evaluate(() => getComputedStyle(document.body).backgroundColor);
  assert.equal(await theme(), 'dark');
  const dark = await background();
  await page.emulateMedia({ colorScheme: 'light' });
  await frame.waitForFunction(() => document.documentElement.dataset.theme === 'light');
  assert.notEqual(await background(), dark, 'the page colours change with the theme');
  await page.close();

  const fixed = await openParent('/embed/openmaptiles?theme=light', 'dark');
  assert.equal(await fixed.frame.evaluate(() => document.documentElement.dataset.theme), 'light');
  await fixed.page.close();
});

test('hash=true keeps the position in the URL hash', { timeout: 120_000 }, async () => {
  const { page, frame } = await openParent('/embed/openmaptiles?hash=true&zoom=1&center=0,0');
  await send(page, { type: 'flyTo', lng: 10, lat: 20, zoom: 4 });
  await waitForMessage(page, (m) => m.type === 'move' && near(m.lng, 10, 1e-6) && near(m.lat, 20, 1e-6) && near(m.zoom, 4, 1e-6));
  await frame.waitForFunction(() => location.hash.startsWith('#4/'), undefined, { timeout: 30_000 });
  const [zoom, lat, lng] = (await frame.evaluate(() => location.hash)).slice(1).split('/').map(Number);
  assert.ok(near(zoom, 4, 0.01) && near(lat, 20, 0.01) && near(lng, 10, 0.01), `hash ${zoom}/${lat}/${lng}`);
  await page.close();
});

test('injection attempts in the style id and every parameter never run', { timeout: 300_000 }, async () => {
  const page = await browser.newPage({ viewport: { width: 400, height: 300 } });
  const executed: string[] = [];
  page.on('dialog', (d) => {
    executed.push(`dialog ${d.message()} on ${page.url()}`);
    void d.dismiss();
  });
  page.on('pageerror', (err) => executed.push(`page error ${err.message} on ${page.url()}`));
  // The listener does catch a script that runs.
  await page.setContent('<script>alert("control")</script>');
  assert.deepEqual(executed, ['dialog control on about:blank']);
  executed.length = 0;

  const payloads = ['"><script>alert(1)</script>', 'javascript:alert(2)', '\\u003cscript\\u003ealert(3)\\u003c/script\\u003e', '</script><svg onload=alert(4)>', "'-alert(5)-'", '<img src=x onerror=alert(6)>'];
  const params = ['center', 'zoom', 'bearing', 'pitch', 'bounds', 'markers', 'controls', 'hash', 'interactive', 'theme', 'key'];
  const statuses = new Map<number, number>();
  for (const p of payloads) {
    const q = encodeURIComponent(p);
    const urls = [`/embed/${q}`, `/styles/${q}/`, `/data/${q}/`, `/embed/openmaptiles?hash=true#${q}`, `/?key=${q}`, ...params.map((name) => `/embed/openmaptiles?${name}=${q}`)];
    for (const u of urls) {
      const res = await page.goto(server.url + u);
      const status = res?.status() ?? 0;
      statuses.set(status, (statuses.get(status) ?? 0) + 1);
      if (status === 200 && u.startsWith('/embed/')) {
        await page.waitForFunction(() => (window as unknown as EmbedWindow).embedMap?.loaded(), undefined, { timeout: 60_000, polling: 100 });
      }
    }
  }
  assert.deepEqual(executed, [], 'nothing ran');
  assert.ok((statuses.get(200) ?? 0) > 0 && (statuses.get(400) ?? 0) > 0 && (statuses.get(404) ?? 0) > 0, `pages, 400s and 404s were all tried: ${JSON.stringify([...statuses])}`);
  await page.close();
});
