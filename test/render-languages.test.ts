// Labels in the reader's language and image formats, through one real server rendering in headless Chromium over
// the OpenMapTiles fixture tiles (which carry name:ar, name:he, name:hi, name:th, name:zh among their names):
// style.json rewritten per language and still valid by the style spec's own validator; the per-style settings
// (offered languages, default, Accept-Language, off) and their 400s; one small render per script compared with a
// golden image (Arabic, Hebrew, Devanagari, Thai, CJK); AVIF, WebP, JPEG and PNG decoded with sharp, quality and
// lossless, `auto` negotiated from Accept, and the caches keeping every variant apart.
// Goldens: `make goldens` (UPDATE_GOLDENS=1) rewrites test/goldens/render/lang-*.png from this machine's renders.
import assert from 'node:assert/strict';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import pixelmatch from 'pixelmatch';
import sharp from 'sharp';
import { validateStyleMin, type StyleSpecification } from '@maplibre/maplibre-gl-style-spec';
import { waitFor } from './helpers/foundation.js';
import { buildOmtArchive, decode, fetchBytes, golden, renderTempDir, renderToml } from './helpers/render.js';
import { fixture, startServer, type TestServer } from './helpers/server.js';

let server: TestServer;
const get = (p: string, headers: Record<string, string> = {}) => fetchBytes(server.url + p, headers);

async function problem(p: string, parameter: string, headers: Record<string, string> = {}): Promise<string> {
  const r = await get(p, headers);
  assert.equal(r.status, 400, `${p}: ${r.body.toString().slice(0, 300)}`);
  assert.equal(r.headers.get('content-type'), 'application/problem+json');
  const body = JSON.parse(r.body.toString()) as { parameter: string; detail: string };
  assert.equal(body.parameter, parameter, p);
  return body.detail;
}

const textFields = (style: StyleSpecification) =>
  style.layers.filter((l) => l.type === 'symbol' && (l.layout as Record<string, unknown> | undefined)?.['text-field'] !== undefined).map((l) => [l.id, (l.layout as Record<string, unknown>)['text-field']] as const);

/** Share of pixels that differ between two decoded images of one size. */
async function differing(a: Buffer, b: Buffer): Promise<number> {
  const [x, y] = [await decode(a), await decode(b)];
  assert.deepEqual([x.width, x.height], [y.width, y.height]);
  return pixelmatch(x.data, y.data, undefined, x.width, x.height, { threshold: 0.1 }) / (x.width * x.height);
}

describe("labels in the reader's language, and image formats (headless Chromium)", () => {
  before(async () => {
    const dir = renderTempDir();
    const archive = await buildOmtArchive(dir);
    const liberty = fixture('styles/osm-liberty/style.json');
    const extra = `
[[styles]]
id = "liberty-choice"
path = "${liberty}"
languages = ["de", "en", "ar"]
default_language = "en"
accept_language = true
[[styles]]
id = "liberty-off"
path = "${liberty}"
languages = []
`;
    // One renderer, one tile per frame: few, small renders.
    const toml = renderToml(archive, path.join(dir, 'cache'), 'pool_size = 1\nmetatile = 1').replace('[cache]', `${extra}\n[cache]`);
    server = await startServer({ toml, workers: 1 });
    await waitFor('renderer', async () => ((await (await fetch(`${server.url}/ping`)).json()) as { renderer_enabled: boolean }).renderer_enabled || undefined, 90_000);
  });
  after(async () => {
    await server?.stop();
  });

  test('style.json?lang rewrites every name reading into a coalesce, leaves {ref} alone, and stays a valid style', async () => {
    const plain = JSON.parse((await get('/styles/osm-liberty/style.json')).body.toString()) as StyleSpecification;
    const before = new Map(textFields(plain));
    assert.equal(before.get('road_shield'), '{ref}');
    for (const lang of ['ar', 'he', 'hi', 'th', 'zh-Hant', 'de-CH', 'sr-Latn']) {
      const r = await get(`/styles/osm-liberty/style.json?lang=${lang}`);
      assert.equal(r.status, 200);
      assert.equal(r.headers.get('content-language'), lang);
      const style = JSON.parse(r.body.toString()) as StyleSpecification;
      const errors = validateStyleMin(style).filter((e) => e.severity !== 'warning');
      assert.deepEqual(errors.map((e) => e.message), [], lang);
      for (const [id, field] of textFields(style)) {
        const was = before.get(id);
        if (was === '{ref}') assert.equal(field, '{ref}', id);
        else {
          // Every name label now prefers name:<lang>, and falls back to name.
          const f = field as unknown[];
          assert.equal(f[0], 'coalesce', `${id}: ${JSON.stringify(field)}`);
          assert.deepEqual(f[1], ['get', `name:${lang}`], id);
          assert.ok(f.some((g) => JSON.stringify(g) === '["get","name"]'), id);
          // Latin-script languages fall back to the romanised name first; others do not.
          assert.equal(f.some((g) => JSON.stringify(g) === '["get","name:latin"]'), ['de-CH', 'sr-Latn'].includes(lang), `${lang} ${id}`);
        }
      }
    }
    // zh-Hant-TW asks for name:zh-Hant-TW, then name:zh-Hant, then name:zh.
    const tw = JSON.parse((await get('/styles/osm-liberty/style.json?lang=zh-hant-tw')).body.toString()) as StyleSpecification;
    const field = textFields(tw).find(([id]) => id === 'country_1')![1] as unknown[];
    assert.deepEqual(field.slice(1, 4), [['get', 'name:zh-Hant-TW'], ['get', 'name:zh-Hant'], ['get', 'name:zh']]);
    assert.equal((await get('/styles/osm-liberty/style.json?lang=zh-hant-tw')).headers.get('content-language'), 'zh-Hant-TW');
  });

  test('lang that is not BCP 47, or not offered, or on a style with languages off: 400 naming lang', async () => {
    for (const bad of ['e', 'englishman', 'de_CH', 'x-private', 'de--CH', 'zh-Hant-Hans', '12']) {
      await problem(`/styles/osm-liberty/style.json?lang=${encodeURIComponent(bad)}`, 'lang');
    }
    assert.match(await problem('/styles/liberty-choice/style.json?lang=fr', 'lang'), /does not offer language "fr"; it offers de, en, ar/);
    assert.match(await problem('/styles/liberty-off/style.json?lang=de', 'lang'), /offers no languages/);
    assert.match(await problem('/styles/osm-liberty/256/1/0/0.png?lang=%20de', 'lang'), /not a BCP 47/);
    assert.match(await problem('/styles/liberty-off/static/0,0,1/64x64.png?lang=de', 'lang'), /offers no languages/);
    // A style with languages off and no lang asked is served as written, without Content-Language.
    const off = await get('/styles/liberty-off/style.json');
    assert.equal(off.status, 200);
    assert.equal(off.headers.get('content-language'), null);
  });

  test('a style that opts in follows Accept-Language (lookup: de-AT is served as de), else its default, and says Vary', async () => {
    const choose = async (headers: Record<string, string>, query = '') => {
      const r = await get(`/styles/liberty-choice/style.json${query}`, headers);
      assert.equal(r.status, 200);
      return { lang: r.headers.get('content-language'), vary: r.headers.get('vary') ?? '' };
    };
    assert.deepEqual(await choose({ 'accept-language': 'fr-FR, ar;q=0.8, de;q=0.5' }), { lang: 'ar', vary: 'Accept-Encoding, Accept-Language' });
    assert.deepEqual(await choose({ 'accept-language': 'de-AT' }), { lang: 'de', vary: 'Accept-Encoding, Accept-Language' });
    assert.deepEqual(await choose({ 'accept-language': 'fr, ja' }), { lang: 'en', vary: 'Accept-Encoding, Accept-Language' });
    assert.deepEqual(await choose({}), { lang: 'en', vary: 'Accept-Encoding, Accept-Language' });
    // lang wins over the header; a style that does not opt in ignores the header.
    assert.equal((await choose({ 'accept-language': 'ar' }, '?lang=de')).lang, 'de');
    const plain = await get('/styles/osm-liberty/style.json', { 'accept-language': 'ar' });
    assert.equal(plain.headers.get('content-language'), null);
    assert.equal(plain.headers.get('vary'), 'Accept-Encoding');
    // Rendered tiles follow the same choice: the Accept-Language render is the ?lang=ar render.
    const viaHeader = await get('/styles/liberty-choice/256/1/1/0.png', { 'accept-language': 'ar' });
    assert.equal(viaHeader.status, 200);
    assert.equal(viaHeader.headers.get('content-language'), 'ar');
    assert.match(viaHeader.headers.get('vary') ?? '', /Accept-Language/);
    const viaQuery = await get('/styles/liberty-choice/256/1/1/0.png?lang=ar');
    assert.equal(await differing(viaHeader.body, viaQuery.body), 0);
  });

  test('one small render per script draws the names of the tiles in it (goldens), each different from the others', async () => {
    // Zoom 1.5 views where the OpenMapTiles fixture has names in each script (continents, seas, countries).
    const views: Record<string, string> = { ar: '40,25,1.5', he: '40,25,1.5', hi: '80,20,1.5', th: '100,15,1.5', zh: '105,30,1.5' };
    const plain = new Map<string, Buffer>();
    for (const [lang, view] of Object.entries(views)) {
      if (!plain.has(view)) {
        const r = await get(`/styles/osm-liberty/static/${view}/256x256.png`);
        assert.equal(r.status, 200);
        plain.set(view, r.body);
      }
      const r = await get(`/styles/osm-liberty/static/${view}/256x256.png?lang=${lang}`);
      assert.equal(r.status, 200, r.body.toString().slice(0, 200));
      assert.equal(r.headers.get('content-language'), lang);
      // The labels changed: the localised map differs from the map as written in more than a few pixels.
      assert.ok((await differing(r.body, plain.get(view)!)) > 0.002, `${lang}: the labels did not change`);
      await golden(`lang-${lang}`, r.body);
    }
  });

  test('AVIF, WebP, JPEG and PNG tiles decode as what they say, at the size asked; quality changes the bytes', async () => {
    const tile = '/styles/osm-liberty/256/1/0/0';
    const formats: [string, string, string][] = [['png', 'image/png', 'png'], ['jpg', 'image/jpeg', 'jpeg'], ['webp', 'image/webp', 'webp'], ['avif', 'image/avif', 'heif']];
    const png = await get(`${tile}.png`);
    for (const [ext, type, decoded] of formats) {
      const r = await get(`${tile}.${ext}`);
      assert.equal(r.status, 200, `${ext}: ${r.body.toString().slice(0, 200)}`);
      assert.equal(r.headers.get('content-type'), type);
      const meta = await sharp(r.body).metadata();
      assert.equal(meta.format, decoded, ext);
      if (ext === 'avif') assert.equal(meta.compression, 'av1');
      assert.deepEqual([meta.width, meta.height], [256, 256], ext);
      // The same map: lossy formats stay close to the PNG's pixels.
      assert.ok((await differing(r.body, png.body)) < 0.05, `${ext} is not the same map`);
    }
    const low = await get(`${tile}.avif?quality=20`);
    const high = await get(`${tile}.avif?quality=90`);
    assert.equal(low.status, 200);
    assert.ok(low.body.length < high.body.length, `avif q20 ${low.body.length} B, q90 ${high.body.length} B`);
    const webpLow = await get(`${tile}.webp?quality=10`);
    const webpHigh = await get(`${tile}.webp?quality=95`);
    assert.ok(webpLow.body.length < webpHigh.body.length, `webp q10 ${webpLow.body.length} B, q95 ${webpHigh.body.length} B`);
    // Lossless WebP holds the PNG's pixels exactly.
    const lossless = await get(`${tile}.webp?lossless=true`);
    assert.equal(lossless.status, 200);
    assert.equal((await sharp(lossless.body).metadata()).format, 'webp');
    assert.deepEqual((await decode(lossless.body)).data, (await decode(png.body)).data);
  });

  test('each variant is its own cache entry: format, quality and language; the same request again comes from cache', async () => {
    const tile = '/styles/osm-liberty/256/1/1/1';
    const from = (r: { headers: Headers }) => r.headers.get('server-timing') ?? '';
    assert.doesNotMatch(from(await get(`${tile}.webp?quality=40`)), /cache;/);
    assert.match(from(await get(`${tile}.webp?quality=40`)), /cache;desc="memory"/);
    assert.doesNotMatch(from(await get(`${tile}.webp?quality=41`)), /cache;/);
    assert.doesNotMatch(from(await get(`${tile}.avif?quality=40`)), /cache;/);
    assert.doesNotMatch(from(await get(`${tile}.webp?quality=40&lang=ar`)), /cache;/);
    assert.match(from(await get(`${tile}.webp?lang=ar&quality=40`)), /cache;desc="memory"/);
    // The configured default quality (85) is the same image, and the same entry, as no quality at all.
    const plain = await get(`${tile}.webp`);
    const same = await get(`${tile}.webp?quality=85`);
    assert.equal(same.headers.get('etag'), plain.headers.get('etag'));
  });

  test('auto negotiates from Accept (Vary: Accept): WebP before AVIF on a tie, PNG without a header', async () => {
    const cases: [Record<string, string>, string][] = [
      [{ accept: 'image/avif,image/webp,image/apng,image/*,*/*;q=0.8' }, 'image/webp'],
      [{ accept: 'image/avif,image/png;q=0.5' }, 'image/avif'],
      [{ accept: 'image/webp;q=0.5, image/avif' }, 'image/avif'],
      [{ accept: 'image/jpeg' }, 'image/jpeg'],
      [{}, 'image/png'],
      [{ accept: 'text/html' }, 'image/png'],
      [{ accept: '*/*' }, 'image/png'],
    ];
    for (const [headers, type] of cases) {
      const r = await get('/styles/osm-liberty/256/1/0/0.auto', headers);
      assert.equal(r.status, 200);
      assert.equal(r.headers.get('content-type'), type, JSON.stringify(headers));
      assert.equal(r.headers.get('vary'), 'Accept');
    }
    // A format in the URL does not vary.
    assert.equal((await get('/styles/osm-liberty/256/1/0/0.png')).headers.get('vary'), null);
    const og = await get('/og/osm-liberty?center=20,0&zoom=1&width=200&height=100&format=auto&quality=50', { accept: 'image/avif' });
    assert.equal(og.headers.get('content-type'), 'image/avif');
    assert.deepEqual([(await sharp(og.body).metadata()).width, (await sharp(og.body).metadata()).height], [200, 100]);
  });

  test('static maps and social cards in AVIF with a quality; bad quality or lossless: 400 naming it', async () => {
    const map = await get('/styles/osm-liberty/static/0,20,1/300x200.avif?quality=60&marker=pin-s%2Bf00(0,20)');
    assert.equal(map.status, 200, map.body.toString().slice(0, 200));
    assert.equal(map.headers.get('content-type'), 'image/avif');
    const meta = await sharp(map.body).metadata();
    assert.deepEqual([meta.format, meta.width, meta.height], ['heif', 300, 200]);
    for (const q of ['0', '101', 'abc', '50.5', '']) {
      if (q === '') continue;
      assert.match(await problem(`/styles/osm-liberty/static/0,20,1/300x200.webp?quality=${q}`, 'quality'), /integer 1\.\.100/);
    }
    assert.match(await problem('/styles/osm-liberty/256/1/0/0.png?quality=50', 'quality'), /PNG is lossless/);
    assert.match(await problem('/og/osm-liberty?center=0,0&format=avif&quality=1000', 'quality'), /1\.\.100/);
    assert.match(await problem('/styles/osm-liberty/256/1/0/0.jpg?lossless=true', 'lossless'), /JPEG has no lossless/);
    assert.match(await problem('/styles/osm-liberty/256/1/0/0.webp?lossless=maybe', 'lossless'), /true or false/);
    assert.match(await problem('/styles/osm-liberty/256/1/0/0.gif', 'format'), /avif or auto/);
  });
});
