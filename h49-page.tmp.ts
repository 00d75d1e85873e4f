import sharp from 'sharp';
import http from 'node:http';
import { readFileSync } from 'node:fs';
import { chromium } from 'playwright-core';
import { CHROMIUM_FLAGS, findChromium } from './src/render/backends/chromium.js';
import { PNG_WRITER } from './src/render/backends/chromium-page.js';
const files = process.argv.slice(2);
const fflate = readFileSync('node_modules/fflate/esm/browser.js');
const srv = http.createServer((req, res) => {
  if (req.url === '/fflate.js') return void res.writeHead(200, { 'Content-Type': 'text/javascript' }).end(fflate);
  res.writeHead(200, { 'Content-Type': 'text/html' }).end(`<!doctype html><script type="module">
import * as fflate from './fflate.js';
${PNG_WRITER}
async function bench(rgba, W, H) {
  const px = new Uint8Array(rgba);
  // px is top-to-bottom; pngTile expects bottom-to-top (readPixels): flip
  const flipped = new Uint8Array(px.length);
  for (let y = 0; y < H; y++) flipped.set(px.subarray(y*W*4, (y+1)*W*4), (H-1-y)*W*4);
  const r = { left: 0, top: 0, width: W, height: H };
  const out = {};
  const time = async (name, f, n = 8) => { await f(); const t = performance.now(); let b; for (let i = 0; i < n; i++) b = await f(); out[name] = [b.size ?? b.length, (performance.now() - t) / n]; };
  await time('stream L6 none', () => pngTile(flipped, W, H, r, true));
  const rows = (filt) => { const st = W*3+1, o = new Uint8Array(st*H); for (let y=0;y<H;y++){ o[y*st]= y&&filt?2:0; for (let x=0;x<W;x++){ const i=(y*W+x)*4, j=y*st+1+x*3; if (y&&filt){ const k=i-W*4; o[j]=px[i]-px[k];o[j+1]=px[i+1]-px[k+1];o[j+2]=px[i+2]-px[k+2]; } else {o[j]=px[i];o[j+1]=px[i+1];o[j+2]=px[i+2];} } } return o; };
  const none = rows(false), up = rows(true);
  for (const L of [1,3]) { await time('fflate none L'+L, async () => fflate.zlibSync(none, { level: L })); await time('fflate up L'+L, async () => fflate.zlibSync(up, { level: L })); }
  const c = new OffscreenCanvas(W, H); const ctx = c.getContext('2d', { alpha: false });
  ctx.putImageData(new ImageData(new Uint8ClampedArray(px.buffer), W, H), 0, 0);
  await time('chromium png', () => c.convertToBlob({ type: 'image/png' }));
  await time('chromium webp q1', () => c.convertToBlob({ type: 'image/webp', quality: 1 }));
  await time('chromium webp q0.85', () => c.convertToBlob({ type: 'image/webp', quality: 0.85 }));
  const wl = new Uint8Array(await (await c.convertToBlob({ type: 'image/webp', quality: 1 })).arrayBuffer());
  out.webpHead = Array.from(wl.subarray(12, 16)).map((b) => String.fromCharCode(b)).join('');
  out.webpBytes = Array.from(wl);
  out.pngBytes = Array.from(new Uint8Array(await (await c.convertToBlob({ type: 'image/png' })).arrayBuffer()));
  return out;
}
window.bench = bench; window.ready = true;
</script>`);
});
await new Promise<void>((r) => srv.listen(0, '127.0.0.1', r));
const port = (srv.address() as any).port;
const browser = await chromium.launch({ executablePath: findChromium()!, args: [...CHROMIUM_FLAGS] });
const page = await browser.newPage();
await page.goto(`http://127.0.0.1:${port}/`);
await page.waitForFunction('window.ready === true');
for (const f of files) {
  const { data, info } = await sharp(f).ensureAlpha().raw().toBuffer({ resolveWithObject: true });
  const out: any = await page.evaluate(([d, w, h]) => (window as any).bench(new Uint8Array(d as number[]).buffer, w, h), [Array.from(data), info.width, info.height] as const);
  const wb = Buffer.from(out.webpBytes); delete out.webpBytes;
  const pb = Buffer.from(out.pngBytes); delete out.pngBytes;
  const dec = await sharp(wb).ensureAlpha().raw().toBuffer();
  console.log(f, 'webp q1 chunk', out.webpHead, 'exact:', Buffer.compare(dec, data) === 0, 'chromium png colour type', pb[25], 'filter types?');
  const base = out['stream L6 none'][0];
  for (const [k, v] of Object.entries(out)) if (Array.isArray(v)) console.log(k.padEnd(22), String(v[0]).padStart(8), (v[0] / base).toFixed(3), (v[1] as number).toFixed(1), 'ms');
}
await browser.close(); srv.close();
