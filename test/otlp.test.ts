// OTLP push through the real server to a real gRPC receiver started here: the spec's metrics (names, units,
// labels, values) and one span per HTTP request (method, route, path, status, duration) under the configured
// service name; sample_rate 0 sends metrics and no spans; a collector that accepts connections and never
// answers leaves every request answered as before.
import assert from 'node:assert/strict';
import net from 'node:net';
import { after, before, describe, test } from 'node:test';
import { waitFor } from './helpers/foundation.js';
import { startOtlpReceiver, type OtlpReceiver, type ReceivedMetric } from './helpers/otlp-receiver.js';
import { fixture, startServer, type TestServer } from './helpers/server.js';

const TILE_ROUTE = '/data/{source}/{z}/{x}/{y}.{format}';
const SOURCES = `
[[sources]]
id = "omt"
type = "pmtiles"
path = "${fixture('vector/omt-planet-z0-1.pmtiles')}"
`;

const telemetry = (endpoint: string, service: string, extra = '') =>
  `${SOURCES}\n[telemetry]\nenabled = true\nendpoint = "${endpoint}"\nservice_name = "${service}"\nmetrics_export_interval_secs = 0.3\n${extra}\n`;

/** The newest export of `name` from `service` (metrics are cumulative: the newest holds the totals). */
function latest(r: OtlpReceiver, service: string, name: string): ReceivedMetric | undefined {
  return r.metrics.filter((m) => m.name === name && m.resource['service.name'] === service).at(-1);
}

async function get(url: string): Promise<number> {
  const res = await fetch(url);
  await res.arrayBuffer();
  return res.status;
}

describe('OTLP push to a gRPC receiver', () => {
  let receiver: OtlpReceiver;
  let s: TestServer;
  before(async () => {
    receiver = await startOtlpReceiver();
    s = await startServer({ toml: telemetry(`http://127.0.0.1:${receiver.port}`, 'tiles-under-test', 'sample_rate = 1.0') });
  });
  after(async () => {
    await s?.stop();
    await receiver?.close();
  });

  test('metrics with the spec names, units and labels, and one span per request', async () => {
    const statuses = [];
    for (let i = 0; i < 3; i++) statuses.push(await get(`${s.url}/data/omt/0/0/0.pbf`));
    statuses.push(await get(`${s.url}/ping`));
    statuses.push(await get(`${s.url}/no/such/thing`));
    assert.deepEqual(statuses, [200, 200, 200, 200, 404]);
    const ping = (await (await fetch(`${s.url}/ping`)).json()) as { scrape_listener_active: boolean };
    assert.equal(ping.scrape_listener_active, false);

    // An export can be collected between two of the requests above (every 0.3 s): wait for one that holds all
    // of them, the tile hits and the unmatched 404 alike, before reading its figures.
    const tiles = await waitFor('an export holding every request above', () => {
      const m = latest(receiver, 'tiles-under-test', 'tile_requests_total');
      const h = latest(receiver, 'tiles-under-test', 'http_requests_total');
      const d = latest(receiver, 'tiles-under-test', 'http_request_duration_seconds');
      const done =
        m?.points.some((p) => p.attributes.outcome === 'hit' && p.value === 2) &&
        h?.points.some((p) => p.attributes.route === 'unmatched' && p.attributes.status_class === '4xx' && p.value >= 1) &&
        d?.points.some((p) => p.attributes.route === TILE_ROUTE && p.attributes.status_class === '2xx' && (p.count ?? 0) >= 3);
      return done ? m : undefined;
    });
    assert.equal(tiles.kind, 'sum');
    assert.deepEqual(tiles.points.find((p) => p.attributes.outcome === 'miss')?.attributes, { source: 'omt', format: 'pbf', z_bucket: 'low', outcome: 'miss' });
    assert.equal(tiles.points.find((p) => p.attributes.outcome === 'miss')?.value, 1);

    const names = new Set(receiver.metrics.filter((m) => m.resource['service.name'] === 'tiles-under-test').map((m) => m.name));
    for (const name of ['http_requests_total', 'http_request_duration_seconds', 'http_requests_in_flight', 'tile_requests_total', 'tile_request_duration_seconds', 'tile_request_bytes', 'tile_cache_hits_total', 'tile_cache_misses_total', 'render_queue_depth', 'render_busy_renderers']) {
      assert.ok(names.has(name), `${name} was exported (got ${[...names].join(', ')})`);
    }
    const duration = latest(receiver, 'tiles-under-test', 'http_request_duration_seconds')!;
    assert.equal(duration.kind, 'histogram');
    assert.equal(duration.unit, 's');
    assert.equal(latest(receiver, 'tiles-under-test', 'tile_request_bytes')!.unit, 'By');
    assert.equal(duration.points.find((p) => p.attributes.route === TILE_ROUTE && p.attributes.status_class === '2xx')?.count, 3);
    const http = latest(receiver, 'tiles-under-test', 'http_requests_total')!;
    assert.equal(http.points.find((p) => p.attributes.route === 'unmatched' && p.attributes.status_class === '4xx')?.value, 1);
    assert.equal(latest(receiver, 'tiles-under-test', 'tile_cache_hits_total')!.points[0].value, 2);

    const spans = await waitFor('the spans of the five requests', () => {
      const mine = receiver.spans.filter((sp) => sp.resource['service.name'] === 'tiles-under-test');
      return mine.filter((sp) => sp.attributes['http.route'] === TILE_ROUTE).length >= 3 && mine.some((sp) => sp.attributes['http.route'] === 'unmatched') ? mine : undefined;
    });
    const tile = spans.find((sp) => sp.attributes['http.route'] === TILE_ROUTE)!;
    assert.equal(tile.name, `GET ${TILE_ROUTE}`);
    assert.equal(tile.kind, 2, 'SPAN_KIND_SERVER');
    assert.deepEqual(tile.attributes, { 'http.request.method': 'GET', 'http.route': TILE_ROUTE, 'url.path': '/data/omt/0/0/0.pbf', 'http.response.status_code': 200 });
    assert.ok(tile.endNs > tile.startNs, 'a span has a duration');
    const unmatched = spans.find((sp) => sp.attributes['http.route'] === 'unmatched')!;
    assert.equal(unmatched.attributes['http.response.status_code'], 404);
    assert.equal(unmatched.attributes['url.path'], '/no/such/thing');
    assert.equal(spans.filter((sp) => sp.attributes['http.route'] === TILE_ROUTE).length, 3);
  });
});

describe('OTLP sampling', () => {
  let receiver: OtlpReceiver;
  let s: TestServer;
  before(async () => {
    receiver = await startOtlpReceiver();
    s = await startServer({ toml: telemetry(`http://127.0.0.1:${receiver.port}`, 'unsampled', 'sample_rate = 0.0') });
  });
  after(async () => {
    await s?.stop();
    await receiver?.close();
  });

  test('sample_rate 0 exports metrics and no spans; metrics_enabled = false would not stop spans', async () => {
    for (let i = 0; i < 5; i++) assert.equal(await get(`${s.url}/data/omt/0/0/0.pbf`), 200);
    await waitFor('metrics of the five requests', () => (latest(receiver, 'unsampled', 'tile_requests_total')?.points.reduce((n, p) => n + p.value, 0) === 5 ? true : undefined));
    // The span processor sends every second: two more seconds and anything sampled would have arrived.
    await new Promise((r) => setTimeout(r, 2000));
    assert.equal(receiver.spans.length, 0);
  });
});

describe('OTLP with metrics_enabled = false', () => {
  let receiver: OtlpReceiver;
  let s: TestServer;
  before(async () => {
    receiver = await startOtlpReceiver();
    s = await startServer({ toml: telemetry(`http://127.0.0.1:${receiver.port}`, 'traces-only', 'metrics_enabled = false') });
  });
  after(async () => {
    await s?.stop();
    await receiver?.close();
  });

  test('spans are pushed, metrics are not', async () => {
    assert.equal(await get(`${s.url}/data/omt/0/0/0.pbf`), 200);
    await waitFor('the span', () => (receiver.spans.some((sp) => sp.attributes['http.route'] === TILE_ROUTE) ? true : undefined));
    await new Promise((r) => setTimeout(r, 1000));
    assert.equal(receiver.metrics.length, 0);
  });
});

describe('a collector that never answers', () => {
  let blackhole: net.Server;
  const sockets: net.Socket[] = [];
  let s: TestServer;
  before(async () => {
    // Accepts connections and says nothing: the gRPC exporters wait for a handshake that never comes.
    blackhole = net.createServer((sock) => sockets.push(sock));
    await new Promise<void>((resolve) => blackhole.listen(0, '127.0.0.1', resolve));
    const port = (blackhole.address() as net.AddressInfo).port;
    s = await startServer({ toml: telemetry(`http://127.0.0.1:${port}`, 'lonely', 'sample_rate = 1.0') });
  });
  after(async () => {
    await s?.stop();
    for (const sock of sockets) sock.destroy();
    await new Promise((r) => blackhole.close(r));
  });

  test('every request is answered as before, the failure is logged, and the server stops cleanly', async () => {
    const first = Buffer.from(await (await fetch(`${s.url}/data/omt/0/0/0.pbf`)).arrayBuffer());
    assert.ok(first.length > 100);
    // Requests keep coming through several export periods (0.3 s each) that all fail.
    for (let round = 0; round < 10; round++) {
      const answers = await Promise.all(
        Array.from({ length: 20 }, async () => {
          const res = await fetch(`${s.url}/data/omt/0/0/0.pbf`);
          return { status: res.status, body: Buffer.from(await res.arrayBuffer()) };
        }),
      );
      for (const a of answers) {
        assert.equal(a.status, 200);
        assert.ok(a.body.equals(first));
      }
      assert.equal(await get(`${s.url}/ping`), 200);
      await new Promise((r) => setTimeout(r, 100));
    }
    await waitFor('a log line about the failing export', () => (s.output().includes('OTLP export failed') ? true : undefined), 20_000);
    assert.equal(await s.stop(), 0);
  });
});
