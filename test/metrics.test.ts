// The metrics pull listener through the real server: known traffic, then a scrape of `[telemetry] scrape_bind`
// checked value by value (hits and misses, z buckets, verbose zoom labels, route templates), a flood of unknown
// URLs that adds no series, uploaded sources under one label value (strict) or their own ids (verbose), the
// listener's own paths, and nothing on the main listener.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { fixture, freePort, runCli, startServer, writeTempConfig, type TestServer } from './helpers/server.js';
import { parseScrape, type Scrape } from './helpers/prom-text.js';
import { tempDir, waitFor } from './helpers/foundation.js';
import { uploadFile } from './helpers/upload.js';

const TILE_ROUTE = '/data/{source}/{z}/{x}/{y}.{format}';
const SOURCES = `
[[sources]]
id = "omt"
type = "pmtiles"
path = "${fixture('vector/omt-planet-z0-1.pmtiles')}"
[[sources]]
id = "omt-mb"
type = "mbtiles"
path = "${fixture('vector/omt-z0-1.mbtiles')}"
[[sources]]
id = "png"
type = "pmtiles"
path = "${fixture('raster/natural-earth-png-z0-1.pmtiles')}"
`;

async function withScrape(telemetry: string, workers = 1, server = ''): Promise<{ s: TestServer; metricsUrl: string }> {
  const port = await freePort();
  const s = await startServer({ toml: `${server ? `[server]\n${server}\n` : ''}${SOURCES}\n[telemetry]\nscrape_bind = "127.0.0.1:${port}"\n${telemetry}\n`, workers });
  return { s, metricsUrl: `http://127.0.0.1:${port}` };
}

async function scrape(base: string, path = '/metrics'): Promise<Scrape> {
  const res = await fetch(base + path);
  assert.equal(res.status, 200);
  assert.match(res.headers.get('content-type') ?? '', /^text\/plain; version=0\.0\.4/);
  return parseScrape(await res.text());
}

async function get(url: string, headers: Record<string, string> = {}): Promise<{ status: number; bytes: number }> {
  const res = await fetch(url, { headers });
  return { status: res.status, bytes: (await res.arrayBuffer()).byteLength };
}

describe('metrics listener (strict labels)', () => {
  let s: TestServer;
  let metricsUrl: string;
  before(async () => ({ s, metricsUrl } = await withScrape('')));
  after(() => s?.stop());

  test('/ping says the listener is bound; the main listener has no metrics', async () => {
    const ping = (await (await fetch(`${s.url}/ping`)).json()) as { scrape_listener_active: boolean };
    assert.equal(ping.scrape_listener_active, true);
    assert.equal((await get(`${s.url}/metrics`)).status, 404);
    assert.equal((await get(`${s.url}/metrics/health`)).status, 404);
    const health = await fetch(`${metricsUrl}/metrics/health`);
    assert.equal(health.status, 200);
    assert.equal(await health.text(), 'OK');
    const other = await fetch(`${metricsUrl}/data.json`);
    assert.equal(other.status, 404);
    assert.equal(other.headers.get('content-type'), 'application/problem+json');
  });

  test('the ten metrics of the spec, with their types', async () => {
    // Each family appears once it has a series; one tile request gives the HTTP and tile families.
    assert.equal((await get(`${s.url}/data/png/0/0/0.png`)).status, 200);
    const m = await scrape(metricsUrl);
    const expected: Record<string, string> = {
      http_requests_total: 'counter',
      http_request_duration_seconds: 'histogram',
      http_requests_in_flight: 'gauge',
      tile_requests_total: 'counter',
      tile_request_duration_seconds: 'histogram',
      tile_request_bytes: 'histogram',
      tile_cache_hits_total: 'counter',
      tile_cache_misses_total: 'counter',
      render_duration_seconds: 'histogram',
      render_errors_total: 'counter',
    };
    for (const [name, type] of Object.entries(expected)) assert.equal(m.types.get(name), type, name);
    // The scrape is on its own listener: nothing is in flight on the main one.
    assert.equal(m.value('http_requests_in_flight'), 0);
  });

  test('hits, misses and not_found, per source and z bucket, from both tile paths', async () => {
    const base = (await scrape(metricsUrl)).value('tile_requests_total', { source: 'omt', outcome: 'hit' }) ?? 0;
    assert.equal(base, 0);
    const statuses: number[] = [];
    // The fast lane: 0/0/0 once from the source then twice from the cache; 1/1/0 once and once more.
    for (const p of ['0/0/0', '0/0/0', '0/0/0', '1/1/0', '1/1/0']) statuses.push((await get(`${s.url}/data/omt/${p}.pbf`)).status);
    // Past the source's maxzoom (1): 204 without asking the cache, at a mid and a high zoom.
    for (const p of ['8/10/10', '14/100/100', '14/101/100']) statuses.push((await get(`${s.url}/data/omt/${p}.pbf`)).status);
    // Through Hono (a stored-gzip tile asked as identity still goes through the lane; an ad-hoc composite does not).
    statuses.push((await get(`${s.url}/data/omt+omt-mb/0/0/0.pbf`)).status);
    statuses.push((await get(`${s.url}/data/omt+omt-mb/0/0/0.pbf`)).status);
    assert.deepEqual(statuses, [200, 200, 200, 200, 200, 204, 204, 204, 200, 200]);

    const m = await scrape(metricsUrl);
    const tiles = (labels: Record<string, string>) => m.value('tile_requests_total', { source: 'omt', format: 'pbf', ...labels });
    assert.equal(tiles({ z_bucket: 'low', outcome: 'miss' }), 2);
    assert.equal(tiles({ z_bucket: 'low', outcome: 'hit' }), 3);
    assert.equal(tiles({ z_bucket: 'mid', outcome: 'not_found' }), 1);
    assert.equal(tiles({ z_bucket: 'high', outcome: 'not_found' }), 2);
    assert.equal(m.value('tile_requests_total', { source: 'omt+omt-mb', z_bucket: 'low', outcome: 'miss' }), 1);
    assert.equal(m.value('tile_requests_total', { source: 'omt+omt-mb', z_bucket: 'low', outcome: 'hit' }), 1);
    assert.equal(m.value('tile_cache_hits_total', { source: 'omt' }), 3);
    assert.equal(m.value('tile_cache_misses_total', { source: 'omt' }), 2);
    // Bodies: the five 200s of omt; their duration histogram counts the same requests as the counter.
    assert.equal(m.value('tile_request_bytes_count', { source: 'omt', format: 'pbf' }), 5);
    assert.ok(m.value('tile_request_bytes_sum', { source: 'omt', format: 'pbf' })! > 5 * 100);
    assert.equal(m.value('tile_request_duration_seconds_count', { source: 'omt', z_bucket: 'low', outcome: 'hit' }), 3);
    // x and y never become labels.
    for (const sample of m.find('tile_requests_total')) assert.deepEqual(Object.keys(sample.labels).sort(), ['format', 'outcome', 'source', 'z_bucket']);
    // Both paths label the tile route with the same template; HEAD and 304 are requests too.
    const before2xx = m.value('http_requests_total', { route: TILE_ROUTE, status_class: '2xx' })!;
    assert.ok(before2xx >= 10, `2xx on the tile route: ${before2xx}`);
    const etagged = await fetch(`${s.url}/data/omt/0/0/0.pbf`);
    await etagged.arrayBuffer();
    assert.equal((await get(`${s.url}/data/omt/0/0/0.pbf`, { 'if-none-match': etagged.headers.get('etag')! })).status, 304);
    const m2 = await scrape(metricsUrl);
    assert.equal(m2.value('http_requests_total', { route: TILE_ROUTE, status_class: '2xx' }), before2xx + 1);
    assert.equal(m2.value('http_requests_total', { route: TILE_ROUTE, status_class: '3xx' }), 1);
    assert.equal(m2.value('tile_requests_total', { source: 'omt', z_bucket: 'low', outcome: 'hit' }), 5);
  });

  test('route templates, status classes, and 1,000 unknown URLs adding no series', async () => {
    const pingBefore = (await scrape(metricsUrl)).value('http_requests_total', { route: '/ping', status_class: '2xx' }) ?? 0;
    assert.equal((await get(`${s.url}/ping`)).status, 200);
    assert.equal((await get(`${s.url}/data/omt.json`)).status, 200);
    assert.equal((await get(`${s.url}/data/omt/99/0/0.pbf`)).status, 400);
    assert.equal((await get(`${s.url}/no/such/path`)).status, 404);
    const m = await scrape(metricsUrl);
    assert.equal(m.value('http_requests_total', { route: '/ping', status_class: '2xx' }), pingBefore + 1);
    assert.ok(m.value('http_requests_total', { route: '/data/{source}.json', status_class: '2xx' })! >= 1);
    assert.equal(m.value('http_requests_total', { route: TILE_ROUTE, status_class: '4xx' }), 1);
    const unmatchedBefore = m.value('http_requests_total', { route: 'unmatched', status_class: '4xx' })!;
    assert.ok(unmatchedBefore >= 1);
    const seriesBefore = m.samples.length;

    for (let i = 0; i < 1000; i++) {
      const res = await fetch(`${s.url}/scan-${i}/${(i * 7919).toString(36)}.php?id=${i}`);
      await res.arrayBuffer();
      assert.equal(res.status, 404);
    }
    const after = await scrape(metricsUrl);
    assert.equal(after.value('http_requests_total', { route: 'unmatched', status_class: '4xx' }), unmatchedBefore + 1000);
    assert.equal(after.samples.length, seriesBefore);
    for (const sample of after.find('http_requests_total')) assert.ok(!sample.labels.route.includes('scan-'), sample.labels.route);
  });
});

describe('metrics listener (verbose labels)', () => {
  let s: TestServer;
  let metricsUrl: string;
  before(async () => ({ s, metricsUrl } = await withScrape('metrics_label_cardinality = "verbose"\nscrape_path = "/prom"')));
  after(() => s?.stop());

  test('raw zoom levels, at scrape_path', async () => {
    const statuses: number[] = [];
    for (const p of ['0/0/0', '1/1/0', '1/1/0', '13/0/0']) statuses.push((await get(`${s.url}/data/omt-mb/${p}.pbf`)).status);
    assert.deepEqual(statuses, [200, 200, 200, 204]);
    assert.equal((await get(`${metricsUrl}/metrics`)).status, 404);
    const m = await scrape(metricsUrl, '/prom');
    assert.equal(m.value('tile_requests_total', { source: 'omt-mb', z_bucket: '0', outcome: 'miss' }), 1);
    assert.equal(m.value('tile_requests_total', { source: 'omt-mb', z_bucket: '1', outcome: 'miss' }), 1);
    assert.equal(m.value('tile_requests_total', { source: 'omt-mb', z_bucket: '1', outcome: 'hit' }), 1);
    assert.equal(m.value('tile_requests_total', { source: 'omt-mb', z_bucket: '13', outcome: 'not_found' }), 1);
    assert.equal(m.find('tile_requests_total', { z_bucket: 'low' }).length, 0);
  });
});

describe('uploaded sources in the metrics', () => {
  /** Uploads the MBTiles fixture twice and asks each upload and a composite with one of them for tile 0/0/0. */
  async function traffic(s: TestServer): Promise<string[]> {
    const ids: string[] = [];
    for (let i = 0; i < 2; i++) {
      const up = await uploadFile(s.url, 'omt.mbtiles', fixture('vector/omt-z0-1.mbtiles'));
      assert.equal(up.status, 200, up.text);
      ids.push(String(up.json.source_id));
    }
    for (const id of [...ids, `omt+${ids[0]}`]) assert.equal((await get(`${s.url}/data/${id}/0/0/0.pbf`)).status, 200, id);
    return ids;
  }

  test('strict: every upload is counted under source="upload", so uploads add no series of their own', async (t) => {
    const { s, metricsUrl } = await withScrape('', 1, `upload_dir = "${tempDir('tsts-metrics-uploads-')}"`);
    t.after(() => s.stop());
    await traffic(s);
    const m = await scrape(metricsUrl);
    assert.equal(m.value('tile_requests_total', { source: 'upload', z_bucket: 'low', outcome: 'miss' }), 2);
    assert.equal(m.value('tile_requests_total', { source: 'omt+upload', z_bucket: 'low', outcome: 'miss' }), 1);
    assert.equal(m.value('tile_cache_misses_total', { source: 'upload' }), 2);
    assert.equal(m.find('tile_request_bytes_count', { source: 'upload' }).length, 1);
    const leaked = m.samples.filter((x) => Object.values(x.labels).some((v) => v.includes('upload-')));
    assert.deepEqual(leaked, [], 'no label value names an upload id');
  });

  test('verbose: each upload keeps its own id', async (t) => {
    const { s, metricsUrl } = await withScrape('metrics_label_cardinality = "verbose"', 1, `upload_dir = "${tempDir('tsts-metrics-uploads-')}"`);
    t.after(() => s.stop());
    const ids = await traffic(s);
    const m = await scrape(metricsUrl);
    for (const id of ids) assert.equal(m.value('tile_requests_total', { source: id, z_bucket: '0', outcome: 'miss' }), 1, id);
    assert.equal(m.value('tile_requests_total', { source: `omt+${ids[0]}`, z_bucket: '0', outcome: 'miss' }), 1);
    assert.equal(m.find('tile_requests_total', { source: 'upload' }).length, 0);
  });
});

describe('metrics across worker processes', () => {
  let s: TestServer;
  let metricsUrl: string;
  before(async () => {
    ({ s, metricsUrl } = await withScrape('', 2));
    // /health answers once one worker listens; /ready only when both have started (the primary asks each), so
    // the requests below are spread over two processes and the scrape finds both registries.
    await waitFor('both workers ready', async () => ((await fetch(`${s.url}/ready`)).status === 200 ? true : undefined), 60_000);
  });
  after(() => s?.stop());

  test('one scrape sums both processes', async () => {
    const ping = (await (await fetch(`${s.url}/ping`)).json()) as { scrape_listener_active: boolean };
    assert.equal(ping.scrape_listener_active, true);
    // A new connection per request: node:cluster hands connections to the workers in turn.
    const n = 40;
    for (let i = 0; i < n; i++) {
      const res = await fetch(`${s.url}/data/omt/0/0/0.pbf`, { headers: { connection: 'close' } });
      await res.arrayBuffer();
      assert.equal(res.status, 200);
    }
    // Each process has its own tile cache: one miss in each, so two misses mean both served and both are summed.
    const m = await scrape(metricsUrl);
    assert.equal(m.value('tile_requests_total', { source: 'omt', z_bucket: 'low', outcome: 'miss' }) ?? 0, 2, 'one miss per process: both processes served and both are in the sum');
    assert.equal(m.value('tile_requests_total', { source: 'omt', z_bucket: 'low', outcome: 'hit' }), n - 2);
    assert.equal(m.value('http_requests_total', { route: TILE_ROUTE, status_class: '2xx' }), n);
    assert.equal(m.value('tile_cache_misses_total', { source: 'omt' }), 2);
  });
});

describe('telemetry configuration', () => {
  test('without scrape_bind and enabled, no listener and /ping says so', async () => {
    const s = await startServer({ toml: SOURCES });
    try {
      const ping = (await (await fetch(`${s.url}/ping`)).json()) as { scrape_listener_active: boolean };
      assert.equal(ping.scrape_listener_active, false);
    } finally {
      await s.stop();
    }
  });

  test('a scrape_bind that is not host:port stops start-up with one line naming it', async () => {
    const file = writeTempConfig(`${SOURCES}\n[telemetry]\nscrape_bind = "localhost"\n`);
    const r = await runCli(['--config', file, '--port', '0']);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /telemetry\.scrape_bind: "localhost" is not host:port \(no port\)/);
  });

  test('a scrape_bind already in use stops start-up with one line', async () => {
    const { s: first, metricsUrl } = await withScrape('');
    try {
      const port = new URL(metricsUrl).port;
      const file = writeTempConfig(`${SOURCES}\n[telemetry]\nscrape_bind = "127.0.0.1:${port}"\n`);
      const r = await runCli(['--config', file, '--port', String(await freePort()), '--host', '127.0.0.1', '--workers', '1']);
      assert.equal(r.code, 1);
      assert.equal(r.stderr.trim(), `tileserver-ts: cannot listen on 127.0.0.1:${port}: the address is already in use`);
    } finally {
      await first.stop();
    }
  });
});
