// Configured styles over HTTP: the list, the served style JSON with every URL rewritten to this service (with
// and without `key` and `server.public_url`), MLT sources pointed at the .pbf transcode URL, the raster TileJSON,
// /index.json and /ping; a broken style stops start-up and fails a reload, naming the file.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { validateStyleMin, type StyleSpecification } from '@maplibre/maplibre-gl-style-spec';
import { fixture, runCli, startServer, writeTempConfig, type TestServer } from './helpers/server.js';

const LIBERTY_FILE = fixture('styles/osm-liberty/style.json');
const tmp = mkdtempSync(path.join(os.tmpdir(), 'tsts-styles-'));
const REFS_FILE = path.join(tmp, 'refs.json');
writeFileSync(
  REFS_FILE,
  JSON.stringify({
    version: 8,
    name: 'References',
    sources: {
      a: { type: 'vector', url: 'source://world_cities' },
      b: { type: 'vector', url: 'mbtiles://{world_cities}' },
      m: { type: 'vector', url: 'pmtiles://monaco', encoding: 'mlt' },
      x: { type: 'vector', url: 'pmtiles://missing' },
      ext: { type: 'vector', url: 'https://tiles.example.org/v3.json' },
      r: { type: 'raster', url: 'pmtiles://natural_earth', tileSize: 256 },
      comp: { type: 'vector', url: 'source://cities_and_omt' },
      adhoc: { type: 'vector', url: 'pmtiles://world_cities+openmaptiles' },
    },
    glyphs: '{fontstack}/{range}.pbf',
    sprite: 'https://cdn.example.org/sprites/nowhere',
    layers: [
      { id: 'bg', type: 'background' },
      { id: 'c', type: 'circle', source: 'a', 'source-layer': 'cities' },
      { id: 'm', type: 'fill', source: 'm', 'source-layer': 'buildings/building' },
      { id: 'r', type: 'raster', source: 'r' },
    ],
  }),
);

const SOURCES = `
fonts = "${fixture('fonts')}"
[[sources]]
id = "openmaptiles"
type = "pmtiles"
path = "${fixture('vector/omt-planet-z0-1.pmtiles')}"
[[sources]]
id = "natural_earth"
type = "pmtiles"
path = "${fixture('raster/natural-earth-png-z0-1.pmtiles')}"
[[sources]]
id = "world_cities"
type = "mbtiles"
path = "${fixture('vector/world_cities.mbtiles')}"
[[sources]]
id = "monaco"
type = "pmtiles"
path = "${fixture('vector/monaco-mlt.pmtiles')}"
[[composites]]
id = "cities_and_omt"
sources = ["world_cities", "openmaptiles"]
[[styles]]
id = "osm-liberty"
path = "${LIBERTY_FILE}"
`;

const getJson = async (url: string) => {
  const res = await fetch(url);
  assert.equal(res.status, 200, `${url} answers 200`);
  return res.json();
};

/** The style without the URL-bearing fields, to show everything else is served as the file has it. */
const withoutUrls = (s: StyleSpecification) => ({ ...s, sources: Object.keys(s.sources), sprite: undefined, glyphs: undefined });

let server: TestServer;
let pub: TestServer;

before(async () => {
  server = await startServer({ toml: `${SOURCES}\n[[styles]]\nid = "refs"\npath = "${REFS_FILE}"\nname = "Reference test"\n` });
  pub = await startServer({ toml: `${SOURCES}\n[server]\npublic_url = "https://maps.example.com/tiles/"\ndisable_render = true\n` });
});
after(async () => {
  await server?.stop();
  await pub?.stop();
});

describe('served style URLs', () => {
  test('/styles.json lists every configured style with the absolute URL of its style.json', async () => {
    assert.deepEqual(await getJson(`${server.url}/styles.json`), [
      { id: 'osm-liberty', name: 'OSM Liberty', url: `${server.url}/styles/osm-liberty/style.json` },
      { id: 'refs', name: 'Reference test', url: `${server.url}/styles/refs/style.json` },
    ]);
    const keyed = (await getJson(`${server.url}/styles.json?key=s3cret`)) as { url: string }[];
    assert.deepEqual(keyed.map((e) => e.url), [`${server.url}/styles/osm-liberty/style.json?key=s3cret`, `${server.url}/styles/refs/style.json?key=s3cret`]);
  });

  test('OSM Liberty is served with its sources, sprite and glyphs on this server, valid, and otherwise as the file has it', async () => {
    const style = (await getJson(`${server.url}/styles/osm-liberty/style.json`)) as StyleSpecification;
    assert.deepEqual(validateStyleMin(style), []);
    const src = style.sources as Record<string, { url?: string }>;
    assert.equal(src.openmaptiles.url, `${server.url}/data/openmaptiles.json`);
    assert.equal(src.natural_earth_shaded_relief.url, `${server.url}/data/natural_earth.json`);
    assert.equal(style.sprite, `${server.url}/styles/osm-liberty/sprite`);
    assert.equal(style.glyphs, `${server.url}/fonts/{fontstack}/{range}.pbf`);
    const file = JSON.parse(readFileSync(LIBERTY_FILE, 'utf8')) as StyleSpecification;
    assert.deepEqual(withoutUrls(style), withoutUrls(file));
    // The URLs handed out work: the TileJSON they name is this server's.
    const tj = (await getJson(src.openmaptiles.url!)) as { tiles: string[] };
    assert.equal(tj.tiles[0], `${server.url}/data/openmaptiles/{z}/{x}/{y}.pbf`);
  });

  test('with a key every URL of this service carries it, encoded; foreign URLs never get it', async () => {
    const key = 'a b&c/d';
    const style = (await getJson(`${server.url}/styles/refs/style.json?key=${encodeURIComponent(key)}`)) as StyleSpecification;
    assert.deepEqual(validateStyleMin(style), []);
    const src = style.sources as Record<string, { url?: string; tiles?: string[]; encoding?: string; minzoom?: number; maxzoom?: number }>;
    const ours = [src.a.url!, src.b.url!, src.r.url!, src.m.tiles![0], style.glyphs!, style.sprite as string].filter((u) => u.startsWith(server.url));
    // The sprite of this style has no files here: it stays as written (see the start-up warning below).
    assert.equal(ours.length, 5);
    for (const u of ours) assert.equal(new URL(u.replace(/[{}]/g, '_')).searchParams.get('key'), key, u);
    assert.equal(src.a.url, `${server.url}/data/world_cities.json?key=a%20b%26c%2Fd`);
    assert.equal(src.b.url, src.a.url, 'the mbtiles://{id} spelling names the same source');
    assert.equal(src.r.url, `${server.url}/data/natural_earth.json?key=a%20b%26c%2Fd`);
    assert.equal(style.glyphs, `${server.url}/fonts/{fontstack}/{range}.pbf?key=a%20b%26c%2Fd`);
    assert.equal(src.x.url, 'pmtiles://missing', 'an unknown source id is left unchanged');
    assert.equal(src.ext.url, 'https://tiles.example.org/v3.json', 'a foreign URL is left unchanged, without the key');
    assert.equal(style.sprite, 'https://cdn.example.org/sprites/nowhere');
  });

  test('named and ad-hoc composites are sources a style can name', async () => {
    const style = (await getJson(`${server.url}/styles/refs/style.json?key=k`)) as StyleSpecification;
    const src = style.sources as Record<string, { url?: string }>;
    assert.equal(src.comp.url, `${server.url}/data/cities_and_omt.json?key=k`);
    assert.equal(src.adhoc.url, `${server.url}/data/world_cities+openmaptiles.json?key=k`);
    for (const u of [src.comp.url!, src.adhoc.url!]) {
      const tj = (await getJson(u)) as { vector_layers: { id: string }[] };
      assert.ok(tj.vector_layers.some((l) => l.id === 'cities') && tj.vector_layers.some((l) => l.id === 'water'), u);
    }
  });

  test('an MLT source is served as a tiles array of .pbf transcode URLs with its zoom range, not as its TileJSON', async () => {
    const style = (await getJson(`${server.url}/styles/refs/style.json`)) as StyleSpecification;
    const m = style.sources.m as Record<string, unknown>;
    assert.deepEqual(m.tiles, [`${server.url}/data/monaco/{z}/{x}/{y}.pbf`]);
    assert.equal(m.url, undefined);
    assert.equal(m.encoding, undefined, 'the tiles are MVT after transcoding');
    const tj = (await getJson(`${server.url}/data/monaco.json`)) as { minzoom: number; maxzoom: number; bounds: number[]; tiles: string[] };
    assert.match(tj.tiles[0], /\.mlt$/, 'the TileJSON itself still advertises .mlt');
    assert.deepEqual([m.minzoom, m.maxzoom, m.bounds], [tj.minzoom, tj.maxzoom, tj.bounds]);
  });

  test('an unknown source id and missing sprite files are reported at start-up, naming the file', () => {
    const out = server.output();
    assert.match(out, new RegExp(`${REFS_FILE.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}.*pmtiles://missing`));
    assert.match(out, /no sprite files for \\?"https:\/\/cdn\.example\.org\/sprites\/nowhere/);
    assert.doesNotMatch(out, /osm-liberty.*(not a configured source|no sprite files)/, 'the showcase style has nothing to warn about');
  });

  test('server.public_url is the base of every URL, whatever the request came to', async () => {
    const base = 'https://maps.example.com/tiles';
    const style = (await getJson(`${pub.url}/styles/osm-liberty/style.json?key=k`)) as StyleSpecification;
    const src = style.sources as Record<string, { url?: string }>;
    assert.equal(src.openmaptiles.url, `${base}/data/openmaptiles.json?key=k`);
    assert.equal(style.sprite, `${base}/styles/osm-liberty/sprite?key=k`);
    assert.equal(style.glyphs, `${base}/fonts/{fontstack}/{range}.pbf?key=k`);
    assert.deepEqual(await getJson(`${pub.url}/styles.json`), [{ id: 'osm-liberty', name: 'OSM Liberty', url: `${base}/styles/osm-liberty/style.json` }]);
  });
});

describe('raster TileJSON of styles', () => {
  test('/styles/{id}.json: PNG tiles at the 512 base, zoom range and attribution from the style sources, key passed', async () => {
    const tj = (await getJson(`${server.url}/styles/osm-liberty.json?key=k`)) as Record<string, unknown>;
    assert.equal(tj.tilejson, '3.0.0');
    assert.equal(tj.name, 'OSM Liberty');
    assert.deepEqual(tj.tiles, [`${server.url}/styles/osm-liberty/{z}/{x}/{y}.png?key=k`]);
    assert.equal(tj.tileSize, 512);
    type Tj = { minzoom: number; maxzoom: number; attribution?: string };
    const omt = (await getJson(`${server.url}/data/openmaptiles.json`)) as Tj;
    const ne = (await getJson(`${server.url}/data/natural_earth.json`)) as Tj;
    assert.equal(tj.minzoom, Math.min(omt.minzoom, ne.minzoom));
    assert.equal(tj.maxzoom, Math.max(omt.maxzoom, ne.maxzoom));
    const attributions = [...new Set([omt.attribution, ne.attribution].filter(Boolean))];
    assert.ok(attributions.length > 0, 'the fixture sources carry an attribution');
    assert.equal(tj.attribution, attributions.join(' '));
    const missing = await fetch(`${server.url}/styles/nope.json`);
    assert.equal(missing.status, 404);
    assert.equal(missing.headers.get('content-type'), 'application/problem+json');
  });

  test('/index.json lists the sources and the raster styles; /ping counts the styles', async () => {
    const index = (await getJson(`${server.url}/index.json?key=k`)) as { id: string; tiles: string[] }[];
    assert.deepEqual(index.map((d) => d.id), ['openmaptiles', 'natural_earth', 'world_cities', 'monaco', 'cities_and_omt', 'osm-liberty', 'refs']);
    assert.equal(index[5].tiles[0], `${server.url}/styles/osm-liberty/{z}/{x}/{y}.png?key=k`);
    const ping = (await getJson(`${server.url}/ping`)) as { loaded_styles: number };
    assert.equal(ping.loaded_styles, 2);
  });

  test('with server.disable_render there are no raster styles to offer', async () => {
    const index = (await getJson(`${pub.url}/index.json`)) as { id: string }[];
    assert.ok(!index.some((d) => d.id === 'osm-liberty'));
    assert.equal((await fetch(`${pub.url}/styles/osm-liberty.json`)).status, 404);
    assert.equal((await fetch(`${pub.url}/styles/osm-liberty/style.json`)).status, 200, 'the vector style stays available');
  });
});

describe('broken styles', () => {
  const config = (stylePath: string, extra = '') =>
    writeTempConfig(`[[sources]]\nid = "w"\ntype = "mbtiles"\npath = "${fixture('vector/world_cities.mbtiles')}"\n[[styles]]\nid = "s"\npath = "${stylePath}"\n${extra}`);
  const invalid = {
    version: 8,
    sources: { w: { type: 'vector', url: 'mbtiles://w' } },
    layers: [
      { id: 'a', type: 'fill', source: 'nope', 'source-layer': 'cities' },
      { id: 'b', type: 'line', source: 'w', 'source-layer': 'cities', paint: { 'line-width': 'wide' } },
    ],
  };

  test('a style with validation errors stops start-up with the validator messages and the file name', async () => {
    const file = path.join(tmp, 'invalid.json');
    writeFileSync(file, JSON.stringify(invalid));
    const r = await runCli(['--config', config(file)]);
    assert.equal(r.code, 1);
    assert.ok(r.stderr.includes(file), r.stderr);
    assert.match(r.stderr, /layers\[0\]: source "nope" not found/);
    assert.match(r.stderr, /layers\[1\]\.paint\.line-width: number expected, string found/);
    assert.doesNotMatch(r.stderr, /\n\s+at /, 'one clear message, not a stack trace');
  });

  test('unreadable JSON, a missing file and a duplicate id stop start-up naming the file', async () => {
    const bad = path.join(tmp, 'bad.json');
    writeFileSync(bad, '{"version": 8, "sources": {');
    const r1 = await runCli(['--config', config(bad)]);
    assert.equal(r1.code, 1);
    assert.match(r1.stderr, /bad\.json: style "s": invalid JSON/);
    const gone = path.join(tmp, 'gone.json');
    const r2 = await runCli(['--config', config(gone)]);
    assert.equal(r2.code, 1);
    assert.ok(r2.stderr.includes(`${gone}: style "s": cannot read the style file`), r2.stderr);
    const r3 = await runCli(['--config', config(LIBERTY_FILE, `[[styles]]\nid = "s"\npath = "${LIBERTY_FILE}"\n`)]);
    assert.equal(r3.code, 1);
    assert.match(r3.stderr, /duplicate style id "s"/);
  });

  test('a reload with a broken style fails, names the file and keeps the previous styles; a fixed one is picked up', { timeout: 60_000 }, async () => {
    const file = path.join(tmp, 'reloaded.json');
    const good = (name: string) => JSON.stringify({ version: 8, name, sources: {}, layers: [{ id: 'bg', type: 'background' }] });
    writeFileSync(file, good('first'));
    const cfgText = (n: number) => `# revision ${n}\n[[styles]]\nid = "s"\npath = "${file}"\n`;
    const srv = await startServer({ toml: cfgText(1), workers: 1 });
    try {
      const name = async () => ((await getJson(`${srv.url}/styles/s/style.json`)) as { name: string }).name;
      assert.equal(await name(), 'first');
      writeFileSync(file, JSON.stringify(invalid));
      writeFileSync(srv.configFile!, cfgText(2));
      srv.proc.kill('SIGHUP');
      await waitFor(() => srv.output().includes('reload failed'));
      assert.ok(srv.output().includes(file), 'the failure names the style file');
      assert.match(srv.output(), /source \\?"nope\\?" not found/);
      assert.equal(await name(), 'first', 'the previous configuration stays active');

      writeFileSync(file, good('second'));
      writeFileSync(srv.configFile!, cfgText(3));
      srv.proc.kill('SIGHUP');
      await waitFor(async () => (await name()) === 'second');
    } finally {
      await srv.stop();
    }
  });
});

/** Polls until `cond` holds; the limit only guards against a hang. */
async function waitFor(cond: () => boolean | Promise<boolean>, limitMs = 30_000): Promise<void> {
  const end = Date.now() + limitMs;
  while (!(await cond())) {
    if (Date.now() > end) throw new Error('condition not reached');
    await new Promise((r) => setTimeout(r, 100));
  }
}
