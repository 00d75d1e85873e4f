// The embed page, home page and viewers at the HTTP level: query validation (400 problem bodies), unknown styles
// and sources (404), the Content-Security-Policy, the pinned library with Subresource Integrity in the default
// (script host) mode, the local copy in "local" mode byte for byte, escaping of every value the pages carry,
// and the routes in /openapi.json. The browser side is in test/embed-browser.test.ts and test/pages-browser.test.ts.
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { fixture, osmLibertyToml, startServer, type TestServer } from './helpers/server.js';

const require = createRequire(import.meta.url);
const LIB_DIR = path.dirname(require.resolve('maplibre-gl/package.json'));
const LIB_VERSION = (JSON.parse(readFileSync(path.join(LIB_DIR, 'package.json'), 'utf8')) as { version: string }).version;
const sri = (file: string) => `sha384-${createHash('sha384').update(readFileSync(path.join(LIB_DIR, 'dist', file))).digest('base64')}`;
const CDN = 'https://cdn.jsdelivr.net';

const toml = (server: string) => osmLibertyToml(`[server]\n${server}`);

interface PageConfig {
  style: string;
  options: { center: [number, number]; zoom: number; bearing: number; pitch: number; controls: string[]; markers: [number, number][]; theme?: string; hash: boolean; interactive: boolean; bounds?: number[] };
  worker: { url: string; integrity: string };
}

async function page(base: string, pathAndQuery: string): Promise<{ res: Response; html: string }> {
  const res = await fetch(base + pathAndQuery);
  return { res, html: await res.text() };
}

/** The JSON block a page's script reads. */
function pageConfig(html: string): PageConfig {
  const m = /<script type="application\/json" id="page-config">([^<]*)<\/script>/.exec(html);
  assert.ok(m, 'the page has its JSON block');
  return JSON.parse(m[1]) as PageConfig;
}

function directives(csp: string | null): Map<string, string[]> {
  assert.ok(csp, 'Content-Security-Policy is sent');
  return new Map(csp.split(';').map((d) => d.trim().split(/\s+/)).map(([name, ...values]) => [name, values]));
}

async function problemOf(res: Response): Promise<Record<string, unknown>> {
  assert.equal(res.headers.get('content-type'), 'application/problem+json');
  const body = (await res.json()) as Record<string, unknown>;
  for (const f of ['type', 'title', 'status', 'detail']) assert.ok(f in body, `problem has ${f}`);
  assert.equal(body.status, res.status);
  return body;
}

describe('default mode: the library from the pinned script host, rendering disabled', () => {
  let server: TestServer;
  before(async () => {
    server = await startServer({ toml: toml('disable_render = true') });
  });
  after(async () => {
    await server?.stop();
  });

  test('the embed page is served with rendering disabled, and loads maplibre-gl from the script host with SRI', async () => {
    const { res, html } = await page(server.url, '/embed/osm-liberty');
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /^text\/html/);
    const js = `${CDN}/npm/maplibre-gl@${LIB_VERSION}/dist/maplibre-gl.mjs`;
    const css = `${CDN}/npm/maplibre-gl@${LIB_VERSION}/dist/maplibre-gl.css`;
    assert.ok(html.includes(`<link rel="modulepreload" href="${js}" integrity="${sri('maplibre-gl.mjs')}" crossorigin="anonymous">`), 'module preloaded with its SRI hash');
    assert.ok(html.includes(`<link rel="stylesheet" href="${css}" integrity="${sri('maplibre-gl.css')}" crossorigin="anonymous">`), 'style sheet with its SRI hash');
    const map = /<script type="importmap" nonce="([^"]+)">([^<]*)<\/script>/.exec(html);
    assert.ok(map, 'an import map with a nonce');
    const importMap = JSON.parse(map[2]) as { imports: Record<string, string>; integrity: Record<string, string> };
    assert.equal(importMap.imports['maplibre-gl'], js);
    assert.equal(importMap.integrity[js], sri('maplibre-gl.mjs'));
    const cfg = pageConfig(html);
    assert.deepEqual(cfg.worker, { url: `${CDN}/npm/maplibre-gl@${LIB_VERSION}/dist/maplibre-gl-worker.mjs`, integrity: sri('maplibre-gl-worker.mjs') });
    assert.equal(cfg.style, `${server.url}/styles/osm-liberty/style.json`);

    const csp = directives(res.headers.get('content-security-policy'));
    assert.deepEqual(csp.get('default-src'), ["'none'"]);
    assert.deepEqual(new Set(csp.get('script-src')), new Set(["'self'", `'nonce-${map[1]}'`, server.url, CDN]));
    assert.deepEqual(csp.get('worker-src'), ['blob:']);
    assert.deepEqual(new Set(csp.get('connect-src')), new Set(["'self'", server.url, CDN]));
    assert.deepEqual(csp.get('object-src'), ["'none'"]);
    assert.deepEqual(csp.get('base-uri'), ["'none'"]);
    assert.ok(!csp.has('frame-ancestors'), 'the page may be framed by any site');
    for (const [, values] of csp) assert.ok(!values.some((v) => v.includes('unsafe')), `no unsafe-* source in ${values.join(' ')}`);
    // A fresh nonce per response.
    const again = await page(server.url, '/embed/osm-liberty');
    assert.notEqual(/nonce="([^"]+)"/.exec(again.html)?.[1], map[1]);
  });

  test('query parameters: defaults, clamps and the style centre', async () => {
    const defaults = pageConfig((await page(server.url, '/embed/osm-liberty')).html).options;
    assert.equal(defaults.zoom, 2);
    assert.equal(defaults.bearing, 0);
    assert.equal(defaults.pitch, 0);
    assert.deepEqual(defaults.controls, ['navigation']);
    const liberty = JSON.parse(readFileSync(fixture('styles/osm-liberty/style.json'), 'utf8')) as { center?: [number, number] };
    assert.deepEqual(defaults.center, liberty.center ?? [0, 0]);

    const { res, html } = await page(server.url, '/embed/osm-liberty?zoom=99&bearing=-1000&pitch=100&center=45.5,-73.25&controls=scale,bogus,fullscreen,scale&markers=1,2|3.5,-4&hash=true&interactive=false&theme=dark');
    assert.equal(res.status, 200);
    const o = pageConfig(html).options;
    assert.deepEqual(
      { zoom: o.zoom, bearing: o.bearing, pitch: o.pitch, center: o.center, controls: o.controls, markers: o.markers, hash: o.hash, interactive: o.interactive, theme: o.theme },
      { zoom: 22, bearing: -360, pitch: 85, center: [-73.25, 45.5], controls: ['scale', 'fullscreen'], markers: [[1, 2], [3.5, -4]], hash: true, interactive: false, theme: 'dark' },
    );
    assert.match(html, /<html lang="en" data-theme="dark">/);
    const b = pageConfig((await page(server.url, '/embed/osm-liberty?bounds=-10,-5,20,15&zoom=0')).html).options;
    assert.deepEqual(b.bounds, [-10, -5, 20, 15]);
  });

  test('invalid parameters answer 400 problem JSON naming the parameter', async () => {
    const cases: [string, string, RegExp][] = [
      ['zoom=NaN', 'zoom', /finite number/],
      ['zoom=Infinity', 'zoom', /finite number/],
      ['bearing=-Infinity', 'bearing', /finite number/],
      ['pitch=1e999', 'pitch', /finite number/],
      ['zoom=0x10', 'zoom', /finite number/],
      ['center=91,0', 'center', /latitude 91/],
      ['center=0,181', 'center', /longitude 181/],
      ['center=1', 'center', /lat,lng/],
      ['bounds=10,0,-10,5', 'bounds', /minLng <= maxLng/],
      ['bounds=0,0,1', 'bounds', /minLng,minLat,maxLng,maxLat/],
      ['markers=1,2|x,3', 'markers', /finite number/],
      ['hash=maybe', 'hash', /true or false/],
      ['interactive=nope', 'interactive', /true or false/],
      ['theme=%22%3E%3Cscript%3E', 'theme', /light, dark or auto/],
    ];
    for (const [query, parameter, detail] of cases) {
      const res = await fetch(`${server.url}/embed/osm-liberty?${query}`);
      assert.equal(res.status, 400, query);
      const body = await problemOf(res);
      assert.equal(body.parameter, parameter, query);
      assert.match(String(body.detail), detail, query);
    }
  });

  test('unknown styles and raster sources answer 404; a vector source id gets its generated style', async () => {
    for (const p of ['/embed/nope', '/embed/natural_earth', '/styles/nope/', '/data/nope/', `/assets/0.0.0/maplibre-gl.mjs`, `/assets/${LIB_VERSION}/package.json`, '/assets/pages/nope.js', '/assets/pages/..%2Fpage-files.ts']) {
      const res = await fetch(server.url + p);
      assert.equal(res.status, 404, p);
      await problemOf(res);
    }
    const { res, html } = await page(server.url, '/embed/openmaptiles');
    assert.equal(res.status, 200);
    assert.equal(pageConfig(html).style, `${server.url}/styles/openmaptiles/style.json`);
    const style = (await (await fetch(pageConfig(html).style)).json()) as { layers: { id: string }[] };
    assert.ok(style.layers.some((l) => l.id === 'water-fill'), 'the URL leads to the generated style');
  });

  test('markup cannot be injected through the style id or any parameter', async () => {
    const payload = '</script><script>alert(1)</script>"><img src=x onerror=alert(1)>';
    const q = encodeURIComponent(payload);
    const { res, html } = await page(server.url, `/embed/osm-liberty?key=${q}&controls=${q}`);
    assert.equal(res.status, 200);
    assert.ok(!html.includes('<script>alert(1)'), 'no script element from the query');
    assert.ok(!html.includes('<img src=x'), 'no img element from the query');
    const cfg = pageConfig(html);
    assert.equal(new URL(cfg.style).searchParams.get('key'), payload, 'the key reaches the style URL as data');
    assert.deepEqual(cfg.options.controls, [], 'unknown control tokens are dropped');
    const home = await page(server.url, `/?key=${q}`);
    assert.equal(home.res.status, 200);
    assert.ok(!home.html.includes('<script>alert(1)') && !home.html.includes('<img src=x'));
    const embedId = await fetch(`${server.url}/embed/${q}`);
    assert.equal(embedId.status, 404);
    const body = await problemOf(embedId);
    assert.equal(embedId.headers.get('content-type'), 'application/problem+json', 'an unknown id is answered as JSON, never as HTML');
    assert.ok(String(body.detail).includes(JSON.stringify(payload)));
  });

  test('the home page lists every style and source with its links; without rendering, no render links', async () => {
    const { res, html } = await page(server.url, '/');
    assert.equal(res.status, 200);
    for (const href of [
      '/styles/osm-liberty/',
      '/styles/osm-liberty/style.json',
      '/embed/osm-liberty',
      '/data/openmaptiles/',
      '/data/openmaptiles.json',
      '/styles/openmaptiles/style.json',
      '/embed/openmaptiles',
      '/data/natural_earth/',
      '/data/natural_earth.json',
      '/data/natural_earth/0/0/0.png',
      '/_openapi',
      '/openapi.json',
    ]) {
      assert.ok(html.includes(`href="${server.url}${href}"`), `links to ${href}`);
    }
    assert.ok(!html.includes('/embed/natural_earth'), 'no embed page for a raster source');
    assert.ok(!html.includes('/styles/osm-liberty/wmts.xml') && !html.includes('/static/'), 'no render links while rendering is disabled');
    const cfg = JSON.parse(/id="page-config">([^<]*)</.exec(html)![1]) as { previews: unknown[] };
    assert.equal(cfg.previews.length, 3, 'one preview per style and source');
    assert.equal(cfg.previews[0], `${server.url}/styles/osm-liberty/style.json`);
  });

  test('every page route is in /openapi.json', async () => {
    const doc = (await (await fetch(`${server.url}/openapi.json`)).json()) as { paths: Record<string, Record<string, { parameters?: { name: string }[] }>> };
    for (const p of ['/', '/embed/{style}', '/styles/{style}/', '/data/{source}/', '/assets/pages/{file}', '/assets/{version}/{file}']) {
      assert.ok(doc.paths[p]?.get, `GET ${p} is documented`);
    }
    const names = doc.paths['/embed/{style}'].get.parameters!.map((p) => p.name).sort();
    assert.deepEqual(names, ['bearing', 'bounds', 'center', 'controls', 'hash', 'interactive', 'key', 'markers', 'pitch', 'style', 'theme', 'zoom']);
  });
});

describe('local mode: the same files from this service', () => {
  let server: TestServer;
  before(async () => {
    server = await startServer({ toml: toml('disable_render = true\nembed_assets = "local"') });
  });
  after(async () => {
    await server?.stop();
  });

  test('the page names the local copies, which are the npm package files byte for byte', async () => {
    const { res, html } = await page(server.url, '/data/openmaptiles/');
    assert.equal(res.status, 200);
    const csp = directives(res.headers.get('content-security-policy'));
    assert.ok(![...csp.values()].flat().some((v) => v.startsWith('https://')), 'no outside origin in the policy');
    assert.ok(!html.includes('https://'), 'no outside URL in the page');
    const files: [string, string, RegExp][] = [
      ['maplibre-gl.mjs', path.join(LIB_DIR, 'dist/maplibre-gl.mjs'), /^text\/javascript/],
      ['maplibre-gl-worker.mjs', path.join(LIB_DIR, 'dist/maplibre-gl-worker.mjs'), /^text\/javascript/],
      ['maplibre-gl.css', path.join(LIB_DIR, 'dist/maplibre-gl.css'), /^text\/css/],
    ];
    for (const [name, file, type] of files) {
      const url = `${server.url}/assets/${LIB_VERSION}/${name}`;
      assert.ok(html.includes(url), `the page loads ${url}`);
      const got = await fetch(url);
      assert.equal(got.status, 200);
      assert.match(got.headers.get('content-type') ?? '', type);
      assert.match(got.headers.get('cache-control') ?? '', /immutable/);
      assert.ok(Buffer.from(await got.arrayBuffer()).equals(readFileSync(file)), `${name} is the package's file`);
    }
    const inspectDir = path.dirname(require.resolve('@maplibre/maplibre-gl-inspect/package.json'));
    const inspectVersion = (JSON.parse(readFileSync(path.join(inspectDir, 'package.json'), 'utf8')) as { version: string }).version;
    const inspectUrl = `${server.url}/assets/${inspectVersion}/maplibre-gl-inspect.mjs`;
    assert.ok(html.includes(inspectUrl), 'the inspect view loads maplibre-gl-inspect');
    const inspect = await fetch(inspectUrl);
    assert.ok(Buffer.from(await inspect.arrayBuffer()).equals(readFileSync(path.join(inspectDir, 'dist/maplibre-gl-inspect.mjs'))));
    const script = await fetch(`${server.url}/assets/pages/data.js`);
    assert.equal(script.status, 200);
    assert.match(script.headers.get('content-type') ?? '', /^text\/javascript/);
  });
});
