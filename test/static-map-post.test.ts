// The POST form of the static map: the overlays as a JSON body, for overlays too long for a URL. It draws the
// pixels the GET form draws with the same values (both rendered, no image cache between them), takes overlays
// far past server.max_header_bytes where the GET form gets 431, and refuses bad bodies with 400/413/415 problem
// JSON naming the member and what was wrong, with the GET form's own words for a bad overlay.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { request, tempDir, waitFor, type RawResponse } from './helpers/foundation.js';
import { decode, distance, pixel, type Decoded } from './helpers/render.js';
import { osmLibertyToml, startServer, type TestServer } from './helpers/server.js';

const STATIC = '/styles/osm-liberty/static';
const json = { 'Content-Type': 'application/json' };

/** The share of pixels whose colours differ by more than `tolerance` in any channel. */
function differing(a: Decoded, b: Decoded, tolerance = 2): number {
  assert.deepEqual([a.width, a.height], [b.width, b.height]);
  let n = 0;
  for (let y = 0; y < a.height; y++) for (let x = 0; x < a.width; x++) if (distance(pixel(a, x, y), pixel(b, x, y)) > tolerance) n++;
  return n / (a.width * a.height);
}

function problemOf(res: RawResponse, status: number): { detail: string; parameter?: string } {
  assert.equal(res.status, status, res.body.toString('utf8').slice(0, 300));
  assert.equal(res.headers['content-type'], 'application/problem+json');
  return JSON.parse(res.body.toString('utf8')) as { detail: string; parameter?: string };
}

const GEOJSON = {
  type: 'Feature',
  properties: { stroke: '#00aa00', 'stroke-width': 6, fill: '#ffff00', 'fill-opacity': 0.5 },
  geometry: { type: 'Polygon', coordinates: [[[-20, -10], [30, -10], [30, 25], [-20, 25], [-20, -10]]] },
};
const PATH = 'path-5+ff00ff(-60,40|0,0|60,-30)';
const MARKERS = ['pin-l-a+0000ff(10,10)', 'pin-s+ff0000(-40,-20)'];

describe('POST /styles/{style}/static/{view}/{size}', () => {
  let server: TestServer;
  before(async () => {
    // No image caches: the GET and the POST are each drawn by the renderer.
    server = await startServer({ toml: osmLibertyToml(`[render]\npool_size = 1\nmemory_cache_mb = 0\ndisk_cache_mb = 0\n[cache]\ndir = "${tempDir('tsts-static-post-')}"\n`) });
    await waitFor('the renderer', async () => ((await request(server.url, '/ready')).status === 200 ? true : undefined), 120_000);
  });
  after(() => server?.stop());

  for (const view of ['auto', '5,5,1.5']) {
    test(`draws the pixels of the GET form with the same overlays (view ${view})`, async () => {
      const query = [`path=${encodeURIComponent(PATH)}`, ...MARKERS.map((m) => `marker=${encodeURIComponent(m)}`), `geojson=${encodeURIComponent(JSON.stringify(GEOJSON))}`, 'padding=0.2'].join('&');
      const got = await request(server.url, `${STATIC}/${view}/400x300.png?${query}`, { timeoutMs: 120_000 });
      assert.equal(got.status, 200, got.body.toString('utf8').slice(0, 300));
      const posted = await request(server.url, `${STATIC}/${view}/400x300.png`, {
        method: 'POST',
        headers: json,
        body: JSON.stringify({ path: PATH, marker: MARKERS, geojson: GEOJSON, padding: 0.2 }),
        timeoutMs: 120_000,
      });
      assert.equal(posted.status, 200, posted.body.toString('utf8').slice(0, 300));
      assert.equal(posted.headers['content-type'], 'image/png');
      assert.doesNotMatch(String(posted.headers['server-timing']), /^cache/, 'the POST was drawn, not taken from a cache');
      const [a, b] = [await decode(got.body), await decode(posted.body)];
      assert.ok(differing(a, b) < 0.001, `${(differing(a, b) * 100).toFixed(2)}% of pixels differ`);
      // The overlays are in the picture: without them it is another image.
      const bare = await request(server.url, `${STATIC}/${view === 'auto' ? '0,0,1' : view}/400x300.png`, { timeoutMs: 120_000 });
      if (view !== 'auto') assert.ok(differing(a, await decode(bare.body)) > 0.01, 'the overlays changed nothing');
    });
  }

  test('overlays past server.max_header_bytes: the GET form gets 431 pointing to POST, the POST form draws them', async () => {
    // A path of 3000 points: about 40 KB of URL.
    const points = Array.from({ length: 3000 }, (_, i) => `${(-170 + (i * 340) / 3000).toFixed(4)},${(40 * Math.sin(i / 100)).toFixed(4)}`);
    const path = `path-4+ff0000(${points.join('|')})`;
    const got = await request(server.url, `${STATIC}/auto/300x200.png?path=${encodeURIComponent(path)}`);
    assert.match(problemOf(got, 431).detail, /server\.max_header_bytes.*POST/);
    const posted = await request(server.url, `${STATIC}/auto/300x200.png`, { method: 'POST', headers: json, body: JSON.stringify({ path }), timeoutMs: 120_000 });
    assert.equal(posted.status, 200, posted.body.toString('utf8').slice(0, 300));
    const img = await decode(posted.body);
    assert.deepEqual([img.width, img.height], [300, 200]);
    let red = 0;
    for (let y = 0; y < img.height; y++) for (let x = 0; x < img.width; x++) if (distance(pixel(img, x, y), [255, 0, 0]) < 30) red++;
    assert.ok(red > 300, `only ${red} red pixels of the path`);
  });

  test('quality, lossless and lang are body members too, checked as in the query', async () => {
    const post = (body: unknown, file = '200x150.webp') => request(server.url, `${STATIC}/0,0,1/${file}`, { method: 'POST', headers: json, body: JSON.stringify({ marker: MARKERS[0], ...(body as object) }), timeoutMs: 120_000 });
    const [low, high] = [await post({ quality: 5 }), await post({ quality: 95 })];
    for (const r of [low, high]) {
      assert.equal(r.status, 200, r.body.toString('utf8').slice(0, 300));
      assert.equal(r.headers['content-type'], 'image/webp');
    }
    assert.ok(low.body.length < high.body.length * 0.8, `quality 5: ${low.body.length} bytes, 95: ${high.body.length}`);
    assert.equal(problemOf(await post({ quality: 0 }), 400).parameter, 'quality');
    assert.equal(problemOf(await post({ lossless: true }, '200x150.jpg'), 400).parameter, 'lossless');
    assert.equal(problemOf(await post({ lang: 'not a tag!' }), 400).parameter, 'lang');
  });

  test('bad bodies: 400, 413 and 415 problem JSON naming what is wrong; a bad overlay in the GET form\'s words', async () => {
    const post = (body: string, headers: Record<string, string> = json, size = '300x200.png') => request(server.url, `${STATIC}/auto/${size}`, { method: 'POST', headers, body });
    assert.equal(problemOf(await post('{"path": '), 400).parameter, 'body');
    assert.equal(problemOf(await post('[1, 2]'), 400).parameter, 'body');
    const unknown = problemOf(await post('{"paths": "x"}'), 400);
    assert.equal(unknown.parameter, 'paths');
    assert.match(unknown.detail, /unknown member "paths"/);
    const notString = problemOf(await post('{"path": 5}'), 400);
    assert.equal(notString.parameter, 'path');
    assert.match(notString.detail, /a string or an array of strings/);
    assert.equal(problemOf(await post('{"latlng": "maybe"}'), 400).parameter, 'latlng');
    // The grammar's own problem, as the GET form gives it.
    const viaGet = problemOf(await request(server.url, `${STATIC}/auto/300x200.png?path=${encodeURIComponent('path-5+zz0000(0,0|1,1)')}`), 400);
    const viaPost = problemOf(await post(JSON.stringify({ path: 'path-5+zz0000(0,0|1,1)' })), 400);
    assert.deepEqual(viaPost, viaGet);
    // The limits of the GET form hold: size, and the pixel budget.
    assert.equal(problemOf(await post(JSON.stringify({ marker: MARKERS }), json, '5000x10.png'), 400).parameter, 'width');
    assert.match(problemOf(await post('{}', { 'Content-Type': 'text/plain' }), 415).detail, /application\/json/);
    assert.match(problemOf(await post(JSON.stringify({ path: 'x'.repeat(1_100_000) })), 413).detail, /1048576 bytes/);
    assert.equal((await request(server.url, `${STATIC}/auto/300x200.png`, { method: 'POST', headers: json, body: '{}' })).status, 400, 'auto without overlays');
  });
});
