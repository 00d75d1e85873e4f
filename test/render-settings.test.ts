// The [render] settings a user tunes, each checked by what it changes for a client, on two servers with opposite
// values (one Chromium pool each): metatile (tiles cut from one frame: Server-Timing `tiles`, renders counted in
// /ping and on the metrics listener, neighbours served from the cache), tile_buffer (with it 0, a @2x 4x4
// metatile fits the 4096 px frame limit), pages_per_browser (browser processes), png_compression,
// jpeg_quality and webp_quality (bytes against the same pixels encoded here at the configured level),
// memory_cache_mb and disk_cache_mb (which cache answered, files in the cache dir, eviction to the budget, 0),
// flat_extrusions = false (the walls of the Paris buildings), and frames wider than 4096 px drawn in parts
// whose seam matches a frame drawn whole.
import assert from 'node:assert/strict';
import { readdirSync, statSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import sharp from 'sharp';
import { waitFor } from './helpers/foundation.js';
import { parseScrape } from './helpers/prom-text.js';
import { browserPids, buildOmtArchive, decode, distance, PARIS, pixel, renderTempDir, renderToml, type Decoded } from './helpers/render.js';
import { freePort, startServer, type TestServer } from './helpers/server.js';

interface Got {
  status: number;
  headers: Headers;
  body: Buffer;
}

async function get(s: TestServer, p: string): Promise<Got> {
  const res = await fetch(s.url + p);
  const body = Buffer.from(await res.arrayBuffer());
  assert.equal(res.status, 200, `${p}: ${body.toString().slice(0, 300)}`);
  return { status: res.status, headers: res.headers, body };
}

/** What Server-Timing says: `tiles`/`parts` of a render, or which cache answered. */
function timing(g: Got): { tiles?: number; parts?: number; cache?: string } {
  const h = g.headers.get('server-timing') ?? '';
  const desc = (name: string) => new RegExp(`(?:^|, )${name};desc="([^"]*)"`).exec(h)?.[1];
  const tiles = desc('tiles');
  const parts = desc('parts');
  return { tiles: tiles === undefined ? undefined : Number(tiles), parts: parts === undefined ? undefined : Number(parts), cache: desc('cache') };
}

const rendered = async (s: TestServer) => ((await (await fetch(`${s.url}/ping`)).json()) as { render_stats: { rendered: number } }).render_stats.rendered;

/** Share of pixels of two same-sized images within `tolerance` of each other. */
function sameShare(a: Decoded, b: Decoded, tolerance = 12): number {
  assert.deepEqual([a.width, a.height], [b.width, b.height]);
  let same = 0;
  for (let y = 0; y < a.height; y++) for (let x = 0; x < a.width; x++) if (distance(pixel(a, x, y), pixel(b, x, y)) <= tolerance) same++;
  return same / (a.width * a.height);
}

/** Every file under `dir` (recursively) whose name matches `re`, with its size. */
function files(dir: string, re: RegExp): { name: string; size: number }[] {
  let names: string[];
  try {
    names = readdirSync(dir, { recursive: true, encoding: 'utf8' });
  } catch {
    return [];
  }
  return names.filter((n) => re.test(n)).map((n) => ({ name: n, size: statSync(path.join(dir, n)).size }));
}

const ready = (s: TestServer) =>
  waitFor('renderer', async () => ((await (await fetch(`${s.url}/ping`)).json()) as { renderer_enabled: boolean }).renderer_enabled || undefined, 120_000);

/** A: big metatiles, no buffer, one page per browser, small disk cache and no memory cache, strongest PNG, weakest JPEG/WebP, real extrusions. */
const A_RENDER = `pool_size = 2
pages_per_browser = 1
metatile = 4
tile_buffer = 0
png_compression = 9
jpeg_quality = 10
webp_quality = 10
memory_cache_mb = 0
disk_cache_mb = 1
flat_extrusions = false`;
/** B: one tile per frame, two pages per browser, memory cache only, no PNG compression, best JPEG/WebP, flat extrusions. */
const B_RENDER = `pool_size = 2
pages_per_browser = 2
metatile = 1
tile_buffer = 64
png_compression = 0
jpeg_quality = 100
webp_quality = 100
memory_cache_mb = 64
disk_cache_mb = 0
flat_extrusions = true`;
const DISK_BUDGET = 1024 * 1024;

let a: TestServer;
let b: TestServer;
let aCache: string;
let bCache: string;
let aMetrics: string;

before(async () => {
  const dir = renderTempDir();
  const archive = await buildOmtArchive(dir);
  aCache = path.join(dir, 'cache-a');
  bCache = path.join(dir, 'cache-b');
  const scrapePort = await freePort();
  aMetrics = `http://127.0.0.1:${scrapePort}/metrics`;
  [a, b] = await Promise.all([
    startServer({ toml: `${renderToml(archive, aCache, A_RENDER)}[telemetry]\nscrape_bind = "127.0.0.1:${scrapePort}"\n`, workers: 1 }),
    startServer({ toml: renderToml(archive, bCache, B_RENDER), workers: 1 }),
  ]);
  await Promise.all([ready(a), ready(b)]);
});
after(async () => {
  await Promise.all([a?.stop(), b?.stop()]);
});

describe('render.pages_per_browser', () => {
  test('two renderers: one page per browser starts two browsers, two pages per browser one', async () => {
    assert.equal((await waitFor('two browsers of A', () => (browserPids(a.proc.pid!).length === 2 ? 2 : undefined), 60_000)), 2);
    assert.equal(browserPids(b.proc.pid!).length, 1);
  });
});

describe('render.metatile, render.tile_buffer and the render metrics', () => {
  test('metatile = 4: one render draws the 16 tiles of its block; the neighbours come from the disk cache, one render counted', async () => {
    const before = await rendered(a);
    const first = await get(a, '/styles/osm-liberty/2/1/1.jpg');
    assert.equal(timing(first).tiles, 16);
    const neighbour = await get(a, '/styles/osm-liberty/2/3/2.jpg');
    // memory_cache_mb = 0: the second tile is read back from the disk cache.
    assert.equal(timing(neighbour).cache, 'disk');
    assert.equal((await rendered(a)) - before, 1);
    const onDisk = files(path.join(aCache, 'render'), /512@1x\/2\/[0-3]\/[0-3]\.jpg$/);
    assert.equal(onDisk.length, 16, onDisk.map((f) => f.name).join(', '));
    const m = parseScrape(await (await fetch(aMetrics)).text());
    assert.equal(m.value('render_duration_seconds_count', { style: 'osm-liberty', format: 'jpeg' }), 1);
  });

  test('metatile = 1: every tile is its own render', async () => {
    const before = await rendered(b);
    const first = await get(b, '/styles/osm-liberty/2/1/1.png');
    assert.equal(timing(first).tiles, 1);
    const neighbour = await get(b, '/styles/osm-liberty/2/2/1.png');
    assert.equal(timing(neighbour).tiles, 1);
    assert.equal((await rendered(b)) - before, 2);
    // The same tile again comes from memory (memory_cache_mb = 64).
    assert.equal(timing(await get(b, '/styles/osm-liberty/2/2/1.png')).cache, 'memory');
  });

  test('a tile cut from a 4x4 metatile shows what the same tile drawn alone shows', async () => {
    const cut = await decode((await get(a, '/styles/osm-liberty/2/1/1.png')).body);
    const alone = await decode((await get(b, '/styles/osm-liberty/2/1/1.png')).body);
    const s = sameShare(cut, alone);
    assert.ok(s > 0.97, `only ${(s * 100).toFixed(1)}% of pixels agree`);
  });

  test('tile_buffer = 0: a @2x 4x4 metatile (2048 CSS px, 4096 device px) fits one frame; with a buffer it would be cut to 2x2', async () => {
    const r = await get(a, '/styles/osm-liberty/2/0/0@2x.webp');
    assert.equal(timing(r).tiles, 16);
    const img = await decode(r.body);
    assert.deepEqual([img.width, img.height], [1024, 1024]);
  });
});
