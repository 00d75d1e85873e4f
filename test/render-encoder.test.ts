// Tiles encoded inside the Chromium page (render.tile_encoder = "browser", the default): only encoded bytes leave
// the browser. What a client checks: the tiles' bytes stay near what sharp makes of the same pixels, an opaque
// style gives RGB PNGs, a semi-transparent style gives straight (not premultiplied) alpha, JPEG lies on white,
// static maps stay with sharp; and the style rule that decides "opaque" (style-opacity.ts) on its own. One server with
// two styles.
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import sharp from 'sharp';
import type { StyleSpecification } from '@maplibre/maplibre-gl-style-spec';
import { opaqueAt } from '../src/render/style-opacity.js';
import { waitFor } from './helpers/foundation.js';
import { buildOmtArchive, decode, PARIS, renderTempDir, renderToml } from './helpers/render.js';
import { jsonLogLines, startServer, type TestServer } from './helpers/server.js';

/** Half-transparent red over everything, and water a half-transparent blue over it. */
const GLASS: StyleSpecification = {
  version: 8,
  sources: { openmaptiles: { type: 'vector', url: 'mbtiles://openmaptiles' } as never },
  layers: [
    { id: 'bg', type: 'background', paint: { 'background-color': 'rgba(255, 0, 0, 0.5)' } },
    { id: 'water', type: 'fill', source: 'openmaptiles', 'source-layer': 'water', paint: { 'fill-color': '#0000ff', 'fill-opacity': 0.5 } },
  ],
};

let s: TestServer;

async function get(p: string): Promise<{ headers: Headers; body: Buffer }> {
  const res = await fetch(s.url + p);
  const body = Buffer.from(await res.arrayBuffer());
  assert.equal(res.status, 200, `${p}: ${body.toString().slice(0, 300)}`);
  return { headers: res.headers, body };
}

/** PNG colour type from the IHDR chunk: 2 RGB, 6 RGBA. */
const pngColourType = (png: Buffer) => png[25];

before(async () => {
  const dir = renderTempDir();
  const archive = await buildOmtArchive(dir);
  const glass = path.join(dir, 'glass.json');
  writeFileSync(glass, JSON.stringify(GLASS));
  const toml = `${renderToml(archive, path.join(dir, 'cache'), 'pool_size = 1\nmemory_cache_mb = 0\ndisk_cache_mb = 0')}
[[styles]]
id = "glass"
path = "${glass}"
`;
  // JSON log lines at info: the pages' deflate check below reads them.
  s = await startServer({ toml, workers: 1, env: { LOG_FORMAT: 'json', LOG_LEVEL: 'info' } });
  await waitFor('renderer', async () => ((await (await fetch(`${s.url}/ping`)).json()) as { renderer_enabled: boolean }).renderer_enabled || undefined, 120_000);
});
after(async () => {
  await s?.stop();
});

describe('tiles encoded in the browser', () => {
  for (const tile of ['1/0/0', `${PARIS.z}/${PARIS.x}/${PARIS.y}`])
  test(`OSM Liberty ${tile}: RGB PNG, and PNG, JPEG and WebP within 10 % of the bytes sharp writes from the same pixels`, async () => {
    const png = await get(`/styles/osm-liberty/${tile}.png`);
    // The renderer timed its own encoding; nothing was encoded in Node.
    assert.match(png.headers.get('server-timing') ?? '', /encode;dur=[\d.]+.*store;dur=/);
    assert.equal(pngColourType(png.body), 2, 'an opaque style gives RGB PNGs');
    const pixels = await decode(png.body);
    const raw = () => sharp(pixels.data, { raw: { width: pixels.width, height: pixels.height, channels: 4 } }).removeAlpha();
    const reference = {
      png: (await raw().png({ compressionLevel: 3, adaptiveFiltering: false }).toBuffer()).length,
      jpg: (await raw().jpeg({ quality: 85 }).toBuffer()).length,
      webp: (await raw().webp({ quality: 85, effort: 2 }).toBuffer()).length,
    };
    const sizes: string[] = [];
    for (const ext of ['png', 'jpg', 'webp'] as const) {
      const got = ext === 'png' ? png.body : (await get(`/styles/osm-liberty/${tile}.${ext}`)).body;
      sizes.push(`${ext} ${got.length} (sharp ${reference[ext]})`);
      const img = await decode(got);
      assert.deepEqual([img.width, img.height], [512, 512]);
      assert.ok(got.length <= reference[ext] * 1.1, sizes.join('; '));
    }
    console.log(tile, sizes.join('; '));
  });

  test("the renderer's pages loaded their PNG deflate: no page fell back to CompressionStream", async () => {
    // A tile drawn first, so the pages are open whatever ran before.
    await get('/styles/osm-liberty/2/1/1.png');
    const lines = jsonLogLines<{ msg?: string; reason?: string }>(s);
    assert.ok(lines.length > 0, 'the server logs JSON lines');
    const fallbacks = lines.filter((l) => /without its deflate module/.test(l.msg ?? ''));
    assert.deepEqual(fallbacks.map((l) => l.reason), []);
  });

  test('a semi-transparent style: RGBA PNG with straight alpha, WebP keeps the alpha, JPEG lies on white', async () => {
    const png = await get('/styles/glass/0/0/0.png');
    assert.equal(pngColourType(png.body), 6, 'a translucent style keeps its alpha channel');
    const img = await decode(png.body);
    const counts = new Map<string, number>();
    for (let i = 0; i < img.data.length; i += 4) {
      const k = Array.from(img.data.subarray(i, i + 4)).join(',');
      counts.set(k, (counts.get(k) ?? 0) + 1);
    }
    const top = [...counts].sort((a, b) => b[1] - a[1]).slice(0, 2).map(([k]) => k.split(',').map(Number));
    const near = (c: number[], want: number[]) => c.every((v, i) => Math.abs(v - want[i]) <= 2);
    // Land: red at alpha 0.5, straight (premultiplied it would read 128,0,0,128).
    assert.ok(top.some((c) => near(c, [255, 0, 0, 128])), `most common pixels: ${top.join(' | ')}`);
    // Water: blue at 0.5 over red at 0.5, alpha 0.75, straight colour 85,0,170.
    assert.ok(top.some((c) => near(c, [85, 0, 170, 191])), `most common pixels: ${top.join(' | ')}`);
    const webp = await decode((await get('/styles/glass/0/0/0.webp')).body);
    assert.ok(webp.data.some((v, i) => i % 4 === 3 && v < 200), 'the WebP kept its alpha channel');
    const jpg = await decode((await get('/styles/glass/0/0/0.jpg')).body);
    const flattened = jpg.data.subarray(0, 4);
    // The corner is water: 0.75 alpha of (85, 0, 170) over white is (128, 64, 191); land would be (255, 128, 128).
    assert.ok(near(Array.from(flattened).slice(0, 3), [128, 64, 191]), `JPEG corner ${Array.from(flattened)}`);
  });

  test('static maps stay with sharp: pixels come to Node, overlays are composited there', async () => {
    const marked = await get('/styles/osm-liberty/static/10,50,2/300x200.png?marker=pin-s%2Bf00(10,50)');
    assert.doesNotMatch(marked.headers.get('server-timing') ?? '', /store;dur=/);
    assert.match(marked.headers.get('server-timing') ?? '', /encode;dur=/);
    const m = await decode(marked.body);
    assert.deepEqual([m.width, m.height], [300, 200]);
    // The pin's tip is the image's centre; its red head is 15 px above.
    const [r, g, b] = Array.from(m.data.subarray((91 * 300 + 150) * 4, (91 * 300 + 150) * 4 + 3));
    assert.ok(r > 200 && g < 60 && b < 60, `the pin's head is ${[r, g, b]}`);
  });
});

describe('which tiles are opaque (style-opacity.ts)', () => {
  const style = (paint: Record<string, unknown>, extra: Record<string, unknown> = {}): StyleSpecification =>
    ({ version: 8, sources: {}, layers: [{ id: 'bg', type: 'background', paint, ...extra }] }) as StyleSpecification;

  test('an opaque constant background makes every tile opaque; anything that may leave a pixel translucent does not', () => {
    assert.equal(opaqueAt(style({ 'background-color': '#f8f4f0' }), 5), true);
    assert.equal(opaqueAt(style({}), 5), true, 'no colour is opaque black');
    assert.equal(opaqueAt(style({ 'background-color': 'rgba(0,0,0,0.99)' }), 5), false);
    assert.equal(opaqueAt(style({ 'background-color': '#fff', 'background-opacity': 0.9 }), 5), false);
    assert.equal(opaqueAt(style({ 'background-color': '#fff', 'background-opacity': ['interpolate', ['linear'], ['zoom'], 0, 1, 10, 0.5] }), 5), false);
    assert.equal(opaqueAt(style({ 'background-color': ['get', 'x'] }), 5), false);
    assert.equal(opaqueAt(style({ 'background-pattern': 'dots' }), 5), false);
    assert.equal(opaqueAt(style({ 'background-color': '#fff' }, { layout: { visibility: 'none' } }), 5), false);
    assert.equal(opaqueAt(style({ 'background-color': '#fff' }, { minzoom: 6 }), 5), false);
    assert.equal(opaqueAt(style({ 'background-color': '#fff' }, { maxzoom: 5 }), 5), false, 'maxzoom is exclusive');
    assert.equal(opaqueAt(style({ 'background-color': '#fff' }, { maxzoom: 5 }), 4.9), true);
    assert.equal(opaqueAt({ version: 8, sources: {}, layers: [] }, 5), false);
  });
});
