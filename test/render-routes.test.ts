// Rendering through the real server in real headless Chromium: raster tiles of the OSM Liberty showcase style
// over OpenMapTiles data (z0, z1 and the z14 Paris tile), sizes, formats, static maps with every overlay kind,
// social cards, every 400 case, caching headers, golden images, and recovery from a killed browser.
// Goldens: `make goldens` (UPDATE_GOLDENS=1) rewrites test/goldens/render/*.png from this machine's renders.
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import pixelmatch from 'pixelmatch';
import sharp from 'sharp';
import { waitFor } from './helpers/foundation.js';
import {
  golden,
  browserPids,
  buildOmtArchive,
  decode,
  distance,
  distinctColors,
  dominantColor,
  fetchBytes,
  fetchImage,
  PARIS,
  pixel,
  renderTempDir,
  renderToml,
  share,
  tilePixel,
  WATER,
  type Decoded,
  type Rgb,
} from './helpers/render.js';
import { startServer, type TestServer } from './helpers/server.js';


let server: TestServer;
let archive: string;
let cacheDir: string;

const get = (p: string, headers: Record<string, string> = {}) => fetchBytes(server.url + p, headers);
const image = (p: string, type = 'image/png') => fetchImage(server.url + p, type);

async function problem(p: string, status: number): Promise<Record<string, unknown>> {
  const r = await get(p);
  assert.equal(r.status, status, `${p}: ${r.body.toString().slice(0, 300)}`);
  assert.equal(r.headers.get('content-type'), 'application/problem+json');
  return JSON.parse(r.body.toString()) as Record<string, unknown>;
}

describe('rendering through the server (headless Chromium)', () => {
  before(async () => {
    const dir = renderTempDir();
    archive = await buildOmtArchive(dir);
    cacheDir = path.join(dir, 'cache');
    server = await startServer({ toml: renderToml(archive, cacheDir, 'pool_size = 1\nmetatile = 2'), workers: 1 });
    // The renderer starts in the background; /ping says when it is ready and which backend it is.
    await waitFor('renderer', async () => ((await (await fetch(`${server.url}/ping`)).json()) as { renderer_enabled: boolean }).renderer_enabled || undefined, 90_000);
  });
  after(async () => {
    await server?.stop();
  });

  test('/ping names the chromium backend', async () => {
    const ping = (await (await fetch(`${server.url}/ping`)).json()) as Record<string, unknown>;
    assert.equal(ping.renderer_enabled, true);
    assert.equal(ping.renderer, 'chromium');
    assert.equal(ping.render_enabled, true);
  });

  test('z0 tile shows water and land where the world has them', async () => {
    const r = await get('/styles/osm-liberty/0/0/0.png');
    assert.equal(r.status, 200);
    assert.match(r.headers.get('etag') ?? '', /^"[^"]+"$/);
    assert.equal(r.headers.get('cache-control'), 'public, max-age=86400');
    const img = await decode(r.body);
    assert.deepEqual([img.width, img.height], [512, 512]);
    for (const [lon, lat] of [[-150, 0], [-35, 30], [75, -20]]) {
      const c = pixel(img, ...tilePixel(0, 0, 0, lon, lat));
      assert.ok(distance(c, WATER) <= 3, `ocean at ${lon},${lat} is ${c}`);
    }
    for (const [lon, lat] of [[15, 22], [-55, -10], [100, 62], [134, -25]]) {
      const c = pixel(img, ...tilePixel(0, 0, 0, lon, lat));
      assert.ok(distance(c, WATER) > 40, `land at ${lon},${lat} is drawn as water (${c})`);
    }
    assert.ok(distinctColors(img) > 1000, 'the tile shows a map, not a flat colour');
    // The map is opaque: its PNG is written without an alpha channel.
    assert.equal((await sharp(r.body).metadata()).channels, 3);
    await golden('z0', r.body);
  });

  test('z1 tiles of a metatile: both render, the second from the cache', async () => {
    const a = await get('/styles/osm-liberty/1/1/0.png');
    const b = await get('/styles/osm-liberty/1/0/0.png');
    assert.equal(a.status, 200);
    assert.equal(b.status, 200);
    // Europe/Africa (1/1/0 holds the north-east quarter): the Mediterranean is water, the Sahara is not.
    const img = await decode(a.body);
    assert.ok(distance(pixel(img, ...tilePixel(1, 1, 0, 18, 34.5)), WATER) <= 3, 'Mediterranean');
    assert.ok(distance(pixel(img, ...tilePixel(1, 1, 0, 10, 25)), WATER) > 40, 'Sahara');
    assert.match(b.headers.get('server-timing') ?? '', /cache/, 'the sibling of a metatile comes from the cache');
    // All four tiles of the z1 metatile are on disk, where every worker process finds them.
    const onDisk = readdirSync(cacheDir, { recursive: true, encoding: 'utf8' }).filter((f) => /osm-liberty\/[0-9a-f]+\/512@1x\/1\/[01]\/[01]\.png$/.test(f));
    assert.equal(onDisk.length, 4, onDisk.join(', '));
  });

  test('the z14 Paris tile shows a dense city', async () => {
    const r = await get(`/styles/osm-liberty/${PARIS.z}/${PARIS.x}/${PARIS.y}.png`);
    assert.equal(r.status, 200, r.body.toString().slice(0, 300));
    const img = await decode(r.body);
    assert.deepEqual([img.width, img.height], [512, 512]);
    assert.ok(distinctColors(img) > 1000);
    // OSM Liberty: major roads are yellow (#ffeeaa family), minor streets white.
    assert.ok(share(img, ([r, g, b]) => r > 230 && g > 190 && b < 175) > 0.005, 'yellow major roads');
    assert.ok(share(img, ([r, g, b]) => r > 250 && g > 250 && b > 250) > 0.01, 'white streets');
    await golden('paris-z14', r.body);
  });

  test('flat extrusions (pitch 0) colour roofs as MapLibre lights the real extrusions (pitch 1)', async () => {
    // Central Paris is mostly building roofs in OSM Liberty at z14: the most frequent colour is a roof.
    const [x, y] = [PARIS.x + 0.5, PARIS.y + 0.5].map((v, i) => (i === 0 ? (v / 2 ** 14) * 360 - 180 : (Math.atan(Math.sinh(Math.PI * (1 - (2 * v) / 2 ** 14))) * 180) / Math.PI));
    const flat = await image(`/styles/osm-liberty/static/${x},${y},14/256x256.png`);
    const real = await image(`/styles/osm-liberty/static/${x},${y},14@0,1/256x256.png`);
    assert.ok(distance(dominantColor(flat), dominantColor(real)) <= 1, `flat ${dominantColor(flat)}, extruded ${dominantColor(real)}`);
  });

  test('tile sizes: 512 base, 256 base (same area) and @2x/@3x scales', async () => {
    assert.deepEqual(await dims('/styles/osm-liberty/0/0/0@2x.png'), [1024, 1024]);
    assert.deepEqual(await dims('/styles/osm-liberty/512/0/0/0.png'), [512, 512]);
    assert.deepEqual(await dims('/styles/osm-liberty/256/1/0/1@3x.png'), [768, 768]);
    const small = await image('/styles/osm-liberty/256/0/0/0.png');
    assert.deepEqual([small.width, small.height], [256, 256]);
    // The 256 px z0 tile covers the whole world, as the 512 px one does.
    assert.ok(distance(pixel(small, ...tilePixel(0, 0, 0, -150, 0, 256)), WATER) <= 3);
    assert.ok(distance(pixel(small, ...tilePixel(0, 0, 0, 15, 22, 256)), WATER) > 40);
  });

  test('jpeg and webp tiles', async () => {
    const jpg = await image('/styles/osm-liberty/1/0/1.jpg', 'image/jpeg');
    assert.deepEqual([jpg.width, jpg.height], [512, 512]);
    const webp = await image('/styles/osm-liberty/1/0/1.webp', 'image/webp');
    assert.deepEqual([webp.width, webp.height], [512, 512]);
    assert.ok(distance(pixel(webp, ...tilePixel(1, 0, 1, -120, -30)), WATER) <= 12, 'south Pacific');
  });

  test('ETag and If-None-Match give 304; HEAD answers like GET', async () => {
    const a = await get('/styles/osm-liberty/0/0/0.png');
    const etag = a.headers.get('etag')!;
    const b = await get('/styles/osm-liberty/0/0/0.png', { 'If-None-Match': etag });
    assert.equal(b.status, 304);
    const head = await fetch(`${server.url}/styles/osm-liberty/0/0/0.png`, { method: 'HEAD' });
    assert.equal(head.status, 200);
    assert.equal(head.headers.get('content-type'), 'image/png');
  });

  test('static map, centre view: marker, path and polygon drawn where their coordinates are', async () => {
    const p =
      '/styles/osm-liberty/static/0,20,2/800x600.png' +
      '?marker=pin-m+f00(10,30)' +
      '&path=path-6+00ff00(-60,-10|-20,-10)' +
      '&path=path-2+000-ff00ff(30,0|50,0|50,15|30,15)';
    const img = await image(p);
    assert.deepEqual([img.width, img.height], [800, 600]);
    const cam = { center: [0, 20] as [number, number], zoom: 2, width: 800, height: 600 };
    const at = (lon: number, lat: number) => screenOf(cam, lon, lat);
    assertColor(img, at(10, 30), [255, 0, 0], 'the red pin at its anchor');
    assertColor(img, at(-40, -10), [0, 255, 0], 'the green path along its segment');
    assertColor(img, at(40, 7), [255, 0, 255], 'the magenta polygon fill inside it');
    await golden('static-overlays', await (await fetch(server.url + p)).arrayBuffer().then(Buffer.from));
  });

  test('static map @2x, bearing: the marker is still at its anchor', async () => {
    const img = await image('/styles/osm-liberty/static/0,0,1@90/400x300@2x.png?marker=pin-l+0000ff(20,0)');
    assert.deepEqual([img.width, img.height], [800, 600]);
    // Bearing 90: east is up. A point 20 degrees east of the centre is above it.
    const dy = (20 / 360) * 512 * 2; // pixels at zoom 1
    assertColor(img, [200 * 2, (150 - dy) * 2], [0, 0, 255], 'the blue pin east of the centre, drawn above it');
  });

  test('static map, bounding box and latlng=true', async () => {
    // The box -20,-10,40,50 outlined by a 4 px magenta path, fitted exactly (no padding) into 600x400.
    const a = await image('/styles/osm-liberty/static/-20,-10,40,50/600x400.png?path=path-4+ff00ff(-20,-10|40,-10|40,50|-20,50|-20,-10)');
    assert.deepEqual([a.width, a.height], [600, 400]);
    // Where the box must land, by hand in Web Mercator (512 px world at zoom 0): its span is 85.3 x 96.7 px, so
    // its height fills the 400 px (scale 4.14) and its width, 353 px, is centred: x 123.4..476.6.
    const mx = (lon: number) => ((lon + 180) / 360) * 512;
    const my = (lat: number) => ((1 - Math.log(Math.tan(Math.PI / 4 + (lat * Math.PI) / 360)) / Math.PI) / 2) * 512;
    const scale = Math.min(600 / (mx(40) - mx(-20)), 400 / (my(-10) - my(50)));
    const at = (lon: number, lat: number): [number, number] => [300 + (mx(lon) - (mx(-20) + mx(40)) / 2) * scale, 200 + (my(lat) - (my(50) + my(-10)) / 2) * scale];
    const [west, north] = at(-20, 50);
    const [east, south] = at(40, -10);
    assert.ok(Math.abs(north) < 0.01 && Math.abs(south - 400) < 0.01 && Math.abs(west - 123.4) < 0.5 && Math.abs(east - 476.6) < 0.5, 'hand computation');
    const magenta: Rgb = [255, 0, 255];
    const isMagenta = (xy: [number, number]) => distance(pixel(a, Math.round(xy[0]), Math.round(xy[1])), magenta) <= 40;
    // The four corners (just inside the frame, where the top and bottom edges are half cut by it) and the middle
    // of each side are on the outline; a few pixels to either side of the west and east edges are not.
    for (const [x, y] of [[west, 1], [east, 1], [west, 398], [east, 398], [west, 200], [east, 200], [300, 0], [300, 399]] as [number, number][]) {
      assertColor(a, [Math.round(x), y], magenta, `the box outline at ${Math.round(x)},${y}`);
    }
    for (const x of [west - 8, west + 8, east - 8, east + 8]) assert.ok(!isMagenta([x, 200]), `no outline at ${Math.round(x)},200`);
    // And the map under it is the same place. At this zoom the style draws the sea a light grey (measured once:
    // 247,246,247) under the Natural Earth relief: the Atlantic off Liberia, the Ionian Sea and the Gulf of
    // Guinea are sea; the Sahara, the Congo basin and the Sahel are land.
    const SEA: Rgb = [247, 246, 247];
    const probe = (lon: number, lat: number) => pixel(a, ...(at(lon, lat).map(Math.round) as [number, number]));
    for (const [lon, lat] of [[-15, 3], [18, 34], [5, 0]]) assert.ok(distance(probe(lon, lat), SEA) <= 6, `sea at ${lon},${lat} is ${probe(lon, lat)}`);
    for (const [lon, lat] of [[10, 25], [25, 0], [0, 10]]) assert.ok(distance(probe(lon, lat), SEA) > 15, `land at ${lon},${lat} is drawn as sea (${probe(lon, lat)})`);
    const b = await image('/styles/osm-liberty/static/20,10,2/300x200.png?latlng=true&marker=pin-s+f00(20,10)');
    assertColor(b, [150, 100], [255, 0, 0], 'latlng=true: the pin at lat 20, lng 10 is the centre');
  });

  test('static map, auto: fitted to the overlays (markers and GeoJSON)', async () => {
    const geo = encodeURIComponent(
      JSON.stringify({
        type: 'FeatureCollection',
        features: [
          { type: 'Feature', properties: { fill: '#00ffff', stroke: '#000000' }, geometry: { type: 'Polygon', coordinates: [[[0, 0], [30, 0], [30, 20], [0, 20], [0, 0]]] } },
          { type: 'Feature', properties: { 'marker-color': '#ff00ff', 'marker-size': 'large' }, geometry: { type: 'Point', coordinates: [-40, -20] } },
        ],
      }),
    );
    const img = await image(`/styles/osm-liberty/static/auto/600x400.png?geojson=${geo}&padding=0.1`);
    // The polygon's fill and the GeoJSON point both made it into the fitted frame.
    assert.ok(share(img, (c) => distance(c, [0, 255, 255]) <= 8) > 0.05, 'cyan polygon fill');
    assert.ok(share(img, (c) => distance(c, [255, 0, 255]) <= 8) > 0.0003, 'magenta GeoJSON point');
  });

  test('social card: 1200x630 by default, size and format options', async () => {
    const a = await image('/og/osm-liberty?center=48.85,2.35');
    assert.deepEqual([a.width, a.height], [1200, 630]);
    const b = await image('/og/osm-liberty?bounds=-10,35,30,60&width=600&height=315&format=jpg', 'image/jpeg');
    assert.deepEqual([b.width, b.height], [600, 315]);
    // The test archive has planet tiles at z0-1 only (and Paris at z14): zoom 1 shows the ocean.
    const c = await image('/og/osm-liberty?center=0,-150&zoom=1&width=64&height=64&format=webp', 'image/webp');
    assert.ok(distance(pixel(c, 32, 32), WATER) <= 12, 'the Pacific at the centre');
  });

  test('400 for bad coordinates, dimensions, scale, format and overlay syntax, naming the bad part', async () => {
    const cases: [string, string][] = [
      ['/styles/osm-liberty/23/0/0.png', 'z/x/y'],
      ['/styles/osm-liberty/1/2/0.png', 'z/x/y'],
      ['/styles/osm-liberty/a/0/0.png', 'z/x/y'],
      ['/styles/osm-liberty/0/0/0@4x.png', 'scale'],
      ['/styles/osm-liberty/0/0/0@0x.png', 'scale'],
      ['/styles/osm-liberty/0/0/0.gif', 'format'],
      ['/styles/osm-liberty/300/0/0/0.png', 'tile_size'],
      ['/styles/osm-liberty/static/0,0,2/0x100.png', 'width'],
      ['/styles/osm-liberty/static/0,0,2/100x4097.png', 'height'],
      ['/styles/osm-liberty/static/0,0,2/100x100@4x.png', 'scale'],
      ['/styles/osm-liberty/static/0,0,2/100x100.gif', 'format'],
      ['/styles/osm-liberty/static/0,0,2/100by100.png', 'size'],
      ['/styles/osm-liberty/static/200,0,2/100x100.png', 'view'],
      ['/styles/osm-liberty/static/0,89,2/100x100.png', 'view'],
      ['/styles/osm-liberty/static/0,0,23/100x100.png', 'view'],
      ['/styles/osm-liberty/static/0,0,2@10,90/100x100.png', 'view'],
      ['/styles/osm-liberty/static/10,10,20,0/100x100.png', 'view'],
      ['/styles/osm-liberty/static/1,2/100x100.png', 'view'],
      ['/styles/osm-liberty/static/auto/100x100.png', 'view'],
      ['/styles/osm-liberty/static/0,0,2/100x100.png?marker=pin-x+f00(0,0)', 'marker'],
      ['/styles/osm-liberty/static/0,0,2/100x100.png?marker=pin-s+ff(0,0)', 'marker'],
      ['/styles/osm-liberty/static/0,0,2/100x100.png?marker=pin-s-ab+f00(0,0)', 'marker'],
      ['/styles/osm-liberty/static/0,0,2/100x100.png?path=path-5+f00(0,0)', 'path'],
      ['/styles/osm-liberty/static/0,0,2/100x100.png?path=path-0+f00(0,0|1,1)', 'path'],
      ['/styles/osm-liberty/static/0,0,2/100x100.png?path=path-5+f00(0,0|1,91)', 'path'],
      ['/styles/osm-liberty/static/0,0,2/100x100.png?path=path-5+f00(0,0|1,1)~', 'path'],
      ['/styles/osm-liberty/static/0,0,2/100x100.png?geojson=%7Bnot%20json', 'geojson'],
      ['/styles/osm-liberty/static/0,0,2/100x100.png?geojson=%7B%22type%22%3A%22Circle%22%7D', 'geojson'],
      ['/styles/osm-liberty/static/0,0,2/100x100.png?padding=0.7', 'padding'],
      ['/styles/osm-liberty/static/0,0,2/100x100.png?latlng=maybe', 'latlng'],
      ['/og/osm-liberty', 'center'],
      ['/og/osm-liberty?center=95,0', 'center'],
      ['/og/osm-liberty?center=10,10&zoom=30', 'zoom'],
      ['/og/osm-liberty?center=10,10&width=5000', 'width'],
      ['/og/osm-liberty?center=10,10&format=gif', 'format'],
      ['/og/osm-liberty?bounds=1,2,3', 'bounds'],
    ];
    for (const [p, part] of cases) {
      const body = await problem(p, 400);
      assert.equal(body.parameter, part, `${p}: ${JSON.stringify(body)}`);
      assert.equal(typeof body.detail, 'string');
    }
  });

  test('"+" decoded to a space in path and marker values is read as "+"', async () => {
    const a = await get('/styles/osm-liberty/static/0,0,1/60x60.png?marker=pin-s+f00(0,0)');
    const b = await get('/styles/osm-liberty/static/0,0,1/60x60.png?marker=pin-s%2Bf00(0,0)');
    const c = await get('/styles/osm-liberty/static/0,0,1/60x60.png?marker=pin-s%20f00(0,0)');
    for (const r of [a, b, c]) assert.equal(r.status, 200);
    const [ia, ib, ic] = await Promise.all([a, b, c].map((r) => decode(r.body)));
    for (const other of [ib, ic]) assert.equal(pixelmatch(ia.data, other.data, undefined, ia.width, ia.height, { threshold: 0.05 }), 0);
    assert.ok(share(ia, (px) => distance(px, [255, 0, 0]) <= 10) > 0.01, 'the red pin is drawn');
  });

  test('404 for an unknown style on every render route', async () => {
    await problem('/styles/nope/0/0/0.png', 404);
    await problem('/styles/nope/256/0/0/0.png', 404);
    await problem('/styles/nope/static/0,0,1/10x10.png', 404);
    await problem('/og/nope?center=0,0', 404);
  });

  test('the style routes of the styles module are not shadowed', async () => {
    assert.equal((await get('/styles/osm-liberty/style.json')).status, 200);
    assert.equal((await get('/styles/osm-liberty.json')).status, 200);
    assert.equal((await get('/styles/osm-liberty/sprite.json')).status, 200);
  });

  test('a killed Chromium is replaced and rendering goes on', async () => {
    const before = browserPids(server.proc.pid!);
    assert.ok(before.length >= 1, 'the server runs a browser');
    for (const pid of before) process.kill(-pid, 'SIGKILL');
    const r = await get('/styles/osm-liberty/static/30,30,3/300x200.png');
    assert.equal(r.status, 200, r.body.toString().slice(0, 300));
    const now = browserPids(server.proc.pid!);
    assert.ok(now.length >= 1 && now.every((p) => !before.includes(p)), `a new browser runs (${before} -> ${now})`);
  });
});

async function dims(p: string): Promise<[number, number]> {
  const img = await image(p);
  return [img.width, img.height];
}

/** Screen position of a point in a north-up, unpitched frame (Web Mercator, 512 px world at zoom 0). */
function screenOf(cam: { center: [number, number]; zoom: number; width: number; height: number }, lon: number, lat: number): [number, number] {
  const world = 512 * 2 ** cam.zoom;
  const y = (l: number) => ((1 - Math.log(Math.tan(Math.PI / 4 + (l * Math.PI) / 360)) / Math.PI) / 2) * world;
  return [cam.width / 2 + ((lon - cam.center[0]) / 360) * world, cam.height / 2 + y(lat) - y(cam.center[1])];
}

function assertColor(img: Decoded, at: [number, number], want: Rgb, what: string): void {
  const c = pixel(img, at[0], at[1]);
  assert.ok(distance(c, want) <= 10, `${what}: pixel ${at.map(Math.round)} is ${c}, expected ${want}`);
}
