// Uploads with workers = 2: an upload received by one worker is served by both from the moment it is answered,
// a worker forked later (a killed one's replacement) serves it from the start, and a delete removes it from
// both before the 204. Which worker answered is read from the socket each connection landed on
// (test/helpers/processes.ts).
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import { fixture, startServer, type TestServer } from './helpers/server.js';
import { request, tempDir, waitFor } from './helpers/foundation.js';
import { askOnFreshConnection, childrenOf, type Answered } from './helpers/processes.js';
import { uploadFile } from './helpers/upload.js';

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

describe('uploads with workers = 2', () => {
  let server: TestServer;
  let dir: string;
  let primary: number;

  before(async () => {
    dir = path.join(tempDir('tsts-uploads-cluster-'), 'uploads');
    mkdirSync(dir);
    server = await startServer({
      toml: `[server]\ndisable_render = true\nupload_dir = "${dir}"\n[[sources]]\nid = "omt"\ntype = "pmtiles"\npath = "${OMT_PMTILES}"\n`,
      workers: 2,
    });
    primary = server.proc.pid!;
  });
  after(async () => {
    const workers = primary ? childrenOf(primary) : [];
    await server?.stop();
    for (const pid of workers) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // already gone
      }
    }
  });

  test('seen by both workers at once, by a replacement worker from its start, and deleted from both', async () => {
    const workers = await waitFor('two workers', () => {
      const c = childrenOf(primary);
      return c.length === 2 ? c : undefined;
    });
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
