// The admin listener and reloads, through the real server: POST /__admin/reload on `server.admin_bind` only
// (404 on the main port), the Reload result's fields, unchanged / changed / flush / failing files, settings that
// need a restart reported and not applied, every worker process on the new configuration, requests in flight
// finishing on the old state (whose files are closed once they end), and reloads under load with no wrong
// answer and no descriptors left behind.
import assert from 'node:assert/strict';
import { spawn, type ChildProcess } from 'node:child_process';
import { readFileSync, writeFileSync } from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { gunzipSync } from 'node:zlib';
import { getJson, request, sha256, startRangeServer, storedPmtilesTile, tempDir, waitFor, type RangeServer } from './helpers/foundation.js';
import { descendants, fds, postJson, pssMb, reloadUnderLoad, rssMb, serviceProcesses, WATER_STYLE_LAND, WATER_STYLE_SEA, writeWaterStyle, type Expected } from './helpers/reload-load.js';
import { decode, distance, pixel } from './helpers/render.js';
import { CLI, fixture, freePort, runCli, scratchTmp, writeTempConfig } from './helpers/server.js';

const OMT = fixture('vector/omt-planet-z0-1.pmtiles');
const CITIES = fixture('vector/world_cities.mbtiles');
const RASTER = fixture('raster/natural-earth-png-z0-1.pmtiles');

interface Service {
  url: string;
  adminUrl: string;
  port: number;
  adminPort: number;
  file: string;
  proc: ChildProcess;
  output(): string;
  stop(): Promise<void>;
}

/** Starts the CLI with `--config` only (host, port and admin address come from the file, so a reload may change them). */
async function startFromFile(toml: (port: number, adminPort: number) => string): Promise<Service> {
  const port = await freePort();
  const adminPort = await freePort();
  const file = writeTempConfig(toml(port, adminPort));
  const proc = spawn(process.execPath, [CLI, '--config', file], { env: { ...process.env, LOG_LEVEL: 'info', TMPDIR: scratchTmp() }, stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  proc.stdout!.on('data', (d) => (out += d));
  proc.stderr!.on('data', (d) => (out += d));
  const url = `http://127.0.0.1:${port}`;
  await waitFor('the service to answer', async () => {
    if (proc.exitCode !== null) throw new Error(`the service exited:\n${out}`);
    return (await fetch(`${url}/health`).then((r) => r.ok).catch(() => false)) || undefined;
  }, 60_000);
  return {
    url,
    adminUrl: `http://127.0.0.1:${adminPort}`,
    port,
    adminPort,
    file,
    proc,
    output: () => out,
    stop: () =>
      new Promise((resolve) => {
        if (proc.exitCode !== null) return resolve();
        proc.once('exit', () => resolve());
        proc.kill('SIGKILL');
        // Worker processes outlive a killed primary: end them too.
        for (const pid of serviceProcesses(proc.pid!).slice(1)) process.kill(pid, 'SIGKILL');
      }),
  };
}

function sourcesToml(sources: [string, string, string][]): string {
  return sources.map(([id, type, file]) => `[[sources]]\nid = "${id}"\ntype = "${type}"\npath = "${file}"\n`).join('');
}

/** The /ping of as many processes as answer `n` requests, each on a new connection (the primary spreads them). */
async function pings(url: string, n = 8): Promise<{ config_hash: string; loaded_at_unix: number; loaded_sources: number; cache_entries: number }[]> {
  const out = [];
  for (let i = 0; i < n; i++) out.push((await getJson<{ config_hash: string; loaded_at_unix: number; loaded_sources: number; cache_entries: number }>(url, '/ping')).json);
  return out;
}

/** Every field of the spec's Reload result, with its type; and ours (restart_required, processes). */
function assertReloadResult(json: Record<string, unknown>): void {
  for (const key of ['config_hash', 'version']) assert.equal(typeof json[key], 'string', `${key} is a string`);
  for (const key of ['loaded_at_unix', 'loaded_sources', 'loaded_styles', 'processes']) assert.ok(Number.isInteger(json[key]), `${key} is an integer`);
  for (const key of ['ok', 'reloaded', 'renderer_enabled']) assert.equal(typeof json[key], 'boolean', `${key} is a boolean`);
  assert.ok(Array.isArray(json.restart_required));
  assert.match(json.config_hash as string, /^[0-9a-f]{64}$/);
  if (json.ok) assert.equal(json.error, undefined, 'error only when ok is false');
  else assert.equal(typeof json.error, 'string');
}

describe('admin listener and reload, two worker processes', () => {
  let svc: Service;
  let remote: RangeServer;
  const head = (port: number, adminPort: number, extra = '') =>
    `[server]\nhost = "127.0.0.1"\nport = ${port}\nworkers = 2\nadmin_bind = "127.0.0.1:${adminPort}"\ndisable_render = true\n${extra}`;
  let A: string;
  let B: string;

  before(async () => {
    remote = await startRangeServer(OMT);
    svc = await startFromFile((port, adminPort) => {
      A = head(port, adminPort) + sourcesToml([['omt', 'pmtiles', OMT], ['cities', 'mbtiles', CITIES], ['remote', 'pmtiles', remote.url]]);
      B = head(port, adminPort) + sourcesToml([['omt', 'pmtiles', OMT], ['raster', 'pmtiles', RASTER]]);
      return A;
    });
    // Both workers are up once two answers name two different loaded_at or once the primary says so; wait for
    // the second worker by asking until readiness counts no starting process.
    await waitFor('both workers ready', async () => ((await request(svc.url, '/ready')).status === 200 ? true : undefined), 60_000);
  });
  after(async () => {
    await svc?.stop();
    await remote?.close();
  });

  test('the admin routes exist only on the admin listener; it answers 404, 405 and 400 with problem JSON', async () => {
    for (const method of ['POST', 'GET']) {
      const main = await request(svc.url, '/__admin/reload', { method });
      assert.equal(main.status, 404, `${method} /__admin/reload on the main port`);
    }
    const unknown = await request(svc.adminUrl, '/__admin/nothing', { method: 'POST' });
    assert.equal(unknown.status, 404);
    assert.equal(unknown.headers['content-type'], 'application/problem+json');
    const get = await request(svc.adminUrl, '/__admin/reload');
    assert.equal(get.status, 405);
    assert.equal(get.headers.allow, 'POST');
    const bad = await request(svc.adminUrl, '/__admin/reload?flush=maybe', { method: 'POST' });
    assert.equal(bad.status, 400);
    assert.match(JSON.parse(bad.body.toString()).detail, /flush "maybe"/);
  });

  test('an unchanged file: ok, reloaded false, nothing rebuilt (the tile cache stays)', async () => {
    assert.equal((await request(svc.url, '/data/omt/0/0/0.pbf')).status, 200);
    const before = await pings(svc.url);
    const res = await postJson(`${svc.adminUrl}/__admin/reload`);
    assert.equal(res.status, 200);
    assertReloadResult(res.json);
    assert.equal(res.json.ok, true);
    assert.equal(res.json.reloaded, false);
    assert.equal(res.json.config_hash, sha256(A));
    assert.equal(res.json.loaded_sources, 3);
    assert.equal(res.json.loaded_styles, 0);
    assert.equal(res.json.processes, 2);
    assert.deepEqual(res.json.restart_required, []);
    const after = await pings(svc.url);
    assert.deepEqual(new Set(after.map((p) => p.loaded_at_unix)), new Set(before.map((p) => p.loaded_at_unix)), 'no process rebuilt its state');
  });

  test('a changed file: every process swaps to it (new hash, sources, loaded_at) and serves the new sources', async () => {
    const t0 = Math.floor(Date.now() / 1000);
    writeFileSync(svc.file, B);
    const res = await postJson(`${svc.adminUrl}/__admin/reload`);
    assert.equal(res.status, 200);
    assertReloadResult(res.json);
    assert.equal(res.json.reloaded, true);
    assert.equal(res.json.config_hash, sha256(B));
    assert.equal(res.json.loaded_sources, 2);
    assert.ok((res.json.loaded_at_unix as number) >= t0);
    // The answer comes once every process has swapped: no process answers with the old state after it.
    const seen = await pings(svc.url, 10);
    assert.deepEqual(new Set(seen.map((p) => p.config_hash)), new Set([sha256(B)]));
    for (const p of seen) {
      assert.equal(p.loaded_sources, 2);
      assert.ok(p.loaded_at_unix >= t0);
    }
    for (let i = 0; i < 4; i++) {
      assert.equal((await request(svc.url, '/data/raster/0/0/0.png')).status, 200);
      assert.equal((await request(svc.url, '/data/cities/0/0/0.pbf')).status, 404);
    }
  });

  test('flush rebuilds an unchanged file (reloaded true, tile cache emptied)', async () => {
    for (let i = 0; i < 4; i++) assert.equal((await request(svc.url, '/data/omt/0/0/0.pbf')).status, 200);
    assert.ok((await pings(svc.url)).some((p) => p.cache_entries > 0));
    const res = await postJson(`${svc.adminUrl}/__admin/reload?flush=true`);
    assert.equal(res.status, 200);
    assert.equal(res.json.reloaded, true);
    assert.equal(res.json.config_hash, sha256(B));
    for (const p of await pings(svc.url)) assert.equal(p.cache_entries, 0, 'a rebuilt state starts with an empty tile cache');
  });

  test('a failing file answers 500 {ok: false, error} naming the cause, and the previous configuration keeps serving', async () => {
    writeFileSync(svc.file, B.replace('[[sources]]', '[[sources]]\nid = 5\n[[sources]]'));
    const invalid = await postJson(`${svc.adminUrl}/__admin/reload`);
    assert.equal(invalid.status, 500);
    assertReloadResult(invalid.json);
    assert.equal(invalid.json.ok, false);
    assert.match(invalid.json.error as string, /sources\[0\]\.id/);
    assert.equal(invalid.json.config_hash, sha256(B), 'the figures are those of the configuration still active');

    const broken = B + sourcesToml([['bad', 'pmtiles', fixture('broken/invalid.pmtiles')]]);
    writeFileSync(svc.file, broken);
    const unopenable = await postJson(`${svc.adminUrl}/__admin/reload`);
    assert.equal(unopenable.status, 500);
    assert.equal(unopenable.json.ok, false);
    assert.match(unopenable.json.error as string, /source "bad".*not a PMTiles archive/);
    assert.doesNotMatch(unopenable.json.error as string, /\n\s+at /, 'no stack trace');
    for (const p of await pings(svc.url)) assert.equal(p.config_hash, sha256(B));
    assert.equal((await request(svc.url, '/data/raster/0/0/0.png')).status, 200);
    assert.equal((await request(svc.url, '/data/bad.json')).status, 404);
    writeFileSync(svc.file, B);
  });

  test('when one process cannot build the new state, the ones that could go back: every process keeps one configuration', async () => {
    // An archive host whose header can be read once: every later read of it fails, other ranges are served. The
    // first worker to open the new source succeeds, the second cannot.
    const bytes = readFileSync(OMT);
    let served = 0;
    let headerReads = 0;
    const flaky = http.createServer((req, res) => {
      served++;
      if ((req.headers.range ?? '').startsWith('bytes=0-') && headerReads++ > 0) return void res.writeHead(500).end('down');
      const m = /^bytes=(\d+)-(\d+)$/.exec(req.headers.range ?? '')!;
      const part = bytes.subarray(Number(m[1]), Math.min(bytes.length, Number(m[2]) + 1));
      res.writeHead(206, { 'Content-Length': part.length, 'Content-Range': `bytes ${m[1]}-${Number(m[1]) + part.length - 1}/${bytes.length}` }).end(part);
    });
    await new Promise<void>((resolve) => flaky.listen(0, '127.0.0.1', resolve));
    try {
      const before = await pings(svc.url);
      assert.deepEqual(new Set(before.map((p) => p.config_hash)), new Set([sha256(B)]));
      const { port } = flaky.address() as net.AddressInfo;
      writeFileSync(svc.file, B + sourcesToml([['flaky', 'pmtiles', `http://127.0.0.1:${port}/omt.pmtiles`]]));
      const res = await postJson(`${svc.adminUrl}/__admin/reload`);
      assert.equal(res.status, 500);
      assert.equal(res.json.ok, false);
      assert.match(res.json.error as string, /^process \d+: source "flaky"/);
      assert.ok(headerReads >= 2 && served >= 3, 'both processes tried the new source');
      assert.equal(res.json.config_hash, sha256(B));
      // The process that had swapped is back on the previous configuration.
      for (const p of await pings(svc.url, 10)) {
        assert.equal(p.config_hash, sha256(B));
        assert.equal(p.loaded_sources, 2);
      }
      assert.equal((await request(svc.url, '/data/flaky.json')).status, 404);
      assert.match(svc.output(), /"failed":\[\d+\],"returning":\[\d+\],"msg":"reload: not every process could build the new state/);
    } finally {
      flaky.close();
      writeFileSync(svc.file, B);
    }
  });

  test('host, port, admin address, CORS and telemetry changes are reported as needing a restart and not applied', async () => {
    const port = await freePort();
    const adminPort = await freePort();
    const moved = head(port, adminPort, 'cors_origins = ["https://maps.example"]\n[telemetry]\nsample_rate = 0.25\n') + sourcesToml([['omt', 'pmtiles', OMT]]);
    writeFileSync(svc.file, moved);
    const res = await postJson(`${svc.adminUrl}/__admin/reload`);
    assert.equal(res.status, 200);
    assert.equal(res.json.reloaded, true, 'the rest of the file is applied');
    assert.deepEqual(res.json.restart_required, ['server.port', 'server.admin_bind', 'server.cors_origins', 'telemetry']);
    assert.equal(res.json.loaded_sources, 1);
    await waitFor('the log to say a restart is needed', () => (/server\.port, server\.admin_bind, server\.cors_origins, telemetry changed in the file but only apply after a restart/.test(svc.output()) ? true : undefined));
    // Still on the old addresses, with the old CORS answer; nothing listens on the new ones.
    const tile = await request(svc.url, '/data/omt/0/0/0.pbf', { headers: { Origin: 'https://other.example' } });
    assert.equal(tile.status, 200);
    assert.equal(tile.headers['access-control-allow-origin'], '*');
    for (const p of [port, adminPort]) {
      const refused = await new Promise<boolean>((resolve) => {
        const s = net.connect(p, '127.0.0.1');
        s.once('connect', () => (s.destroy(), resolve(false)));
        s.once('error', () => resolve(true));
      });
      assert.ok(refused, `nothing listens on ${p}`);
    }
    writeFileSync(svc.file, B);
    const back = await postJson(`${svc.adminUrl}/__admin/reload`);
    assert.deepEqual(back.json.restart_required, []);
  });

  test('SIGHUP runs the same reload', async () => {
    writeFileSync(svc.file, A);
    process.kill(svc.proc.pid!, 'SIGHUP');
    await waitFor('every process on the SIGHUP configuration', async () => {
      const seen = new Set((await pings(svc.url, 6)).map((p) => p.config_hash));
      return seen.size === 1 && seen.has(sha256(A)) ? true : undefined;
    }, 30_000);
    await waitFor('the log line of the SIGHUP reload', () => (/"trigger":"SIGHUP"[^\n]*"msg":"reload: new configuration active in every process"/.test(svc.output()) ? true : undefined));
  });
});

describe('admin_bind in the configuration', () => {
  test('an address that is not host:port stops start-up with one line naming the key', async () => {
    const r = await runCli(['--config', writeTempConfig('[server]\nadmin_bind = "localhost"\n')]);
    assert.equal(r.code, 1);
    assert.match(r.stderr, /server\.admin_bind: "localhost" is not host:port/);
    assert.doesNotMatch(r.stderr, /\n\s+at /);
  });

  test('an admin address in use stops start-up with one line', async () => {
    const taken = net.createServer();
    await new Promise<void>((resolve) => taken.listen(0, '127.0.0.1', resolve));
    const { port } = taken.address() as net.AddressInfo;
    try {
      const r = await runCli(['--config', writeTempConfig(`[server]\nadmin_bind = "127.0.0.1:${port}"\n[[sources]]\nid = "omt"\ntype = "pmtiles"\npath = "${OMT}"\n`), '--port', String(await freePort()), '--workers', '1']);
      assert.equal(r.code, 1);
      assert.match(r.stderr, new RegExp(`127\\.0\\.0\\.1:${port}`));
      assert.equal(r.stderr.trim().split('\n').length, 1, r.stderr);
    } finally {
      taken.close();
    }
  });
});

describe('requests in flight during a reload, one process', () => {
  let svc: Service;
  let remote: RangeServer;
  let A: string;
  let B: string;

  before(async () => {
    remote = await startRangeServer(OMT);
    svc = await startFromFile((port, adminPort) => {
      const head = `[server]\nhost = "127.0.0.1"\nport = ${port}\nworkers = 1\nadmin_bind = "127.0.0.1:${adminPort}"\ndisable_render = true\n`;
      A = head + sourcesToml([['remote', 'pmtiles', remote.url], ['cities', 'mbtiles', CITIES]]);
      B = head + sourcesToml([['omt', 'pmtiles', OMT]]);
      return A;
    });
  });
  after(async () => {
    await svc?.stop();
    await remote?.close();
  });

  test('finish on the old state, whose files are closed once they have ended (not after a fixed delay)', async () => {
    const pid = svc.proc.pid!;
    assert.equal((await request(svc.url, '/data/cities/0/0/0.pbf')).status, 200);
    assert.ok(fds(pid, 'world_cities.mbtiles').matching >= 1, 'the MBTiles file is open');
    const stored = (await storedPmtilesTile(OMT, 1, 1, 0))!;
    // Held long enough that the reload and the checks below always happen while it runs, even on a slow machine.
    remote.setDelay(8000);
    const seen = remote.ranges.length;
    const pending = request(svc.url, '/data/remote/1/1/0.pbf', { headers: { 'Accept-Encoding': 'gzip' }, timeoutMs: 60_000 });
    await waitFor('the tile request to reach the remote archive', () => (remote.ranges.length > seen ? true : undefined));
    writeFileSync(svc.file, B);
    const res = await postJson(`${svc.adminUrl}/__admin/reload`);
    assert.equal(res.json.reloaded, true);
    // The new state serves at once; the old one is still open for the request that arrived under it.
    assert.equal((await request(svc.url, '/data/cities/0/0/0.pbf')).status, 404);
    assert.equal((await request(svc.url, '/data/omt/0/0/0.pbf')).status, 200);
    assert.ok(fds(pid, 'world_cities.mbtiles').matching >= 1, 'the old state stays open while its request runs');
    const tile = await pending;
    assert.equal(tile.status, 200);
    assert.ok(gunzipSync(tile.body).equals(gunzipSync(stored)), 'the in-flight request got its tile from the source the reload removed');
    remote.setDelay(0);
    // Closed when that request ended: well before the 30 s backstop.
    await waitFor('the old state to be closed', () => (fds(pid, 'world_cities.mbtiles').matching === 0 ? true : undefined), 15_000);
  });
});

describe('reloads under load (tiles and renders)', () => {
  let svc: Service;
  let A: string;
  let B: string;

  before(async () => {
    const dir = tempDir('tsts-reload-load-');
    const style = writeWaterStyle(dir);
    svc = await startFromFile((port, adminPort) => {
      const head = `[server]\nhost = "127.0.0.1"\nport = ${port}\nworkers = 2\nadmin_bind = "127.0.0.1:${adminPort}"\n[cache]\ndir = "${path.join(dir, 'cache')}"\n[render]\npool_size = 1\npages_per_browser = 1\n[[styles]]\nid = "water"\npath = "${style}"\n`;
      A = head + sourcesToml([['omt', 'pmtiles', OMT], ['cities', 'mbtiles', CITIES]]);
      B = head + sourcesToml([['omt', 'pmtiles', OMT], ['raster', 'pmtiles', RASTER]]);
      return A;
    });
    await waitFor('renderers warm in both processes', async () => ((await request(svc.url, '/ready')).status === 200 ? true : undefined), 120_000);
  });
  after(async () => {
    await svc?.stop();
  });

  test('no failed or wrong answer while the configuration is reloaded again and again; descriptors and memory come back', async () => {
    const tiles: Expected[] = [];
    for (const [z, x, y] of [[0, 0, 0], [1, 0, 0], [1, 1, 0], [1, 0, 1], [1, 1, 1]]) {
      const stored = gunzipSync((await storedPmtilesTile(OMT, z, x, y))!);
      tiles.push({ path: `/data/omt/${z}/${x}/${y}.pbf`, check: (status, body) => (status !== 200 ? `status ${status}` : body.equals(stored) ? undefined : 'not the stored tile') });
    }
    tiles.push({ path: '/data/omt.json', check: (status, body) => (status === 200 && JSON.parse(body.toString()).tilejson === '3.0.0' ? undefined : `status ${status}`) });
    // Pixels checked in the load loop would slow it; the last renders are decoded afterwards.
    const rendered: Buffer[] = [];
    const renders: Expected[] = [0, 0.0001, 0.0002].map((lon) => ({
      path: `/styles/water/static/${lon},0,1/256x256.png`,
      check: (status, body) => {
        if (status !== 200) return `status ${status}: ${body.toString().slice(0, 200)}`;
        rendered.push(body);
        return body.subarray(1, 4).toString() === 'PNG' ? undefined : 'not a PNG';
      },
    }));
    // Warm every path once, then note what each process holds.
    for (const r of [...tiles, ...renders]) {
      const res = await request(svc.url, r.path);
      assert.equal(r.check(res.status, res.body), undefined, r.path);
    }
    rendered.length = 0;
    const pids = serviceProcesses(svc.proc.pid!);
    assert.equal(pids.length, 3, 'a primary and two workers');
    // The browsers of each worker process (the primary has none of its own).
    const browsersOf = (p: number) => (p === pids[0] ? 0 : pssMb(descendants(p)));
    const before = pids.map((p) => ({ pid: p, fds: fds(p).total, rss: rssMb(p), browsers: browsersOf(p) }));

    const report = await reloadUnderLoad({
      url: svc.url,
      adminUrl: svc.adminUrl,
      configFile: svc.file,
      configs: [A, B],
      reloads: 10,
      groups: [
        { connections: 60, requests: tiles },
        { connections: 4, requests: renders },
      ],
    });
    assert.equal(report.failedReloads, 0, report.reasons.join('\n'));
    assert.equal(report.wrong, 0, report.reasons.join('\n'));
    assert.ok(report.requests > 100, `${report.requests} requests were answered`);
    assert.ok(rendered.length > 4, 'renders ran during the reloads');
    for (const png of rendered.slice(-4)) {
      const img = await decode(png);
      assert.ok(distance(pixel(img, 43, 128), WATER_STYLE_SEA) <= 8, `the Atlantic is water: ${pixel(img, 43, 128)}`);
      assert.ok(distance(pixel(img, 185, 70), WATER_STYLE_LAND) <= 8, `the Sahara is land: ${pixel(img, 185, 70)}`);
    }
    // Every old state is closed once its requests have ended: descriptors come back to where they were.
    const settled = await waitFor('descriptors back within 16 of the start in every process', () => {
      const now = before.map((b) => ({ ...b, fdsNow: fds(b.pid).total, rssNow: rssMb(b.pid), browsersNow: browsersOf(b.pid) }));
      return now.every((n) => n.fdsNow <= n.fds + 16) ? now : undefined;
    }, 30_000);
    for (const s of settled) {
      process.stdout.write(`# process ${s.pid}: fds ${s.fds} -> ${s.fdsNow}, RSS ${s.rss.toFixed(0)} -> ${s.rssNow.toFixed(0)} MB, browsers PSS ${s.browsers.toFixed(0)} -> ${s.browsersNow.toFixed(0)} MB\n`);
      assert.ok(s.rssNow <= s.rss + 150, `process ${s.pid}: RSS ${s.rss.toFixed(0)} -> ${s.rssNow.toFixed(0)} MB (bound: +150 MB)`);
      assert.ok(s.browsersNow <= s.browsers + 200, `process ${s.pid}: browsers PSS ${s.browsers.toFixed(0)} -> ${s.browsersNow.toFixed(0)} MB (bound: +200 MB)`);
    }
    process.stdout.write(`# ${report.requests} answers during ${report.reloadMs.length} reloads in ${(report.durationMs / 1000).toFixed(1)} s, 0 wrong\n`);
  });
});
