// A fleet sharing one render cache through Redis (`[cache] shared`, src/shared-cache/): a real redis-server and
// two real server instances whose configurations differ only in machine-local things (ports, cache directories,
// file locations, pool sizes, time limits). Renders are counted per instance with /ping's render_stats.
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { cpSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { connect, createServer, type AddressInfo, type Socket } from 'node:net';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import fc from './helpers/fast-check.js';
import { tempDir, waitFor } from './helpers/foundation.js';
import { startHoldServer, stallToml, type HoldServer } from './helpers/hold-server.js';
import { startRedis, type RedisServer } from './helpers/redis.js';
import { fixture, freePort, startServer, type TestServer } from './helpers/server.js';
import { ConfigError, validateConfig } from '../src/config/load.js';
import { styleIdentity } from '../src/shared-cache/identity.js';
import type { AppState } from '../src/state/app-state.js';
import type { LoadedStyle } from '../src/styles/loaded-style.js';

const T = 20_000;

interface Ping {
  renderer_enabled: boolean;
  render_stats: { rendered: number };
  shared_cache: { state: string; down_since: string | null; hits: number; misses: number; errors: number };
}

interface Machine {
  server: TestServer;
  dir: string;
  adminPort: number;
  scrapePort: number;
}

const ping = async (m: Machine): Promise<Ping> => (await fetch(`${m.server.url}/ping`, { signal: AbortSignal.timeout(T) })).json() as Promise<Ping>;
const rendered = async (m: Machine) => (await ping(m)).render_stats.rendered;

interface Answer {
  status: number;
  body: Buffer;
  timing: string;
}

async function get(m: Machine, p: string): Promise<Answer> {
  const res = await fetch(`${m.server.url}${p}`, { signal: AbortSignal.timeout(120_000) });
  return { status: res.status, body: Buffer.from(await res.arrayBuffer()), timing: res.headers.get('server-timing') ?? '' };
}

const tile = (z: number, x: number, y: number) => `/styles/osm-liberty/${z}/${x}/${y}.png`;

/** One machine's copy of the files (style, sprites, archives) in a directory of its own. */
function machineFiles(dir: string): void {
  cpSync(fixture('styles/osm-liberty'), path.join(dir, 'style'), { recursive: true });
  mkdirSync(path.join(dir, 'data'));
  cpSync(fixture('vector/omt-planet-z0-1.pmtiles'), path.join(dir, 'data/omt.pmtiles'));
  cpSync(fixture('raster/natural-earth-png-z0-1.pmtiles'), path.join(dir, 'data/ne.pmtiles'));
}

/** The fleet's Redis timeout: a stopped Redis must cost a request at most about this much per lookup. */
const SHARED_TIMEOUT_MS = 500;
/** The fleet's entry lifetime in Redis (the default is a day). */
const SHARED_TTL_S = 3_600;

/**
 * The configuration of one machine; `local` holds the settings that differ from machine to machine. Both also
 * serve the style `stall`, whose renders wait while the hold server (`holdUrl`) holds its archive's tile data.
 */
function machineToml(dir: string, adminPort: number, scrapePort: number, holdUrl: string, local: { memory: number; timeout: number; queue: number; disk: number }): string {
  return `fonts = "${fixture('fonts')}"
[server]
admin_bind = "127.0.0.1:${adminPort}"
[[sources]]
id = "openmaptiles"
type = "pmtiles"
path = "${path.join(dir, 'data/omt.pmtiles')}"
[[sources]]
id = "natural_earth"
type = "pmtiles"
path = "${path.join(dir, 'data/ne.pmtiles')}"
[[sources]]
id = "hill"
type = "pmtiles"
path = "${fixture('dem/hill-terrarium.pmtiles')}"
dem = { encoding = "terrarium" }
[[styles]]
id = "osm-liberty"
path = "${path.join(dir, 'style/style.json')}"
[cache]
dir = "${path.join(dir, 'cache')}"
shared = "\${FLEET_REDIS}"
shared_timeout_ms = ${SHARED_TIMEOUT_MS}
shared_ttl_seconds = ${SHARED_TTL_S}
[render]
pool_size = 1
memory_cache_mb = ${local.memory}
disk_cache_mb = ${local.disk}
timeout_ms = ${local.timeout}
queue_timeout_ms = ${local.queue}
[telemetry]
scrape_bind = "127.0.0.1:${scrapePort}"
${stallToml(holdUrl)}`;
}

async function startMachine(name: string, redisUrl: string, holdUrl: string, local: { memory: number; timeout: number; queue: number; disk: number }): Promise<Machine> {
  const dir = tempDir(`tsts-fleet-${name}-`);
  machineFiles(dir);
  const adminPort = await freePort();
  const scrapePort = await freePort();
  const server = await startServer({ toml: machineToml(dir, adminPort, scrapePort, holdUrl, local), env: { FLEET_REDIS: redisUrl, LOG_LEVEL: 'info' }, timeoutMs: 60_000 });
  return { server, dir, adminPort, scrapePort };
}

const count = (text: string, phrase: string) => text.split(phrase).length - 1;
const scrape = async (m: Machine) => (await fetch(`http://127.0.0.1:${m.scrapePort}/metrics`, { signal: AbortSignal.timeout(T) })).text();
/** Writes to Redis that failed or timed out on a machine, as its metrics count them. */
const failedWrites = async (m: Machine) => Number(/^shared_cache_errors_total\{op="set"\} (\d+)/m.exec(await scrape(m))?.[1] ?? 0);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, Math.max(0, ms)));

/** How long a request took to be answered in full; no answer within `limitMs` fails the test. */
async function timed(m: Machine, p: string, encoding: string, limitMs: number): Promise<{ status: number; ms: number }> {
  const started = performance.now();
  try {
    const res = await fetch(`${m.server.url}${p}`, { headers: { 'accept-encoding': encoding }, signal: AbortSignal.timeout(Math.ceil(limitMs)) });
    await res.arrayBuffer();
    return { status: res.status, ms: performance.now() - started };
  } catch (err) {
    assert.fail(`${p}: no answer within ${limitMs} ms (${(err as Error).message})`);
  }
}

describe('a fleet of two instances sharing one Redis cache', { timeout: 420_000 }, () => {
  let redis: RedisServer;
  let hold: HoldServer;
  let A: Machine;
  let B: Machine;

  before(async () => {
    redis = await startRedis();
    hold = await startHoldServer(fixture('vector/omt-planet-z0-1.pmtiles'));
    [A, B] = await Promise.all([
      startMachine('a', redis.url, hold.url, { memory: 16, timeout: 30_000, queue: 60_000, disk: 64 }),
      startMachine('b', redis.url, hold.url, { memory: 48, timeout: 45_000, queue: 90_000, disk: 128 }),
    ]);
    for (const m of [A, B]) {
      await waitFor('renderer and shared cache', async () => {
        const p = await ping(m);
        return (p.renderer_enabled && p.shared_cache.state === 'connected') || undefined;
      }, 120_000);
    }
  });
  after(async () => {
    await Promise.all([A?.server.stop(), B?.server.stop()]);
    await Promise.all([redis?.stop(), hold?.close()]);
  });

  test('a tile rendered through A is served by B without a render (keys ignore ports, paths, cache dirs, pool sizes)', async () => {
    const [a0, b0] = [await rendered(A), await rendered(B)];
    const a = await get(A, tile(6, 0, 0));
    assert.equal(a.status, 200);
    assert.equal(await rendered(A), a0 + 1);
    const b = await get(B, tile(6, 0, 0));
    assert.equal(b.status, 200);
    assert.match(b.timing, /cache;desc="shared"/);
    assert.ok(b.body.equals(a.body), 'B serves the bytes A rendered');
    assert.equal(await rendered(B), b0, 'B did not render');
    const p = await ping(B);
    assert.ok(p.shared_cache.hits >= 1);
    // The entry is in Redis under the shared prefix, and expires after the configured shared_ttl_seconds (an hour,
    // not the default day).
    const [, keys] = await redis.client.scan('0', 'MATCH', 'tsts:v1:osm-liberty/*/6/0/0.png', 'COUNT', 10_000);
    assert.equal(keys.length, 1, `one entry for the tile: ${keys.join(', ')}`);
    const ttl = await redis.client.ttl(keys[0]);
    assert.ok(ttl > SHARED_TTL_S - 100 && ttl <= SHARED_TTL_S, `ttl ${ttl}, expected just under ${SHARED_TTL_S}`);
    // The metrics count A's miss and B's hit.
    assert.match(await scrape(A), /shared_cache_misses_total\{kind="tile"\} [1-9]/);
    assert.match(await scrape(B), /shared_cache_hits_total\{kind="tile"\} [1-9]/);
  });

  test('20 concurrent requests for one new tile, split across A and B, produce one render', async () => {
    const before = (await rendered(A)) + (await rendered(B));
    const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => get(i % 2 ? B : A, tile(6, 8, 8))));
    for (const a of answers) {
      assert.equal(a.status, 200);
      assert.ok(a.body.equals(answers[0].body));
    }
    assert.equal((await rendered(A)) + (await rendered(B)), before + 1, 'one render in the whole fleet');
  });

  test('static maps, transcoded tiles and terrain tiles are shared too', async () => {
    // A's write to Redis goes on after its answer (by design): B is asked once the entry is there.
    const keyCount = async (pattern: string) => (await redis.client.scan('0', 'MATCH', pattern, 'COUNT', 100_000))[1].length;
    const untilMoreKeys = async (pattern: string, before: number) => {
      const deadline = Date.now() + 10_000;
      while ((await keyCount(pattern)) <= before) {
        assert.ok(Date.now() < deadline, `no new key ${pattern} in Redis within 10 s of A's answer`);
        await new Promise((r) => setTimeout(r, 20));
      }
    };
    const b0 = await rendered(B);
    const map = '/styles/osm-liberty/static/10,20,2/128x96.png';
    const images = await keyCount('tsts:v1:osm-liberty/*/image/*');
    const a = await get(A, map);
    assert.equal(a.status, 200);
    await untilMoreKeys('tsts:v1:osm-liberty/*/image/*', images);
    const b = await get(B, map);
    assert.equal(b.status, 200);
    assert.ok(b.body.equals(a.body));
    assert.match(b.timing, /cache;desc="shared"/);
    assert.equal(await rendered(B), b0, 'B did not render the static map');
    // A vector tile transcoded to MLT by A is found by B in the shared cache (one more shared hit on B).
    const hits = (await ping(B)).shared_cache.hits;
    const transcoded = await keyCount('tsts:v1:transcoded/*');
    const ma = await get(A, '/data/openmaptiles/1/1/0.mlt');
    assert.equal(ma.status, 200);
    await untilMoreKeys('tsts:v1:transcoded/*', transcoded);
    const mb = await get(B, '/data/openmaptiles/1/1/0.mlt');
    assert.equal(mb.status, 200);
    assert.ok(mb.body.equals(ma.body));
    const after = (await ping(B)).shared_cache;
    assert.equal(after.hits, hits + 1, `B's shared cache: ${JSON.stringify(after)}`);
    // A hillshade tile made by A is B's from Redis (its own disk cache is another directory).
    const shades = await keyCount('tsts:v1:terrain/*');
    const hillshade = '/data/hill/hillshade/11/1081/724.png?method=combined';
    const ha = await get(A, hillshade);
    assert.equal(ha.status, 200);
    await untilMoreKeys('tsts:v1:terrain/*', shades);
    const hb = await get(B, hillshade);
    assert.equal(hb.status, 200);
    assert.ok(hb.body.equals(ha.body));
    assert.match(hb.timing, /cache;desc="shared"/);
    assert.equal((await ping(B)).shared_cache.hits, after.hits + 1);
  });

  test('a lock whose holder died expires, and the next asker renders', async () => {
    const [, keys] = await redis.client.scan('0', 'MATCH', 'tsts:v1:osm-liberty/*/6/0/0.png', 'COUNT', 10_000);
    const base = keys[0].slice('tsts:v1:'.length, -'6/0/0.png'.length);
    // A machine that died while rendering 6/16/16 left its lock behind.
    const lock = `tsts:v1:lock:${base}6/16/16.png`;
    assert.equal(await redis.client.set(lock, 'dead-machine:1:1', 'PX', 2_000, 'NX'), 'OK');
    const b0 = await rendered(B);
    let answeredAt = 0;
    const answer = get(B, tile(6, 16, 16)).then((a) => ((answeredAt = Date.now()), a));
    let goneAt = 0;
    while (!goneAt) {
      if ((await redis.client.pttl(lock)) < 0) goneAt = Date.now();
      else await new Promise((r) => setTimeout(r, 10));
    }
    const a = await answer;
    assert.equal(a.status, 200);
    assert.ok(answeredAt >= goneAt, 'B waited for the lock instead of rendering at once');
    assert.equal(await rendered(B), b0 + 1, 'B rendered once the lock had expired');
  });

  test('a render held past the 5 s lock keeps its lock renewed: the other instance waits and is served from Redis', async () => {
    const p = '/styles/stall/1/0/0.png';
    const [a0, b0] = [await rendered(A), await rendered(B)];
    hold.hold(true);
    try {
      const first = get(A, p);
      // A has taken the tile's lock, and its render waits for the archive's tile data.
      const lock = await waitFor('A holding the lock while its render waits for data', async () => {
        const [, locks] = await redis.client.scan('0', 'MATCH', 'tsts:v1:lock:stall/*/1/0/0.png', 'COUNT', 10_000);
        return locks.length === 1 && hold.held() > 0 ? locks[0] : undefined;
      });
      const takenAt = Date.now();
      const token = await redis.client.get(lock);
      assert.ok(token, 'the lock has a holder');
      const second = get(B, p);
      // Well past the lock's 5 s: A's render is still held, and the lock is still A's, renewed.
      await sleep(6_500 - (Date.now() - takenAt));
      assert.equal(await redis.client.get(lock), token, 'the lock is still the one A took (renewed, not expired and taken by B)');
      assert.ok((await redis.client.pttl(lock)) > 0);
      hold.hold(false);
      const [a, b] = await Promise.all([first, second]);
      assert.equal(a.status, 200);
      assert.equal(b.status, 200);
      assert.match(b.timing, /cache;desc="shared"/);
      assert.ok(b.body.equals(a.body), 'B serves the bytes A rendered');
    } finally {
      hold.hold(false);
    }
    assert.equal(await rendered(A), a0 + 1);
    assert.equal(await rendered(B), b0, 'B did not render the tile A was rendering');
  });

  test('a style change on both instances never serves the old image', async () => {
    const old = await get(A, tile(6, 0, 0));
    for (const m of [A, B]) {
      const file = path.join(m.dir, 'style/style.json');
      writeFileSync(file, readFileSync(file, 'utf8').replace('rgb(239,239,239)', 'rgb(250,120,40)').replaceAll('rgb(158,189,255)', 'rgb(20,60,90)'));
      const res = await fetch(`http://127.0.0.1:${m.adminPort}/__admin/reload?flush=true`, { method: 'POST', signal: AbortSignal.timeout(60_000) });
      assert.equal(res.status, 200, await res.text());
    }
    for (const m of [A, B]) await waitFor('renderer', async () => (await ping(m)).renderer_enabled || undefined, 120_000);
    const b0 = await rendered(B);
    const fresh = await get(B, tile(6, 0, 0));
    assert.equal(fresh.status, 200);
    assert.ok(!fresh.body.equals(old.body), 'B drew the changed style');
    assert.equal(await rendered(B), b0 + 1);
    // A finds the new image in the shared cache, not the old one in any cache.
    const a0 = await rendered(A);
    const again = await get(A, tile(6, 0, 0));
    assert.ok(again.body.equals(fresh.body));
    assert.match(again.timing, /cache;desc="shared"/);
    assert.equal(await rendered(A), a0);
  });

  test('Redis killed mid-load: no request fails, renders go on locally; Redis back: sharing resumes', async () => {
    const downA = count(A.server.output(), 'shared cache unreachable');
    const downB = count(B.server.output(), 'shared cache unreachable');
    const paths = Array.from({ length: 16 }, (_, i) => tile(7, 4 * (i % 8) + 1, 4 * Math.floor(i / 8) + 40));
    let answered = 0;
    let killed: Promise<void> | undefined;
    const statuses: number[] = [];
    // Four requests at a time, alternating machines; Redis is killed after the fourth answer.
    let next = 0;
    await Promise.all(
      Array.from({ length: 4 }, async () => {
        while (next < paths.length) {
          const i = next++;
          const a = await get(i % 2 ? B : A, paths[i]);
          statuses.push(a.status);
          if (++answered === 4) killed = redis.kill();
        }
      }),
    );
    await killed;
    assert.deepEqual(statuses, paths.map(() => 200), 'every request answered 200');
    // Each machine notices, says so once, reports it on /ping, and stays ready.
    for (const m of [A, B]) {
      const p = await waitFor('down on /ping', async () => {
        const got = await ping(m);
        return got.shared_cache.state === 'down' ? got : undefined;
      });
      assert.ok(p.shared_cache.down_since && !Number.isNaN(Date.parse(p.shared_cache.down_since)));
      const ready = await fetch(`${m.server.url}/ready`, { signal: AbortSignal.timeout(T) });
      assert.equal(ready.status, 200);
    }
    // Renders resume locally: each machine draws a new tile itself.
    const [a0, b0] = [await rendered(A), await rendered(B)];
    assert.equal((await get(A, tile(7, 100, 100))).status, 200);
    assert.equal((await get(B, tile(7, 100, 100))).status, 200);
    assert.deepEqual([await rendered(A), await rendered(B)], [a0 + 1, b0 + 1]);
    assert.equal(count(A.server.output(), 'shared cache unreachable'), downA + 1, 'one log line per outage on A');
    assert.match(await scrape(A), /shared_cache_errors_total\{op="get"\} [1-9]/);
    assert.equal(count(B.server.output(), 'shared cache unreachable'), downB + 1, 'one log line per outage on B');

    // Redis is back (empty): both reconnect by themselves and share again.
    await redis.restart();
    for (const m of [A, B]) await waitFor('reconnected', async () => ((await ping(m)).shared_cache.state === 'connected' ? true : undefined), 30_000);
    for (const m of [A, B]) assert.equal(count(m.server.output(), 'shared cache is reachable again'), 1);
    const b1 = await rendered(B);
    assert.equal((await get(A, tile(7, 120, 100))).status, 200);
    const shared = await get(B, tile(7, 120, 100));
    assert.equal(shared.status, 200);
    assert.match(shared.timing, /cache;desc="shared"/);
    assert.equal(await rendered(B), b1);
  });

  test('a Redis that stops answering costs at most shared_timeout_ms per lookup, and writes never hold up an answer', async () => {
    // Each request's time with Redis up, for the bound: a fresh transcode to MLT (a lookup, the transcode, a write)
    // and a fresh render (a lookup and a lock, the render, a write). Generous: the machine is shared with others.
    const bound = (up: number) => SHARED_TIMEOUT_MS + up + 1_000 + up;
    const mltUp = await timed(A, '/data/openmaptiles/1/0/1.mlt', 'gzip', 60_000);
    assert.equal(mltUp.status, 200);
    const renderUp = await timed(A, tile(7, 50, 20), 'identity', 120_000);
    assert.equal(renderUp.status, 200);
    // Each write ends before its answer is asked for again: its failure below is the paused Redis's alone.
    await sleep(SHARED_TIMEOUT_MS);
    redis.pause();
    try {
      const cases = [
        // The same tile in another encoding: a new entry, so looked up in Redis, transcoded and written again.
        { what: 'a transcoded tile', p: '/data/openmaptiles/1/0/1.mlt', encoding: 'identity', up: mltUp.ms, renders: 0 },
        { what: 'a rendered tile', p: tile(7, 60, 10), encoding: 'identity', up: renderUp.ms, renders: 1 },
      ];
      for (const c of cases) {
        const [r0, w0] = [await rendered(A), await failedWrites(A)];
        const limit = bound(c.up);
        const got = await timed(A, c.p, c.encoding, limit * 3);
        assert.equal(got.status, 200, c.what);
        assert.ok(got.ms < limit, `${c.what} answered in ${Math.round(got.ms)} ms with Redis stopped; bound ${Math.round(limit)} ms (${SHARED_TIMEOUT_MS} ms timeout + ${Math.round(c.up)} ms with Redis up, twice, + 1 s)`);
        // The write to Redis was still waiting for its timeout when the answer came, and fails on its own.
        assert.equal(await failedWrites(A), w0, `${c.what}: the answer did not wait for the write to Redis`);
        await waitFor(`${c.what}: the write timed out and was counted`, async () => ((await failedWrites(A)) > w0 ? true : undefined), 10_000);
        assert.equal(await rendered(A), r0 + c.renders, c.what);
      }
      const p = await ping(A);
      assert.equal(p.shared_cache.state, 'down');
      assert.ok(p.shared_cache.errors > 0);
    } finally {
      redis.resume();
    }
    // The next lookup that Redis answers ends the outage.
    await waitFor('connected again', async () => {
      await get(A, tile(7, 64, 10));
      return (await ping(A)).shared_cache.state === 'connected' || undefined;
    }, 30_000);
  });
});

/**
 * A TCP relay between a server and Redis that, once armed, writes `entry` under the tile's key just before it
 * passes on the server's SET NX of that tile's lock: as if another machine had written the tile and released
 * its lock between the server's GET of the entry and its SET NX. Everything else goes through unchanged.
 */
async function startLockWindowRelay(redis: RedisServer, entry: Buffer): Promise<{ url: string; arm(tileSuffix: string): void; fired(): boolean; close(): Promise<void> }> {
  let armed: string | undefined;
  let fired = false;
  const sockets = new Set<Socket>();
  const server = createServer((client) => {
    const upstream = connect(redis.port, '127.0.0.1');
    for (const sock of [client, upstream]) {
      sockets.add(sock);
      sock.on('close', () => sockets.delete(sock));
    }
    client.on('error', () => upstream.destroy());
    upstream.on('error', () => client.destroy());
    upstream.pipe(client);
    // Chunks are passed on in order: a chunk waiting for the planted write holds back the ones after it.
    let queue = Promise.resolve();
    client.on('data', (chunk: Buffer) => {
      queue = queue.then(async () => {
        const text = chunk.toString('latin1');
        const lock = /\r\ntsts:v1:lock:([^\r]+)\r\n/.exec(text);
        if (armed && lock && lock[1].endsWith(armed) && /\r\nNX\r\n/i.test(text)) {
          armed = undefined;
          fired = true;
          await redis.client.set(`tsts:v1:${lock[1]}`, entry, 'EX', 600);
        }
        upstream.write(chunk);
      });
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `redis://127.0.0.1:${port}/0`,
    arm: (tileSuffix) => void (armed = tileSuffix),
    fired: () => fired,
    close: () => new Promise((resolve) => {
      server.close(() => resolve());
      for (const sock of sockets) sock.destroy();
    }),
  };
}

describe('the entry written just before this machine takes the lock', { timeout: 120_000 }, () => {
  let redis: RedisServer;
  let relay: Awaited<ReturnType<typeof startLockWindowRelay>>;
  let C: Machine;
  let hold: HoldServer;
  // Not an image anyone rendered: served only if it was read from Redis after the lock was taken.
  const planted = Buffer.from('the entry another machine wrote while this one was taking the lock');

  before(async () => {
    redis = await startRedis();
    relay = await startLockWindowRelay(redis, planted);
    hold = await startHoldServer(fixture('vector/omt-planet-z0-1.pmtiles'));
    C = await startMachine('c', relay.url, hold.url, { memory: 16, timeout: 30_000, queue: 60_000, disk: 64 });
    await waitFor('renderer and shared cache', async () => {
      const p = await ping(C);
      return (p.renderer_enabled && p.shared_cache.state === 'connected') || undefined;
    }, 120_000);
  });
  after(async () => {
    await C?.server.stop();
    await relay?.close();
    await Promise.all([redis?.stop(), hold?.close()]);
  });

  test('a lock taken after the holder wrote the tile and released its lock: the entry is served, no second render', async () => {
    const r0 = await rendered(C);
    relay.arm('/5/3/3.png');
    const a = await get(C, tile(5, 3, 3));
    assert.ok(relay.fired(), 'the relay saw the SET NX of the tile\'s lock and wrote the entry first');
    assert.equal(a.status, 200);
    assert.ok(a.body.equals(planted), `C served the entry in Redis, not ${a.body.length} bytes of its own`);
    assert.match(a.timing, /cache;desc="shared"/);
    assert.equal(await rendered(C), r0, 'C did not render the tile');
    // The lock it took for nothing is given back at once, not left to expire.
    await waitFor('the lock released', async () => ((await redis.client.keys('tsts:v1:lock:*')).length === 0 ? true : undefined), 10_000);
  });
});

describe('password, database and TLS in the URL', { timeout: 120_000 }, () => {
  let redis: RedisServer;
  let s: TestServer;
  const PASSWORD = 'fleet s3cret/+';

  before(async () => {
    const dir = tempDir('tsts-fleet-tls-');
    const cert = path.join(dir, 'redis.crt');
    const key = path.join(dir, 'redis.key');
    // A self-signed certificate for 127.0.0.1, which the server trusts through NODE_EXTRA_CA_CERTS.
    execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', key, '-out', cert, '-subj', '/CN=127.0.0.1', '-addext', 'subjectAltName=IP:127.0.0.1', '-days', '2'], { stdio: 'ignore' });
    redis = await startRedis({ password: PASSWORD, tls: { cert, key } });
    const url = redis.url.replace(/\/0$/, '/3');
    s = await startServer({
      toml: `[server]\ndisable_render = true\n[[sources]]\nid = "omt"\ntype = "pmtiles"\npath = "${fixture('vector/omt-planet-z0-1.pmtiles')}"\n[cache]\nshared = "${url}"\n`,
      env: { NODE_EXTRA_CA_CERTS: cert },
    });
  });
  after(async () => {
    await s?.stop();
    await redis?.stop();
  });

  test('rediss:// with a password and a database number: connected, entries land in that database', async () => {
    await waitFor('connected', async () => ((await (await fetch(`${s.url}/ping`, { signal: AbortSignal.timeout(T) })).json()) as Ping).shared_cache.state === 'connected' || undefined, 30_000);
    const res = await fetch(`${s.url}/data/omt/0/0/0.mlt`, { signal: AbortSignal.timeout(T) });
    assert.equal(res.status, 200);
    await res.arrayBuffer();
    await redis.client.select(3);
    const keys = await waitFor('the transcoded tile in database 3', async () => {
      const [, found] = await redis.client.scan('0', 'MATCH', 'tsts:v1:transcoded/*', 'COUNT', 1000);
      return found.length ? found : undefined;
    });
    assert.equal(keys.length, 1);
    await redis.client.select(0);
    assert.equal(await redis.client.dbsize(), 0, 'nothing in database 0');
  });
});

describe('a Redis that is not there when the server starts', { timeout: 120_000 }, () => {
  let s: TestServer;
  before(async () => {
    const nobody = await freePort();
    s = await startServer({
      toml: `[server]\ndisable_render = true\n[[sources]]\nid = "omt"\ntype = "pmtiles"\npath = "${fixture('vector/omt-planet-z0-1.pmtiles')}"\n[cache]\nshared = "redis://127.0.0.1:${nobody}/0"\n`,
    });
  });
  after(async () => {
    await s?.stop();
  });

  test('the server serves alone: tiles answered, /ready 200, /ping down, one warning however many retries', async () => {
    const p = await waitFor('down on /ping', async () => {
      const got = (await (await fetch(`${s.url}/ping`, { signal: AbortSignal.timeout(T) })).json()) as Ping;
      return got.shared_cache.state === 'down' ? got : undefined;
    });
    assert.ok(p.shared_cache.down_since);
    for (const t of ['0/0/0', '1/0/0', '1/1/1']) {
      const res = await fetch(`${s.url}/data/omt/${t}.mlt`, { signal: AbortSignal.timeout(T) });
      assert.equal(res.status, 200);
      await res.arrayBuffer();
    }
    assert.equal((await fetch(`${s.url}/ready`, { signal: AbortSignal.timeout(T) })).status, 200);
    // ioredis keeps retrying (every 100 ms, backing off to 2 s): still one line.
    await new Promise((r) => setTimeout(r, 1_500));
    assert.equal(count(s.output(), 'shared cache unreachable'), 1);
  });
});

// ---- the key: what identifies an image across machines ----

function fakeState(config: ReturnType<typeof validateConfig>['config']): AppState {
  return { config, fonts: { dir: undefined, names: ['Roboto Regular'] } } as unknown as AppState;
}

describe('shared cache identity', () => {
  const dir = tempDir('tsts-fleet-id-');
  for (const m of ['one', 'two']) machineFiles(path.join(dir, m));
  const style = (hash: string): LoadedStyle => ({ id: 'osm-liberty', name: 'x', path: '', dir: '', style: {} as LoadedStyle['style'], hash });
  const cfg = (m: string, extra: Record<string, unknown> = {}, render: Record<string, unknown> = {}) =>
    validateConfig(
      {
        server: { port: m === 'one' ? 8080 : 9090, ...extra },
        sources: [{ id: 'omt', type: 'pmtiles', path: path.join(dir, m, 'data/omt.pmtiles') }],
        cache: { dir: path.join(dir, m, 'cache'), shared: 'redis://cache:6379/0' },
        render,
      },
      't.toml',
      dir,
      {},
    ).config;

  test('machine-local settings leave it alone; style, data and image settings change it', () => {
    const one = styleIdentity(fakeState(cfg('one', {}, { pool_size: 2, timeout_ms: 1000, memory_cache_mb: 8 })), style('s1'));
    const two = styleIdentity(fakeState(cfg('two', { workers: 4 }, { pool_size: 6, timeout_ms: 9000, disk_cache_mb: 10, max_queue: 3 })), style('s1'));
    assert.equal(one, two);
    assert.notEqual(styleIdentity(fakeState(cfg('one')), style('s2')), one, 'a changed style file');
    assert.notEqual(styleIdentity(fakeState(cfg('one', {}, { png_compression: 9 })), style('s1')), one, 'a render setting that changes bytes');
    // The data: a local archive with one byte changed keeps the identity (issue 47: its changed tiles are
    // expired instead, src/expire/archives.ts); another kind of source would change it.
    const changed = path.join(dir, 'two/data/omt.pmtiles');
    const bytes = readFileSync(changed);
    bytes[bytes.length - 1] ^= 0xff;
    writeFileSync(changed, bytes);
    assert.equal(styleIdentity(fakeState(cfg('two')), style('s1')), one, 'a replaced archive keeps the key space');
  });

  test('[cache] shared takes redis:// and rediss:// URLs only, with a one-line error naming the key', () => {
    const check = (shared: unknown) => validateConfig({ cache: { shared } }, 't.toml', '/tmp', {});
    assert.equal(check('rediss://:secret@cache.example:6380/2').config.cache.shared, 'rediss://:secret@cache.example:6380/2');
    assert.throws(() => check('http://cache:6379'), (err: Error) => err instanceof ConfigError && /cache\.shared/.test(err.message) && !err.message.includes('\n'));
    fc.assert(
      fc.property(fc.string(), (s) => {
        try {
          const got = check(s).config.cache.shared;
          return got === s && /^rediss?:\/\/\S+$/.test(s);
        } catch (err) {
          return err instanceof ConfigError && /cache\.shared/.test(err.message);
        }
      }),
    );
    fc.assert(
      fc.property(fc.constantFrom('redis', 'rediss'), fc.domain(), fc.integer({ min: 1, max: 65535 }), fc.integer({ min: 0, max: 15 }), (scheme, host, port, db) => {
        const url = `${scheme}://${host}:${port}/${db}`;
        return check(url).config.cache.shared === url;
      }),
    );
  });

  test('shared_ttl_seconds and shared_timeout_ms are bounded whole numbers', () => {
    const check = (cache: Record<string, unknown>) => validateConfig({ cache }, 't.toml', '/tmp', {});
    assert.equal(check({}).config.cache.shared_ttl_seconds, 86_400);
    assert.equal(check({}).config.cache.shared_timeout_ms, 100);
    for (const bad of [0, -1, 1.5, 'x']) {
      assert.throws(() => check({ shared_ttl_seconds: bad }), /cache\.shared_ttl_seconds/);
      assert.throws(() => check({ shared_timeout_ms: bad }), /cache\.shared_timeout_ms/);
    }
  });
});
