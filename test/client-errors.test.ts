// Requests node:http refuses before any route sees them (a malformed request line, bytes a target may not hold,
// bare LF line ends, a doubled Content-Length, a header section past server.max_header_bytes, HTTP/1.1 without
// Host) get the answer every other error of the service gets: problem JSON with CORS headers and a request id,
// then a closed connection, instead of Node's bare `400 Bad Request`. The header limit is a setting.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { fixture, runCli, startServer, writeTempConfig, type TestServer } from './helpers/server.js';
import { request } from './helpers/foundation.js';
import { assertProblem, parseResponse, rawExchange } from './helpers/raw-socket.js';

const ORIGIN = 'https://app.example';
const SOURCE = `[[sources]]\nid = "cities"\ntype = "mbtiles"\npath = "${fixture('vector/world_cities.mbtiles')}"\n`;

/** A request head of `target` whose Origin comes first, so that it is read even when a later part is refused. */
const head = (target: string, extra = '') => `GET ${target} HTTP/1.1\r\nOrigin: ${ORIGIN}\r\nHost: 127.0.0.1\r\n${extra}Connection: close\r\n\r\n`;

describe('requests refused before routing', () => {
  let server: TestServer;
  before(async () => {
    server = await startServer({ toml: `[server]\ncors_origins = ["${ORIGIN}"]\n${SOURCE}` });
  });
  after(() => server?.stop());

  const cases: { name: string; data: string | Buffer; status: number; detail: RegExp }[] = [
    { name: 'a request line that is not METHOD TARGET VERSION', data: `NONSENSE\r\nOrigin: ${ORIGIN}\r\n\r\n`, status: 400, detail: /request line/ },
    { name: 'a space in the target', data: head('/data/cit ies.json'), status: 400, detail: /request line|target/ },
    { name: 'a NUL byte in the target', data: head('/data/cit\u0000ies.json'), status: 400, detail: /target/ },
    { name: 'a non-ASCII byte in the target', data: Buffer.concat([Buffer.from('GET /data/caf'), Buffer.from([0xe9]), Buffer.from(`.json HTTP/1.1\r\nOrigin: ${ORIGIN}\r\nHost: x\r\n\r\n`)]), status: 400, detail: /target/ },
    { name: 'bare LF line ends', data: `GET /health HTTP/1.1\nOrigin: ${ORIGIN}\nHost: x\n\n`, status: 400, detail: /CRLF/ },
    { name: 'Content-Length twice', data: `POST /api/spatial/query HTTP/1.1\r\nOrigin: ${ORIGIN}\r\nHost: x\r\nContent-Length: 2\r\nContent-Length: 3\r\n\r\n{}`, status: 400, detail: /Content-Length/ },
    // HTTP/1.1 requires Host: node:http's own check answered these with a bare 400 and no body.
    { name: 'HTTP/1.1 without a Host header', data: `GET /health HTTP/1.1\r\nOrigin: ${ORIGIN}\r\nConnection: close\r\n\r\n`, status: 400, detail: /no Host header/ },
    { name: 'HTTP/1.1 without a Host header, for a tile (the fast lane\'s path)', data: `GET /data/cities/0/0/0.pbf HTTP/1.1\r\nOrigin: ${ORIGIN}\r\nConnection: close\r\n\r\n`, status: 400, detail: /no Host header/ },
    { name: 'HTTP/1.1 without a Host header, with an absolute target', data: `GET http://127.0.0.1/health HTTP/1.1\r\nOrigin: ${ORIGIN}\r\nConnection: close\r\n\r\n`, status: 400, detail: /no Host header/ },
    { name: 'a header section over 16 KB', data: head('/health', `X-Big: ${'a'.repeat(20_000)}\r\n`), status: 431, detail: /16384 bytes \(server\.max_header_bytes\).*POST/ },
    { name: 'a target over 16 KB', data: head(`/styles/x/static/auto/10x10.png?path=${'0,0|'.repeat(5_000)}`), status: 431, detail: /server\.max_header_bytes/ },
  ];
  for (const c of cases) {
    test(`${c.name}: ${c.status} problem JSON with CORS and a request id, then the connection closes`, async () => {
      const { text, closedByServer } = await rawExchange(server.port, [{ data: c.data }]);
      const r = parseResponse(text);
      assertProblem(r, c.status, c.detail);
      assert.equal(r.headers['access-control-allow-origin'], ORIGIN);
      assert.match(r.headers['vary'] ?? '', /Origin/);
      assert.ok(r.headers['x-request-id'], 'a request id');
      assert.equal(r.headers['connection'], 'close');
      assert.ok(closedByServer, 'the server closed the connection');
      assert.doesNotMatch(r.body, /HPE_|llhttp|Parse Error|at \w+ \(/, 'no parser internals in the body');
    });
  }

  test('the server keeps serving after each of them', async () => {
    assert.equal((await request(server.url, '/data/cities.json')).status, 200);
  });
});

describe('server.max_header_bytes', () => {
  let server: TestServer;
  before(async () => {
    server = await startServer({ toml: `[server]\nmax_header_bytes = 65536\n${SOURCE}` });
  });
  after(() => server?.stop());

  test('a 40 KB header section is served under a 64 KiB limit; past the limit 431 names the setting and its value', async () => {
    const fine = parseResponse((await rawExchange(server.port, [{ data: head('/health', `X-Big: ${'a'.repeat(40_000)}\r\n`) }])).text);
    assert.equal(fine.status, 200);
    const tooBig = parseResponse((await rawExchange(server.port, [{ data: head('/health', `X-Big: ${'a'.repeat(70_000)}\r\n`) }])).text);
    assertProblem(tooBig, 431, /65536 bytes \(server\.max_header_bytes\)/);
  });

  test('an out-of-range value stops start-up with the key named', async () => {
    const { code, stderr } = await runCli(['--config', writeTempConfig(`[server]\nmax_header_bytes = 10\n${SOURCE}`)]);
    assert.equal(code, 1);
    assert.match(stderr, /server\.max_header_bytes/);
  });
});
