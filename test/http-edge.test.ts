// HTTP edge cases answered like everything else: malformed request targets get problem JSON with CORS, `OPTIONS *`
// its server-wide answer, CONNECT a 405, and a request body that trickles or stops short of its Content-Length
// a 408 after server.request_timeout_ms, while the same server keeps answering normal traffic.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { fixture, startServer, type TestServer } from './helpers/server.js';
import { request } from './helpers/foundation.js';
import { assertProblem, parseResponse, rawExchange } from './helpers/raw-socket.js';

const ORIGIN = 'https://app.example';

describe('malformed targets, OPTIONS * and CONNECT', () => {
  let server: TestServer;
  before(async () => {
    server = await startServer({ toml: `[server]\ncors_origins = ["${ORIGIN}"]\n[[sources]]\nid = "cities"\ntype = "mbtiles"\npath = "${fixture('vector/world_cities.mbtiles')}"\n` });
  });
  after(() => server?.stop());

  const get = (target: string, extra = '') => `GET ${target} HTTP/1.1\r\nHost: 127.0.0.1\r\nOrigin: ${ORIGIN}\r\n${extra}Connection: close\r\n\r\n`;

  test('a backslash in the path: 400 problem JSON with CORS for the allowed origin and a request id', async () => {
    for (const target of ['/data\\cities.json', '/\\\\evil.example/x', '/styles/a\\b/style.json?x=1']) {
      const { text } = await rawExchange(server.port, [{ data: get(target) }]);
      const r = parseResponse(text);
      assertProblem(r, 400, /backslash/);
      assert.equal(r.headers['access-control-allow-origin'], ORIGIN);
      assert.match(r.headers['vary'] ?? '', /Origin/i);
      assert.ok(r.headers['x-request-id'], 'request id header');
    }
  });

  test('a backslash only in the query is an ordinary request', async () => {
    const r = parseResponse((await rawExchange(server.port, [{ data: get('/data/cities.json?x=a\\b') }])).text);
    assert.equal(r.status, 200);
  });

  test('a target that is not a path, and a Host that is no host name: 400 problem JSON', async () => {
    assertProblem(parseResponse((await rawExchange(server.port, [{ data: get('*') }])).text), 400, /"\*" names no resource/);
    assertProblem(parseResponse((await rawExchange(server.port, [{ data: `GET /health HTTP/1.1\r\nHost: a b/c\r\nConnection: close\r\n\r\n` }])).text), 400, /Host header/);
    assertProblem(parseResponse((await rawExchange(server.port, [{ data: `GET /health HTTP/1.0\r\n\r\n` }])).text), 400, /no Host header/);
  });

  test('OPTIONS * is answered for the server as a whole: 204 with Allow and CORS', async () => {
    const r = parseResponse((await rawExchange(server.port, [{ data: `OPTIONS * HTTP/1.1\r\nHost: 127.0.0.1\r\nOrigin: ${ORIGIN}\r\nConnection: close\r\n\r\n` }])).text);
    assert.equal(r.status, 204);
    assert.deepEqual(r.headers['allow']?.split(/,\s*/).sort(), ['DELETE', 'GET', 'HEAD', 'OPTIONS', 'PATCH', 'POST', 'PUT']);
    assert.equal(r.headers['access-control-allow-origin'], ORIGIN);
  });

  test('CONNECT: 405 problem JSON with Allow, then the connection ends; the server keeps serving', async () => {
    const { text, closedByServer } = await rawExchange(server.port, [{ data: `CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\nOrigin: ${ORIGIN}\r\n\r\n` }]);
    const r = parseResponse(text);
    assertProblem(r, 405, /CONNECT/);
    assert.ok(r.headers['allow']?.includes('GET'));
    assert.equal(r.headers['access-control-allow-origin'], ORIGIN);
    assert.ok(r.headers['x-request-id']);
    assert.ok(closedByServer, 'the server ended the connection');
    assert.equal((await request(server.url, '/health')).status, 200);
  });
});

describe('server.request_timeout_ms', () => {
  let server: TestServer;
  before(async () => {
    server = await startServer({ toml: `[server]\nrequest_timeout_ms = 400\n[[sources]]\nid = "cities"\ntype = "mbtiles"\npath = "${fixture('vector/world_cities.mbtiles')}"\n` });
  });
  after(() => server?.stop());

  const post = (length: number, extra = '') =>
    `POST /api/spatial/query HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nContent-Length: ${length}\r\n${extra}\r\n`;
  const body = JSON.stringify({ source: 'cities', zoom: 0 });

  test('a body shorter than its Content-Length ends with 408 problem JSON and a closed connection', async () => {
    const { text, closedByServer } = await rawExchange(server.port, [{ data: post(body.length + 50) + body }]);
    const r = parseResponse(text);
    assertProblem(r, 408, /did not arrive in full within 400 ms/);
    assert.equal(r.headers['connection'], 'close');
    assert.ok(closedByServer);
  });

  test('a body that trickles in byte by byte ends with 408', async () => {
    const chunks = [{ data: post(body.length) }, ...body.split('').map((ch) => ({ data: ch, delayMs: 150 }))];
    const { text, closedByServer } = await rawExchange(server.port, chunks);
    assertProblem(parseResponse(text), 408, /did not arrive in full/);
    assert.ok(closedByServer);
  });

  test('a chunked body that never ends ends with 408', async () => {
    const { text } = await rawExchange(server.port, [
      { data: `POST /api/spatial/query HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n` },
      { data: `5\r\n{"sou\r\n` },
    ]);
    assertProblem(parseResponse(text), 408, /did not arrive in full/);
  });

  test('a complete body is answered normally, and so are requests without a body while slow ones wait', async () => {
    const slow = rawExchange(server.port, [{ data: post(body.length + 10) + body }]);
    const ok = parseResponse((await rawExchange(server.port, [{ data: post(body.length, 'Connection: close\r\n') + body }])).text);
    assert.equal(ok.status, 200, ok.body);
    assert.ok(Array.isArray((JSON.parse(ok.body) as { features: unknown[] }).features));
    assert.equal((await request(server.url, '/data/cities/0/0/0.pbf')).status, 200);
    assertProblem(parseResponse((await slow).text), 408, /did not arrive/);
  });
});
