// Glyphs from font files, through the real server: a fonts directory holding Noto Sans Regular as a .ttf (from
// Debian's fonts-noto-core, fixtures/font-files) beside PBF folders. The generated ranges match the pre-built
// PBFs of the same font (metrics, and SDF bytes compared where MapLibre places them); a real render (Chromium)
// of a line of text draws the same pixels, within a tolerance, from the TTF as from the PBFs; a stack mixing a TTF and a PBF font falls back per
// range; /fonts.json lists the name the file declares. An .otf with CFF outlines (FreeSans Bold, Debian's
// fonts-freefont-otf) gives glyphs whose advances and boxes are the font's own, as fontkit reads them. The name
// derivation is property-tested.
import assert from 'node:assert/strict';
import { copyFileSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { gunzipSync } from 'node:zlib';
import { PbfReader } from 'pbf';
import pixelmatch from 'pixelmatch';
import * as fontkit from 'fontkit';
import { collectionFace } from '../src/styles/font-files/collection-face.js';
import { declaredFontName } from '../src/styles/font-files/scan.js';
import { parseFontstack } from '../src/styles/fonts.js';
import fc from './helpers/fast-check.js';
import { fontCollection } from './helpers/font-collection.js';
import { tempDir } from './helpers/foundation.js';
import { decode, type Decoded } from './helpers/render.js';
import { fixture, startServer, type TestServer } from './helpers/server.js';

const TTF = fixture('font-files/NotoSans-Regular.ttf');
const PBF_DIR = fixture('fonts/Noto Sans Regular');
const ITALIC_DIR = fixture('fonts/Noto Sans Italic');
// An OpenType font with CFF (PostScript) outlines, where a .ttf has TrueType (quadratic) ones.
const OTF = fixture('font-files/FreeSansBold.otf');

const dir = tempDir('tsts-font-files-');
const fonts = path.join(dir, 'fonts');
mkdirSync(fonts);
copyFileSync(TTF, path.join(fonts, 'NotoSans-Regular.ttf'));
copyFileSync(OTF, path.join(fonts, 'FreeSansBold.otf'));
// The pre-built PBFs of the same font under another name, so that both can be asked for side by side.
symlinkSync(PBF_DIR, path.join(fonts, 'Noto Sans Regular PBF'));
symlinkSync(ITALIC_DIR, path.join(fonts, 'Noto Sans Italic'));
writeFileSync(path.join(fonts, 'broken.ttf'), 'not a font');
// A collection of two fonts made from the TTF: the first as it is, the second with its em halved (drawn twice as
// large), each under a name of its own.
writeFileSync(path.join(fonts, 'twins.ttc'), fontCollection(readFileSync(TTF), [
  { family: 'Noto Twin', style: 'Small' },
  { family: 'Noto Twin', style: 'Large', unitsPerEm: 500 },
]));

const TEXT = 'Hamburg Ag 1984';
const textStyle = (name: string, font: string) => {
  const file = path.join(dir, `${name}.json`);
  writeFileSync(file, JSON.stringify({
    version: 8,
    name,
    center: [0, 0],
    zoom: 2,
    glyphs: 'https://fonts.example.org/{fontstack}/{range}.pbf',
    sources: { p: { type: 'geojson', data: { type: 'Feature', properties: {}, geometry: { type: 'Point', coordinates: [0, 0] } } } },
    layers: [
      { id: 'bg', type: 'background', paint: { 'background-color': '#ffffff' } },
      { id: 'label', type: 'symbol', source: 'p', layout: { 'text-field': TEXT, 'text-font': [font], 'text-size': 24, 'text-allow-overlap': true }, paint: { 'text-color': '#000000' } },
    ],
  }));
  return file;
};

let server: TestServer;
before(async () => {
  server = await startServer({
    toml: `fonts = "${fonts}"\n[render]\npool_size = 1\n[[styles]]\nid = "ttf"\npath = "${textStyle('ttf', 'Noto Sans Regular')}"\n[[styles]]\nid = "pbf"\npath = "${textStyle('pbf', 'Noto Sans Regular PBF')}"\n`,
    timeoutMs: 60_000,
  });
});
after(() => server?.stop());

async function get(p: string): Promise<{ status: number; type: string | null; body: Buffer }> {
  const res = await fetch(server.url + p, { signal: AbortSignal.timeout(60_000) });
  return { status: res.status, type: res.headers.get('content-type'), body: Buffer.from(await res.arrayBuffer()) };
}
const glyphs = (stack: string, range: string) => get(`/fonts/${encodeURIComponent(stack)}/${range}.pbf`);
const plain = (b: Buffer) => (b[0] === 0x1f && b[1] === 0x8b ? gunzipSync(b) : b);

interface Glyph {
  id: number;
  bitmap?: Uint8Array;
  width: number;
  height: number;
  left: number;
  top: number;
  advance: number;
}
/** The glyphs of a glyphs PBF (fontstack 1, glyph 3 and its fields 1-7). */
function readGlyphs(bytes: Uint8Array): { name: string; range: string; glyphs: Glyph[] } {
  const out = { name: '', range: '', glyphs: [] as Glyph[] };
  new PbfReader(bytes).readFields((tag, o, p) => {
    if (tag !== 1) return;
    p.readMessage((t, _, q) => {
      if (t === 1) o.name = q.readString();
      else if (t === 2) o.range = q.readString();
      else if (t === 3) {
        const g = q.readMessage((f, gl: Glyph, r) => {
          if (f === 1) gl.id = r.readVarint();
          else if (f === 2) gl.bitmap = r.readBytes();
          else if (f === 3) gl.width = r.readVarint();
          else if (f === 4) gl.height = r.readVarint();
          else if (f === 5) gl.left = r.readSVarint();
          else if (f === 6) gl.top = r.readSVarint();
          else if (f === 7) gl.advance = r.readVarint();
        }, { id: 0, width: 0, height: 0, left: 0, top: 0, advance: 0 } as Glyph);
        o.glyphs.push(g);
      }
    }, null);
  }, out);
  return out;
}

/**
 * The SDF byte of a glyph's bitmap at pixel (x, y) of the glyph's layout, placed as MapLibre places it: the box's
 * corner at (left, -top), the 3 px buffer around it; 0 outside the bitmap.
 */
function sdfAt(g: Glyph, x: number, y: number): number {
  const i = x - g.left + 3;
  const j = y + g.top + 3;
  const w = g.width + 6;
  if (!g.bitmap || i < 0 || j < 0 || i >= w || j >= g.height + 6) return 0;
  return g.bitmap[j * w + i];
}

describe('glyphs generated from a TTF', () => {
  test('/fonts.json lists the name the font file declares beside the PBF folders; a broken file is left out', async () => {
    const r = await get('/fonts.json');
    assert.equal(r.status, 200);
    assert.deepEqual(JSON.parse(r.body.toString()), ['FreeSans Bold', 'Noto Sans Italic', 'Noto Sans Regular', 'Noto Sans Regular PBF', 'Noto Twin Large', 'Noto Twin Small']);
  });

  test('an .otf with CFF outlines gives glyphs of its own metrics: advances and boxes as the font declares them, at 24 px', async () => {
    const font = fontkit.openSync(OTF) as fontkit.Font;
    // 'OTTO': the sfnt version of an OpenType font with CFF outlines (TrueType outlines have 0x00010000).
    assert.equal(readFileSync(OTF).subarray(0, 4).toString('latin1'), 'OTTO', 'the fixture has CFF outlines');
    const r = await glyphs('FreeSans Bold', '0-255');
    assert.equal(r.status, 200, r.body.toString().slice(0, 300));
    const got = readGlyphs(plain(r.body));
    assert.deepEqual([got.name, got.range], ['FreeSans Bold', '0-255']);
    assert.ok(got.glyphs.length > 150, `${got.glyphs.length} glyphs in 0-255`);
    const px = 24 / font.unitsPerEm;
    for (const ch of 'AHMWgjl1%') {
      const g = got.glyphs.find((x) => x.id === ch.codePointAt(0));
      assert.ok(g, `${ch} is in the range`);
      const ref = font.glyphForCodePoint(ch.codePointAt(0)!);
      const box = ref.bbox;
      // The font's own advance, scaled to 24 px (rounded either way).
      assert.ok(Math.abs(g.advance - ref.advanceWidth * px) <= 1, `${ch}: advance ${g.advance}, the font says ${(ref.advanceWidth * px).toFixed(2)}`);
      // The ink box in whole pixels covering the outline: within 2 px of the outline's own box.
      assert.ok(Math.abs(g.width - (box.maxX - box.minX) * px) <= 2, `${ch}: width ${g.width}, outline ${((box.maxX - box.minX) * px).toFixed(2)}`);
      assert.ok(Math.abs(g.height - (box.maxY - box.minY) * px) <= 2, `${ch}: height ${g.height}, outline ${((box.maxY - box.minY) * px).toFixed(2)}`);
      assert.ok(Math.abs(g.left - box.minX * px) <= 2, `${ch}: left ${g.left}, outline ${(box.minX * px).toFixed(2)}`);
      // The bitmap is the box with its 3 px buffer, and it has ink: SDF values inside the outline (above the 192 edge).
      assert.equal(g.bitmap?.length, (g.width + 6) * (g.height + 6), `${ch}: bitmap size`);
      assert.ok(g.bitmap!.some((v) => v > 192), `${ch}: the bitmap has inside pixels`);
      assert.ok(g.bitmap!.some((v) => v < 64), `${ch}: the bitmap has outside pixels`);
    }
  });

  test('a generated range has the metrics and SDF bitmaps of the pre-built PBF of the same font', async () => {
    for (const range of ['0-255', '256-511']) {
      const r = await glyphs('Noto Sans Regular', range);
      assert.equal(r.status, 200);
      assert.equal(r.type, 'application/x-protobuf');
      const mine = readGlyphs(plain(r.body));
      assert.deepEqual([mine.name, mine.range], ['Noto Sans Regular', range]);
      const ref = readGlyphs(plain(readFileSync(path.join(PBF_DIR, `${range}.pbf`))));
      let compared = 0;
      let closeBox = 0;
      let sameAdvance = 0;
      let diff = 0;
      let pixels = 0;
      for (const g of ref.glyphs) {
        const m = mine.glyphs.find((x) => x.id === g.id);
        if (!m || (g.width === 0 && m.width === 0)) continue;
        compared++;
        if (m.advance === g.advance) sameAdvance++;
        if (['width', 'height', 'left', 'top'].every((k) => Math.abs(m[k as keyof Glyph] as number - (g[k as keyof Glyph] as number)) <= 2)) closeBox++;
        // The two bitmaps laid where MapLibre lays them (by left and top), compared pixel by pixel over both.
        for (let y = Math.min(-g.top, -m.top) - 3; y < Math.max(g.height - g.top, m.height - m.top) + 3; y++) {
          for (let x = Math.min(g.left, m.left) - 3; x < Math.max(g.left + g.width, m.left + m.width) + 3; x++) {
            diff += Math.abs(sdfAt(g, x, y) - sdfAt(m, x, y));
            pixels++;
          }
        }
      }
      assert.ok(compared > 100, `${range}: ${compared} glyphs compared`);
      // tiny-sdf boxes the ink in whole pixels that cover all of it (floor and ceiling) where the font tools round,
      // so boxes are often a pixel, now and then two, larger (measured: 188 of 189 in 0-255 within 2 px).
      assert.ok(closeBox / compared > 0.95, `${range}: ${closeBox} of ${compared} glyphs have their box within 2 px`);
      assert.ok(sameAdvance / compared > 0.95, `${range}: ${sameAdvance} of ${compared} glyphs have the same advance`);
      // Measured about 11 (of 255): tiny-sdf's gamma-corrected coverage draws strokes a little bolder. One pixel of
      // misplacement (top or left off by 1) makes it 21 or more.
      assert.ok(diff / pixels < 15, `${range}: the SDF bytes differ by ${(diff / pixels).toFixed(2)} on average (of 255)`);
    }
  });

  test('a render of a line of text from the TTF draws what the PBFs of the same font draw', { timeout: 150_000 }, async () => {
    const shots: Decoded[] = [];
    for (const style of ['ttf', 'pbf']) {
      const r = await get(`/styles/${style}/static/0,0,2/400x120.png`);
      assert.equal(r.status, 200, r.body.toString().slice(0, 300));
      shots.push(await decode(r.body));
    }
    const [ttf, pbf] = shots;
    const dark = (img: Decoded) => {
      let n = 0;
      for (let i = 0; i < img.data.length; i += 4) if (img.data[i] < 128) n++;
      return n;
    };
    assert.ok(dark(pbf) > 800, `the PBF render shows the text (${dark(pbf)} dark pixels)`);
    const differing = pixelmatch(ttf.data, pbf.data, undefined, ttf.width, ttf.height, { threshold: 0.2 });
    assert.ok(differing < dark(pbf) * 0.1, `${differing} pixels differ, against ${dark(pbf)} pixels of text`);
  });

  test('each font of a collection (.ttc) is drawn from its own tables', async () => {
    const ttf = readGlyphs(plain((await glyphs('Noto Sans Regular', '0-255')).body)).glyphs;
    const small = readGlyphs(plain((await glyphs('Noto Twin Small', '0-255')).body));
    const large = readGlyphs(plain((await glyphs('Noto Twin Large', '0-255')).body));
    assert.deepEqual([small.name, large.name], ['Noto Twin Small', 'Noto Twin Large']);
    // The first font is the TTF under another name: the same glyphs, bitmaps included.
    assert.deepEqual(small.glyphs, ttf);
    // The second is drawn at twice the size: its own em, not the first font's.
    for (const ch of 'Hg') {
      const one = ttf.find((g) => g.id === ch.codePointAt(0))!;
      const two = large.glyphs.find((g) => g.id === ch.codePointAt(0))!;
      assert.ok(Math.abs(two.advance - 2 * one.advance) <= 1, `${ch}: advance ${two.advance}, twice ${one.advance}`);
      assert.ok(Math.abs(two.height - 2 * one.height) <= 2, `${ch}: height ${two.height}, twice ${one.height}`);
    }
  });

  test('a stack mixing a TTF and a PBF font falls back per glyph range', async () => {
    const italic0 = plain(readFileSync(path.join(ITALIC_DIR, '0-255.pbf')));
    const regular0 = (await glyphs('Noto Sans Regular', '0-255')).body;
    const regular1 = (await glyphs('Noto Sans Regular', '256-511')).body;
    // PBF first: the italic has 0-255 only; the TTF fills 256-511.
    assert.deepEqual(plain((await glyphs('Noto Sans Italic,Noto Sans Regular', '0-255')).body), italic0);
    assert.deepEqual((await glyphs('Noto Sans Italic,Noto Sans Regular', '256-511')).body, regular1);
    // TTF first: it has 0-255 itself.
    assert.deepEqual((await glyphs('Noto Sans Regular,Noto Sans Italic', '0-255')).body, regular0);
    assert.notDeepEqual(regular0, italic0);
    // A range no font of the stack has: an empty glyphs PBF, not an error.
    const none = await glyphs('Noto Sans Regular,Noto Sans Italic', '57344-57599');
    assert.equal(none.status, 200);
    assert.equal(readGlyphs(plain(none.body)).glyphs.length, 0);
    assert.equal((await glyphs('No Such Font', '0-255')).status, 404);
  });
});

describe('font names of font files', () => {
  test('family and style joined, white space collapsed; always a valid font stack member or nothing (property)', () => {
    assert.equal(declaredFontName('Noto Sans', 'Regular'), 'Noto Sans Regular');
    assert.equal(declaredFontName(' Open  Sans', 'Semibold '), 'Open Sans Semibold');
    assert.equal(declaredFontName('a/b', 'Regular'), undefined);
    assert.equal(declaredFontName('Sans, Serif', 'Regular'), undefined);
    fc.assert(fc.property(fc.option(fc.string({ maxLength: 300 })), fc.option(fc.string({ maxLength: 40 })), (family, style) => {
      const name = declaredFontName(family ?? undefined, style ?? undefined);
      if (name === undefined) return;
      assert.equal(name, name.trim());
      assert.ok(!/\s\s/.test(name));
      // A style names it in a text-font stack: the stack parser must take it back as exactly one font.
      assert.deepEqual(parseFontstack(name), { ok: true, fonts: [name] });
    }));
  });
});

describe('fonts cut out of a collection', () => {
  test('each font comes out as a single font file that declares its own name; any other bytes give an error, never a hang (property)', () => {
    const ttc = fontCollection(readFileSync(TTF), [{ family: 'A', style: 'One' }, { family: 'B', style: 'Two', unitsPerEm: 500 }]);
    const fonts = [0, 1].map((i) => fontkit.create(collectionFace(ttc, i)) as fontkit.Font);
    assert.deepEqual(fonts.map((f) => [f.familyName, f.subfamilyName, f.unitsPerEm]), [['A', 'One', 1000], ['B', 'Two', 500]]);
    assert.throws(() => collectionFace(ttc, 2), /no font 2/);
    // A collection's header, then anything: cut out or refused with an Error.
    const header = Buffer.from([0x74, 0x74, 0x63, 0x66, 0, 1, 0, 0]);
    fc.assert(fc.property(fc.uint8Array({ maxLength: 400 }), fc.nat(3), (rest, index) => {
      try {
        assert.ok(collectionFace(Buffer.concat([header, rest]), index) instanceof Buffer);
      } catch (err) {
        assert.ok(err instanceof Error);
      }
    }));
  });
});
