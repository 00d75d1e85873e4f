// The bounds of a rendering host under load, through the real server: a render waits at most
// render.queue_timeout_ms for a renderer; renders whose clients hung up never run; render.max_pixels caps what a
// request may ask for; /ready turns 200 once the renderers are warm, and /ping says `renderer_state`.
// A plain style keeps these servers cheap; a style whose tiles a local archive server holds back keeps the one
// renderer busy for exactly as long as a test needs.
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { waitFor } from './helpers/foundation.js';
import { startHoldServer, stallToml, type HoldServer } from './helpers/hold-server.js';
import { decode, distance, pixel } from './helpers/render.js';
import { fixture, startServer, type TestServer } from './helpers/server.js';

function plainConfig(render: string, server = ''): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'tsts-render-bounds-'));
  const style = path.join(dir, 'plain.json');
  writeFileSync(style, JSON.stringify({ version: 8, name: 'plain', sources: {}, layers: [{ id: 'bg', type: 'background', paint: { 'background-color': '#336699' } }] }));
  return `[server]\n${server}\n[[styles]]\nid = "plain"\npath = "${style}"\n[cache]\ndir = "${path.join(dir, 'cache')}"\n[render]\n${render}\n`;
}

interface Stats {
  queued: number;
  busy: number;
  rendered: number;
  dropped: number;
  expired: number;
}
interface Ping {
  renderer_state: string;
  renderer_enabled: boolean;
  render_stats: Stats;
}
const ping = async (s: TestServer) => (await (await fetch(`${s.url}/ping`)).json()) as Ping;
const ready = (s: TestServer) => waitFor('ready', async () => ((await fetch(`${s.url}/ready`)).status === 200 ? true : undefined), 90_000);

async function get(s: TestServer, p: string, signal?: AbortSignal): Promise<{ status: number; headers: Headers; text: string; body: Buffer }> {
  const res = await fetch(s.url + p, { signal });
  const body = Buffer.from(await res.arrayBuffer());
  return { status: res.status, headers: res.headers, text: body.toString(), body };
}

/** A render of the `stall` style: it lasts until the hold server lets its tiles go, whatever the machine's speed. */
const HELD = '/styles/stall/static/0,0,1/64x64.png';
const small = (n: number) => `/styles/plain/static/${n},1,2/64x64.png`;

describe('render queue deadline', () => {
  let s: TestServer;
  let hold: HoldServer;
  before(async () => {
    hold = await startHoldServer(fixture('vector/omt-planet-z0-1.pmtiles'));
    s = await startServer({ toml: plainConfig('pool_size = 1\nqueue_timeout_ms = 200\nmax_queue = 100') + stallToml(hold.url), workers: 1 });
    await ready(s);
  });
  after(async () => {
    await s?.stop();
    await hold?.close();
  });

  test('a render that waits past queue_timeout_ms answers 503 with Retry-After and is never drawn', async () => {
    const before = (await ping(s)).render_stats;
    // The held render keeps the only renderer busy until released; these wait, and give up after 200 ms.
    hold.hold(true);
    const first = get(s, HELD);
    await waitFor('the held render to wait for its tiles', () => (hold.held() > 0 ? true : undefined), 30_000);
    const waiting = await Promise.all([2, 3, 4].map((n) => get(s, small(n))));
    for (const r of waiting) {
      assert.equal(r.status, 503, r.text);
      assert.equal(r.headers.get('content-type'), 'application/problem+json');
      assert.ok(Number(r.headers.get('retry-after')) >= 1);
      const body = JSON.parse(r.text) as { title: string; detail: string };
      assert.equal(body.title, 'Render queue wait expired');
      assert.match(body.detail, /render\.queue_timeout_ms/);
    }
    assert.ok(hold.held() > 0, 'the first render was still held');
    hold.hold(false);
    assert.equal((await first).status, 200);
    const after = (await ping(s)).render_stats;
    assert.equal(after.expired - before.expired, 3);
    // Only the held render was drawn.
    assert.equal(after.rendered - before.rendered, 1);
  });

});

describe('departed clients', () => {
  let s: TestServer;
  let hold: HoldServer;
  before(async () => {
    hold = await startHoldServer(fixture('vector/omt-planet-z0-1.pmtiles'));
    // A long queue deadline: the waiting renders leave because their clients do, not because time runs out.
    s = await startServer({ toml: plainConfig('pool_size = 1\nqueue_timeout_ms = 120000\nmax_queue = 100') + stallToml(hold.url), workers: 1, env: { LOG_LEVEL: 'debug', LOG_FORMAT: 'json' } });
    await ready(s);
  });
  after(async () => {
    await s?.stop();
    await hold?.close();
  });

  test('renders whose clients hung up leave the queue and never run; the next render is drawn at once', async () => {
    const before = (await ping(s)).render_stats;
    hold.hold(true);
    const first = get(s, HELD);
    await waitFor('the held render to wait for its tiles', () => (hold.held() > 0 ? true : undefined), 30_000);
    // Five clients queue distinct renders and hang up before any renderer is free.
    const hangUps = [11, 12, 13, 14, 15].map((n) => {
      const ac = new AbortController();
      const p = get(s, small(n), ac.signal).catch((err: Error) => err);
      return { ac, p };
    });
    await waitFor('five renders queued', async () => ((await ping(s)).render_stats.queued === 5 ? true : undefined), 10_000);
    for (const h of hangUps) h.ac.abort();
    for (const h of hangUps) assert.ok((await h.p) instanceof Error);
    await waitFor('the queue to empty', async () => ((await ping(s)).render_stats.queued === 0 ? true : undefined), 10_000);
    assert.ok(hold.held() > 0, 'the first render was still held');
    hold.hold(false);
    assert.equal((await first).status, 200);
    const next = await get(s, small(16));
    assert.equal(next.status, 200, next.text);
    assert.ok(distance(pixel(await decode(next.body), 32, 32), [0x33, 0x66, 0x99]) <= 2);
    const after = (await ping(s)).render_stats;
    assert.equal(after.dropped - before.dropped, 5, JSON.stringify(after));
    // Drawn: the held one and the one after; none of the five.
    assert.equal(after.rendered - before.rendered, 2, JSON.stringify(after));
    assert.equal(after.expired - before.expired, 0);
    assert.match(s.output(), /render dropped: the client went away/);
    // Each departed client is told at info once, by its access line, never as an error.
    const lines = s.output().split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as { level: number; msg: string; aborted?: boolean; stage?: string; status?: number | null });
    assert.equal(lines.filter((l) => l.msg === 'request' && l.aborted && l.stage === 'handling' && l.status === null).length, 5);
    assert.equal(lines.filter((l) => l.level >= 30 && /client went away/.test(l.msg)).length, 0, 'the drop itself is at debug');
    assert.equal(lines.filter((l) => l.level >= 50).length, 0, 'no error line');
  });
});

describe('pixel budget (render.max_pixels)', () => {
  let s: TestServer;
  before(async () => {
    s = await startServer({ toml: plainConfig('pool_size = 1\nmax_pixels = 262144'), workers: 1 });
    await ready(s);
  });
  after(() => s?.stop());

  test('an image beyond the budget is 400 naming the limit; one within it renders', async () => {
    const cases: [string, string][] = [
      ['/styles/plain/static/0,0,1/513x512.png', '513x512 is 262656 device pixels'],
      ['/styles/plain/static/0,0,1/256x256@3x.png', '256x256@3x is 589824 device pixels'],
      ['/og/plain?center=0,0&width=600&height=600', '600x600 is 360000 device pixels'],
      ['/styles/plain/0/0/0@2x.png', '512x512@2x is 1048576 device pixels'],
    ];
    for (const [p, detail] of cases) {
      const r = await get(s, p);
      assert.equal(r.status, 400, p);
      assert.equal(r.headers.get('content-type'), 'application/problem+json');
      const body = JSON.parse(r.text) as { detail: string };
      assert.ok(body.detail.includes(detail), `${p}: ${body.detail}`);
      assert.match(body.detail, /render\.max_pixels \(262144\)/);
    }
    const ok = await get(s, '/styles/plain/static/0,0,1/512x512.png');
    assert.equal(ok.status, 200, ok.text);
    const tile = await get(s, '/styles/plain/0/0/0.png');
    assert.equal(tile.status, 200, tile.text);
  });

  test('the default budget is 4096 x 4096 device pixels', async () => {
    const dflt = await startServer({ toml: plainConfig('pool_size = 1', 'disable_render = false'), workers: 1 });
    try {
      const r = await get(dflt, '/styles/plain/static/0,0,1/4096x4096@2x.png');
      assert.equal(r.status, 400);
      assert.match((JSON.parse(r.text) as { detail: string }).detail, /render\.max_pixels \(16777216\)/);
    } finally {
      await dflt.stop();
    }
  });
});

describe('readiness', () => {
  test('/ready is 503 naming the renderer while it starts, 200 once it is warm; /ping says renderer_state', async () => {
    const s = await startServer({ toml: plainConfig('pool_size = 1'), workers: 1 });
    try {
      const seen: string[] = [];
      await waitFor(
        'ready',
        async () => {
          const res = await fetch(`${s.url}/ready`);
          const body = (await res.json()) as { detail?: string; components: { name: string; state: string }[] };
          // The answer's own view of the renderer (a /ping fetched after it may already see the next state).
          const state = body.components.find((x) => x.name === 'renderer')?.state;
          seen.push(`${res.status}:${state}`);
          if (res.status === 503) {
            assert.equal(res.headers.get('content-type'), 'application/problem+json');
            assert.ok(Number(res.headers.get('retry-after')) >= 1);
            assert.match(body.detail!, /renderer is starting/);
            return undefined;
          }
          assert.equal(res.status, 200);
          assert.deepEqual(body.components, [{ name: 'renderer', state: 'ready' }]);
          return true;
        },
        90_000,
      );
      // Never 200 while the renderer was not ready.
      for (const x of seen) assert.ok(x === '200:ready' || x === '503:starting', seen.join(' '));
      assert.equal((await ping(s)).renderer_state, 'ready');
      assert.equal((await ping(s)).renderer_enabled, true);
    } finally {
      await s.stop();
    }
  });

  test('with two worker processes /ready is 200 only once both are warm', async () => {
    const s = await startServer({ toml: plainConfig('pool_size = 1'), workers: 2 });
    try {
      await ready(s);
      // Connections are spread over both processes: every one of them must have a warm renderer now.
      const states = new Set<string>();
      for (let i = 0; i < 16; i++) {
        const res = await fetch(`${s.url}/ping`, { headers: { connection: 'close' } });
        states.add(((await res.json()) as Ping).renderer_state);
      }
      assert.deepEqual([...states], ['ready']);
      assert.equal((await fetch(`${s.url}/ready`, { headers: { connection: 'close' } })).status, 200);
    } finally {
      await s.stop();
    }
  });

  test('with rendering disabled /ready is 200 at once and renderer_state is unavailable', async () => {
    const s = await startServer({ toml: plainConfig('', 'disable_render = true'), workers: 1 });
    try {
      const res = await fetch(`${s.url}/ready`);
      assert.equal(res.status, 200);
      assert.deepEqual(((await res.json()) as { components: unknown[] }).components, []);
      assert.equal((await ping(s)).renderer_state, 'unavailable');
    } finally {
      await s.stop();
    }
  });

  test('a renderer that cannot start keeps /ready at 503 saying so; /ping says unavailable', async () => {
    const s = await startServer({ toml: plainConfig('backend = "chromium"\nchromium_path = "/nonexistent/chromium"'), workers: 1 });
    try {
      const state = await waitFor('unavailable', async () => ((await ping(s)).renderer_state === 'unavailable' ? true : undefined), 30_000);
      assert.ok(state);
      const res = await fetch(`${s.url}/ready`);
      assert.equal(res.status, 503);
      assert.match(((await res.json()) as { detail: string }).detail, /renderer is unavailable/);
      const r = await get(s, '/styles/plain/static/0,0,1/64x64.png');
      assert.equal(r.status, 503);
      assert.equal((JSON.parse(r.text) as { title: string }).title, 'Rendering unavailable');
    } finally {
      await s.stop();
    }
  });
});
