// /files/{path}: files of the configured directory with Content-Type by extension and one hour of caching;
// anything that is missing, a directory, or would leave the directory (.., encoded .., absolute paths,
// symlinks out) is 404; no files directory configured is 404 too.
import { after, before, test } from 'node:test';
import assert from 'node:assert/strict';
import { mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { startServer, type TestServer } from './helpers/server.js';
import { request, tempDir } from './helpers/foundation.js';

let server: TestServer;
let root: string;
let outside: string;

before(async () => {
  const base = tempDir('tsts-files-');
  root = path.join(base, 'public');
  outside = path.join(base, 'secret.txt');
  mkdirSync(path.join(root, 'sub', 'deeper'), { recursive: true });
  writeFileSync(outside, 'not for the web');
  writeFileSync(path.join(root, 'hello.txt'), 'hello files\n');
  writeFileSync(path.join(root, 'data.json'), '{"a":1}');
  writeFileSync(path.join(root, 'sub', 'deeper', 'shape.geojson'), '{"type":"FeatureCollection","features":[]}');
  writeFileSync(path.join(root, 'with space é.txt'), 'spaced');
  writeFileSync(path.join(root, 'blob.bin'), Buffer.from([0, 1, 2, 3, 255]));
  writeFileSync(path.join(root, 'page.html'), '<p>hi</p>');
  symlinkSync(outside, path.join(root, 'leak.txt'));
  symlinkSync(base, path.join(root, 'up'));
  symlinkSync(path.join(root, 'hello.txt'), path.join(root, 'alias.txt'));
  // A file just outside the directory, the target of the traversal attempts below.
  writeFileSync(path.join(base, 'config.toml'), 'not for the web either');
  server = await startServer({ toml: `files = "${root}"\n[server]\ndisable_render = true\n` });
});
after(async () => {
  await server?.stop();
});

test('files are served with their bytes, Content-Type by extension, Content-Length and Cache-Control', async () => {
  const cases: [string, string, string][] = [
    ['/files/hello.txt', 'hello.txt', 'text/plain; charset=utf-8'],
    ['/files/data.json', 'data.json', 'application/json; charset=utf-8'],
    ['/files/sub/deeper/shape.geojson', 'sub/deeper/shape.geojson', 'application/geo+json'],
    ['/files/with%20space%20%C3%A9.txt', 'with space é.txt', 'text/plain; charset=utf-8'],
    ['/files/blob.bin', 'blob.bin', 'application/octet-stream'],
    ['/files/page.html', 'page.html', 'text/html; charset=utf-8'],
    ['/files/alias.txt', 'hello.txt', 'text/plain; charset=utf-8'],
  ];
  for (const [url, file, type] of cases) {
    const res = await request(server.url, url);
    assert.equal(res.status, 200, url);
    assert.ok(res.body.equals(readFileSync(path.join(root, file))), url);
    assert.equal(res.headers['content-type'], type, url);
    assert.equal(res.headers['content-length'], String(res.body.length), url);
    assert.equal(res.headers['cache-control'], 'public, max-age=3600', url);
    const head = await request(server.url, url, { method: 'HEAD' });
    assert.equal(head.status, 200);
    assert.equal(head.body.length, 0);
    assert.equal(head.headers['content-length'], String(res.body.length));
    assert.equal(head.headers['content-type'], type);
  }
});

test('missing files, directories and every way out of the directory are 404 problem+json', async () => {
  const refused = [
    '/files/nope.txt',
    '/files/sub',
    '/files/sub/',
    '/files/',
    '/files/../config.toml',
    '/files/sub/../../config.toml',
    '/files/%2e%2e/config.toml',
    '/files/%2E%2E%2Fconfig.toml',
    '/files/..%2fconfig.toml',
    '/files/..%5cconfig.toml',
    '/files/sub/%2e%2e/%2e%2e/secret.txt',
    '/files//etc/passwd',
    '/files/%2Fetc%2Fpasswd',
    '/files/leak.txt',
    '/files/up/secret.txt',
    '/files/hello.txt%00.json',
    '/files/%ZZ',
  ];
  for (const url of refused) {
    const res = await request(server.url, url);
    assert.equal(res.status, 404, url);
    assert.equal(res.headers['content-type'], 'application/problem+json', url);
    assert.doesNotMatch(res.body.toString(), /not for the web|root:/, url);
  }
});

test('without a files directory every /files path is 404', async () => {
  const bare = await startServer({ toml: '[server]\ndisable_render = true\n' });
  try {
    const res = await request(bare.url, '/files/hello.txt');
    assert.equal(res.status, 404);
    assert.equal(res.headers['content-type'], 'application/problem+json');
  } finally {
    await bare.stop();
  }
});
