// A seeded fuzz run over every route family: 400 requests built from the server's own /openapi.json, each a
// valid request with some of its parts spoiled (path segments and query values replaced by hostile text:
// traversal, percent-escapes, control characters, huge numbers, very long strings, built-in property names;
// unknown query keys; random JSON bodies for the JSON routes; random multipart uploads), plus the admin and
// metrics listeners. Under the fixed fast-check seed (test/helpers/fast-check.ts) the run is the same every
// time. Every answer: no 5xx, problem JSON on every 4xx, and no internal detail (stack frames, file paths,
// exception names) in any error body.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import fc, { FC_SEED } from './helpers/fast-check.js';
import { request, type RawResponse } from './helpers/foundation.js';
import { answerProblems, fillTemplate, QUERY_SAMPLES, startEveryRouteServer, type DocumentedRoute, type EveryRouteServer } from './helpers/every-route.js';
import { multipartBody } from './helpers/upload.js';

const RUNS = 400;

let every: EveryRouteServer;
before(async () => {
  every = await startEveryRouteServer();
});
after(() => every?.server.stop());

/** What an error body must never show: stack frames, paths of this machine, exception names and texts. */
const INTERNAL = /\bat [\w.<>]+ \(|node:internal|\/work\/|\/tmp\/|\/usr\/|node_modules|\.[cm]?[jt]s:\d+|\b(TypeError|ReferenceError|RangeError|SyntaxError|SqliteError)\b|Cannot read propert|is not a function|ENOENT|EACCES|EISDIR/;

/** Hostile text for one URL part, already percent-encoded where a raw character would not be a valid target. */
const hostile: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom('..', '%2e%2e', '%2E%2E%2F', '..%2f..%2fetc%2fpasswd', '%00', '%zz', '%', '%25', '%0a', '%0d%0a', '%20', '~', '+', ',', ';', '@', '-1', '0', '1e309', '99999999999999999999', 'NaN', 'Infinity', '__proto__', 'constructor', 'toString', '%C0%AE', '%F0%9F%97%BA', '.', '.json', '@2x', '@9x'),
  fc.string({ maxLength: 40 }).map(encodeURIComponent),
  fc.string({ unit: 'binary', maxLength: 20 }).map(encodeURIComponent),
  fc.integer({ min: -5, max: 5000 }).map(String),
  fc.double({ noNaN: false }).map((d) => encodeURIComponent(String(d))),
  fc.constantFrom('a'.repeat(2000), '9'.repeat(300)),
);

/** A query string: some documented parameters with hostile or valid values, and sometimes an unknown key. */
function queryOf(route: DocumentedRoute): fc.Arbitrary<string> {
  const names = [...route.queryParams, 'key', 'zzz', '__proto__'];
  return fc
    .array(fc.tuple(fc.constantFrom(...names), fc.oneof(hostile, fc.constant('')), fc.boolean()), { maxLength: 4 })
    .map((pairs) => pairs.map(([n, value, valid]) => `${n}=${valid && Object.hasOwn(QUERY_SAMPLES, n) ? encodeURIComponent(QUERY_SAMPLES[n]) : value}`).join('&'));
}

interface Fuzzed {
  label: string;
  base: string;
  path: string;
  method: string;
  body?: string | Buffer;
  headers?: Record<string, string>;
}

/** A request to a documented GET or DELETE route, some of whose path parameters and query are spoiled. */
function routeRequest(routes: DocumentedRoute[], base: string): fc.Arbitrary<Fuzzed> {
  return fc.constantFrom(...routes).chain((route) =>
    fc.record({ spoiled: fc.subarray(route.pathParams), values: fc.array(hostile, { minLength: route.pathParams.length, maxLength: route.pathParams.length }), query: queryOf(route) }).map(({ spoiled, values, query }) => {
      const given: Record<string, string> = {};
      spoiled.forEach((p) => (given[p] = values[route.pathParams.indexOf(p)]));
      const path = `${fillTemplate(route.template, given)}${query ? `?${query}` : ''}`;
      return { label: `${route.method} ${path.slice(0, 300)}`, base, path, method: route.method };
    }),
  );
}

/** A JSON body, random or shaped like the real one with hostile members, to a JSON route. */
function jsonRequest(base: string): fc.Arbitrary<Fuzzed> {
  // The elevation routes' bodies: points in both forms and profile lines, with hostile numbers and members.
  const coordinate = fc.oneof(fc.double(), fc.jsonValue(), fc.constantFrom(-122.4, 37.8, 181, -91, 1e308));
  const point = fc.oneof(fc.tuple(coordinate, coordinate), fc.record({ lon: coordinate, lat: coordinate, z: fc.oneof(fc.integer({ min: -2, max: 30 }), fc.jsonValue()) }, { requiredKeys: [] }), fc.jsonValue());
  const elevationBodies = fc.oneof(
    fc.record({ points: fc.oneof(fc.array(point, { maxLength: 20 }), fc.jsonValue()) }, { requiredKeys: [] }).map((v) => JSON.stringify(v)),
    fc
      .record({ type: fc.constantFrom('LineString', 'Feature', 'Point', 'x'), coordinates: fc.oneof(fc.array(fc.tuple(coordinate, coordinate), { maxLength: 8 }), fc.jsonValue()), polyline: fc.oneof(fc.string(), fc.constant('_p~iF~ps|U_ulLnnqC_mqNvxq`@')), samples: fc.oneof(fc.integer({ min: -5, max: 100_000 }), fc.jsonValue()), step_m: fc.oneof(fc.double(), fc.jsonValue()) }, { requiredKeys: [] })
      .map((v) => JSON.stringify(v)),
  );
  const body = fc.oneof(
    fc.jsonValue().map((v) => JSON.stringify(v)),
    fc.record({ source: fc.oneof(fc.constantFrom('openmaptiles', 'cities', 'natural_earth', 'dem', 'both', 'openmaptiles+cities'), fc.string()), bbox: fc.jsonValue(), zoom: fc.jsonValue(), layers: fc.jsonValue(), limit: fc.jsonValue() }, { requiredKeys: ['source'] }).map((v) => JSON.stringify(v)),
    fc.record({ path: fc.oneof(fc.string(), fc.constant('path-3+f00(0,0|1,1)'), fc.jsonValue()), marker: fc.oneof(fc.string(), fc.constant('pin-s+f00(1,1)'), fc.jsonValue()), geojson: fc.jsonValue(), padding: fc.jsonValue(), maxzoom: fc.jsonValue(), latlng: fc.jsonValue() }, { requiredKeys: [] }).map((v) => JSON.stringify(v)),
    fc.string({ maxLength: 200 }),
    elevationBodies,
  );
  const path = fc.constantFrom('/api/spatial/query', '/styles/osm-liberty/static/auto/16x16.png', '/styles/osm-liberty/static/0,0,1/16x16.png', '/styles/nope/static/auto/16x16.png', '/api/elevation/elevation', '/api/elevation/elevation/profile', '/data/elevation/elevation', '/api/elevation/openmaptiles');
  const type = fc.constantFrom('application/json', 'application/json; charset=utf-8', 'text/plain', 'application/x-www-form-urlencoded');
  return fc.record({ path, body, type }).map(({ path, body, type }) => ({ label: `POST ${path} ${body.slice(0, 200)}`, base, path, method: 'POST', body, headers: { 'content-type': type } }));
}

/** A multipart upload with a random field, file name and content. */
function uploadRequest(base: string): fc.Arbitrary<Fuzzed> {
  return fc
    .record({ field: fc.oneof(fc.constant('file'), fc.string({ maxLength: 20 })), name: fc.oneof(fc.constantFrom('a.mbtiles', 'b.tif', '../x.mbtiles', 'x.db', 'noext'), fc.string({ maxLength: 40 })), data: fc.uint8Array({ maxLength: 2000 }) })
    .map(({ field, name, data }) => {
      // Quotes and line breaks would end the part header early: the file name is fuzzed inside the header's rules.
      const fileName = name.replace(/["\r\n\\]/g, '_');
      const safeField = field.replace(/["\r\n\\]/g, '_');
      return {
        label: `POST /api/upload field ${JSON.stringify(safeField)} file ${JSON.stringify(fileName)}`,
        base,
        path: '/api/upload',
        method: 'POST',
        body: multipartBody([{ field: safeField, fileName, data }]),
        headers: { 'content-type': 'multipart/form-data; boundary=----tsts-upload-boundary-7d1f0c' },
      };
    });
}

/** Requests to the admin and metrics listeners. */
function listenerRequest(admin: string, metrics: string): fc.Arbitrary<Fuzzed> {
  return fc.record({ which: fc.boolean(), method: fc.constantFrom('GET', 'POST', 'DELETE', 'PUT'), path: fc.constantFrom('/__admin/reload', '/metrics', '/metrics/health', '/', '/__admin/'), extra: hostile }).map(({ which, method, path, extra }) => {
    const base = which ? admin : metrics;
    const p = `${path}${method === 'POST' ? `?flush=${extra}` : `/${extra}`}`;
    return { label: `${which ? 'admin' : 'metrics'} ${method} ${p.slice(0, 200)}`, base, path: p, method };
  });
}

function bodyProblems(label: string, res: RawResponse): string[] {
  if (res.status < 400) return [];
  const text = res.body.toString('utf8');
  return INTERNAL.test(text) ? [`${label}: internal detail in the ${res.status} body: ${text.slice(0, 300)}`] : [];
}

test(`${RUNS} fuzzed requests over every route family (seed ${FC_SEED}): no 5xx, problem JSON on 4xx, no internal detail`, { timeout: 600_000 }, async () => {
  const routes = every.routes.filter((r) => r.method === 'GET' || r.method === 'DELETE');
  const families = new Set(routes.map((r) => r.template.split('/')[1]));
  for (const f of ['data', 'styles', 'fonts', 'files', 'api', 'og', 'embed', 'assets', '_openapi']) assert.ok(families.has(f), `the route family /${f} is not documented`);
  const base = every.server.url;
  const arb = fc.oneof(
    { weight: 6, arbitrary: routeRequest(routes, base) },
    { weight: 2, arbitrary: jsonRequest(base) },
    { weight: 1, arbitrary: uploadRequest(base) },
    { weight: 1, arbitrary: listenerRequest(every.adminUrl, every.metricsUrl) },
  );
  const problems: string[] = [];
  const seen = new Set<string>();
  await fc.assert(
    fc.asyncProperty(arb, async (r) => {
      const res = await request(r.base, r.path, { method: r.method, body: r.body, headers: r.headers, timeoutMs: 60_000 });
      seen.add(r.label.split(' ')[1]?.split('/')[1] ?? '');
      problems.push(...answerProblems(r.label, res), ...bodyProblems(r.label, res));
    }),
    { numRuns: RUNS },
  );
  assert.equal(problems.length, 0, `${problems.length} answers broke the rules:\n${problems.slice(0, 20).join('\n')}`);
  assert.ok(seen.size >= 8, `only ${seen.size} route families reached: ${[...seen].join(', ')}`);
  // Failed uploads leave nothing; the server is still up.
  assert.deepEqual(readdirSync(every.uploadDir).filter((n) => n.endsWith('.part')), []);
  assert.equal((await request(base, '/health')).status, 200);
});
