// The `geojson` overlay of static maps beyond one polygon and a point: LineString, MultiLineString, Polygon,
// MultiPolygon, Point and MultiPoint, each simplestyle property set and left at its default (stroke #0000ff,
// stroke-width 3, stroke-opacity 1, fill none, fill-opacity 1, marker-color #ff0000, marker-size medium 12 px,
// small 8, large 18, a number). Drawn over a plain grey style, so every probe's colour is computed by hand:
// the overlay colour, or its blend with the grey. Positions are chosen in image pixels and turned into
// longitude/latitude here with the Web Mercator formulas (zoom 1, 512 px image centred on 0,0).
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { waitFor } from './helpers/foundation.js';
import { decode, distance, pixel, type Decoded, type Rgb } from './helpers/render.js';
import { startServer, type TestServer } from './helpers/server.js';

const GREY: Rgb = [128, 128, 128];
/** Zoom 1: a 1024 px world; the 512 px image shows its middle half. */
const WORLD = 1024;
const SIZE = 512;

/** Longitude, latitude of an image pixel position (not a pixel centre: a point on the pixel grid). */
function lonLat(px: number, py: number): [number, number] {
  const wx = WORLD / 2 + (px - SIZE / 2);
  const wy = WORLD / 2 + (py - SIZE / 2);
  const lon = (wx / WORLD) * 360 - 180;
  const lat = (Math.atan(Math.sinh(Math.PI * (1 - (2 * wy) / WORLD))) * 180) / Math.PI;
  return [lon, lat];
}
const line = (pts: [number, number][]) => pts.map(([x, y]) => lonLat(x, y));
const square = (x0: number, y0: number, x1: number, y1: number) => [line([[x0, y0], [x1, y0], [x1, y1], [x0, y1], [x0, y0]])];
/** `a` drawn with opacity `alpha` over `b`. */
const over = (a: Rgb, alpha: number, b: Rgb): Rgb => [0, 1, 2].map((i) => a[i] * alpha + b[i] * (1 - alpha)) as Rgb;

const feature = (geometry: object, properties: object = {}) => ({ type: 'Feature', properties, geometry });
const OVERLAY = {
  type: 'FeatureCollection',
  features: [
    // Defaults: stroke blue, width 3 (rows 59 and 60 fully covered around y = 60), opacity 1.
    feature({ type: 'LineString', coordinates: line([[40, 60], [200, 60]]) }),
    // Width 9 around y = 100 and y = 140 (rows 96..103 and 136..143), green at half opacity.
    feature({ type: 'MultiLineString', coordinates: [line([[40, 100], [200, 100]]), line([[40, 140], [200, 140]])] }, { stroke: '#00ff00', 'stroke-width': 9, 'stroke-opacity': 0.5 }),
    // Default polygon: blue outline, no fill.
    feature({ type: 'Polygon', coordinates: square(260, 40, 340, 120) }),
    // Two squares filled red at a quarter opacity, a 2 px yellow outline (rows 39 and 40 around y = 40).
    feature({ type: 'MultiPolygon', coordinates: [square(360, 40, 420, 100), square(430, 40, 490, 100)] }, { fill: '#ff0000', 'fill-opacity': 0.25, stroke: '#ffff00', 'stroke-width': 2 }),
    // A fill without fill-opacity: opaque.
    feature({ type: 'Polygon', coordinates: square(60, 380, 140, 460) }, { fill: '#00ff00' }),
    // Default marker: red, medium (12 px: radius 6 with a 1 px white ring at 5.5..6.5).
    feature({ type: 'Point', coordinates: lonLat(100, 300) }),
    // Large (18 px: radius 9) cyan markers.
    feature({ type: 'MultiPoint', coordinates: [lonLat(200, 300), lonLat(260, 300)] }, { 'marker-color': '#00ffff', 'marker-size': 'large' }),
    // 30 px magenta marker.
    feature({ type: 'Point', coordinates: lonLat(350, 300) }, { 'marker-color': '#ff00ff', 'marker-size': 30 }),
    // Small (8 px: radius 4) marker.
    feature({ type: 'Point', coordinates: lonLat(440, 300) }, { 'marker-size': 'small' }),
  ],
};

/** [x, y, expected colour, what]: pixels whose centre lies well inside or well outside a shape. */
const PROBES: [number, number, Rgb, string][] = [
  [120, 59, [0, 0, 255], 'LineString: default stroke colour'],
  [120, 60, [0, 0, 255], 'LineString: default width covers row 60'],
  [120, 56, GREY, 'LineString: default width is not wider than 3'],
  [120, 63, GREY, 'LineString: below the line'],
  [120, 97, over([0, 255, 0], 0.5, GREY), 'MultiLineString: stroke, stroke-opacity'],
  [120, 102, over([0, 255, 0], 0.5, GREY), 'MultiLineString: stroke-width 9'],
  [120, 137, over([0, 255, 0], 0.5, GREY), 'MultiLineString: second line'],
  [120, 120, GREY, 'MultiLineString: between the lines'],
  [300, 40, [0, 0, 255], 'Polygon: default stroke'],
  [300, 80, GREY, 'Polygon: no fill by default'],
  [390, 70, over([255, 0, 0], 0.25, GREY), 'MultiPolygon: fill, fill-opacity (first)'],
  [460, 70, over([255, 0, 0], 0.25, GREY), 'MultiPolygon: second polygon'],
  [425, 70, GREY, 'MultiPolygon: between the polygons'],
  [390, 40, [255, 255, 0], 'MultiPolygon: stroke colour'],
  [100, 420, [0, 255, 0], 'Polygon: fill-opacity 1 by default'],
  [100, 300, [255, 0, 0], 'Point: default marker colour'],
  [104, 300, [255, 0, 0], 'Point: medium by default (radius 6 reaches 4.5 px)'],
  [108, 300, GREY, 'Point: not larger than medium'],
  [207, 300, [0, 255, 255], 'MultiPoint: large (radius 9 reaches 7.5 px)'],
  [267, 300, [0, 255, 255], 'MultiPoint: second point'],
  [230, 300, GREY, 'MultiPoint: between the points'],
  [362, 300, [255, 0, 255], 'Point: marker-size 30 (radius 15 reaches 12.5 px)'],
  [441, 300, [255, 0, 0], 'Point: small'],
  [445, 300, GREY, 'Point: small is radius 4 (no red or white ring at 5.5 px)'],
];

let server: TestServer;

before(async () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'tsts-render-geojson-'));
  const style = path.join(dir, 'plain.json');
  writeFileSync(style, JSON.stringify({ version: 8, name: 'plain', sources: {}, layers: [{ id: 'bg', type: 'background', paint: { 'background-color': '#808080' } }] }));
  server = await startServer({ toml: `[[styles]]\nid = "plain"\npath = "${style}"\n[cache]\ndir = "${path.join(dir, 'cache')}"\n[render]\npool_size = 1\n`, workers: 1 });
  await waitFor('renderer', async () => ((await (await fetch(`${server.url}/ping`)).json()) as { renderer_enabled: boolean }).renderer_enabled || undefined, 120_000);
});
after(() => server?.stop());

describe('geojson overlay: every geometry type and simplestyle property', () => {
  let img: Decoded;
  before(async () => {
    const res = await fetch(`${server.url}/styles/plain/static/0,0,1/${SIZE}x${SIZE}.png?geojson=${encodeURIComponent(JSON.stringify(OVERLAY))}`);
    const body = Buffer.from(await res.arrayBuffer());
    assert.equal(res.status, 200, body.toString().slice(0, 300));
    img = await decode(body);
  });

  test('the image is the requested size over the grey style', () => {
    assert.deepEqual([img.width, img.height], [SIZE, SIZE]);
    assert.deepEqual(pixel(img, 5, 5), GREY);
  });

  test('each probe shows the colour computed by hand', () => {
    const wrong: string[] = [];
    for (const [x, y, want, what] of PROBES) {
      const got = pixel(img, x, y);
      if (distance(got, want) > 3) wrong.push(`${what}: (${x}, ${y}) is ${got}, expected ${want.map(Math.round)}`);
    }
    assert.equal(PROBES.length, 24);
    assert.deepEqual(wrong, []);
  });
});
