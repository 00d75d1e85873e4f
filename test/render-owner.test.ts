// Render ownership across worker processes (src/render/peers.ts): every tile of a 4x4 block is drawn by one process,
// whichever process the client's connection reached; with render.owner_routing off each process draws for itself;
// an owner that is gone costs a local render, never an error.
import assert from 'node:assert/strict';
import http from 'node:http';
import { after, describe, it } from 'node:test';
import { readFileSync } from 'node:fs';
import { ownerSlot } from '../src/render/peers.js';
import { childrenOf } from './helpers/processes.js';
import { waitFor } from './helpers/foundation.js';
import { osmLibertyToml, startServer, type TestServer } from './helpers/server.js';

interface Answer {
  status: number;
  type: string | undefined;
  timing: string;
  body: Buffer;
}

/** One GET on a connection of its own: the cluster hands each new connection to the next worker process. */
function fresh(url: string): Promise<Answer> {
  return new Promise((resolve, reject) => {
    http
      .get(url, { agent: false, timeout: 60_000 }, (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => resolve({ status: res.statusCode ?? 0, type: res.headers['content-type'], timing: String(res.headers['server-timing'] ?? ''), body: Buffer.concat(chunks) }));
      })
      // A request that hangs fails the test instead of holding the suite.
      .on('timeout', function (this: http.ClientRequest) {
        this.destroy(new Error(`GET ${url}: no answer within 60 s`));
      })
      .on('error', reject);
  });
}

interface Stats {
  owner_slot: number | null;
  rendered: number;
  forwarded: number;
  owner_fallbacks: number;
}

/** render_stats of every worker process, by slot (asked on fresh connections until each slot has answered). */
async function statsBySlot(s: TestServer, slots: number): Promise<Map<number, Stats>> {
  const out = new Map<number, Stats>();
  for (let i = 0; i < 60 && out.size < slots; i++) {
    const ping = JSON.parse((await fresh(`${s.url}/ping`)).body.toString()) as { render_stats: Stats };
    if (ping.render_stats.owner_slot !== null) out.set(ping.render_stats.owner_slot, ping.render_stats);
  }
  assert.equal(out.size, slots, 'every worker process answered /ping with its slot');
  return out;
}

async function ready(s: TestServer): Promise<void> {
  // /ready is per process: several fresh connections in a row must all say so.
  for (let ok = 0, i = 0; ok < 6; i++) {
    assert.ok(i < 400, `the renderers did not warm up:\n${s.output()}`);
    ok = (await fresh(`${s.url}/ready`)).status === 200 ? ok + 1 : 0;
    if (ok === 0) await new Promise((r) => setTimeout(r, 250));
  }
}

/** The 16 tiles of the 4x4 block at z6 whose north-west tile is (32, 20), row by row. */
const BLOCK = Array.from({ length: 16 }, (_, i) => ({ z: 6, x: 32 + (i % 4), y: 20 + Math.floor(i / 4) }));

async function fetchBlock(s: TestServer): Promise<Answer[]> {
  const out: Answer[] = [];
  for (const t of BLOCK) out.push(await fresh(`${s.url}/styles/osm-liberty/${t.z}/${t.x}/${t.y}.png`));
  return out;
}

/** Every server this file starts, stopped at the end even when a test timed out (a live server would hold the suite). */
const started: TestServer[] = [];
async function start(render: string): Promise<TestServer> {
  const s = await startServer({ toml: osmLibertyToml(`[render]\n${render}`), workers: 2, timeoutMs: 60_000 });
  started.push(s);
  return s;
}
after(async () => {
  await Promise.all(started.map((s) => s.stop()));
});

/** The block as the first test got it (half of it forwarded from the owner), for the second test to compare. */
let routed: Answer[] | undefined;

describe('render ownership across worker processes', { timeout: 300_000 }, () => {
  it('every tile of a block is drawn by its owner process, whichever process the client reached', async () => {
    // No caches: every answer is drawn, so where each was drawn shows (the cluster's connections alternate).
    const s = await start('metatile = 2\nmemory_cache_mb = 0\ndisk_cache_mb = 0\n');
    try {
      await ready(s);
      const answers = await fetchBlock(s);
      routed = answers;
      for (const a of answers) {
        assert.equal(a.status, 200, a.body.toString());
        assert.equal(a.type, 'image/png');
      }
      // Connections alternate between the two processes: the non-owner's answers came from the owner.
      const viaPeer = answers.filter((a) => a.timing.includes('peer;desc="owner"')).length;
      assert.ok(viaPeer >= 4, `answers forwarded to the owner: ${viaPeer} of 16`);
      const owner = ownerSlot(6, 32, 20, 2);
      const stats = await statsBySlot(s, 2);
      // Every frame drawn by the owner (16 requests, no cache), none by the other process, which forwarded its share.
      assert.equal(stats.get(owner)!.rendered, 16, JSON.stringify([...stats]));
      assert.equal(stats.get(1 - owner)!.rendered, 0, JSON.stringify([...stats]));
      assert.equal(stats.get(1 - owner)!.forwarded, viaPeer, JSON.stringify([...stats]));
      assert.equal(stats.get(owner)!.forwarded, 0);
    } finally {
      await s.stop();
    }
  });

  it('with render.owner_routing = false each process draws what it is asked for', async () => {
    const s = await start('metatile = 2\nmemory_cache_mb = 0\ndisk_cache_mb = 0\nowner_routing = false\n');
    try {
      await ready(s);
      const answers = await fetchBlock(s);
      for (const a of answers) assert.equal(a.status, 200);
      assert.equal(answers.filter((a) => a.timing.includes('peer;')).length, 0);
      const stats = await statsBySlot(s, 2);
      assert.equal([...stats.values()].reduce((n, st) => n + st.forwarded, 0), 0);
      // Each process drew the answers of the connections it took.
      assert.equal([...stats.values()].reduce((n, st) => n + st.rendered, 0), 16);
      for (const st of stats.values()) assert.ok(st.rendered >= 4, JSON.stringify([...stats]));
      // What a forwarded answer carries is the tile itself: byte for byte what a process drawing it alone encodes.
      assert.ok(routed, 'the first test ran');
      const forwarded = routed.map((a, i) => ({ a, i })).filter(({ a }) => a.timing.includes('peer;desc="owner"'));
      assert.ok(forwarded.length >= 4);
      for (const { a, i } of forwarded) assert.ok(a.body.equals(answers[i].body), `tile ${JSON.stringify(BLOCK[i])}: forwarded ${a.body.length} bytes, drawn locally ${answers[i].body.length}`);
      for (const [i, a] of routed.entries()) assert.ok(a.body.equals(answers[i].body), `tile ${JSON.stringify(BLOCK[i])} differs between the owner's render and a local one`);
    } finally {
      await s.stop();
    }
  });

  it('an owner that is gone costs a local render, not an error, and its replacement takes the slot back', async () => {
    const s = await start('metatile = 2\nmemory_cache_mb = 0\n');
    try {
      await ready(s);
      const owner = ownerSlot(6, 32, 20, 2);
      // The owner is the worker whose environment names its slot (the primary gives each worker one).
      let killed = false;
      for (const pid of childrenOf(s.proc.pid!)) {
        const env = readFileSync(`/proc/${pid}/environ`, 'utf8');
        if (env.includes(`"slot":${owner},`)) {
          process.kill(pid, 'SIGKILL');
          killed = true;
        }
      }
      assert.ok(killed, 'the owner process was found and killed');
      // Until the primary has seen the exit it may still hand a new connection to the dead worker (the cluster's own
      // hand-off, not this feature): ask once it has.
      await waitFor('the primary to see the exit', async () => /worker exited; starting a replacement/.test(s.output()) || undefined, 30_000);
      // Until the replacement listens the surviving process draws the block itself; after, the replacement does.
      const answers = await fetchBlock(s);
      for (const a of answers) assert.equal(a.status, 200, a.body.toString());
      await ready(s);
      const stats = await statsBySlot(s, 2);
      assert.ok(stats.has(owner), 'the replacement holds the dead owner’s slot');
    } finally {
      await s.stop();
    }
  });
});
