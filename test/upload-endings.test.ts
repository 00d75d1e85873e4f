// Every way an upload can end other than success leaves the upload directory empty: the body timing out
// (server.request_timeout_ms, 408), the client hanging up, the size limit (413), an invalid file (400), the
// server stopping (SIGTERM) mid-upload, and the server dying (SIGKILL) mid-upload, whose partial file the next
// start-up removes. Issue 21 found the timeout leaving `.upload-<uuid>.part` behind while the client held its
// connection open.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { readdirSync } from 'node:fs';
import net from 'node:net';
import { startServer, type TestServer } from './helpers/server.js';
import { tempDir, waitFor } from './helpers/foundation.js';
import { BOUNDARY, partHead, streamUpload, uploadFile } from './helpers/upload.js';
import { parseResponse } from './helpers/raw-socket.js';

const config = (dir: string, timeoutMs: number) => `[server]\ndisable_render = true\nupload_dir = "${dir}"\nupload_max_size_mb = 1\nrequest_timeout_ms = ${timeoutMs}\n`;

interface HeldUpload {
  socket: net.Socket;
  /** Everything the server sent back so far. */
  received(): string;
  /** Whether the server closed the connection. */
  closed(): boolean;
}

/**
 * Starts an upload of a file announced as 4 MiB (over no limit check yet: the limit is 1 MiB, so 512 KiB are
 * sent) and then sends nothing more, holding the connection open.
 */
async function holdUpload(port: number): Promise<HeldUpload> {
  const head = partHead({ field: 'file', fileName: 'held.mbtiles' });
  const socket = net.connect(port, '127.0.0.1');
  let text = '';
  let closed = false;
  socket.on('data', (d) => (text += d.toString('latin1')));
  socket.on('close', () => (closed = true));
  socket.on('error', () => {});
  await new Promise<void>((r) => socket.once('connect', () => r()));
  socket.write(`POST /api/upload HTTP/1.1\r\nHost: test\r\nContent-Type: multipart/form-data; boundary=${BOUNDARY}\r\nContent-Length: ${head.length + 4 * 1024 * 1024}\r\n\r\n`);
  socket.write(head);
  socket.write(Buffer.alloc(512 * 1024, 7));
  return { socket, received: () => text, closed: () => closed };
}

const partFiles = (dir: string) => readdirSync(dir).filter((n) => n.endsWith('.part'));

describe('one server, each ending', () => {
  let server: TestServer;
  let dir: string;
  before(async () => {
    dir = tempDir('tsts-endings-');
    server = await startServer({ toml: config(dir, 1500) });
  });
  after(() => server?.stop());

  test('timeout: 408 problem JSON, and the partial file is removed while the client still holds its connection', async () => {
    const held = await holdUpload(server.port);
    try {
      await waitFor('the partial file to appear', () => (partFiles(dir).length > 0 ? true : undefined));
      await waitFor('the 408', () => (held.received().includes('\r\n\r\n{') ? true : undefined), 10_000);
      const r = parseResponse(held.received());
      assert.equal(r.status, 408);
      assert.equal(r.headers['content-type'], 'application/problem+json');
      assert.match(r.body, /did not arrive in full within 1500 ms/);
      await waitFor('the upload directory to be empty', () => (readdirSync(dir).length === 0 ? true : undefined), 5_000);
      await waitFor('the server to close the connection', () => (held.closed() ? true : undefined), 5_000);
    } finally {
      held.socket.destroy();
    }
  });

  test('disconnect: the client hangs up mid-upload; nothing is left', async () => {
    const held = await holdUpload(server.port);
    await waitFor('the partial file to appear', () => (partFiles(dir).length > 0 ? true : undefined));
    held.socket.destroy();
    await waitFor('the upload directory to be empty', () => (readdirSync(dir).length === 0 ? true : undefined), 5_000);
  });

  test('size limit: 413 while the client is still sending; nothing is left', async () => {
    const answer = await streamUpload(server.url, 'big.mbtiles', 3 * 1024 * 1024, 64 * 1024);
    assert.equal(answer.status, 413, answer.body);
    await waitFor('the upload directory to be empty', () => (readdirSync(dir).length === 0 ? true : undefined), 5_000);
  });

  test('invalid file: 400 naming why; nothing is left', async () => {
    const answer = await uploadFile(server.url, 'bad.mbtiles', Buffer.alloc(64 * 1024, 1));
    assert.equal(answer.status, 400);
    assert.match(String(answer.json.detail), /not a SQLite database/);
    assert.deepEqual(readdirSync(dir), []);
  });
});

test('server stop (SIGTERM) mid-upload: the upload ends with 503, nothing is left, the server exits 0 at once', async () => {
  const dir = tempDir('tsts-endings-stop-');
  // A long body timeout: only the stop can end this upload.
  const server = await startServer({ toml: config(dir, 600_000) });
  const held = await holdUpload(server.port);
  try {
    await waitFor('the partial file to appear', () => (partFiles(dir).length > 0 ? true : undefined));
    const started = Date.now();
    const code = await server.stop('SIGTERM');
    assert.equal(code, 0);
    assert.ok(Date.now() - started < 10_000, `the stop took ${Date.now() - started} ms`);
    assert.deepEqual(readdirSync(dir), []);
    const r = parseResponse(held.received());
    assert.equal(r.status, 503);
    assert.match(r.body, /stopping/);
  } finally {
    held.socket.destroy();
    await server.stop('SIGKILL');
  }
});

test('server crash (SIGKILL) mid-upload: the next start-up removes the partial file', async () => {
  const dir = tempDir('tsts-endings-crash-');
  const first = await startServer({ toml: config(dir, 600_000) });
  const held = await holdUpload(first.port);
  try {
    await waitFor('the partial file to appear', () => (partFiles(dir).length > 0 ? true : undefined));
    await first.stop('SIGKILL');
    assert.equal(partFiles(dir).length, 1, 'a crash leaves its partial file');
  } finally {
    held.socket.destroy();
  }
  const second = await startServer({ toml: config(dir, 600_000) });
  try {
    assert.deepEqual(readdirSync(dir), []);
  } finally {
    await second.stop();
  }
});
