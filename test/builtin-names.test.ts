// Names of built-in object properties (`__proto__`, `constructor`, `toString`, ...) in every place a client can
// put a name: each path segment and each query value of every documented route, an unknown query key, the JSON
// body of the spatial query, an upload's file name and field, and the paths of the admin and metrics listeners.
// A lookup keyed by such a name on a plain object finds an inherited member instead of nothing (the
// /assets/ and /_openapi/ routes once answered 500 that way), so none may answer 5xx, and every 4xx is problem JSON.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import path from 'node:path';
import { encodeMvt } from '../src/tiles/mvt-encode.js';
import { request, tempDir, writeMbtiles } from './helpers/foundation.js';
import { answerProblems, fillTemplate, QUERY_SAMPLES, startEveryRouteServer, type EveryRouteServer } from './helpers/every-route.js';
import { multipartBody, postMultipart, uploadFile } from './helpers/upload.js';

/** Every property an ordinary object inherits from Object.prototype, and `prototype` (a function's). */
const BUILTIN_NAMES = [...Object.getOwnPropertyNames(Object.prototype), 'prototype'];

let every: EveryRouteServer;
before(async () => {
  every = await startEveryRouteServer();
});
after(() => every?.server.stop());

interface Probe {
  label: string;
  base: string;
  path: string;
  method?: string;
  body?: string;
  headers?: Record<string, string>;
}

/** Runs the probes a few at a time and returns every answer that broke the rules. */
async function run(probes: Probe[]): Promise<string[]> {
  const problems: string[] = [];
  let next = 0;
  const worker = async () => {
    while (next < probes.length) {
      const p = probes[next++];
      const res = await request(p.base, p.path, { method: p.method, headers: p.headers, body: p.body });
      problems.push(...answerProblems(p.label, res));
    }
  };
  await Promise.all([worker(), worker(), worker(), worker()]);
  return problems;
}

test('the names swept are the inherited members of a plain object', () => {
  for (const n of ['__proto__', 'constructor', 'toString', 'valueOf', 'hasOwnProperty', 'isPrototypeOf', '__defineGetter__', 'prototype']) assert.ok(BUILTIN_NAMES.includes(n), n);
});

test('built-in property names in every path segment and query value of every route: no 5xx, problem JSON on 4xx', async () => {
  const probes: Probe[] = [];
  const base = every.server.url;
  const get = every.routes.filter((r) => r.method === 'GET' || r.method === 'DELETE');
  assert.ok(get.length >= 30, `only ${get.length} routes documented`);
  for (const route of get) {
    const valid = fillTemplate(route.template);
    for (const name of BUILTIN_NAMES) {
      const add = (label: string, path: string) => probes.push({ label: `${route.method} ${path} (${label})`, base, path, method: route.method });
      for (const p of route.pathParams) add(`{${p}}`, fillTemplate(route.template, { [p]: name }));
      // Fixed segments too: `/assets/pages/x` and `/assets/{version}/x` are both reached through them.
      const segments = valid.split('/');
      segments.forEach((seg, i) => {
        if (i === 0 || seg === '' || route.template.split('/')[i]?.includes('{')) return;
        add(`segment ${i}`, [...segments.slice(0, i), name, ...segments.slice(i + 1)].join('/'));
      });
      for (const q of route.queryParams) add(`?${q}`, `${valid}?${q}=${name}`);
      add('unknown query key', `${valid}?${name}=${name}`);
    }
  }
  for (const name of BUILTIN_NAMES) {
    const json = { 'content-type': 'application/json' };
    const query = '/api/spatial/query';
    for (const body of [{ source: name }, { source: 'openmaptiles', layers: [name] }, { source: 'openmaptiles', [name]: name }]) {
      probes.push({ label: `POST ${query} ${JSON.stringify(body)}`, base, path: query, method: 'POST', body: JSON.stringify(body), headers: json });
    }
    probes.push({ label: `POST ${query} {"${name}":{}}`, base, path: query, method: 'POST', body: `{"${name}":{"source":"openmaptiles"}}`, headers: json });
    probes.push({ label: `POST /api/upload?${name}`, base, path: `/api/upload?${name}=1`, method: 'POST', body: '', headers: { 'content-type': `multipart/form-data; boundary=${name}` } });
    for (const path of [`/${name}`, `/__admin/${name}`, `/__admin/reload?${name}=1`, `/__admin/reload?flush=${name}`]) {
      probes.push({ label: `admin POST ${path}`, base: every.adminUrl, path, method: 'POST' });
      probes.push({ label: `admin GET ${path}`, base: every.adminUrl, path });
    }
    for (const path of [`/${name}`, `/metrics/${name}`, `/metrics?${name}=1`]) probes.push({ label: `metrics GET ${path}`, base: every.metricsUrl, path });
  }
  const problems = await run(probes);
  assert.equal(problems.length, 0, `${problems.length} of ${probes.length} answers broke the rules:\n${problems.slice(0, 30).join('\n')}`);
});

test('built-in property names as an upload\'s file name, extension and field: 400 problem JSON, nothing left on disk', async () => {
  const problems: string[] = [];
  for (const name of BUILTIN_NAMES) {
    for (const [field, fileName] of [['file', name], ['file', `tile.${name}`], [name, 'tile.mbtiles']]) {
      const res = await postMultipart(every.server.url, multipartBody([{ field, fileName, data: 'not a tile archive' }]));
      if (res.status !== 400 || !String(res.headers['content-type']).startsWith('application/problem+json')) problems.push(`field ${field}, file ${fileName}: ${res.status} ${res.text.slice(0, 200)}`);
    }
  }
  assert.deepEqual(problems, []);
  assert.deepEqual(readdirSync(every.uploadDir), []);
});

test('an uploaded tileset whose field and property names are built-in names: served under those names', async () => {
  // Feature properties named __proto__, constructor and toString, and metadata declaring them (one with the type
  // "constructor"): a plain object would drop the first and find a function for the last type.
  const properties = Object.create(null) as Record<string, string | number>;
  properties['__proto__'] = 'p';
  properties['constructor'] = 'c';
  properties['toString'] = 5;
  const tile = encodeMvt([{ name: 'names', extent: 4096, version: 2, features: [{ id: 1, type: 1, geometry: [[100, 100]], properties }] }]);
  const json = '{"vector_layers":[{"id":"names","fields":{"__proto__":"String","constructor":"constructor","toString":"Number"}}]}';
  const file = writeMbtiles(path.join(tempDir('tsts-names-'), 'names.mbtiles'), { name: 'names', format: 'pbf', minzoom: '0', maxzoom: '0', json }, [{ z: 0, x: 0, y: 0, data: tile }]);
  const up = await uploadFile(every.server.url, 'names.mbtiles', file);
  assert.equal(up.status, 200, up.text);
  const id = String(up.json.source_id);
  try {
    const schema = JSON.parse((await request(every.server.url, `/api/spatial/schema/${id}`)).body.toString('utf8')) as { layers: { fields: { name: string; type: string }[] }[] };
    assert.deepEqual(schema.layers[0].fields, [
      { name: '__proto__', type: 'String' },
      { name: 'constructor', type: 'constructor' },
      { name: 'toString', type: 'Number' },
    ]);
    const geojson = JSON.parse((await request(every.server.url, `/data/${id}/0/0/0.geojson`)).body.toString('utf8')) as { features: { properties: Record<string, unknown> }[] };
    const props = geojson.features[0].properties;
    assert.deepEqual([Object.hasOwn(props, '__proto__') && props['__proto__'], props['constructor'], props['toString']], ['p', 'c', 5]);
    for (const ext of ['pbf', 'mlt']) assert.equal((await request(every.server.url, `/data/${id}/0/0/0.${ext}`)).status, 200, ext);
  } finally {
    await request(every.server.url, `/api/upload/${id}`, { method: 'DELETE' });
  }
});
