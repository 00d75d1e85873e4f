// Property tests of the `[render]`, `[[styles]]` and `[[composites]]` configuration sections, read from TOML
// text the way a user writes it (integers with underscores or in hex, floats, either string quoting). Valid
// sections load with the values written and the documented defaults for the rest (a table written here from the
// README, not from the schema); each kind of invalid value fails with a ConfigError naming the file and the key
// path (`render.jpeg_quality`, `styles[1].id`, `composites[0].sources`), never another error; and the real CLI
// exits 1 with that line and no stack trace.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, describe, test } from 'node:test';
import fc from './helpers/fast-check.js';
import { ConfigError, loadConfigFile } from '../src/config/load.js';
import { FormCounter } from './helpers/forms.js';
import { runCli } from './helpers/server.js';

fc.configureGlobal({ ...fc.readConfigureGlobal(), includeErrorInReport: true });

const DIR = mkdtempSync(path.join(os.tmpdir(), 'tsts-config-prop-'));
after(() => rmSync(DIR, { recursive: true, force: true }));
let fileNo = 0;
function writeConfig(text: string): string {
  const file = path.join(DIR, `c${fileNo++}.toml`);
  writeFileSync(file, text);
  return file;
}

/** Loads TOML text: the config, or the ConfigError's message (any other error fails the test). */
function load(text: string): { ok: true; config: ReturnType<typeof loadConfigFile>['config']; warnings: string[]; file: string } | { ok: false; message: string; file: string } {
  const file = writeConfig(text);
  try {
    const { config, warnings } = loadConfigFile(file, {});
    return { ok: true, config, warnings, file };
  } catch (err) {
    if (!(err instanceof ConfigError)) throw err;
    return { ok: false, message: err.message, file };
  }
}

// ---- The documented [render] keys (README configuration table) ----------------------------------------------------

type Kind = { int: [number, number] } | { num: [number, number] } | { oneOf: (string | number)[] } | { bool: true } | { path: true } | { hosts: true };
const RENDER: Record<string, { kind: Kind; default: unknown }> = {
  backend: { kind: { oneOf: ['auto', 'native', 'chromium'] }, default: 'auto' },
  pool_size: { kind: { int: [1, 256] }, default: undefined },
  pages_per_browser: { kind: { int: [1, 64] }, default: 2 },
  timeout_ms: { kind: { int: [10, 600_000] }, default: 30_000 },
  max_queue: { kind: { int: [0, 100_000] }, default: 256 },
  queue_timeout_ms: { kind: { int: [1, 600_000] }, default: 10_000 },
  max_pixels: { kind: { int: [1, 1_000_000_000] }, default: 16_777_216 },
  max_renders: { kind: { int: [1, Number.MAX_SAFE_INTEGER] }, default: 2000 },
  metatile: { kind: { oneOf: ['auto', 1, 2, 4] }, default: 'auto' },
  tile_buffer: { kind: { int: [0, 256] }, default: 32 },
  bulk_metatile: { kind: { oneOf: [1, 2, 4, 8] }, default: 4 },
  bulk_max_frame: { kind: { int: [256, 8192] }, default: 8192 },
  memory_cache_mb: { kind: { num: [0, Number.MAX_SAFE_INTEGER] }, default: 64 },
  disk_cache_mb: { kind: { num: [0, Number.MAX_SAFE_INTEGER] }, default: 1024 },
  png_compression: { kind: { int: [0, 9] }, default: 3 },
  seed_png_compression: { kind: { int: [0, 9] }, default: 8 },
  jpeg_quality: { kind: { int: [1, 100] }, default: 85 },
  webp_quality: { kind: { int: [1, 100] }, default: 85 },
  avif_quality: { kind: { int: [1, 100] }, default: 50 },
  flat_extrusions: { kind: { bool: true }, default: true },
  gl: { kind: { oneOf: ['auto', 'lavapipe', 'egl', 'swiftshader'] }, default: 'auto' },
  owner_routing: { kind: { bool: true }, default: true },
  tile_encoder: { kind: { oneOf: ['browser', 'sharp'] }, default: 'browser' },
  chromium_path: { kind: { path: true }, default: undefined },
  static_attribution: { kind: { bool: true }, default: true },
  marker_max_bytes: { kind: { int: [1, 16 * 1024 * 1024] }, default: 256 * 1024 },
  marker_timeout_ms: { kind: { int: [1, 60_000] }, default: 3000 },
  marker_hosts: { kind: { hosts: true }, default: [] },
  stale_max_age_seconds: { kind: { int: [0, 3600] }, default: 15 },
  rerender_expired: { kind: { oneOf: ['request', 'eager'] }, default: 'request' },
  rerender_max_zoom: { kind: { int: [0, 24] }, default: 16 },
  dirty_queue_size: { kind: { int: [1, 1_000_000] }, default: 10_000 },
  stale_threshold: { kind: { int: [0, 100_000] }, default: 64 },
};
const KEYS = Object.keys(RENDER);

/** A TOML string literal of any text: basic (escaped) or, when it allows, literal. */
const tomlString = (s: string, literal: boolean) => (literal && !/['\n\r\u0000-\u001f\u007f]/.test(s) ? `'${s}'` : JSON.stringify(s).replace(/\u007f/g, '\\u007F'));

/** An integer as a user may write it: plain, with underscores, or in hex. */
const tomlInt = (n: number, style: number) => {
  if (style === 1 && n >= 1000) return String(n).replace(/\B(?=(\d{3})+(?!\d))/g, '_');
  if (style === 2 && n >= 0) return `0x${n.toString(16)}`;
  return String(n);
};

/** A valid value of a key, as TOML text, with the value it means. */
function validValue(kind: Kind): fc.Arbitrary<{ text: string; value: unknown }> {
  if ('int' in kind) {
    const [lo, hi] = kind.int;
    return fc.tuple(fc.oneof(fc.integer({ min: lo, max: Math.min(hi, 2 ** 31) }), fc.constantFrom(lo, Math.min(hi, 2 ** 31))), fc.nat(2)).map(([n, st]) => ({ text: tomlInt(n, st), value: n }));
  }
  if ('num' in kind) return fc.oneof(fc.integer({ min: 0, max: 100_000 }).map((n) => ({ text: String(n), value: n })), fc.integer({ min: 0, max: 10_000_000 }).map((n) => ({ text: (n / 1000).toFixed(3), value: n / 1000 })), fc.constant({ text: '1e3', value: 1000 }));
  if ('oneOf' in kind) return fc.constantFrom(...kind.oneOf).map((v) => ({ text: typeof v === 'string' ? `"${v}"` : String(v), value: v }));
  if ('bool' in kind) return fc.boolean().map((b) => ({ text: String(b), value: b }));
  if ('hosts' in kind) {
    const host = fc.tuple(fc.stringMatching(/^[a-z0-9][a-z0-9.-]{0,20}$/), fc.option(fc.integer({ min: 1, max: 65535 }), { nil: undefined })).map(([h, p]) => (p === undefined ? h : `${h}:${p}`));
    return fc.array(host, { maxLength: 3 }).map((hosts) => ({ text: JSON.stringify(hosts), value: hosts }));
  }
  return fc.tuple(fc.stringMatching(/^[A-Za-z0-9_./ -]{1,20}$/), fc.boolean()).map(([p, lit]) => ({ text: tomlString(p, lit), value: p }));
}

/** A wrong value of a key, as TOML text, with the kind of mistake. */
function invalidValue(kind: Kind): fc.Arbitrary<{ text: string; mistake: string }> {
  const wrongType = fc.constantFrom('"5"', 'true', '[1]', '{ a = 1 }', '2024-01-01').map((text) => ({ text, mistake: 'type' }));
  if ('int' in kind) {
    const [lo, hi] = kind.int;
    const out = [wrongType, fc.integer({ min: lo * 10, max: lo * 10 + 999 }).map((n) => ({ text: `${n + 0.5}`, mistake: 'fraction' }))];
    // Just past each end most often: an off-by-one in a bound is the likely mistake.
    out.push(fc.oneof(fc.constant(lo - 1), fc.integer({ min: lo - 1000, max: lo - 1 })).map((n) => ({ text: String(n), mistake: 'below' })));
    if (hi < Number.MAX_SAFE_INTEGER) out.push(fc.oneof(fc.constant(hi + 1), fc.integer({ min: hi + 1, max: hi + 100_000 })).map((n) => ({ text: String(n), mistake: 'above' })));
    return fc.oneof(...out);
  }
  if ('num' in kind) return fc.oneof(wrongType, fc.integer({ min: 1, max: 10_000 }).map((n) => ({ text: `-${n / 10}`, mistake: 'below' })));
  if ('oneOf' in kind) return fc.oneof(wrongType, fc.constantFrom('"AUTO"', '"gpu"', '3', '8', '"2"', '0').filter((t) => !kind.oneOf.map((v) => (typeof v === 'string' ? `"${v}"` : String(v))).includes(t)).map((text) => ({ text, mistake: 'choice' })));
  if ('bool' in kind) return fc.constantFrom('"true"', '1', '"yes"', '0').map((text) => ({ text, mistake: 'type' }));
  if ('hosts' in kind) return fc.constantFrom('"a.example"', '["https://a.example"]', '["a.example/x"]', '[""]', '[1]').map((text) => ({ text, mistake: 'host' }));
  return fc.constantFrom('""', '5', 'false', '[]').map((text) => ({ text, mistake: text === '""' ? 'empty' : 'type' }));
}

const validRender = fc.dictionary(fc.constantFrom(...KEYS), fc.constant(null), { maxKeys: KEYS.length }).chain((picked) =>
  fc.record(Object.fromEntries(Object.keys(picked).map((k) => [k, validValue(RENDER[k].kind)])) as Record<string, fc.Arbitrary<{ text: string; value: unknown }>>),
);

describe('[render] (properties)', () => {
  test('any valid [render] section loads with the values written and the documented defaults for the rest', () => {
    const forms = new FormCounter();
    fc.assert(
      fc.property(validRender, fc.boolean(), (given, dotted) => {
        // The section as a table, or as dotted keys at the top level: both are TOML for the same thing.
        const lines = Object.entries(given).map(([k, v]) => `${dotted ? 'render.' : ''}${k} = ${v.text}`);
        const text = dotted ? lines.join('\n') + '\n' : `[render]\n${lines.join('\n')}\n`;
        const r = load(text);
        assert.ok(r.ok, r.ok ? '' : r.message);
        const expected = Object.fromEntries(KEYS.map((k) => [k, k in given ? given[k].value : RENDER[k].default]).filter(([, v]) => v !== undefined));
        assert.deepEqual({ ...r.config.render }, expected, text);
        assert.deepEqual(r.warnings, []);
        for (const [k, v] of Object.entries(given)) {
          forms.hit(k);
          if (/_|0x/.test(v.text) && 'int' in RENDER[k].kind) forms.hit(`${k}-written`);
        }
        forms.hit(Object.keys(given).length === 0 ? 'empty' : dotted ? 'dotted' : 'table');
      }),
      // Enough runs that each of the section's keys is written at least 50 times.
      { numRuns: 480 },
    );
    forms.assertEach(KEYS, 50);
    forms.assertEach(['empty', 'dotted', 'table', 'timeout_ms-written', 'max_pixels-written'], 3);
  });

  test('every invalid value fails with a ConfigError naming the file and render.<key>, and only the wrong keys', () => {
    const forms = new FormCounter();
    const section = fc.record({
      bad: fc.uniqueArray(fc.constantFrom(...KEYS), { minLength: 1, maxLength: 3 }).chain((keys) => fc.tuple(...keys.map((k) => invalidValue(RENDER[k].kind).map((v) => ({ key: k, ...v }))))),
      good: validRender,
    });
    fc.assert(
      fc.property(section, ({ bad, good }) => {
        const badKeys = new Set(bad.map((b) => b.key));
        const lines = [...bad.map((b) => `${b.key} = ${b.text}`), ...Object.entries(good).filter(([k]) => !badKeys.has(k)).map(([k, v]) => `${k} = ${v.text}`)];
        const r = load(`[render]\n${lines.join('\n')}\n`);
        assert.ok(!r.ok, `accepted: ${lines.join('; ')}`);
        for (const b of bad) {
          forms.hit(`${b.key}:${b.mistake}`);
          forms.hit(b.key);
          // A list's wrong item is named with its index: render.marker_hosts[0].
          assert.ok(r.message.includes(`${r.file}: render.${b.key}: `) || r.message.includes(`${r.file}: render.${b.key}[`), `${b.key} = ${b.text}: ${r.message}`);
        }
        for (const k of Object.keys(good)) if (!badKeys.has(k)) assert.ok(!r.message.includes(`render.${k}:`), `${k} is valid but named: ${r.message}`);
        assert.doesNotMatch(r.message, /\n\s+at |\[object Object\]|undefined/, r.message);
      }),
      { numRuns: 600 },
    );
    forms.assertEach(KEYS, 20);
    forms.assertEach(['timeout_ms:fraction', 'timeout_ms:below', 'timeout_ms:above', 'jpeg_quality:above', 'memory_cache_mb:below', 'metatile:choice', 'backend:choice', 'flat_extrusions:type', 'chromium_path:empty'], 3);
  });

  test('an unknown key in [render] is a warning naming it (with the key it resembles), not an error', () => {
    fc.assert(
      fc.property(fc.constantFrom(...KEYS), fc.constantFrom('s', 'x', '_'), (k, extra) => {
        const r = load(`[render]\n${k}${extra} = 1\n`);
        assert.ok(r.ok, r.ok ? '' : r.message);
        assert.equal(r.warnings.length, 1);
        assert.ok(r.warnings[0].includes(`unknown key render.${k}${extra}`) && r.warnings[0].includes(`"${k}"`), r.warnings[0]);
      }),
      { numRuns: 60 },
    );
  });
});

// ---- [[styles]] and [[composites]] ------------------------------------------------------------------------------

const id = fc.stringMatching(/^[A-Za-z0-9_][A-Za-z0-9_.-]{0,12}$/);
const badId = fc.constantFrom('a+b', '.hidden', '-x', 'a/b', '', 'é', 'a b', 'x?y', '%41');
const stylePath = fc.oneof(fc.stringMatching(/^[a-z]{1,6}(\/[a-z]{1,6}){0,2}\.json$/), fc.constantFrom('./style.json', '../shared/style.json', '/srv/styles/a.json'));
const styleName = fc.option(fc.string({ maxLength: 12 }), { nil: undefined });

const styleEntry = fc.record({ id, path: stylePath, name: styleName, spriteDir: fc.option(stylePath, { nil: undefined }), lit: fc.boolean() });
const styleText = (s: { id: string; path: string; name?: string; spriteDir?: string; lit: boolean }) =>
  `[[styles]]\nid = ${tomlString(s.id, s.lit)}\npath = ${tomlString(s.path, s.lit)}\n${s.name === undefined ? '' : `name = ${tomlString(s.name, s.lit)}\n`}${s.spriteDir === undefined ? '' : `sprite_dir = ${tomlString(s.spriteDir, s.lit)}\n`}`;

describe('[[styles]] and [[composites]] (properties)', () => {
  test('valid [[styles]] load with their ids, names and paths made absolute from the config file', () => {
    const forms = new FormCounter();
    fc.assert(
      fc.property(fc.uniqueArray(styleEntry, { selector: (s) => s.id, minLength: 1, maxLength: 4 }), (styles) => {
        const r = load(styles.map(styleText).join(''));
        assert.ok(r.ok, r.ok ? '' : r.message);
        assert.deepEqual(
          r.config.styles,
          styles.map((s) => ({
            id: s.id,
            path: path.resolve(DIR, s.path),
            ...(s.name === undefined ? {} : { name: s.name }),
            ...(s.spriteDir === undefined ? {} : { sprite_dir: path.resolve(DIR, s.spriteDir) }),
            // Defaults of the label languages (docs/styles.md).
            languages: ['*'],
            accept_language: false,
          })),
        );
        for (const s of styles) {
          forms.hit(s.name === undefined ? 'no-name' : 'name');
          forms.hit(s.spriteDir === undefined ? 'no-sprite-dir' : 'sprite-dir');
          forms.hit(s.path.startsWith('/') ? 'absolute' : s.path.startsWith('..') ? 'parent' : 'relative');
        }
        forms.hit(`count-${styles.length}`);
      }),
      { numRuns: 300 },
    );
    forms.assertEach(['name', 'no-name', 'sprite-dir', 'no-sprite-dir', 'absolute', 'parent', 'relative', 'count-1', 'count-4'], 10);
  });

  test('each mistake in a [[styles]] entry fails naming styles[i] and the key', () => {
    const forms = new FormCounter();
    const mistake = fc.oneof(
      badId.map((v) => ({ kind: 'bad-id', key: 'id', line: (s: string) => s.replace(/^id = .*$/m, `id = ${JSON.stringify(v)}`) })),
      fc.constant({ kind: 'no-id', key: 'id', line: (s: string) => s.replace(/^id = .*\n/m, '') }),
      fc.constant({ kind: 'no-path', key: 'path', line: (s: string) => s.replace(/^path = .*\n/m, '') }),
      fc.constantFrom('""', '3', 'true', '["a.json"]').map((v) => ({ kind: 'bad-path', key: 'path', line: (s: string) => s.replace(/^path = .*$/m, `path = ${v}`) })),
      fc.constantFrom('3', 'false', '{ en = "x" }').map((v) => ({ kind: 'bad-name', key: 'name', line: (s: string) => (/^name = /m.test(s) ? s.replace(/^name = .*$/m, `name = ${v}`) : `${s}name = ${v}\n`) })),
    );
    fc.assert(
      fc.property(fc.uniqueArray(styleEntry, { selector: (s) => s.id, minLength: 1, maxLength: 3 }), fc.nat(), mistake, (styles, n, m) => {
        const i = n % styles.length;
        forms.hit(m.kind);
        const text = styles.map((s, k) => (k === i ? m.line(styleText({ ...s, lit: false })) : styleText(s))).join('');
        const r = load(text);
        assert.ok(!r.ok, `accepted:\n${text}`);
        assert.ok(r.message.includes(`${r.file}: styles[${i}].${m.key}: `), `${m.kind}: ${r.message}`);
        assert.doesNotMatch(r.message, /\n\s+at /);
      }),
      { numRuns: 400 },
    );
    forms.assertEach(['bad-id', 'no-id', 'no-path', 'bad-path', 'bad-name'], 40);
  });

  const SOURCE_IDS = ['roads', 'places', 'water'];
  const sources = SOURCE_IDS.map((s) => `[[sources]]\nid = "${s}"\ntype = "pmtiles"\npath = "${s}.pmtiles"\n`).join('');
  const compositeText = (c: { id: string; sources: string[] }) => `[[composites]]\nid = ${JSON.stringify(c.id)}\nsources = [${c.sources.map((s) => JSON.stringify(s)).join(', ')}]\n`;
  const composite = fc.record({ id: id.filter((s) => !SOURCE_IDS.includes(s)), sources: fc.uniqueArray(fc.constantFrom(...SOURCE_IDS), { minLength: 1, maxLength: 3 }) });

  test('valid [[composites]] load with their ids and members in order', () => {
    const forms = new FormCounter();
    fc.assert(
      fc.property(fc.uniqueArray(composite, { selector: (c) => c.id, minLength: 1, maxLength: 3 }), (cs) => {
        const r = load(sources + cs.map(compositeText).join(''));
        assert.ok(r.ok, r.ok ? '' : r.message);
        assert.deepEqual(r.config.composites, cs.map((c) => ({ id: c.id, sources: [...c.sources] })));
        for (const c of cs) forms.hit(`members-${c.sources.length}`);
      }),
      { numRuns: 300 },
    );
    forms.assertEach(['members-1', 'members-2', 'members-3'], 30);
  });

  test('each mistake in a [[composites]] entry fails naming composites[i] and what is wrong', () => {
    const forms = new FormCounter();
    type Broken = { kind: string; edit: (c: { id: string; sources: string[] }, others: string[]) => string; says: (i: number) => string };
    const mistake = fc.oneof(
      badId.map((v): Broken => ({ kind: 'bad-id', edit: (c) => compositeText({ ...c, id: v }), says: (i) => `composites[${i}].id: ` })),
      fc.constantFrom(...SOURCE_IDS).map((v): Broken => ({ kind: 'source-id', edit: (c) => compositeText({ ...c, id: v }), says: (i) => `composites[${i}].id: "${v}" is also the id of a source` })),
      fc.constant<Broken>({ kind: 'duplicate', edit: (c, others) => compositeText({ ...c, id: others[0] ?? c.id }), says: (i) => `composites[${i}].id: duplicate composite id` }),
      fc.constant<Broken>({ kind: 'empty', edit: (c) => compositeText({ ...c, sources: [] }), says: (i) => `composites[${i}].sources: a composite needs at least one source` }),
      fc.constantFrom('nowhere', 'Roads').map((v): Broken => ({ kind: 'unknown', edit: (c) => compositeText({ ...c, sources: [...c.sources, v] }), says: (i) => `composites[${i}].sources: no source with id "${v}"` })),
      fc.constant<Broken>({ kind: 'repeated', edit: (c) => compositeText({ ...c, sources: [...c.sources, c.sources[0]] }), says: (i) => `composites[${i}].sources: "` }),
      fc.constantFrom('roads+water', 'a/b').map((v): Broken => ({ kind: 'bad-member', edit: (c) => compositeText({ ...c, sources: [v] }), says: (i) => `composites[${i}].sources[0]: ` })),
      fc.constantFrom('"roads"', '3', '{ a = "roads" }').map((v): Broken => ({ kind: 'not-array', edit: (c) => `[[composites]]\nid = ${JSON.stringify(c.id)}\nsources = ${v}\n`, says: (i) => `composites[${i}].sources: ` })),
    );
    fc.assert(
      fc.property(fc.uniqueArray(composite, { selector: (c) => c.id, minLength: 2, maxLength: 3 }), fc.nat(), mistake, (cs, n, m) => {
        // The duplicate must come after the entry it repeats.
        const i = m.kind === 'duplicate' ? 1 + (n % (cs.length - 1)) : n % cs.length;
        forms.hit(m.kind);
        const text = sources + cs.map((c, k) => (k === i ? m.edit(c, cs.slice(0, i).map((o) => o.id)) : compositeText(c))).join('');
        const r = load(text);
        assert.ok(!r.ok, `${m.kind} accepted:\n${text}`);
        assert.ok(r.message.includes(`${r.file}: ${m.says(i)}`), `${m.kind}: ${r.message}`);
        assert.doesNotMatch(r.message, /\n\s+at /);
      }),
      { numRuns: 500 },
    );
    forms.assertEach(['bad-id', 'source-id', 'duplicate', 'empty', 'unknown', 'repeated', 'bad-member', 'not-array'], 30);
  });
});

describe('the real CLI with generated invalid sections', () => {
  test('exits 1 with one line per problem naming the key path, and no stack trace', async () => {
    const forms = new FormCounter();
    const broken = fc.oneof(
      fc.constantFrom(...KEYS).chain((k) => invalidValue(RENDER[k].kind).map((v) => ({ form: 'render', text: `[render]\n${k} = ${v.text}\n`, names: `render.${k}: ` }))),
      badId.map((v) => ({ form: 'styles', text: `[[styles]]\nid = ${JSON.stringify(v)}\npath = "s.json"\n`, names: 'styles[0].id: ' })),
      fc.constantFrom('nowhere', 'a+b').map((v) => ({ form: 'composites', text: `[[sources]]\nid = "a"\ntype = "mbtiles"\npath = "a.mbtiles"\n[[composites]]\nid = "c"\nsources = [${JSON.stringify(v)}]\n`, names: 'composites[0].sources' })),
    );
    // Three hand-picked examples (one per section) run first, then generated ones: five CLI starts in all.
    await fc.assert(
      fc.asyncProperty(broken, async ({ form, text, names }) => {
        forms.hit(form);
        const file = writeConfig(text);
        const r = await runCli(['--config', file, '--port', '0', '--workers', '1'], {}, 60_000);
        assert.equal(r.code, 1, r.stdout + r.stderr);
        assert.ok(r.stderr.includes(`${file}: ${names}`), r.stderr);
        assert.doesNotMatch(r.stderr, /\n\s+at |Error:/, r.stderr);
      }),
      { numRuns: 5, examples: [[{ form: 'render', text: '[render]\nmetatile = 3\n', names: 'render.metatile: ' }], [{ form: 'styles', text: '[[styles]]\nid = "a+b"\npath = "s.json"\n', names: 'styles[0].id: ' }], [{ form: 'composites', text: '[[sources]]\nid = "a"\ntype = "mbtiles"\npath = "a.mbtiles"\n[[composites]]\nid = "c"\nsources = ["b"]\n', names: 'composites[0].sources' }]] },
    );
    forms.assertEach(['render', 'styles', 'composites'], 1);
  });
});
