// The [render] settings a user tunes, each checked by what it changes for a client, on two servers with opposite
// values (one Chromium pool each): metatile (tiles cut from one frame: Server-Timing `tiles`, renders counted in
// /ping and on the metrics listener, neighbours served from the cache), tile_buffer (with it 0, a @2x 4x4
// metatile fits the 4096 px frame limit), pages_per_browser (browser processes), png_compression,
// jpeg_quality and webp_quality (bytes against the same pixels encoded here at the configured level; both servers
// encode with sharp, tile_encoder = "sharp": the browser's encoder is render-encoder.test.ts's),
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
function files(dir: string, re: RegExp): { name: string; size: number; mtimeMs: number }[] {
  let names: string[];
  try {
    names = readdirSync(dir, { recursive: true, encoding: 'utf8' });
  } catch {
    return [];
  }
  // The sweep runs beside the test and may remove a file between the listing and its stat: such a file is
  // no longer on disk and is left out.
  const out: { name: string; size: number; mtimeMs: number }[] = [];
  for (const n of names.filter((name) => re.test(name))) {
    try {
      const st = statSync(path.join(dir, n));
      out.push({ name: n, size: st.size, mtimeMs: st.mtimeMs });
    } catch (err) {
      if ((err as NodeJS.ErrnoException).code !== 'ENOENT') throw err;
    }
  }
  return out;
}

const ready = (s: TestServer) =>
  waitFor('renderer', async () => ((await (await fetch(`${s.url}/ping`)).json()) as { renderer_enabled: boolean }).renderer_enabled || undefined, 120_000);

/** A: big metatiles, no buffer, one page per browser, small disk cache and no memory cache, strongest PNG, weakest JPEG/WebP, real extrusions. */
const A_RENDER = `pool_size = 2
tile_encoder = "sharp"
pages_per_browser = 1
metatile = 4
tile_buffer = 0
png_compression = 9
jpeg_quality = 10
webp_quality = 10
memory_cache_mb = 0
disk_cache_mb = 1
flat_extrusions = false`;
/** B: one tile per frame, two pages per browser, a 3 MiB memory cache only, no PNG compression, best JPEG/WebP, flat extrusions. */
const B_RENDER = `pool_size = 2
tile_encoder = "sharp"
pages_per_browser = 2
metatile = 1
tile_buffer = 64
png_compression = 0
jpeg_quality = 100
webp_quality = 100
memory_cache_mb = 3
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
    // A JPEG tile again comes from memory. (Its 790 KB level-0 PNG is larger than an eighth of the 3 MiB
    // memory cache, the largest entry it keeps.)
    assert.equal(timing(await get(b, '/styles/osm-liberty/2/2/1.jpg')).tiles, 1);
    assert.equal(timing(await get(b, '/styles/osm-liberty/2/2/1.jpg')).cache, 'memory');
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

/** The same pixels encoded here as the product would at `level`/`quality`: the expected size of its answer. */
async function encodedSize(img: Decoded, format: 'png' | 'jpeg' | 'webp', q: number): Promise<number> {
  const p = sharp(img.data, { raw: { width: img.width, height: img.height, channels: 4 } }).removeAlpha();
  const out = format === 'png' ? p.png({ compressionLevel: q, adaptiveFiltering: false }) : format === 'jpeg' ? p.jpeg({ quality: q }) : p.webp({ quality: q, effort: 2 });
  return (await out.toBuffer()).length;
}

describe('png_compression, jpeg_quality, webp_quality', () => {
  test('each server encodes with its own level: sizes match the same pixels encoded here at that level, not at the default', async () => {
    const sizes: string[] = [];
    for (const [format, ext, aLevel, bLevel, dflt] of [
      ['png', 'png', 9, 0, 3],
      ['jpeg', 'jpg', 10, 100, 85],
      ['webp', 'webp', 10, 100, 85],
    ] as const) {
      const fromA = (await get(a, `/styles/osm-liberty/1/0/0.${ext}`)).body;
      const fromB = (await get(b, `/styles/osm-liberty/1/0/0.${ext}`)).body;
      // The reference pixels: B's PNG is lossless.
      const pixels = await decode((await get(b, '/styles/osm-liberty/1/0/0.png')).body);
      const expA = await encodedSize(pixels, format, aLevel);
      const expB = await encodedSize(pixels, format, bLevel);
      const atDefault = await encodedSize(pixels, format, dflt);
      sizes.push(`${format}: A ${fromA.length} (here ${expA}), B ${fromB.length} (here ${expB}), default ${atDefault}`);
      // Nearer to the configured level's size than to the default's.
      assert.ok(Math.abs(fromA.length - expA) < Math.abs(fromA.length - atDefault), sizes.join('; '));
      assert.ok(Math.abs(fromB.length - expB) < Math.abs(fromB.length - atDefault), sizes.join('; '));
    }
    assert.equal(sizes.length, 3);
  });
});

describe('render.memory_cache_mb and render.disk_cache_mb', () => {
  test('disk_cache_mb = 0 writes nothing to the cache dir; memory_cache_mb = 0 reads from disk', async () => {
    await get(b, '/styles/osm-liberty/1/1/1.png');
    assert.deepEqual(files(path.join(bCache, 'render'), /\.(png|jpg|webp)$/), []);
    await get(a, '/styles/osm-liberty/1/1/1.png');
    assert.equal(timing(await get(a, '/styles/osm-liberty/1/1/1.png')).cache, 'disk');
  });

  test('memory_cache_mb = 3: past 3 MiB of newer tiles the oldest is drawn again, a recent one still comes from memory', async () => {
    // @2x JPEG tiles: about 100 KB each, below the largest entry the cache keeps (an eighth of it).
    const first = '/styles/osm-liberty/3/0/0@2x.jpg';
    assert.equal(timing(await get(b, first)).tiles, 1);
    assert.equal(timing(await get(b, first)).cache, 'memory');
    let bytes = 0;
    let drawn = 0;
    let last = '';
    // Other z3 tiles (one render each: metatile = 1) until well past the budget.
    for (let i = 1; i < 64 && bytes < 1.2 * 3 * 1024 * 1024; i++) {
      last = `/styles/osm-liberty/3/${i % 8}/${Math.floor(i / 8)}@2x.jpg`;
      const r = await get(b, last);
      assert.equal(timing(r).tiles, 1, last);
      bytes += r.body.length;
      drawn++;
    }
    assert.ok(bytes >= 1.2 * 3 * 1024 * 1024, `only ${bytes} bytes in ${drawn} tiles`);
    assert.equal(timing(await get(b, last)).cache, 'memory');
    const before = await rendered(b);
    assert.equal(timing(await get(b, first)).tiles, 1, 'the oldest tile was evicted and is drawn again');
    assert.equal((await rendered(b)) - before, 1);
  });

  test('the disk cache is swept back under disk_cache_mb, oldest files first', async () => {
    const dir = path.join(aCache, 'render');
    const mtimes = (list: { name: string; mtimeMs: number }[]) => new Map(list.map((f) => [f.name, f.mtimeMs]));
    // The z2 block of the first test (drawn now if this test runs alone).
    await get(a, '/styles/osm-liberty/2/1/1.jpg');
    const earlier = mtimes(files(dir, /\.(png|jpg|webp)$/));
    assert.ok(earlier.size >= 16, `older tiles are on disk: ${earlier.size}`);
    // Four z3 metatiles of 16 PNG tiles each write more than twice the 1 MiB budget (counted below).
    let fetched = 0;
    for (const [x, y] of [[0, 0], [4, 0], [0, 4], [4, 4]]) {
      const r = await get(a, `/styles/osm-liberty/3/${x}/${y}.png`);
      assert.equal(timing(r).tiles, 16);
      fetched += r.body.length;
    }
    // One tile of each metatile was fetched; its 15 neighbours were written beside it (sizes alike).
    assert.ok(fetched * 16 > 2 * DISK_BUDGET, `about ${fetched * 16} bytes written`);
    const total = () => files(dir, /\.(png|jpg|webp)$/).reduce((n, f) => n + f.size, 0);
    // The sweep starts once a tenth of the budget has been written since the last one and removes the oldest
    // files down to 90%: the directory may stay above the budget by what was written while a sweep ran (up to a
    // metatile), not by the whole of what was written here.
    const written = () => `${total()} bytes on disk`;
    await waitFor('the sweep to bring the cache near its budget', () => (total() <= 2 * DISK_BUDGET ? true : undefined), 30_000).catch((err: Error) => assert.fail(`${err.message}: ${written()}`));
    // Files of the newest metatile stay; older files went first, in the order they were written.
    assert.ok(files(dir, /512@1x\/3\/[4-7]\/[4-7]\.png$/).length > 0, 'the newest tiles stay');
    const kept = new Set(files(dir, /\.(png|jpg|webp)$/).map((f) => f.name));
    const removed = [...earlier].filter(([n]) => !kept.has(n));
    const stayed = [...earlier].filter(([n]) => kept.has(n));
    assert.ok(removed.length > 0, 'older tiles were evicted');
    const newestRemoved = Math.max(...removed.map(([, t]) => t));
    for (const [n, t] of stayed) assert.ok(t >= newestRemoved, `${n} stayed although older than an evicted file`);
  });
});

describe('render.flat_extrusions = false', () => {
  test('pitch-0 Paris frames differ from the flat drawing where MapLibre shows the walls of the buildings', async () => {
    const lon = ((PARIS.x + 0.5) / 2 ** 14) * 360 - 180;
    const lat = (Math.atan(Math.sinh(Math.PI * (1 - (2 * (PARIS.y + 0.5)) / 2 ** 14))) * 180) / Math.PI;
    const view = `/styles/osm-liberty/static/${lon},${lat},14/256x256.png`;
    const real = await decode((await get(a, view)).body);
    const flat = await decode((await get(b, view)).body);
    const differ = 1 - sameShare(real, flat, 3);
    assert.ok(differ > 0.01, `only ${(differ * 100).toFixed(2)}% of pixels differ`);
  });
});

describe('frames larger than 4096 px', () => {
  test('a 4200 device px wide static map is drawn in two parts whose seam matches the same place drawn in one frame', async () => {
    const wide = await get(b, '/styles/osm-liberty/static/0,20,4/2100x128@2x.png');
    assert.equal(timing(wide).parts, 2);
    const whole = await decode(wide.body);
    assert.deepEqual([whole.width, whole.height], [4200, 256]);
    // Parts are 4096 / 2 - 2 x 64 = 1920 CSS px wide: the seam is at CSS x = 1920, 870 px east of the centre
    // (device x = 3840).
    const seamLon = (870 / (512 * 2 ** 4)) * 360;
    const one = await get(b, `/styles/osm-liberty/static/${seamLon},20,4/256x128@2x.png`);
    assert.equal(timing(one).parts, undefined);
    const small = await decode(one.body);
    const crop = await decode(await sharp(wide.body).extract({ left: 3840 - 256, top: 0, width: 512, height: 256 }).png().toBuffer());
    const s = sameShare(crop, small);
    assert.ok(s > 0.95, `only ${(s * 100).toFixed(1)}% of pixels agree across the seam`);
  });
});
