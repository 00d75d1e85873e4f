// A replaced archive expires the tiles whose bytes changed, through the real server: the bundled world archive
// (PMTiles) and a copy of it as MBTiles, then versions of both with a known 1 % of their tiles changed. Replaced
// by a rename and reloaded, each source's batch names exactly those tiles; the rendered tiles of unchanged areas
// are answered from the cache (no render), since their keys no longer name the archive's content. A file
// overwritten in place, and a file replaced while the server was down, expire the whole source.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { readFileSync, renameSync, statSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { gunzipSync } from 'node:zlib';
import { tileIdToZxy, type RangeResponse, type Source } from 'pmtiles';
import { fixture, freePort, startServer, type TestServer, jsonLogLines } from './helpers/server.js';
import { startRangeServer, tempDir, waitFor, writeMbtiles, type RangeServer } from './helpers/foundation.js';
import { parseScrape } from './helpers/prom-text.js';
import { buildPmtiles } from '../src/seed/pmtiles-writer.js';
import { readHeader, tileEntries } from '../src/expire/pmtiles-diff.js';
import { Compression, TileType } from 'pmtiles';

class BufferSource implements Source {
  constructor(private readonly buf: Buffer) {}
  getKey() {
    return 'buffer';
  }
  getBytes(offset: number, length: number): Promise<RangeResponse> {
    const part = this.buf.subarray(offset, offset + length);
    return Promise.resolve({ data: part.buffer.slice(part.byteOffset, part.byteOffset + part.length) as ArrayBuffer });
  }
}

interface Tile {
  z: number;
  x: number;
  y: number;
  data: Buffer;
}

/** Every tile of the world fixture, expanded from its runs. */
async function worldTiles(): Promise<Tile[]> {
  const buf = readFileSync(fixture('world/natural-earth-z0-6.pmtiles'));
  const src = new BufferSource(buf);
  const out: Tile[] = [];
  for await (const e of tileEntries(src, await readHeader(src))) {
    const data = buf.subarray(e.offset, e.offset + e.length);
    for (let id = e.id; id < e.id + e.run; id++) {
      const [z, x, y] = tileIdToZxy(id);
      out.push({ z, x, y, data });
    }
  }
  return out;
}

const PM = { tileType: TileType.Mvt, tileCompression: Compression.Gzip, bounds: [-180, -85, 180, 85] as [number, number, number, number], center: [0, 0, 2] as [number, number, number], metadata: { vector_layers: [] } };
const key = (t: { z: number; x: number; y: number }) => `${t.z}/${t.x}/${t.y}`;

/** The tiles with those of `changed` given another tile's bytes (a real tile of another place: it draws differently). */
function withChanges(tiles: Tile[], changed: Set<string>, donor: Buffer): Tile[] {
  return tiles.map((t) => (changed.has(key(t)) ? { ...t, data: donor } : t));
}

interface LogLine {
  msg?: string;
  source?: string;
  tiles?: number;
  reason?: string;
}
const logLines = (s: TestServer) => jsonLogLines<LogLine>(s);

// Tiles drawn before a replacement: two far from every change (South America, Australia), and two that changed
// (in the block 6/32..35/20..23 every version changes).
const UNCHANGED = [
  [6, 20, 35],
  [6, 58, 38],
] as const;
const CHANGED = [
  [6, 32, 20],
  [6, 35, 23],
] as const;

describe('replaced archives', () => {
  const dir = tempDir('tsts-archives-');
  const cacheDir = path.join(dir, 'cache');
  const pmFile = path.join(dir, 'world.pmtiles');
  const mbFile = path.join(dir, 'world.mbtiles');
  let server: TestServer;
  let adminPort: number;
  let scrapePort: number;
  let tiles: Tile[];
  /** The z6 tiles changed in the second version: 1 % of the archive (33 of 3,267 tiles). */
  const changed = new Set<string>();
  let toml: (render?: boolean) => string;

  const metrics = async () => parseScrape(await (await fetch(`http://127.0.0.1:${scrapePort}/metrics`)).text());
  const renders = async () => (await metrics()).find('render_duration_seconds_count', { style: 'world' }).reduce((n, s) => n + s.value, 0);
  const png = async (z: number, x: number, y: number) => {
    const res = await fetch(`${server.url}/styles/world/${z}/${x}/${y}.png`, { signal: AbortSignal.timeout(60_000) });
    assert.equal(res.status, 200, `${z}/${x}/${y}`);
    return Buffer.from(await res.arrayBuffer());
  };
  const reload = async () => {
    const res = await fetch(`http://127.0.0.1:${adminPort}/__admin/reload?flush=true`, { method: 'POST' });
    assert.equal(res.status, 200, await res.text());
  };
  /** Writes both archives of a version beside their files, then renames them over (what a deploy does). */
  const replaceByRename = (version: Tile[]) => {
    writeFileSync(`${pmFile}.new`, buildPmtiles(version, PM));
    writeMbtiles(`${mbFile}.new`, { format: 'pbf', minzoom: '0', maxzoom: '6' }, version);
    renameSync(`${pmFile}.new`, pmFile);
    renameSync(`${mbFile}.new`, mbFile);
  };

  before(async () => {
    tiles = await worldTiles();
    // 1 % of the tiles, all at z6: the block 6/32..35/20..23 (Europe, North Africa), then every 37th z6 tile.
    const z6 = tiles.filter((t) => t.z === 6);
    const kept = new Set(UNCHANGED.map((t) => t.join('/')));
    for (const t of z6) if (t.x >= 32 && t.x < 36 && t.y >= 20 && t.y < 24) changed.add(key(t));
    for (let i = 0; changed.size < Math.round(tiles.length / 100); i += 37) if (!kept.has(key(z6[i % z6.length]))) changed.add(key(z6[i % z6.length]));
    writeFileSync(pmFile, buildPmtiles(tiles, PM));
    writeMbtiles(mbFile, { format: 'pbf', minzoom: '0', maxzoom: '6' }, tiles);
    adminPort = await freePort();
    scrapePort = await freePort();
    toml = (render = true) => `[server]
admin_bind = "127.0.0.1:${adminPort}"
disable_render = ${!render}
[telemetry]
scrape_bind = "127.0.0.1:${scrapePort}"
[[sources]]
id = "world"
type = "pmtiles"
path = "${pmFile}"
[[sources]]
id = "worldmb"
type = "mbtiles"
path = "${mbFile}"
[render]
pool_size = 1
metatile = 1
[cache]
dir = "${cacheDir}"
`;
    server = await startServer({ toml: toml(), env: { LOG_LEVEL: 'info' }, timeoutMs: 60_000 });
  });
  after(() => server?.stop());


  test('a replacement by rename expires exactly the changed tiles; the rendered tiles of unchanged areas stay cache hits', async () => {
    assert.equal(changed.size, Math.round(tiles.length / 100));
    for (const t of UNCHANGED) assert.ok(!changed.has(t.join('/')));
    for (const t of CHANGED) assert.ok(changed.has(t.join('/')));
    for (const [z, x, y] of [...UNCHANGED, ...CHANGED]) await png(z, x, y);
    const drawn = await renders();
    assert.ok(drawn >= 4, `${drawn} renders`);
    // Asked again: answered from the cache.
    for (const [z, x, y] of UNCHANGED) await png(z, x, y);
    assert.equal(await renders(), drawn);

    const donor = tiles.find((t) => key(t) === '6/10/22')!.data;
    replaceByRename(withChanges(tiles, changed, donor));
    await reload();
    const found = logLines(server).filter((l) => l.msg === 'archive replaced: expiring the tiles that changed');
    assert.deepEqual(
      found.map((l) => [l.source, l.tiles]).sort(),
      [
        ['world', changed.size],
        ['worldmb', changed.size],
      ],
    );
    const m = await metrics();
    assert.equal(m.value('expire_tiles_total', { source: 'world', input: 'archive' }), changed.size);
    assert.equal(m.value('expire_tiles_total', { source: 'worldmb', input: 'archive' }), changed.size);
    // The same views again: the unchanged tiles are cache hits (their keys did not change), nothing is drawn.
    for (const [z, x, y] of UNCHANGED) await png(z, x, y);
    assert.equal(await renders(), drawn, 'an unchanged tile was drawn again after the replacement');
    // The source's tiles are the new ones.
    const vt = await fetch(`${server.url}/data/world/6/32/20.pbf`);
    assert.equal(Buffer.compare(Buffer.from(await vt.arrayBuffer()), gunzipSync(donor)), 0);
  });

  test('the rendered tiles that changed are not fresh cache hits', async () => {
    const drawn = await renders();
    const answers = await Promise.all(CHANGED.map(([z, x, y]) => fetch(`${server.url}/styles/world/${z}/${x}/${y}.png`)));
    const stale = answers.filter((r) => /fwd=stale/.test(r.headers.get('cache-status') ?? '')).length;
    // Either answered stale while one re-render replaces it, or drawn again now.
    await new Promise((r) => setTimeout(r, 3000));
    assert.ok(stale === CHANGED.length || (await renders()) >= drawn + CHANGED.length, `${stale} stale answers, ${(await renders()) - drawn} renders`);
  });

  test('a file overwritten in place expires the whole source', async () => {
    const inode = statSync(pmFile).ino;
    writeFileSync(pmFile, buildPmtiles(tiles, PM));
    assert.equal(statSync(pmFile).ino, inode);
    await reload();
    const whole = logLines(server).filter((l) => l.source === 'world' && l.reason === 'the file was overwritten in place');
    assert.equal(whole.length, 1);
    // One more tile: the key of tile 0/0/0, the whole source.
    assert.equal((await metrics()).value('expire_tiles_total', { source: 'world', input: 'archive' }), changed.size + 1);
  });

  test('a file replaced while the server was down expires the whole source at start', async () => {
    await server.stop();
    const recorded = JSON.parse(readFileSync(path.join(cacheDir, 'expire', 'archives.json'), 'utf8')) as { sources: Record<string, string> };
    assert.deepEqual(Object.keys(recorded.sources).sort(), ['world', 'worldmb']);
    const donor = tiles.find((t) => key(t) === '6/21/36')!.data;
    replaceByRename(withChanges(tiles, new Set(['6/20/20']), donor));
    // Without rendering from here on: the start-up is what this is about.
    server = await startServer({ toml: toml(false), env: { LOG_LEVEL: 'info' }, timeoutMs: 60_000 });
    const atStart = logLines(server).filter((l) => l.msg === 'archive replaced while the server was down: expiring the whole source');
    assert.deepEqual(atStart.map((l) => l.source).sort(), ['world', 'worldmb']);
    // Started again with the same files: nothing to expire.
    await server.stop();
    server = await startServer({ toml: toml(false), env: { LOG_LEVEL: 'info' }, timeoutMs: 60_000 });
    assert.equal(logLines(server).filter((l) => l.msg === 'archive replaced while the server was down: expiring the whole source').length, 0);
  });
});

// A remote PMTiles (over HTTP, test/remote-pmtiles.test.ts's range server) replaced at its URL by one with a few
// tiles changed: the store keeps the old object readable at its ETag (a versioned bucket), so the old and new
// objects are diffed as local files are. Remote MBTiles does not exist (MBTiles is SQLite: local files only).
// Its rendered tiles of unchanged areas stay cache hits: their keys do not name the object's ETag.
describe('a replaced remote archive', () => {
  const dir = tempDir('tsts-archives-remote-');
  let ranges: RangeServer;
  let server: TestServer;
  let scrapePort: number;
  let tiles: Tile[];
  const changed = new Set<string>();

  const metrics = async () => parseScrape(await (await fetch(`http://127.0.0.1:${scrapePort}/metrics`)).text());
  const renders = async () => (await metrics()).find('render_duration_seconds_count', { style: 'remote' }).reduce((n, s) => n + s.value, 0);
  const png = async (z: number, x: number, y: number) => {
    const res = await fetch(`${server.url}/styles/remote/${z}/${x}/${y}.png`, { signal: AbortSignal.timeout(60_000) });
    assert.equal(res.status, 200, `${z}/${x}/${y}`);
    await res.arrayBuffer();
    return res.headers;
  };

  before(async () => {
    tiles = await worldTiles();
    // The block 6/32..35/20..23 (Europe, North Africa): 16 tiles.
    for (const t of tiles) if (t.z === 6 && t.x >= 32 && t.x < 36 && t.y >= 20 && t.y < 24) changed.add(key(t));
    writeFileSync(path.join(dir, 'v1.pmtiles'), buildPmtiles(tiles, PM));
    ranges = await startRangeServer(path.join(dir, 'v1.pmtiles'), { keepVersions: true });
    scrapePort = await freePort();
    server = await startServer({
      toml: `[telemetry]
scrape_bind = "127.0.0.1:${scrapePort}"
[[sources]]
id = "remote"
type = "pmtiles"
path = "${ranges.url}"
[render]
pool_size = 1
metatile = 1
[cache]
dir = "${path.join(dir, 'cache')}"
`,
      env: { LOG_LEVEL: 'info' },
      timeoutMs: 60_000,
    });
  });
  after(async () => {
    await server?.stop();
    await ranges?.close();
  });

  test('the diff of the old and new objects expires exactly the changed tiles', async () => {
    for (const [z, x, y] of [...UNCHANGED, ...CHANGED]) await png(z, x, y);
    const donor = tiles.find((t) => key(t) === '6/10/22')!.data;
    writeFileSync(path.join(dir, 'v2.pmtiles'), buildPmtiles(withChanges(tiles, changed, donor), PM));
    ranges.replace(path.join(dir, 'v2.pmtiles'));
    // A SIGHUP re-validates the object (as the first read of a changed object would): a new ETag re-opens it.
    process.kill(server.proc.pid!, 'SIGHUP');
    const found = await waitFor('the diff', () => logLines(server).find((l) => l.source === 'remote' && /^(remote )?archive replaced/.test(l.msg ?? '')), 30_000);
    assert.equal(found.msg, 'archive replaced: expiring the tiles that changed', `${found.msg} (${found.reason ?? ''})`);
    assert.equal(found.tiles, changed.size);
    assert.equal((await metrics()).value('expire_tiles_total', { source: 'remote', input: 'archive' }), changed.size);
    // The rendered tiles of unchanged areas are kept: the object's ETag is not part of their keys
    // (shared-cache/identity.ts), so they are answered from the cache without a render.
    const before = await renders();
    for (const [z, x, y] of UNCHANGED) {
      const h = await png(z, x, y);
      assert.match(h.get('server-timing') ?? '', /cache;desc=/, `${z}/${x}/${y}: a cache hit`);
    }
    assert.equal(await renders(), before, 'an unchanged tile was drawn again after the replacement');
    // The changed ones are not fresh hits: answered stale while one render replaces them, or drawn now.
    const answers = await Promise.all(CHANGED.map(([z, x, y]) => png(z, x, y)));
    const stale = answers.filter((h) => /fwd=stale/.test(h.get('cache-status') ?? '')).length;
    await waitFor('the re-renders', async () => ((await renders()) >= before + CHANGED.length ? true : undefined), 30_000);
    assert.ok(stale === CHANGED.length || stale === 0, `${stale} stale answers`);
    // The source's tiles are the new object's.
    const vt = await fetch(`${server.url}/data/remote/6/32/20.pbf`);
    assert.equal(Buffer.compare(Buffer.from(await vt.arrayBuffer()), gunzipSync(donor)), 0);
  });
});
