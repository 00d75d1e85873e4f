// Property tests of what a user writes for a remote XYZ source (docs/xyz.md): the tile URL template (`{z}`, `{x}`,
// `{y}` or `{-y}`, `{s}`) and the keys around it. A well-formed template parses and expands every tile to a URL
// with the numbers in place and nothing left in braces; every malformed one is a one-line problem, never a throw;
// in a configuration file each mistake is a ConfigError naming the file and the key path.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import fc from './helpers/fast-check.js';
import { ConfigError, loadConfigFile } from '../src/config/load.js';
import { expandUrl, parseUrlTemplate, redactedUrl, subdomainOf, type UrlTemplate } from '../src/config/xyz-template.js';

const DIR = mkdtempSync(path.join(os.tmpdir(), 'tsts-xyz-prop-'));
after(() => rmSync(DIR, { recursive: true, force: true }));
let fileNo = 0;

function load(text: string): { ok: true; config: ReturnType<typeof loadConfigFile>['config'] } | { ok: false; message: string; file: string } {
  const file = path.join(DIR, `c${fileNo++}.toml`);
  writeFileSync(file, text);
  try {
    return { ok: true, config: loadConfigFile(file, {}).config };
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    return { ok: false, message: err.message, file };
  }
}

/** Literal URL text without braces. */
const literal = fc.stringMatching(/^[A-Za-z0-9._~\/-]{0,8}$/);
const host = fc.stringMatching(/^[a-z][a-z0-9-]{0,10}(\.[a-z][a-z0-9-]{0,10}){0,2}$/);
/** A tile inside its zoom level. */
const tile = fc.integer({ min: 0, max: 22 }).chain((z) => fc.tuple(fc.constant(z), fc.integer({ min: 0, max: 2 ** z - 1 }), fc.integer({ min: 0, max: 2 ** z - 1 })));
/** Path placeholders in any order, each of z, x and one row form once, with literal text between them. */
const pathPart = fc
  .tuple(fc.shuffledSubarray(['z', 'x', 'row', 's'], { minLength: 4, maxLength: 4 }), fc.boolean(), fc.boolean(), fc.array(literal, { minLength: 5, maxLength: 5 }))
  .map(([order, flip, withS, texts]) => {
    const keys = order.filter((k) => withS || k !== 's').map((k) => (k === 'row' ? (flip ? '-y' : 'y') : k));
    // A separator between placeholders keeps the numbers apart, so the test can read them back.
    return { keys, text: keys.map((k, i) => `${texts[i]}/{${k}}`).join('') + texts[4] };
  });

test('a well-formed template parses, and each tile expands to a URL with its numbers in place and no braces left', () => {
  fc.assert(
    fc.property(fc.constantFrom('http', 'https'), host, pathPart, tile, fc.boolean(), fc.constantFrom('a', 'b', 'tile1'), (scheme, h, p, [z, x, y], tms, sub) => {
      const url = `${scheme}://${h}${p.text.startsWith('/') ? '' : '/'}${p.text}`;
      const t = parseUrlTemplate(url);
      assert.notEqual(typeof t, 'string', `${url}: ${String(t)}`);
      const tpl = t as UrlTemplate;
      assert.equal(tpl.usesSubdomains, p.keys.includes('s'));
      const out = expandUrl(tpl, z, x, y, sub, tms);
      assert.ok(!/[{}]/.test(out), out);
      assert.ok(URL.canParse(out), out);
      // Reading the placeholders back: replace each literal run with nothing and compare value by value.
      const flipped = 2 ** z - 1 - y;
      const expected: Record<string, string> = { z: String(z), x: String(x), y: String(tms ? flipped : y), '-y': String(flipped), s: sub };
      const re = new RegExp(`^${escape(url).replace(/\\\{(-?[a-z])\\\}/g, '(.*?)')}$`);
      const m = re.exec(out);
      assert.ok(m, `${out} does not fit ${url}`);
      const keysInUrl = [...url.matchAll(/\{(-?[a-z])\}/g)].map((g) => g[1]);
      keysInUrl.forEach((k, i) => assert.equal(m[i + 1], expected[k], `${k} in ${out}`));
    }),
    { numRuns: 2000 },
  );
});

const escape = (s: string) => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

test('any string: parsing never throws; a problem is one line; a template without z, x and a row, or with an unknown or unmatched brace, is refused', () => {
  fc.assert(
    fc.property(fc.oneof(fc.string(), fc.stringMatching(/^https?:\/\/h\/[{}a-z\/-]{0,20}$/)), (s) => {
      const t = parseUrlTemplate(s);
      if (typeof t === 'string') {
        assert.ok(t.length > 0 && !t.includes('\n'));
        return;
      }
      const keys = [...s.matchAll(/\{([^{}]*)\}/g)].map((g) => g[1]);
      assert.ok(keys.includes('z') && keys.includes('x') && (keys.includes('y') !== keys.includes('-y')), s);
      assert.ok(keys.every((k) => ['z', 'x', 'y', '-y', 's'].includes(k)), s);
      assert.equal(s.split('{').length, s.split('}').length, s);
    }),
    { numRuns: 3000 },
  );
  for (const [url, what] of [
    ['https://h/{z}/{x}.png', /\{y\}/],
    ['https://h/{z}/{y}.png', /\{x\}/],
    ['https://h/{Z}/{x}/{y}.png', /unknown placeholder "\{Z\}"/],
    ['https://h/{z}/{x}/{y.png', /unmatched "\{"/],
    ['https://h/z}/{x}/{y}.png', /unmatched "\}"/],
    ['https://h/{z}/{x}/{y}/{-y}.png', /both/],
    ['ftp://h/{z}/{x}/{y}.png', /http\(s\)/],
    ['/tiles/{z}/{x}/{y}.png', /absolute/],
    ['https://user:pw@h/{z}/{x}/{y}.png', /headers_env/],
  ] as const) {
    const t = parseUrlTemplate(url);
    assert.equal(typeof t, 'string', url);
    assert.match(t as string, what, url);
  }
});

test('{s}: a tile always gets the same subdomain, one of the list; TMS rows and {-y} agree', () => {
  fc.assert(
    fc.property(fc.array(fc.stringMatching(/^[a-z0-9]{1,4}$/), { minLength: 1, maxLength: 6 }), tile, (subs, [z, x, y]) => {
      const s = subdomainOf(subs, x, y);
      assert.ok(subs.includes(s));
      assert.equal(subdomainOf(subs, x, y), s);
      const a = expandUrl(parseUrlTemplate('https://h/{z}/{x}/{y}') as UrlTemplate, z, x, y, s, true);
      const b = expandUrl(parseUrlTemplate('https://h/{z}/{x}/{-y}') as UrlTemplate, z, x, y, s, false);
      assert.equal(a, b);
    }),
  );
  assert.equal(redactedUrl('https://h/{z}/{x}/{y}.png?key=secret'), 'https://h/{z}/{x}/{y}.png?…');
});

const source = (extra: string) => `[[sources]]\nid = "up"\ntype = "xyz"\n${extra}\n`;

test('in a configuration file: a well-formed xyz source loads (path holds its url); each mistake names the key', () => {
  const ok = load(source('url = "https://{s}.tiles.example/{z}/{x}/{y}.pbf?key=k"\nsubdomains = ["a", "b"]\nformat = "pbf"\nheaders_env = { Authorization = "UP_KEY" }\ntimeout_ms = 2000'));
  assert.ok(ok.ok, ok.ok ? '' : ok.message);
  const s = ok.config.sources[0];
  assert.ok(s.type === 'xyz', 'the source is parsed as the xyz kind');
  assert.equal(s.path, 'https://{s}.tiles.example/{z}/{x}/{y}.pbf?key=k');
  assert.deepEqual(s.headers_env, { Authorization: 'UP_KEY' });
  for (const [extra, key, what] of [
    ['format = "pbf"', 'url', /needs url/],
    ['url = "https://h/{z}/{x}/{y}.png"', 'format', /needs format/],
    ['url = "https://h/{z}/{x}/{y}.png"\nformat = "gif"', 'format', /one of/],
    ['url = "https://h/{z}/{x}.png"\nformat = "png"', 'url', /\{y\}/],
    ['url = "https://{s}.h/{z}/{x}/{y}.png"\nformat = "png"', 'subdomains', /\{s\}/],
    ['url = "https://h/{z}/{x}/{y}.png"\nformat = "png"\nsubdomains = ["a"]', 'subdomains', /no \{s\}/],
    ['url = "https://h/{z}/{x}/{y}.png"\npath = "x.pmtiles"\nformat = "png"', 'path', /url, not path/],
    ['url = "https://h/{z}/{x}/{y}.png"\nformat = "png"\nheaders_env = { Authorization = "not a name" }', 'headers_env', /environment variable/],
    ['url = "https://h/{z}/{x}/{y}.png"\nformat = "png"\nvector_layers = [{ id = "a" }]', 'vector_layers', /pbf and mlt/],
    ['url = "https://h/{z}/{x}/{y}.png"\nformat = "png"\nmax_concurrency = 0', 'max_concurrency', /./],
    ['url = "https://h/{z}/{x}/{y}.png"\nformat = "png"\ndem = { encoding = "terrarium" }', 'dem', /not supported/],
    ['url = "https://h/{z}/{x}/{y}.png"\nformat = "png"\nheaders = { "X-A" = "a\\nb" }', 'headers', /one line/],
    ['url = "https://h/{z}/{x}/{y}.png"\nformat = "png"\nregion = "eu-west-1"', 'region', /headers_env/],
  ] as const) {
    const r = load(source(extra));
    assert.ok(!r.ok, extra);
    assert.ok(r.message.startsWith(r.file), r.message);
    assert.match(r.message, new RegExp(`sources\\[0\\]\\.${key}`), r.message);
    assert.match(r.message, what, r.message);
  }
  // Every key of docs/xyz.md at once: no "unknown key" warning.
  const file = path.join(DIR, 'all-keys.toml');
  writeFileSync(file, source(`url = "https://{s}.h/{z}/{x}/{-y}.pbf?key=k"\nsubdomains = ["a"]\nformat = "pbf"\nscheme = "xyz"\nbounds = [0, 0, 10, 10]
vector_layers = [{ id = "a", fields = { n = "String" }, description = "d", minzoom = 0, maxzoom = 5 }]\nheaders = { A = "b" }\nheaders_env = { B = "C" }
timeout_ms = 1000\nmax_concurrency = 2\nmax_queue = 3\nretries = 0\nstale_cache_mb = 1\nminzoom = 0\nmaxzoom = 5\nname = "n"\nattribution = "a"\ndescription = "d"\naccess = "public"`));
  assert.deepEqual(loadConfigFile(file, {}).warnings, []);
  const other = load('[[sources]]\nid = "a"\ntype = "pmtiles"\npath = "a.pmtiles"\nurl = "https://h/{z}/{x}/{y}.png"');
  assert.ok(!other.ok);
  assert.match(other.message, /sources\[0\]\.url: url applies to type = "xyz"/);
});
