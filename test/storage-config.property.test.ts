// Property tests of what a user writes for object storage: remote paths (`s3://bucket/key`, `gs://…`, `az://…`,
// http(s)) and the GDAL path each becomes; the `[storage]` settings; and the per-source storage keys, which only
// the provider that takes them accepts. Valid input loads with the values written; each kind of invalid input
// fails with a ConfigError naming the file and the key path, never another error.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, test } from 'node:test';
import fc from './helpers/fast-check.js';
import { ConfigError, loadConfigFile } from '../src/config/load.js';
import { gdalPath, isRemotePath, parseLocation } from '../src/config/object-location.js';

const DIR = mkdtempSync(path.join(os.tmpdir(), 'tsts-storage-prop-'));
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

const toml = (s: string) => JSON.stringify(s);
const scheme = fc.constantFrom('s3', 'gs', 'az');
const bucket = fc.stringMatching(/^[a-z0-9][a-z0-9.-]{1,40}[a-z0-9]$/);
/** Keys as S3 allows them: any characters, "/" separated, not ending in "/". */
const key = fc.array(fc.string({ minLength: 1, maxLength: 12, unit: 'grapheme' }).filter((s) => !s.includes('/')), { minLength: 1, maxLength: 4 }).map((parts) => parts.join('/'));

test('a bucket URL splits into bucket and key verbatim, and GDAL gets the matching /vsi path', () => {
  fc.assert(
    fc.property(scheme, bucket, key, (s, b, k) => {
      const url = `${s}://${b}/${k}`;
      assert.ok(isRemotePath(url));
      const loc = parseLocation(url);
      assert.notEqual(typeof loc, 'string', String(loc));
      if (typeof loc === 'string') return;
      assert.equal(loc.provider, s);
      assert.equal(loc.bucket, b);
      assert.equal(loc.key, k);
      assert.equal(gdalPath(url), `${{ s3: '/vsis3/', gs: '/vsigs/', az: '/vsiaz/' }[s]}${b}/${k}`);
    }),
    { numRuns: 500 },
  );
});

test('anything else is a sentence saying what is wrong, never an exception', () => {
  const wrong = fc.oneof(
    fc.string(),
    fc.tuple(scheme, bucket).map(([s, b]) => `${s}://${b}`),
    fc.tuple(scheme, bucket).map(([s, b]) => `${s}://${b}/`),
    fc.tuple(scheme, bucket, key).map(([s, b, k]) => `${s}://${b}/${k}/`),
    fc.tuple(scheme, fc.string(), key).filter(([, b]) => !/^[a-z0-9][a-z0-9._-]{1,253}[a-z0-9]$/.test(b)).map(([s, b, k]) => `${s}://${b}/${k}`),
  );
  fc.assert(
    fc.property(wrong, (text) => {
      const out = parseLocation(text);
      if (typeof out !== 'string') {
        // A generated string may still be a well-formed URL (fc.string can write one): then it must parse consistently.
        assert.ok(isRemotePath(text));
        return;
      }
      assert.ok(out.length > 0);
      assert.ok(!out.includes('\n'));
      if (!isRemotePath(text)) assert.equal(gdalPath(text), text, 'a local path is left as it is');
    }),
    { numRuns: 1000 },
  );
});

test('a bucket URL without a key, or with a bad bucket name, fails at load naming sources[0].path', () => {
  fc.assert(
    fc.property(scheme, fc.oneof(bucket.map((b) => `${b}/`), bucket, fc.constantFrom('UPPER/x.pmtiles', 'a/x.pmtiles', '-x-/k')), (s, rest) => {
      const r = load(`[[sources]]\nid = "a"\ntype = "pmtiles"\npath = ${toml(`${s}://${rest}`)}\n`);
      assert.equal(r.ok, false);
      if (r.ok) return;
      assert.ok(r.message.startsWith(`${r.file}: sources[0].path: `), r.message);
    }),
    { numRuns: 100 },
  );
});

const STORAGE = {
  read_timeout_ms: [50, 600_000],
  read_retries: [0, 10],
  max_concurrent_reads: [1, 1024],
} as const;
type StorageKey = keyof typeof STORAGE;

test('[storage] loads the integers written inside their range and the documented defaults for the rest', () => {
  const entry = fc.constantFrom(...(Object.keys(STORAGE) as StorageKey[])).chain((k) => fc.tuple(fc.constant(k), fc.integer({ min: STORAGE[k][0], max: STORAGE[k][1] })));
  fc.assert(
    fc.property(fc.uniqueArray(entry, { selector: ([k]) => k, maxLength: 3 }), (entries) => {
      const r = load(`[storage]\n${entries.map(([k, n]) => `${k} = ${n}`).join('\n')}\n`);
      assert.ok(r.ok, r.ok ? '' : r.message);
      if (!r.ok) return;
      const want: Record<StorageKey, number> = { read_timeout_ms: 10_000, read_retries: 3, max_concurrent_reads: 16 };
      for (const [k, n] of entries) want[k] = n;
      assert.deepEqual(r.config.storage, want);
    }),
    { numRuns: 200 },
  );
});

test('[storage] values out of range, fractional or not numbers fail naming storage.<key>', () => {
  const bad = fc.constantFrom(...(Object.keys(STORAGE) as StorageKey[])).chain((k) =>
    fc.tuple(
      fc.constant(k),
      fc.oneof(
        fc.integer({ min: -1_000_000, max: STORAGE[k][0] - 1 }).map(String),
        fc.integer({ min: STORAGE[k][1] + 1, max: 10_000_000 }).map(String),
        fc.double({ min: STORAGE[k][0] + 0.01, max: STORAGE[k][1] - 0.01, noNaN: true }).map((d) => d.toFixed(2)).filter((t) => !Number.isInteger(Number(t))),
        fc.string().map(toml),
        fc.constant('true'),
      ),
    ),
  );
  fc.assert(
    fc.property(bad, ([k, value]) => {
      const r = load(`[storage]\n${k} = ${value}\n`);
      assert.equal(r.ok, false, `${k} = ${value}`);
      if (r.ok) return;
      assert.ok(r.message.startsWith(`${r.file}: storage.${k}: `), r.message);
    }),
    { numRuns: 300 },
  );
});

const TAKES: Record<string, readonly string[]> = {
  s3: ['endpoint', 'region', 'force_path_style', 'profile', 'access_key_id', 'secret_access_key', 'anonymous'],
  gs: ['endpoint', 'force_path_style', 'access_key_id', 'secret_access_key', 'anonymous'],
  az: ['endpoint', 'account', 'account_key', 'sas_token', 'connection_string', 'anonymous'],
  local: [],
  http: [],
};
const ALL_KEYS = ['endpoint', 'region', 'force_path_style', 'profile', 'access_key_id', 'secret_access_key', 'anonymous', 'account', 'account_key', 'sas_token', 'connection_string'];
const valueOf = (k: string) => (k === 'force_path_style' || k === 'anonymous' ? 'true' : k === 'endpoint' ? toml('http://127.0.0.1:9000') : toml('v'));
const pathOf = (kind: string) => (kind === 'local' ? 'planet.pmtiles' : kind === 'http' ? 'https://example.com/planet.pmtiles' : `${kind}://tiles/planet.pmtiles`);

test('a storage key loads on the provider that takes it, and fails naming sources[0].<key> anywhere else', () => {
  fc.assert(
    fc.property(fc.constantFrom('s3', 'gs', 'az', 'local', 'http'), fc.constantFrom(...ALL_KEYS), (kind, k) => {
      const r = load(`[[sources]]\nid = "a"\ntype = "pmtiles"\npath = ${toml(pathOf(kind))}\n${k} = ${valueOf(k)}\n`);
      if (TAKES[kind].includes(k)) {
        assert.ok(r.ok, r.ok ? '' : r.message);
        if (r.ok) assert.equal(r.config.sources[0].path, pathOf(kind), 'a remote path is kept as written');
      } else {
        assert.equal(r.ok, false, `${k} on ${kind}`);
        if (!r.ok) assert.ok(r.message.startsWith(`${r.file}: sources[0].${k}: ${k} does not apply`), r.message);
      }
    }),
    { numRuns: 300 },
  );
});

test('MBTiles cannot be remote', () => {
  fc.assert(
    fc.property(fc.constantFrom('s3', 'gs', 'az', 'http'), (kind) => {
      const r = load(`[[sources]]\nid = "a"\ntype = "mbtiles"\npath = ${toml(pathOf(kind).replace('.pmtiles', '.mbtiles'))}\n`);
      assert.equal(r.ok, false);
      if (!r.ok) assert.ok(r.message.startsWith(`${r.file}: sources[0].path: MBTiles is SQLite`), r.message);
    }),
    { numRuns: 20 },
  );
});
