// Uploads with workers = 2: an upload received by one worker is served by both from the moment it is answered,
// a worker forked later (a killed one's replacement) serves it from the start, and a delete removes it from
// both before the 204. An upload the other worker cannot open is refused with 500 and left nowhere. Which
// worker answered is read from the socket each connection landed on (test/helpers/processes.ts).
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync, readdirSync, readFileSync, unlinkSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { fixture, startServer, type TestServer } from './helpers/server.js';
import { request, tempDir, waitFor } from './helpers/foundation.js';
import { askOnFreshConnection, childrenOf, connectionHolder, type Answered } from './helpers/processes.js';
import { BOUNDARY, closing, partHead, uploadFile } from './helpers/upload.js';

const OMT_PMTILES = fixture('vector/omt-planet-z0-1.pmtiles');
const OMT_MBTILES = fixture('vector/omt-z0-1.mbtiles');

/**
 * Asks `path` on fresh connections until every one of `workers` has answered (each answer checked by
 * `expect`), and returns the answers by worker.
 */
async function askEveryWorker(port: number, p: string, workers: number[], expect: (a: Answered) => void): Promise<Map<number, Answered>> {
  const seen = new Map<number, Answered>();
  await waitFor(
    `answers to ${p} from workers ${workers.join(', ')}`,
    async () => {
      const a = await askOnFreshConnection(port, 'GET', p, workers);
      expect(a);
      if (a.pid !== undefined) seen.set(a.pid, a);
      return workers.every((w) => seen.has(w)) ? true : undefined;
    },
    60_000,
  );
  return seen;
}

/** A two-worker server with an upload directory of its own. */
async function startCluster(prefix: string, env: Record<string, string> = {}): Promise<{ server: TestServer; dir: string; primary: number }> {
  const dir = path.join(tempDir(prefix), 'uploads');
  mkdirSync(dir);
  const server = await startServer({
    toml: `[server]\ndisable_render = true\nupload_dir = "${dir}"\n[[sources]]\nid = "omt"\ntype = "pmtiles"\npath = "${OMT_PMTILES}"\n`,
    workers: 2,
    env,
  });
  return { server, dir, primary: server.proc.pid! };
}

/** Stops the server, and any worker that outlived its primary. */
async function stopCluster(server: TestServer | undefined, primary: number | undefined): Promise<void> {
  const workers = primary ? childrenOf(primary) : [];
  await server?.stop();
  for (const pid of workers) {
    try {
      process.kill(pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
}

/** The two workers of `primary`, once both are forked. */
const twoWorkers = (primary: number) =>
  waitFor('two workers', () => {
    const c = childrenOf(primary);
    return c.length === 2 ? c : undefined;
  });

describe('uploads with workers = 2', () => {
  let server: TestServer;
  let dir: string;
  let primary: number;

  before(async () => {
    ({ server, dir, primary } = await startCluster('tsts-uploads-cluster-'));
  });
  after(() => stopCluster(server, primary));

  test('seen by both workers at once, by a replacement worker from its start, and deleted from both', async () => {
    const workers = await twoWorkers(primary);
    // Both listen before the upload, so the relay has two workers to reach.
    await askEveryWorker(server.port, '/health', workers, (a) => assert.equal(a.status, 200));

    const up = await uploadFile(server.url, 'omt.mbtiles', OMT_MBTILES);
    assert.equal(up.status, 200, up.text);
    const id = String(up.json.id);
    const tile = `/data/upload-${id}/0/0/0.pbf`;
    // Every answer after the 200 must serve it: a 404 from either worker fails at once.
    await askEveryWorker(server.port, tile, workers, (a) => assert.equal(a.status, 200, `worker ${a.pid} answered ${a.status}`));
    const lists = await askEveryWorker(server.port, '/api/upload', workers, (a) => assert.equal(a.status, 200));
    for (const [pid, a] of lists) assert.deepEqual((JSON.parse(a.body) as { id: string }[]).map((u) => u.id), [id], `list of worker ${pid}`);

    // A replacement worker is forked with the cluster's uploads.
    const victim = workers[0];
    process.kill(victim, 'SIGKILL');
    const now = await waitFor('a replacement worker', () => {
      const c = childrenOf(primary);
      return c.length === 2 && !c.includes(victim) ? c : undefined;
    }, 60_000);
    await askEveryWorker(server.port, tile, now, (a) => assert.equal(a.status, 200, `worker ${a.pid} answered ${a.status}`));

    const file = path.join(dir, `upload-${id}.mbtiles`);
    assert.ok(existsSync(file));
    const del = await request(server.url, `/api/upload/upload-${id}`, { method: 'DELETE' });
    assert.equal(del.status, 204);
    assert.ok(!existsSync(file), 'file deleted once every worker dropped it');
    await askEveryWorker(server.port, tile, now, (a) => assert.equal(a.status, 404, `worker ${a.pid} answered ${a.status}`));
    await askEveryWorker(server.port, `/data/upload-${id}.json`, now, (a) => assert.equal(a.status, 404));
  });
});

describe('an upload another worker cannot open', () => {
  let server: TestServer;
  let dir: string;
  let primary: number;
  let stopped: number | undefined;

  before(async () => {
    ({ server, dir, primary } = await startCluster('tsts-uploads-cluster-fail-', { LOG_LEVEL: 'info' }));
  });
  after(async () => {
    if (stopped !== undefined) {
      try {
        process.kill(stopped, 'SIGCONT');
      } catch {
        // gone
      }
    }
    await stopCluster(server, primary);
  });

  test('500 without internal detail, served by no worker, no file left, and the failure logged', async () => {
    const workers = await twoWorkers(primary);
    // Both ready: the primary relays an upload to every ready worker but the one that received it.
    await waitFor('both workers ready', async () => ((await fetch(`${server.url}/ready`)).status === 200 ? true : undefined), 60_000);

    // The upload is sent in two steps on one connection: first the head and part of the file, so that the
    // worker receiving it is known; the other worker is then stopped (SIGSTOP), the rest is sent, and the
    // stored file is deleted before the stopped worker runs again and is asked to open it.
    const file = readFileSync(OMT_MBTILES);
    const head = partHead({ field: 'file', fileName: 'omt.mbtiles' });
    const tail = closing();
    const length = head.length + file.length + tail.length;
    const socket = net.connect(server.port, '127.0.0.1');
    socket.on('error', () => {});
    let answer = '';
    socket.on('data', (d: Buffer) => (answer += d.toString('latin1')));
    const ended = new Promise<void>((resolve) => socket.on('close', () => resolve()));
    await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
    socket.write(`POST /api/upload HTTP/1.1\r\nHost: test\r\nContent-Type: multipart/form-data; boundary=${BOUNDARY}\r\nContent-Length: ${length}\r\nConnection: close\r\n\r\n`);
    socket.write(Buffer.concat([head, file.subarray(0, 1024)]));
    const receiver = await waitFor('the worker holding the upload connection', () => connectionHolder(server.port, socket.localPort!, workers));
    const other = workers.find((w) => w !== receiver)!;
    process.kill(other, 'SIGSTOP');
    stopped = other;
    socket.write(Buffer.concat([file.subarray(1024), tail]));
    const stored = await waitFor('the stored upload file', () => readdirSync(dir).find((n) => /^upload-[0-9a-f-]{36}\.mbtiles$/.test(n)));
    unlinkSync(path.join(dir, stored));
    process.kill(other, 'SIGCONT');
    stopped = undefined;
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([ended, new Promise((_, reject) => (timer = setTimeout(() => reject(new Error(`no answer to the upload: ${answer}`)), 60_000)))]);
    clearTimeout(timer);

    const status = Number(answer.slice(9, 12));
    assert.equal(status, 500, answer);
    assert.match(answer, /\r\ncontent-type: application\/problem\+json/i);
    const body = JSON.parse(answer.slice(answer.indexOf('\r\n\r\n') + 4)) as { status: number; detail: string };
    assert.equal(body.status, 500);
    assert.doesNotMatch(body.detail, /ENOENT|no such file|worker \d|uploads\//, 'no internal detail in the answer');
    const id = stored.slice('upload-'.length, -'.mbtiles'.length);
    // Neither worker serves it or lists it, and nothing of it is left in the directory.
    await askEveryWorker(server.port, `/data/upload-${id}/0/0/0.pbf`, workers, (a) => assert.equal(a.status, 404, `worker ${a.pid} answered ${a.status}`));
    const lists = await askEveryWorker(server.port, '/api/upload', workers, (a) => assert.equal(a.status, 200));
    for (const [pid, a] of lists) assert.deepEqual(JSON.parse(a.body), [], `list of worker ${pid}`);
    assert.deepEqual(readdirSync(dir), [], 'nothing left in the upload directory');
    // The primary names the upload and the worker that failed; both workers keep serving.
    assert.match(server.output(), /uploads: a worker could not open an upload; removing it everywhere/);
    assert.ok(server.output().includes(id), 'the log names the upload');
    await askEveryWorker(server.port, '/data/omt/0/0/0.pbf', workers, (a) => assert.equal(a.status, 200));
    assert.deepEqual(childrenOf(primary), workers, 'no worker was replaced');
  });
});
