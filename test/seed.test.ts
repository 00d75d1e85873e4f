// `tileserver-ts seed`: the bundled world map's generated style rendered for a small box at z0-8 into PMTiles and
// MBTiles archives, opened with the `pmtiles` package, with SQLite and with this server, and compared with the
// live render routes pixel for pixel; --dry-run counts; the progress on a real pseudo-terminal and as JSON
// lines, redrawn and written while the run goes on; a run killed with -9 resumed (only the missing tiles asked
// for); Ctrl-C leaves a valid archive; --warm fills the disk render cache and the shared Redis cache a server
// then answers from (rendered tiles, and a source's tiles transcoded to MLT); vector export in MVT and MLT, a
// raster source's tiles byte for byte, a style at 256 px @2x;
// tiles that fail (a remote archive's store answering 500) are counted, retried after Retry-After, left out with
// exit 1, and fetched by --resume alone; bad arguments are one line and exit 2; the seed's pool of two draws two
// bulk frames at once (a server's pool keeps one renderer for interactive frames).
import assert from 'node:assert/strict';
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { open } from 'node:fs/promises';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import Database from 'better-sqlite3';
import { PMTiles, TileType, type RangeResponse, type Source } from 'pmtiles';
import { defaultConcurrency } from '../src/seed/runner.js';
import { LocalFileSource } from '../src/sources/pmtiles.js';
import { tempDir } from './helpers/foundation.js';
import { startRedis, type RedisServer } from './helpers/redis.js';
import { decode, type Fetched } from './helpers/render.js';
import { CLI, fixture, runCli, startServer, writeTempConfig, type TestServer } from './helpers/server.js';

const WORLD = fixture('world/natural-earth-z0-6.pmtiles');
// Around the western Alps: one tile per zoom to z5, then 4, 9 and 25: 44 tiles at z0-8.
const BBOX = '5,45,10,48';
const ZOOMS = '0-8';
const EXPECTED_PER_ZOOM = [1, 1, 1, 1, 1, 1, 4, 9, 25];
const TOTAL = EXPECTED_PER_ZOOM.reduce((a, b) => a + b, 0);

const work = tempDir('tsts-seed-');
/**
 * The world source with its own render cache directory (and a shared cache when given), each tile drawn alone
 * (seeds draw in bulk frames, bulk_metatile; test/seed-frames.test.ts compares those with the live route).
 */
const worldToml = (cacheDir: string, extra = '') => `[[sources]]
id = "world"
type = "pmtiles"
path = "${WORLD}"
[render]
pool_size = 1
metatile = 1
bulk_metatile = 1
[cache]
dir = "${cacheDir}"
${extra}`;
const config = (cacheDir: string, extra = '') => writeTempConfig(worldToml(cacheDir, extra));

interface ProgressLine {
  type: string;
  total: number;
  done: number;
  skipped: number;
  fetched: number;
  written: number;
  empty: number;
  errors: number;
  tiles_per_s: number;
  eta_s: number | null;
}
const progressLines = (stdout: string) => stdout.trim().split('\n').filter(Boolean).map((l) => JSON.parse(l) as ProgressLine);

/** GET with a time limit: a hung answer fails the test instead of stalling the suite. */
async function fetchBytes(url: string): Promise<Fetched> {
  const res = await fetch(url, { signal: AbortSignal.timeout(60_000) });
  return { status: res.status, headers: res.headers, body: Buffer.from(await res.arrayBuffer()) };
}

const seed = (args: string[], timeoutMs = 120_000) => runCli(['seed', ...args], { LOG_LEVEL: 'warn' }, timeoutMs);

async function openPmtiles(file: string): Promise<{ reader: PMTiles; close: () => Promise<void> }> {
  const handle = await open(file, 'r');
  return { reader: new PMTiles(new LocalFileSource(handle, file)), close: () => handle.close() };
}

/** The tiles of the box, listed the way the test expects them (zoom by zoom, north-west first). */
function* planTiles(): Generator<[number, number, number]> {
  const tile = (lon: number, lat: number, z: number) => {
    const n = 2 ** z;
    const r = (lat * Math.PI) / 180;
    return [Math.floor(((lon + 180) / 360) * n), Math.floor(((1 - Math.log(Math.tan(r) + 1 / Math.cos(r)) / Math.PI) / 2) * n)];
  };
  for (let z = 0; z <= 8; z++) {
    const [x0, y0] = tile(5, 48, z);
    const [x1, y1] = tile(10, 45, z);
    for (let y = y0; y <= y1; y++) for (let x = x0; x <= x1; x++) yield [z, x, y];
  }
}

function mbtilesCount(file: string): number {
  const db = new Database(file, { readonly: true });
  try {
    return (db.prepare('SELECT count(*) AS n FROM tiles').get() as { n: number }).n;
  } finally {
    db.close();
  }
}

describe('tileserver-ts seed', () => {
  const seedCache = path.join(work, 'seed-cache');
  const seedConfig = config(seedCache);
  const pm = path.join(work, 'alps.pmtiles');
  const mb = path.join(work, 'alps.mbtiles');
  let pmRun: Awaited<ReturnType<typeof seed>>;
  let server: TestServer | undefined;
  let redis: RedisServer | undefined;
  after(async () => {
    await server?.stop();
    await redis?.stop();
  });

  before(async () => {
    pmRun = await seed(['--config', seedConfig, '--style', 'world', '--bbox', BBOX, '--zoom', ZOOMS, '--out', pm]);
  });

  test('--dry-run prints the tiles per zoom, and that many tiles are written', async () => {
    const dry = await seed(['--config', seedConfig, '--style', 'world', '--bbox', BBOX, '--zoom', ZOOMS, '--dry-run']);
    assert.equal(dry.code, 0, dry.stderr);
    const perZoom = [...dry.stdout.matchAll(/^zoom (\d+): (\d+) tiles$/gm)].map((m) => Number(m[2]));
    assert.deepEqual(perZoom, EXPECTED_PER_ZOOM);
    assert.match(dry.stdout, new RegExp(`^total: ${TOTAL} tiles$`, 'm'));
    assert.equal(pmRun.code, 0, pmRun.stderr);
    const last = progressLines(pmRun.stdout).at(-1)!;
    assert.equal(last.type, 'done');
    assert.equal(last.written, TOTAL);
    const { reader, close } = await openPmtiles(pm);
    try {
      let found = 0;
      for (const [z, x, y] of planTiles()) if (await reader.getZxy(z, x, y)) found++;
      assert.equal(found, TOTAL);
      assert.equal((await reader.getHeader()).numAddressedTiles, TOTAL);
    } finally {
      await close();
    }
  });

  test('off a terminal the progress is JSON lines on stdout, with the counts and the rate', () => {
    const lines = progressLines(pmRun.stdout);
    for (const l of lines) {
      assert.ok(['progress', 'done'].includes(l.type));
      assert.equal(l.total, TOTAL);
      assert.ok(l.done <= l.total && l.errors === 0 && typeof l.tiles_per_s === 'number');
    }
    assert.ok(lines.at(-1)!.tiles_per_s > 0);
    assert.ok(![`${pm}.partial`, `${pm}.tmp`, `${pm}.tmp.data`].some(existsSync), 'no journal or temporary file is left');
  });

  test('the PMTiles archive has a correct header and metadata for the pmtiles package', async () => {
    const { reader, close } = await openPmtiles(pm);
    try {
      const h = await reader.getHeader();
      assert.equal(h.tileType, TileType.Png);
      assert.equal(h.minZoom, 0);
      assert.equal(h.maxZoom, 8);
      assert.equal(h.clustered, true);
      assert.deepEqual([h.minLon, h.minLat, h.maxLon, h.maxLat].map((v) => Math.round(v * 1000) / 1000), [5, 45, 10, 48]);
      assert.deepEqual([h.centerLon, h.centerLat, h.centerZoom], [7.5, 46.5, 0]);
      const meta = (await reader.getMetadata()) as Record<string, unknown>;
      assert.equal(meta.format, 'png');
      assert.equal(typeof meta.name, 'string');
    } finally {
      await close();
    }
  });

  test('the MBTiles archive has the standard metadata and every tile', async () => {
    const run = await seed(['--config', seedConfig, '--style', 'world', '--bbox', BBOX, '--zoom', ZOOMS, '--out', mb]);
    assert.equal(run.code, 0, run.stderr);
    assert.equal(mbtilesCount(mb), TOTAL);
    const db = new Database(mb, { readonly: true });
    try {
      const meta = Object.fromEntries((db.prepare('SELECT name, value FROM metadata').all() as { name: string; value: string }[]).map((r) => [r.name, r.value]));
      assert.equal(meta.format, 'png');
      assert.equal(meta.minzoom, '0');
      assert.equal(meta.maxzoom, '8');
      assert.equal(meta.bounds, '5,45,10,48');
      assert.equal(meta.center, '7.5,46.5,0');
      const tables = (db.prepare("SELECT name FROM sqlite_master WHERE type = 'table'").all() as { name: string }[]).map((r) => r.name).sort();
      assert.deepEqual(tables, ['metadata', 'tiles'], 'only the MBTiles tables are left');
    } finally {
      db.close();
    }
  });

  test('this server serves both archives, and their tiles are the live render route\'s pixels', async () => {
    // A server with a render cache of its own: its renders are new, not the seed's cached images. Both draw each
    // tile in a frame of its own (metatile = 1): with adaptive metatiles a tile drawn in another batch may differ
    // in a few antialiased pixels, which would make the comparison one of batching, not of the seeder.
    server = await startServer({
      toml: `[[sources]]
id = "world"
type = "pmtiles"
path = "${WORLD}"
[[sources]]
id = "seeded-pm"
type = "pmtiles"
path = "${pm}"
[[sources]]
id = "seeded-mb"
type = "mbtiles"
path = "${mb}"
[render]
pool_size = 1
metatile = 1
[cache]
dir = "${path.join(work, 'server-cache')}"
`,
    });
    const tj = (await (await fetch(`${server.url}/data/seeded-mb.json`, { signal: AbortSignal.timeout(10_000) })).json()) as { format: string; minzoom: number; maxzoom: number };
    assert.deepEqual([tj.format, tj.minzoom, tj.maxzoom], ['png', 0, 8]);
    for (const [z, x, y] of [[0, 0, 0], [5, 16, 11], [7, 66, 45], [8, 134, 90]]) {
      const live = await fetchBytes(`${server.url}/styles/world/${z}/${x}/${y}.png`);
      assert.equal(live.status, 200, `${z}/${x}/${y}: ${live.body.toString().slice(0, 200)}`);
      assert.doesNotMatch(live.headers.get('server-timing') ?? 'none', /cache/, 'the live tile is a new render');
      const want = await decode(live.body);
      for (const id of ['seeded-pm', 'seeded-mb']) {
        const got = await fetchBytes(`${server.url}/data/${id}/${z}/${x}/${y}.png`);
        assert.equal(got.status, 200, `${id} ${z}/${x}/${y}`);
        const img = await decode(got.body);
        assert.deepEqual([img.width, img.height], [want.width, want.height]);
        assert.ok(Buffer.from(img.data).equals(Buffer.from(want.data)), `${id} ${z}/${x}/${y}: pixels differ from the live render`);
      }
    }
  });

  test('a run killed with -9 is resumed: only the missing tiles are asked for, and the archive holds all', async () => {
    // A fresh render cache: the tiles are drawn, slowly enough to kill the run half-way. z0-7 (19 tiles) is
    // enough for a kill half-way and a resume that lasts past a periodic progress line; z8 would add 25 renders.
    const zooms = '0-7';
    const total = TOTAL - EXPECTED_PER_ZOOM[8];
    const cfg = config(path.join(work, 'resume-cache'));
    const out = path.join(work, 'resumed.pmtiles');
    const args = ['seed', '--config', cfg, '--style', 'world', '--bbox', BBOX, '--zoom', zooms, '--out', out, '--concurrency', '2'];
    const child = spawn(process.execPath, [CLI, ...args], { stdio: ['ignore', 'pipe', 'ignore'], env: { ...process.env, LOG_LEVEL: 'warn' } });
    let killedStdout = '';
    child.stdout.on('data', (d) => (killedStdout += d));
    const exited = new Promise((r) => child.once('exit', r));
    const journalCount = () => {
      if (!existsSync(`${out}.partial`)) return 0;
      try {
        return mbtilesCount(`${out}.partial`);
      } catch {
        return 0; // being created or locked this instant
      }
    };
    const deadline = Date.now() + 90_000;
    while (journalCount() < 5 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    child.kill('SIGKILL');
    await exited;
    const kept = journalCount();
    assert.ok(kept >= 5 && kept < total, `killed with ${kept} of ${total} tiles in the journal`);
    assert.ok(!existsSync(out), 'a killed run leaves no archive under the final name');

    const resumed = await seed(['--config', cfg, '--style', 'world', '--bbox', BBOX, '--zoom', zooms, '--out', out, '--resume']);
    assert.equal(resumed.code, 0, resumed.stderr);
    // The periodic lines (every 2 s) of the two runs, not only the final one: at least one in mid-run, with tiles
    // done and an ETA in seconds.
    const periodic = [...progressLines(killedStdout.slice(0, killedStdout.lastIndexOf('\n') + 1)), ...progressLines(resumed.stdout)].filter((l) => l.type === 'progress');
    assert.ok(
      periodic.some((l) => l.done > 0 && l.done < l.total && typeof l.eta_s === 'number' && l.eta_s >= 0),
      `a progress line in mid-run with an ETA: ${JSON.stringify(periodic)}`,
    );
    const last = progressLines(resumed.stdout).at(-1)!;
    assert.equal(last.skipped, kept, 'the journal\'s tiles are skipped');
    assert.equal(last.fetched, total - kept, 'only the missing tiles are asked for');
    const { reader, close } = await openPmtiles(out);
    try {
      assert.equal((await reader.getHeader()).numAddressedTiles, total);
    } finally {
      await close();
    }
  });

  test('Ctrl-C stops the run cleanly with a valid archive of the tiles done', async () => {
    const cfg = config(path.join(work, 'interrupt-cache'));
    const out = path.join(work, 'interrupted.mbtiles');
    const child = spawn(process.execPath, [CLI, 'seed', '--config', cfg, '--style', 'world', '--bbox', BBOX, '--zoom', ZOOMS, '--out', out, '--concurrency', '2'], {
      stdio: ['ignore', 'pipe', 'pipe'],
      env: { ...process.env, LOG_LEVEL: 'warn' },
    });
    let stdout = '';
    child.stdout.on('data', (d) => (stdout += d));
    const code = new Promise<number | null>((r) => child.once('exit', (c) => r(c)));
    const deadline = Date.now() + 90_000;
    while (!existsSync(`${out}.partial`) || mbtilesCount(`${out}.partial`) < 3) {
      assert.ok(Date.now() < deadline, 'the run stored no tile');
      await new Promise((r) => setTimeout(r, 100));
    }
    child.kill('SIGINT');
    assert.equal(await code, 130);
    const last = progressLines(stdout).at(-1)!;
    assert.equal(last.type, 'interrupted');
    assert.ok(last.written < TOTAL);
    assert.equal(mbtilesCount(out), last.written, 'the archive holds every tile done');
    assert.ok(!existsSync(`${out}.partial`));
  });

  test('on a pseudo-terminal the progress is one bar redrawn in place, with tiles/s, ETA and errors', () => {
    const out = path.join(work, 'tty.mbtiles');
    // A render cache of its own and one tile at a time: the tiles are drawn, so the run lasts long enough for the
    // bar to be redrawn between the first line (drawn at once) and the last (drawn at the end).
    const zooms = '0-7';
    const total = TOTAL - EXPECTED_PER_ZOOM[8];
    const cmd = [process.execPath, CLI, 'seed', '--config', config(path.join(work, 'tty-cache')), '--style', 'world', '--bbox', BBOX, '--zoom', zooms, '--out', out, '--concurrency', '1']
      .map((a) => `'${a}'`)
      .join(' ');
    // script(1) runs the command on a new pseudo-terminal and copies what it writes there.
    const r = spawnSync('script', ['-qfec', cmd, '/dev/null'], { encoding: 'utf8', timeout: 120_000, env: { ...process.env, LOG_LEVEL: 'warn' } });
    assert.equal(r.status, 0, r.stdout + r.stderr);
    const redraws = r.stdout.split('\r').filter((s) => s.startsWith('['));
    assert.match(redraws[0], new RegExp(`^\\[\\.+\\] 0/${total} 0\\.0% 0\\.0 tiles/s ETA -- errors 0\\x1b\\[K`));
    assert.match(redraws.at(-1)!, new RegExp(`^\\[#+\\] ${total}/${total} 100\\.0% \\d+\\.\\d tiles/s in \\d+s errors 0\\x1b\\[K$`));
    // The redraws in between, with the tiles done so far and the time left at the rate so far.
    const between = redraws.slice(1, -1);
    assert.ok(between.length >= 3, `${between.length} redraws between the first and the last line: ${JSON.stringify(r.stdout.slice(0, 400))}`);
    const withEta = between.filter((l) => new RegExp(`^\\[[#.]+\\] ([1-9]\\d*)/${total} \\d+\\.\\d% \\d+\\.\\d tiles/s ETA (\\d+m)?\\d+s errors 0\\x1b\\[K$`).test(l));
    assert.ok(withEta.length >= 1, `a redraw with tiles done and an ETA in seconds: ${JSON.stringify(between.slice(0, 5))}`);
    assert.ok(r.stdout.includes('errors 0\x1b[K\r\n'), 'the last line ends the in-place line');
    assert.ok(!/^\{/m.test(r.stdout), 'no JSON lines on a terminal');
  });

  test('--warm fills the disk render cache and the shared cache: servers started later answer from them', async () => {
    redis = await startRedis();
    const warmCache = path.join(work, 'warm-cache');
    const shared = `shared = "${redis.url}"`;
    const run = await seed(['--config', config(warmCache, shared), '--style', 'world', '--bbox', BBOX, '--zoom', '0-6', '--warm']);
    assert.equal(run.code, 0, run.stderr);
    assert.equal(progressLines(run.stdout).at(-1)!.written, 10);
    await server?.stop();
    // The same configuration (cached images are keyed by the image settings too): a seeded tile comes from the disk.
    server = await startServer({ toml: worldToml(warmCache) });
    const fromDisk = await fetchBytes(`${server.url}/styles/world/6/33/22.png`);
    assert.equal(fromDisk.status, 200);
    assert.equal(fromDisk.headers.get('server-timing'), 'cache;desc="disk"');
    // An unseeded tile is a render: the header tells them apart.
    assert.doesNotMatch((await fetchBytes(`${server.url}/styles/world/6/0/0.png`)).headers.get('server-timing') ?? '', /cache/);
    await server.stop();
    // Another machine (its own empty disk cache) with the same shared cache.
    server = await startServer({ toml: worldToml(path.join(work, 'other-machine'), shared) });
    // The shared cache connects in the background after start-up. A tile asked for before that is rendered here and
    // kept in this process's memory cache (seen once in a full run), so wait for the connection first.
    for (let i = 0; i < 300; i++) {
      const ping = (await (await fetch(`${server.url}/ping`, { signal: AbortSignal.timeout(10_000) })).json()) as { shared_cache?: { state?: string } };
      if (ping.shared_cache?.state === 'connected') break;
      await new Promise((r) => setTimeout(r, 100));
    }
    const timing = (await fetchBytes(`${server.url}/styles/world/5/16/11.png`)).headers.get('server-timing') ?? '';
    assert.equal(timing, 'cache;desc="shared"');
  });

  test('--source --format mlt --warm puts the transcoded tiles into the shared cache: another server answers them from it', async () => {
    const warmRedis = await startRedis();
    try {
      const shared = `shared = "${warmRedis.url}"`;
      const run = await seed(['--config', config(path.join(work, 'mlt-warm-cache'), shared), '--source', 'world', '--format', 'mlt', '--bbox', BBOX, '--zoom', '0-3', '--warm']);
      assert.equal(run.code, 0, run.stderr);
      const written = progressLines(run.stdout).at(-1)!.written;
      assert.equal(written, 4, 'one tile per zoom over the box');
      // One entry per warmed tile, under the transcoded tiles' keys.
      const [, keys] = await warmRedis.client.scan('0', 'MATCH', 'tsts:v1:transcoded/*', 'COUNT', 10_000);
      assert.equal(keys.length, written, `the transcoded tiles in Redis: ${keys.join(', ')}`);
      await server?.stop();
      // A server on another machine (its own empty disk cache), with the same shared cache.
      server = await startServer({ toml: worldToml(path.join(work, 'mlt-other-machine'), shared) });
      // The shared cache connects in the background after start-up. A tile asked for before that is transcoded
      // here and then kept in this process's own tile cache, so wait for the connection first.
      for (let i = 0; i < 300; i++) {
        const ping = (await (await fetch(`${server.url}/ping`, { signal: AbortSignal.timeout(10_000) })).json()) as { shared_cache?: { state?: string } };
        if (ping.shared_cache?.state === 'connected') break;
        await new Promise((r) => setTimeout(r, 100));
      }
      const seeded = await fetchBytes(`${server.url}/data/world/3/4/2.mlt`);
      assert.equal(seeded.status, 200);
      assert.equal(seeded.headers.get('server-timing'), 'cache;desc="shared"');
      // A tile the seed did not warm is transcoded on the spot: the header tells them apart.
      const unseeded = await fetchBytes(`${server.url}/data/world/3/0/7.mlt`);
      assert.equal(unseeded.status, 200);
      assert.doesNotMatch(unseeded.headers.get('server-timing') ?? '', /cache/);
    } finally {
      await warmRedis.stop();
    }
  });

  test('vector export: the source\'s MVT into MBTiles with its vector_layers, and MLT into PMTiles, served like the live route', async () => {
    const mvt = path.join(work, 'world-mvt.mbtiles');
    const mlt = path.join(work, 'world-mlt.pmtiles');
    for (const [out, format] of [[mvt, 'pbf'], [mlt, 'mlt']]) {
      const r = await seed(['--config', seedConfig, '--source', 'world', '--bbox', BBOX, '--zoom', '0-3', '--format', format, '--out', out]);
      assert.equal(r.code, 0, r.stderr);
    }
    const db = new Database(mvt, { readonly: true });
    const meta = Object.fromEntries((db.prepare('SELECT name, value FROM metadata').all() as { name: string; value: string }[]).map((r) => [r.name, r.value]));
    db.close();
    assert.equal(meta.format, 'pbf');
    assert.deepEqual((JSON.parse(meta.json) as { vector_layers: { id: string }[] }).vector_layers.map((l) => l.id).sort(), ['countries', 'land']);
    const { reader, close } = await openPmtiles(mlt);
    const h = await reader.getHeader();
    await close();
    assert.equal(h.tileType, TileType.Mlt);
    await server?.stop();
    server = await startServer({ toml: `[[sources]]\nid = "world"\ntype = "pmtiles"\npath = "${WORLD}"\n[[sources]]\nid = "mvt"\ntype = "mbtiles"\npath = "${mvt}"\n[[sources]]\nid = "mlt"\ntype = "pmtiles"\npath = "${mlt}"\n` });
    for (const [id, ext] of [['mvt', 'pbf'], ['mlt', 'mlt']]) {
      const live = await fetchBytes(`${server.url}/data/world/3/4/2.${ext}`);
      const got = await fetchBytes(`${server.url}/data/${id}/3/4/2.${ext}`);
      assert.equal(got.status, 200, `${id}: ${got.body.toString().slice(0, 200)}`);
      // fetch has undone any content encoding: these are the tiles' own bytes.
      assert.ok(got.body.equals(live.body), `${id}: the exported tile differs from the live one`);
    }
  });

  test('empty tiles are left out unless --keep-empty; --resume of a finished archive asks only for what it lacks', async () => {
    // The world source ends at z6: its z7 tiles are empty (204).
    const sparse = path.join(work, 'sparse.mbtiles');
    const kept = path.join(work, 'kept.mbtiles');
    const args = ['--config', seedConfig, '--source', 'world', '--bbox', BBOX, '--zoom', '6-7'];
    const a = progressLines((await seed([...args, '--out', sparse])).stdout).at(-1)!;
    assert.deepEqual([a.written, a.empty, mbtilesCount(sparse)], [4, 9, 4]);
    const b = progressLines((await seed([...args, '--out', kept, '--keep-empty'])).stdout).at(-1)!;
    assert.deepEqual([b.written, b.empty, mbtilesCount(kept)], [13, 9, 13]);
    // A finished MBTiles holds its 4 tiles: only the 9 empty ones are asked again (and still not written).
    const c = progressLines((await seed([...args, '--out', sparse, '--resume'])).stdout).at(-1)!;
    assert.deepEqual([c.skipped, c.fetched, c.written, mbtilesCount(sparse)], [4, 9, 0, 4]);
    // A finished PMTiles archive of every tile: nothing is rendered again, and it still holds them all.
    const d = await seed(['--config', seedConfig, '--style', 'world', '--bbox', BBOX, '--zoom', ZOOMS, '--out', pm, '--resume']);
    assert.equal(d.code, 0, d.stderr);
    const last = progressLines(d.stdout).at(-1)!;
    assert.deepEqual([last.skipped, last.fetched], [TOTAL, 0]);
    const { reader, close } = await openPmtiles(pm);
    try {
      assert.equal((await reader.getHeader()).numAddressedTiles, TOTAL);
    } finally {
      await close();
    }
  });

  test('mistakes are one line naming the flag, exit 2', async () => {
    const cases: [string[], RegExp][] = [
      [['--style', 'world', '--bbox', BBOX, '--zoom', '9-3', '--warm'], /--zoom: the first zoom is above the second/],
      [['--style', 'nope', '--bbox', BBOX, '--zoom', '0', '--warm'], /--style: the configuration has no style "nope"/],
      [['--source', 'world', '--bbox', BBOX, '--zoom', '0', '--scale', '2', '--warm'], /--scale applies to rendered tiles/],
      [['--style', 'world', '--bbox', BBOX, '--zoom', '0', '--out', path.join(work, 'x.zip')], /--out: .*\.pmtiles or \.mbtiles/],
      [['--style', 'world', '--geojson', path.join(work, 'missing.geojson'), '--zoom', '0', '--warm'], /--geojson: cannot read .*no such file/],
      [['--style', 'world', '--bbox', BBOX, '--zoom', '0', '--out', pm], /--out: .* exists; give --resume/],
    ];
    for (const [args, message] of cases) {
      const r = await seed(['--config', seedConfig, ...args]);
      assert.equal(r.code, 2, `${args.join(' ')}: ${r.stderr}`);
      assert.match(r.stderr, message);
      assert.equal(r.stderr.trim().split('\n').length, 1, r.stderr);
    }
  });

  test('a GeoJSON area covers the tiles its geometries touch', async () => {
    const triangle = path.join(work, 'triangle.geojson');
    const point = path.join(work, 'point.geojson');
    // Half of its bounding box: the tiles the long side leaves out are not seeded.
    writeFileSync(triangle, JSON.stringify({ type: 'FeatureCollection', features: [{ type: 'Feature', properties: {}, geometry: { type: 'Polygon', coordinates: [[[5.1, 45.1], [9.9, 45.1], [5.1, 47.9], [5.1, 45.1]]] } }] }));
    writeFileSync(point, JSON.stringify({ type: 'Point', coordinates: [7.4, 46.9] }));
    const count = async (area: string[]) => {
      const r = await seed(['--config', seedConfig, '--style', 'world', ...area, '--zoom', '4-8', '--dry-run']);
      assert.equal(r.code, 0, r.stderr);
      return [...r.stdout.matchAll(/^zoom \d+: (\d+) tiles$/gm)].map((m) => Number(m[1]));
    };
    const box = await count(['--bbox', '5.1,45.1,9.9,47.9']);
    const tri = await count(['--geojson', triangle]);
    assert.deepEqual(box, [1, 1, 2, 6, 15]);
    // z7: the north-east tile of the six lies beyond the long side (it meets the box's north edge at 7.4°E).
    assert.deepEqual(tri, [1, 1, 2, 5, 10]);
    assert.deepEqual(await count(['--geojson', point]), [1, 1, 1, 1, 1]);
  });
});


/**
 * The world archive served over HTTP with byte ranges, as object storage serves it, where chosen ranges fail: a
 * tile's data read (its offset in the file) answers 500 `failures` more times, for good with Infinity.
 */
interface FailingStore {
  url: string;
  /** Data offset -> failures left. */
  failing: Map<number, number>;
  /** The first byte of every range asked for, in order. */
  asked: number[];
  close(): Promise<void>;
}

function startFailingStore(file: string): Promise<FailingStore> {
  const bytes = readFileSync(file);
  const failing = new Map<number, number>();
  const asked: number[] = [];
  const server = http.createServer((req, res) => {
    const m = /^bytes=(\d+)-(\d+)$/.exec(req.headers.range ?? '');
    if (!m) return void res.writeHead(416, { 'content-range': `bytes */${bytes.length}` }).end();
    const start = Number(m[1]);
    const end = Math.min(bytes.length - 1, Number(m[2]));
    asked.push(start);
    const left = failing.get(start) ?? 0;
    if (left > 0) {
      failing.set(start, left - 1);
      return void res.writeHead(500).end('the disk holding this tile failed');
    }
    res.writeHead(206, { 'content-range': `bytes ${start}-${end}/${bytes.length}`, 'content-length': end - start + 1 }).end(bytes.subarray(start, end + 1));
  });
  return new Promise((resolve) => {
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as AddressInfo;
      resolve({
        url: `http://127.0.0.1:${port}/${path.basename(file)}`,
        failing,
        asked,
        close: () => new Promise<void>((r) => server.close(() => r())),
      });
      server.unref();
    });
  });
}

/** Where each tile's bytes lie in a PMTiles file: the offset of the last range the pmtiles package reads for it. */
async function tileOffsets(file: string, tiles: Iterable<[number, number, number]>): Promise<Map<string, number>> {
  const bytes = readFileSync(file);
  let last = -1;
  const source: Source = {
    getKey: () => file,
    getBytes: async (offset: number, length: number): Promise<RangeResponse> => {
      last = offset;
      const part = bytes.subarray(offset, offset + length);
      return { data: part.buffer.slice(part.byteOffset, part.byteOffset + part.byteLength) };
    },
  };
  const reader = new PMTiles(source, undefined, (buf) => Promise.resolve(buf));
  const out = new Map<string, number>();
  for (const [z, x, y] of tiles) if (await reader.getZxy(z, x, y)) out.set(`${z}/${x}/${y}`, last);
  return out;
}

describe('tileserver-ts seed: failing tiles', () => {
  test('tiles whose reads fail are counted in errors and left out, exit 1; a 503 is asked again after its Retry-After; --resume asks only for the failed tiles', { timeout: 180_000 }, async () => {
    const store = await startFailingStore(WORLD);
    try {
      const plan = [...planTiles()].filter(([z]) => z <= 6);
      const offsets = await tileOffsets(WORLD, plan);
      assert.equal(offsets.size, 10, 'the world archive has every tile of the box at z0-6');
      // No retry by the source itself: each failed read is a 503 (Retry-After: 5) for the seed to handle.
      const cfg = writeTempConfig(`[storage]\nread_retries = 0\n[[sources]]\nid = "remote"\ntype = "pmtiles"\npath = "${store.url}"\n`);
      const keys = [...offsets.keys()];
      // Two tiles lost for good, and one whose first read fails once. Tiles whose bytes are stored once for
      // several (identical tiles) fail together: the lost ones are all the tiles at the lost offsets.
      const lostOffsets = new Set([offsets.get(keys[6])!, offsets.get(keys[9])!]);
      const flakyKey = keys.find((k) => !lostOffsets.has(offsets.get(k)!) && keys.filter((o) => offsets.get(o) === offsets.get(k)).length === 1 && k.startsWith('6/'))!;
      assert.ok(flakyKey, 'a z6 tile with bytes of its own');
      const lost = keys.filter((k) => lostOffsets.has(offsets.get(k)!));
      for (const o of lostOffsets) store.failing.set(o, Infinity);
      store.failing.set(offsets.get(flakyKey)!, 1);
      const out = path.join(work, 'remote.mbtiles');
      const args = ['--config', cfg, '--source', 'remote', '--bbox', BBOX, '--zoom', '0-6', '--out', out];

      const run = await seed(args, 150_000);
      assert.equal(run.code, 1, `tiles failed: exit 1\n${run.stderr}`);
      const last = progressLines(run.stdout).at(-1)!;
      assert.deepEqual([last.type, last.fetched, last.errors, last.written], ['done', 10, lost.length, 10 - lost.length]);
      // Logged once per distinct reason: the lost tiles fail alike, so one line names the first and why.
      const failed = run.stderr.split('\n').filter((l) => l.startsWith('{')).map((l) => JSON.parse(l) as { msg: string; tile?: string; err?: string }).filter((l) => l.msg === 'seed: tile failed');
      assert.equal(failed.length, 1, run.stderr);
      assert.ok(lost.includes(failed[0].tile!), `${failed[0].tile} is a lost tile`);
      assert.match(failed[0].err!, /^503 source "remote": cannot read .*HTTP 500/);
      // A lost tile was asked for five times (the first time and four retries); the flaky one twice.
      for (const o of lostOffsets) {
        const sharing = lost.filter((k) => offsets.get(k) === o).length;
        assert.equal(store.asked.filter((a) => a === o).length, 5 * sharing, `the lost range at ${o} was read once and retried 4 times per tile`);
      }
      assert.equal(store.asked.filter((a) => a === offsets.get(flakyKey)).length, 2, 'the tile that failed once was asked again and read');
      // The archive holds every other tile, the flaky one included, with the source's bytes.
      assert.equal(mbtilesCount(out), 10 - lost.length);
      const db = new Database(out, { readonly: true });
      try {
        const has = db.prepare('SELECT tile_data FROM tiles WHERE zoom_level = ? AND tile_column = ? AND tile_row = ?');
        for (const k of keys) {
          const [z, x, y] = k.split('/').map(Number);
          assert.equal(has.get(z, x, 2 ** z - 1 - y) !== undefined, !lost.includes(k), `${k} ${lost.includes(k) ? 'lost' : 'kept'}`);
        }
        assert.equal((db.prepare("SELECT value FROM metadata WHERE name = 'format'").get() as { value: string }).value, 'pbf');
      } finally {
        db.close();
      }

      // The store is mended: --resume reads only the lost tiles' bytes.
      store.failing.clear();
      store.asked.length = 0;
      const resumed = await seed([...args, '--resume']);
      assert.equal(resumed.code, 0, resumed.stderr);
      const again = progressLines(resumed.stdout).at(-1)!;
      assert.deepEqual([again.skipped, again.fetched, again.errors, again.written], [10 - lost.length, lost.length, 0, lost.length]);
      const tileReads = new Set(store.asked.filter((a) => [...offsets.values()].includes(a)));
      assert.deepEqual([...tileReads].sort(), [...lostOffsets].sort(), 'only the lost tiles were read');
      assert.equal(mbtilesCount(out), 10);
    } finally {
      await store.close();
    }
  });
});

describe('tileserver-ts seed: a raster source, and a style at 256 px @2x', () => {
  test('a raster archive source exported: each tile is the /data route\'s bytes', async () => {
    const toner = fixture('raster/stamen-toner-z0-3.pmtiles');
    const cfg = writeTempConfig(`[[sources]]\nid = "toner"\ntype = "pmtiles"\npath = "${toner}"\n`);
    const out = path.join(work, 'toner.pmtiles');
    const r = await seed(['--config', cfg, '--source', 'toner', '--bbox', '-180,-85,180,85', '--zoom', '0-2', '--out', out]);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(progressLines(r.stdout).at(-1)!.written, 21);
    const server = await startServer({ toml: `[server]\ndisable_render = true\n[[sources]]\nid = "toner"\ntype = "pmtiles"\npath = "${toner}"\n` });
    const { reader, close } = await openPmtiles(out);
    try {
      const h = await reader.getHeader();
      assert.equal(h.tileType, TileType.Png);
      assert.deepEqual([h.minZoom, h.maxZoom, h.numAddressedTiles], [0, 2, 21]);
      assert.equal(((await reader.getMetadata()) as { format?: string }).format, 'png');
      for (let z = 0; z <= 2; z++) {
        for (let x = 0; x < 2 ** z; x++) {
          for (let y = 0; y < 2 ** z; y++) {
            const live = await fetchBytes(`${server.url}/data/toner/${z}/${x}/${y}.png`);
            assert.equal(live.status, 200);
            const stored = await reader.getZxy(z, x, y);
            assert.ok(stored && Buffer.from(stored.data).equals(live.body), `${z}/${x}/${y}: the exported tile is the route's bytes`);
          }
        }
      }
    } finally {
      await close();
      await server.stop();
    }
  });

  test('--tile-size 256 --scale 2 writes 512 px images of 256 px tiles, with the zooms and bounds asked', async () => {
    const out = path.join(work, 'retina.mbtiles');
    const r = await seed(['--config', config(path.join(work, 'retina-cache')), '--style', 'world', '--bbox', BBOX, '--zoom', '0-2', '--tile-size', '256', '--scale', '2', '--out', out]);
    assert.equal(r.code, 0, r.stderr);
    const db = new Database(out, { readonly: true });
    try {
      const meta = Object.fromEntries((db.prepare('SELECT name, value FROM metadata').all() as { name: string; value: string }[]).map((m) => [m.name, m.value]));
      assert.deepEqual([meta.format, meta.minzoom, meta.maxzoom, meta.bounds], ['png', '0', '2', '5,45,10,48']);
      const rows = db.prepare('SELECT zoom_level, tile_column, tile_row, tile_data FROM tiles ORDER BY zoom_level').all() as { zoom_level: number; tile_column: number; tile_row: number; tile_data: Buffer }[];
      // 256 px tiles: zoom z of the 256 px grid (z2 is the tile 2/2/1 holding the Alps), drawn at twice the pixels.
      assert.deepEqual(rows.map((t) => `${t.zoom_level}/${t.tile_column}/${2 ** t.zoom_level - 1 - t.tile_row}`), ['0/0/0', '1/1/0', '2/2/1']);
      for (const t of rows) {
        const img = await decode(t.tile_data);
        assert.deepEqual([img.width, img.height], [512, 512], `${t.zoom_level}: a 512 px image`);
        const first = img.data.readUInt32BE(0);
        let differing = 0;
        for (let i = 0; i < img.data.length; i += 4) if (img.data.readUInt32BE(i) !== first) differing++;
        assert.ok(differing > 1000, `${t.zoom_level}: the image shows the map (${differing} pixels differ from the first)`);
      }
    } finally {
      db.close();
    }
  });
});

test("the default --concurrency gives each of the seed's renderers a frame and gathers one more", () => {
  // One renderer: two 4x4 frames' tiles, one drawn while the next gathers. Sixteen (a 64-core host's share): 17.
  assert.equal(defaultConcurrency(4, 1), 32);
  assert.equal(defaultConcurrency(4, 16), 17 * 16);
  assert.equal(defaultConcurrency(8, 2), 3 * 64);
  // A source's tiles (no frames) and small frames: at least 8.
  assert.equal(defaultConcurrency(1, 1), 8);
});

test("the seed's own renderers all draw bulk frames at once (a server keeps one back for people)", { timeout: 180_000 }, async () => {
  const { loadConfigFile } = await import('../src/config/load.js');
  const { startInProcess } = await import('../src/seed/service.js');
  const { pino } = await import('pino');
  const loaded = loadConfigFile(writeTempConfig(worldToml(path.join(work, 'pool-cache')).replace('pool_size = 1', 'pool_size = 2')));
  const service = await startInProcess(loaded, pino({ level: 'silent' }), { render: true });
  try {
    const render = service.ctx.render;
    assert.ok(render, 'the seed renders');
    // Eight z8 tiles in a row, each its own frame (bulk_metatile 1), asked for at once as the seed asks.
    let most = 0;
    let drawing = true;
    const watch = (async () => {
      while (drawing) {
        most = Math.max(most, render.load.busy);
        await new Promise((resolve) => setTimeout(resolve, 2));
      }
    })();
    // The renderers may still be starting: the seed asks again after Retry-After, as here, for at most a minute (a
    // pool that never starts fails here, with its last answer, rather than at the test's timeout).
    const ask = async (x: number): Promise<Response> => {
      const until = Date.now() + 60_000;
      for (;;) {
        const res = await service.get(`/styles/world/8/${x}/90.png`);
        if (res.status !== 503 || Date.now() > until) return res;
        await res.arrayBuffer();
        await new Promise((resolve) => setTimeout(resolve, 250));
      }
    };
    const answers = await Promise.all([130, 132, 134, 136, 138, 140, 142, 144].map(ask));
    drawing = false;
    await watch;
    for (const res of answers) {
      assert.equal(res.status, 200);
      assert.equal(res.headers.get('content-type'), 'image/png');
      assert.equal((await decode(Buffer.from(await res.arrayBuffer()))).width, 512);
    }
    assert.equal(most, 2, 'both renderers drew bulk frames at the same time');
  } finally {
    await service.close();
  }
});
