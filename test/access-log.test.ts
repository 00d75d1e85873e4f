// The access log: one line per request with method, path, route template, status, bytes, duration and request
// id; the id in X-Request-Id, kept from the request when a proxy sent one; JSON lines by default, a readable
// line with the local time under LOG_FORMAT=pretty.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { fixture, startServer, type TestServer } from './helpers/server.js';
import { request, tempDir, waitFor } from './helpers/foundation.js';
import net from 'node:net';
import { readdirSync } from 'node:fs';
import { rawGet } from './helpers/raw-http.js';

const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

interface AccessLine {
  level: number;
  msg: string;
  method: string;
  path: string;
  route: string | null;
  status: number | null;
  bytes: number;
  duration_ms: number;
  req_id: string;
}

function accessLines(output: string): AccessLine[] {
  return output
    .split('\n')
    .filter((l) => l.startsWith('{'))
    .map((l) => JSON.parse(l) as AccessLine)
    .filter((l) => l.msg === 'request');
}

describe('JSON access lines', () => {
  let server: TestServer;
  before(async () => {
    server = await startServer({ files: [fixture('vector/world_cities.mbtiles')], env: { LOG_LEVEL: 'info', LOG_FORMAT: 'json' } });
  });
  after(() => server?.stop());

  /** The access line of the request with this id, once it is written. */
  const lineOf = (id: string) => waitFor(`access line of ${id}`, () => accessLines(server.output()).find((l) => l.req_id === id));

  test('a tile from the fast lane: one line with the route template, status, body bytes and the id sent back', async () => {
    const res = await request(server.url, '/data/world_cities/0/0/0.pbf?key=secret-api-key');
    assert.equal(res.status, 200);
    const id = String(res.headers['x-request-id']);
    assert.match(id, UUID, 'a generated id');
    const line = await lineOf(id);
    assert.equal(line.level, 30);
    assert.equal(line.method, 'GET');
    assert.equal(line.path, '/data/world_cities/0/0/0.pbf', 'the query (API keys) is not logged');
    assert.equal(line.route, '/data/{source}/{z}/{x}/{y}.{format}');
    assert.equal(line.status, 200);
    assert.equal(line.bytes, res.body.length);
    assert.equal(typeof line.duration_ms, 'number');
    assert.ok(line.duration_ms >= 0);
    assert.doesNotMatch(server.output(), /secret-api-key/);
    assert.equal(accessLines(server.output()).filter((l) => l.req_id === id).length, 1, 'exactly one line');
  });

  test('a proxy\'s X-Request-Id is kept, answered and logged', async () => {
    const res = await request(server.url, '/data/world_cities.json', { headers: { 'X-Request-Id': 'edge-7f3a.42' } });
    assert.equal(res.status, 200);
    assert.equal(res.headers['x-request-id'], 'edge-7f3a.42');
    const line = await lineOf('edge-7f3a.42');
    assert.equal(line.route, '/data/{source}.json');
    assert.equal(line.bytes, res.body.length);
  });

  test('an X-Request-Id that is not a plain token is replaced by a generated one', async () => {
    const res = await request(server.url, '/health', { headers: { 'X-Request-Id': 'has spaces and "quotes"' } });
    assert.match(String(res.headers['x-request-id']), UUID);
  });

  test('a 404, a HEAD and a problem are logged with their status; HEAD with no body bytes', async () => {
    const missing = await request(server.url, '/no/such/route');
    assert.equal(missing.status, 404);
    const m = await lineOf(String(missing.headers['x-request-id']));
    assert.equal(m.status, 404);
    assert.equal(m.route, null, 'no route matched');
    assert.equal(m.bytes, missing.body.length);

    const head = await request(server.url, '/data/world_cities/0/0/0.pbf', { method: 'HEAD' });
    const h = await lineOf(String(head.headers['x-request-id']));
    assert.equal(h.method, 'HEAD');
    assert.equal(h.status, 200);
    assert.equal(h.bytes, 0);

    const bad = await request(server.url, '/data/world_cities/0/5/0.pbf');
    assert.equal(bad.status, 400);
    const b = await lineOf(String(bad.headers['x-request-id']));
    assert.equal(b.status, 400);
    assert.equal(b.route, '/data/{source}/{z}/{x}/{y}.{format}');
  });

  test('a malformed target handled before routing is logged too', async () => {
    const res = await rawGet(server.url, '/data\\x');
    assert.equal(res.status, 400);
    const line = await lineOf(String(res.headers['x-request-id']));
    assert.equal(line.path, '/data\\x');
    assert.equal(line.status, 400);
  });
});

test('LOG_LEVEL=warn leaves the access log out, the request id header stays', async () => {
  const server = await startServer({ files: [fixture('vector/world_cities.mbtiles')], env: { LOG_LEVEL: 'warn', LOG_FORMAT: 'json' } });
  try {
    const res = await request(server.url, '/data/world_cities/0/0/0.pbf');
    assert.match(String(res.headers['x-request-id']), UUID);
    await request(server.url, '/health');
    assert.equal(accessLines(server.output()).length, 0);
  } finally {
    await server.stop();
  }
});

test('LOG_FORMAT=pretty: readable lines with the local time of the server\'s time zone', async () => {
  // A zone without daylight saving, half an hour off UTC: a UTC or epoch time could not pass for it.
  const server = await startServer({ files: [fixture('vector/world_cities.mbtiles')], env: { LOG_LEVEL: 'info', LOG_FORMAT: 'pretty', TZ: 'Asia/Kolkata' } });
  try {
    const before = Date.now();
    const res = await request(server.url, '/data/world_cities/0/0/0.pbf', { headers: { 'X-Request-Id': 'pretty-1' } });
    const afterMs = Date.now();
    assert.equal(res.status, 200);
    const line = await waitFor('pretty access line', () => server.output().split('\n').find((l) => l.includes('req_id=pretty-1')));
    assert.doesNotMatch(line, /^\{/, 'not JSON');
    const m = /^(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d)\.\d{3} INFO {2}request (.*)$/.exec(line);
    assert.ok(m, line);
    const fields = m[2];
    for (const f of ['method=GET', 'path=/data/world_cities/0/0/0.pbf', 'route=/data/{source}/{z}/{x}/{y}.{format}', 'status=200', `bytes=${res.body.length}`, 'req_id=pretty-1'])
      assert.ok(fields.split(' ').includes(f), `${f} missing in: ${line}`);
    assert.match(fields, /duration_ms=\d+(\.\d)?/);
    // The printed time, read as Kolkata wall-clock time, lies between the request's start and end (to the second).
    const kolkata = (ms: number) =>
      new Intl.DateTimeFormat('sv-SE', { timeZone: 'Asia/Kolkata', year: 'numeric', month: '2-digit', day: '2-digit', hour: '2-digit', minute: '2-digit', second: '2-digit', hourCycle: 'h23' }).format(ms);
    const printed = m[1];
    assert.ok(printed >= kolkata(before - 1000) && printed <= kolkata(afterMs + 1000), `${printed} is not Kolkata time between ${kolkata(before)} and ${kolkata(afterMs)}`);
  } finally {
    await server.stop();
  }
});

describe('a client that hangs up', () => {
  let server: TestServer;
  let uploadDir: string;
  before(async () => {
    uploadDir = tempDir('tsts-departed-');
    server = await startServer({
      toml: `[server]\nupload_dir = "${uploadDir}"\n[[sources]]\nid = "cities"\ntype = "mbtiles"\npath = "${fixture('vector/world_cities.mbtiles')}"\n`,
      env: { LOG_LEVEL: 'info', LOG_FORMAT: 'json' },
    });
  });
  after(() => server?.stop());

  /** Sends the head and part of a body of `length` bytes with request id `id`, then closes the connection. */
  const hangUp = (path: string, id: string, contentType: string, part: string, length: number) =>
    new Promise<void>((resolve, reject) => {
      const socket = net.connect(server.port, '127.0.0.1', () => {
        socket.write(`POST ${path} HTTP/1.1\r\nHost: x\r\nX-Request-Id: ${id}\r\nContent-Type: ${contentType}\r\nContent-Length: ${length}\r\n\r\n${part}`);
        setTimeout(() => socket.destroy(), 300);
      });
      socket.on('close', () => resolve());
      socket.on('error', reject);
    });

  for (const c of [
    { name: 'mid-way through a JSON body', path: '/api/spatial/query', route: '/api/spatial/query', type: 'application/json', part: '{"source": "cit' },
    { name: 'mid-way through an upload', path: '/api/upload', route: '/api/upload', type: 'multipart/form-data; boundary=b', part: '--b\r\nContent-Disposition: form-data; name="file"; filename="a.mbtiles"\r\n\r\nSQLite format 3' },
  ]) {
    test(`${c.name}: one info line saying so, with the route and how far it got; no error, no stack`, async () => {
      const id = `departed-${c.route.replace(/\W/g, '')}`;
      await hangUp(c.path, id, c.type, c.part, 100_000);
      const line = await waitFor(`access line of ${id}`, () => accessLines(server.output()).find((l) => l.req_id === id));
      // Anything logged late about the same request would come within this time.
      await new Promise((r) => setTimeout(r, 500));
      const lines = server.output().split('\n').filter((l) => l.includes(id));
      assert.equal(lines.length, 1, lines.join('\n'));
      const record = line as AccessLine & { aborted?: boolean; stage?: string };
      assert.equal(record.level, 30);
      assert.equal(record.route, c.route);
      assert.equal(record.aborted, true);
      assert.equal(record.stage, 'request body');
      assert.equal(record.status, null);
      const errors = server.output().split('\n').filter((l) => /"level":(50|60)|Error: aborted|at abortIncoming/.test(l));
      assert.deepEqual(errors, []);
      assert.deepEqual(readdirSync(uploadDir), []);
    });
  }
});
