// Process model: with workers = 2 both workers serve (seen from which process owns each accepted socket), a
// worker killed with SIGKILL is replaced while the service keeps answering, SIGHUP re-reads the config file
// (an invalid file or an unopenable source keeps the old one), and SIGTERM lets an in-flight request finish
// before exiting 0. The single-process mode (workers = 1) is checked for SIGHUP and SIGTERM as well.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync, readlinkSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { gunzipSync } from 'node:zlib';
import { spawn } from 'node:child_process';
import { CLI, fixture, freePort, startServer, type TestServer } from './helpers/server.js';
import { getJson, request, sha256, startRangeServer, storedPmtilesTile, waitFor, type RangeServer } from './helpers/foundation.js';

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

/** Pids of the direct children of `pid`, read from /proc (no external tools). */
function childPids(pid: number): number[] {
  const out: number[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const stat = readFileSync(`/proc/${entry}/stat`, 'utf8');
      // Fields after the command name, which is in parentheses and may itself contain spaces.
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
      if (Number(fields[1]) === pid && fields[0] !== 'Z') out.push(Number(entry));
    } catch {
      // The process ended while we looked.
    }
  }
  return out.sort((a, b) => a - b);
}

const alive = (pid: number) => {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    return stat.slice(stat.lastIndexOf(')') + 2)[0] !== 'Z';
  } catch {
    return false;
  }
};

/** The inode of the server side of the TCP connection from `clientPort` to `serverPort`. */
function serverSocketInode(serverPort: number, clientPort: number): string | undefined {
  for (const table of ['/proc/net/tcp', '/proc/net/tcp6']) {
    let text: string;
    try {
      text = readFileSync(table, 'utf8');
    } catch {
      continue;
    }
    for (const line of text.split('\n').slice(1)) {
      const cols = line.trim().split(/\s+/);
      if (cols.length < 10) continue;
      const local = parseInt(cols[1].split(':').pop()!, 16);
      const remote = parseInt(cols[2].split(':').pop()!, 16);
      if (local === serverPort && remote === clientPort) return cols[9];
    }
  }
  return undefined;
}

/**
 * Opens a new connection, gets /health over it, and tells which of `candidates` holds the accepted socket:
 * that process is the one that served the request.
 */
async function servingPid(port: number, candidates: number[]): Promise<number | undefined> {
  const socket = net.connect(port, '127.0.0.1');
  socket.setTimeout(5000);
  try {
    await new Promise<void>((resolve, reject) => {
      let got = '';
      socket.once('error', reject);
      socket.once('timeout', () => reject(new Error('no answer within 5 s')));
      socket.once('close', () => reject(new Error(`connection closed after ${JSON.stringify(got)}`)));
      socket.on('data', (d) => {
        got += d.toString();
        if (got.includes('\r\n\r\nOK')) resolve();
      });
      socket.write('GET /health HTTP/1.1\r\nHost: test\r\n\r\n');
    });
    const inode = serverSocketInode(port, socket.localPort!);
    if (!inode) return undefined;
    for (const pid of candidates) {
      try {
        for (const fd of readdirSync(`/proc/${pid}/fd`)) {
          try {
            if (readlinkSync(`/proc/${pid}/fd/${fd}`) === `socket:[${inode}]`) return pid;
          } catch {
            // fd closed meanwhile
          }
        }
      } catch {
        // process gone
      }
    }
    return undefined;
  } finally {
    socket.destroy();
  }
}

/** Pids that served a run of fresh connections. */
async function servingPids(port: number, candidates: number[], connections = 8): Promise<Set<number>> {
  const seen = new Set<number>();
  for (let i = 0; i < connections; i++) {
    const pid = await servingPid(port, candidates);
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

/** Sends SIGTERM while a slow tile request is in flight; the request must complete and the process exit 0. */
async function drainsInFlightRequest(s: TestServer, remote: RangeServer, tile: [number, number, number]) {
  const [z, x, y] = tile;
  const stored = (await storedPmtilesTile(OMT, z, x, y))!;
  remote.setDelay(1500);
  const seenBefore = remote.ranges.length;
  const pending = request(s.url, `/data/remote/${z}/${x}/${y}.pbf`, { headers: { 'Accept-Encoding': 'gzip' } });
  // The worker has asked the remote archive for the tile: the request is in flight inside the server.
  await waitFor('the tile request to reach the remote archive', () => (remote.ranges.length > seenBefore ? true : undefined));
  const exited = new Promise<number | null>((resolve) => s.proc.once('exit', (code) => resolve(code)));
  s.proc.kill('SIGTERM');
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
    const workers = primary ? childPids(primary) : [];
    await server?.stop('SIGKILL');
    for (const pid of workers) if (alive(pid)) process.kill(pid, 'SIGKILL');
    await remote?.close();
  });

  test('two worker processes, and both serve requests', async () => {
    const workers = await waitFor('two workers', () => {
      const kids = childPids(primary);
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
    assert.equal(childPids(primary).length, 2, 'a reload restarts no process');
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
    const before = childPids(primary);
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
      const kids = childPids(primary);
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
    assert.deepEqual(await hashesSeen(server), new Set([sha256(configText(remote.url, `[[sources]]\nid = "cities"\ntype = "mbtiles"\npath = "${fixture('vector/world_cities.mbtiles')}"\n`))]));
  });

  test('SIGTERM to the primary lets an in-flight request finish, then exits 0', async () => {
    const workers = childPids(primary);
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
    assert.deepEqual(childPids(server.proc.pid!), []);
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
  const proc = spawn(process.execPath, [CLI, OMT, '--host', '127.0.0.1', '--port', String(port), '--workers', '2'], { stdio: 'ignore' });
  const exited = new Promise<number | null>((resolve) => proc.once('exit', (code) => resolve(code)));
  try {
    const workers = await waitFor('two forked workers', () => {
      const kids = childPids(proc.pid!);
      return kids.length === 2 ? kids : undefined;
    });
    proc.kill('SIGTERM');
    const code = await Promise.race([exited, new Promise<string>((r) => setTimeout(() => r('still running after 20 s'), 20_000))]);
    assert.equal(code, 0);
    await waitFor('the workers to exit', () => (workers.some(alive) ? undefined : true));
  } finally {
    const left = childPids(proc.pid!);
    proc.kill('SIGKILL');
    for (const pid of left) if (alive(pid)) process.kill(pid, 'SIGKILL');
  }
});
