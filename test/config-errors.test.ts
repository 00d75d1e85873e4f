// Config errors that point at the mistake: TOML syntax errors as FILE:LINE:COLUMN, "did you mean" for a key one
// edit away from a known one, and unknown top-level sections or keys as errors (a typo there would silently
// drop a whole section). Property tests for the one-edit check against a reference edit distance.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import fc from './helpers/fast-check.js';
import { loadConfigFile, validateConfig } from '../src/config/load.js';
import { ConfigError } from '../src/config/errors.js';
import { ConfigSchema, RenderSchema } from '../src/config/schema.js';
import { didYouMean, withinOneEdit } from '../src/config/suggest.js';
import { declaredKeys } from '../src/config/unknown-keys.js';
import { fixture, runCli } from './helpers/server.js';
import { tempDir } from './helpers/foundation.js';

function writeConfig(toml: string): string {
  const file = path.join(tempDir('tsts-config-errors-'), 'config.toml');
  writeFileSync(file, toml);
  return file;
}

function loadError(toml: string): { file: string; message: string } {
  const file = writeConfig(toml);
  try {
    loadConfigFile(file, {});
  } catch (err) {
    assert.ok(err instanceof ConfigError, `expected a ConfigError, got ${String(err)}`);
    return { file, message: err.message };
  }
  assert.fail(`loaded although invalid:\n${toml}`);
}

// [TOML, line, column]: columns counted by hand from the text (1-based), where the parser stops.
const SYNTAX: [string, number, number, RegExp][] = [
  ['[server]\nhost = 0.0.0.0\n', 2, 11, /illegal character in numeric literal/],
  // The unterminated string runs into the line break after its 12 characters.
  ['fonts = "a"\n\n[server]\nport = "8080\n', 4, 13, /control characters/],
  ['[server\nport = 1\n', 1, 8, /./],
  ['[[sources]]\nid = "a"\nid = "b"\n', 3, 1, /./],
];

test('a TOML syntax error is one line FILE:LINE:COLUMN: invalid TOML: what', () => {
  for (const [toml, line, column, what] of SYNTAX) {
    const { file, message } = loadError(toml);
    assert.equal(message.split('\n').length, 1, message);
    assert.ok(message.startsWith(`${file}:${line}:`), `${message} (expected line ${line})`);
    const col = Number(message.slice(file.length).split(':')[2]);
    // The parser may point at the first character it cannot take or one after; the line is exact.
    assert.ok(Math.abs(col - column) <= 1, `${message} (expected column ${column})`);
    assert.match(message, /: invalid TOML: /);
    assert.match(message, what);
    assert.doesNotMatch(message, /Invalid TOML document/);
  }
});

test('the CLI prints the TOML error as one line with line and column, exit 1', async () => {
  const file = writeConfig('[server]\nhost = 0.0.0.0\n');
  const r = await runCli(['--config', file], {}, 60_000);
  assert.equal(r.code, 1);
  const lines = r.stderr.split('\n').filter(Boolean);
  assert.deepEqual(lines, [`tileserver-ts: ${file}:2:11: invalid TOML: illegal character in numeric literal`]);
});

test('[[source]] for [[sources]] is an error with "did you mean", not a server with nothing in it', async () => {
  const toml = `[[source]]\nid = "a"\ntype = "mbtiles"\npath = "${fixture('vector/world_cities.mbtiles')}"\n`;
  const { file, message } = loadError(toml);
  assert.equal(message, `${file}: source: unknown top-level section (did you mean "sources"?)`);
  const r = await runCli(['--config', file, '--port', '0', '--workers', '1'], {}, 60_000);
  assert.equal(r.code, 1);
  assert.deepEqual(r.stderr.split('\n').filter(Boolean), [`tileserver-ts: ${message}`]);
});

test('an unknown top-level section far from every known one is an error listing the known ones', () => {
  const { file, message } = loadError('[database]\nurl = "x"\n');
  assert.ok(message.startsWith(`${file}: database: unknown top-level section (expected one of `), message);
  for (const k of ['server', 'sources', 'styles', 'cache', 'render']) assert.ok(message.includes(k), `${message} lacks ${k}`);
});

test('an unknown root key is an error too, with "did you mean" when one edit away', () => {
  assert.match(loadError('font = "fonts"\n').message, /: font: unknown top-level key \(did you mean "fonts"\?\)$/);
  assert.match(loadError('[sever]\nport = 1\n').message, /: sever: unknown top-level section \(did you mean "server"\?\)$/);
  assert.match(loadError('[serevr]\nport = 1\n').message, /: serevr: unknown top-level section \(did you mean "server"\?\)$/, 'a swap of two letters is one edit');
});

test('unknown keys inside known sections stay warnings, with "did you mean" when one edit away', () => {
  const file = writeConfig(`
[server]
prot = 1
tile_cache_contrl = "x"
[[sources]]
id = "a"
type = "pmtiles"
path = "x.pmtiles"
max_zoom = 3
[cache]
size = 3
`);
  const { config, warnings } = loadConfigFile(file, {});
  assert.equal(config.sources.length, 1);
  assert.deepEqual(warnings.sort(), [
    `${file}: unknown key cache.size (ignored)`,
    `${file}: unknown key server.prot (ignored; did you mean "port"?)`,
    `${file}: unknown key server.tile_cache_contrl (ignored; did you mean "tile_cache_control"?)`,
    `${file}: unknown key sources[0].max_zoom (ignored; did you mean "maxzoom"?)`,
  ].sort());
});

test('the known top-level sections are the schema\'s: a section added to the schema is known without more code', () => {
  const known = declaredKeys(ConfigSchema);
  assert.deepEqual(known, Object.keys(ConfigSchema.entries));
  for (const section of known) {
    // Every declared section loads without an unknown-section error (values may still be invalid).
    try {
      validateConfig({ [section]: {} }, 't.toml', '/tmp', {});
    } catch (err) {
      assert.ok(err instanceof ConfigError);
      assert.doesNotMatch(err.message, /unknown top-level/);
    }
  }
});

// ---- the one-edit check ----

/** Reference: optimal string alignment distance (Levenshtein plus adjacent swaps), by the textbook table. */
function osaDistance(a: string, b: string): number {
  const d: number[][] = Array.from({ length: a.length + 1 }, (_, i) => Array.from({ length: b.length + 1 }, (_, j) => (i === 0 ? j : j === 0 ? i : 0)));
  for (let i = 1; i <= a.length; i++) {
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      d[i][j] = Math.min(d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) d[i][j] = Math.min(d[i][j], d[i - 2][j - 2] + 1);
    }
  }
  return d[a.length][b.length];
}

const small = fc.string({ unit: fc.constantFrom('a', 'b', 'c', '_'), maxLength: 7 });

test('withinOneEdit agrees with the reference distance for any two strings', () => {
  fc.assert(
    fc.property(small, small, (a, b) => {
      assert.equal(withinOneEdit(a, b), osaDistance(a, b) <= 1, `${a} / ${b}`);
    }),
    { numRuns: 5000 },
  );
});

/** One random edit of `s`: insert, delete, replace or swap at a position. */
const oneEdit = (s: string) =>
  fc.tuple(fc.constantFrom('insert', 'delete', 'replace', 'swap'), fc.nat(), fc.constantFrom(...'abcdefghijklmnopqrstuvwxyz_')).map(([kind, n, ch]) => {
    const i = n % (s.length + (kind === 'insert' ? 1 : 0));
    if (kind === 'insert') return s.slice(0, i) + ch + s.slice(i);
    if (kind === 'delete') return s.slice(0, i) + s.slice(i + 1);
    if (kind === 'replace') return s.slice(0, i) + ch + s.slice(i + 1);
    return i + 1 < s.length ? s.slice(0, i) + s[i + 1] + s[i] + s.slice(i + 2) : s;
  });

test('didYouMean names the section a one-edit typo came from, unless another section is as close', () => {
  const sections = declaredKeys(ConfigSchema);
  fc.assert(
    fc.property(
      fc.constantFrom(...sections).chain((k) => oneEdit(k).map((typo) => [k, typo] as const)),
      ([key, typo]) => {
        const candidates = sections.filter((s) => s !== typo && osaDistance(typo.toLowerCase(), s.toLowerCase()) <= 1);
        const guess = didYouMean(typo, sections);
        if (typo === key) assert.equal(guess, undefined, 'the name itself is not a typo');
        else if (candidates.length === 1) assert.equal(guess, key);
        else assert.equal(guess, undefined, `ambiguous between ${candidates.join(', ')}`);
      },
    ),
    { numRuns: 3000 },
  );
});

test('didYouMean suggests nothing two or more edits from every known name', () => {
  const sections = declaredKeys(ConfigSchema);
  fc.assert(
    fc.property(fc.string({ maxLength: 12 }), (typed) => {
      fc.pre(sections.every((s) => osaDistance(typed.toLowerCase(), s.toLowerCase()) >= 2));
      assert.equal(didYouMean(typed, sections), undefined);
    }),
    { numRuns: 2000 },
  );
});

// [key path, TOML value]: a value each key must refuse (out of its range, wrong type, not one of its choices).
const INVALID_VALUES: [string, string][] = [
  ['render.backend', '"gpu"'],
  ['render.pool_size', '0'],
  ['render.pages_per_browser', '65'],
  ['render.timeout_ms', '5'],
  ['render.max_queue', '-1'],
  ['render.queue_timeout_ms', '0'],
  ['render.max_pixels', '1.5'],
  ['render.max_renders', '0'],
  ['render.metatile', '3'],
  ['render.tile_buffer', '257'],
  ['render.bulk_metatile', '16'],
  ['render.bulk_max_frame', '8193'],
  ['render.memory_cache_mb', '-1'],
  ['render.disk_cache_mb', '"lots"'],
  ['render.png_compression', '10'],
  ['render.seed_png_compression', '-1'],
  ['render.jpeg_quality', '0'],
  ['render.webp_quality', '101'],
  ['render.flat_extrusions', '"yes"'],
  ['render.chromium_path', '""'],
  ['render.gl', '"metal"'],
  ['render.owner_routing', '"yes"'],
  ['render.tile_encoder', '"canvas"'],
  ['render.avif_quality', '0'],
  ['render.static_attribution', '"no"'],
  ['render.marker_hosts', '["https://icons.example.com/"]'],
  ['render.marker_max_bytes', '0'],
  ['render.marker_timeout_ms', '60001'],
  ['render.stale_max_age_seconds', '3601'],
  ['render.rerender_expired', '"always"'],
  ['render.rerender_max_zoom', '25'],
  ['render.dirty_queue_size', '0'],
  ['render.stale_threshold', '-1'],
  ['server.tile_cache_control', '""'],
  ['server.tile_cache_control', '3600'],
  ['server.transcode_threads', '0'],
  ['server.transcode_threads', '1.5'],
  ['server.transcode_threads', '"auto"'],
  ['server.semi_space_mb', '-1'],
  ['server.semi_space_mb', '1025'],
  ['server.semi_space_mb', '2.5'],
];

test('every [render] key has an invalid value below', () => {
  const covered = new Set(INVALID_VALUES.map(([k]) => k).filter((k) => k.startsWith('render.')).map((k) => k.slice('render.'.length)));
  const keys = Object.keys(RenderSchema.entries);
  assert.ok(keys.length >= 17, keys.join(', '));
  assert.deepEqual([...covered].sort(), keys.sort());
});

test('an invalid value of any [render] key, server.tile_cache_control, server.transcode_threads or server.semi_space_mb stops start-up: one line naming the key, exit 1, no stack', async () => {
  const results: { key: string; value: string; code: number | null; stderr: string; file: string }[] = [];
  const queue = [...INVALID_VALUES];
  // Two CLIs at a time: each is a whole Node start.
  await Promise.all(
    [0, 1].map(async () => {
      for (let next = queue.shift(); next; next = queue.shift()) {
        const [key, value] = next;
        const [section, name] = key.split('.');
        const file = writeConfig(`[${section}]\n${name} = ${value}\n`);
        const r = await runCli(['--config', file, '--port', '0', '--workers', '1'], { LOG_LEVEL: 'warn' }, 60_000);
        results.push({ key, value, code: r.code, stderr: r.stderr, file });
      }
    }),
  );
  assert.equal(results.length, INVALID_VALUES.length);
  for (const { key, value, code, stderr, file } of results) {
    const lines = stderr.split('\n').filter(Boolean);
    assert.equal(code, 1, `${key} = ${value}: exit code ${code}\n${stderr}`);
    assert.equal(lines.length, 1, `${key} = ${value}: one line\n${stderr}`);
    // A list's entry is named with its index (render.marker_hosts[0]).
    assert.ok(lines[0].startsWith(`tileserver-ts: ${file}: ${key}: `) || lines[0].startsWith(`tileserver-ts: ${file}: ${key}[0]: `), `${key} = ${value}: ${lines[0]}`);
    assert.doesNotMatch(stderr, /\n\s+at |Error:/, `${key} = ${value}: no stack trace\n${stderr}`);
  }
});

test('a file with problems in several sections reports every one of them at once, a line each', () => {
  const { file, message } = loadError(`
[[sources]]
id = "a"
type = "pmtiles"
path = "a.pmtiles"
[[sources]]
id = "a"
type = "pmtiles"
path = "b.pmtiles"
minzoom = 9
maxzoom = 3
[[composites]]
id = "upload-mix"
sources = ["a", "nosuch"]
[postgres]
connection_string = "postgres://localhost/db"
[[postgres.tables]]
id = "roads"
table = "roads"
minzoom = 12
maxzoom = 4
[[postgres.functions]]
id = "upload-fn"
[auth]
keys_file = "missing-keys.toml"
[[auth.keys]]
name = "k"
hash = "${'a'.repeat(64)}"
rate_class = "gold"
[rate_limits.classes.silver]
cheap = { rate = 1 }
`);
  const lines = message.split('\n');
  const expected = [
    'sources: duplicate source id "a"',
    'sources[1]: minzoom 9 is above maxzoom 3',
    'postgres.tables[0]: minzoom 12 is above maxzoom 4',
    'postgres.functions[0]: id "upload-fn" starts with "upload-"',
    'composites[0]: id "upload-mix" starts with "upload-"',
    'composites[0].sources: no source with id "nosuch"',
    'auth.keys: key "k" has rate_class "gold"',
    'auth.keys_file: cannot read',
  ];
  for (const e of expected) assert.ok(lines.some((l) => l.startsWith(`${file}: ${e}`)), `no line "${e}" in:\n${message}`);
  assert.equal(lines.length, expected.length, message);
});

test('schema problems of several sections, a key of another source type and the [mcp] and [auth.jwt] rules come together', () => {
  const { file, message } = loadError(`
[server]
port = "x"
[[sources]]
id = "a"
type = "pmtiles"
path = "a.pmtiles"
subdomains = ["a"]
[mcp]
auth_token = "${'t'.repeat(20)}"
[mcp.oauth]
enabled = true
[auth.jwt]
jwks_url = "https://idp.example/jwks"
secret_env = "S"
`);
  const lines = message.split('\n');
  for (const e of [
    'server.port: ',
    'sources[0].subdomains: subdomains applies to type = "xyz" sources only',
    'mcp.auth_token: a static token and [mcp.oauth] enabled cannot both be set',
    'mcp.oauth.consent_secret: required when [mcp.oauth] is enabled',
    'auth.jwt: set exactly one of jwks_file, jwks, jwks_url and secret_env',
  ]) assert.ok(lines.some((l) => l.startsWith(`${file}: ${e}`)), `no line "${e}" in:\n${message}`);
  assert.equal(lines.length, 5, message);
});

test('a source\'s keys are its type\'s: a typo is guessed among them, a key of another type says which types take it', () => {
  const file = writeConfig(`
[[sources]]
id = "x"
type = "xyz"
url = "https://h/{z}/{x}/{y}.png"
format = "png"
subdomain = ["a"]
[[sources]]
id = "p"
type = "pmtiles"
path = "p.pmtiles"
resampling = "nearest"
`);
  const { config, warnings } = loadConfigFile(file, {});
  assert.deepEqual(warnings.sort(), [
    `${file}: unknown key sources[0].subdomain (ignored; did you mean "subdomains"?)`,
    `${file}: unknown key sources[1].resampling (ignored; it applies to type = "cog", "vrt")`,
  ]);
  assert.equal(Object.hasOwn(config.sources[1], 'resampling'), false, 'a parsed source holds its own type\'s keys only');
});

test('the feature-write settings refuse invalid values, naming the key (docs/editing.md)', () => {
  const pg = (extra: string, table = '') => `[postgres]\nconnection_string = "postgres://localhost/db"\n${extra}\n[[postgres.tables]]\nid = "t"\ntable = "t"\n${table}\n`;
  const cases: [string, string][] = [
    [pg('write_max_bytes = 0'), 'postgres.write_max_bytes'],
    [pg('write_max_bytes = 1e12'), 'postgres.write_max_bytes'],
    [pg('write_max_bytes = "4MB"'), 'postgres.write_max_bytes'],
    [pg('', 'writable = "yes"'), 'postgres.tables[0].writable'],
    [pg('', 'require_if_match = 1'), 'postgres.tables[0].require_if_match'],
    [`[auth]\n[[auth.keys]]\nname = "k"\nhash = "${'a'.repeat(64)}"\nwrite = "edits"\n`, 'auth.keys[0].write'],
    [`[auth]\n[[auth.keys]]\nname = "k"\nhash = "${'a'.repeat(64)}"\nwrite = [""]\n`, 'auth.keys[0].write[0]'],
  ];
  for (const [toml, key] of cases) {
    const { file, message } = loadError(toml);
    assert.ok(message.split('\n').some((l) => l.startsWith(`${file}: ${key}: `)), `${key}: ${message}`);
  }
});
