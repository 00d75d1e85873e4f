// Overlays are projected in Node (src/render/camera.ts) so that they sit where the renderer draws the map.
// This checks that projection against MapLibre's own `map.project` in headless Chromium, for random cameras
// with bearing and pitch, and random points around the centre.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import fc from './helpers/fast-check.js';
import type { Browser, Page } from 'playwright-core';
import { openMapLibrePage } from './helpers/browser.js';
import { project, type Camera } from '../src/render/camera.js';

const PAGE = `<!doctype html><html><body style="margin:0"><div id="map" style="width:640px;height:480px"></div>
<script type="module">
import * as ml from './maplibre-gl.mjs';
window.map = new ml.Map({ container: 'map', style: { version: 8, sources: {}, layers: [{ id: 'bg', type: 'background', paint: { 'background-color': '#fff' } }] },
  interactive: false, fadeDuration: 0, maxPitch: 85, transformConstrain: (center, zoom) => ({ center, zoom }) });
window.map.once('load', () => (window.ready = true));
</script></body></html>`;

describe('overlay projection matches MapLibre', () => {
  let browser: Browser;
  let page: Page;
  before(async () => {
    ({ browser, page } = await openMapLibrePage(PAGE));
  });
  after(() => browser?.close());

  test('random cameras (bearing, pitch up to 70) and points: within 0.5 px', async () => {
    const arb = fc.record({
      lon: fc.double({ min: -170, max: 170, noNaN: true }),
      lat: fc.double({ min: -70, max: 70, noNaN: true }),
      zoom: fc.double({ min: 0, max: 18, noNaN: true }),
      bearing: fc.double({ min: -180, max: 180, noNaN: true }),
      pitch: fc.double({ min: 0, max: 70, noNaN: true }),
      // Points within a frame's reach of the centre, in screen-sized steps at this zoom.
      dx: fc.double({ min: -300, max: 300, noNaN: true }),
      dy: fc.double({ min: -220, max: 220, noNaN: true }),
    });
    const samples = fc.sample(arb, { numRuns: 60 });
    const results = (await page.evaluate(
      `(${JSON.stringify(samples)}).map((s) => {
        map.jumpTo({ center: [s.lon, s.lat], zoom: s.zoom, bearing: s.bearing, pitch: s.pitch });
        const ll = map.unproject([320 + s.dx, 240 + s.dy]);
        const p = map.project(ll);
        return { lng: ll.lng, lat: ll.lat, x: p.x, y: p.y };
      })`,
    )) as { lng: number; lat: number; x: number; y: number }[];
    let compared = 0;
    results.forEach((r, i) => {
      const s = samples[i];
      // A screen point beyond the pole unprojects to the pole itself (latitude 90, at infinity): nothing to compare.
      if (Math.abs(r.lat) > 89.9) return;
      compared++;
      const cam: Camera = { center: [s.lon, s.lat], zoom: s.zoom, bearing: s.bearing, pitch: s.pitch, width: 640, height: 480 };
      const mine = project(cam, r.lng, r.lat);
      assert.ok(mine, `a point MapLibre shows is in front of the camera (${JSON.stringify(s)})`);
      const err = Math.hypot(mine[0] - r.x, mine[1] - r.y);
      assert.ok(err < 0.5, `${JSON.stringify(s)}: MapLibre ${r.x.toFixed(2)},${r.y.toFixed(2)}, ours ${mine[0].toFixed(2)},${mine[1].toFixed(2)}`);
    });
    assert.ok(compared > samples.length / 2, `${compared} of ${samples.length} samples compared`);
  });
});
