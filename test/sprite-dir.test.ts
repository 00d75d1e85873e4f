// Sprites built from a folder of SVG icons (`[[styles]] sprite_dir`), through the real server: the 1x, 2x and 3x
// sheets and their JSON are valid, every icon sits inside its sheet with no two overlapping, @2x/@3x are
// exactly double/triple, each icon's pixels are where its entry says; with `sdf = true` the entries say so and
// a real render (Chromium) colours the icon with the layer's `icon-color`. Bad sprite settings stop start-up
// with one line naming the key; the file-name parser is property-tested.
import assert from 'node:assert/strict';
import { mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { iconName } from '../src/styles/sprite-sheet.js';
import fc from './helpers/fast-check.js';
import { tempDir } from './helpers/foundation.js';
import { decode, distance, pixel, type Decoded, type Rgb } from './helpers/render.js';
import { runCli, startServer, writeTempConfig, type TestServer } from './helpers/server.js';

const dir = tempDir('tsts-sprite-dir-');
const icons = path.join(dir, 'icons');
mkdirSync(icons);
const svg = (w: number, h: number, body: string, viewBoxOnly = false) =>
  `<svg xmlns="http://www.w3.org/2000/svg" ${viewBoxOnly ? '' : `width="${w}" height="${h}" `}viewBox="0 0 ${w} ${h}">${body}</svg>`;
// Odd sizes, a non-square icon and one sized by its viewBox alone; each a flat colour to find it by.
const ICONS: Record<string, { w: number; h: number; color: Rgb; text: string }> = {
  square: { w: 16, h: 16, color: [255, 0, 0], text: svg(16, 16, '<rect width="16" height="16" fill="#ff0000"/>') },
  wide: { w: 13, h: 7, color: [0, 0, 255], text: svg(13, 7, '<rect width="13" height="7" fill="#0000ff"/>') },
  tall: { w: 5, h: 21, color: [0, 128, 0], text: svg(5, 21, '<rect width="5" height="21" fill="#008000"/>') },
  'dot-9': { w: 9, h: 9, color: [255, 255, 0], text: svg(9, 9, '<rect width="9" height="9" fill="#ffff00"/>', true) },
};
for (const [name, i] of Object.entries(ICONS)) writeFileSync(path.join(icons, `${name}.svg`), i.text);
writeFileSync(path.join(icons, 'README.txt'), 'not an icon');
// The SDF folder: one black square, to be drawn in the style's icon-color.
const sdfIcons = path.join(dir, 'sdf-icons');
mkdirSync(sdfIcons);
writeFileSync(path.join(sdfIcons, 'marker.svg'), svg(24, 24, '<rect width="24" height="24" fill="#000000"/>'));

const styleFile = (name: string, extra: object) => {
  const file = path.join(dir, `${name}.json`);
  writeFileSync(file, JSON.stringify({ version: 8, name, sources: {}, layers: [{ id: 'bg', type: 'background', paint: { 'background-color': '#ffffff' } }], ...extra }));
  return file;
};
const PLAIN = styleFile('plain', {});
const POINT = { type: 'geojson', data: { type: 'Feature', properties: {}, geometry: { type: 'Point', coordinates: [0, 0] } } };
const SDF_STYLE = styleFile('sdf', {
  center: [0, 0],
  zoom: 2,
  sources: { p: POINT },
  layers: [
    { id: 'bg', type: 'background', paint: { 'background-color': '#ffffff' } },
    { id: 'marker', type: 'symbol', source: 'p', layout: { 'icon-image': 'marker', 'icon-size': 2, 'icon-allow-overlap': true }, paint: { 'icon-color': '#00c000' } },
  ],
});

let server: TestServer;
before(async () => {
  server = await startServer({
    toml: `[render]\npool_size = 1\n[[styles]]\nid = "plain"\npath = "${PLAIN}"\nsprite_dir = "${icons}"\n[[styles]]\nid = "sdf"\npath = "${SDF_STYLE}"\nsprite_dir = "${sdfIcons}"\nsdf = true\n`,
    timeoutMs: 60_000,
  });
});
after(() => server?.stop());

type Entry = { x: number; y: number; width: number; height: number; pixelRatio: number; sdf?: boolean };
async function get(p: string): Promise<{ status: number; type: string | null; body: Buffer }> {
  const res = await fetch(server.url + p, { signal: AbortSignal.timeout(60_000) });
  return { status: res.status, type: res.headers.get('content-type'), body: Buffer.from(await res.arrayBuffer()) };
}
async function sheet(style: string, suffix: string): Promise<{ index: Record<string, Entry>; img: Decoded }> {
  const json = await get(`/styles/${style}/sprite${suffix}.json`);
  const png = await get(`/styles/${style}/sprite${suffix}.png`);
  assert.equal(json.status, 200, json.body.toString());
  assert.equal(png.status, 200);
  assert.match(json.type ?? '', /^application\/json/);
  assert.equal(png.type, 'image/png');
  return { index: JSON.parse(json.body.toString()) as Record<string, Entry>, img: await decode(png.body) };
}

describe('sprite sheets from a folder of SVGs', () => {
  test('the style points at its sprite; 1x, 2x and 3x sheets hold every icon inside the sheet, none overlapping, at its size', async () => {
    const style = JSON.parse((await get('/styles/plain/style.json')).body.toString()) as { sprite: string };
    assert.equal(new URL(style.sprite).pathname, '/styles/plain/sprite');
    for (const scale of [1, 2, 3]) {
      const { index, img } = await sheet('plain', scale === 1 ? '' : `@${scale}x`);
      assert.deepEqual(Object.keys(index).sort(), Object.keys(ICONS).sort(), 'one entry per .svg file, named after it');
      const boxes = Object.entries(index);
      for (const [name, e] of boxes) {
        assert.equal(e.pixelRatio, scale);
        assert.deepEqual([e.width, e.height], [ICONS[name].w * scale, ICONS[name].h * scale], `${name} at @${scale}x`);
        assert.ok(e.x >= 0 && e.y >= 0 && e.x + e.width <= img.width && e.y + e.height <= img.height, `${name} inside the sheet`);
        // Every pixel of the icon's box is its colour: the icon is where the entry says, and whole.
        for (const [px, py] of [[0, 0], [e.width - 1, e.height - 1], [e.width >> 1, e.height >> 1]]) {
          assert.ok(distance(pixel(img, e.x + px, e.y + py), ICONS[name].color) <= 2, `${name} @${scale}x pixel ${px},${py}: ${pixel(img, e.x + px, e.y + py)}`);
        }
        assert.equal(e.sdf, undefined);
      }
      for (const [a, ea] of boxes) {
        for (const [b, eb] of boxes) {
          if (a >= b) continue;
          const apart = ea.x + ea.width <= eb.x || eb.x + eb.width <= ea.x || ea.y + ea.height <= eb.y || eb.y + eb.height <= ea.y;
          assert.ok(apart, `${a} and ${b} overlap at @${scale}x`);
        }
      }
    }
  });

  test('@2x and @3x are exactly double and triple the 1x sheet and its entries', async () => {
    const one = await sheet('plain', '');
    for (const scale of [2, 3]) {
      const s = await sheet('plain', `@${scale}x`);
      assert.deepEqual([s.img.width, s.img.height], [one.img.width * scale, one.img.height * scale]);
      for (const [name, e] of Object.entries(one.index)) {
        assert.deepEqual(s.index[name], { x: e.x * scale, y: e.y * scale, width: e.width * scale, height: e.height * scale, pixelRatio: scale });
      }
    }
  });

  test('sdf = true: entries marked sdf, and a real render draws the icon in the layer\'s icon-color', { timeout: 150_000 }, async () => {
    const { index } = await sheet('sdf', '');
    assert.equal(index.marker.sdf, true);
    const r = await get('/styles/sdf/static/0,0,2/200x200.png');
    assert.equal(r.status, 200, r.body.toString().slice(0, 300));
    const img = await decode(r.body);
    const centre = pixel(img, 100, 100);
    assert.ok(distance(centre, [0, 192, 0]) <= 24, `the icon is drawn in icon-color #00c000 at the centre: ${centre}`);
    assert.ok(distance(pixel(img, 5, 5), [255, 255, 255]) <= 4, 'the background stays white away from the icon');
  });
});

describe('sprite_dir settings', () => {
  test('sdf without sprite_dir, and a missing folder, stop start-up with one line naming the key', async () => {
    for (const [extra, want] of [
      ['sdf = true\n', /sdf.*sprite_dir/],
      [`sprite_dir = "${path.join(dir, 'nowhere')}"\n`, /sprite_dir.*nowhere/],
    ] as const) {
      const file = writeTempConfig(`[[styles]]\nid = "s"\npath = "${PLAIN}"\n${extra}`);
      const r = await runCli(['--config', file]);
      assert.equal(r.code, 1, r.stderr);
      assert.match(r.stderr, want);
      assert.equal(r.stderr.trim().split('\n').length, 1, r.stderr);
    }
  });

  test('icon names are the .svg file names; other and hidden files are skipped; never a throw (property)', () => {
    const plain = fc.string({ minLength: 1, maxLength: 40 }).filter((s) => !s.startsWith('.') && !/[\u0000-\u001f\u007f]/.test(s));
    fc.assert(fc.property(plain, (name) => {
      assert.deepEqual(iconName(`${name}.svg`), { ok: true, name });
    }));
    fc.assert(fc.property(fc.string({ maxLength: 40 }), (file) => {
      const r = iconName(file);
      if (!/\.svg$/i.test(file) || file.startsWith('.')) assert.deepEqual(r, { ok: 'skip' });
      else if (r.ok === true) assert.equal(r.name + file.slice(-4), file);
      else assert.equal(r.ok, false);
    }));
  });
});
