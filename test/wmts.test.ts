// WMTS 1.0.0 capabilities of a style, opened by a real WMTS client: GDAL's WMTS driver (Debian gdal-bin).
// gdalinfo reads the layer from our document; gdal_translate then fetches a tile by the document's RESTful
// template, with the key, from a recorder standing in for the raster tile route (server.public_url points at it);
// and it fetches real rendered tiles from the server's own raster route through the document, whose pixels
// show water and land where the world has them; and a one-pixel cut across a tile seam (4 x 1 pixels read through
// the document) whose pixels are the raster route's own, so a matrix off by one pixel shows.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { after, before, test } from 'node:test';
import { PNG } from 'pngjs';
import { fixture, startServer, type TestServer } from './helpers/server.js';
import { waitFor } from './helpers/foundation.js';
import { decode, distance, pixel, tilePixel, WATER } from './helpers/render.js';

const run = promisify(execFile);
const STYLE = `
fonts = "${fixture('fonts')}"
[[sources]]
id = "openmaptiles"
type = "pmtiles"
path = "${fixture('vector/omt-planet-z0-1.pmtiles')}"
[[styles]]
id = "osm-liberty"
path = "${fixture('styles/osm-liberty/style.json')}"
`;
const KEY = 'k&y<1>';
/** The colour of the tile the recorder answers with. */
const TILE_RGB = [200, 30, 90];

/** Answers every request with one 256 px PNG tile and remembers what was asked. */
function startRecorder(): Promise<{ server: http.Server; url: string; seen: string[] }> {
  const png = new PNG({ width: 256, height: 256 });
  for (let i = 0; i < png.data.length; i += 4) png.data.set([...TILE_RGB, 255], i);
  const body = PNG.sync.write(png);
  const seen: string[] = [];
  const server = http.createServer((req, res) => {
    seen.push(req.url ?? '');
    res.writeHead(200, { 'Content-Type': 'image/png' }).end(body);
  });
  return new Promise((resolve) =>
    server.listen(0, '127.0.0.1', () => resolve({ server, url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, seen })),
  );
}

let server: TestServer;
let viaRecorder: TestServer;
let recorder: Awaited<ReturnType<typeof startRecorder>>;

before(async () => {
  recorder = await startRecorder();
  // A fresh render cache: the default directory is shared between runs, and a tile cached by an earlier run
  // would hide what this run's renderer draws.
  server = await startServer({ toml: `${STYLE}\n[cache]\ndir = "${mkdtempSync(path.join(os.tmpdir(), 'tsts-wmts-cache-'))}"\n` });
  viaRecorder = await startServer({ toml: `${STYLE}\n[server]\npublic_url = "${recorder.url}"\n` });
});
after(async () => {
  await server?.stop();
  await viaRecorder?.stop();
  recorder?.server.close();
});

const capsUrl = (srv: TestServer, key?: string) => `${srv.url}/styles/osm-liberty/wmts.xml${key === undefined ? '' : `?key=${encodeURIComponent(key)}`}`;

test('the document is WMTS 1.0.0 XML and every URL in it carries the key', async () => {
  const res = await fetch(capsUrl(server, KEY));
  assert.equal(res.status, 200);
  assert.match(res.headers.get('content-type') ?? '', /^application\/xml/);
  const xml = await res.text();
  assert.match(xml, /<Capabilities [^>]*version="1\.0\.0"/);
  assert.match(xml, /<TileMatrixSet>GoogleMapsCompatible<\/TileMatrixSet>/);
  assert.match(xml, /<Format>image\/png<\/Format>/);
  const urls = [...xml.matchAll(/(?:xlink:href|template)="([^"]+)"/g)].map((m) => m[1].replace(/&amp;/g, '&').replace(/&lt;/g, '<').replace(/&gt;/g, '>'));
  assert.ok(urls.length >= 3, urls.join('\n'));
  for (const u of urls) {
    assert.ok(u.startsWith(server.url), u);
    assert.equal(new URL(u.replace(/[{}]/g, '_')).searchParams.get('key'), KEY, u);
  }
  const plain = await (await fetch(capsUrl(server))).text();
  assert.doesNotMatch(plain, /key=/);
  assert.equal((await fetch(`${server.url}/styles/nope/wmts.xml`)).status, 404);
});

test('gdalinfo opens the capabilities with the WMTS driver and finds the style layer in Web Mercator', async () => {
  const { stdout } = await run('gdalinfo', ['-json', `WMTS:${capsUrl(server, KEY)},layer=osm-liberty`], { timeout: 60_000 });
  const info = JSON.parse(stdout) as { driverShortName: string; size: number[]; metadata: Record<string, Record<string, string>>; coordinateSystem: { wkt: string } };
  assert.equal(info.driverShortName, 'WMTS');
  assert.equal(info.metadata['']?.TITLE, 'OSM Liberty');
  assert.deepEqual(info.size, [256 * 2 ** 22, 256 * 2 ** 22], 'zoom 0..22 of 256 px tiles');
  assert.match(info.coordinateSystem.wkt, /ID\["EPSG",3857\]\]$/);
  // The layer identifier is what GDAL looks up: another one is not found.
  await assert.rejects(run('gdalinfo', [`WMTS:${capsUrl(server)},layer=not-a-layer`], { timeout: 60_000 }));
});

test('GDAL fetches tiles by the document template, with the key', async () => {
  const out = path.join(mkdtempSync(path.join(os.tmpdir(), 'tsts-wmts-')), 'z0.png');
  // No WMS/WMTS disk cache: every run must ask the recorder.
  await run('gdal_translate', ['--config', 'GDAL_ENABLE_WMS_CACHE', 'NO', '-q', '-of', 'PNG', '-outsize', '256', '256', `WMTS:${capsUrl(viaRecorder, KEY)},layer=osm-liberty`, out], { timeout: 60_000 });
  assert.ok(recorder.seen.length > 0, 'GDAL asked for tiles');
  for (const u of recorder.seen) {
    const url = new URL(u, recorder.url);
    assert.match(url.pathname, /^\/styles\/osm-liberty\/256\/0\/0\/0\.png$/, u);
    assert.equal(url.searchParams.get('key'), KEY, u);
  }
  const png = PNG.sync.read(readFileSync(out));
  assert.deepEqual([...png.data.subarray(0, 3)], TILE_RGB, 'the image is made of the tile served');
});

test('GDAL fetches real rendered tiles through the document and gets the world drawn by the style', async () => {
  await waitFor('renderer', async () => ((await (await fetch(`${server.url}/ping`)).json()) as { renderer_enabled: boolean }).renderer_enabled || undefined, 120_000);
  const out = path.join(mkdtempSync(path.join(os.tmpdir(), 'tsts-wmts-')), 'z1.png');
  // 512 px for the whole layer: GDAL takes zoom 1 of the matrix set, four 256 px tiles from the raster route.
  await run('gdal_translate', ['--config', 'GDAL_ENABLE_WMS_CACHE', 'NO', '-q', '-of', 'PNG', '-outsize', '512', '512', `WMTS:${capsUrl(server, KEY)},layer=osm-liberty`, out], { timeout: 180_000 });
  const img = await decode(readFileSync(out));
  assert.deepEqual([img.width, img.height], [512, 512]);
  // Positions in a 512 px world (the same as a z0 512 px tile), one in each of the four tiles GDAL joined.
  const probes: [number, number, boolean, string][] = [
    [-150, 10, true, 'north Pacific (tile 0/0)'],
    [80, 60, false, 'Siberia (tile 1/0)'],
    [-120, -30, true, 'south Pacific (tile 0/1)'],
    [135, -25, false, 'Australia (tile 1/1)'],
    [-40, 35, true, 'north Atlantic (tile 0/0)'],
    [20, 15, false, 'Sahara (tile 1/0)'],
  ];
  let checked = 0;
  for (const [lon, lat, water, what] of probes) {
    const c = pixel(img, ...tilePixel(0, 0, 0, lon, lat, 512));
    if (water) assert.ok(distance(c, WATER) <= 6, `${what}: ${c} is not water (${out})`);
    else assert.ok(distance(c, WATER) > 40, `${what}: ${c} is water`);
    checked++;
  }
  assert.equal(checked, probes.length);
});

test('a one-pixel cut through the document: GDAL\'s pixels across a tile seam are the raster route\'s own, none shifted', async () => {
  await waitFor('renderer', async () => ((await (await fetch(`${server.url}/ping`)).json()) as { renderer_enabled: boolean }).renderer_enabled || undefined, 120_000);
  // The two z1 tiles that meet at the prime meridian, as the raster route serves them.
  const left = await decode(new Uint8Array(await (await fetch(`${server.url}/styles/osm-liberty/256/1/0/0.png`)).arrayBuffer()));
  const right = await decode(new Uint8Array(await (await fetch(`${server.url}/styles/osm-liberty/256/1/1/0.png`)).arrayBuffer()));
  /** The route's pixel at column `col` (0..511) of the z1 row of tiles. */
  const routePixel = (col: number, row: number) => (col < 256 ? pixel(left, col, row) : pixel(right, col - 256, row));
  // A row where the seam's neighbourhood is not one colour, so that a one-pixel shift would show.
  const row = [...Array(254).keys()].map((r) => r + 1).find((r) => new Set([254, 255, 256, 257].map((c) => routePixel(c, r).join())).size > 1);
  assert.ok(row !== undefined, 'no row with detail across the seam');
  // One pixel of z1 in Web Mercator metres, and the window of 4 x 1 pixels around the seam on that row.
  const ORIGIN = 20037508.342789244;
  const res = (2 * ORIGIN) / 512;
  const out = path.join(mkdtempSync(path.join(os.tmpdir(), 'tsts-wmts-')), 'cut.png');
  const projwin = [-ORIGIN + 254 * res, ORIGIN - row * res, -ORIGIN + 258 * res, ORIGIN - (row + 1) * res].map(String);
  await run('gdal_translate', ['--config', 'GDAL_ENABLE_WMS_CACHE', 'NO', '-q', '-of', 'PNG', '-projwin', ...projwin, '-outsize', '4', '1', '-r', 'nearest', `WMTS:${capsUrl(server)},layer=osm-liberty`, out], { timeout: 180_000 });
  const cut = await decode(readFileSync(out));
  assert.deepEqual([cut.width, cut.height], [4, 1]);
  for (let i = 0; i < 4; i++) assert.deepEqual(pixel(cut, i, 0), routePixel(254 + i, row), `column ${254 + i}, row ${row}`);
});
