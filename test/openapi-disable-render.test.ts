// /openapi.json lists exactly the routes the server has mounted: with server.disable_render the routes that exist
// only for server-side rendering (static maps, social cards, raster tiles of styles and their TileJSON, WMTS and OGC map tiles)
// are left out, and they really answer 404; without it they are listed, and they answer something else.
// The enabled server points at a Chromium that does not exist: the routes are mounted (they answer 503) but no
// browser starts, which keeps it cheap. A reload that switches disable_render changes the document with it.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { waitFor } from './helpers/foundation.js';
import { startServer, type TestServer } from './helpers/server.js';

/** Documented path → a concrete URL of it for the style "plain". */
const RENDER_ONLY: Record<string, string> = {
  '/styles/{style}/static/{view}/{size}': '/styles/plain/static/0,0,1/64x64.png',
  '/styles/{style}/static/raw/{view}/{size}': '/styles/plain/static/raw/0,0,1/64x64.png',
  '/og/{style}': '/og/plain?center=0,0',
  '/styles/{style}/{z}/{x}/{y}{scale}.{format}': '/styles/plain/0/0/0.png',
  '/styles/{style}/{tile_size}/{z}/{x}/{y}{scale}.{format}': '/styles/plain/256/0/0/0.png',
  '/styles/{style}.json': '/styles/plain.json',
  '/styles/{style}/wmts.xml': '/styles/plain/wmts.xml',
  '/ogc/styles': '/ogc/styles',
  '/ogc/map/tiles': '/ogc/map/tiles',
  '/ogc/styles/{styleId}/map/tiles': '/ogc/styles/plain/map/tiles',
  '/ogc/styles/{styleId}/map/tiles/{tileMatrixSetId}': '/ogc/styles/plain/map/tiles/WebMercatorQuad',
  '/ogc/styles/{styleId}/map/tiles/{tileMatrixSetId}/{tileMatrix}/{tileRow}/{tileCol}': '/ogc/styles/plain/map/tiles/WebMercatorQuad/0/0/0',
};
/** Routes that do not depend on rendering (a sample). */
const ALWAYS = ['/health', '/ping', '/openapi.json', '/styles.json', '/styles/{style}/style.json', '/styles/{style}/sprite{scale}.{format}', '/data/{source}.json'];

function config(disableRender: boolean): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'tsts-openapi-render-'));
  const style = path.join(dir, 'plain.json');
  writeFileSync(style, JSON.stringify({ version: 8, name: 'plain', sources: {}, layers: [{ id: 'bg', type: 'background', paint: { 'background-color': '#336699' } }] }));
  return `[server]\ndisable_render = ${disableRender}\n[[styles]]\nid = "plain"\npath = "${style}"\n[cache]\ndir = "${path.join(dir, 'cache')}"\n[render]\nbackend = "chromium"\nchromium_path = "/nonexistent/chromium"\n`;
}

async function documentedPaths(s: TestServer): Promise<Set<string>> {
  const res = await fetch(`${s.url}/openapi.json`, { signal: AbortSignal.timeout(10_000) });
  assert.equal(res.status, 200);
  return new Set(Object.keys(((await res.json()) as { paths: Record<string, unknown> }).paths));
}

/** Whether /ogc links the dataset's map tilesets (to a list that resolves) and /ogc/conformance declares the class. */
async function datasetTilesets(s: TestServer): Promise<{ link: boolean; declared: boolean }> {
  const landing = (await (await fetch(`${s.url}/ogc`, { signal: AbortSignal.timeout(10_000) })).json()) as { links: { rel: string; href: string }[] };
  const l = landing.links.find((x) => x.rel === 'http://www.opengis.net/def/rel/ogc/1.0/tilesets-map');
  if (l) assert.equal((await fetch(l.href, { signal: AbortSignal.timeout(10_000) })).status, 200, l.href);
  const { conformsTo } = (await (await fetch(`${s.url}/ogc/conformance`, { signal: AbortSignal.timeout(10_000) })).json()) as { conformsTo: string[] };
  return { link: l !== undefined, declared: conformsTo.includes('http://www.opengis.net/spec/ogcapi-tiles-1/1.0/conf/dataset-tilesets') };
}

describe('/openapi.json follows server.disable_render', () => {
  let off: TestServer;
  let on: TestServer;
  before(async () => {
    [off, on] = await Promise.all([startServer({ toml: config(true), workers: 1 }), startServer({ toml: config(false), workers: 1 })]);
  });
  after(async () => {
    await Promise.all([off?.stop(), on?.stop()]);
  });

  test('disable_render = true: the render-only routes are not documented and answer 404', async () => {
    const paths = await documentedPaths(off);
    for (const p of ALWAYS) assert.ok(paths.has(p), `${p} is documented`);
    for (const [p, url] of Object.entries(RENDER_ONLY)) {
      assert.ok(!paths.has(p), `${p} is not documented`);
      const res = await fetch(off.url + url, { signal: AbortSignal.timeout(30_000) });
      assert.equal(res.status, 404, url);
      assert.equal(res.headers.get('content-type'), 'application/problem+json', url);
      assert.match(((await res.json()) as { detail: string }).detail, /^no route for GET .*server\.disable_render is set/, url);
    }
    // Without map tiles, the landing page links no map tilesets and dataset-tilesets is not declared.
    assert.deepEqual(await datasetTilesets(off), { link: false, declared: false });
  });

  test('disable_render = false: the render-only routes are documented and routed', async () => {
    const paths = await documentedPaths(on);
    let images = 0;
    let documents = 0;
    for (const p of ALWAYS) assert.ok(paths.has(p), `${p} is documented`);
    for (const [p, url] of Object.entries(RENDER_ONLY)) {
      assert.ok(paths.has(p), `${p} is documented`);
      const res = await fetch(on.url + url, { signal: AbortSignal.timeout(30_000) });
      const body = await res.text();
      // 200 for the TileJSON and WMTS, 503 for images (no renderer can start here): never the 404 of a missing
      // route, and never another failure (a 500 is a broken route, not a switched-off renderer).
      if (res.status === 503) {
        assert.equal(res.headers.get('content-type'), 'application/problem+json', url);
        assert.equal((JSON.parse(body) as { title: string }).title, 'Rendering unavailable', url);
        images++;
      } else {
        assert.equal(res.status, 200, `${url}: ${body.slice(0, 200)}`);
        documents++;
      }
    }
    // Six image routes (static map and its raw form, social card, two raster tile forms, the OGC map tile) and six
    // documents (TileJSON, WMTS, the OGC styles list, the dataset's and the style's map tileset lists, and the tileset).
    assert.deepEqual({ images, documents }, { images: 6, documents: 6 });
  });

  test('the landing page links the map tilesets of the dataset, and declares dataset-tilesets, only with styles', async () => {
    assert.deepEqual(await datasetTilesets(on), { link: true, declared: true });
  });

  test('the two documents differ by exactly the render-only routes', async () => {
    const [without, withRender] = await Promise.all([documentedPaths(off), documentedPaths(on)]);
    assert.deepEqual([...withRender].filter((p) => !without.has(p)).sort(), Object.keys(RENDER_ONLY).sort());
    assert.deepEqual([...without].filter((p) => !withRender.has(p)), []);
  });

  test('a reload that switches disable_render changes the document and the routes with it', async () => {
    const file = off.configFile!;
    writeFileSync(file, readFileSync(file, 'utf8').replace('disable_render = true', 'disable_render = false'));
    off.proc.kill('SIGHUP');
    const paths = await waitFor('the reloaded document', async () => {
      const p = await documentedPaths(off);
      return p.has('/og/{style}') ? p : undefined;
    });
    for (const p of Object.keys(RENDER_ONLY)) assert.ok(paths.has(p), `${p} is documented after the reload`);
    const res = await fetch(`${off.url}/styles/plain.json`, { signal: AbortSignal.timeout(10_000) });
    assert.equal(res.status, 200);
  });
});
