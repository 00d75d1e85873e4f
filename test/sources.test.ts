// PMTiles and MBTiles sources as a user sees them over HTTP: the MBTiles row flip (a tile comes back as the
// right tile), both MBTiles layouts (`tiles`, and deduplicated `map` + `images`), metadata turned into TileJSON
// (with the `json` vector_layers), and the tile format taken from metadata and checked against the bytes.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import path from 'node:path';
import { gunzipSync } from 'node:zlib';
import { fixture, runCli, startServer, type TestServer } from './helpers/server.js';
import {
  getJson,
  isGzip,
  layerCounts,
  layerProperty,
  request,
  storedMbtilesTile,
  storedPmtilesTile,
  tempDir,
  writeMbtiles,
  type MbtilesTile,
} from './helpers/foundation.js';

const OMT = fixture('vector/omt-planet-z0-1.pmtiles');
const TONER = fixture('raster/stamen-toner-z0-3.pmtiles');

/** Every tile of a PMTiles archive from z0 to maxzoom, as stored, read with the test's own reader. */
async function allTiles(file: string, maxzoom: number): Promise<MbtilesTile[]> {
  const out: MbtilesTile[] = [];
  for (let z = 0; z <= maxzoom; z++)
    for (let x = 0; x < 2 ** z; x++)
      for (let y = 0; y < 2 ** z; y++) {
        const data = await storedPmtilesTile(file, z, x, y);
        if (data) out.push({ z, x, y, data });
      }
  return out;
}

interface TileJson {
  tilejson: string;
  name: string;
  description?: string;
  attribution?: string;
  format: string;
  minzoom: number;
  maxzoom: number;
  bounds: number[];
  center: number[];
  tiles: string[];
  vector_layers?: { id: string; fields: Record<string, string>; minzoom?: number; maxzoom?: number }[];
}

let server: TestServer;
let omtTiles: MbtilesTile[];
let tonerTiles: MbtilesTile[];
let omtLayers: string[];

before(async () => {
  const dir = tempDir('tsts-sources-');
  omtTiles = await allTiles(OMT, 1);
  tonerTiles = await allTiles(TONER, 3);
  const omtMeta = (await getMetadataLayers()).vector_layers;
  omtLayers = omtMeta.map((l) => l.id);
  // The PMTiles twin as an MBTiles `tiles` table: gzip MVT, TMS rows, layers in the `json` metadata row.
  writeMbtiles(path.join(dir, 'omt.mbtiles'), { name: 'OMT twin', format: 'pbf', minzoom: '0', maxzoom: '1', json: JSON.stringify({ vector_layers: omtMeta }) }, omtTiles);
  // Toner as the deduplicated map/images layout (its ocean tiles repeat, so images has fewer rows than map).
  writeMbtiles(path.join(dir, 'toner.mbtiles'), { name: 'Toner', format: 'png', bounds: '-180,-85,180,85', minzoom: '0', maxzoom: '3' }, tonerTiles, 'map-images');
  // Holds every z0-1 tile but declares bounds covering only the north-east quadrant.
  writeMbtiles(path.join(dir, 'narrow.mbtiles'), { name: 'narrow', format: 'pbf', bounds: '10,10,170,80' }, omtTiles);
  server = await startServer({
    toml: `
[server]
disable_render = true
[[sources]]
id = "omt"
type = "pmtiles"
path = "${OMT}"
[[sources]]
id = "omt-z0"
type = "pmtiles"
path = "${OMT}"
maxzoom = 0
name = "configured name"
attribution = "configured attribution"
description = "configured description"
[[sources]]
id = "omt-mb"
type = "mbtiles"
path = "${path.join(dir, 'omt.mbtiles')}"
[[sources]]
id = "toner"
type = "pmtiles"
path = "${TONER}"
[[sources]]
id = "toner-mb"
type = "mbtiles"
path = "${path.join(dir, 'toner.mbtiles')}"
[[sources]]
id = "narrow"
type = "mbtiles"
path = "${path.join(dir, 'narrow.mbtiles')}"
[[sources]]
id = "cities"
type = "mbtiles"
path = "${fixture('vector/world_cities.mbtiles')}"
[[sources]]
id = "cities.v2_b-1"
type = "mbtiles"
path = "${fixture('vector/world_cities.mbtiles')}"
[[sources]]
id = "raw"
type = "mbtiles"
path = "${fixture('vector/uncompressed_mvt.mbtiles')}"
[[sources]]
id = "jpg"
type = "mbtiles"
path = "${fixture('raster/geography-class-jpg.mbtiles')}"
[[sources]]
id = "png"
type = "mbtiles"
path = "${fixture('raster/geography-class-png.mbtiles')}"
[[sources]]
id = "webp"
type = "mbtiles"
path = "${fixture('raster/webp.mbtiles')}"
[[sources]]
id = "webp-pm"
type = "pmtiles"
path = "${fixture('raster/webp-z0-1.pmtiles')}"
[[sources]]
id = "ne-pm"
type = "pmtiles"
path = "${fixture('raster/natural-earth-png-z0-1.pmtiles')}"
`,
  });
});

after(async () => {
  await server?.stop();
});

async function getMetadataLayers(): Promise<{ vector_layers: { id: string; fields: Record<string, string> }[] }> {
  // Read the PMTiles metadata with the pmtiles package directly, independent of the server's reader.
  const { PMTiles } = await import('pmtiles');
  const { openSync, readSync } = await import('node:fs');
  const fd = openSync(OMT, 'r');
  const archive = new PMTiles({
    getKey: () => OMT,
    getBytes: (offset: number, length: number) => {
      const b = Buffer.alloc(length);
      const n = readSync(fd, b, 0, length, offset);
      return Promise.resolve({ data: b.buffer.slice(0, n) });
    },
  });
  return (await archive.getMetadata()) as { vector_layers: { id: string; fields: Record<string, string> }[] };
}

test('MBTiles rows are flipped: XYZ 1/0/0 is the north-west tile (Vancouver), 1/0/1 the south-west (Lima)', async () => {
  const expectations: [string, string[], string[]][] = [
    ['1/0/0', ['Vancouver', 'San Francisco'], ['Lima', 'Cape Town']],
    ['1/0/1', ['Lima', 'Buenos Aires'], ['Vancouver']],
    ['1/1/0', ['London', 'Paris', 'Berlin'], ['Cape Town']],
    ['1/1/1', ['Cape Town', 'Singapore'], ['London']],
  ];
  for (const [zxy, present, absent] of expectations) {
    const res = await request(server.url, `/data/cities/${zxy}.pbf`);
    assert.equal(res.status, 200, zxy);
    const names = layerProperty(res.body, 'cities', 'name');
    for (const n of present) assert.ok(names.includes(n), `${zxy} should hold ${n}: ${names.join(', ')}`);
    for (const n of absent) assert.ok(!names.includes(n), `${zxy} should not hold ${n}`);
  }
});

test('ids with ".", "_" and "-" work in every URL, including one ending like a file extension', async () => {
  const tj = await getJson<TileJson>(server.url, '/data/cities.v2_b-1.json');
  assert.equal(tj.status, 200);
  assert.deepEqual(tj.json.tiles, [`${server.url}/data/cities.v2_b-1/{z}/{x}/{y}.pbf`]);
  const tile = await request(server.url, '/data/cities.v2_b-1/1/1/0.pbf');
  assert.equal(tile.status, 200);
  assert.ok(layerProperty(tile.body, 'cities', 'name').includes('Paris'));
});

test('an MBTiles twin of a PMTiles archive serves byte-identical tiles at every XYZ address', async () => {
  for (const t of omtTiles) {
    const fromPm = await request(server.url, `/data/omt/${t.z}/${t.x}/${t.y}.pbf`, { headers: { 'Accept-Encoding': 'gzip' } });
    const fromMb = await request(server.url, `/data/omt-mb/${t.z}/${t.x}/${t.y}.pbf`, { headers: { 'Accept-Encoding': 'gzip' } });
    assert.equal(fromPm.status, 200);
    assert.equal(fromMb.status, 200);
    assert.ok(fromMb.body.equals(t.data), `omt-mb ${t.z}/${t.x}/${t.y} differs from the stored PMTiles tile`);
    assert.ok(fromPm.body.equals(t.data), `omt ${t.z}/${t.x}/${t.y} differs from the stored PMTiles tile`);
  }
  // The tiles are distinct, so a wrong flip could not go unnoticed.
  assert.equal(new Set(omtTiles.map((t) => t.data.toString())).size, omtTiles.length);
});

test('the map/images layout serves every tile, deduplicated images included, as its PMTiles twin', async () => {
  const distinct = new Set(tonerTiles.map((t) => Buffer.from(t.data).toString('base64'))).size;
  assert.ok(distinct < tonerTiles.length, 'the fixture has repeated tiles, so images is really deduplicated');
  assert.equal(tonerTiles.length, 85);
  for (const t of tonerTiles) {
    const res = await request(server.url, `/data/toner-mb/${t.z}/${t.x}/${t.y}.png`);
    assert.equal(res.status, 200, `${t.z}/${t.x}/${t.y}`);
    assert.equal(res.headers['content-type'], 'image/png');
    assert.ok(res.body.equals(t.data), `toner-mb ${t.z}/${t.x}/${t.y} is not the PMTiles tile`);
    const pm = await request(server.url, `/data/toner/${t.z}/${t.x}/${t.y}.png`);
    assert.ok(pm.body.equals(t.data));
  }
  const tj = await getJson<TileJson>(server.url, '/data/toner-mb.json');
  assert.equal(tj.json.format, 'png');
  assert.equal(tj.json.minzoom, 0);
  assert.equal(tj.json.maxzoom, 3);
  assert.equal(tj.json.vector_layers, undefined);
});

test('MBTiles metadata becomes TileJSON, with vector_layers from the json row', async () => {
  const { status, json } = await getJson<TileJson>(server.url, '/data/cities.json');
  assert.equal(status, 200);
  assert.equal(json.tilejson, '3.0.0');
  assert.equal(json.name, 'Major cities from Natural Earth data');
  assert.equal(json.description, 'Major cities from Natural Earth data');
  assert.equal(json.format, 'pbf');
  assert.equal(json.minzoom, 0);
  assert.equal(json.maxzoom, 6);
  assert.deepEqual(json.bounds, [-123.12359, -37.818085, 174.763027, 59.352706]);
  assert.deepEqual(json.center, [-75.9375, 38.788894, 6]);
  assert.deepEqual(json.tiles, [`${server.url}/data/cities/{z}/{x}/{y}.pbf`]);
  assert.equal(json.vector_layers?.length, 1);
  assert.equal(json.vector_layers?.[0].id, 'cities');
  assert.deepEqual(json.vector_layers?.[0].fields, { name: 'String' });

  const twin = await getJson<TileJson>(server.url, '/data/omt-mb.json');
  assert.deepEqual(
    twin.json.vector_layers?.map((l) => l.id),
    omtLayers,
  );
  assert.equal(twin.json.name, 'OMT twin');
});

test('PMTiles: the header zoom range is the truth over the metadata; config narrows it and overrides texts', async () => {
  const omt = await getJson<TileJson>(server.url, '/data/omt.json');
  assert.equal(omt.json.maxzoom, 1, 'header says 0-1, metadata says 14');
  assert.equal(omt.json.minzoom, 0);
  assert.deepEqual(omt.json.vector_layers?.map((l) => l.id), omtLayers);
  assert.equal(omtLayers.length, 16);
  assert.equal((await request(server.url, '/data/omt/2/1/1.pbf')).status, 204);

  const z0 = await getJson<TileJson>(server.url, '/data/omt-z0.json');
  assert.equal(z0.json.maxzoom, 0);
  assert.equal(z0.json.name, 'configured name');
  assert.equal(z0.json.attribution, 'configured attribution');
  assert.equal(z0.json.description, 'configured description');
  assert.equal((await request(server.url, '/data/omt-z0/0/0/0.pbf')).status, 200);
  const outside = await request(server.url, '/data/omt-z0/1/0/0.pbf');
  assert.equal(outside.status, 204);
  assert.equal(outside.body.length, 0);
});

test('a tile outside the declared bounds is 204 even when the archive holds it', async () => {
  const inside = await request(server.url, '/data/narrow/1/1/0.pbf');
  assert.equal(inside.status, 200);
  assert.deepEqual(layerCounts(inside.body), layerCounts(omtTiles.find((t) => t.z === 1 && t.x === 1 && t.y === 0)!.data));
  for (const zxy of ['1/0/0', '1/0/1', '1/1/1']) {
    const res = await request(server.url, `/data/narrow/${zxy}.pbf`);
    assert.equal(res.status, 204, zxy);
    assert.equal(res.body.length, 0);
  }
});

test('tile formats: Content-Type and bytes of gzip MVT, raw MVT, PNG, JPEG and WebP sources', async () => {
  const cases: [id: string, ext: string, type: string, magic: (b: Buffer) => boolean][] = [
    ['cities', 'pbf', 'application/x-protobuf', (b) => b[0] === 0x1a],
    ['raw', 'pbf', 'application/x-protobuf', (b) => b[0] === 0x1a],
    ['png', 'png', 'image/png', (b) => b.subarray(0, 4).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47]))],
    ['ne-pm', 'png', 'image/png', (b) => b.subarray(0, 4).equals(Buffer.from([0x89, 0x50, 0x4e, 0x47]))],
    ['jpg', 'jpg', 'image/jpeg', (b) => b[0] === 0xff && b[1] === 0xd8 && b[2] === 0xff],
    ['jpg', 'jpeg', 'image/jpeg', (b) => b[0] === 0xff && b[1] === 0xd8 && b[2] === 0xff],
    ['webp', 'webp', 'image/webp', (b) => b.subarray(0, 4).toString() === 'RIFF' && b.subarray(8, 12).toString() === 'WEBP'],
    ['webp-pm', 'webp', 'image/webp', (b) => b.subarray(0, 4).toString() === 'RIFF' && b.subarray(8, 12).toString() === 'WEBP'],
  ];
  for (const [id, ext, type, magic] of cases) {
    const res = await request(server.url, `/data/${id}/0/0/0.${ext}`);
    assert.equal(res.status, 200, `${id}.${ext}`);
    assert.equal(res.headers['content-type'], type, `${id}.${ext}`);
    assert.equal(res.headers['content-encoding'], undefined, `${id}.${ext}: identity without Accept-Encoding`);
    assert.ok(magic(res.body), `${id}.${ext} bytes are not ${type}`);
    const tj = await getJson<TileJson>(server.url, `/data/${id}.json`);
    assert.equal(tj.json.format, ext === 'jpeg' ? 'jpg' : ext, `${id} TileJSON format`);
    assert.ok(tj.json.tiles[0].endsWith(`.${ext === 'jpeg' ? 'jpg' : ext}`));
  }
  // The raw MVT is served as stored; the gzip one is the stored tile inflated.
  const raw = await request(server.url, '/data/raw/0/0/0.pbf');
  assert.ok(raw.body.equals(storedMbtilesTile(fixture('vector/uncompressed_mvt.mbtiles'), 0, 0, 0)!));
  // The fixture holds one tile of 68 Natural Earth places in a layer `cities` (fixtures/PROVENANCE.md).
  assert.deepEqual(layerCounts(raw.body), { cities: 68 });
  const stored = storedMbtilesTile(fixture('vector/world_cities.mbtiles'), 0, 0, 0)!;
  assert.ok(isGzip(stored));
  assert.ok((await request(server.url, '/data/cities/0/0/0.pbf')).body.equals(gunzipSync(stored)));
});

test('asking a raster source for a vector extension or another image type is 400, not a mislabelled tile', async () => {
  for (const p of ['/data/png/0/0/0.pbf', '/data/png/0/0/0.jpg', '/data/jpg/0/0/0.png', '/data/webp/0/0/0.png', '/data/cities/0/0/0.png']) {
    const res = await request(server.url, p);
    assert.equal(res.status, 400, p);
    assert.equal(res.headers['content-type'], 'application/problem+json');
  }
});

test('an MBTiles whose declared format contradicts its bytes stops start-up with one line', async () => {
  const dir = tempDir('tsts-mislabelled-');
  const mvt = storedMbtilesTile(fixture('vector/world_cities.mbtiles'), 0, 0, 0)!;
  const png = storedMbtilesTile(fixture('raster/webp.mbtiles'), 0, 0, 0)!;
  const cases: [string, Record<string, string>, Buffer, RegExp][] = [
    ['png-but-mvt', { format: 'png' }, mvt, /png/],
    ['pbf-but-webp', { format: 'pbf' }, png, /webp/],
    ['jpg-but-webp', { format: 'jpg' }, png, /webp/],
  ];
  const results = await Promise.all(
    cases.map(([name, meta, data]) => runCli([writeMbtiles(path.join(dir, `${name}.mbtiles`), meta, [{ z: 0, x: 0, y: 0, data }]), '--port', '0', '--workers', '1'])),
  );
  for (const [i, [name, , , reason]] of cases.entries()) {
    const r = results[i];
    assert.notEqual(r.code, 0, name);
    const lines = r.stderr.split('\n').filter((l) => l.trim());
    assert.equal(lines.length, 1, r.stderr);
    assert.match(lines[0], new RegExp(`"${name}"`));
    assert.match(lines[0], reason);
  }
});
