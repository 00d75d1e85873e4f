// Property-based tests of the `/embed/{style}` query parser (src/http/pages/embed-query.ts) and of the escaping
// every page relies on (src/http/pages/html.ts): whatever a client sends, the parser answers with checked options
// or names the parameter that was wrong, and never throws; no text or URL can become markup or policy.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import fc from './helpers/fast-check.js';
import { EMBED_CONTROLS, MAX_MARKERS, parseEmbedQuery, type EmbedQueryResult } from '../src/http/pages/embed-query.js';
import { escapeHtml, jsonForScript, styleOrigins } from '../src/http/pages/html.js';

const RUNS = { numRuns: 1000 };
const PARAMS = ['center', 'zoom', 'bearing', 'pitch', 'bounds', 'markers', 'controls', 'hash', 'interactive', 'theme'] as const;

const parse = (query: Record<string, string>): EmbedQueryResult => parseEmbedQuery((name) => (Object.hasOwn(query, name) ? query[name] : undefined));
const finite = fc.double({ noNaN: true, noDefaultInfinity: true });
const lat = fc.double({ min: -90, max: 90, noNaN: true });
const lng = fc.double({ min: -180, max: 180, noNaN: true });
/** The parser reads -0 as 0; every other finite number as itself. */
const same = (n: number) => (n === 0 ? 0 : n);
/** Spellings of values that are not finite numbers. */
const notANumber = fc.oneof(
  fc.constantFrom('NaN', 'nan', 'Infinity', '-Infinity', '+Infinity', 'inf', '', ' ', '0x10', '0b1', '1_0', '1e999', '-1e400', '1,5', '--1', '1e', 'e1', '.', '١'),
  fc.string().filter((s) => !/^\s*[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?\s*$/.test(s)),
);
const clampRef = (n: number, lo: number, hi: number) => (n < lo ? lo : n > hi ? hi : n);

test('zoom, bearing and pitch: any finite number is accepted and clamped to its range', () => {
  fc.assert(
    fc.property(finite, finite, finite, (z, b, p) => {
      const r = parse({ zoom: String(z), bearing: String(b), pitch: String(p) });
      assert.ok(r.ok, JSON.stringify(r));
      assert.equal(r.options.zoom, same(clampRef(z, 0, 22)));
      assert.equal(r.options.bearing, same(clampRef(b, -360, 360)));
      assert.equal(r.options.pitch, same(clampRef(p, 0, 85)));
    }),
    RUNS,
  );
});

test('a numeric parameter that is not a finite number is refused, naming the parameter', () => {
  fc.assert(
    fc.property(fc.constantFrom('zoom', 'bearing', 'pitch'), notANumber, (name, text) => {
      const r = parse({ [name]: text });
      assert.equal(r.ok, false, `${name}=${JSON.stringify(text)} must be refused`);
      if (!r.ok) {
        assert.equal(r.parameter, name);
        assert.match(r.detail, /finite number/);
      }
    }),
    RUNS,
  );
});

test('center "lat,lng" inside the world is read as [lng, lat]; outside it, or malformed, it is refused', () => {
  fc.assert(
    fc.property(lat, lng, (la, ln) => {
      const r = parse({ center: `${la},${ln}` });
      assert.ok(r.ok, JSON.stringify(r));
      assert.deepEqual(r.options.center, [same(ln), same(la)]);
    }),
    RUNS,
  );
  fc.assert(
    fc.property(fc.double({ noNaN: true, noDefaultInfinity: true }).filter((n) => Math.abs(n) > 90), lng, (la, ln) => {
      const r = parse({ center: `${la},${ln}` });
      assert.equal(r.ok, false);
      if (!r.ok) assert.equal(r.parameter, 'center');
    }),
    RUNS,
  );
  for (const bad of ['', '1', '1,2,3', '10,NaN', 'Infinity,0', '0,200', ',']) {
    const r = parse({ center: bad });
    assert.equal(r.ok, false, `center=${bad}`);
    if (!r.ok) assert.equal(r.parameter, 'center');
  }
});

test('bounds: an ordered box inside the world is kept as given; reversed or out-of-range boxes are refused', () => {
  fc.assert(
    fc.property(lng, lng, lat, lat, (a, b, c, d) => {
      const box = [Math.min(a, b), Math.min(c, d), Math.max(a, b), Math.max(c, d)];
      const r = parse({ bounds: box.join(',') });
      assert.ok(r.ok, JSON.stringify(r));
      assert.deepEqual(r.options.bounds, box.map(same));
      if (a !== b) {
        const reversed = parse({ bounds: [Math.max(a, b), Math.min(c, d), Math.min(a, b), Math.max(c, d)].join(',') });
        assert.equal(reversed.ok, false);
      }
    }),
    RUNS,
  );
  for (const bad of ['0,0,1', '0,0,1,1,1', '-181,0,0,1', '0,-91,1,0', '0,0,NaN,1']) {
    const r = parse({ bounds: bad });
    assert.equal(r.ok, false, `bounds=${bad}`);
    if (!r.ok) assert.equal(r.parameter, 'bounds');
  }
});

test('markers: pipe-separated lng,lat pairs are read in order; more than the limit is refused', () => {
  fc.assert(
    fc.property(fc.array(fc.tuple(lng, lat), { minLength: 1, maxLength: MAX_MARKERS }), (pairs) => {
      const r = parse({ markers: pairs.map(([a, b]) => `${a},${b}`).join('|') });
      assert.ok(r.ok, JSON.stringify(r));
      assert.deepEqual(r.options.markers, pairs.map(([a, b]) => [same(a), same(b)]));
    }),
    { numRuns: 300 },
  );
  const tooMany = Array.from({ length: MAX_MARKERS + 1 }, () => '1,2').join('|');
  const r = parse({ markers: tooMany });
  assert.equal(r.ok, false);
  assert.deepEqual(parse({ markers: '' }), parse({}));
});

test('controls: the known tokens in the order first given, each once; unknown tokens dropped', () => {
  const token = fc.oneof(fc.constantFrom(...EMBED_CONTROLS), fc.string({ maxLength: 12 }).filter((s) => !s.includes(',')));
  fc.assert(
    fc.property(fc.array(token, { maxLength: 8 }), (tokens) => {
      const r = parse({ controls: tokens.join(',') });
      assert.ok(r.ok);
      const expected: string[] = [];
      for (const t of tokens) {
        const k = t.trim().toLowerCase();
        if ((EMBED_CONTROLS as readonly string[]).includes(k) && !expected.includes(k)) expected.push(k);
      }
      assert.deepEqual(r.options.controls, expected);
    }),
    RUNS,
  );
  const absent = parse({});
  assert.ok(absent.ok);
  assert.deepEqual(absent.options.controls, ['navigation']);
});

test('defaults: zoom 2, bearing 0, pitch 0, navigation control, no hash, interactive, theme from the client', () => {
  assert.deepEqual(parse({}), {
    ok: true,
    options: { zoom: 2, bearing: 0, pitch: 0, markers: [], controls: ['navigation'], hash: false, interactive: true },
  });
  const r = parse({ hash: 'true', interactive: 'false', theme: 'dark' });
  assert.ok(r.ok);
  assert.equal(r.options.hash, true);
  assert.equal(r.options.interactive, false);
  assert.equal(r.options.theme, 'dark');
  const auto = parse({ theme: 'auto' });
  assert.ok(auto.ok);
  assert.equal(auto.options.theme, undefined);
});

test('any query at all: the parser never throws, and what it accepts is finite and in range', () => {
  const value = fc.oneof(fc.string(), fc.string({ unit: 'binary' }), notANumber, finite.map(String), fc.constantFrom('"><script>alert(1)</script>', 'javascript:alert(1)', '\\u003cscript\\u003e'));
  fc.assert(
    fc.property(fc.dictionary(fc.constantFrom(...PARAMS), value), (query) => {
      const r = parse(query);
      if (!r.ok) {
        assert.ok((PARAMS as readonly string[]).includes(r.parameter), r.parameter);
        assert.ok(Object.hasOwn(query, r.parameter), 'the named parameter was given');
        assert.equal(typeof r.detail, 'string');
        return;
      }
      const o = r.options;
      for (const n of [o.zoom, o.bearing, o.pitch, ...(o.center ?? []), ...(o.bounds ?? []), ...o.markers.flat()]) assert.ok(Number.isFinite(n));
      assert.ok(o.zoom >= 0 && o.zoom <= 22);
      assert.ok(o.bearing >= -360 && o.bearing <= 360);
      assert.ok(o.pitch >= 0 && o.pitch <= 85);
      assert.ok(o.controls.every((c) => (EMBED_CONTROLS as readonly string[]).includes(c)));
      assert.ok(o.theme === undefined || o.theme === 'light' || o.theme === 'dark');
      assert.equal(typeof o.hash, 'boolean');
      assert.equal(typeof o.interactive, 'boolean');
    }),
    RUNS,
  );
});

test('page escaping: any text becomes inert HTML text, and any value a JSON block that parses back to itself', () => {
  fc.assert(
    fc.property(fc.string({ unit: 'binary' }), (text) => {
      const html = escapeHtml(text);
      assert.ok(!/[<>"']/.test(html), 'no markup character survives');
      const decoded = html.replace(/&lt;|&gt;|&quot;|&#39;|&amp;/g, (e) => ({ '&lt;': '<', '&gt;': '>', '&quot;': '"', '&#39;': "'", '&amp;': '&' })[e]!);
      assert.equal(decoded, text);
      const value = { text, list: [text, 1.5, null] };
      const block = jsonForScript(value);
      assert.ok(!/[<>&\u2028\u2029]/.test(block), 'nothing can close or bend the script element');
      assert.deepEqual(JSON.parse(block), value);
    }),
    RUNS,
  );
});

test('style origins: only plain http(s) origins reach the security policy, whatever URLs a style holds', () => {
  const url = fc.oneof(fc.webUrl(), fc.string(), fc.constantFrom("http://a;b.com/x", "https://x.org/{z}/{x}/{y}.pbf", "javascript:alert(1)", "data:text/html,x", "http://h:1/ 'unsafe-inline'"));
  fc.assert(
    fc.property(fc.array(url, { maxLength: 5 }), url, (tiles, glyphs) => {
      const origins = styleOrigins({ sources: { s: { url: tiles[0], tiles } }, glyphs, sprite: [{ id: 'a', url: glyphs }] });
      for (const o of origins) {
        assert.match(o, /^https?:\/\/[A-Za-z0-9.\-[\]:]+$/);
        assert.equal(new URL(o).origin, o);
      }
    }),
    RUNS,
  );
  assert.deepEqual(styleOrigins({ sources: { s: { tiles: ['https://tiles.example.com/{z}/{x}/{y}.pbf'] } }, glyphs: 'http://127.0.0.1:9/fonts/{fontstack}/{range}.pbf' }), [
    'https://tiles.example.com',
    'http://127.0.0.1:9',
  ]);
});
