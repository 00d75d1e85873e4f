// Configuration: TOML read with smol-toml, every key validated, errors naming file + key path + what was
// expected, unknown keys warned by path, `${VAR}` expansion, paths relative to the file, and the SHA-256 of
// the file's bytes as config_hash (checked on a running server's /ping).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { loadConfigFile } from '../src/config/load.js';
import { ConfigError } from '../src/config/errors.js';
import { fixture, startServer } from './helpers/server.js';
import { getJson, sha256, tempDir } from './helpers/foundation.js';

function writeConfig(toml: string, name = 'config.toml'): string {
  const file = path.join(tempDir('tsts-config-'), name);
  writeFileSync(file, toml);
  return file;
}

/** The ConfigError message `toml` produces; fails the test when it loads. */
function loadError(toml: string, env: NodeJS.ProcessEnv = {}): { file: string; message: string } {
  const file = writeConfig(toml);
  try {
    loadConfigFile(file, env);
  } catch (err) {
    assert.ok(err instanceof ConfigError, `expected a ConfigError, got ${String(err)}`);
    return { file, message: err.message };
  }
  assert.fail(`this configuration loaded although it is invalid:\n${toml}`);
}

const FULL = `
fonts = "fonts-dir"
files = "files-dir"

[server]
host = "127.0.0.2"
port = 9123
public_url = "https://tiles.example.com/maps"
cors_origins = ["https://a.example", "https://b.example"]
workers = 3
admin_bind = "127.0.0.1:9124"
upload_dir = "uploads"
upload_max_size_mb = 12
disable_render = true

[[sources]]
id = "omt"
type = "pmtiles"
path = "tiles/omt.pmtiles"
name = "OMT"
attribution = "© OSM"
description = "planet"
minzoom = 1
maxzoom = 9

[[sources]]
id = "remote"
type = "pmtiles"
path = "https://data.example.com/planet.pmtiles"

[[sources]]
id = "cities"
type = "mbtiles"
path = "/abs/cities.mbtiles"

[cache]
enabled = false
max_size_mb = 64
ttl_seconds = 60
dir = "scratch"

[compression]
enabled = false
br_quality = 9
zstd_level = 19
`;

test('every documented key is read, typed and kept; relative paths are relative to the file', () => {
  const file = writeConfig(FULL);
  const dir = path.dirname(file);
  const { config, hash, warnings, file: abs } = loadConfigFile(file, {});
  assert.deepEqual(warnings, []);
  assert.equal(abs, file);
  assert.equal(hash, sha256(readFileSync(file)));
  assert.equal(config.fonts, path.join(dir, 'fonts-dir'));
  assert.equal(config.files, path.join(dir, 'files-dir'));
  assert.deepEqual(
    { ...config.server },
    {
      ...config.server,
      host: '127.0.0.2',
      port: 9123,
      public_url: 'https://tiles.example.com/maps',
      cors_origins: ['https://a.example', 'https://b.example'],
      workers: 3,
      admin_bind: '127.0.0.1:9124',
      upload_dir: path.join(dir, 'uploads'),
      upload_max_size_mb: 12,
      disable_render: true,
    },
  );
  assert.deepEqual(config.sources[0], {
    id: 'omt',
    type: 'pmtiles',
    path: path.join(dir, 'tiles/omt.pmtiles'),
    name: 'OMT',
    attribution: '© OSM',
    description: 'planet',
    minzoom: 1,
    maxzoom: 9,
  });
  assert.equal(config.sources[1].path, 'https://data.example.com/planet.pmtiles', 'an http(s) URL is kept as it is');
  assert.equal(config.sources[2].path, '/abs/cities.mbtiles');
  assert.equal(config.sources[2].type, 'mbtiles');
  assert.deepEqual({ ...config.cache }, { ...config.cache, enabled: false, max_size_mb: 64, ttl_seconds: 60, dir: path.join(dir, 'scratch') });
  assert.deepEqual({ ...config.compression }, { ...config.compression, enabled: false, br_quality: 9, zstd_level: 19 });
});

test('an empty file gives the documented defaults', () => {
  const { config, warnings } = loadConfigFile(writeConfig(''), {});
  assert.deepEqual(warnings, []);
  assert.equal(config.server.host, '0.0.0.0');
  assert.equal(config.server.port, 8080);
  assert.deepEqual(config.server.cors_origins, ['*']);
  assert.equal(config.server.workers, 'auto');
  assert.equal(config.server.admin_bind, '127.0.0.1:0');
  assert.equal(config.server.upload_max_size_mb, 500);
  assert.equal(config.server.disable_render, false);
  assert.equal(config.server.disable_ogc, false);
  assert.deepEqual(config.sources, []);
  assert.equal(config.cache.enabled, true);
  assert.equal(config.compression.enabled, true);
  assert.ok(config.compression.br_quality >= 0 && config.compression.br_quality <= 11);
  assert.ok(config.compression.zstd_level >= 1 && config.compression.zstd_level <= 22);
});

/** [TOML, key path the message must name, what the message must say was expected]. */
const INVALID: [string, string, RegExp][] = [
  ['fonts = 3', 'fonts', /string/i],
  ['files = true', 'files', /string/i],
  ['[server]\nhost = 1', 'server.host', /string/i],
  ['[server]\nport = "x"', 'server.port', /number/i],
  ['[server]\nport = 70000', 'server.port', /65535/],
  ['[server]\nport = 80.5', 'server.port', /integer/i],
  ['[server]\npublic_url = "tiles.example.com"', 'server.public_url', /URL/],
  ['[server]\ncors_origins = "*"', 'server.cors_origins', /array/i],
  ['[server]\nworkers = 0', 'server.workers', />=\s*1/],
  ['[server]\nworkers = "many"', 'server.workers', /auto/],
  ['[server]\nadmin_bind = 8080', 'server.admin_bind', /string/i],
  ['[server]\nupload_dir = false', 'server.upload_dir', /string/i],
  ['[server]\nupload_max_size_mb = "big"', 'server.upload_max_size_mb', /number/i],
  ['[server]\ndisable_render = "yes"', 'server.disable_render', /boolean/i],
  ['[server]\ndisable_ogc = 1', 'server.disable_ogc', /boolean/i],
  ['[[sources]]\nid = "a"\ntype = "shapefile"\npath = "x"', 'sources[0].type', /pmtiles.*mbtiles/],
  ['[[sources]]\nid = "a"\ntype = "pmtiles"', 'sources[0].path', /missing|required/i],
  ['[[sources]]\ntype = "pmtiles"\npath = "x"', 'sources[0].id', /missing|required/i],
  ['[[sources]]\nid = "a b/c"\ntype = "pmtiles"\npath = "x"', 'sources[0].id', /letters, digits/],
  ['[[sources]]\nid = "a"\ntype = "pmtiles"\npath = "x"\nname = 5', 'sources[0].name', /string/i],
  ['[[sources]]\nid = "a"\ntype = "pmtiles"\npath = "x"\nattribution = []', 'sources[0].attribution', /string/i],
  ['[[sources]]\nid = "a"\ntype = "pmtiles"\npath = "x"\ndescription = 1', 'sources[0].description', /string/i],
  ['[[sources]]\nid = "a"\ntype = "pmtiles"\npath = "x"\nminzoom = -1', 'sources[0].minzoom', />=\s*0/],
  ['[[sources]]\nid = "a"\ntype = "pmtiles"\npath = "x"\nmaxzoom = 23', 'sources[0].maxzoom', /<=\s*22/],
  ['[[sources]]\nid = "a"\ntype = "pmtiles"\npath = "x"\nmaxzoom = 2.5', 'sources[0].maxzoom', /integer/i],
  ['[[sources]]\nid = "a"\ntype = "pmtiles"\npath = "x"\nminzoom = 6\nmaxzoom = 2', 'sources[0]', /minzoom 6 is above maxzoom 2/],
  ['[[sources]]\nid = "a"\ntype = "pmtiles"\npath = "x"\n[[sources]]\nid = "a"\ntype = "mbtiles"\npath = "y"', 'sources', /duplicate.*"a"/],
  ['sources = "x"', 'sources', /array/i],
  ['[cache]\nenabled = 1', 'cache.enabled', /boolean/i],
  ['[cache]\nmax_size_mb = -5', 'cache.max_size_mb', />=\s*0/],
  ['[cache]\nttl_seconds = "1h"', 'cache.ttl_seconds', /number/i],
  ['[cache]\ndir = 7', 'cache.dir', /string/i],
  ['[compression]\nenabled = "on"', 'compression.enabled', /boolean/i],
  ['[compression]\nbr_quality = 12', 'compression.br_quality', /<=\s*11/],
  ['[compression]\nzstd_level = 0', 'compression.zstd_level', />=\s*1/],
  ['[compression]\nzstd_level = 23', 'compression.zstd_level', /<=\s*22/],
];

for (const [toml, keyPath, expected] of INVALID) {
  test(`invalid ${keyPath} (${toml.replace(/\n/g, ' ')}) is an error naming the file, the key and what was expected`, () => {
    const { file, message } = loadError(toml);
    const line = message.split('\n').find((l) => l.includes(keyPath));
    assert.ok(line, `no line names ${keyPath}:\n${message}`);
    assert.ok(line.startsWith(`${file}: `), `the line does not name the file: ${line}`);
    assert.match(line, expected);
  });
}

test('every invalid key of a file is reported, one line each', () => {
  const { message } = loadError('[server]\nport = "x"\n[cache]\nenabled = "no"\n[compression]\nbr_quality = 99');
  const lines = message.split('\n');
  assert.equal(lines.length, 3, message);
  assert.ok(lines.some((l) => l.includes('server.port')));
  assert.ok(lines.some((l) => l.includes('cache.enabled')));
  assert.ok(lines.some((l) => l.includes('compression.br_quality')));
});

test('a TOML syntax error names the file, line and column', () => {
  const { file, message } = loadError('[server\nport = 1');
  assert.ok(message.startsWith(`${file}:1:8: `), message);
  assert.match(message, /TOML/);
});

test('a missing config file is an error naming it', () => {
  const file = path.join(tempDir(), 'nope.toml');
  assert.throws(() => loadConfigFile(file, {}), (err: unknown) => err instanceof ConfigError && err.message.includes(file));
});

test('unknown keys inside known sections are warnings naming the key path, and the rest of the file still loads', () => {
  // Unknown top-level keys and sections are errors: test/config-errors.test.ts.
  const file = writeConfig(`
[server]
prot = 1
port = 8081
[[sources]]
id = "a"
type = "pmtiles"
path = "x.pmtiles"
max_zoom = 3
[cache]
size = 3
[compression]
level = 3
`);
  const { config, warnings } = loadConfigFile(file, {});
  assert.equal(config.server.port, 8081);
  assert.equal(config.sources[0].maxzoom, undefined);
  const named = warnings.map((w) => {
    assert.ok(w.startsWith(`${file}: `), w);
    return /unknown key (\S+)/.exec(w)?.[1];
  });
  assert.deepEqual(named.sort(), ['cache.size', 'compression.level', 'server.prot', 'sources[0].max_zoom'].sort());
});

test('${VAR} expands from the environment in any string value, including inside arrays', () => {
  const file = writeConfig(`
files = "\${DATA}/files"
[server]
cors_origins = ["https://\${HOST_A}", "https://b.example"]
[[sources]]
id = "a"
type = "pmtiles"
path = "\${DATA}/\${NAME}.pmtiles"
name = "cost: $5 \${NAME}"
`);
  const { config } = loadConfigFile(file, { DATA: '/srv/data', NAME: 'planet', HOST_A: 'a.example' });
  assert.equal(config.files, '/srv/data/files');
  assert.equal(config.sources[0].path, '/srv/data/planet.pmtiles');
  assert.equal(config.sources[0].name, 'cost: $5 planet', 'a $ not followed by {NAME} is literal text');
  assert.deepEqual(config.server.cors_origins, ['https://a.example', 'https://b.example']);
});

test('an unset ${VAR} is an error naming the variable and the key', () => {
  const { file, message } = loadError('[[sources]]\nid = "a"\ntype = "pmtiles"\npath = "${TILES_DIR_NOT_SET}/a.pmtiles"');
  assert.ok(message.startsWith(`${file}: `), message);
  assert.match(message, /TILES_DIR_NOT_SET/);
  assert.match(message, /sources\[0\]\.path/);
});

test('an expanded value is validated like a literal one', () => {
  const { message } = loadError('[server]\npublic_url = "${PUBLIC}"', { PUBLIC: 'not a url' });
  assert.match(message, /server\.public_url/);
});

test('a running server reports the SHA-256 of the file bytes as config_hash, warns about unknown keys, and expands ${VAR}', async () => {
  const toml = `# a comment changes the bytes and so the hash
[server]
disable_render = true
typo_key = 1
[[sources]]
id = "cities"
type = "mbtiles"
path = "\${FIXTURE_DIR}/world_cities.mbtiles"
name = "\${CITY_NAME}"
`;
  const server = await startServer({ toml, env: { FIXTURE_DIR: fixture('vector'), CITY_NAME: 'Cities from env' } });
  try {
    const ping = await getJson<{ config_hash: string; loaded_sources: number }>(server.url, '/ping');
    assert.equal(ping.json.config_hash, sha256(readFileSync(server.configFile!)));
    assert.equal(ping.json.config_hash, sha256(toml));
    assert.equal(ping.json.loaded_sources, 1);
    const tj = await getJson<{ name: string }>(server.url, '/data/cities.json');
    assert.equal(tj.status, 200);
    assert.equal(tj.json.name, 'Cities from env');
    assert.match(server.output(), /unknown key server\.typo_key/);
  } finally {
    await server.stop();
  }
});

test('re-reading for a reload keeps what cannot be reloaded, and names what the file changed there', async () => {
  const { rereadConfig } = await import('../src/server.js');
  const file = path.join(tempDir(), 'config.toml');
  writeFileSync(file, '[server]\nhost = "0.0.0.0"\nport = 8080\nworkers = 1\n');
  const current = loadConfigFile(file);
  // As the CLI applies --host, --port and --workers.
  current.config.server.host = '127.0.0.1';
  current.config.server.port = 9999;
  current.config.server.workers = 3;
  current.overrides = { host: '127.0.0.1', port: 9999, workers: 3 };
  writeFileSync(file, '[server]\nhost = "0.0.0.0"\nport = 8080\nworkers = 1\ndisable_render = true\n');
  const { loaded: next, restartRequired } = rereadConfig(current);
  assert.equal(next.config.server.disable_render, true, 'the file was read again');
  assert.equal(next.config.server.host, '127.0.0.1');
  assert.equal(next.config.server.port, 9999);
  assert.equal(next.config.server.workers, 3);
  assert.deepEqual(restartRequired, [], 'values overridden on the command line are not changes of the file');
  // A change of a restart-only setting in the file: reported, not applied.
  writeFileSync(file, '[server]\nhost = "0.0.0.0"\nport = 8080\nworkers = 1\ncors_origins = ["https://a.example"]\nadmin_bind = "127.0.0.1:7001"\n[telemetry]\nsample_rate = 0.5\n[raster]\npool_size = 3\ntile_size = 512\n');
  const again = rereadConfig(current);
  assert.deepEqual(again.restartRequired, ['server.admin_bind', 'server.cors_origins', 'telemetry', 'raster.pool_size']);
  assert.deepEqual(again.loaded.config.server.cors_origins, ['*']);
  assert.equal(again.loaded.config.server.admin_bind, '127.0.0.1:0');
  assert.equal(again.loaded.config.telemetry.sample_rate, 1);
  assert.equal(again.loaded.config.raster.pool_size, undefined);
  assert.equal(again.loaded.config.raster.tile_size, 512, 'the reloadable part of a section is applied');
});

test('a reload that changes server.transcode_threads is reported as needing a restart, and the running pools keep their size', async () => {
  const { rereadConfig } = await import('../src/server.js');
  const { startValues } = await import('../src/config/restart-only.js');
  const file = path.join(tempDir(), 'config.toml');
  writeFileSync(file, '[server]\ntranscode_threads = 2\n');
  const current = loadConfigFile(file);
  writeFileSync(file, '[server]\ntranscode_threads = 5\ntile_cache_control = "no-store"\n');
  const { loaded, restartRequired } = rereadConfig(current);
  assert.deepEqual(restartRequired, ['server.transcode_threads']);
  assert.equal(startValues(loaded.config).server.transcode_threads, 2, 'the vector and terrain pools are sized from the running value');
  assert.equal(loaded.config.server.tile_cache_control, 'no-store', 'the rest of [server] is applied');
});

test('every restart-only key: a changed value is reported and the running one kept; every other key is applied', async () => {
  const { RESTART_ONLY_KEYS, keepRestartOnly, restartOnlyChanges } = await import('../src/config/restart-only.js');
  const { SECTIONS } = await import('../src/config/schema.js');
  const running = loadConfigFile(writeConfig(''), {}).config;
  for (const key of RESTART_ONLY_KEYS) {
    const [section, name] = key.split('.') as [keyof typeof running, string | undefined];
    const marker = { changed: key };
    const next = { ...running, [section]: name === undefined ? marker : { ...(running[section] as object), [name]: marker } } as unknown as typeof running;
    assert.deepEqual(restartOnlyChanges(running, next), [key]);
    const kept = keepRestartOnly(running, next) as unknown as Record<string, Record<string, unknown>>;
    assert.notDeepEqual(name === undefined ? kept[section] : kept[section][name], marker, `${key} is kept at its running value`);
  }
  // A key not declared restart-only is applied by a reload as the file says.
  const declared = new Set<string>(RESTART_ONLY_KEYS);
  for (const [section, s] of Object.entries(SECTIONS)) {
    if (s.restartOnly === 'all' || declared.has(section)) continue;
    const value = running[section as keyof typeof running];
    if (value === null || typeof value !== 'object' || Array.isArray(value)) continue;
    for (const name of Object.keys(value)) {
      if (declared.has(`${section}.${name}`)) continue;
      const next = { ...running, [section]: { ...(value as object), [name]: 'changed' } } as typeof running;
      assert.deepEqual(restartOnlyChanges(running, next), [], `${section}.${name}`);
      assert.equal((keepRestartOnly(running, next) as unknown as Record<string, Record<string, unknown>>)[section][name], 'changed', `${section}.${name} is applied`);
    }
  }
});
