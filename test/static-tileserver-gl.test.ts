// Static maps in tileserver-gl's syntax, through one real server and real Chromium (renders are few and small):
// a path written tileserver-gl's way, as an encoded polyline, and in EPSG:3857 metres under /static/raw/ draws
// the picture our own grammar draws; icon markers from the style's sprite, from /files and from an allowed host
// appear at their points; the sources' attribution and a watermark are drawn in the corners. Marker URLs of a
// host not in render.marker_hosts never open a connection (a server counting accepted sockets proves it), and
// too large, too slow, redirected, unknown or missing icons are 400 problems naming `marker`.
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import pixelmatch from 'pixelmatch';
import sharp from 'sharp';
import { request, tempDir, waitFor } from './helpers/foundation.js';
import { decode, distance, pixel, type Decoded, type Rgb } from './helpers/render.js';
import { fixture, startServer, type TestServer } from './helpers/server.js';
import { encodePolyline } from './helpers/polyline.js';

const STATIC = '/styles/osm-liberty/static';
const ATTRIBUTION = 'Test data attribution';
const POINTS: [number, number][] = [[-50, 30], [0, -20], [50, 30]];
const MERCATOR = 20037508.342789244;
const metres = ([lon, lat]: [number, number]) => [(lon / 180) * MERCATOR, Math.log(Math.tan(Math.PI / 4 + (lat * Math.PI) / 360)) * 6378137].map((v) => v.toFixed(2)).join(',');
const FILE_COLOUR: Rgb = [255, 0, 255];
const REMOTE_COLOUR: Rgb = [0, 200, 0];

/** Pixel position of lon,lat in a 256x256 map centred on 0,0 at zoom 0 (a 512 px world). */
function at(lon: number, lat: number): [number, number] {
  const y = (1 - Math.log(Math.tan(Math.PI / 4 + (lat * Math.PI) / 360)) / Math.PI) / 2;
  return [128 + (lon / 360) * 512, 128 + (y - 0.5) * 512];
}

/** Pixels within `tolerance` of `colour` in the box [x0, x1) x [y0, y1). */
function count(img: Decoded, colour: Rgb, [x0, y0, x1, y1]: number[], tolerance = 40): number {
  let n = 0;
  for (let y = Math.max(0, Math.round(y0)); y < Math.min(img.height, Math.round(y1)); y++) {
    for (let x = Math.max(0, Math.round(x0)); x < Math.min(img.width, Math.round(x1)); x++) if (distance(pixel(img, x, y), colour) <= tolerance) n++;
  }
  return n;
}

/** Pixels that differ between a and b (pixelmatch at its usual threshold), optionally only in a box. */
function differing(a: Decoded, b: Decoded, box?: number[]): number {
  const diff = Buffer.alloc(a.width * a.height * 4);
  pixelmatch(a.data, b.data, diff, a.width, a.height, { threshold: 0.1 });
  if (!box) return count({ ...a, data: diff }, [255, 0, 0], [0, 0, a.width, a.height], 30);
  return count({ ...a, data: diff }, [255, 0, 0], box, 30);
}

describe("static maps in tileserver-gl's syntax", () => {
  let server: TestServer;
  let icons: http.Server;
  let iconPort = 0;
  let connections = 0;
  let slowHeld: http.ServerResponse[] = [];
  let sprite: { png: Buffer; colour: Rgb; width: number; height: number };
  const rendered = new Map<string, Decoded>();

  async function png(pathAndQuery: string): Promise<Decoded> {
    const hit = rendered.get(pathAndQuery);
    if (hit) return hit;
    const res = await request(server.url, pathAndQuery, { timeoutMs: 120_000 });
    assert.equal(res.status, 200, `${pathAndQuery}: ${res.body.toString('utf8').slice(0, 300)}`);
    const img = await decode(res.body);
    rendered.set(pathAndQuery, img);
    return img;
  }

  async function problem(pathAndQuery: string, init: { method?: string; body?: string } = {}): Promise<{ status: number; parameter: string; detail: string }> {
    const res = await request(server.url, pathAndQuery, { ...init, headers: init.body ? { 'Content-Type': 'application/json' } : {}, timeoutMs: 30_000 });
    assert.equal(res.headers['content-type'], 'application/problem+json', `${pathAndQuery}: ${res.status} ${res.body.toString('utf8').slice(0, 200)}`);
    return { status: res.status, ...(JSON.parse(res.body.toString('utf8')) as { parameter: string; detail: string }) };
  }

  before(async () => {
    const dir = tempDir('tsts-static-tsgl-');
    const files = path.join(dir, 'files');
    mkdirSync(path.join(files, 'pins'), { recursive: true });
    writeFileSync(path.join(files, 'pins', 'magenta.png'), await sharp({ create: { width: 10, height: 10, channels: 4, background: { r: 255, g: 0, b: 255, alpha: 1 } } }).png().toBuffer());
    const green = await sharp({ create: { width: 12, height: 12, channels: 4, background: { r: 0, g: 200, b: 0, alpha: 1 } } }).png().toBuffer();
    // The icon host: counts every accepted socket; /slow.png never answers, /big.png is past the size limit.
    icons = http.createServer((req, res) => {
      if (req.url === '/ok.png') res.writeHead(200, { 'Content-Type': 'image/png' }).end(green);
      else if (req.url === '/big.png') res.writeHead(200, { 'Content-Type': 'image/png' }).end(Buffer.alloc(10_000, 1));
      else if (req.url === '/big-stream.png') {
        res.writeHead(200, { 'Content-Type': 'image/png' });
        res.write(Buffer.alloc(3000, 1));
        res.end(Buffer.alloc(3000, 1));
      } else if (req.url === '/redirect.png') res.writeHead(302, { Location: `http://127.0.0.1:${iconPort}/ok.png` }).end();
      else if (req.url === '/slow.png') slowHeld.push(res);
      else res.writeHead(404).end();
    });
    icons.on('connection', () => connections++);
    // Both address families: "localhost" may resolve to either.
    await new Promise<void>((resolve) => icons.listen(0, resolve));
    iconPort = (icons.address() as AddressInfo).port;
    const sheet = fixture('styles/osm-liberty/sprites/osm-liberty.png');
    const pngIcon = await sharp(sheet).extract({ left: 164, top: 190, width: 19, height: 19 }).raw().toBuffer({ resolveWithObject: true });
    const counts = new Map<string, number>();
    for (let i = 0; i < pngIcon.data.length; i += 4) if (pngIcon.data[i + 3] === 255) counts.set(`${pngIcon.data[i]},${pngIcon.data[i + 1]},${pngIcon.data[i + 2]}`, (counts.get(`${pngIcon.data[i]},${pngIcon.data[i + 1]},${pngIcon.data[i + 2]}`) ?? 0) + 1);
    const top = [...counts].sort((a, b) => b[1] - a[1])[0][0].split(',').map(Number) as Rgb;
    sprite = { png: pngIcon.data, colour: top, width: 19, height: 19 };
    server = await startServer({
      toml: `fonts = "${fixture('fonts')}"
files = "${files}"
[[sources]]
id = "openmaptiles"
type = "pmtiles"
path = "${fixture('vector/omt-planet-z0-1.pmtiles')}"
attribution = "<a href=\\"https://example.com\\">&copy; ${ATTRIBUTION}</a>"
[[sources]]
id = "natural_earth"
type = "pmtiles"
path = "${fixture('raster/natural-earth-png-z0-1.pmtiles')}"
[[styles]]
id = "osm-liberty"
path = "${fixture('styles/osm-liberty/style.json')}"
[cache]
dir = "${path.join(dir, 'cache')}"
[render]
pool_size = 1
disk_cache_mb = 0
marker_hosts = ["localhost:${iconPort}"]
marker_max_bytes = 4096
marker_timeout_ms = 400
`,
    });
    await waitFor('the renderer', async () => ((await request(server.url, '/ready')).status === 200 ? true : undefined), 120_000);
  });
  after(async () => {
    await server?.stop();
    for (const res of slowHeld) res.destroy();
    slowHeld = [];
    icons?.closeAllConnections();
    await new Promise((resolve) => icons?.close(resolve));
  });

  const ours = `${STATIC}/0,0,0/256x256.png?attribution=false&path=${encodeURIComponent(`path-6+ff0000(${POINTS.map((p) => p.join(',')).join('|')})`)}`;

  test('a path as options|enc:polyline, and in metres under /static/raw/, draws the picture of our grammar', async () => {
    const a = await png(ours);
    const common = 'attribution=false&linecap=round&linejoin=round';
    const encoded = await png(`${STATIC}/0,0,0/256x256.png?${common}&path=${encodeURIComponent(`stroke:#ff0000|width:6|enc:${encodePolyline(POINTS, 5)}`)}`);
    const raw = await png(`${STATIC}/raw/0,0,0/256x256.png?${common}&stroke=red&width=6&path=${encodeURIComponent(POINTS.map(metres).join('|'))}`);
    const red = count(a, [255, 0, 0], [0, 0, 256, 256]);
    assert.ok(red > 300, `only ${red} red pixels of the path`);
    for (const [name, img] of [['enc:', encoded], ['raw', raw]] as const) {
      const d = differing(a, img);
      assert.ok(d < red * 0.02, `${name}: ${d} pixels differ from our grammar's picture (the path has ${red})`);
    }
  });

  test('icons from the sprite, from /files and from an allowed host appear at their points; attribution and watermark in the corners', async () => {
    const before = connections;
    const markers = [
      `-60,-40|sprite:airport|scale:3`,
      `0,-45|/files/pins/magenta.png|scale:2`,
      `60,-40|http://localhost:${iconPort}/ok.png|offset:0,-2`,
    ];
    const img = await png(`${STATIC}/0,0,0/256x256.png?path=${encodeURIComponent(`path-6+ff0000(${POINTS.map((p) => p.join(',')).join('|')})`)}&${markers.map((m) => `marker=${encodeURIComponent(m)}`).join('&')}&watermark=${encodeURIComponent('WATERMARK TEXT')}`);
    const bare = await png(ours);
    assert.ok(connections > before, 'the allowed host was asked for its icon');
    // Each icon stands with its bottom centre on its point: its colour fills the box above the point.
    const boxes: [string, Rgb, number[]][] = [
      ['sprite', sprite.colour, (([x, y]) => [x - 28, y - 57, x + 28, y])(at(-60, -40))],
      ['files', FILE_COLOUR, (([x, y]) => [x - 10, y - 20, x + 10, y])(at(0, -45))],
      ['allowed host', REMOTE_COLOUR, (([x, y]) => [x - 6, y - 14, x + 6, y - 2])(at(60, -40))],
    ];
    for (const [name, colour, box] of boxes) {
      const area = (box[2] - box[0]) * (box[3] - box[1]);
      const n = count(img, colour, box);
      const without = count(bare, colour, box);
      assert.ok(n > area * (name === 'sprite' ? 0.15 : 0.7), `${name}: ${n} of ${area} pixels in the icon's colour ${colour}`);
      assert.ok(without < n / 4, `${name}: the bare map already had ${without} such pixels`);
    }
    // The attribution box in the bottom-right corner, the watermark in the bottom-left: both differ from the map
    // drawn with attribution=false and no watermark; the top corners do not.
    assert.ok(differing(img, bare, [176, 238, 256, 256]) > 60, 'no attribution drawn in the bottom-right corner');
    assert.ok(differing(img, bare, [0, 240, 70, 256]) > 20, 'no watermark drawn in the bottom-left corner');
    assert.equal(differing(img, bare, [0, 0, 40, 20]) + differing(img, bare, [216, 0, 256, 20]), 0, 'the top corners changed');
    // The box is translucent white over the map.
    const corner = pixel(img, 250, 250);
    assert.ok(corner.every((c) => c > 180), `attribution box at 250,250 is ${corner}`);
  });

  test('a host not in render.marker_hosts is never contacted; large, slow, redirected and unknown icons are 400 naming marker', async () => {
    const before = connections;
    for (const host of [`127.0.0.1:${iconPort}`, `localhost:${iconPort + 1 === 65536 ? 1 : iconPort + 1}`, `[::1]:${iconPort}`]) {
      const p = await problem(`${STATIC}/0,0,0/256x256.png?marker=${encodeURIComponent(`0,0|http://${host}/ok.png`)}`);
      assert.equal(p.status, 400);
      assert.equal(p.parameter, 'marker');
      assert.match(p.detail, /is not in render\.marker_hosts/);
    }
    // The POST form is refused alike.
    const posted = await problem(`${STATIC}/raw/0,0,0/256x256.png`, { method: 'POST', body: JSON.stringify({ marker: [`0,0|https://127.0.0.1:${iconPort}/ok.png`] }) });
    assert.deepEqual([posted.status, posted.parameter], [400, 'marker']);
    assert.equal(connections, before, 'a refused host was contacted');

    const cases: [string, RegExp][] = [
      [`http://localhost:${iconPort}/big.png`, /larger than render\.marker_max_bytes \(4096\)/],
      [`http://localhost:${iconPort}/big-stream.png`, /larger than render\.marker_max_bytes/],
      [`http://localhost:${iconPort}/slow.png`, /did not answer within render\.marker_timeout_ms \(400 ms\)/],
      [`http://localhost:${iconPort}/redirect.png`, /answered 302 \(redirects are not followed\)/],
      [`http://localhost:${iconPort}/missing.png`, /answered 404/],
      ['sprite:no-such-icon', /has no sprite icon "no-such-icon"/],
      ['pins/none.png', /is not a file of the files directory/],
    ];
    const redirectsBefore = connections;
    for (const [icon, detail] of cases) {
      const p = await problem(`${STATIC}/0,0,0/256x256.png?marker=${encodeURIComponent(`0,0|${icon}`)}`);
      assert.deepEqual([p.status, p.parameter], [400, 'marker'], icon);
      assert.match(p.detail, detail, icon);
    }
    // Five requests to the allowed host, one connection each at most; the redirect's target (127.0.0.1) was not followed.
    assert.ok(connections - redirectsBefore <= 5, `${connections - redirectsBefore} connections for 5 icon requests`);
    const bad = await problem(`${STATIC}/auto/256x256.png?path=${encodeURIComponent('stroke:red|enc:_p~iF~ps|U_ulLnnqC_mqNvxq')}`);
    assert.deepEqual([bad.status, bad.parameter], [400, 'path']);
    assert.match(bad.detail, /encoded polyline/);
  });
});
