// The pixel path of the Chromium backend: a frame uploaded by the page (GL rows, bottom first) lands in one
// buffer with rows top first, chunk boundaries anywhere; a wrong size is refused; premultiplied alpha becomes
// straight alpha in place; opaque images and tiles are encoded without an alpha channel, translucent ones keep it.
import assert from 'node:assert/strict';
import http from 'node:http';
import { describe, test } from 'node:test';
import fc from './helpers/fast-check.js';
import sharp from 'sharp';
import { encodeImage, encodeRegion, isOpaque, type EncodeOptions, type RawImage } from '../src/render/image.js';
import { LocalServer } from '../src/render/backends/local-server.js';
import { unpremultiplyInPlace } from '../src/render/renderer.js';

/** POSTs `body` to `url` in pieces of the given sizes; resolves with the status. */
function upload(url: string, body: Uint8Array, pieces: number[]): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = http.request(url, { method: 'POST', headers: { 'Content-Length': body.length } }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on('error', reject);
    let at = 0;
    for (const n of pieces) {
      if (at >= body.length) break;
      req.write(body.subarray(at, Math.min(body.length, at + n)));
      at += n;
    }
    if (at < body.length) req.write(body.subarray(at));
    req.end();
  });
}

describe('frame upload', () => {
  test('property: rows arrive flipped into place, whatever the chunking', async () => {
    const server = new LocalServer({ workers: 1, maxCanvas: 64 });
    await server.listen();
    try {
      await fc.assert(
        fc.asyncProperty(fc.integer({ min: 1, max: 9 }), fc.integer({ min: 1, max: 7 }), fc.array(fc.integer({ min: 1, max: 50 }), { maxLength: 12 }), async (w, h, pieces) => {
          const gl = Uint8Array.from({ length: w * h * 4 }, (_, i) => (i * 7 + 3) % 251);
          const { url, bytes } = server.expectFrame(`f${w}x${h}-${pieces.join('.')}`, w, h);
          assert.equal(await upload(url, gl, pieces), 204);
          const got = await bytes;
          for (let y = 0; y < h; y++) assert.deepEqual([...got.subarray(y * w * 4, (y + 1) * w * 4)], [...gl.subarray((h - 1 - y) * w * 4, (h - y) * w * 4)]);
        }),
        { numRuns: 60 },
      );
    } finally {
      await server.close();
    }
  });

  test('an upload of the wrong size is refused and the render sees why', async () => {
    const server = new LocalServer({ workers: 1, maxCanvas: 64 });
    await server.listen();
    try {
      const big = server.expectFrame('big', 2, 2);
      assert.equal(await upload(big.url, new Uint8Array(20), [8, 12]), 413);
      await assert.rejects(big.bytes, /larger than 2x2/);
      const small = server.expectFrame('small', 2, 2);
      assert.equal(await upload(small.url, new Uint8Array(12), [12]), 400);
      await assert.rejects(small.bytes, /12 bytes, expected 16/);
    } finally {
      await server.close();
    }
  });
});

describe('premultiplied to straight alpha', () => {
  test('opaque and fully transparent pixels stay; translucent ones are divided by their alpha', () => {
    const px = Uint8Array.from([10, 20, 30, 255, 0, 0, 0, 0, 64, 32, 0, 128, 255, 255, 255, 255]);
    unpremultiplyInPlace(px);
    assert.deepEqual([...px], [10, 20, 30, 255, 0, 0, 0, 0, 128, 64, 0, 128, 255, 255, 255, 255]);
    // An exact half (116 * 255 / 232 = 127.5) rounds up, as the property below expects.
    const half = Uint8Array.from([116, 58, 0, 232]);
    unpremultiplyInPlace(half);
    assert.deepEqual([...half], [128, 64, 0, 232]);
  });

  test('property: aligned and unaligned buffers give the same answer', () => {
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.integer({ min: 0, max: 255 }), fc.integer({ min: 0, max: 255 })), { minLength: 1, maxLength: 40 }), (pixels) => {
        // Premultiplied input: each channel at most alpha.
        const flat = pixels.flatMap(([c, a]) => [Math.min(c, a), Math.min(c >> 1, a), 0, a]);
        const aligned = Uint8Array.from(flat);
        const backing = new Uint8Array(flat.length + 1);
        backing.set(flat, 1);
        const unaligned = backing.subarray(1);
        const opaque = pixels.every(([, a]) => a === 255);
        assert.equal(unpremultiplyInPlace(aligned), opaque, 'aligned: says whether every pixel was opaque');
        assert.equal(unpremultiplyInPlace(unaligned), opaque, 'unaligned: says whether every pixel was opaque');
        assert.deepEqual([...unaligned], [...aligned]);
        for (let i = 0; i < aligned.length; i += 4) {
          const a = aligned[i + 3];
          if (a > 0 && a < 255) assert.equal(aligned[i], Math.min(255, Math.round((flat[i] * 255) / a)));
        }
      }),
    );
  });
});

describe('opaque output has no alpha channel', () => {
  const PNG = { format: 'png' } as const;
  const o: EncodeOptions = { pngCompression: 3, jpegQuality: 85, webpQuality: 85, avifQuality: 50 };
  /** A w x h image of one colour; the pixel at (tx, ty) gets alpha `a`. */
  function image(w: number, h: number, tx: number, ty: number, a: number): RawImage {
    const data = new Uint8Array(w * h * 4);
    for (let i = 0; i < data.length; i += 4) data.set([40, 90, 200, 255], i);
    data[(ty * w + tx) * 4 + 3] = a;
    return { data, width: w, height: h };
  }

  test('property: a region is opaque exactly when no pixel inside it has alpha below 255', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1, max: 12 }), fc.integer({ min: 1, max: 12 }), fc.nat(), fc.nat(), fc.integer({ min: 0, max: 255 }), fc.nat(), fc.nat(), fc.nat(), fc.nat(), (w, h, px, py, a, l, t, rw, rh) => {
        const [tx, ty] = [px % w, py % h];
        const img = image(w, h, tx, ty, a);
        const r = { left: l % w, top: t % h, width: 0, height: 0 };
        r.width = 1 + (rw % (w - r.left));
        r.height = 1 + (rh % (h - r.top));
        const inside = tx >= r.left && tx < r.left + r.width && ty >= r.top && ty < r.top + r.height;
        assert.equal(isOpaque(img, r), a === 255 || !inside);
      }),
    );
  });

  test('PNG and WebP: three channels for an opaque image, four when one pixel is translucent; pixels kept', async () => {
    for (const format of ['png', 'webp'] as const) {
      const opaque = await encodeImage(image(16, 16, 3, 3, 255), { format }, o);
      assert.equal((await sharp(opaque).metadata()).channels, 3, format);
      const translucent = await encodeImage(image(16, 16, 3, 3, 0), { format }, o);
      assert.equal((await sharp(translucent).metadata()).channels, 4, format);
    }
    const back = await sharp(await encodeImage(image(16, 16, 3, 3, 0), PNG, o)).raw().toBuffer();
    assert.equal(back[(3 * 16 + 3) * 4 + 3], 0);
    assert.deepEqual([...back.subarray(0, 4)], [40, 90, 200, 255]);
  });

  test('a frame the renderer found opaque is not scanned again: its flag decides, for the frame and its cuts', async () => {
    // The flag is trusted: a translucent pixel behind it shows that no scan ran (a scan would keep the alpha).
    const known = { ...image(32, 16, 20, 5, 100), opaque: true };
    assert.equal((await sharp(await encodeImage(known, PNG, o)).metadata()).channels, 3);
    assert.equal((await sharp(await encodeRegion(known, { left: 16, top: 0, width: 16, height: 16 }, PNG, o)).metadata()).channels, 3);
  });

  test('tiles of one metatile are judged each on its own pixels', async () => {
    const meta = image(32, 16, 20, 5, 100);
    const left = await encodeRegion(meta, { left: 0, top: 0, width: 16, height: 16 }, PNG, o);
    const right = await encodeRegion(meta, { left: 16, top: 0, width: 16, height: 16 }, PNG, o);
    assert.equal((await sharp(left).metadata()).channels, 3);
    assert.equal((await sharp(right).metadata()).channels, 4);
    const px = await sharp(right).raw().toBuffer();
    assert.equal(px[(5 * 16 + 4) * 4 + 3], 100);
  });
});
