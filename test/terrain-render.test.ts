// Relief rendered on the server by MapLibre in headless Chromium, from this server's own elevation sources: a
// style with color-relief and hillshade layers over a raster-dem source (tiles, static maps, social cards), the
// generated style of an elevation source (MapLibre's hillshade under this server's contour lines), and a style
// with `terrain` drawn pitched in 3D. Goldens: `make goldens` rewrites test/goldens/render/terrain-*.png.
import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import pixelmatch from 'pixelmatch';
import { decode, distance, fetchBytes, golden, pixel, renderTempDir, share, type Decoded, type Rgb } from './helpers/render.js';
import { fixture, startServer, type TestServer } from './helpers/server.js';

const HILL = { lon: 10.05, lat: 46.55 };

let server: TestServer;

async function image(p: string): Promise<Decoded> {
  const r = await fetchBytes(server.url + p);
  assert.equal(r.status, 200, `${p}: ${r.body.toString().slice(0, 300)}`);
  assert.equal(r.headers.get('content-type'), 'image/png');
  return decode(r.body);
}

function tileOf(lon: number, lat: number, z: number) {
  const n = 2 ** z;
  const r = (lat * Math.PI) / 180;
  return { x: Math.floor(((lon + 180) / 360) * n), y: Math.floor(((1 - Math.log(Math.tan(r) + 1 / Math.cos(r)) / Math.PI) / 2) * n) };
}

const near = (want: Rgb, tolerance: number) => (c: Rgb) => distance(c, want) <= tolerance;

before(async () => {
  const styles = fixture('styles/relief');
  server = await startServer({
    toml: `
fonts = "${fixture('fonts')}"

[[sources]]
id = "hill"
type = "cog"
path = "${fixture('dem/hill.cog.tif')}"
dem = { encoding = "mapbox" }

[[sources]]
id = "hill-pm"
type = "pmtiles"
path = "${fixture('dem/hill-terrarium.pmtiles')}"
dem = { encoding = "terrarium" }

[[styles]]
id = "relief"
path = "${path.join(styles, 'style.json')}"

[[styles]]
id = "terrain"
path = "${path.join(styles, 'terrain.json')}"

[[styles]]
id = "flat"
path = "${path.join(styles, 'flat.json')}"

[cache]
dir = "${renderTempDir()}"

[render]
pool_size = 1
`,
    timeoutMs: 90_000,
  });
});

after(async () => {
  await server?.stop();
});

describe('relief rendered by MapLibre from elevation sources', () => {
  test('color-relief and hillshade in a raster tile: the peak in its colour, the plateau in its own', async () => {
    const t = tileOf(HILL.lon, HILL.lat, 11);
    const img = await image(`/styles/relief/11/${t.x}/${t.y}.png`);
    // The plateau (400 m) is green, the summit (1900 m) near white; the shading darkens or lightens them a little.
    assert.ok(share(img, near([74, 140, 60], 60)) > 0.05, 'plateau green');
    assert.ok(share(img, (c) => c[0] > 200 && c[1] > 200 && c[2] > 200) > 0.001, 'a summit near white');
    // Relief is shaded: one colour band holds many shades.
    assert.ok(new Set(Array.from({ length: 64 }, (_, i) => pixel(img, 128 + i, 128).join(','))).size > 8, 'shading varies across the slope');
    await golden('terrain-relief-z11', img);
  });

  test('the same relief in a static map and a social card', async () => {
    const stat = await image(`/styles/relief/static/${HILL.lon},${HILL.lat},11/400x300.png`);
    assert.equal(stat.width, 400);
    assert.ok(share(stat, near([74, 140, 60], 60)) > 0.05, 'plateau green');
    await golden('terrain-relief-static', stat);
    const card = await image(`/og/relief?center=${HILL.lat},${HILL.lon}&zoom=10&width=600&height=315`);
    assert.equal(card.width, 600);
    assert.ok(share(card, near([74, 140, 60], 60)) > 0.02, 'plateau green in the card');
  });

  test("an elevation source's generated style: MapLibre's hillshade under this server's contour lines", async () => {
    const t = tileOf(HILL.lon, HILL.lat, 12);
    const img = await image(`/styles/hill/12/${t.x}/${t.y}.png`);
    // Contour lines are brown (#7a5a36 / #8a6d4b over the shaded background).
    const brown = share(img, (c) => c[0] - c[2] > 40 && c[0] < 200 && c[1] < 170);
    assert.ok(brown > 0.005, `contour lines drawn (${(brown * 100).toFixed(2)}% brown)`);
    await golden('terrain-generated-z12', img);
  });

  test('a style with terrain draws the pitched map in 3D: not the flat pitched map', async () => {
    const view = `${HILL.lon},${HILL.lat},11.5@20,60/600x400.png`;
    const raised = await image(`/styles/terrain/static/${view}`);
    const flat = await image(`/styles/flat/static/${view}`);
    const diff = pixelmatch(raised.data, flat.data, undefined, 600, 400, { threshold: 0.1 });
    assert.ok(diff > 600 * 400 * 0.05, `terrain moves the relief: ${diff} pixels differ from the flat map`);
    await golden('terrain-3d-static', raised);
  });
});
