// server.transcode_threads sizes the vector pool of each process, and its queue (64 tasks per thread) bounds the
// transcodes waiting for a thread: past it the tile is refused with 503, Retry-After and problem JSON, and the
// service goes on answering. One thread (queue 64) must refuse part of a burst of 240 transcodes that four
// threads (queue 256) take whole; with the setting ignored, both servers would be sized alike (their share of
// the cores) and one of the two checks would fail on any machine.
import assert from 'node:assert/strict';
import http from 'node:http';
import { after, before, describe, test } from 'node:test';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fixture, startServer, type TestServer } from './helpers/server.js';
import { request, tempDir, writeMbtiles } from './helpers/foundation.js';

const BURST = 240;
/** A 33 KB OpenMapTiles z11 tile: milliseconds to transcode, far more than it takes a burst to arrive, so a burst outpaces one thread. */
/** The tile is stored at x = 0..BURST-1 of row 340 (one blob, deduplicated): distinct tiles, so no two requests share a transcode. */
const tilePath = (i: number) => `/data/big/10/${i}/340`;

const config = (archive: string, threads: number) => `[server]
disable_render = true
transcode_threads = ${threads}
[cache]
enabled = false
[[sources]]
id = "big"
type = "mbtiles"
path = "${archive}"
`;

interface Outcome {
  status: number;
  retryAfter: string | undefined;
  contentType: string | undefined;
  body: Buffer;
}

/** `n` requests for distinct tiles as MLT (a transcode each: the tile cache is off), all sent at once. */
async function burst(s: TestServer, n: number): Promise<Outcome[]> {
  const agent = new http.Agent({ keepAlive: false, maxSockets: n });
  try {
    return await Promise.all(
      Array.from({ length: n }, (_, i) =>
        new Promise<Outcome>((resolve, reject) => {
          const req = http.get(`${s.url}${tilePath(i)}.mlt`, { agent }, (res) => {
            const chunks: Buffer[] = [];
            res.on('data', (c: Buffer) => chunks.push(c));
            res.on('end', () =>
              resolve({ status: res.statusCode ?? 0, retryAfter: res.headers['retry-after'] as string | undefined, contentType: res.headers['content-type'], body: Buffer.concat(chunks) }),
            );
          });
          req.on('error', reject);
          req.setTimeout(120_000, () => req.destroy(new Error('no answer within 120 s')));
        }),
      ),
    );
  } finally {
    agent.destroy();
  }
}

describe('server.transcode_threads and the transcoding queue', () => {
  let one: TestServer;
  let four: TestServer;
  let stored: Buffer;
  before(async () => {
    const data = readFileSync(fixture('vector/omt-tiles/11_1062_1368.mvt'));
    const archive = writeMbtiles(path.join(tempDir('tsts-transcode-threads-'), 'big.mbtiles'), { name: 'big', format: 'pbf', minzoom: '0', maxzoom: '14' }, Array.from({ length: BURST }, (_, x) => ({ z: 10, x, y: 340, data })), 'map-images');
    one = await startServer({ toml: config(archive, 1) });
    four = await startServer({ toml: config(archive, 4) });
    // Larger than the inline limit (4 KiB): it goes through the pool.
    stored = (await request(one.url, `${tilePath(0)}.pbf`)).body;
    assert.ok(stored.length > 4096, `tile of ${stored.length} bytes`);
  });
  after(async () => {
    await one?.stop();
    await four?.stop();
  });

  test('one thread: a burst past its queue gets 503 with Retry-After and problem JSON for the excess; the rest is served', async () => {
    const outcomes = await burst(one, BURST);
    assert.equal(outcomes.length, BURST);
    const ok = outcomes.filter((o) => o.status === 200);
    const refused = outcomes.filter((o) => o.status === 503);
    assert.equal(ok.length + refused.length, BURST, `statuses: ${[...new Set(outcomes.map((o) => o.status))].join(', ')}`);
    // One running and 64 waiting fit; of 240 sent at once some must have been refused.
    assert.ok(refused.length >= 1, `no 503 in a burst of ${BURST} against one thread (${ok.length} served)`);
    assert.ok(ok.length >= 65, `at least the thread and its queue were served: ${ok.length}`);
    for (const r of refused) {
      assert.equal(r.retryAfter, '1');
      assert.equal(r.contentType, 'application/problem+json');
      const body = JSON.parse(r.body.toString()) as Record<string, unknown>;
      assert.equal(body.status, 503);
      assert.match(String(body.detail), /transcoding queue is full/);
    }
    for (const o of ok) assert.equal(o.contentType, 'application/vnd.open-vector-tile');
    // It heals: the next request is served.
    assert.equal((await request(one.url, `${tilePath(0)}.mlt`)).status, 200);
  });

  test('four threads (a queue of 256): the same burst is served whole', async () => {
    const outcomes = await burst(four, BURST);
    const statuses = outcomes.map((o) => o.status);
    assert.equal(outcomes.length, BURST);
    assert.deepEqual([...new Set(statuses)], [200], `statuses: ${statuses.join(',')}`);
  });
});
