// Property tests of the telemetry parsers and label rules: `[telemetry] scrape_bind` (host:port, [ipv6]:port)
// and the label values a request can produce, which must stay within small fixed sets whatever the input.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import fc from './helpers/fast-check.js';
import { parseBind } from '../src/config/bind.js';
import { validateConfig } from '../src/config/load.js';
import { statusClass, zLabel } from '../src/telemetry/labels.js';

const label = fc.stringMatching(/^[a-z0-9]([a-z0-9-]{0,10}[a-z0-9])?$/);
const hostname = fc.array(label, { minLength: 1, maxLength: 4 }).map((parts) => parts.join('.'));
const ipv4 = fc.tuple(fc.nat(255), fc.nat(255), fc.nat(255), fc.nat(255)).map((p) => p.join('.'));
const port = fc.integer({ min: 0, max: 65535 });

test('scrape_bind: every host:port and [ipv6]:port parses back to its parts', () => {
  fc.assert(
    fc.property(fc.oneof(hostname, ipv4), port, (host, p) => {
      assert.deepEqual(parseBind(`${host}:${p}`), { ok: true, address: { host, port: p } });
    }),
  );
  fc.assert(
    fc.property(fc.ipV6(), port, (host, p) => {
      assert.deepEqual(parseBind(`[${host}]:${p}`), { ok: true, address: { host, port: p } });
    }),
  );
});

test('scrape_bind: anything else is refused with a reason, never thrown', () => {
  fc.assert(
    fc.property(fc.string(), (text) => {
      const r = parseBind(text);
      if (r.ok) {
        // Whatever is accepted is a valid host and a port in range, written as the user wrote it.
        assert.ok(r.address.port >= 0 && r.address.port <= 65535);
        assert.ok(text === `${r.address.host}:${r.address.port}` || text === `[${r.address.host}]:${r.address.port}` || /^\[?.*\]?:0*\d+$/.test(text));
      } else {
        assert.match(r.problem, /is not host:port \(/);
      }
    }),
  );
  for (const bad of ['9464', 'localhost', 'localhost:', ':9464', 'host:65536', 'host:-1', 'host:12a', '::1:9464', '[::1:9464', '[zz]:1', 'a b:1', 'host:9464/metrics']) {
    assert.equal(parseBind(bad).ok, false, bad);
  }
  fc.assert(
    fc.property(fc.oneof(hostname, ipv4), fc.integer({ min: 65536, max: 10_000_000 }), (host, p) => {
      assert.equal(parseBind(`${host}:${p}`).ok, false);
    }),
  );
});

test('the configuration refuses a bad scrape_bind, scrape_path or cardinality, naming the key', () => {
  const check = (telemetry: Record<string, unknown>, key: string) =>
    assert.throws(() => validateConfig({ telemetry }, 'test.toml', '/'), (err: Error) => err.message.includes(`telemetry.${key}`));
  check({ scrape_bind: 'localhost' }, 'scrape_bind');
  check({ scrape_path: 'metrics' }, 'scrape_path');
  check({ metrics_label_cardinality: 'everything' }, 'metrics_label_cardinality');
  check({ sample_rate: 1.5 }, 'sample_rate');
  check({ endpoint: 'not a url' }, 'endpoint');
  const { config } = validateConfig({}, 'test.toml', '/');
  assert.deepEqual(config.telemetry, {
    enabled: false,
    endpoint: 'http://localhost:4317',
    service_name: 'tileserver-ts',
    sample_rate: 1,
    metrics_enabled: true,
    metrics_export_interval_secs: 60,
    scrape_path: '/metrics',
    metrics_label_cardinality: 'strict',
  });
});

test('label values stay in their fixed sets for any zoom and status', () => {
  fc.assert(
    fc.property(fc.integer({ min: 0, max: 22 }), (z) => {
      const strict = zLabel(z, 'strict');
      assert.equal(strict, z <= 6 ? 'low' : z <= 12 ? 'mid' : 'high');
      assert.equal(zLabel(z, 'verbose'), String(z));
    }),
  );
  fc.assert(
    fc.property(fc.integer({ min: -1000, max: 100_000 }), (status) => {
      const cls = statusClass(status);
      assert.ok(['1xx', '2xx', '3xx', '4xx', '5xx'].includes(cls));
      if (status >= 100 && status < 600) assert.equal(cls, `${String(status)[0]}xx`);
    }),
  );
});
