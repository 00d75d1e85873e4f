// What an expiry reaches besides rendered style tiles, through the real server, a real PostgreSQL + PostGIS and a
// real redis-server: a PostGIS table's tiles (MVT, MLT, a br variant, GeoJSON, a filtered view, a named and an ad
// hoc composite) answer the old row until the expiry of their tile, then the new one, while a tile elsewhere stays
// a cache hit; an expiry deeper than a tile reaches it (the index answers by area); hillshade tiles of a DEM are
// made again (their disk file rewritten) when their tile or a neighbour expires, and not otherwise; a transcoded
// tile in the fleet's shared cache made before an expiry is not used. Surrogate-Key headers name what each
// answer is made from.
import assert from 'node:assert/strict';
import { mkdtempSync, readdirSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { startPostgres, type PostgresCluster } from './helpers/postgres.js';
import { startRedis, type RedisServer } from './helpers/redis.js';
import { fixture, freePort, startServer, type TestServer } from './helpers/server.js';
import { get, readMlt, readMvt } from './helpers/vector-tiles.js';

/** The tile of a lon/lat at zoom z (web mercator, written here). */
function tileOf(lon: number, lat: number, z: number) {
  const n = 2 ** z;
  const r = (lat * Math.PI) / 180;
  return { z, x: Math.floor(((lon + 180) / 360) * n), y: Math.floor(((1 - Math.log(Math.tan(r) + 1 / Math.cos(r)) / Math.PI) / 2) * n) };
}

async function waitFor<T>(what: string, fn: () => Promise<T | undefined>, ms = 15_000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await fn().catch(() => undefined);
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** POST an expire list to an admin listener. */
async function expire(admin: string, source: string, lines: string[]): Promise<void> {
  const res = await fetch(`${admin}/__admin/expire?source=${source}`, { method: 'POST', headers: { 'content-type': 'text/plain' }, body: `${lines.join('\n')}\n` });
  assert.equal(res.status, 200, await res.text());
}

const FERRY = tileOf(-122.3937, 37.7955, 14);
const SYDNEY = tileOf(151.2153, -33.8568, 14);
/** The hill of fixtures/dem/hill.cog.tif. */
const HILL = tileOf(10.05, 46.55, 14);

let db: PostgresCluster;
let server: TestServer;
let admin: string;
let metrics: string;
let scratch: string;

before(async () => {
  db = await startPostgres();
  // A tile function that reads the table as the query starts (STABLE: one snapshot) and answers 1.5 s later.
  await db.sql(`CREATE FUNCTION public.slow_places(z integer, x integer, y integer) RETURNS bytea LANGUAGE sql STABLE AS $$
    SELECT pg_sleep(1.5);
    SELECT ST_AsMVT(t, 'places', 4096, 'geom') FROM (
      SELECT id, name, ST_AsMVTGeom(ST_Transform(geom, 3857), ST_TileEnvelope(z, x, y), 4096, 64, true) AS geom
      FROM public.places WHERE geom && ST_Transform(ST_TileEnvelope(z, x, y), 4326)
    ) AS t WHERE geom IS NOT NULL
  $$`);
  scratch = mkdtempSync(path.join(os.tmpdir(), 'tsts-expire-caches-'));
  const adminPort = await freePort();
  const metricsPort = await freePort();
  admin = `http://127.0.0.1:${adminPort}`;
  metrics = `http://127.0.0.1:${metricsPort}/metrics`;
  server = await startServer({
    toml: `
[server]
admin_bind = "127.0.0.1:${adminPort}"
disable_render = true

[[sources]]
id = "hill"
type = "cog"
path = "${fixture('dem/hill.cog.tif')}"
dem = { encoding = "mapbox" }

[[composites]]
id = "city"
sources = ["places", "roads"]

[postgres]
connection_string = "${db.url}"
pool_size = 4

[[postgres.tables]]
id = "places"
table = "places"
id_column = "id"

[[postgres.tables]]
id = "roads"
table = "roads"

[[postgres.functions]]
id = "slow"
function = "slow_places"

[cache]
dir = "${path.join(scratch, 'cache')}"

[telemetry]
scrape_bind = "127.0.0.1:${metricsPort}"
`,
  });
});

after(async () => {
  await server?.stop();
  db?.destroy();
  rmSync(scratch, { recursive: true, force: true });
});

/** `tile_cache_hits_total` of a source, from the scrape. */
async function hits(source: string): Promise<number> {
  const text = await (await fetch(metrics)).text();
  const m = new RegExp(`^tile_cache_hits_total\\{source="${source}"\\} (\\d+)`, 'm').exec(text);
  return m ? Number(m[1]) : 0;
}

/** The names of the `places` features of a tile answer, however it is encoded. */
function names(kind: 'pbf' | 'mlt' | 'geojson', body: Uint8Array): string[] {
  if (kind === 'geojson') {
    const doc = JSON.parse(Buffer.from(body).toString('utf8')) as { features: { properties: Record<string, unknown> }[] };
    return doc.features.filter((f) => f.properties._layer === 'places').map((f) => String(f.properties.name)).sort();
  }
  const tile = kind === 'pbf' ? readMvt(body) : readMlt(body);
  return (tile.get('places')?.features ?? []).map((f) => String(f.properties.name)).sort();
}

describe('source tiles of a PostGIS table', () => {
  const at = `${FERRY.z}/${FERRY.x}/${FERRY.y}`;
  const variants: { what: string; url: string; kind: 'pbf' | 'mlt' | 'geojson'; headers?: Record<string, string> }[] = [
    { what: 'MVT', url: `/data/places/${at}.pbf`, kind: 'pbf' },
    { what: 'MVT, br', url: `/data/places/${at}.pbf`, kind: 'pbf', headers: { 'accept-encoding': 'br' } },
    { what: 'MLT (transcoded)', url: `/data/places/${at}.mlt`, kind: 'mlt' },
    { what: 'GeoJSON', url: `/data/places/${at}.geojson`, kind: 'geojson' },
    { what: 'filtered view', url: `/data/places/${at}.pbf?${new URLSearchParams({ filter: 'rank >= 1' })}`, kind: 'pbf' },
    { what: 'named composite', url: `/data/city/${at}.pbf`, kind: 'pbf' },
    { what: 'ad hoc composite', url: `/data/places+roads/${at}.pbf`, kind: 'pbf' },
  ];
  const read = async (v: (typeof variants)[number]) => {
    const res = await get(`${server.url}${v.url}`, v.headers);
    assert.equal(res.status, 200, `${v.what}: ${res.status}`);
    if (v.headers?.['accept-encoding']) assert.equal(res.headers['content-encoding'], v.headers['accept-encoding'], `${v.what}: its encoding`);
    return { names: names(v.kind, res.body), keys: String(res.headers['surrogate-key'] ?? '') };
  };

  test('every representation answers the old row until its tile is expired, then the new one; a tile elsewhere stays a hit', async () => {
    for (const v of variants) assert.ok((await read(v)).names.includes('Ferry Building'), `${v.what} before the change`);
    const sydney = `${server.url}/data/places/${SYDNEY.z}/${SYDNEY.x}/${SYDNEY.y}.pbf`;
    assert.equal((await get(sydney)).status, 200);

    await db.sql("UPDATE places SET name = 'Ferry Terminal' WHERE id = 1");
    // Cached: without an expiry the change is not seen (the caches are there, and are what the expiry must reach).
    for (const v of variants) assert.ok((await read(v)).names.includes('Ferry Building'), `${v.what} from the cache before the expiry`);

    await expire(admin, 'places', [at]);
    for (const v of variants) {
      const now = (await read(v)).names;
      assert.ok(now.includes('Ferry Terminal') && !now.includes('Ferry Building'), `${v.what} after the expiry: ${now.join(', ')}`);
    }
    const before = await hits('places');
    assert.equal((await get(sydney)).status, 200);
    assert.equal(await hits('places'), before + 1, 'the tile elsewhere is answered from the cache');
  });

  test('an expiry of a tile inside a cached tile (deeper zoom) reaches it; one of its parent does too', async () => {
    const v = variants[0];
    await db.sql("UPDATE places SET name = 'Ferry Pier' WHERE id = 1");
    assert.ok((await read(v)).names.includes('Ferry Terminal'), 'cached before the expiry');
    const deep = tileOf(-122.3937, 37.7955, 17);
    await expire(admin, 'places', [`${deep.z}/${deep.x}/${deep.y}`]);
    assert.ok((await read(v)).names.includes('Ferry Pier'), 'z17 expiry reaches the z14 tile holding it');

    await db.sql("UPDATE places SET name = 'Ferry Quay' WHERE id = 1");
    assert.ok((await read(v)).names.includes('Ferry Pier'), 'cached again');
    await expire(admin, 'places', [`10/${FERRY.x >> 4}/${FERRY.y >> 4}`]);
    assert.ok((await read(v)).names.includes('Ferry Quay'), 'z10 expiry reaches the z14 tile inside it');
  });

  test('an expiry of another source does not reach a table, and one of a member reaches the composite', async () => {
    const composite = variants.find((v) => v.what === 'named composite')!;
    // Cached as they are now (the expiries of the test before reached the composite too).
    assert.ok((await read(composite)).names.includes('Ferry Quay'));
    await db.sql("UPDATE places SET name = 'Ferry Landing' WHERE id = 1");
    await expire(admin, 'hill', [at]);
    assert.ok((await read(variants[0])).names.includes('Ferry Quay'), 'an expiry of "hill" leaves "places" cached');
    assert.ok((await read(composite)).names.includes('Ferry Quay'), 'and the composite');
    await expire(admin, 'roads', [at]);
    assert.ok((await read(composite)).names.includes('Ferry Landing'), 'an expiry of the member "roads" reaches the composite');
  });

  test('a request after an expiry does not join a production that began before it', async () => {
    const url = `${server.url}/data/slow/${at}.pbf`;
    await db.sql("UPDATE places SET name = 'Ferry One' WHERE id = 1");
    const early = get(url);
    // The first production has read the table (its query started) before the change and the expiry.
    await new Promise((r) => setTimeout(r, 500));
    await db.sql("UPDATE places SET name = 'Ferry Two' WHERE id = 1");
    await expire(admin, 'slow', [at]);
    const late = await get(url);
    assert.deepEqual(names('pbf', (await early).body), ['Coit Tower', 'Ferry One'], 'the first request gets what its production read');
    assert.deepEqual(names('pbf', late.body), ['Coit Tower', 'Ferry Two'], 'the request after the expiry reads anew');
  });

  test('Surrogate-Key names every source an answer is made from, its grid areas and its tile', async () => {
    const plain = (await read(variants[0])).keys.split(' ');
    assert.ok(plain.includes('src:places'), plain.join(' '));
    assert.ok(plain.includes(`tile:places/${at}`));
    assert.ok(plain.includes(`area:places/14/${FERRY.x}/${FERRY.y}`) && plain.includes(`area:places/2/${FERRY.x >> 12}/${FERRY.y >> 12}`));
    assert.ok(!plain.some((k) => k.startsWith('area:places/13/')), 'grid areas at even zooms only');
    const composite = (await read(variants.find((v) => v.what === 'ad hoc composite')!)).keys.split(' ');
    for (const k of ['src:places', 'src:roads', `tile:places/${at}`, `tile:roads/${at}`]) assert.ok(composite.includes(k), `${k} in ${composite.join(' ')}`);
    const empty = await get(`${server.url}/data/places/14/0/0.pbf`);
    assert.equal(empty.status, 204);
    assert.ok(String(empty.headers['surrogate-key']).split(' ').includes('tile:places/14/0/0'), 'a 204 carries its keys too');
  });
});

describe('terrain products of a DEM', () => {
  /** The disk file of a hillshade tile (one file per tile under terrain/<identity>/hillshade/z/x). */
  const diskFile = (t: { z: number; x: number; y: number }): string | undefined => {
    const root = path.join(scratch, 'cache', 'terrain');
    let ids: string[];
    try {
      ids = readdirSync(root);
    } catch {
      return undefined;
    }
    for (const id of ids) {
      const dir = path.join(root, id, 'hillshade', String(t.z), String(t.x));
      let files: string[] = [];
      try {
        files = readdirSync(dir);
      } catch {
        continue;
      }
      const f = files.find((n) => n.startsWith(`${t.y}@1.png.`) && !n.endsWith('.tmp'));
      if (f) return path.join(dir, f);
    }
    return undefined;
  };
  const mtime = (t: { z: number; x: number; y: number }) => {
    const f = diskFile(t);
    return f ? statSync(f).mtimeMs : undefined;
  };
  const shade = (t: { z: number; x: number; y: number }) => get(`${server.url}/data/hill/hillshade/${t.z}/${t.x}/${t.y}.png`);

  test("a hillshade tile is made again when its tile or a neighbour expires (every layer: memory and disk), and not otherwise", async () => {
    const far = { ...HILL, x: HILL.x - 3 };
    for (const t of [HILL, far]) assert.equal((await shade(t)).status, 200);
    const first = await waitFor('the disk file', async () => mtime(HILL));
    const farFirst = await waitFor('the far tile\'s disk file', async () => mtime(far));
    const res = await shade(HILL);
    assert.equal(mtime(HILL), first, 'a second answer without an expiry is not made again');
    const keys = String(res.headers['surrogate-key']).split(' ');
    for (const [dx, dy] of [[0, 0], [1, 0], [-1, 1]]) assert.ok(keys.includes(`tile:hill/14/${HILL.x + dx}/${HILL.y + dy}`), `neighbour ${dx},${dy} in ${keys.join(' ')}`);

    // Only the tile east of it changed: its border reads that tile's pixels.
    const sent = Date.now();
    await expire(admin, 'hill', [`14/${HILL.x + 1}/${HILL.y}`]);
    assert.equal((await shade(HILL)).status, 200);
    const again = await waitFor('the file rewritten', async () => {
      const m = mtime(HILL);
      return m !== undefined && m !== first ? m : undefined;
    });
    assert.ok(again >= sent - 1, `made after the expiry (file time ${again}, expiry sent ${sent})`);
    assert.equal((await shade(far)).status, 200);
    await new Promise((r) => setTimeout(r, 300));
    assert.equal(mtime(far), farFirst, 'a tile three columns away is not made again');
  });
});

describe('the shared (Redis) layer', () => {
  let redis: RedisServer;
  let shared: TestServer;
  let sharedAdmin: string;
  before(async () => {
    redis = await startRedis();
    const adminPort = await freePort();
    sharedAdmin = `http://127.0.0.1:${adminPort}`;
    // No memory cache: every answer after the first is looked up in Redis.
    shared = await startServer({
      toml: `[server]\nadmin_bind = "127.0.0.1:${adminPort}"\ndisable_render = true\n[[sources]]\nid = "omt"\ntype = "pmtiles"\npath = "${fixture('vector/omt-planet-z0-1.pmtiles')}"\n[cache]\nmax_size_mb = 0\nshared = "${redis.url}"\n`,
    });
  });
  after(async () => {
    await shared?.stop();
    await redis?.stop();
  });

  const fromShared = async (p: string) => (await get(`${shared.url}${p}`)).headers['server-timing'] === 'cache;desc="shared"' ? true : undefined;

  test('a transcoded tile stored before an expiry of its area is not used; one stored after it is, and other tiles stay', async () => {
    for (const p of ['/data/omt/1/0/0.mlt', '/data/omt/1/1/1.mlt']) {
      assert.equal((await get(`${shared.url}${p}`)).status, 200);
      await waitFor(`${p} in the shared cache`, () => fromShared(p));
    }
    await expire(sharedAdmin, 'omt', ['1/0/0']);
    assert.equal(await fromShared('/data/omt/1/0/0.mlt'), undefined, 'the entry made before the expiry is not answered');
    await waitFor('the entry made after the expiry', () => fromShared('/data/omt/1/0/0.mlt'));
    assert.equal(await fromShared('/data/omt/1/1/1.mlt'), true, 'a tile the expiry did not touch is still shared');
  });
});
