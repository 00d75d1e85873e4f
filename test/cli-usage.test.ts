// The command line as a user types it: each usage error is one line with a pointer to --help and exit code 2;
// folders and http(s) URLs as arguments; a config.toml or tileserver.toml in the working directory used when
// nothing is given; and property tests of the argument parser.
import { after, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { copyFileSync, mkdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import fc from './helpers/fast-check.js';
import { parseArgs } from '../src/cli/args.js';
import { CLI, fixture, freePort, runCli, startServer, scratchTmp } from './helpers/server.js';
import { getJson, request, startRangeServer, storedMbtilesTile, storedPmtilesTile, tempDir, ungzipIfNeeded } from './helpers/foundation.js';

/** Asserts a usage error: exit 2, one line on stderr naming what was wrong and pointing at --help, no stack. */
function assertUsage(r: { code: number | null; stdout: string; stderr: string }, pattern: RegExp) {
  assert.equal(r.code, 2, `exit code; stderr: ${r.stderr}`);
  const lines = r.stderr.split('\n').filter((l) => l.trim() !== '');
  assert.equal(lines.length, 1, `expected one line, got:\n${r.stderr}`);
  assert.match(lines[0], pattern);
  assert.match(lines[0], /--help/);
  assert.doesNotMatch(r.stderr, /\n\s+at /, 'no stack trace');
  assert.equal(r.stdout, '', 'nothing on stdout');
}

const mb = fixture('vector/world_cities.mbtiles');
const USAGE_ERRORS: [args: string[], pattern: RegExp][] = [
  [['--bogus'], /unknown option "--bogus"/],
  [['-x', mb], /unknown option "-x"/],
  [[mb, '--port'], /--port needs a value/],
  [[mb, '--port', '--workers', '1'], /--port needs a value/],
  [['-c'], /--config needs a value/],
  [['--config='], /--config needs a value/],
  [[mb, '--port', 'abc'], /--port: expected an integer 0\.\.65535, got "abc"/],
  [[mb, '--port', '70000'], /--port: expected an integer/],
  [[mb, '-p', '-1'], /--port: expected an integer/],
  [[mb, '--workers', '0'], /--workers: expected "auto" or an integer/],
  [[mb, '--workers', 'many'], /--workers: expected "auto" or an integer/],
  [[mb, '--help=yes'], /--help takes no value/],
  [[mb, '--port', '1', '--port', '2'], /--port is given more than once/],
  [['--config', 'a.toml', mb], /either --config FILE or/],
];

// One at a time: each is a process start, and the machine may be busy.
describe('each usage error', () => {
  for (const [args, pattern] of USAGE_ERRORS) {
    test(`tileserver-ts ${args.map((a) => (a === mb ? 'world_cities.mbtiles' : a)).join(' ')}: one line, --help, exit 2`, async () => {
      assertUsage(await runCli(args, {}, 60_000), pattern);
    });
  }
});

/** Runs the CLI in `cwd` until it exits. */
const runIn = (cwd: string, args: string[], env: NodeJS.ProcessEnv = {}) => runCli(args, { LOG_LEVEL: 'warn', ...env }, 60_000, cwd);

test('no arguments and no config file in the working directory: the usage on stderr, exit 2', async () => {
  const r = await runIn(tempDir(), []);
  assert.equal(r.code, 2);
  assert.match(r.stderr, /no config\.toml or tileserver\.toml here/);
  assert.match(r.stderr, /Usage:/);
  assert.match(r.stderr, /--config FILE/);
});

describe('a config file in the working directory is used when nothing is given', { concurrency: true }, () => {
  for (const name of ['config.toml', 'tileserver.toml']) {
    test(name, async () => {
      const dir = tempDir();
      // A relative path: resolved against the file's folder, which is the working directory here.
      copyFileSync(mb, path.join(dir, 'cities.mbtiles'));
      const port = await freePort();
      writeFileSync(path.join(dir, name), `[server]\nhost = "127.0.0.1"\nport = ${port}\nworkers = 1\n[[sources]]\nid = "found-${name.split('.')[0]}"\ntype = "mbtiles"\npath = "cities.mbtiles"\n`);
      const proc = spawn(process.execPath, [CLI], { cwd: dir, env: { ...process.env, LOG_LEVEL: 'warn', TMPDIR: scratchTmp() }, stdio: ['ignore', 'pipe', 'pipe'] });
      let out = '';
      proc.stdout.on('data', (d) => (out += d));
      proc.stderr.on('data', (d) => (out += d));
      const exited = new Promise((resolve) => proc.on('exit', resolve));
      try {
        let data: { json: { id: string }[] } | undefined;
        for (let i = 0; i < 600 && !data; i++) {
          try {
            data = await getJson<{ id: string }[]>(`http://127.0.0.1:${port}`, '/data.json');
          } catch {
            await new Promise((r) => setTimeout(r, 100));
          }
        }
        assert.ok(data, `the server did not answer:\n${out}`);
        assert.deepEqual(data.json.map((d) => d.id), [`found-${name.split('.')[0]}`]);
      } finally {
        proc.kill('SIGTERM');
        await exited;
      }
    });
  }
});

test('a folder argument serves every .pmtiles and .mbtiles in it, ids from the file names', async () => {
  const dir = tempDir();
  copyFileSync(mb, path.join(dir, 'cities.mbtiles'));
  copyFileSync(fixture('vector/omt-planet-z0-1.pmtiles'), path.join(dir, 'planet.pmtiles'));
  writeFileSync(path.join(dir, 'notes.txt'), 'not an archive');
  mkdirSync(path.join(dir, 'nested.pmtiles'));
  const server = await startServer({ files: [dir] });
  try {
    const data = await getJson<{ id: string }[]>(server.url, '/data.json');
    assert.deepEqual(data.json.map((d) => d.id).sort(), ['cities', 'planet']);
    const tile = await request(server.url, '/data/cities/0/0/0.pbf');
    assert.equal(tile.status, 200);
    assert.deepEqual(ungzipIfNeeded(tile.body), ungzipIfNeeded(storedMbtilesTile(mb, 0, 0, 0)!));
  } finally {
    await server.stop();
  }
});

test('a folder without archives is one line naming it, exit 1', async () => {
  const dir = tempDir();
  writeFileSync(path.join(dir, 'readme.txt'), 'nothing to serve');
  const r = await runCli([dir, '--port', '0', '--workers', '1'], {}, 60_000);
  assert.equal(r.code, 1);
  const lines = r.stderr.split('\n').filter(Boolean);
  assert.equal(lines.length, 1, r.stderr);
  assert.ok(lines[0].includes(dir), lines[0]);
  assert.match(lines[0], /no \.pmtiles or \.mbtiles/);
});

test('a path that does not exist and is no archive name is one line, exit 1', async () => {
  const missing = path.join(tempDir(), 'no-such-folder');
  const r = await runCli([missing, '--port', '0', '--workers', '1'], {}, 60_000);
  assert.equal(r.code, 1);
  assert.match(r.stderr, /no such file or folder/);
  assert.equal(r.stderr.split('\n').filter(Boolean).length, 1);
});

describe('an http(s) URL argument', () => {
  const archive = fixture('vector/omt-planet-z0-1.pmtiles');
  let range: Awaited<ReturnType<typeof startRangeServer>>;
  after(() => range?.close());

  test('is served as a remote PMTiles source named after the last path segment', async () => {
    range = await startRangeServer(archive);
    const server = await startServer({ files: [range.url] });
    try {
      const data = await getJson<{ id: string }[]>(server.url, '/data.json');
      assert.deepEqual(data.json.map((d) => d.id), ['omt-planet-z0-1']);
      const tile = await request(server.url, '/data/omt-planet-z0-1/1/1/0.pbf');
      assert.equal(tile.status, 200);
      assert.deepEqual(ungzipIfNeeded(tile.body), ungzipIfNeeded((await storedPmtilesTile(archive, 1, 1, 0))!));
      assert.ok(range.ranges.length > 0 && range.ranges.every((r) => r?.startsWith('bytes=')), 'read with range requests');
    } finally {
      await server.stop();
    }
  });
});

// ---- the parser itself ----

const word = fc.stringMatching(/^[A-Za-z0-9_./]{1,12}$/);
const input = word.filter((w) => !w.startsWith('-'));

test('parseArgs never throws; every usage message is one line', () => {
  const token = fc.oneof(
    fc.constantFrom('-c', '--config', '-p', '--port', '--host', '--workers', '-h', '--help', '-v', '--version', '--', '-', '--port=', '--x', '-hv'),
    fc.string({ maxLength: 12 }),
    fc.stringMatching(/^-{1,2}[a-z=]{0,8}$/),
  );
  fc.assert(
    fc.property(fc.array(token, { maxLength: 8 }), (argv) => {
      const r = parseArgs(argv);
      if (r.kind === 'usage') {
        assert.ok(r.message.length > 0);
        assert.doesNotMatch(r.message, /[\n\r]/);
      }
    }),
    { numRuns: 3000 },
  );
});

test('parseArgs reads back any valid command line, in any option order and spelling', () => {
  const spelling = fc.constantFrom('space', 'equals', 'short');
  fc.assert(
    fc.property(
      fc.record(
        {
          config: fc.option(word, { nil: undefined }),
          host: fc.option(word, { nil: undefined }),
          port: fc.option(fc.integer({ min: 0, max: 65535 }), { nil: undefined }),
          workers: fc.option(fc.oneof(fc.constant('auto' as const), fc.integer({ min: 1, max: 256 })), { nil: undefined }),
        },
        { requiredKeys: [] },
      ),
      fc.array(input, { maxLength: 4 }),
      fc.array(spelling, { minLength: 4, maxLength: 4 }),
      fc.integer({ min: 0, max: 1000 }),
      (opts, inputs, spellings, seed) => {
        const files = opts.config !== undefined ? [] : inputs;
        const groups: string[][] = [];
        const add = (long: string, short: string | undefined, value: string, how: string) => {
          if (how === 'equals') groups.push([`--${long}=${value}`]);
          else if (how === 'short' && short) groups.push([`-${short}`, value]);
          else groups.push([`--${long}`, value]);
        };
        if (opts.config !== undefined) add('config', 'c', opts.config, spellings[0]);
        if (opts.host !== undefined) add('host', undefined, opts.host, spellings[1]);
        if (opts.port !== undefined) add('port', 'p', String(opts.port), spellings[2]);
        if (opts.workers !== undefined) add('workers', undefined, String(opts.workers), spellings[3]);
        for (const f of files) groups.push([f]);
        // A deterministic shuffle of the groups: options and inputs may come in any order.
        const order = groups.map((g, i) => ({ g, k: (i * 7919 + seed) % 1009 })).sort((a, b) => a.k - b.k);
        const argv = order.flatMap((o) => o.g);
        const r = parseArgs(argv);
        assert.equal(r.kind, 'run', JSON.stringify({ argv, r }));
        if (r.kind !== 'run') return;
        assert.equal(r.config, opts.config);
        assert.equal(r.host, opts.host);
        assert.equal(r.port, opts.port);
        assert.equal(r.workers, opts.workers);
        assert.deepEqual([...r.inputs].sort(), [...files].sort());
      },
    ),
    { numRuns: 2000 },
  );
});

test('parseArgs: after --, everything is an input', () => {
  fc.assert(
    fc.property(fc.array(fc.string({ minLength: 1, maxLength: 10 }), { maxLength: 5 }), (rest) => {
      const r = parseArgs(['--', ...rest]);
      assert.equal(r.kind, 'run');
      if (r.kind === 'run') assert.deepEqual(r.inputs, rest);
    }),
  );
});

test('parseArgs: a port outside 0..65535 or not in digits is a usage error naming --port', () => {
  const bad = fc.oneof(
    fc.integer({ min: 65536, max: 10_000_000 }).map(String),
    fc.string({ minLength: 1, maxLength: 8 }).filter((s) => !/^\d+$/.test(s) && !s.startsWith('-')),
  );
  fc.assert(
    fc.property(bad, (value) => {
      const r = parseArgs(['x.pmtiles', '--port', value]);
      assert.equal(r.kind, 'usage');
      if (r.kind === 'usage') assert.match(r.message, /^--port: expected an integer 0\.\.65535/);
    }),
  );
});
