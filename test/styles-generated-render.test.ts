// Generated styles are styles everywhere: with no [[styles]] configured at all, a vector source's generated style
// renders through every render route (raster tiles, static maps, social cards) and has a WMTS document and a
// raster TileJSON whose tile URLs render, in real headless Chromium; the browsers start with the first render
// request. A raster source and an unknown id stay 404.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { tempDir } from './helpers/foundation.js';
import { chromiumDescendants, decode, distance, distinctColors, fetchBytes, fetchImage, tilePixel, type Decoded } from './helpers/render.js';
import { fixture, startServer, type TestServer } from './helpers/server.js';

let server: TestServer;

const get = (p: string, headers: Record<string, string> = {}) => fetchBytes(server.url + p, headers);
const image = (p: string, type = 'image/png') => fetchImage(server.url + p, type);

const rgba = (img: Decoded, x: number, y: number) => {
  const i = (Math.floor(y) * img.width + Math.floor(x)) * 4;
  return [img.data[i], img.data[i + 1], img.data[i + 2], img.data[i + 3]] as const;
};

describe('generated styles through the render routes (no configured styles)', () => {
  before(async () => {
    server = await startServer({
      toml: `[[sources]]
id = "planet"
type = "pmtiles"
path = "${fixture('vector/omt-planet-z0-1.pmtiles')}"
[[sources]]
id = "shaded"
type = "pmtiles"
path = "${fixture('raster/natural-earth-png-z0-1.pmtiles')}"
[render]
pool_size = 1
[cache]
dir = "${tempDir('tsts-generated-render-')}"
`,
      workers: 1,
    });
  });
  after(() => server?.stop());

  const ping = async () => (await (await fetch(`${server.url}/ping`)).json()) as { renderer_enabled: boolean; renderer_state: string; loaded_styles: number };

  test('with no configured style the renderer starts with the first render request, not before', async () => {
    // Give a renderer that would start at once the time to show up.
    await new Promise((r) => setTimeout(r, 1500));
    // Rendering works before the first request: /ping says so (enabled, idle) though no browser runs yet.
    const before = await ping();
    assert.deepEqual([before.renderer_enabled, before.renderer_state], [true, 'idle']);
    assert.deepEqual(chromiumDescendants(server.proc.pid!), [], 'no browser before a render is asked for');
    // A fresh cache directory: this render cannot come from an earlier run's disk cache.
    const first = await get('/styles/planet/0/0/0.png');
    assert.equal(first.status, 200, first.body.toString().slice(0, 300));
    const after = await ping();
    assert.deepEqual([after.renderer_enabled, after.renderer_state], [true, 'ready']);
    assert.equal(after.loaded_styles, 0);
  });

  test('a raster tile of the generated style draws the source\'s polygons: the oceans in one fill colour', async () => {
    const img = await image('/styles/planet/0/0/0.png');
    assert.deepEqual([img.width, img.height], [512, 512]);
    const oceans = [[-150, 0], [-35, 30], [75, -20]].map(([lon, lat]) => rgba(img, ...tilePixel(0, 0, 0, lon, lat)));
    for (const o of oceans) {
      // Generated fills are 35% opaque over a transparent map: partly transparent, not empty.
      assert.ok(o[3] > 40 && o[3] < 140, `ocean alpha ${o[3]}`);
      assert.ok(distance([o[0], o[1], o[2]], [oceans[0][0], oceans[0][1], oceans[0][2]]) <= 3, `oceans differ: ${oceans.join(' / ')}`);
    }
    const sahara = rgba(img, ...tilePixel(0, 0, 0, 15, 22));
    assert.ok(sahara[3] < 40 || distance([sahara[0], sahara[1], sahara[2]], [oceans[0][0], oceans[0][1], oceans[0][2]]) > 20, `land drawn like water: ${sahara}`);
  });

  test('256 px and @2x tiles, static maps and social cards of the generated style', async () => {
    const small = await image('/styles/planet/256/1/0/0.png');
    assert.deepEqual([small.width, small.height], [256, 256]);
    const retina = await image('/styles/planet/1/1/0@2x.png');
    assert.deepEqual([retina.width, retina.height], [1024, 1024]);
    const map = await image('/styles/planet/static/0,20,1/400x300.png');
    assert.deepEqual([map.width, map.height], [400, 300]);
    assert.ok(distinctColors(map) >= 2, 'the static map is not one flat colour');
    const card = await image('/og/planet?center=20,0&zoom=1&width=300&height=160');
    assert.deepEqual([card.width, card.height], [300, 160]);
    assert.ok(distinctColors(card) >= 2, 'the card is not one flat colour');
  });

  test('the raster TileJSON of the generated style points at tiles that render', async () => {
    const r = await get('/styles/planet.json');
    assert.equal(r.status, 200, r.body.toString());
    const tj = JSON.parse(r.body.toString()) as { tiles: string[]; format?: string; minzoom: number; maxzoom: number };
    assert.equal(tj.tiles.length, 1);
    assert.match(tj.tiles[0], /\/styles\/planet\/(256\/)?\{z\}\/\{x\}\/\{y\}(@2x)?\.png/);
    const url = new URL(tj.tiles[0].replace('{z}', '1').replace('{x}', '1').replace('{y}', '1'));
    const img = await image(url.pathname + url.search);
    assert.ok(img.width === 256 || img.width === 512);
  });

  test('WMTS capabilities of the generated style name its tile URL template, which renders', async () => {
    const r = await get('/styles/planet/wmts.xml');
    assert.equal(r.status, 200, r.body.toString());
    assert.match(r.headers.get('content-type') ?? '', /xml/);
    const xml = r.body.toString();
    const template = /template="([^"]+)"/.exec(xml)?.[1];
    assert.ok(template, 'a ResourceURL template');
    assert.match(template, /\/styles\/planet\//);
    const path = new URL(template.replace(/&amp;/g, '&').replace('{TileMatrix}', '1').replace('{TileCol}', '0').replace('{TileRow}', '1')).pathname;
    await image(path);
  });

  test('a raster source has no generated style, and an unknown id no style: 404 problems on every route', async () => {
    for (const p of ['/styles/shaded/0/0/0.png', '/styles/shaded/static/0,0,0/100x100.png', '/og/shaded', '/styles/shaded.json', '/styles/shaded/wmts.xml', '/styles/nothing/0/0/0.png', '/og/nothing']) {
      const r = await get(p);
      assert.equal(r.status, 404, p);
      assert.equal(r.headers.get('content-type'), 'application/problem+json', p);
      assert.match(JSON.parse(r.body.toString()).detail as string, /no style with id/, p);
    }
  });
});
