// Font glyphs over HTTP: the font list, fallback stacks, an empty PBF for a missing range of a known font,
// 404 for an unknown stack, 400 for a malformed range or font name, URL-encoded names, and no path out of the
// fonts directory. Property tests pin the fontstack/range parser.
import assert from 'node:assert/strict';
import { mkdirSync, mkdtempSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { gzipSync } from 'node:zlib';
import { after, before, describe, test } from 'node:test';
import fc from './helpers/fast-check.js';
import { PbfReader } from 'pbf';
import { MAX_RANGE_START, parseFontstack, parseRange } from '../src/styles/fonts.js';
import { rawGet } from './helpers/raw-http.js';
import { fixture, startServer, type TestServer } from './helpers/server.js';

const SECRET = Buffer.from('SECRET-OUTSIDE-THE-FONTS-DIRECTORY');
const tmp = mkdtempSync(path.join(os.tmpdir(), 'tsts-fonts-'));
const FONTS = path.join(tmp, 'fonts');
mkdirSync(FONTS);
for (const name of ['Noto Sans Regular', 'Noto Sans Italic', 'Open Sans Semibold']) symlinkSync(fixture('fonts', name), path.join(FONTS, name));
const regular = (range: string) => readFileSync(fixture('fonts/Noto Sans Regular', `${range}.pbf`));
const italic = (range: string) => readFileSync(fixture('fonts/Noto Sans Italic', `${range}.pbf`));
mkdirSync(path.join(FONTS, 'Ünïcode Sans'));
writeFileSync(path.join(FONTS, 'Ünïcode Sans', '0-255.pbf'), readFileSync(fixture('fonts/Open Sans Semibold/0-255.pbf')));
mkdirSync(path.join(FONTS, 'Gz Sans'));
writeFileSync(path.join(FONTS, 'Gz Sans', '0-255.pbf'), gzipSync(regular('0-255')));
mkdirSync(path.join(FONTS, '.hidden'));
writeFileSync(path.join(FONTS, '.hidden', '0-255.pbf'), SECRET);
mkdirSync(path.join(FONTS, 'notes'));
writeFileSync(path.join(FONTS, 'notes', 'README.txt'), 'not a font');
// Beside the fonts directory: what a traversal would be after.
mkdirSync(path.join(tmp, 'secret'));
writeFileSync(path.join(tmp, 'secret', '0-255.pbf'), SECRET);

const KNOWN = ['Gz Sans', 'Noto Sans Italic', 'Noto Sans Regular', 'Open Sans Semibold', 'Ünïcode Sans'];

let server: TestServer;
let bare: TestServer;
before(async () => {
  server = await startServer({ toml: `fonts = "${FONTS}"\n` });
  bare = await startServer({ toml: `[server]\ncors_origins = ["*"]\n` });
});
after(async () => {
  await server?.stop();
  await bare?.stop();
});

const glyphs = (stack: string, range: string) => fetch(`${server.url}/fonts/${encodeURIComponent(stack)}/${range}.pbf`);

async function okBytes(res: Response): Promise<Buffer> {
  assert.equal(res.status, 200, res.url);
  assert.equal(res.headers.get('content-type'), 'application/x-protobuf');
  return Buffer.from(await res.arrayBuffer());
}

async function assertProblem(res: Response, status: number): Promise<{ detail: string }> {
  assert.equal(res.status, status, res.url);
  assert.equal(res.headers.get('content-type'), 'application/problem+json');
  return (await res.json()) as { detail: string };
}

/** Decodes a glyphs PBF: its fontstack entries with name, range and number of glyphs. */
function decodeGlyphs(bytes: Uint8Array): { name: string; range: string; glyphs: number }[] {
  const stacks: { name: string; range: string; glyphs: number }[] = [];
  new PbfReader(bytes).readFields((tag, _res, pbf) => {
    if (tag !== 1) return;
    const s = { name: '', range: '', glyphs: 0 };
    pbf.readFields((t, _r, p) => {
      if (t === 1) s.name = p.readString();
      else if (t === 2) s.range = p.readString();
      else if (t === 3) {
        s.glyphs++;
        p.skip(2);
      }
    }, null, pbf.readVarint() + pbf.pos);
    stacks.push(s);
  }, null);
  return stacks;
}

describe('fonts over HTTP', () => {
  test('/fonts.json lists the folders that hold glyph ranges, sorted; hidden and non-font folders are not fonts', async () => {
    assert.deepEqual(await (await fetch(`${server.url}/fonts.json`)).json(), KNOWN);
    assert.deepEqual(await (await fetch(`${bare.url}/fonts.json`)).json(), [], 'no fonts directory, no fonts');
  });

  test('one font: the range file as stored', async () => {
    assert.deepEqual(await okBytes(await glyphs('Noto Sans Regular', '0-255')), regular('0-255'));
    assert.deepEqual(await okBytes(await glyphs('Noto Sans Regular', '65280-65535')), regular('65280-65535'));
  });

  test('fallback: the first font of the stack that exists and has the range is used', async () => {
    assert.deepEqual(await okBytes(await glyphs('Missing Font,Noto Sans Regular', '0-255')), regular('0-255'));
    assert.deepEqual(await okBytes(await glyphs('Noto Sans Italic,Noto Sans Regular', '0-255')), italic('0-255'));
    // Italic has only 0-255 here: the next font of the stack fills the range in.
    assert.deepEqual(await okBytes(await glyphs('Noto Sans Italic,Noto Sans Regular', '256-511')), regular('256-511'));
  });

  test('a known font without the range: 200 with an empty glyphs PBF for that range', async () => {
    const bytes = await okBytes(await glyphs('Noto Sans Italic', '512-767'));
    assert.deepEqual(decodeGlyphs(bytes), [{ name: 'Noto Sans Italic', range: '512-767', glyphs: 0 }]);
    const real = decodeGlyphs(regular('0-255'));
    assert.ok(real[0].glyphs > 90, 'the decoder does count glyphs of a real range');
  });

  test('no font of the stack exists: 404 naming the stack', async () => {
    const body = await assertProblem(await glyphs('Nope Sans,Also Nope', '0-255'), 404);
    assert.match(body.detail, /Nope Sans,Also Nope/);
    await assertProblem(await fetch(`${bare.url}/fonts/Noto%20Sans%20Regular/0-255.pbf`), 404);
  });

  test('malformed ranges: 400', async () => {
    for (const range of ['0-256', '1-256', '256-0', '0-254', 'abc', '65536-65791', '00-255', '0x0-255', '0-255-511', '-256-0', '256']) {
      const body = await assertProblem(await glyphs('Noto Sans Regular', range), 400);
      assert.ok(body.detail.includes(range), body.detail);
    }
  });

  test('URL-encoded names with spaces, commas and non-ASCII letters', async () => {
    assert.deepEqual(await okBytes(await fetch(`${server.url}/fonts/%C3%9Cn%C3%AFcode%20Sans/0-255.pbf`)), readFileSync(fixture('fonts/Open Sans Semibold/0-255.pbf')));
    assert.deepEqual(await okBytes(await fetch(`${server.url}/fonts/Nope%2C%20Noto%20Sans%20Regular/0-255.pbf`)), regular('0-255'));
    assert.deepEqual(await okBytes(await fetch(`${server.url}/fonts/Nope,Noto%20Sans%20Regular/0-255.pbf`)), regular('0-255'));
  });

  test('a range stored gzipped is served as the plain protobuf', async () => {
    assert.deepEqual(await okBytes(await glyphs('Gz Sans', '0-255')), regular('0-255'));
  });

  test('path traversal in font names or ranges never reaches a file outside the fonts directory', async () => {
    const attempts = [
      '/fonts/..%2Fsecret/0-255.pbf',
      '/fonts/%2E%2E%2Fsecret/0-255.pbf',
      '/fonts/%2E%2E/0-255.pbf',
      '/fonts/..%5Csecret/0-255.pbf',
      '/fonts/.hidden/0-255.pbf',
      '/fonts/Noto%20Sans%20Regular,..%2F..%2Fsecret/0-255.pbf',
      '/fonts/Noto%20Sans%20Regular/..%2F..%2Fsecret%2F0-255.pbf',
      '/fonts/%00/0-255.pbf',
      '/fonts/../secret/0-255.pbf',
      '/fonts/..%2F..%2F..%2F..%2F..%2Fetc%2Fpasswd/0-255.pbf',
      `/fonts/${encodeURIComponent(path.join(tmp, 'secret'))}/0-255.pbf`,
    ];
    for (const p of attempts) {
      const res = await rawGet(server.url, p);
      assert.ok(res.status === 400 || res.status === 404, `${p}: ${res.status}`);
      assert.equal(res.headers['content-type'], 'application/problem+json', p);
      assert.ok(!res.body.includes(SECRET) && !res.body.includes('root:'), p);
    }
  });

  test('arbitrary font stacks never fail the server: 200 only for a stack naming a known font', async () => {
    const seen: Record<number, number> = { 200: 0, 400: 0, 404: 0 };
    await fc.assert(
      fc.asyncProperty(fc.array(fc.oneof(fc.constantFrom(...KNOWN, '..', '.', '/', 'a/b'), fc.string({ minLength: 1, maxLength: 12, unit: 'grapheme' })), { minLength: 1, maxLength: 3 }), async (names) => {
        const stack = names.join(',');
        const res = await glyphs(stack, '0-255');
        await res.arrayBuffer();
        assert.ok([200, 400, 404].includes(res.status), `${JSON.stringify(stack)}: ${res.status}`);
        seen[res.status]++;
        // 200 exactly when some name of the stack is a known font and no name is malformed (a name that could
        // leave the directory is refused whatever else the stack holds).
        const parts = stack.split(',').map((n) => n.trim()).filter((n) => n !== '');
        const malformed = parts.some((n) => n === '.' || n === '..' || /[/\\\u0000-\u001f\u007f]/.test(n) || n.startsWith('.') || n.length > 255);
        if (res.status === 200) assert.ok(!malformed && parts.some((n) => KNOWN.includes(n)), JSON.stringify(stack));
        if (!malformed && parts.some((n) => KNOWN.includes(n))) assert.equal(res.status, 200, JSON.stringify(stack));
      }),
      { numRuns: 60 },
    );
    // Known fonts are drawn often enough that each answer was seen.
    for (const [status, n] of Object.entries(seen)) assert.ok(n >= 3, `${status}: ${n} of 60 stacks (${JSON.stringify(seen)})`);
  });
});

describe('fontstack and range parser (properties)', () => {
  test('every aligned range N-(N+255) parses, and nothing else does', () => {
    fc.assert(
      fc.property(fc.integer({ min: 0, max: MAX_RANGE_START / 256 }), (k) => {
        assert.deepEqual(parseRange(`${k * 256}-${k * 256 + 255}`), { start: k * 256, end: k * 256 + 255 });
      }),
    );
    fc.assert(
      fc.property(fc.integer({ min: -1000, max: 70000 }), fc.integer({ min: -1000, max: 70000 }), (a, b) => {
        const valid = a >= 0 && a <= MAX_RANGE_START && a % 256 === 0 && b === a + 255;
        assert.equal(parseRange(`${a}-${b}`) !== undefined, valid, `${a}-${b}`);
      }),
    );
    // Any string: accepted exactly when it is the canonical spelling of an aligned range (read here with a plain
    // split and Number, not the parser's pattern). Valid ranges and one-character changes of them are generated
    // on purpose, since random strings from these characters are almost never a range; both branches are counted.
    const aligned = fc.integer({ min: 0, max: MAX_RANGE_START / 256 }).map((k) => `${k * 256}-${k * 256 + 255}`);
    const changed = fc.tuple(aligned, fc.nat(), fc.constantFrom(...'0123456789-+ x.e'.split(''), ''), fc.boolean()).map(([t, at, c, insert]) => {
      const i = at % (t.length + 1);
      return t.slice(0, i) + c + t.slice(insert ? i : i + 1);
    });
    const anyText = fc.string({ maxLength: 14, unit: fc.constantFrom(...'0123456789-+ x.e'.split('')) });
    const seen = { accepted: 0, refused: 0 };
    fc.assert(
      fc.property(fc.oneof(aligned, changed, anyText), (s) => {
        const r = parseRange(s);
        const halves = s.split('-');
        const canonical = halves.length === 2 && halves.every((h) => /^[0-9]+$/.test(h) && String(Number(h)) === h);
        const [a, b] = halves.map(Number);
        const expected = canonical && a % 256 === 0 && a <= MAX_RANGE_START && b === a + 255;
        assert.equal(r !== undefined, expected, JSON.stringify(s));
        if (r) assert.equal(`${r.start}-${r.end}`, s);
        seen[r ? 'accepted' : 'refused']++;
      }),
      { numRuns: 2000 },
    );
    assert.ok(seen.accepted >= 300 && seen.refused >= 300, JSON.stringify(seen));
  });

  const fontName = fc
    .string({ minLength: 1, maxLength: 20 })
    .map((s) => s.trim())
    .filter((s) => s !== '' && !/[,/\\\u0000-\u001f\u007f]/.test(s) && !s.startsWith('.'));

  test('a stack of plain names joined by commas parses back to those names, in order, without duplicates', () => {
    fc.assert(
      fc.property(fc.array(fontName, { minLength: 1, maxLength: 5 }), fc.constantFrom(',', ', ', ' , '), (names, sep) => {
        const parsed = parseFontstack(names.join(sep));
        assert.ok(parsed.ok);
        assert.deepEqual(parsed.fonts, [...new Set(names)]);
      }),
    );
  });

  test('a stack with any name that could leave the directory is rejected', () => {
    const escaping = fc.oneof(
      fc.constantFrom('..', '.'),
      fc.tuple(fontName, fc.constantFrom('/', '\\'), fontName).map(([a, s, b]) => `${a}${s}${b}`),
      fontName.map((n) => `../${n}`),
      fontName.map((n) => `${n}\u0000`),
    );
    fc.assert(
      fc.property(fc.array(fontName, { maxLength: 3 }), escaping, fc.array(fontName, { maxLength: 3 }), (before, bad, after) => {
        const parsed = parseFontstack([...before, bad, ...after].join(','));
        assert.equal(parsed.ok, false, JSON.stringify(bad));
      }),
    );
  });
});
