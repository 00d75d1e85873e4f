// Process model: with workers = 2 both workers serve (seen from which process owns each accepted socket), a
// worker killed with SIGKILL is replaced while the service keeps answering, SIGHUP re-reads the config file
// (an invalid file or an unopenable source keeps the old one), and SIGTERM lets an in-flight request finish
// before exiting 0. The single-process mode (workers = 1) is checked for SIGHUP and SIGTERM as well.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { gunzipSync } from 'node:zlib';
import { spawn, type ChildProcess } from 'node:child_process';
import os from 'node:os';
import { workerCount } from '../src/config/sizing.js';
import { CLI, fixture, freePort, startServer, writeTempConfig, type TestServer, scratchTmp } from './helpers/server.js';
import { getJson, request, sha256, startRangeServer, storedPmtilesTile, waitFor, type RangeServer } from './helpers/foundation.js';
import { askOnFreshConnection, childrenOf } from './helpers/processes.js';

const OMT = fixture('vector/omt-planet-z0-1.pmtiles');

function configText(remoteUrl: string, extra = ''): string {
  return `
[server]
disable_render = true
[[sources]]
id = "omt"
type = "pmtiles"
path = "${OMT}"
[[sources]]
id = "remote"
type = "pmtiles"
path = "${remoteUrl}"
${extra}`;
}

const alive = (pid: number) => {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch {
    return false;
  }
};

/** A process's arguments, node's own flags included. */
const cmdline = (pid: number) => readFileSync(`/proc/${pid}/cmdline`, 'utf8').split('\0');

/** Pids that served a run of fresh connections. */
async function servingPids(port: number, candidates: number[], connections = 8): Promise<Set<number>> {
  const seen = new Set<number>();
  for (let i = 0; i < connections; i++) {
    const { pid } = await askOnFreshConnection(port, 'GET', '/health', candidates);
    if (pid !== undefined) seen.add(pid);
  }
  return seen;
}

/** Asks /ping on `n` fresh connections (spread over the workers) and returns the config hashes seen. */
async function hashesSeen(s: TestServer, n = 6): Promise<Set<string>> {
  const seen = new Set<string>();
  for (let i = 0; i < n; i++) seen.add((await getJson<{ config_hash: string }>(s.url, '/ping')).json.config_hash);
  return seen;
}

/** Waits until every worker reports `hash` (several answers in a row, new connections each). */
const waitForHash = (s: TestServer, hash: string) =>
  waitFor(`config_hash ${hash.slice(0, 8)} on every worker`, async () => {
    const seen = await hashesSeen(s);
    return seen.size === 1 && seen.has(hash) ? true : undefined;
  });

/** Sends SIGTERM (or `signal`) while a slow tile request is in flight; the request must complete and the process exit 0. */
async function drainsInFlightRequest(s: TestServer, remote: RangeServer, tile: [number, number, number], signal: NodeJS.Signals = 'SIGTERM') {
  const [z, x, y] = tile;
  const stored = (await storedPmtilesTile(OMT, z, x, y))!;
  remote.setDelay(1500);
  const seenBefore = remote.ranges.length;
  const pending = request(s.url, `/data/remote/${z}/${x}/${y}.pbf`, { headers: { 'Accept-Encoding': 'gzip' } });
  // The worker has asked the remote archive for the tile: the request is in flight inside the server.
  await waitFor('the tile request to reach the remote archive', () => (remote.ranges.length > seenBefore ? true : undefined));
  const exited = new Promise<number | null>((resolve) => s.proc.once('exit', (code) => resolve(code)));
  s.proc.kill(signal);
  const res = await pending;
  assert.equal(res.status, 200);
  assert.ok(res.body.equals(stored), 'the in-flight request got the whole tile');
  assert.equal(await exited, 0);
  remote.setDelay(0);
}

describe('workers = 2', () => {
  let remote: RangeServer;
  let server: TestServer;
  let primary: number;

  before(async () => {
    remote = await startRangeServer(OMT);
    server = await startServer({ toml: configText(remote.url), workers: 2 });
    primary = server.proc.pid!;
  });
  after(async () => {
    // Workers outlive a SIGKILLed primary (they are re-parented): take their pids first.
    const workers = primary ? childrenOf(primary) : [];
    await server?.stop('SIGKILL');
    for (const pid of workers) if (alive(pid)) process.kill(pid, 'SIGKILL');
    await remote?.close();
  });

  test('two worker processes, and both serve requests', async () => {
    const workers = await waitFor('two workers', () => {
      const kids = childrenOf(primary);
      return kids.length === 2 ? kids : undefined;
    });
    // /health answered once the first worker listened; the second may still be starting.
    // The primary accepts each connection and hands it over (it may hold the socket for a moment): the worker
    // holding it is the one that answered.
    const served = await waitFor('both workers to serve', async () => {
      const s = await servingPids(server.port, workers);
      return s.size >= 2 ? s : undefined;
    });
    assert.deepEqual([...served].sort((a, b) => a - b), workers, 'every worker served a connection');
    const tile = await request(server.url, '/data/omt/0/0/0.pbf');
    assert.equal(tile.status, 200);
    // server.semi_space_mb (default 64) reaches every worker's node, not the primary's (whose heap was made first).
    for (const pid of workers) assert.ok(cmdline(pid).includes('--max-semi-space-size=64'), `worker ${pid}: ${cmdline(pid).join(' ')}`);
    assert.ok(!cmdline(primary).some((a) => a.startsWith('--max-semi-space-size')), cmdline(primary).join(' '));
  });

  test('SIGHUP re-reads the config file: the new hash and sources on every worker', async () => {
    const file = server.configFile!;
    const oldHash = sha256(readFileSync(file));
    assert.deepEqual(await hashesSeen(server), new Set([oldHash]));
    const next = configText(
      remote.url,
      `[[sources]]\nid = "cities"\ntype = "mbtiles"\npath = "${fixture('vector/world_cities.mbtiles')}"\n`,
    );
    writeFileSync(file, next);
    process.kill(primary, 'SIGHUP');
    await waitForHash(server, sha256(next));
    for (let i = 0; i < 4; i++) {
      const ping = await getJson<{ loaded_sources: number }>(server.url, '/ping');
      assert.equal(ping.json.loaded_sources, 3);
      assert.equal((await request(server.url, '/data/cities/0/0/0.pbf')).status, 200);
    }
    assert.equal(childrenOf(primary).length, 2, 'a reload restarts no process');
  });

  test('SIGHUP with an invalid file, or a source that cannot be opened, keeps the current configuration', async () => {
    const file = server.configFile!;
    const current = sha256(readFileSync(file));
    writeFileSync(file, '[server\nthis is not TOML');
    process.kill(primary, 'SIGHUP');
    await waitFor('the invalid-config message', () => (/"trigger":"SIGHUP","error":"the configuration file is invalid: .*invalid TOML.*","msg":"reload failed; the previous configuration stays active"/.test(server.output()) ? true : undefined));
    assert.deepEqual(await hashesSeen(server), new Set([current]));

    const broken = configText(remote.url, `[[sources]]\nid = "bad"\ntype = "pmtiles"\npath = "${fixture('broken/invalid.pmtiles')}"\n`);
    writeFileSync(file, broken);
    process.kill(primary, 'SIGHUP');
    // Every worker fails to open it; none adopts it.
    await waitFor('the reload to be refused', () => (/"trigger":"SIGHUP","error":"process \d+: .*invalid\.pmtiles.*","msg":"reload failed/.test(server.output()) ? true : undefined));
    assert.deepEqual(await hashesSeen(server), new Set([current]));
    assert.equal((await request(server.url, '/data/cities/0/0/0.pbf')).status, 200);
    assert.equal((await request(server.url, '/data/bad.json')).status, 404);
  });

  test('a worker killed with SIGKILL is replaced, and the service keeps answering', async () => {
    const before = childrenOf(primary);
    assert.equal(before.length, 2);
    const [victim, survivor] = before;
    const exitsLogged = () => (server.output().match(/worker exited; starting a replacement/g) ?? []).length;
    const logged = exitsLogged();
    process.kill(victim, 'SIGKILL');
    // Once the primary has reaped it and said so, new connections go to the live worker. (A connection the
    // primary hands to a worker in the instant it dies is lost inside node:cluster; no server code sees it.)
    await waitFor('the primary to reap the killed worker', () => (existsSync(`/proc/${victim}`) || exitsLogged() === logged ? undefined : true));
    for (let i = 0; i < 6; i++) assert.equal((await request(server.url, '/health', { timeoutMs: 10_000 })).status, 200);
    const after = await waitFor('a replacement worker', () => {
      const kids = childrenOf(primary);
      return kids.length === 2 && !kids.includes(victim) ? kids : undefined;
    });
    assert.ok(after.includes(survivor));
    const replacement = after.find((p) => p !== survivor)!;
    // The replacement starts from the current configuration and takes its share of connections.
    const served = await waitFor('the replacement to serve', async () => {
      const s = await servingPids(server.port, after, 4);
      return s.has(replacement) ? s : undefined;
    });
    assert.ok(served.has(replacement));
    assert.ok(cmdline(replacement).includes('--max-semi-space-size=64'), `the replacement starts with the workers' flags: ${cmdline(replacement).join(' ')}`);
    assert.deepEqual(await hashesSeen(server), new Set([sha256(configText(remote.url, `[[sources]]\nid = "cities"\ntype = "mbtiles"\npath = "${fixture('vector/world_cities.mbtiles')}"\n`))]));
  });

  test('SIGTERM to the primary lets an in-flight request finish, then exits 0', async () => {
    const workers = childrenOf(primary);
    await drainsInFlightRequest(server, remote, [1, 0, 1]);
    for (const pid of workers) assert.ok(!alive(pid), `worker ${pid} has exited`);
  });
});

describe('workers = 1', () => {
  let remote: RangeServer;
  let server: TestServer;

  before(async () => {
    remote = await startRangeServer(OMT);
    server = await startServer({ toml: configText(remote.url), workers: 1 });
  });
  after(async () => {
    await server?.stop('SIGKILL');
    await remote?.close();
  });

  test('one process serves; SIGHUP reloads (dropping the tile cache), an invalid file is refused', async () => {
    assert.deepEqual(childrenOf(server.proc.pid!), []);
    assert.equal((await request(server.url, '/data/omt/0/0/0.pbf')).status, 200);
    const before = (await getJson<{ cache_entries: number; loaded_at_unix: number }>(server.url, '/ping')).json;
    assert.ok(before.cache_entries >= 1);
    const next = `${configText(remote.url)}\n# edited\n`;
    writeFileSync(server.configFile!, next);
    server.proc.kill('SIGHUP');
    await waitForHash(server, sha256(next));
    const reloaded = (await getJson<{ cache_entries: number; loaded_at_unix: number }>(server.url, '/ping')).json;
    assert.equal(reloaded.cache_entries, 0, 'a reload starts with an empty tile cache');
    assert.ok(reloaded.loaded_at_unix >= before.loaded_at_unix);
    writeFileSync(server.configFile!, '[[sources]]\nid = 5\n');
    server.proc.kill('SIGHUP');
    await waitFor('the invalid-config message', () => (/"trigger":"SIGHUP","error":"the configuration file is invalid: .*sources\[0\]\.id.*","msg":"reload failed/.test(server.output()) ? true : undefined));
    assert.deepEqual(await hashesSeen(server, 2), new Set([sha256(next)]));
    const tile = await request(server.url, '/data/remote/0/0/0.pbf');
    assert.ok(tile.body.equals(gunzipSync((await storedPmtilesTile(OMT, 0, 0, 0))!)));
  });

  test('SIGTERM lets an in-flight request finish, then exits 0', async () => {
    await drainsInFlightRequest(server, remote, [1, 1, 1]);
  });
});

test('SIGTERM while the workers are still starting exits 0 (the stop is not lost)', async () => {
  const port = await freePort();
  const proc = spawn(process.execPath, [CLI, OMT, '--host', '127.0.0.1', '--port', String(port), '--workers', '2'], { stdio: 'ignore', env: { ...process.env, TMPDIR: scratchTmp() } });
  const exited = new Promise<number | null>((resolve) => proc.once('exit', (code) => resolve(code)));
  try {
    const workers = await waitFor('two forked workers', () => {
      const kids = childrenOf(proc.pid!);
      return kids.length === 2 ? kids : undefined;
    });
    proc.kill('SIGTERM');
    const code = await Promise.race([exited, new Promise<string>((r) => setTimeout(() => r('still running after 20 s'), 20_000))]);
    assert.equal(code, 0);
    await waitFor('the workers to exit', () => (workers.some(alive) ? undefined : true));
  } finally {
    const left = childrenOf(proc.pid!);
    proc.kill('SIGKILL');
    for (const pid of left) if (alive(pid)) process.kill(pid, 'SIGKILL');
  }
});

describe('SIGINT drains like SIGTERM', () => {
  let remote: RangeServer;
  const started: TestServer[] = [];
  before(async () => {
    remote = await startRangeServer(OMT);
  });
  after(async () => {
    for (const s of started) {
      const workers = s.proc.pid ? childrenOf(s.proc.pid) : [];
      await s.stop('SIGKILL');
      for (const pid of workers) if (alive(pid)) process.kill(pid, 'SIGKILL');
    }
    await remote?.close();
  });

  test('single process: SIGINT lets an in-flight request finish, then exits 0', async () => {
    const s = await startServer({ toml: configText(remote.url), workers: 1 });
    started.push(s);
    await drainsInFlightRequest(s, remote, [1, 0, 0], 'SIGINT');
  });

  test('cluster: SIGINT to the primary lets an in-flight request finish, every worker exits, exit 0', async () => {
    const s = await startServer({ toml: configText(remote.url), workers: 2 });
    started.push(s);
    const workers = await waitFor('two workers', () => {
      const kids = childrenOf(s.proc.pid!);
      return kids.length === 2 ? kids : undefined;
    });
    await drainsInFlightRequest(s, remote, [1, 1, 0], 'SIGINT');
    assert.equal(workers.length, 2);
    for (const pid of workers) assert.ok(!alive(pid), `worker ${pid} has exited`);
  });
});

/** Starts the CLI with `server.workers = "auto"` from the file (no --workers), optionally under `taskset`. */
async function startAuto(cpuList?: string): Promise<{ proc: ChildProcess; port: number }> {
  const port = await freePort();
  const file = writeTempConfig(`[server]\nworkers = "auto"\ndisable_render = true\n[[sources]]\nid = "omt"\ntype = "pmtiles"\npath = "${OMT}"\n`);
  const cli = [CLI, '--config', file, '--host', '127.0.0.1', '--port', String(port)];
  const proc = cpuList === undefined
    ? spawn(process.execPath, cli, { stdio: 'ignore', env: { ...process.env, LOG_LEVEL: 'warn' } })
    : spawn('taskset', ['-c', cpuList, process.execPath, ...cli], { stdio: 'ignore', env: { ...process.env, LOG_LEVEL: 'warn' } });
  try {
    await waitFor('the auto-sized server to answer', async () => ((await request(`http://127.0.0.1:${port}`, '/health', { timeoutMs: 5000 }).catch(() => undefined))?.status === 200 ? true : undefined), 60_000);
  } catch (err) {
    await stopAll(proc);
    throw err;
  }
  return { proc, port };
}

async function stopAll(proc: ChildProcess): Promise<void> {
  const kids = proc.pid ? childrenOf(proc.pid) : [];
  const exited = new Promise((r) => proc.once('exit', r));
  if (proc.exitCode === null) proc.kill('SIGKILL');
  await exited;
  for (const pid of kids) if (alive(pid)) process.kill(pid, 'SIGKILL');
}

describe('server.workers = "auto"', () => {
  // The expected counts come from the README's rule (one per core, at most 4), with the cores counted here
  // from the CPU affinity (`taskset` narrows it), not from the product's sizing code.
  const cores = os.availableParallelism();

  test('one worker process per core the process may use, at most 4', async () => {
    const { proc } = await startAuto();
    try {
      const expected = Math.min(cores, 4);
      if (expected === 1) {
        // A one-core machine runs a single process: no workers at all.
        await new Promise((r) => setTimeout(r, 1000));
        assert.deepEqual(childrenOf(proc.pid!), []);
      } else {
        const kids = await waitFor(`${expected} workers`, () => {
          const k = childrenOf(proc.pid!);
          return k.length === expected ? k : undefined;
        });
        assert.equal(kids.length, expected);
        // No more are forked after a while (the count is the setting's, not a growing one).
        await new Promise((r) => setTimeout(r, 1000));
        assert.equal(childrenOf(proc.pid!).length, expected);
      }
    } finally {
      await stopAll(proc);
    }
  });

  test('restricted to one core (taskset -c 0): a single process, no workers', async () => {
    const { proc } = await startAuto('0');
    try {
      // Give a primary time to fork (it forks every worker at once, before it answers): none appears.
      await new Promise((r) => setTimeout(r, 1000));
      assert.deepEqual(childrenOf(proc.pid!), [], 'no worker processes under one core');
    } finally {
      await stopAll(proc);
    }
  });

  test('the cap of 4 when more cores are present is the sizing rule, checked against hand-written counts', () => {
    // This machine may have fewer than five cores; the rule itself, with the counts the README states.
    assert.deepEqual([1, 2, 3, 4, 5, 8, 64].map((c) => workerCount('auto', c)), [1, 2, 3, 4, 4, 4, 4]);
    assert.equal(workerCount(3, 64), 3);
  });
});

describe('crash loop', () => {
  let server: TestServer;
  after(async () => {
    const kids = server?.proc.pid ? childrenOf(server.proc.pid) : [];
    await server?.stop('SIGKILL');
    for (const pid of kids) if (alive(pid)) process.kill(pid, 'SIGKILL');
  });

  test('workers killed again and again: replaced at once for the first 3 x workers deaths in 10 s, then after 1 s', async () => {
    server = await startServer({ toml: `[server]\ndisable_render = true\n[[sources]]\nid = "omt"\ntype = "pmtiles"\npath = "${OMT}"\n`, workers: 2 });
    const primary = server.proc.pid!;
    const exits = () =>
      server
        .output()
        .split('\n')
        .filter((l) => l.includes('worker exited; starting a replacement'))
        .map((l) => (JSON.parse(l) as { restart_delay_ms: number }).restart_delay_ms);
    const killed = new Set<number>();
    // Kill every worker as soon as it appears, until the primary has reported 8 deaths (2 workers: 3 x 2 = 6
    // replaced at once, the 7th and 8th slowed down).
    await waitFor('eight worker deaths', () => {
      for (const pid of childrenOf(primary)) {
        if (!killed.has(pid)) {
          killed.add(pid);
          process.kill(pid, 'SIGKILL');
        }
      }
      return exits().length >= 8 ? true : undefined;
    }, 60_000).catch((err: Error) => {
      throw new Error(`${err.message}; killed ${killed.size}; output:\n${server.output()}`);
    });
    const delays = exits();
    assert.ok(delays.length >= 8, delays.join(','));
    assert.deepEqual(delays.slice(0, 6), [0, 0, 0, 0, 0, 0], `delays: ${delays.join(',')}`);
    assert.ok(delays.slice(6).some((d) => d === 1000), `a slowed restart after six quick ones: ${delays.join(',')}`);
    assert.ok(delays.every((d) => d === 0 || d === 1000), delays.join(','));
    // It heals: once the killing stops, two workers serve again.
    await waitFor('two workers again', () => (childrenOf(primary).length === 2 ? true : undefined), 30_000);
    // Children are counted at fork; they listen a moment later.
    await waitFor('the replacements to serve', async () => ((await request(server.url, '/health').catch(() => undefined))?.status === 200 ? true : undefined), 30_000);
  });
});
