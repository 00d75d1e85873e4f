// Image formats: what encoding one rendered frame costs in each format the render routes offer, on the same
// frames. The server renders a few OSM Liberty tiles (512 px: the planet at z1, the dense Paris z14 tile, and a
// 1024 px @2x Paris tile) as PNG; each is decoded to raw pixels once, then encoded here again and again with the
// service's own encoder (src/render/image.ts, sharp) as PNG, JPEG, WebP, lossless WebP, AVIF and lossless AVIF,
// one image at a time. Prints per format and frame: CPU milliseconds per image (this process, libvips's threads
// included), wall milliseconds, and bytes, with the ratio to PNG.
//
//   BENCH=formats make bench     (or: node --import tsx bench/formats.bench.ts after node scripts/build.mjs)
//
// Environment: BENCH_FORMATS_ROUNDS (encodes per format and frame, 5).
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import sharp from 'sharp';
import { encodeImage, type EncodeOptions, type RawImage } from '../src/render/image.js';
import type { ImageEncoding } from '../src/render/image-encoding.js';
import { buildOmtArchive, renderToml } from '../test/helpers/render.js';
import { ChildServer, envNumber, fmt, freePort, httpGet, ROOT, table } from './lib.js';

const ROUNDS = envNumber('BENCH_FORMATS_ROUNDS', 5);
const FRAMES = [
  { name: 'planet z1 512px', path: '/styles/osm-liberty/1/1/0.png' },
  { name: 'Paris z14 512px', path: '/styles/osm-liberty/14/8298/5635.png' },
  { name: 'Paris z14 1024px', path: '/styles/osm-liberty/14/8298/5635@2x.png' },
];
/** The service's defaults (render.png_compression, jpeg_quality, webp_quality, avif_quality). */
const OPTIONS: EncodeOptions = { pngCompression: 3, jpegQuality: 85, webpQuality: 85, avifQuality: 50 };
const ENCODINGS: [string, ImageEncoding][] = [
  ['png', { format: 'png' }],
  ['jpeg q85', { format: 'jpeg' }],
  ['webp q85', { format: 'webp' }],
  ['webp lossless', { format: 'webp', lossless: true }],
  ['avif q50', { format: 'avif' }],
  ['avif lossless', { format: 'avif', lossless: true }],
];

async function frames(): Promise<{ name: string; raw: RawImage }[]> {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'bench-formats-'));
  try {
    const archive = await buildOmtArchive(dir);
    writeFileSync(path.join(dir, 'config.toml'), renderToml(archive, path.join(dir, 'cache'), 'pool_size = 1\nmetatile = 1\ndisk_cache_mb = 0', ''));
    const port = await freePort();
    const child = ChildServer.start('tileserver-ts', process.execPath, [path.join(ROOT, 'dist/cli.js'), '--config', path.join(dir, 'config.toml'), '--port', String(port), '--host', '127.0.0.1', '--workers', '1'], { env: { LOG_LEVEL: 'warn' } });
    const url = `http://127.0.0.1:${port}`;
    try {
      await child.waitReady(`${url}/health`);
      const out: { name: string; raw: RawImage }[] = [];
      for (const f of FRAMES) {
        // The first render waits for the renderer to start.
        const r = await httpGet(url + f.path, {}, 120_000);
        if (r.status !== 200) throw new Error(`${f.path}: ${r.status} ${r.body.toString().slice(0, 200)}`);
        const { data, info } = await sharp(r.body).ensureAlpha().raw().toBuffer({ resolveWithObject: true });
        out.push({ name: f.name, raw: { data, width: info.width, height: info.height } });
      }
      return out;
    } finally {
      await child.stop();
    }
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

const cpuMs = () => {
  const u = process.cpuUsage();
  return (u.user + u.system) / 1000;
};

async function main(): Promise<void> {
  const list = await frames();
  console.log(`${ROUNDS} encodes per format and frame, one at a time (sharp ${sharp.versions.sharp}, libvips ${sharp.versions.vips}, aom ${sharp.versions.aom ?? '?'})`);
  for (const frame of list) {
    const rows = [['format', 'CPU ms/image', 'wall ms/image', 'bytes', 'CPU vs PNG', 'bytes vs PNG']];
    let png: { cpu: number; bytes: number } | undefined;
    for (const [name, enc] of ENCODINGS) {
      await encodeImage(frame.raw, enc, OPTIONS); // warm-up
      const c0 = cpuMs();
      const t0 = performance.now();
      let bytes = 0;
      for (let i = 0; i < ROUNDS; i++) bytes = (await encodeImage(frame.raw, enc, OPTIONS)).length;
      const cpu = (cpuMs() - c0) / ROUNDS;
      const wall = (performance.now() - t0) / ROUNDS;
      png ??= { cpu, bytes };
      rows.push([name, fmt(cpu, 1), fmt(wall, 1), fmt(bytes), `${fmt(cpu / png.cpu, 2)}x`, `${fmt(bytes / png.bytes, 2)}x`]);
    }
    console.log(`\n${frame.name} (${frame.raw.width}x${frame.raw.height})`);
    console.log(table(rows));
  }
}

await main();
