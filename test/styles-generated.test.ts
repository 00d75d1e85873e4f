// Styles generated for vector sources (spec rule 3): valid version 8 styles with a fill, a line and a circle
// layer per source-layer, colours that depend only on the layer name, zoom-interpolated widths; 404 for raster
// sources and unknown ids; a configured style of the same id wins.
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { validateStyleMin, type LayerSpecification, type StyleSpecification } from '@maplibre/maplibre-gl-style-spec';
import { fixture, startServer, type TestServer } from './helpers/server.js';

const tmp = mkdtempSync(path.join(os.tmpdir(), 'tsts-generated-'));
const OWN_STYLE = path.join(tmp, 'own.json');
writeFileSync(OWN_STYLE, JSON.stringify({ version: 8, name: 'configured', sources: {}, layers: [{ id: 'bg', type: 'background' }] }));

let server: TestServer;
before(async () => {
  server = await startServer({
    toml: `
[[sources]]
id = "openmaptiles"
type = "pmtiles"
path = "${fixture('vector/omt-planet-z0-1.pmtiles')}"
[[sources]]
id = "world_cities"
type = "mbtiles"
path = "${fixture('vector/world_cities.mbtiles')}"
[[sources]]
id = "zoomed_world_cities"
type = "mbtiles"
path = "${fixture('vector/zoomed_world_cities.mbtiles')}"
[[sources]]
id = "monaco"
type = "pmtiles"
path = "${fixture('vector/monaco-mlt.pmtiles')}"
[[sources]]
id = "omt_mbtiles"
type = "mbtiles"
path = "${fixture('vector/omt-z0-1.mbtiles')}"
[[sources]]
id = "natural_earth"
type = "pmtiles"
path = "${fixture('raster/natural-earth-png-z0-1.pmtiles')}"
[[styles]]
id = "omt_mbtiles"
path = "${OWN_STYLE}"
`,
  });
});
after(async () => {
  await server?.stop();
});

async function generated(id: string, query = ''): Promise<StyleSpecification> {
  const res = await fetch(`${server.url}/styles/${id}/style.json${query}`);
  assert.equal(res.status, 200);
  return (await res.json()) as StyleSpecification;
}

async function layerIds(id: string): Promise<string[]> {
  const tj = (await (await fetch(`${server.url}/data/${id}.json`)).json()) as { vector_layers: { id: string }[] };
  return tj.vector_layers.map((l) => l.id);
}

type Paint = Record<string, unknown>;
const paintOf = (l: LayerSpecification) => ((l as { paint?: Paint }).paint ?? {}) as Paint;
const colorOf = (l: LayerSpecification) => {
  const p = paintOf(l);
  return (p['fill-color'] ?? p['line-color'] ?? p['circle-color']) as string;
};

test('the generated style of a vector source is valid and has a fill, a line and a circle layer per source-layer', async () => {
  const style = await generated('openmaptiles', '?key=k');
  assert.deepEqual(validateStyleMin(style), []);
  const names = await layerIds('openmaptiles');
  assert.equal(names.length, 16, 'the OpenMapTiles fixture has 16 layers');
  assert.equal(style.layers.length, 3 * names.length);
  for (const name of names) {
    const of = style.layers.filter((l) => (l as { 'source-layer'?: string })['source-layer'] === name);
    assert.deepEqual(of.map((l) => l.type).sort(), ['circle', 'fill', 'line'], name);
    assert.equal(new Set(of.map(colorOf)).size, 1, `the three layers of ${name} share one colour`);
  }
  // Areas first, then lines, then points: nothing hides the points.
  const types = style.layers.map((l) => l.type);
  assert.deepEqual(types, [...Array(16).fill('fill'), ...Array(16).fill('line'), ...Array(16).fill('circle')]);
  assert.deepEqual(style.sources, { openmaptiles: { type: 'vector', url: `${server.url}/data/openmaptiles.json?key=k` } });
});

test('widths and radii are interpolated by zoom and grow with it', async () => {
  const style = await generated('openmaptiles');
  for (const layer of style.layers) {
    const prop = layer.type === 'line' ? 'line-width' : layer.type === 'circle' ? 'circle-radius' : undefined;
    if (!prop) continue;
    const value = paintOf(layer)[prop] as unknown[];
    assert.equal(value[0], 'interpolate', `${layer.id} ${prop}`);
    assert.deepEqual(value[2], ['zoom']);
    const stops = value.slice(3) as number[];
    const outputs = stops.filter((_, i) => i % 2 === 1);
    assert.ok(outputs.length >= 2 && outputs.every((v, i) => i === 0 || v > outputs[i - 1]), `${layer.id}: ${JSON.stringify(stops)}`);
  }
});

test('colours depend only on the layer name: same name, same colour in another source; different names differ', async () => {
  const a = await generated('world_cities');
  const b = await generated('zoomed_world_cities');
  assert.equal(a.layers.length, 3);
  assert.match(colorOf(a.layers[0]), /^hsl\(\d+, \d+%, \d+%\)$/);
  assert.deepEqual(a.layers.map(colorOf), b.layers.map(colorOf), 'layer "cities" has one colour in both sources');
  const omt = await generated('openmaptiles');
  assert.deepEqual(omt, await generated('openmaptiles'), 'the same style every time');
  const fills = omt.layers.filter((l) => l.type === 'fill').map(colorOf);
  assert.ok(new Set(fills).size >= 14, `16 layer names give (almost) 16 colours: ${fills.join(' ')}`);
});

test('composites get generated styles too: the union of their members\' layers', async () => {
  const style = await generated('world_cities+zoomed_world_cities');
  assert.deepEqual(validateStyleMin(style), []);
  assert.deepEqual(style.layers.map((l) => l.id), ['cities-fill', 'cities-line', 'cities-circle']);
  assert.deepEqual(style.sources, { 'world_cities+zoomed_world_cities': { type: 'vector', url: `${server.url}/data/world_cities+zoomed_world_cities.json` } });
});

test('a configured style with a source id takes precedence over the generated one', async () => {
  const style = await generated('omt_mbtiles');
  assert.equal(style.name, 'configured');
});

test('an MLT source gets a generated style whose tiles are the .pbf transcode URLs', async () => {
  const style = await generated('monaco');
  assert.deepEqual(validateStyleMin(style), []);
  const src = style.sources.monaco as { tiles?: string[]; url?: string };
  assert.deepEqual(src.tiles, [`${server.url}/data/monaco/{z}/{x}/{y}.pbf`]);
  assert.equal(src.url, undefined);
  assert.equal(style.layers.length, 3 * (await layerIds('monaco')).length);
});

test('raster sources and unknown ids have no generated style: 404 problem', async () => {
  for (const id of ['natural_earth', 'nothing-here']) {
    const res = await fetch(`${server.url}/styles/${id}/style.json`);
    assert.equal(res.status, 404, id);
    assert.equal(res.headers.get('content-type'), 'application/problem+json');
    const body = (await res.json()) as { detail: string };
    assert.ok(body.detail.includes(id));
  }
});
