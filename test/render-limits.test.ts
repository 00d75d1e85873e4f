// The bounds of rendering, through the real server: a render past render.timeout_ms fails with 503 and its
// browser is replaced; a full queue answers 503 with Retry-After; server.disable_render removes the routes and
// starts no browser; a renderer that cannot start makes the routes answer 503 saying why.
// A plain style (background only) keeps these servers cheap; frame sizes make renders slow or fast.
import assert from 'node:assert/strict';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { waitFor } from './helpers/foundation.js';
import { browserPids, chromiumDescendants, decode, distance, pixel } from './helpers/render.js';
import { startServer, type TestServer } from './helpers/server.js';

const plainStyle = (color: string) => JSON.stringify({ version: 8, name: 'plain', sources: {}, layers: [{ id: 'bg', type: 'background', paint: { 'background-color': color } }] });

function plainConfig(render: string, server = ''): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'tsts-render-limits-'));
  const style = path.join(dir, 'plain.json');
  writeFileSync(style, plainStyle('#336699'));
  return `[server]\n${server}\n[[styles]]\nid = "plain"\npath = "${style}"\n[cache]\ndir = "${path.join(dir, 'cache')}"\n[render]\n${render}\n`;
}

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
  before(async () => {
    // 1.5 s: far below one 4096 px part of the slow frame, and enough for a 64 px frame on a fresh browser when the
    // hypervisor takes a share of this machine's CPU (300 ms was not, once).
    s = await startServer({ toml: plainConfig('pool_size = 1\ntimeout_ms = 1500\nmax_pixels = 150994944'), workers: 1 });
    await rendererReady(s);
  });
  after(() => s?.stop());

  test('a render past timeout_ms answers 503 and its browser is replaced', async () => {
    const first = browserPids(s.proc.pid!);
    assert.equal(first.length, 1);
    // 12288 x 12288 pixels: parts of about 4096 x 4096, each far more than 1.5 s of software GL, readback and transfer.
    const slow = await get(s, '/styles/plain/static/0,0,2/4096x4096@3x.png');
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
  before(async () => {
    s = await startServer({ toml: plainConfig('pool_size = 1\nmax_queue = 1'), workers: 1 });
    await rendererReady(s);
  });
  after(() => s?.stop());

  test('beyond max_queue waiting renders: 503 with Retry-After; the others render', async () => {
    // Six distinct large frames at once on one renderer: one runs, one waits, the rest find the queue full.
    const results = await Promise.all(Array.from({ length: 6 }, (_, i) => get(s, `/styles/plain/static/${i},0,3/2048x2048.png`)));
    const full = results.filter((r) => r.status === 503);
    const ok = results.filter((r) => r.status === 200);
    assert.ok(full.length >= 1, `statuses ${results.map((r) => r.status)}`);
    assert.ok(ok.length >= 2, `statuses ${results.map((r) => r.status)}`);
    assert.equal(full.length + ok.length, 6);
    for (const r of full) {
      assert.equal(JSON.parse(r.text).title, 'Render queue full');
      assert.ok(Number(r.headers.get('retry-after')) >= 1);
    }
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
    const a = browserPids(s.proc.pid!);
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
