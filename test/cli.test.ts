// The command line: --help, --version, --config, archives given as arguments, --host/--port, and start-up
// failures (a source that cannot be opened, an invalid config) as one clear line and a non-zero exit code.
import { describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { copyFileSync, readFileSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { fixture, freePort, ROOT, runCli, startServer, writeTempConfig } from './helpers/server.js';
import { getJson, request, tempDir } from './helpers/foundation.js';

const pkg = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { version: string };

test('--help prints the usage with every option and exits 0', async () => {
  for (const r of await Promise.all(['--help', '-h'].map((flag) => runCli([flag])))) {
    assert.equal(r.code, 0, r.stderr);
    for (const option of ['--config', '--host', '--port', '--help', '--version', '.pmtiles', '.mbtiles']) assert.ok(r.stdout.includes(option), `usage lacks ${option}`);
  }
});

test('--version prints the package version and exits 0', async () => {
  for (const r of await Promise.all(['--version', '-v'].map((flag) => runCli([flag])))) {
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout.trim(), pkg.version);
  }
});

test('no config and no archives: usage on stderr, non-zero exit', async () => {
  const r = await runCli([]);
  assert.notEqual(r.code, 0);
  assert.match(r.stderr, /--config/);
});

test('archives on the command line are served with defaults, ids from the file names, on --host/--port', async () => {
  const pm = fixture('vector/omt-planet-z0-1.pmtiles');
  const mb = fixture('vector/world_cities.mbtiles');
  const server = await startServer({ files: [pm, mb] });
  try {
    assert.match(server.url, /^http:\/\/127\.0\.0\.1:\d+$/);
    const data = await getJson<{ id: string; format: string; tiles: string[] }[]>(server.url, '/data.json');
    assert.deepEqual(data.json.map((d) => d.id).sort(), ['omt-planet-z0-1', 'world_cities']);
    for (const d of data.json) {
      assert.equal(d.format, 'pbf');
      assert.ok(d.tiles[0].startsWith(`${server.url}/data/${d.id}/`), d.tiles[0]);
    }
    const tile = await request(server.url, '/data/world_cities/0/0/0.pbf');
    assert.equal(tile.status, 200);
    const ping = await getJson<{ loaded_sources: number; cors_origins: string[]; compression_enabled: boolean; cache_enabled: boolean }>(server.url, '/ping');
    assert.equal(ping.json.loaded_sources, 2);
    assert.deepEqual(ping.json.cors_origins, ['*']);
    assert.equal(ping.json.compression_enabled, true);
    assert.equal(ping.json.cache_enabled, true);
  } finally {
    await server.stop();
  }
});

test('--port and --host override the config file', async () => {
  const server = await startServer({ toml: '[server]\nhost = "0.0.0.0"\nport = 1\n' });
  try {
    // The helper passes --host 127.0.0.1 --port <free port>: answering there proves both overrides took effect.
    const res = await request(server.url, '/health');
    assert.equal(res.status, 200);
    assert.equal(res.body.toString(), 'OK');
  } finally {
    await server.stop();
  }
});

/** Asserts a failed start: non-zero exit, exactly one line on stderr matching every pattern, no stack trace. */
function assertOneLine(r: { code: number | null; stdout: string; stderr: string }, patterns: RegExp[]) {
  assert.notEqual(r.code, 0, 'exit code');
  assert.notEqual(r.code, null, 'the process exited by itself');
  const lines = r.stderr.split('\n').filter((l) => l.trim() !== '');
  assert.equal(lines.length, 1, `expected one line, got:\n${r.stderr}`);
  for (const p of patterns) assert.match(lines[0], p);
  assert.doesNotMatch(r.stderr, /\n\s+at /, 'no stack trace');
}

const BROKEN: [file: string, reason: RegExp][] = [
  ['invalid.pmtiles', /not a PMTiles archive/],
  ['invalid_v4.pmtiles', /version/i],
  ['empty.pmtiles', /empty/],
  ['json-format.mbtiles', /format "json"/],
];

// Independent processes: run side by side to keep the suite's wall time down.
describe('each broken fixture', { concurrency: true }, () => {
  for (const [file, reason] of BROKEN) {
    test(`broken/${file} as an argument stops start-up with one line naming the source and the reason`, async () => {
      const r = await runCli([fixture('broken', file), '--port', '0', '--workers', '1']);
      assertOneLine(r, [new RegExp(`"${path.basename(file, path.extname(file))}"`), reason]);
    });
  }
});

test('a broken source among good ones in a config stops start-up naming that source', async () => {
  const config = writeTempConfig(`
[[sources]]
id = "good"
type = "pmtiles"
path = "${fixture('vector/omt-planet-z0-1.pmtiles')}"
[[sources]]
id = "bad-one"
type = "pmtiles"
path = "${fixture('broken/invalid_v4.pmtiles')}"
[[sources]]
id = "cities"
type = "mbtiles"
path = "${fixture('vector/world_cities.mbtiles')}"
`);
  const r = await runCli(['--config', config, '--port', '0', '--workers', '1']);
  assertOneLine(r, [/"bad-one"/, /version/i]);
});

test('a missing archive, a non-SQLite .mbtiles and a wrong type are each one line', async () => {
  const dir = tempDir();
  const notSqlite = path.join(dir, 'text.mbtiles');
  writeFileSync(notSqlite, 'this is not a database, just text long enough to fill a header page '.repeat(20));
  const pmtilesAsMbtiles = path.join(dir, 'really-pmtiles.mbtiles');
  copyFileSync(fixture('vector/omt-planet-z0-1.pmtiles'), pmtilesAsMbtiles);
  const cases: [string[], RegExp[]][] = [
    [[path.join(dir, 'missing.pmtiles')], [/"missing"/, /no such file/]],
    [[path.join(dir, 'missing.mbtiles')], [/"missing"/, /no such file/]],
    [[notSqlite], [/"text"/, /not an SQLite database/]],
    [[pmtilesAsMbtiles], [/"really-pmtiles"/, /not an SQLite database/]],
    [[fixture('files/README.txt')], [/README\.txt/, /\.pmtiles or \.mbtiles/]],
  ];
  // Five process starts at once: allow for a busy machine.
  const results = await Promise.all(cases.map(([args]) => runCli([...args, '--port', '0', '--workers', '1'], {}, 60_000)));
  results.forEach((r, i) => assertOneLine(r, cases[i][1]));
});

test('an invalid config stops start-up naming the file and key; a bad --port is refused', async () => {
  const config = writeTempConfig('[server]\nport = "eighty"\n');
  const [invalid, badPort, absent] = await Promise.all([
    runCli(['--config', config]),
    runCli([fixture('vector/world_cities.mbtiles'), '--port', 'http']),
    runCli(['--config', path.join(tempDir(), 'absent.toml')]),
  ]);
  assertOneLine(invalid, [new RegExp(config.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')), /server\.port/]);
  assertOneLine(badPort, [/--port/]);
  assertOneLine(absent, [/absent\.toml/]);
});

test('a port already in use stops start-up with one line, with one process and with several', async () => {
  const port = await freePort();
  const taken = net.createServer();
  await new Promise<void>((resolve) => taken.listen(port, '127.0.0.1', resolve));
  try {
    const runs = await Promise.all(
      ['1', '2'].map((workers) => runCli([fixture('vector/world_cities.mbtiles'), '--host', '127.0.0.1', '--port', String(port), '--workers', workers], {}, 60_000)),
    );
    for (const r of runs) {
      assertOneLine(r, [new RegExp(`127\\.0\\.0\\.1:${port}`), /already in use/]);
      assert.doesNotMatch(r.stdout, /listening/, 'no false "listening" line');
    }
  } finally {
    await new Promise((resolve) => taken.close(resolve));
  }
});
