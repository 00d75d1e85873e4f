// /data/{id}/{z}/{x}/{y}.{format} and the rules every answer follows: status codes (200/204/304/400/404),
// Content-Type, Content-Encoding negotiation with q-values, ETag and If-None-Match, Cache-Control, Vary,
// HEAD beside GET, CORS (any origin and an allow-list, preflight included), problem+json errors, and the
// cache counting every encoded variant.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { brotliDecompressSync, gunzipSync } from 'node:zlib';
import { decompress as zstdDecompress, init as zstdInit } from '@bokuweb/zstd-wasm';
import { fixture, startServer, type TestServer } from './helpers/server.js';
import { getJson, layerCounts, request, storedMbtilesTile, storedPmtilesTile, type RawResponse } from './helpers/foundation.js';

const OMT = fixture('vector/omt-planet-z0-1.pmtiles');
const RAW_MVT = fixture('vector/uncompressed_mvt.mbtiles');
const SOURCES = `
[[sources]]
id = "omt"
type = "pmtiles"
path = "${OMT}"
[[sources]]
id = "omt-mb"
type = "mbtiles"
path = "${fixture('vector/omt-z0-1.mbtiles')}"
[[sources]]
id = "raw"
type = "mbtiles"
path = "${RAW_MVT}"
[[sources]]
id = "png"
type = "pmtiles"
path = "${fixture('raster/natural-earth-png-z0-1.pmtiles')}"
`;

interface Ping {
  cache_entries: number;
  cache_bytes: number;
  compression_enabled: boolean;
}
const ping = async (s: TestServer) => (await getJson<Ping>(s.url, '/ping')).json;

function assertProblem(res: RawResponse, status: number) {
  assert.equal(res.status, status);
  assert.equal(res.headers['content-type'], 'application/problem+json');
  const body = JSON.parse(res.body.toString()) as Record<string, unknown>;
  assert.equal(body.status, status);
  assert.equal(typeof body.type, 'string');
  assert.equal(typeof body.title, 'string');
  assert.equal(typeof body.detail, 'string');
  assert.ok((body.detail as string).length > 0);
  return body;
}

let server: TestServer;
let storedOmt: Buffer;
let identityOmt: Buffer;

before(async () => {
  await zstdInit();
  server = await startServer({ toml: `[server]\ndisable_render = true\n${SOURCES}` });
  storedOmt = (await storedPmtilesTile(OMT, 1, 0, 0))!;
  identityOmt = gunzipSync(storedOmt);
});
after(async () => {
  await server?.stop();
});

describe('content encoding', () => {
  test('no Accept-Encoding: identity bytes, the stored gzip tile decoded', async () => {
    const res = await request(server.url, '/data/omt/1/0/0.pbf');
    assert.equal(res.status, 200);
    assert.equal(res.headers['content-encoding'], undefined);
    assert.equal(res.headers['content-type'], 'application/x-protobuf');
    assert.equal(res.headers['content-length'], String(res.body.length));
    assert.ok(res.body.equals(identityOmt));
    assert.deepEqual(layerCounts(res.body), { boundary: 3, landcover: 3, place: 128, water: 12, water_name: 41 });
  });

  test('gzip accepted and stored gzip: the stored bytes pass through unchanged', async () => {
    for (const ae of ['gzip', 'gzip, deflate', 'br;q=0.5, gzip', 'GZIP', '*']) {
      const res = await request(server.url, '/data/omt/1/0/0.pbf', { headers: { 'Accept-Encoding': ae } });
      assert.equal(res.headers['content-encoding'], 'gzip', ae);
      assert.ok(res.body.equals(storedOmt), `${ae}: not the stored bytes`);
    }
  });

  test('br and zstd: decoded bytes equal the identity bytes', async () => {
    const br = await request(server.url, '/data/omt/1/0/0.pbf', { headers: { 'Accept-Encoding': 'br' } });
    assert.equal(br.headers['content-encoding'], 'br');
    assert.ok(brotliDecompressSync(br.body).equals(identityOmt));
    const zstd = await request(server.url, '/data/omt/1/0/0.pbf', { headers: { 'Accept-Encoding': 'zstd' } });
    assert.equal(zstd.headers['content-encoding'], 'zstd');
    assert.ok(Buffer.from(zstdDecompress(zstd.body)).equals(identityOmt));
  });

  test('q-values are respected', async () => {
    const cases: [string, string | undefined][] = [
      ['gzip;q=0, br', 'br'],
      ['gzip;q=0, zstd', 'zstd'],
      ['br;q=0.1, zstd;q=0.9, gzip;q=0', 'zstd'],
      ['zstd;q=0.2, br;q=0.8, gzip;q=0', 'br'],
      ['gzip;q=0', undefined],
      ['*;q=0', undefined],
      ['identity', undefined],
      ['deflate', undefined],
    ];
    for (const [ae, expected] of cases) {
      const res = await request(server.url, '/data/omt/1/0/0.pbf', { headers: { 'Accept-Encoding': ae } });
      assert.equal(res.status, 200);
      assert.equal(res.headers['content-encoding'], expected, ae);
      const decoded = expected === 'br' ? brotliDecompressSync(res.body) : expected === 'zstd' ? Buffer.from(zstdDecompress(res.body)) : res.body;
      assert.ok(decoded.equals(identityOmt), ae);
    }
  });

  test('a raw (uncompressed) MVT source is compressed on request and served raw otherwise', async () => {
    const stored = storedMbtilesTile(RAW_MVT, 0, 0, 0)!;
    const plain = await request(server.url, '/data/raw/0/0/0.pbf');
    assert.equal(plain.headers['content-encoding'], undefined);
    assert.ok(plain.body.equals(stored));
    const gz = await request(server.url, '/data/raw/0/0/0.pbf', { headers: { 'Accept-Encoding': 'gzip' } });
    assert.equal(gz.headers['content-encoding'], 'gzip');
    assert.ok(gunzipSync(gz.body).equals(stored));
  });

  test('raster tiles are never re-encoded', async () => {
    const stored = (await storedPmtilesTile(fixture('raster/natural-earth-png-z0-1.pmtiles'), 0, 0, 0))!;
    const res = await request(server.url, '/data/png/0/0/0.png', { headers: { 'Accept-Encoding': 'br, gzip, zstd' } });
    assert.equal(res.headers['content-encoding'], undefined);
    assert.equal(res.headers['content-type'], 'image/png');
    assert.ok(res.body.equals(stored));
  });

  test('every encoded variant is cached once: cache_entries and cache_bytes grow, then stay', async () => {
    const before = await ping(server);
    const variants = ['', 'gzip', 'br', 'zstd'];
    let bytes = 0;
    for (const ae of variants) {
      const res = await request(server.url, '/data/omt/1/1/1.pbf', { headers: ae ? { 'Accept-Encoding': ae } : {} });
      assert.equal(res.status, 200);
      bytes += res.body.length;
    }
    const afterFirst = await ping(server);
    assert.equal(afterFirst.cache_entries, before.cache_entries + variants.length);
    assert.ok(afterFirst.cache_bytes >= before.cache_bytes + bytes, `${afterFirst.cache_bytes} < ${before.cache_bytes} + ${bytes}`);
    for (const ae of variants) await request(server.url, '/data/omt/1/1/1.pbf', { headers: ae ? { 'Accept-Encoding': ae } : {} });
    const afterSecond = await ping(server);
    assert.equal(afterSecond.cache_entries, afterFirst.cache_entries);
    assert.equal(afterSecond.cache_bytes, afterFirst.cache_bytes);
  });
});

describe('compression.enabled = false', () => {
  let off: TestServer;
  before(async () => {
    off = await startServer({ toml: `[server]\ndisable_render = true\n[compression]\nenabled = false\n${SOURCES}` });
  });
  after(async () => {
    await off?.stop();
  });

  test('only stored gzip passes through; everything else is identity', async () => {
    assert.equal((await ping(off)).compression_enabled, false);
    const gz = await request(off.url, '/data/omt/1/0/0.pbf', { headers: { 'Accept-Encoding': 'gzip, br, zstd' } });
    assert.equal(gz.headers['content-encoding'], 'gzip');
    assert.ok(gz.body.equals(storedOmt));
    for (const ae of ['br', 'zstd', 'gzip;q=0, br']) {
      const res = await request(off.url, '/data/omt/1/0/0.pbf', { headers: { 'Accept-Encoding': ae } });
      assert.equal(res.headers['content-encoding'], undefined, ae);
      assert.ok(res.body.equals(identityOmt), ae);
    }
    const raw = await request(off.url, '/data/raw/0/0/0.pbf', { headers: { 'Accept-Encoding': 'gzip, br' } });
    assert.equal(raw.headers['content-encoding'], undefined);
    assert.ok(raw.body.equals(storedMbtilesTile(RAW_MVT, 0, 0, 0)!));
    const json = await request(off.url, '/data.json', { headers: { 'Accept-Encoding': 'gzip, br' } });
    assert.equal(json.headers['content-encoding'], undefined, 'metadata is not compressed either');
  });
});

describe('status codes and headers', () => {
  test('200 carries Content-Type, Cache-Control, a strong ETag and Vary: Accept-Encoding', async () => {
    const res = await request(server.url, '/data/omt/0/0/0.pbf');
    assert.equal(res.status, 200);
    assert.equal(res.headers['cache-control'], 'public, max-age=86400');
    assert.match(res.headers.etag ?? '', /^"[^"]+"$/);
    assert.match(res.headers.vary ?? '', /Accept-Encoding/);
  });

  test('ETag differs per encoding and is stable; If-None-Match gives 304 with no body', async () => {
    const a = await request(server.url, '/data/omt/0/0/0.pbf');
    const b = await request(server.url, '/data/omt/0/0/0.pbf');
    const gz = await request(server.url, '/data/omt/0/0/0.pbf', { headers: { 'Accept-Encoding': 'gzip' } });
    const etag = a.headers.etag!;
    assert.equal(b.headers.etag, etag);
    assert.notEqual(gz.headers.etag, etag);
    for (const inm of [etag, `W/${etag}`, `"other", ${etag}`, '*']) {
      const res = await request(server.url, '/data/omt/0/0/0.pbf', { headers: { 'If-None-Match': inm } });
      assert.equal(res.status, 304, inm);
      assert.equal(res.body.length, 0);
      assert.equal(res.headers.etag, etag);
      assert.equal(res.headers['cache-control'], 'public, max-age=86400');
      assert.match(res.headers.vary ?? '', /Accept-Encoding/);
      assert.ok(res.headers['content-type'] === undefined || res.headers['content-type'] === 'application/x-protobuf', `304 Content-Type ${res.headers['content-type']}`);
    }
    // The same through the general router (a percent-encoded path is not taken by the tile fast lane).
    const routed = await request(server.url, '/data/omt/0/0/%30.pbf', { headers: { 'If-None-Match': etag } });
    assert.equal(routed.status, 304);
    assert.equal(routed.headers.etag, etag);
    assert.equal(routed.headers['content-type'], 'application/x-protobuf', 'a 304 must not relabel the cached tile');
    const stale = await request(server.url, '/data/omt/0/0/0.pbf', { headers: { 'If-None-Match': '"not-it"' } });
    assert.equal(stale.status, 200);
    // The gzip variant's ETag does not validate the identity variant.
    const cross = await request(server.url, '/data/omt/0/0/0.pbf', { headers: { 'If-None-Match': gz.headers.etag! } });
    assert.equal(cross.status, 200);
  });

  test('missing tile: 204 with an empty body; outside the zoom range: 204', async () => {
    // omt-z0-1.mbtiles holds only 0/0/0 and XYZ 1/1/0.
    assert.equal((await request(server.url, '/data/omt-mb/1/1/0.pbf')).status, 200);
    for (const p of ['/data/omt-mb/1/0/0.pbf', '/data/omt-mb/1/0/1.pbf', '/data/omt/2/0/0.pbf', '/data/omt/22/4194303/4194303.pbf']) {
      const res = await request(server.url, p);
      assert.equal(res.status, 204, p);
      assert.equal(res.body.length, 0);
      assert.equal(res.headers['cache-control'], 'public, max-age=86400');
    }
  });

  test('invalid coordinates and paths: 400 problem+json', async () => {
    const bad = [
      '/data/omt/23/0/0.pbf',
      '/data/omt/-1/0/0.pbf',
      '/data/omt/01/0/0.pbf',
      '/data/omt/1.0/0/0.pbf',
      '/data/omt/1e0/0/0.pbf',
      '/data/omt/a/0/0.pbf',
      '/data/omt/1/2/0.pbf',
      '/data/omt/1/0/2.pbf',
      '/data/omt/0/0/0x0.pbf',
      '/data/omt/0/0/-0.pbf',
      '/data/omt/0/0/%2D1.pbf',
      '/data/omt/22/4194304/0.pbf',
      '/data/omt/0/0/0.xyz',
      '/data/omt/0/0/0',
      '/data/omt/0/0/0@2x.pbf',
    ];
    for (const p of bad) {
      const res = await request(server.url, p);
      assert.equal(res.status, 400, p);
      assertProblem(res, 400);
    }
  });

  test('unknown source: 404 problem+json naming it', async () => {
    const res = await request(server.url, '/data/nope/0/0/0.pbf');
    const body = assertProblem(res, 404);
    assert.match(String(body.detail), /nope/);
  });

  test('HEAD answers wherever GET does: same status and headers, no body', async () => {
    const paths = [
      '/data/omt/0/0/0.pbf',
      '/data/png/1/1/1.png',
      '/data/omt/5/0/0.pbf',
      '/data/omt/99/0/0.pbf',
      '/data/nope/0/0/0.pbf',
      '/health',
      '/ping',
      '/data.json',
      '/data/omt.json',
      '/data/nope.json',
      '/index.json',
      '/openapi.json',
      '/_openapi',
      '/_openapi/swagger-ui.css',
    ];
    // Per request, not per resource: the date and the request id (test/access-log.test.ts).
    const ignore = new Set(['date', 'connection', 'keep-alive', 'transfer-encoding', 'x-request-id']);
    const comparable = (h: RawResponse['headers']) => Object.fromEntries(Object.entries(h).filter(([k]) => !ignore.has(k)));
    for (const p of paths) {
      for (const ae of [undefined, 'gzip']) {
        const headers: Record<string, string> = ae ? { 'Accept-Encoding': ae } : {};
        const get = await request(server.url, p, { headers });
        const head = await request(server.url, p, { method: 'HEAD', headers });
        assert.equal(head.status, get.status, p);
        assert.equal(head.body.length, 0, p);
        const getHeaders = comparable(get.headers);
        // A chunked GET has no Content-Length to repeat; every other header must match.
        if (get.headers['transfer-encoding'] === 'chunked') delete getHeaders['content-length'];
        assert.deepEqual(comparable(head.headers), getHeaders, `${p} (${ae ?? 'identity'})`);
      }
    }
  });
});

describe('CORS', () => {
  test('any origin (default *): simple requests and preflight', async () => {
    for (const p of ['/data/omt/0/0/0.pbf', '/data.json', '/data/nope/0/0/0.pbf']) {
      const res = await request(server.url, p, { headers: { Origin: 'https://anywhere.example' } });
      assert.equal(res.headers['access-control-allow-origin'], '*', p);
      assert.match(res.headers['access-control-expose-headers'] ?? '', /ETag/i);
    }
    const pre = await request(server.url, '/data/omt/0/0/0.pbf', {
      method: 'OPTIONS',
      headers: { Origin: 'https://anywhere.example', 'Access-Control-Request-Method': 'GET' },
    });
    assert.ok(pre.status === 204 || pre.status === 200, String(pre.status));
    assert.equal(pre.headers['access-control-allow-origin'], '*');
    assert.match(pre.headers['access-control-allow-methods'] ?? '', /GET/);
    assert.match(pre.headers['access-control-allow-methods'] ?? '', /HEAD/);
  });

  describe('an allow-list', () => {
    let listed: TestServer;
    before(async () => {
      listed = await startServer({ toml: `[server]\ndisable_render = true\ncors_origins = ["https://a.example", "https://b.example"]\n${SOURCES}` });
    });
    after(async () => {
      await listed?.stop();
    });

    test('an allowed origin is echoed with Vary: Origin; another origin gets no Allow-Origin', async () => {
      for (const p of ['/data/omt/0/0/0.pbf', '/data.json', '/ping']) {
        const ok = await request(listed.url, p, { headers: { Origin: 'https://b.example' } });
        assert.equal(ok.headers['access-control-allow-origin'], 'https://b.example', p);
        assert.match(ok.headers.vary ?? '', /Origin/, p);
        const other = await request(listed.url, p, { headers: { Origin: 'https://evil.example' } });
        assert.equal(other.status, 200, 'the request is still answered; the browser withholds it');
        assert.equal(other.headers['access-control-allow-origin'], undefined, p);
      }
      const tile = await request(listed.url, '/data/omt/0/0/0.pbf', { headers: { Origin: 'https://a.example' } });
      assert.match(tile.headers.vary ?? '', /Accept-Encoding/);
    });

    test('preflight: allowed origin echoed, other origin refused', async () => {
      const pre = (origin: string) =>
        request(listed.url, '/data/omt/0/0/0.pbf', { method: 'OPTIONS', headers: { Origin: origin, 'Access-Control-Request-Method': 'GET' } });
      const ok = await pre('https://a.example');
      assert.equal(ok.headers['access-control-allow-origin'], 'https://a.example');
      assert.match(ok.headers['access-control-allow-methods'] ?? '', /GET/);
      const no = await pre('https://evil.example');
      assert.equal(no.headers['access-control-allow-origin'], undefined);
    });

    test('/ping reports the allow-list', async () => {
      const { json } = await getJson<{ cors_origins: string[] }>(listed.url, '/ping');
      assert.deepEqual(json.cors_origins, ['https://a.example', 'https://b.example']);
    });
  });
});

describe('Accept-Encoding ties (README: br, then zstd, then gzip)', () => {
  test('encodings ranked equally by the client: br over zstd over gzip, whatever order the client lists them in', async () => {
    // The raw MVT source: nothing is stored compressed, so the choice is the server's order alone.
    const identity = storedMbtilesTile(RAW_MVT, 0, 0, 0)!;
    const cases: [string, string][] = [
      ['gzip, zstd, br', 'br'],
      ['zstd, br', 'br'],
      ['gzip, br', 'br'],
      ['gzip, zstd', 'zstd'],
      ['gzip;q=0.5, zstd;q=0.5', 'zstd'],
      ['gzip;q=0.5, zstd;q=0.5, br;q=0.5', 'br'],
      ['gzip;q=0.7, zstd;q=0.5, br;q=0.5', 'gzip'],
      ['*', 'br'],
      ['gzip, *;q=1', 'br'],
      ['br;q=0, *', 'zstd'],
      ['br;q=0, zstd;q=0, *', 'gzip'],
    ];
    let checked = 0;
    for (const [ae, expected] of cases) {
      const res = await request(server.url, '/data/raw/0/0/0.pbf', { headers: { 'Accept-Encoding': ae } });
      assert.equal(res.status, 200, ae);
      assert.equal(res.headers['content-encoding'], expected, ae);
      const decoded = expected === 'br' ? brotliDecompressSync(res.body) : expected === 'zstd' ? Buffer.from(zstdDecompress(res.body)) : gunzipSync(res.body);
      assert.ok(decoded.equals(identity), `${ae}: the decoded body is the stored tile`);
      checked++;
    }
    assert.equal(checked, cases.length);
  });
});
