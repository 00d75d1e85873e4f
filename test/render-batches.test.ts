// Adaptive metatiles (render.metatile = "auto", src/render/tile-batches.ts): the tiles of a block asked for by the
// time a renderer is free are drawn in one frame; a lone tile is drawn as its 2x2 metatile.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { PNG } from 'pngjs';
import fc from './helpers/fast-check.js';
import { waitFor } from './helpers/foundation.js';
import { startHoldServer, stallToml, type HoldServer } from './helpers/hold-server.js';
import { fixture, osmLibertyToml, startServer, type TestServer } from './helpers/server.js';
import { cells, TileBatches } from '../src/render/tile-batches.js';
import { batchEdge, planBlock, tileRect } from '../src/render/tile-render.js';

describe('tile batches: the frame of what was asked', () => {
  test('the frame is the smallest box holding every tile asked for (a lone tile: its 2x2 metatile), inside the block and the world', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 8 }),
        fc.array(fc.tuple(fc.integer({ min: 0, max: 3 }), fc.integer({ min: 0, max: 3 })), { minLength: 1, maxLength: 16 }),
        (z, asked) => {
          const t0 = { z, x: 0, y: 0, base: 512 as const, scale: 1 };
          const edge = batchEdge(t0, 32, 4096);
          const n = 2 ** z;
          const batches = new TileBatches();
          let batch;
          const tiles = asked.map(([x, y]) => ({ ...t0, x: x % Math.min(edge, n), y: y % Math.min(edge, n) }));
          for (const t of tiles) batch = batches.join('b', t, edge, (x, y) => `${x}/${y}`);
          const plan = batches.close(batch!, 32, 4096);
          const drawn = new Set(cells(plan).map(([x, y]) => `${x}/${y}`));
          for (const t of tiles) assert.ok(drawn.has(`${t.x}/${t.y}`), `tile ${t.x}/${t.y} not drawn`);
          // Within the block and the world.
          for (const [x, y] of cells(plan)) assert.ok(x < Math.min(edge, n) && y < Math.min(edge, n));
          // Smallest: every edge row and column of the box holds a tile that was asked for; a lone tile (asked for
          // once or more) is drawn with the rest of its 2x2 metatile.
          const unit = new Set(tiles.map((t) => `${t.x},${t.y}`)).size === 1 ? Math.min(2, edge) : 1;
          const units = new Set(tiles.map((t) => `${Math.floor(t.x / unit) * unit},${Math.floor(t.y / unit) * unit}`));
          const ux = [...units].map((u) => Number(u.split(',')[0]));
          const uy = [...units].map((u) => Number(u.split(',')[1]));
          assert.equal(plan.x0, Math.min(...ux));
          assert.equal(plan.y0, Math.min(...uy));
          assert.equal(plan.x0 + plan.cols! - 1, Math.min(n, Math.max(...ux) + unit) - 1);
          assert.equal(plan.y0 + plan.rows! - 1, Math.min(n, Math.max(...uy) + unit) - 1);
          // The frame's pixels: the tiles plus the buffer on each side; tile rects inside it.
          assert.equal(plan.frame.width, plan.cols! * 512 + 64);
          assert.equal(plan.frame.height, plan.rows! * 512 + 64);
          for (const [x, y] of cells(plan)) {
            const r = tileRect(plan, x, y);
            assert.ok(r.left >= 32 && r.top >= 32 && r.left + r.width <= plan.frame.width - 32 && r.top + r.height <= plan.frame.height - 32);
          }
          // Once decided, the batch takes no more tiles: the next join opens a new one.
          assert.notEqual(batches.join('b', t0, edge, (x, y) => `${x}/${y}`), batch);
          return true;
        },
      ),
    );
  });

  test("a lone tile waited for only by re-renders of expired tiles is drawn alone (its neighbours are fresh); a person's, as its 2x2 metatile", () => {
    const t = { z: 10, x: 5, y: 6, base: 512 as const, scale: 1 };
    const edge = batchEdge(t, 32, 4096);
    for (const [background, n] of [
      [true, 1],
      [false, 4],
    ] as const) {
      const batches = new TileBatches();
      const batch = batches.join('b', t, edge, (x, y) => `${x}/${y}`);
      assert.deepEqual(cells(batches.close(batch, 32, 4096, background)).length, n, `background ${background}`);
    }
  });

  test('blocks are 4x4 at @1x, 2x2 at @2x and @3x (their frame fits 4096 px), 1x1 at z0', () => {
    const t = (z: number, scale: number, base: 256 | 512 = 512) => ({ z, x: 0, y: 0, base, scale });
    assert.equal(batchEdge(t(14, 1), 32, 4096), 4);
    assert.equal(batchEdge(t(14, 2), 32, 4096), 2);
    assert.equal(batchEdge(t(14, 3), 32, 4096), 2);
    assert.equal(batchEdge(t(14, 1, 256), 32, 4096), 4);
    assert.equal(batchEdge(t(0, 1), 32, 4096), 1);
    assert.equal(batchEdge(t(1, 1), 32, 4096), 2);
    const p = planBlock(t(14, 2), 0, 0, 2, 2, 32, 4096);
    assert.deepEqual([p.frame.width, p.frame.height, p.frame.ratio, p.offset, p.tilePixels], [1088, 1088, 2, 64, 1024]);
  });
});

interface Answer {
  status: number;
  timing: string;
  width: number;
}

async function tile(s: TestServer, path: string): Promise<Answer> {
  const res = await fetch(`${s.url}/styles/osm-liberty/${path}`);
  const body = Buffer.from(await res.arrayBuffer());
  return { status: res.status, timing: res.headers.get('server-timing') ?? '', width: res.status === 200 ? PNG.sync.read(body).width : 0 };
}

describe('adaptive metatiles through the real server', { timeout: 240_000 }, () => {
  let hold: HoldServer;
  let s: TestServer;
  before(async () => {
    hold = await startHoldServer(fixture('vector/omt-planet-z0-1.pmtiles'));
    s = await startServer({ toml: osmLibertyToml('[render]\npool_size = 1\nmemory_cache_mb = 64\nqueue_timeout_ms = 120000\n') + stallToml(hold.url), timeoutMs: 60_000 });
    await waitFor('renderer', async () => ((await (await fetch(`${s.url}/ping`)).json()) as { renderer_enabled: boolean }).renderer_enabled || undefined, 90_000);
  });
  after(async () => {
    await s?.stop();
    await hold?.close();
  });
  const rendered = async () => ((await (await fetch(`${s.url}/ping`)).json()) as { render_stats: { rendered: number; queued: number } }).render_stats;

  test('a lone tile is drawn as its 2x2 metatile; its neighbour comes from the cache', async () => {
    const before = (await rendered()).rendered;
    const a = await tile(s, '6/40/24.png');
    assert.equal(a.status, 200);
    assert.equal(a.width, 512);
    assert.match(a.timing, /tiles;desc="4"/);
    const b = await tile(s, '6/41/25.png');
    assert.match(b.timing, /cache;desc="memory"/);
    assert.equal((await rendered()).rendered, before + 1);
  });

  test('the 16 tiles of a block asked for while the renderer is busy are drawn in one frame', async () => {
    // The only renderer draws a map whose tiles are held back; meanwhile a whole block of tiles is asked for.
    hold.hold(true);
    const stall = fetch(`${s.url}/styles/stall/static/0,0,1/64x64.png`).then((r) => r.status);
    await waitFor('the held render', async () => hold.held() > 0 || undefined, 60_000);
    const start = (await rendered()).rendered;
    const block = Array.from({ length: 16 }, (_, i) => `6/${32 + (i % 4)}/${20 + Math.floor(i / 4)}.png`);
    const answers = Promise.all(block.map((p) => tile(s, p)));
    // One batch waits for the renderer with every tile of the block in it.
    await waitFor('the batch queued', async () => ((await rendered()).queued >= 1 ? true : undefined), 30_000);
    await new Promise((r) => setTimeout(r, 300));
    hold.hold(false);
    assert.equal(await stall, 200);
    for (const a of await answers) {
      assert.equal(a.status, 200);
      assert.equal(a.width, 512);
      assert.match(a.timing, /tiles;desc="16"/, a.timing);
    }
    // The held static map and one frame for the whole block (with metatile = 2 it would be four).
    assert.equal((await rendered()).rendered, start + 2);
  });
});
