// Chaos on the rendering host, through the real server: during a burst of renders one process of the browser is
// killed — the browser itself, a page (renderer) process, the GPU process where SwiftShader draws — one at a time.
// Renders in flight may fail once each (503 "Renderer restarted"), or be retried to success; none answers 500 or
// an image that is not the map; every render after recovery succeeds; the log names each event.
import assert from 'node:assert/strict';
import { chmodSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { waitFor } from './helpers/foundation.js';
import { browserPids, buildOmtArchive, chromiumProcesses, type ChildProc, decode, distance, pixel, renderTempDir, renderToml, share, WATER } from './helpers/render.js';
import { startServer, type TestServer } from './helpers/server.js';

const KINDS = {
  browser: (p: ChildProc) => p.args.includes('--tileserver-ts-renderer=') && !p.args.includes('--type='),
  page: (p: ChildProc) => p.args.includes('--type=renderer'),
  gpu: (p: ChildProc) => p.args.includes('--type=gpu-process'),
};

interface Outcome {
  status: number;
  title?: string;
  water?: number;
}

let seq = 0;
/** One distinct world map (never cached before): its status, and how much of it is water. */
async function renderOne(s: TestServer): Promise<Outcome> {
  const n = ++seq;
  const lon = ((n * 37) % 300) - 150;
  const res = await fetch(`${s.url}/styles/osm-liberty/static/${lon}.${n},0,0.5/256x256.png`);
  const body = Buffer.from(await res.arrayBuffer());
  if (res.status !== 200) return { status: res.status, title: (JSON.parse(body.toString()) as { title: string }).title };
  const img = await decode(body);
  return { status: 200, water: share(img, (c) => distance(c, WATER) <= 12) };
}

describe('renderer chaos: kill a browser, a page process, a GPU process during a burst', () => {
  let s: TestServer;
  before(async () => {
    const dir = renderTempDir();
    const archive = await buildOmtArchive(dir);
    // One browser with two pages: a kill hits every render in flight.
    s = await startServer({ toml: renderToml(archive, `${dir}/cache`, 'pool_size = 2\npages_per_browser = 2\nmax_queue = 1000\nqueue_timeout_ms = 120000'), workers: 1 });
    await waitFor('ready', async () => ((await fetch(`${s.url}/ready`)).status === 200 ? true : undefined), 120_000);
  });
  after(() => s?.stop());

  for (const kind of ['browser', 'page', 'gpu'] as const) {
    test(`kill the ${kind} process: in-flight renders fail at most once, every later render succeeds`, async () => {
      const target = chromiumProcesses(s.proc.pid!).filter(KINDS[kind]);
      assert.ok(target.length >= 1, `no ${kind} process found: ${JSON.stringify(chromiumProcesses(s.proc.pid!))}`);
      const logBefore = s.output().length;
      // A burst: 4 clients, each rendering distinct maps one after another, for 24 renders; the kill comes once
      // 6 have finished, so renders are in flight on both pages.
      const outcomes: Outcome[] = [];
      let killed = false;
      const client = async () => {
        while (outcomes.length < 24) {
          outcomes.push(await renderOne(s));
          if (!killed && outcomes.length >= 6) {
            killed = true;
            for (const p of target) {
              try {
                process.kill(p.pid, 'SIGKILL');
              } catch {
                /* already gone */
              }
            }
          }
        }
      };
      await Promise.all([client(), client(), client(), client()]);
      assert.ok(killed);
      // In flight: a map (with water) or "Renderer restarted" (failed once, retried once, still failed).
      for (const o of outcomes) {
        if (o.status === 200) assert.ok(o.water! > 0.2, `a 200 that is not the map: ${JSON.stringify(outcomes)}\n${s.output().slice(logBefore).slice(-3000)}`);
        else assert.deepEqual([o.status, o.title], [503, 'Renderer restarted'], JSON.stringify(outcomes));
      }
      const failedOnce = outcomes.filter((o) => o.status !== 200).length;
      assert.ok(failedOnce <= 4, `${failedOnce} renders failed; at most the ones in flight may: ${JSON.stringify(outcomes)}`);
      // After recovery every render succeeds, and is the map.
      for (let i = 0; i < 8; i++) {
        const o = await renderOne(s);
        assert.equal(o.status, 200, `after the ${kind} kill: ${JSON.stringify(o)}\n${s.output().slice(logBefore).slice(-3000)}`);
        assert.ok(o.water! > 0.2, JSON.stringify(o));
      }
      // The log names the event.
      const log = s.output().slice(logBefore);
      const expected = kind === 'browser' ? /renderer failed and is being replaced/ : /renderer page failed and was replaced|renderer failed and is being replaced/;
      assert.match(log, expected, log.slice(-3000));
      const ping = (await (await fetch(`${s.url}/ping`)).json()) as { renderer_state: string };
      assert.equal(ping.renderer_state, 'ready');
    });
  }
});

describe('renderer crash loop: a browser that cannot start again', () => {
  let s: TestServer;
  let flag: string;
  before(async () => {
    // A Chromium that starts only while a flag file exists: remove it, and every new browser fails at once.
    const dir = mkdtempSync(path.join(os.tmpdir(), 'tsts-crash-loop-'));
    flag = path.join(dir, 'may-start');
    writeFileSync(flag, '');
    const wrapper = path.join(dir, 'chromium');
    writeFileSync(wrapper, `#!/bin/sh\n[ -e '${flag}' ] || exit 1\nexec /usr/lib/chromium/chromium "$@"\n`);
    chmodSync(wrapper, 0o755);
    const style = path.join(dir, 'plain.json');
    writeFileSync(style, JSON.stringify({ version: 8, name: 'plain', sources: {}, layers: [{ id: 'bg', type: 'background', paint: { 'background-color': '#336699' } }] }));
    const toml = `[[styles]]\nid = "plain"\npath = "${style}"\n[cache]\ndir = "${dir}/cache"\n[render]\nbackend = "chromium"\nchromium_path = "${wrapper}"\npool_size = 1\n`;
    s = await startServer({ toml, workers: 1 });
    await waitFor('ready', async () => ((await fetch(`${s.url}/ready`)).status === 200 ? true : undefined), 90_000);
  });
  after(() => s?.stop());

  test('failed starts back off (1 s, 2 s, …), are logged, make /ready 503; the renderer heals when it can start', async () => {
    const get = async (n: number) => {
      const res = await fetch(`${s.url}/styles/plain/static/${n},0,1/64x64.png`);
      return { status: res.status, body: Buffer.from(await res.arrayBuffer()) };
    };
    assert.equal((await get(1)).status, 200);
    rmSync(flag);
    for (const pid of browserPids(s.proc.pid!)) process.kill(pid, 'SIGKILL');
    // Each render now meets a start that fails: 503 saying rendering is unavailable, never a hang.
    for (const n of [2, 3]) {
      const r = await get(n);
      assert.equal(r.status, 503, r.body.toString());
      assert.equal((JSON.parse(r.body.toString()) as { title: string }).title, 'Rendering unavailable');
    }
    const ready = await fetch(`${s.url}/ready`);
    assert.equal(ready.status, 503);
    assert.match(((await ready.json()) as { detail: string }).detail, /renderer is unavailable/);
    const ping = (await (await fetch(`${s.url}/ping`)).json()) as { renderer_state: string; render_stats: { start_failures: number } };
    assert.equal(ping.renderer_state, 'unavailable');
    assert.ok(ping.render_stats.start_failures >= 2);
    // The log says so, with a growing back-off.
    const log = s.output();
    assert.match(log, /"failures":1,"backoff_ms":1000,"msg":"renderer did not start; backing off before the next try"/);
    assert.match(log, /"failures":2,"backoff_ms":2000,"msg":"renderer did not start; backing off before the next try"/);
    // Allowed to start again: the next render waits out the back-off and succeeds; /ready follows.
    writeFileSync(flag, '');
    const healed = await waitFor('a render after the crash loop', async () => {
      const r = await get(4);
      return r.status === 200 ? r : undefined;
    }, 60_000);
    const img = await decode(healed.body);
    assert.ok(distance(pixel(img, 32, 32), [0x33, 0x66, 0x99]) <= 2);
    assert.equal((await fetch(`${s.url}/ready`)).status, 200);
  });
});
