// Rendered tiles after an expiry (src/render/expired-tiles.ts, service.ts): a style over a PostGIS table whose
// colour changes; POST /__admin/expire marks the tiles; the old pixels are answered at once, marked
// (`Cache-Status: ...; fwd=stale`, `Age`, a short max-age), until one background re-render stores the new ones.
// Each cache layer (memory, disk after a reload emptied memory, Redis with the disk gone too), the metatile's
// other tiles, 256 px and @2x variants, eager re-rendering with a dirty queue of one, and the render queue's
// classes (src/render/priority-queue.ts).
import assert from 'node:assert/strict';
import { rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import pg from 'pg';
import { tempDir, waitFor } from './helpers/foundation.js';
import { parseScrape } from './helpers/prom-text.js';
import { startPostgres, type PostgresCluster } from './helpers/postgres.js';
import { startRedis, type RedisServer } from './helpers/redis.js';
import { decode, pixel, distance, type Rgb } from './helpers/render.js';
import { fixture, freePort, startServer, type TestServer } from './helpers/server.js';
import { backgroundShare, PriorityQueue, type RenderPriority } from '../src/render/priority-queue.js';

const RED: Rgb = [255, 0, 0];
const BLUE: Rgb = [0, 0, 255];
const GREEN: Rgb = [0, 255, 0];
const YELLOW: Rgb = [255, 255, 0];

interface Tile {
  status: number;
  colour: Rgb;
  headers: Headers;
}

describe('expired rendered tiles', () => {
  let db: PostgresCluster;
  let redis: RedisServer;
  let server: TestServer;
  let cacheDir: string;
  let configFile: string;
  let adminUrl: string;
  let metricsUrl: string;
  let toml: (render: string) => string;

  before(async () => {
    [db, redis] = await Promise.all([startPostgres([]), startRedis()]);
    await db.sql(`CREATE TABLE areas (id int PRIMARY KEY, color text NOT NULL, geom geometry(Polygon, 4326) NOT NULL)`);
    await db.sql(`INSERT INTO areas VALUES (1, '#ff0000', ST_MakeEnvelope(-179, -84, 179, 84, 4326))`);
    const dir = tempDir('tsts-expire-render-');
    cacheDir = path.join(dir, 'cache');
    const style = {
      version: 8,
      name: 'areas',
      sources: { areas: { type: 'vector', url: 'source://areas' } },
      layers: [
        { id: 'bg', type: 'background', paint: { 'background-color': '#ffffff' } },
        { id: 'fill', type: 'fill', source: 'areas', 'source-layer': 'areas', paint: { 'fill-color': ['get', 'color'], 'fill-antialias': false } },
      ],
    };
    const styleFile = path.join(dir, 'style.json');
    writeFileSync(styleFile, JSON.stringify(style));
    const [adminPort, metricsPort] = [await freePort(), await freePort()];
    adminUrl = `http://127.0.0.1:${adminPort}`;
    metricsUrl = `http://127.0.0.1:${metricsPort}`;
    toml = (render: string) => `fonts = "${fixture('fonts')}"
[server]
admin_bind = "127.0.0.1:${adminPort}"
[telemetry]
scrape_bind = "127.0.0.1:${metricsPort}"
[[styles]]
id = "areas"
path = "${styleFile}"
[cache]
dir = "${cacheDir}"
shared = "${redis.url}"
# The source tiles' own cache is the caches part's (src/serve/tile-service.ts): out of the way here, so these
# tests see only the rendered tiles' layers.
enabled = false
[postgres]
connection_string = "${db.url}"
[[postgres.tables]]
id = "areas"
table = "areas"
id_column = "id"
[render]
${/^metatile\s*=/m.test(render) ? '' : 'metatile = 2'}
stale_max_age_seconds = 7
${render}
`;
    server = await startServer({ toml: toml(''), timeoutMs: 120_000 });
    configFile = server.configFile!;
  });

  after(async () => {
    await server?.stop();
    await redis?.stop();
    db?.destroy();
  });

  async function get(p: string): Promise<Tile> {
    const res = await fetch(server.url + p);
    const body = Buffer.from(await res.arrayBuffer());
    assert.equal(res.status, 200, `${p}: ${body.toString().slice(0, 300)}`);
    const img = await decode(body);
    return { status: res.status, colour: pixel(img, img.width / 2, img.height / 2), headers: res.headers };
  }

  async function setColour(c: string): Promise<void> {
    await db.sql(`UPDATE areas SET color = $1`, [c]);
  }

  async function expire(lines: string[]): Promise<void> {
    const res = await fetch(`${adminUrl}/__admin/expire?source=areas`, { method: 'POST', headers: { 'content-type': 'text/plain' }, body: lines.join('\n') + '\n' });
    assert.equal(res.status, 200, await res.text());
  }

  async function metrics() {
    return parseScrape(await (await fetch(`${metricsUrl}/metrics`)).text());
  }

  const near = (a: Rgb, b: Rgb) => distance(a, b) < 40;
  const isStale = (t: Tile) => /;\s*fwd=stale/.test(t.headers.get('cache-status') ?? '');

  /** The stale answer right after the expiry, then (polled) the fresh one. */
  async function staleThenFresh(p: string, before: Rgb, now: Rgb, layer: string): Promise<void> {
    const stale = await get(p);
    assert.ok(isStale(stale), `${p}: stale answer marked (${stale.headers.get('cache-status')})`);
    assert.ok(near(stale.colour, before), `${p}: the old pixels ${stale.colour}`);
    assert.equal(stale.headers.get('server-timing'), `cache;desc="${layer}"`);
    assert.equal(stale.headers.get('cache-status'), 'tileserver-ts; hit; fwd=stale');
    assert.match(stale.headers.get('age') ?? '', /^\d+$/);
    assert.equal(stale.headers.get('cache-control'), 'public, max-age=7');
    const fresh = await waitFor(`${p} fresh`, async () => {
      const t = await get(p);
      return isStale(t) ? undefined : t;
    }, 30_000);
    assert.ok(near(fresh.colour, now), `${p}: the new pixels ${fresh.colour}`);
    assert.equal(fresh.headers.get('cache-status'), null);
    assert.equal(fresh.headers.get('age'), null);
    assert.equal(fresh.headers.get('cache-control'), 'public, max-age=86400');
  }

  /** `paths` drawn red after the data turned red: the whole area expired first, so no older image is kept. */
  async function freshRed(paths: string[]): Promise<void> {
    await setColour('#ff0000');
    await expire(['0/0/0']);
    for (const p of paths) {
      await waitFor(`${p} red and fresh`, async () => {
        const t = await get(p);
        return !isStale(t) && near(t.colour, RED) ? t : undefined;
      }, 30_000);
    }
  }

  test('memory: old pixels at once, marked; then new ones; the metatile is drawn again whole; tiles elsewhere are untouched', async () => {
    await setColour('#ff0000');
    const first = await get('/styles/areas/2/1/1.png');
    assert.ok(near(first.colour, RED), `${first.colour}`);
    assert.equal(first.headers.get('cache-status'), null, 'a fresh tile keeps its headers');
    // Another tile of the same 2x2 metatile, and one of another metatile at the same zoom.
    assert.ok(near((await get('/styles/areas/2/0/1.png')).colour, RED));
    assert.ok(near((await get('/styles/areas/2/3/3.png')).colour, RED));
    const before = (await metrics()).value('render_stale_answers_total', { style: 'areas' }) ?? 0;
    await setColour('#0000ff');
    await expire(['2/1/1']);
    await staleThenFresh('/styles/areas/2/1/1.png', RED, BLUE, 'memory');
    // Not expired itself, but drawn again with its metatile: new pixels, fresh.
    const neighbour = await get('/styles/areas/2/0/1.png');
    assert.ok(near(neighbour.colour, BLUE), `${neighbour.colour}`);
    assert.equal(neighbour.headers.get('cache-status'), null);
    // Another metatile, not expired: still the old image, and not stale (no expiry touched its area).
    const elsewhere = await get('/styles/areas/2/3/3.png');
    assert.ok(near(elsewhere.colour, RED), `${elsewhere.colour}`);
    assert.equal(elsewhere.headers.get('cache-status'), null);
    const m = await metrics();
    assert.ok((m.value('render_stale_answers_total', { style: 'areas' }) ?? 0) > before);
    assert.ok((m.value('render_rerenders_total', { style: 'areas', result: 'done' }) ?? 0) >= 1);
    assert.ok((m.value('render_freshness_lag_seconds_count', { style: 'areas' }) ?? 0) >= 1);
  });

  test('256 px and @2x tiles of the expired area are stale too (a tile z/x/y covers tile z/x/y of the index)', async () => {
    const paths = ['/styles/areas/256/3/2/2.png', '/styles/areas/3/2/2@2x.png'];
    await freshRed(paths);
    await setColour('#00ff00');
    await expire(['3/2/2']);
    for (const p of paths) await staleThenFresh(p, RED, GREEN, 'memory');
  });

  test('disk: with memory emptied by a reload, the old file answers stale until the re-render replaces it', async () => {
    const p = '/styles/areas/4/5/6.png';
    await freshRed([p]);
    await setColour('#0000ff');
    await expire(['4/5/6']);
    // Another memory budget: a new memory cache, empty; the disk cache stays.
    writeFileSync(configFile, toml('memory_cache_mb = 63'));
    const res = await fetch(`${adminUrl}/__admin/reload`, { method: 'POST' });
    assert.equal(res.status, 200, await res.text());
    await staleThenFresh(p, RED, BLUE, 'disk');
  });

  test('the shared cache: with memory and disk gone, the fleet entry answers stale while this machine draws it again', async () => {
    const p = '/styles/areas/5/9/12.png';
    await freshRed([p]);
    await setColour('#ffff00');
    await expire(['5/9/12']);
    writeFileSync(configFile, toml('memory_cache_mb = 62'));
    assert.equal((await fetch(`${adminUrl}/__admin/reload`, { method: 'POST' })).status, 200);
    rmSync(path.join(cacheDir, 'render'), { recursive: true, force: true });
    await staleThenFresh(p, RED, YELLOW, 'shared');
  });

  test('eager: tiles held are drawn again right after their expiry; a dirty queue of one drops the rest (counted)', async () => {
    writeFileSync(configFile, toml('rerender_expired = "eager"\ndirty_queue_size = 1\nrerender_max_zoom = 12'));
    assert.equal((await fetch(`${adminUrl}/__admin/reload`, { method: 'POST' })).status, 200);
    const tiles = ['6/10/20', '6/40/20', '6/10/50'];
    await freshRed(tiles.map((t) => `/styles/areas/${t}.png`));
    const before = await metrics();
    const drops0 = before.value('render_dirty_queue_drops_total') ?? 0;
    const done0 = before.value('render_rerenders_total', { style: 'areas', result: 'done' }) ?? 0;
    await setColour('#0000ff');
    await expire(tiles);
    // One tile queued (and drawn without a request: the variant served last, 512 px), the others dropped (the
    // other two tiles, and every tile of the variants earlier tests asked for).
    await waitFor('the eager re-render', async () => ((await metrics()).value('render_rerenders_total', { style: 'areas', result: 'done' }) ?? 0) > done0 || undefined, 30_000);
    const after = await metrics();
    assert.ok((after.value('render_dirty_queue_drops_total') ?? 0) - drops0 >= 2);
    const first = await get(`/styles/areas/${tiles[0]}.png`);
    assert.ok(!isStale(first) && near(first.colour, BLUE), `drawn before it was asked for: ${first.colour} ${first.headers.get('cache-status')}`);
    // A dropped tile waits for its request: stale then.
    await staleThenFresh(`/styles/areas/${tiles[1]}.png`, RED, BLUE, 'memory');
    writeFileSync(configFile, toml(''));
    assert.equal((await fetch(`${adminUrl}/__admin/reload`, { method: 'POST' })).status, 200);
  });

  /** Reloads with these [render] lines (a new memory budget each time: the memory cache starts empty). */
  async function renderConfig(lines: string): Promise<void> {
    writeFileSync(configFile, toml(lines));
    const res = await fetch(`${adminUrl}/__admin/reload`, { method: 'POST' });
    assert.equal(res.status, 200, await res.text());
  }

  /**
   * Every render waits on PostgreSQL while this holds the table locked (a render's source tiles are read from it):
   * the load the stale threshold is measured by, for real. Resolves with the way to let them go.
   */
  async function holdRenders(): Promise<() => Promise<void>> {
    const holder = new pg.Client({ connectionString: db.url });
    await holder.connect();
    await holder.query('BEGIN');
    await holder.query('LOCK TABLE areas IN ACCESS EXCLUSIVE MODE');
    return async () => {
      await holder.query('COMMIT');
      await holder.end();
    };
  }

  const counter = (m: Awaited<ReturnType<typeof metrics>>, result: string) => m.value('render_rerenders_total', { style: 'areas', result }) ?? 0;
  const idle = () =>
    waitFor('the renderers idle', async () => {
      const m = await metrics();
      return (m.value('render_queue_depth') ?? 0) === 0 && (m.value('render_busy_renderers') ?? 0) === 0 ? true : undefined;
    }, 60_000);

  test('render.stale_threshold: with that many renders waiting, an expired tile is answered stale and no re-render starts; below it, one does', async () => {
    await renderConfig('stale_threshold = 2\nmemory_cache_mb = 61');
    const p = '/styles/areas/7/20/40.png';
    await freshRed([p]);
    await setColour('#0000ff');
    await expire(['7/20/40']);
    // Renders of tiles nobody has, each its own metatile, held on the locked table: the first ones take the
    // renderers, the others wait in the queue (the load the threshold counts: renders waiting for a renderer).
    const release = await holdRenders();
    let flood: Promise<Response[]> | undefined;
    try {
      flood = Promise.all(Array.from({ length: 8 }, (_, i) => fetch(`${server.url}/styles/areas/8/${4 * i}/200.png`)));
      await waitFor('renders waiting', async () => ((await metrics()).value('render_queue_depth') ?? 0) >= 2 || undefined, 30_000);
      const m0 = await metrics();
      const stale = await get(p);
      assert.ok(isStale(stale), `answered stale above the threshold: ${stale.headers.get('cache-status')}`);
      assert.ok(near(stale.colour, RED), `the old pixels ${stale.colour}`);
      const m1 = await metrics();
      assert.equal(counter(m1, 'skipped') - counter(m0, 'skipped'), 1, 'the re-render was skipped');
      assert.equal(m1.value('render_queue_depth'), m0.value('render_queue_depth'), 'no render was queued for it');
    } finally {
      await release();
      for (const r of (await flood) ?? []) assert.equal(r.status, 200);
    }
    await idle();
    const m2 = await metrics();
    // Nothing re-rendered it behind the answer: still the old image, stale; asked now, below the threshold, three
    // requests at once start one re-render.
    const done0 = counter(m2, 'done') + counter(m2, 'failed');
    const again = await Promise.all([get(p), get(p), get(p)]);
    for (const t of again) assert.ok(isStale(t) && near(t.colour, RED), `still the old image: ${t.colour} ${t.headers.get('cache-status')}`);
    await waitFor(`${p} fresh`, async () => {
      const t = await get(p);
      return !isStale(t) && near(t.colour, BLUE) ? t : undefined;
    }, 30_000);
    // A re-render is counted once its tiles are on disk too, after the fresh one is in memory.
    await waitFor('the re-render counted', async () => {
      const m = await metrics();
      return counter(m, 'done') + counter(m, 'failed') > done0 || undefined;
    }, 30_000);
    await idle();
    const m3 = await metrics();
    assert.equal(counter(m3, 'done') + counter(m3, 'failed') - done0, 1, 'one re-render below the threshold');
    assert.equal(counter(m3, 'skipped'), counter(m2, 'skipped'));
    await renderConfig('');
  });

  test('a person asking for a tile of a background re-render still queued moves it up: answered before the flood of re-renders drains', async () => {
    // Adaptive metatiles: a tile asked for joins the open batch of its block (4 x 4 tiles), here a re-render's.
    await renderConfig('metatile = "auto"\nmemory_cache_mb = 60');
    const N = 16;
    // Flood tiles in blocks of their own (x = 8i), each drawn with its east neighbour (a batch of two is drawn
    // exactly), so the tile south of the last one, in its block, was never drawn.
    const flood = Array.from({ length: N }, (_, i) => [8 * i, 100] as const);
    await setColour('#ff0000');
    await expire(['0/0/0']);
    for (const [x, y] of flood) await Promise.all([get(`/styles/areas/10/${x}/${y}.png`), get(`/styles/areas/10/${x + 1}/${y}.png`)]);
    const [lx, ly] = flood[N - 1];
    const joiner = `/styles/areas/10/${lx}/${ly + 1}.png`;
    await idle();
    await setColour('#0000ff');
    await expire(flood.map(([x, y]) => `10/${x}/${y}`));
    const release = await holdRenders();
    let answered: { at: number; tile: Tile } | undefined;
    let done0 = 0;
    try {
      done0 = counter(await metrics(), 'done');
      // Answered stale at once, each with a re-render queued in the background (the last one last).
      for (const [x, y] of flood) assert.ok(isStale(await get(`/styles/areas/10/${x}/${y}.png`)));
      await waitFor('re-renders waiting', async () => ((await metrics()).value('render_queue_depth') ?? 0) >= N / 2 || undefined, 30_000);
      const asked = get(joiner).then(async (tile) => (answered = { at: counter(await metrics(), 'done'), tile }));
      await new Promise((r) => setTimeout(r, 500));
      assert.equal(answered, undefined, 'it waits for a render');
      await release();
      await asked;
    } catch (err) {
      await release().catch(() => {});
      throw err;
    }
    const { tile, at } = answered!;
    assert.ok(near(tile.colour, BLUE), `${tile.colour}`);
    assert.doesNotMatch(tile.headers.get('server-timing') ?? '', /cache;desc=/, 'drawn for it, not found in a cache');
    // At the back of the flood, it would have waited for the other N - 1 re-renders.
    assert.ok(at - done0 < N / 2, `${at - done0} of ${N} re-renders were done before it was answered`);
    await idle();
    await renderConfig('');
  });

  test('a static map made before any expiry of the sources its style draws is drawn again, wherever the expiry was', async () => {
    const map = '/styles/areas/static/-45,40,2/64x64.png';
    await freshRed([map]);
    const red = await get(map);
    assert.ok(near(red.colour, RED), `${red.colour}`);
    assert.equal(red.headers.get('server-timing'), 'cache;desc="memory"', 'the second answer comes from the cache');
    await setColour('#0000ff');
    // Far from the map's area: a static map is no tile of the index, any expiry of its style's sources reaches it.
    // Its pixels are those of the source tiles the renderer holds, which that expiry did not reach: only the
    // drawing again is asserted here.
    await expire(['2/3/3']);
    const again = await get(map);
    assert.doesNotMatch(again.headers.get('server-timing') ?? '', /^cache;/, 'drawn again after an expiry elsewhere');
    // An expiry of the map's own area (tile 2/1/1): the renderer reloads those source tiles and draws the new data.
    await expire(['2/1/1']);
    const blue = await get(map);
    assert.ok(near(blue.colour, BLUE), `the static map still has the old pixels ${blue.colour}`);
    assert.equal(blue.headers.get('cache-status'), null);
  });

  test('background re-renders of an expired block are drawn in large frames; a person\'s missing tile there is drawn in a frame of its own', async () => {
    await renderConfig('metatile = "auto"\nrerender_expired = "eager"\nrerender_max_zoom = 12\nmemory_cache_mb = 61\nbulk_metatile = 8');
    // The 8x8 block x 8-15, y 16-23 at z6 (bulk_metatile = 8), all drawn for people but the last row's
    // east half (so no person's frame covered it).
    const block = Array.from({ length: 64 }, (_, i) => [8 + (i % 8), 16 + Math.floor(i / 8)] as const);
    const unseen = ([x, y]: readonly [number, number]) => x >= 12 && y === 23;
    const missing = '/styles/areas/6/15/23.png';
    await setColour('#ff0000');
    await expire(['0/0/0']);
    for (let q = 0; q < 4; q++) {
      // A person's view at a time: a 4x4 quarter of the block.
      const quarter = block.filter((t) => Math.floor((t[0] - 8) / 4) === q % 2 && Math.floor((t[1] - 16) / 4) === Math.floor(q / 2) && !unseen(t));
      await Promise.all(quarter.map(([x, y]) => get(`/styles/areas/6/${x}/${y}.png`)));
    }
    await idle();
    const frames = (m: Awaited<ReturnType<typeof metrics>>) => (m.value('render_bulk_frames_total', { style: 'areas', result: 'drawn' }) ?? 0) + (m.value('render_bulk_frames_total', { style: 'areas', result: 'smaller' }) ?? 0);
    const tiles = (m: Awaited<ReturnType<typeof metrics>>) => m.value('render_bulk_tiles_total', { style: 'areas' }) ?? 0;
    const m0 = await metrics();
    await setColour('#0000ff');
    await expire(block.map(([x, y]) => `6/${x}/${y}`));
    // Asked for while the re-renders gather: a person's tile is never drawn in (or waits for) their large frame.
    const person = await fetch(server.url + missing);
    assert.equal(person.status, 200);
    const timing = person.headers.get('server-timing') ?? '';
    const drawnWith = Number(/tiles;desc="(\d+)"/.exec(timing)?.[1]);
    assert.ok(drawnWith >= 1 && drawnWith <= 4, `the person's tile came from a person's frame (a lone tile's 2x2 metatile), not a bulk one: ${timing}`);
    await waitFor('the re-renders stored', async () => (tiles(await metrics()) - tiles(m0) >= 50 ? true : undefined), 120_000);
    await idle();
    const m1 = await metrics();
    const perFrame = (tiles(m1) - tiles(m0)) / Math.max(1, frames(m1) - frames(m0));
    // A person's frame is at most a 4x4 block: more tiles per frame than that is a bulk frame at work.
    assert.ok(perFrame > 16, `${tiles(m1) - tiles(m0)} tiles in ${frames(m1) - frames(m0)} bulk frames`);
    const redrawn = await get('/styles/areas/6/8/16.png');
    assert.ok(!isStale(redrawn) && near(redrawn.colour, BLUE), `${redrawn.colour}`);
    await renderConfig('');
  });

  test('an expiry loads no style in the renderers: they reload only the source tiles it reached', async () => {
    const loads = async () => (await metrics()).value('render_style_loads_total', { style: 'areas' }) ?? 0;
    // Static maps are drawn while the request waits. Distinct views until every renderer holds the style: four
    // draws in a row that loaded none.
    let quiet = 0;
    for (let i = 0; quiet < 4 && i < 40; i++) {
      const before = await loads();
      await get(`/styles/areas/static/${-170 + i * 7},-20,3/64x64.png`);
      quiet = (await loads()) === before ? quiet + 1 : 0;
    }
    assert.equal(quiet, 4, 'the renderers settled with the style loaded');
    // Usually 0: renderers load the first style when they start (a warm-up, not counted).
    const settled = await loads();
    const colours: [string, Rgb][] = [['#00ff00', GREEN], ['#ffff00', YELLOW], ['#ff0000', RED]];
    for (const [hex, rgb] of colours) {
      await setColour(hex);
      // z3 tile 1/4 holds the map's centre (-110, -20).
      await expire(['3/1/4']);
      const t = await get('/styles/areas/static/-110,-20,3/64x64.png');
      assert.ok(near(t.colour, rgb), `the map shows ${hex} after its expiry: ${t.colour}`);
    }
    assert.equal(await loads(), settled, 'no style was loaded again for the expiries');
  });
});

describe('the render queue classes', () => {
  /** The pool's rule, played out: a renderer freed goes to the queue's next render allowed to start. */
  function drain(q: PriorityQueue<string>, capacity: number, running: number): string[] {
    const order: string[] = [];
    for (let next = q.shift(running, capacity); next !== undefined; next = q.shift(running, capacity)) order.push(next);
    return order;
  }

  test('under a flood: interactive before expired before bulk, clients taking turns within a class', () => {
    const q = new PriorityQueue<string>();
    const push = (p: RenderPriority, client: string, n: number) => {
      for (let i = 0; i < n; i++) q.push(p, client, `${p}:${client}:${i}`);
    };
    push('bulk', 'seed', 3);
    push('expired', 'a', 2);
    push('expired', 'b', 1);
    push('interactive', 'a', 2);
    push('interactive', 'b', 1);
    // With one renderer free of four (three busy), only interactive renders may start.
    assert.deepEqual(drain(q, 4, 3), ['interactive:a:0', 'interactive:b:0', 'interactive:a:1']);
    // The rest, with renderers to spare: expired (turns per client), then bulk.
    assert.deepEqual(drain(q, 4, 0), ['expired:a:0', 'expired:b:0', 'expired:a:1', 'bulk:seed:0', 'bulk:seed:1', 'bulk:seed:2']);
  });

  test('background renders never take the last free renderer (one renderer: it is lent)', () => {
    const q = new PriorityQueue<string>();
    assert.equal(backgroundShare(4), 3);
    assert.equal(backgroundShare(1), 1);
    assert.equal(q.mayStart('expired', 2, 4), true);
    assert.equal(q.mayStart('expired', 3, 4), false);
    assert.equal(q.mayStart('bulk', 3, 4), false);
    assert.equal(q.mayStart('interactive', 3, 4), true);
    assert.equal(q.mayStart('bulk', 0, 1), true);
    q.push('bulk', 's', 'b');
    // A waiting bulk render is not given the last renderer; an interactive one arriving then takes it at once.
    assert.equal(q.shift(3, 4), undefined);
    assert.equal(q.mayStart('interactive', 3, 4), true);
    // An expired render arriving while bulk waits goes first.
    q.push('expired', 's', 'e');
    assert.equal(q.shift(0, 4), 'e');
    assert.equal(q.mayStart('bulk', 0, 4), false, 'bulk waits behind the bulk already queued');
  });

  test("a pool no one asks interactively (the seed's) lends background renders every renderer", () => {
    assert.equal(backgroundShare(4, false), 4);
    assert.equal(backgroundShare(2, false), 2);
    const q = new PriorityQueue<string>(false);
    assert.equal(q.mayStart('bulk', 1, 2), true, 'the second of two renderers goes to bulk work too');
    assert.equal(q.mayStart('bulk', 2, 2), false);
    q.push('bulk', 'seed', 'b0');
    q.push('bulk', 'seed', 'b1');
    assert.equal(q.shift(3, 4), 'b0', 'the last free renderer of four');
    assert.equal(q.shift(4, 4), undefined, 'none free');
    // The server's queue keeps that renderer back.
    const server = new PriorityQueue<string>();
    server.push('bulk', 'seed', 'b0');
    assert.equal(server.shift(3, 4), undefined);
  });
});
