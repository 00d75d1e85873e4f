// The bounds of rendering, through the real server: a render past render.timeout_ms fails with 503 and its
// browser is replaced; a full queue answers 503 with Retry-After; server.disable_render removes the routes and
// starts no browser; a renderer that cannot start makes the routes answer 503 saying why.
// A plain style (background only) keeps these servers cheap; a style whose tiles a local archive server holds
// back makes a render last exactly as long as a test needs.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { waitFor } from './helpers/foundation.js';
import { startHoldServer, stallToml, type HoldServer } from './helpers/hold-server.js';
import { browserPids, chromiumDescendants, decode, distance, pixel } from './helpers/render.js';
import { fixture, startServer, type TestServer } from './helpers/server.js';

const plainStyle = (color: string) => JSON.stringify({ version: 8, name: 'plain', sources: {}, layers: [{ id: 'bg', type: 'background', paint: { 'background-color': color } }] });

function plainConfig(render: string, server = ''): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'tsts-render-limits-'));
  const style = path.join(dir, 'plain.json');
  writeFileSync(style, plainStyle('#336699'));
  return `[server]\n${server}\n[[styles]]\nid = "plain"\npath = "${style}"\n[cache]\ndir = "${path.join(dir, 'cache')}"\n[render]\n${render}\n`;
}

/** plainConfig plus a source read from `holdUrl` and a style `stall` drawing its water. */
const stallConfig = (render: string, holdUrl: string): string => plainConfig(render) + stallToml(holdUrl);

const ping = async (s: TestServer) => (await (await fetch(`${s.url}/ping`)).json()) as { renderer_enabled: boolean; render_enabled: boolean; renderer: string | null };
const rendererReady = (s: TestServer) => waitFor('renderer', async () => (await ping(s)).renderer_enabled || undefined, 90_000);

async function get(s: TestServer, p: string): Promise<{ status: number; headers: Headers; text: string; body: Buffer }> {
  const res = await fetch(s.url + p);
  const body = Buffer.from(await res.arrayBuffer());
  return { status: res.status, headers: res.headers, text: body.toString(), body };
}

/** Rethrows a failure with the end of the server's output, where a crashed or stuck server says why. */
const withOutput = (s: TestServer) => (err: Error): never => {
  throw new Error(`${err.message} (${String((err.cause as Error | undefined)?.message)}); server output:\n${s.output().slice(-4000)}`);
};

describe('render time limit', () => {
  let s: TestServer;
  let hold: HoldServer;
  before(async () => {
    hold = await startHoldServer(fixture('vector/omt-planet-z0-1.pmtiles'));
    // 6 s: the stalled render below reaches it whatever the machine's speed (its tile is held back), and a fresh
    // browser's 64 px frame stays far inside it on a loaded machine (starting the browser and loading the style
    // do not count against it).
    s = await startServer({ toml: stallConfig('pool_size = 1\ntimeout_ms = 6000', hold.url), workers: 1 });
    await rendererReady(s);
  });
  after(async () => {
    await s?.stop();
    await hold?.close();
  });

  // A time limit that never fires would leave the held render waiting for ever: the test's own limit ends it.
  test('a render past timeout_ms answers 503 and its browser is replaced', { timeout: 90_000 }, async () => {
    const first = browserPids(s.proc.pid!);
    assert.equal(first.length, 1);
    hold.hold(true);
    const slow = await get(s, '/styles/stall/static/0,0,1/64x64.png');
    assert.ok(hold.held() > 0, 'the render was waiting for its tiles');
    assert.equal(slow.status, 503, slow.text.slice(0, 200));
    assert.equal(slow.headers.get('content-type'), 'application/problem+json');
    assert.equal(JSON.parse(slow.text).title, 'Render timed out');
    assert.ok(Number(slow.headers.get('retry-after')) >= 1);
    await waitFor('the timed-out browser to end', () => (browserPids(s.proc.pid!).includes(first[0]) ? undefined : true), 15_000).catch(withOutput(s));
    // A small frame renders on the new browser (starting it and loading the style do not count against the limit).
    // If this request fails the server's log says why (a crashed process shows there).
    const ok = await get(s, '/styles/plain/static/0,0,1/64x64.png').catch(withOutput(s));
    assert.equal(ok.status, 200, ok.text.slice(0, 200));
    assert.ok(distance(pixel(await decode(ok.body), 32, 32), [0x33, 0x66, 0x99]) <= 2);
    const now = browserPids(s.proc.pid!);
    assert.equal(now.length, 1);
    assert.notEqual(now[0], first[0]);
  });
});

describe('render queue bound', () => {
  let s: TestServer;
  let hold: HoldServer;
  before(async () => {
    hold = await startHoldServer(fixture('vector/omt-planet-z0-1.pmtiles'));
    s = await startServer({ toml: stallConfig('pool_size = 1\nmax_queue = 1\ntimeout_ms = 60000', hold.url), workers: 1 });
    await rendererReady(s);
  });
  after(async () => {
    await s?.stop();
    await hold?.close();
  });

  test('beyond max_queue waiting renders: 503 with Retry-After; the others render', { timeout: 120_000 }, async () => {
    // The one renderer is kept busy by a render whose tiles are held back, for as long as the test needs: the
    // five renders sent meanwhile overlap it for certain. One of them waits in the queue, four find it full.
    hold.hold(true);
    const busy = get(s, '/styles/stall/static/0,0,1/64x64.png');
    await waitFor('the first render to wait for its tiles', () => (hold.held() > 0 ? true : undefined), 30_000);
    const rest = Array.from({ length: 5 }, (_, i) => get(s, `/styles/plain/static/${i},0,3/256x256.png`));
    // The refused ones answer at once, while the renderer is still held.
    const settled: { status: number; text: string; headers: Headers }[] = [];
    for (const r of rest) void r.then((x) => settled.push(x));
    await waitFor('four refusals', () => (settled.filter((r) => r.status === 503).length >= 4 ? true : undefined), 30_000);
    assert.ok(hold.held() > 0, 'the first render is still held');
    for (const r of settled) {
      assert.equal(r.status, 503);
      assert.equal(JSON.parse(r.text).title, 'Render queue full');
      assert.ok(Number(r.headers.get('retry-after')) >= 1);
    }
    hold.hold(false);
    const results = [await busy, ...(await Promise.all(rest))];
    assert.deepEqual(results.map((r) => r.status).sort(), [200, 200, 503, 503, 503, 503], `statuses ${results.map((r) => r.status)}`);
    assert.equal(results[0].status, 200, 'the held render finishes once its tiles come');
  });
});

describe('server.disable_render', () => {
  let s: TestServer;
  before(async () => {
    s = await startServer({ toml: plainConfig('', 'disable_render = true'), workers: 1 });
  });
  after(() => s?.stop());

  test('static, social-card and raster style routes are 404; no renderer runs', async () => {
    for (const p of ['/styles/plain/static/0,0,1/64x64.png', '/og/plain?center=0,0', '/styles/plain/0/0/0.png', '/styles/plain/256/0/0/0.png']) {
      const r = await get(s, p);
      assert.equal(r.status, 404, p);
      assert.equal(r.headers.get('content-type'), 'application/problem+json');
    }
    const p = await ping(s);
    assert.equal(p.renderer_enabled, false);
    assert.equal(p.render_enabled, false);
    assert.equal(p.renderer, null);
    assert.deepEqual(chromiumDescendants(s.proc.pid!), []);
  });
});

describe('rendering enabled but no renderer can start', () => {
  let s: TestServer;
  before(async () => {
    s = await startServer({ toml: plainConfig('backend = "chromium"\nchromium_path = "/nonexistent/chromium"'), workers: 1 });
  });
  after(() => s?.stop());

  test('render routes answer 503 saying why; /ping shows renderer_enabled false', async () => {
    const r = await get(s, '/styles/plain/static/0,0,1/64x64.png');
    assert.equal(r.status, 503);
    const body = JSON.parse(r.text) as { title: string; detail: string };
    assert.equal(body.title, 'Rendering unavailable');
    assert.match(body.detail, /\/nonexistent\/chromium/);
    const t = await get(s, '/og/plain?center=0,0');
    assert.equal(t.status, 503);
    const p = await ping(s);
    assert.equal(p.renderer_enabled, false);
    assert.equal(p.render_enabled, true);
  });
});

describe('reload with a changed style', () => {
  let s: TestServer;
  before(async () => {
    s = await startServer({ toml: plainConfig('pool_size = 1'), workers: 1 });
    await rendererReady(s);
  });
  after(() => s?.stop());

  test('the renderer draws the new style (no stale image from any cache); the pool stays', async () => {
    const p = '/styles/plain/static/0,0,1/64x64.png';
    const before = await get(s, p);
    assert.ok(distance(pixel(await decode(before.body), 32, 32), [0x33, 0x66, 0x99]) <= 2);
    const browser = browserPids(s.proc.pid!);
    const configFile = s.configFile!;
    const stylePath = /path = "([^"]+plain\.json)"/.exec(readFileSync(configFile, 'utf8'))![1];
    writeFileSync(stylePath, plainStyle('#993366'));
    // A changed configuration file (a comment is enough) makes SIGHUP rebuild the state, styles included.
    writeFileSync(configFile, `${readFileSync(configFile, 'utf8')}\n# reloaded\n`);
    s.proc.kill('SIGHUP');
    const after = await waitFor(
      'the new style',
      async () => {
        const r = await get(s, p);
        return r.status === 200 && distance(pixel(await decode(r.body), 32, 32), [0x99, 0x33, 0x66]) <= 2 ? r : undefined;
      },
      30_000,
    );
    assert.notEqual(after.headers.get('etag'), before.headers.get('etag'));
    assert.deepEqual(browserPids(s.proc.pid!), browser, 'a style change reloads the style in the running browser');
  });
});

describe('renderer recycling', () => {
  let s: TestServer;
  before(async () => {
    s = await startServer({ toml: plainConfig('pool_size = 1\nmax_renders = 1'), workers: 1 });
    await rendererReady(s);
  });
  after(() => s?.stop());

  test('after max_renders renders the browser is replaced, and rendering goes on', async () => {
    const first = await get(s, '/styles/plain/static/0,0,1/32x32.png');
    assert.equal(first.status, 200);
    // The warm-up render counts too, so this render may already have replaced a browser that is still closing:
    // the snapshot is taken once one browser is left.
    const a = await waitFor('one browser after the first render', () => {
      const now = browserPids(s.proc.pid!);
      return now.length === 1 ? now : undefined;
    });
    const second = await get(s, '/styles/plain/static/1,0,1/32x32.png');
    assert.equal(second.status, 200);
    const b = await waitFor('the used browser to end', () => {
      const now = browserPids(s.proc.pid!);
      return now.some((p) => a.includes(p)) ? undefined : now;
    });
    assert.equal(a.length, 1);
    assert.equal(b.length, 1);
  });
});
