// The render metrics on the pull listener during a burst of renders with one renderer: the queue depth and
// busy renderers while it runs, render_duration_seconds for every render drawn, render_errors_total for every
// render refused with 503, renderer recycling in render_renderer_restarts_total. A plain style (background
// only) keeps it cheap; large frames keep each render long enough to see the queue.
import assert from 'node:assert/strict';
import { mkdtempSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { waitFor } from './helpers/foundation.js';
import { parseScrape, type Scrape } from './helpers/prom-text.js';
import { freePort, startServer, type TestServer } from './helpers/server.js';

function plainConfig(scrapePort: number): string {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'tsts-metrics-render-'));
  const style = path.join(dir, 'plain.json');
  writeFileSync(style, JSON.stringify({ version: 8, name: 'plain', sources: {}, layers: [{ id: 'bg', type: 'background', paint: { 'background-color': '#336699' } }] }));
  return `[[styles]]\nid = "plain"\npath = "${style}"\n[cache]\ndir = "${path.join(dir, 'cache')}"\n[render]\npool_size = 1\nmax_queue = 3\nqueue_timeout_ms = 120000\nmax_renders = 2\n[telemetry]\nscrape_bind = "127.0.0.1:${scrapePort}"\n`;
}

describe('render metrics during a burst', () => {
  let s: TestServer;
  let metricsUrl: string;
  before(async () => {
    const port = await freePort();
    metricsUrl = `http://127.0.0.1:${port}/metrics`;
    s = await startServer({ toml: plainConfig(port), workers: 1 });
    await waitFor('renderer', async () => ((await (await fetch(`${s.url}/ping`)).json()) as { renderer_enabled: boolean }).renderer_enabled || undefined, 90_000);
  });
  after(() => s?.stop());

  const scrape = async (): Promise<Scrape> => parseScrape(await (await fetch(metricsUrl)).text());

  test('queue depth and busy renderers while it runs; durations, refusals and recycling after', async () => {
    const idle = await scrape();
    assert.equal(idle.value('render_queue_depth'), 0);
    assert.equal(idle.value('render_busy_renderers'), 0);

    // Eight distinct frames (identical ones would share one render) against one renderer and a queue of three.
    const burst = Array.from({ length: 8 }, async (_, i) => {
      const res = await fetch(`${s.url}/styles/plain/static/${i * 10},0,2/1024x1024@2x.png`);
      const text = await res.text();
      return res.status === 503 ? `503 ${JSON.parse(text).title}` : res.status;
    });
    const seen = await waitFor('a scrape showing the renderer busy with renders queued', async () => {
      const m = await scrape();
      return m.value('render_busy_renderers') === 1 && m.value('render_queue_depth')! >= 1 ? m : undefined;
    }, 60_000);
    assert.ok(seen.value('render_queue_depth')! <= 3, 'never more queued than max_queue');
    const statuses = await Promise.all(burst);
    const drawn = statuses.filter((st) => st === 200).length;
    const refused = statuses.filter((st) => String(st).startsWith('503')).length;
    assert.equal(drawn + refused, 8, `statuses: ${statuses.join(', ')}`);
    assert.ok(refused >= 1 && drawn >= 2, `statuses: ${statuses.join(', ')}`);
    for (const st of statuses) if (st !== 200) assert.equal(st, '503 Render queue full');

    const m = await waitFor('the recycled renderer counted', async () => {
      const sc = await scrape();
      return (sc.value('render_renderer_restarts_total', { reason: 'recycled' }) ?? 0) >= 1 ? sc : undefined;
    }, 60_000);
    assert.equal(m.value('render_queue_depth'), 0);
    assert.equal(m.value('render_busy_renderers'), 0);
    assert.equal(m.value('render_duration_seconds_count', { style: 'plain', format: 'png' }), drawn);
    // Refused because the queue was full (max_queue), each counted once under its reason.
    assert.deepEqual(m.find('render_errors_total').map((x) => [x.labels.reason, x.value]), [['overload', refused]], `statuses: ${statuses.join(', ')}`);
    assert.equal(m.types.get('render_queue_depth'), 'gauge');
    assert.equal(m.types.get('render_renderer_restarts_total'), 'counter');
    // The render routes are counted under their templates, not their URLs.
    const routes = m.find('http_requests_total').map((x) => x.labels.route);
    assert.ok(routes.every((r) => !r.includes('1536')), routes.join(', '));
    assert.equal(m.find('http_requests_total', { status_class: '5xx' }).reduce((n, x) => n + x.value, 0), refused);
  });
});
