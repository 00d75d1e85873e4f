// The Chromium page's PNG writer (chromium-page.ts, PNG_WRITER) on its own, in a real browser: the tiles it writes
// from a frame as readPixels leaves it (rows bottom to top, premultiplied alpha) decode to exactly the pixels sharp
// writes from the same raw frame taken the service's other way (rows flipped, alpha undone in Node, cut and encoded
// by sharp), for an opaque and a translucent frame, at the levels the settings allow and with CompressionStream; the
// level reaches libdeflate; and a page whose deflate module does not load still writes the same pixels, with
// CompressionStream, and says so; and which level a frame gets (seeding's or everyone else's). One browser, no server of the project's: a small HTTP server gives the page, and
// the deflate module as the renderer's own server serves it (local-server.ts, pageAsset).
import assert from 'node:assert/strict';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { after, before, describe, test } from 'node:test';
import type { Browser, Page } from 'playwright-core';
import sharp from 'sharp';
import { DEFLATE_MODULE, PNG_WRITER } from '../src/render/backends/chromium-page.js';
import { pageAsset } from '../src/render/backends/local-server.js';
import { encodeRegion, type Rect } from '../src/render/image.js';
import { pagePngLevel } from '../src/render/image-encoding.js';
import { unpremultiplyInPlace } from '../src/render/renderer.js';
import { launchChromium } from './helpers/browser.js';

/** A 2x2 metatile of 96 px tiles with an 8 px buffer, as the service plans frames (smaller, to stay cheap). */
const W = 208;
const H = 208;
const TILES: Rect[] = [
  { left: 8, top: 8, width: 96, height: 96 },
  { left: 104, top: 8, width: 96, height: 96 },
  { left: 8, top: 104, width: 96, height: 96 },
  { left: 104, top: 104, width: 96, height: 96 },
];

/**
 * A frame as readPixels gives it: flat fills (what most of a map is), a gradient, and speckle (anti-aliased edges
 * and text); `translucent` gives some regions every alpha from 0 to 255, colours premultiplied (never above alpha).
 */
function frame(translucent: boolean): Uint8Array {
  const px = new Uint8Array(W * H * 4);
  let seed = 7;
  const random = () => ((seed = (seed * 1103515245 + 12345) >>> 0) >>> 16) & 255;
  for (let y = 0; y < H; y++) {
    for (let x = 0; x < W; x++) {
      const i = (y * W + x) * 4;
      let rgb: [number, number, number];
      if (x < 70) rgb = [158, 189, 255];
      else if (y < 60) rgb = [x & 255, y & 255, (x + y) & 255];
      else if ((x + y) % 9 < 3) rgb = [random(), random(), random()];
      else rgb = [242, 239, 233];
      const a = !translucent || x < 40 ? 255 : y > 150 ? (x * 3 + y) & 255 : x > 180 ? 0 : 128;
      px[i] = Math.round((rgb[0] * a) / 255);
      px[i + 1] = Math.round((rgb[1] * a) / 255);
      px[i + 2] = Math.round((rgb[2] * a) / 255);
      px[i + 3] = a;
    }
  }
  return px;
}

/** The raw frame the service's sharp path works on: rows top to bottom, straight alpha. */
function straight(px: Uint8Array): Uint8Array {
  const out = new Uint8Array(px.length);
  const row = W * 4;
  for (let y = 0; y < H; y++) out.set(px.subarray((H - 1 - y) * row, (H - y) * row), y * row);
  unpremultiplyInPlace(out);
  return out;
}

const rgba = async (png: Uint8Array) => sharp(png).ensureAlpha().raw().toBuffer();

let server: http.Server;
let origin: string;
let browser: Browser;

before(async () => {
  const module = (await pageAsset(DEFLATE_MODULE.slice(2)))!;
  const page = (deflateUrl: string) => `<!doctype html><script type="module">
${PNG_WRITER}
window.encode = async (b64, W, H, tiles, opaque, level) => {
  const px = Uint8Array.from(atob(b64), (c) => c.charCodeAt(0));
  const blobs = await Promise.all(tiles.map((r) => pngTile(px, W, H, r, opaque, level)));
  const out = [];
  for (const b of blobs) {
    const bytes = new Uint8Array(await b.arrayBuffer());
    let s = '';
    for (const c of bytes) s += String.fromCharCode(c);
    out.push(btoa(s));
  }
  return out;
};
// A frame made in the page (too large to send cheaply): opaque, rows bottom to top as readPixels leaves them, each
// pixel (x & 255, y & 255, x * y & 255) counted from the top left, as the test checks it; its tiles as base64 PNGs.
window.encodeMade = async (W, H, tiles, level) => {
  const px = new Uint8Array(W * H * 4);
  for (let y = 0; y < H; y++) {
    for (let x = 0; x < W; x++) {
      const i = ((H - 1 - y) * W + x) * 4;
      px[i] = x & 255;
      px[i + 1] = y & 255;
      px[i + 2] = (x * y) & 255;
      px[i + 3] = 255;
    }
  }
  const blobs = await Promise.all(tiles.map((r) => pngTile(px, W, H, r, true, level)));
  return Promise.all(blobs.map(async (b) => {
    const bytes = new Uint8Array(await b.arrayBuffer());
    let s = '';
    for (const c of bytes) s += String.fromCharCode(c);
    return btoa(s);
  }));
};
window.ready = await loadDeflate(${JSON.stringify(deflateUrl)});
</script>`;
  server = http.createServer((req, res) => {
    const url = req.url ?? '/';
    if (url === '/page.html') return void res.writeHead(200, { 'Content-Type': 'text/html' }).end(page(DEFLATE_MODULE));
    // The same page whose module is not there (a build without it): the writer must fall back.
    if (url === '/broken.html') return void res.writeHead(200, { 'Content-Type': 'text/html' }).end(page('./encoder/missing.mjs'));
    if (url === DEFLATE_MODULE.slice(1)) return void res.writeHead(200, { 'Content-Type': 'text/javascript' }).end(module);
    res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  browser = await launchChromium();
});

after(async () => {
  await browser?.close();
  server?.close();
});

async function open(name: string): Promise<{ page: Page; deflater: { deflate: string; problem: string } }> {
  const page = await browser.newPage();
  await page.goto(`${origin}/${name}`);
  await page.waitForFunction('window.ready !== undefined');
  return { page, deflater: (await page.evaluate('window.ready')) as { deflate: string; problem: string } };
}

async function encodeInPage(page: Page, px: Uint8Array, opaque: boolean, level: number | undefined): Promise<Buffer[]> {
  const out = (await page.evaluate(([b64, w, h, tiles, o, l]) => (window as unknown as { encode: (...a: unknown[]) => Promise<string[]> }).encode(b64, w, h, tiles, o, l), [Buffer.from(px).toString('base64'), W, H, TILES, opaque, level ?? null] as const)) as string[];
  return out.map((b) => Buffer.from(b, 'base64'));
}

/** Every tile of the page's PNGs against sharp's of the same pixels: the same pixels exactly, the expected colour type. */
async function assertSameAsSharp(pngs: Buffer[], px: Uint8Array, opaque: boolean, label: string): Promise<void> {
  const img = { data: straight(px), width: W, height: H };
  for (let t = 0; t < TILES.length; t++) {
    // PNG colour type (IHDR byte 25): 2 RGB for an opaque style, 6 RGBA otherwise.
    assert.equal(pngs[t][25], opaque ? 2 : 6, `${label}, tile ${t}: colour type`);
    const fromSharp = await encodeRegion(img, TILES[t], { format: 'png' }, { pngCompression: 3, jpegQuality: 85, webpQuality: 85, avifQuality: 50 });
    const [a, b] = await Promise.all([rgba(pngs[t]), rgba(fromSharp)]);
    assert.ok(a.equals(b), `${label}, tile ${t}: the page's PNG decodes to sharp's pixels`);
  }
}

describe("the page's PNG writer", () => {
  test('loads libdeflate, and its PNGs decode to exactly the pixels sharp writes from the same frame (opaque and translucent, every level)', async () => {
    const { page, deflater } = await open('page.html');
    try {
      assert.deepEqual(deflater, { deflate: 'libdeflate', problem: '' });
      for (const translucent of [false, true]) {
        const px = frame(translucent);
        for (const level of [undefined, 0, 1, 3, 6, 9]) {
          const pngs = await encodeInPage(page, px, !translucent, level);
          await assertSameAsSharp(pngs, px, !translucent, `${translucent ? 'translucent' : 'opaque'} frame, level ${level ?? 'CompressionStream'}`);
        }
      }
    } finally {
      await page.close();
    }
  });

  test('the level reaches the deflate: level 0 stores the rows, level 9 writes fewer bytes than level 1, no level is CompressionStream', async () => {
    const { page } = await open('page.html');
    try {
      const px = frame(false);
      const size = async (level: number | undefined) => (await encodeInPage(page, px, true, level)).reduce((n, b) => n + b.length, 0);
      const [stored, fast, best, stream] = [await size(0), await size(1), await size(9), await size(undefined)];
      // Stored blocks: at least the raw rows (96 rows of 1 + 96 * 3 bytes per tile).
      assert.ok(stored >= 4 * 96 * (1 + 96 * 3), `level 0 wrote ${stored} bytes`);
      assert.ok(best < fast, `level 9 (${best} bytes) below level 1 (${fast})`);
      assert.ok(stream < stored, `CompressionStream compresses (${stream} bytes)`);
    } finally {
      await page.close();
    }
  });

  test("a tile larger than the WebAssembly memory the deflate started with still comes out right, and smaller ones after it", async () => {
    const { page } = await open('page.html');
    try {
      const made = (w: number, h: number, tiles: Rect[]) => page.evaluate(([a, b, t]) => (window as unknown as { encodeMade: (...x: unknown[]) => Promise<string[]> }).encodeMade(a, b, t, 3), [w, h, tiles] as const);
      // The module starts with 16 MB of memory: a 2048 px tile's RGB rows (12.6 MB) and the room for their deflate
      // (as much again) cannot fit, so the writer's blocks move into grown memory between the small tiles.
      const sizes: [number, number, Rect][] = [[64, 48, { left: 0, top: 0, width: 64, height: 48 }], [2048, 2048, { left: 0, top: 0, width: 2048, height: 2048 }], [80, 40, { left: 8, top: 4, width: 64, height: 32 }]];
      for (const [w, h, r] of sizes) {
        const [png] = (await made(w, h, [r])).map((b) => Buffer.from(b, 'base64'));
        const { data, info } = await sharp(png).raw().toBuffer({ resolveWithObject: true });
        assert.deepEqual([info.width, info.height, info.channels], [r.width, r.height, 3], `${w}x${h}: the tile's shape`);
        let wrong = 0;
        for (let y = 0; y < r.height; y++) {
          for (let x = 0; x < r.width; x++) {
            const [fx, fy] = [r.left + x, r.top + y];
            const o = (y * r.width + x) * 3;
            if (data[o] !== (fx & 255) || data[o + 1] !== (fy & 255) || data[o + 2] !== ((fx * fy) & 255)) wrong++;
          }
        }
        assert.equal(wrong, 0, `${w}x${h}: pixels unlike the frame's`);
      }
    } finally {
      await page.close();
    }
  });

  test('a page whose deflate module does not load says so and writes the same pixels with CompressionStream', async () => {
    const broken = await open('broken.html');
    const good = await open('page.html');
    try {
      assert.equal(broken.deflater.deflate, 'stream');
      assert.ok(broken.deflater.problem.length > 0, 'the reason is given');
      for (const translucent of [false, true]) {
        const px = frame(translucent);
        const pngs = await encodeInPage(broken.page, px, !translucent, 3);
        await assertSameAsSharp(pngs, px, !translucent, `fallback, ${translucent ? 'translucent' : 'opaque'} frame`);
        // What it wrote is CompressionStream's output, byte for byte, as a page that has libdeflate writes with no level.
        const streamed = await encodeInPage(good.page, px, !translucent, undefined);
        assert.deepEqual(pngs, streamed);
      }
    } finally {
      await broken.page.close();
      await good.page.close();
    }
  });
});

describe("the level a frame's PNG tiles are written at", () => {
  test('seeding (bulk renders) takes seed_png_compression; a person waiting and an expired tile drawn again take png_compression', () => {
    const levels = { png_compression: 3, seed_png_compression: 8 };
    assert.equal(pagePngLevel(levels, 'bulk'), 8);
    assert.equal(pagePngLevel(levels, 'interactive'), 3);
    assert.equal(pagePngLevel(levels, 'expired'), 3);
    assert.equal(pagePngLevel(levels, undefined), 3);
  });
});
