// The render queue gives clients turns (src/render/fair-queue.ts): a client that fills the queue does not make
// another client wait behind all of its renders, and one client's renders still go in the order it asked.
import assert from 'node:assert/strict';
import http from 'node:http';
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import fc from './helpers/fast-check.js';
import { waitFor } from './helpers/foundation.js';
import { startHoldServer, stallToml, type HoldServer } from './helpers/hold-server.js';
import { fixture, startServer, type TestServer } from './helpers/server.js';
import { FairQueue } from '../src/render/fair-queue.js';

describe('FairQueue', () => {
  test('clients take turns; each client is served in its own order; removed items never come out', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.integer({ min: 0, max: 4 }), fc.boolean()), { maxLength: 60 }), (ops) => {
        const q = new FairQueue<{ client: string; seq: number }>();
        const items = ops.map(([c], seq) => ({ client: `c${c}`, seq }));
        items.forEach((it) => q.push(it.client, it));
        // Take some out, as departed clients' renders are.
        const removed = new Set(items.filter((_, i) => ops[i][1]).map((it) => it.seq));
        for (const it of items) if (removed.has(it.seq)) assert.ok(q.remove(it.client, it));
        assert.equal(q.size, items.length - removed.size);
        const out: { client: string; seq: number }[] = [];
        for (let it = q.shift(); it; it = q.shift()) out.push(it);
        assert.equal(out.length, items.length - removed.size);
        assert.ok(out.every((it) => !removed.has(it.seq)));
        // Per client, arrival order.
        const last = new Map<string, number>();
        for (const it of out) {
          assert.ok((last.get(it.client) ?? -1) < it.seq);
          last.set(it.client, it.seq);
        }
        // Turns: while two clients both still have items, neither is served twice before the other once.
        const left = new Map<string, number>();
        for (const it of out) left.set(it.client, (left.get(it.client) ?? 0) + 1);
        for (let i = 0; i < out.length; i++) {
          left.set(out[i].client, left.get(out[i].client)! - 1);
          if (i + 1 === out.length || out[i + 1].client !== out[i].client) continue;
          // Two in a row only when no other client had anything left.
          const others = [...left].filter(([c, n]) => c !== out[i].client && n > 0);
          assert.equal(others.length, 0, `client ${out[i].client} served twice in a row while ${others.map(([c]) => c).join(',')} waited`);
        }
        return true;
      }),
    );
  });
});

/** A GET from a given local address (127.0.0.x are all this machine): how the service tells clients apart. */
function getFrom(localAddress: string, url: string): Promise<number> {
  return new Promise((resolve, reject) => {
    http
      .get(url, { localAddress, agent: false, timeout: 120_000 }, (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      })
      .on('error', reject);
  });
}

describe('render queue turns between clients', { timeout: 240_000 }, () => {
  let hold: HoldServer;
  let s: TestServer;
  before(async () => {
    hold = await startHoldServer(fixture('vector/omt-planet-z0-1.pmtiles'));
    const dir = mkdtempSync(path.join(os.tmpdir(), 'tsts-render-fair-'));
    const plain = path.join(dir, 'plain.json');
    writeFileSync(plain, JSON.stringify({ version: 8, name: 'plain', sources: {}, layers: [{ id: 'bg', type: 'background', paint: { 'background-color': '#336699' } }] }));
    const toml = `[[styles]]\nid = "plain"\npath = "${plain}"\n[cache]\ndir = "${path.join(dir, 'cache')}"\n[render]\npool_size = 1\nmax_queue = 64\nqueue_timeout_ms = 120000\nmemory_cache_mb = 0\n` + stallToml(hold.url);
    // One libuv thread: sharp encodes each static map after its frame, on libuv's pool, while the one renderer
    // already draws the next map. With the default four threads a quick next map could be encoded and answered
    // first (seen on a loaded machine in the Debian 13 runs: A5 before A4), so the order answers arrive in was
    // not the order the queue handed out. With one thread the encodes, and so the answers, keep the frames' order.
    s = await startServer({ toml, timeoutMs: 60_000, env: { UV_THREADPOOL_SIZE: '1' } });
    await waitFor('renderer', async () => ((await (await fetch(`${s.url}/ping`)).json()) as { renderer_enabled: boolean }).renderer_enabled || undefined, 90_000);
  });
  after(async () => {
    await s?.stop();
    await hold?.close();
  });

  const queued = async () => ((await (await fetch(`${s.url}/ping`)).json()) as { render_stats: { queued: number } }).render_stats.queued;

  test('a client asking once is served before a client that filled the queue has had all its turns', async () => {
    const finished: string[] = [];
    const ask = (who: string, from: string, url: string) =>
      getFrom(from, url).then((status) => {
        assert.equal(status, 200, `${who}: ${status}`);
        finished.push(who);
      });
    // Client A holds the only renderer with a render whose tiles are held back...
    hold.hold(true);
    const all = [ask('A0', '127.0.0.1', `${s.url}/styles/stall/static/0,0,1/64x64.png`)];
    await waitFor('the held render', async () => hold.held() > 0 || undefined, 60_000);
    // ...and queues five more, one at a time so that their order is known; then client B asks once.
    for (let i = 1; i <= 5; i++) {
      all.push(ask(`A${i}`, '127.0.0.1', `${s.url}/styles/plain/static/${i * 10},0,2/64x64.png`));
      await waitFor(`A${i} queued`, async () => ((await queued()) >= i) || undefined, 30_000);
    }
    all.push(ask('B0', '127.0.0.2', `${s.url}/styles/plain/static/-50,0,2/64x64.png`));
    await waitFor('B0 queued', async () => ((await queued()) >= 6) || undefined, 30_000);
    hold.hold(false);
    await Promise.all(all);
    // A's turn (A1), then B's (B0), then A's again: first come first served would have put B0 last.
    assert.deepEqual(finished, ['A0', 'A1', 'B0', 'A2', 'A3', 'A4', 'A5']);
  });
});
