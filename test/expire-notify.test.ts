// Expiries sent by PostgreSQL itself (`[postgres] expire_channel`, src/expire/notify.ts) against a real PostGIS
// (test/helpers/postgres.ts) and the server from dist: the trigger of sql/expire-trigger.sql installed on a table,
// rows changed, and the expiry seen on /metrics and in the vector tile answered afterwards; an osm2pgsql-style
// expire table whose tile list takes several notifications; malformed payloads counted and ignored; the listening
// session killed with pg_terminate_backend and everything of the database expired once it is back.
import assert from 'node:assert/strict';
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { freePort, ROOT, startServer, type TestServer } from './helpers/server.js';
import { startPostgres, type PostgresCluster } from './helpers/postgres.js';
import { parseScrape, type Scrape } from './helpers/prom-text.js';
import { readMvt } from './helpers/vector-tiles.js';
import { waitFor } from './helpers/foundation.js';

const CHANNEL = 'tile_expiry';

/** The tile of a lon/lat at zoom z (Web Mercator). */
function tileOf(lon: number, lat: number, z: number) {
  const n = 2 ** z;
  const r = (lat * Math.PI) / 180;
  return { z, x: Math.floor(((lon + 180) / 360) * n), y: Math.floor(((1 - Math.log(Math.tan(r) + 1 / Math.cos(r)) / Math.PI) / 2) * n) };
}

describe('expiries from PostgreSQL NOTIFY', () => {
  let db: PostgresCluster;
  let server: TestServer;
  let metricsUrl: string;
  const scrape = async (): Promise<Scrape> => parseScrape(await (await fetch(metricsUrl)).text());
  const expired = async (source: string, input: string) => (await scrape()).value('expire_tiles_total', { source, input }) ?? 0;
  const rejected = async (reason: string) => (await scrape()).value('expire_notify_rejected_total', { reason }) ?? 0;
  /** The names in the places layer of the tile holding the Ferry Building at z14. */
  const ferryTile = tileOf(-122.3937, 37.7955, 14);
  const placeNames = async () => {
    const res = await fetch(`${server.url}/data/places/${ferryTile.z}/${ferryTile.x}/${ferryTile.y}.pbf`);
    assert.equal(res.status, 200);
    return readMvt(new Uint8Array(await res.arrayBuffer())).get('places')!.features.map((f) => f.properties.name);
  };

  before(async () => {
    db = await startPostgres();
    await db.sql(readFileSync(path.join(ROOT, 'sql/expire-trigger.sql'), 'utf8'));
    await db.sql(`SELECT tileserver_expire_install('public.places', '${CHANNEL}')`);
    // The roads are stored in EPSG:3857: the trigger's box is transformed to 4326.
    await db.sql(`SELECT tileserver_expire_install('public.roads', '${CHANNEL}')`);
    // Another geometry column name; TRUNCATE is tried on it.
    await db.sql(`SELECT tileserver_expire_install('parks.areas', '${CHANNEL}', 'outline')`);
    // An osm2pgsql flex expire table (define_expire_output{table = ...}) for the places source.
    await db.sql('CREATE TABLE public.places_tiles (zoom int4 NOT NULL, x int4 NOT NULL, y int4 NOT NULL, PRIMARY KEY (zoom, x, y))');
    await db.sql(`SELECT tileserver_expire_tiles_install('public.places_tiles', '${CHANNEL}', 'places')`);
    const scrapePort = await freePort();
    metricsUrl = `http://127.0.0.1:${scrapePort}/metrics`;
    server = await startServer({
      toml: `
[telemetry]
scrape_bind = "127.0.0.1:${scrapePort}"

[postgres]
connection_string = "${db.url}"
pool_size = 2
expire_channel = "${CHANNEL}"

[[postgres.tables]]
id = "places"
table = "places"
id_column = "id"

[[postgres.tables]]
id = "roads"
table = "roads"
maxzoom = 16

[[postgres.tables]]
id = "parks"
schema = "parks"
table = "areas"
`,
    });
    // The session is up once the database lists it.
    await waitFor('the listening session', async () => ((await db.sql("SELECT 1 FROM pg_stat_activity WHERE application_name = 'tileserver-ts expire'")).rowCount ? true : undefined));
  });

  after(async () => {
    await server?.stop();
    db?.destroy();
  });

  test('an UPDATE through the trigger expires its area, and the cached vector tile is answered fresh', async () => {
    // Asked twice: cached now, with the old name.
    assert.ok((await placeNames()).includes('Ferry Building'));
    assert.ok((await placeNames()).includes('Ferry Building'));
    const before = await expired('places', 'notify');
    const roadsBefore = await expired('roads', 'notify');
    await db.sql("UPDATE public.places SET name = 'Ferry Terminal' WHERE id = 1");
    await waitFor('the notify expiry of places', async () => ((await expired('places', 'notify')) > before ? true : undefined));
    // Another table's sources are not reached by it.
    assert.equal(await expired('roads', 'notify'), roadsBefore);
    // Needs the vector-tile cache to honour expiries (issue 47's caches part).
    const names = await placeNames();
    assert.ok(names.includes('Ferry Terminal'), `the tile still says ${JSON.stringify(names)}`);
    assert.ok(!names.includes('Ferry Building'));
  });

  test('a table in EPSG:3857 notifies too; a statement touching no row sends nothing', async () => {
    const before = await expired('roads', 'notify');
    await db.sql("UPDATE public.roads SET lanes = 5 WHERE road_name = 'Market Street'");
    await waitFor('the notify expiry of roads', async () => ((await expired('roads', 'notify')) > before ? true : undefined));
    const now = await expired('roads', 'notify');
    const placesNow = await expired('places', 'notify');
    await db.sql("UPDATE public.places SET rank = 9 WHERE name = 'nowhere at all'");
    // A later notification proves the empty one would have arrived by then.
    await db.sql("UPDATE public.roads SET lanes = 4 WHERE road_name = 'Market Street'");
    await waitFor('the second roads expiry', async () => ((await expired('roads', 'notify')) > now ? true : undefined));
    assert.equal(await expired('places', 'notify'), placesNow);
  });

  test('an osm2pgsql expire table: thousands of tiles in one statement arrive in several notifications, every tile counted', async () => {
    const before = await expired('places', 'notify');
    // 3000 distinct z14 tiles: about 13 bytes each, over 8000 bytes together.
    const result = await db.sql('INSERT INTO public.places_tiles SELECT 14, 2600 + i % 60, 6300 + i / 60 FROM generate_series(0, 2999) AS i');
    assert.equal(result.rowCount, 3000);
    await waitFor('3000 tiles expired', async () => ((await expired('places', 'notify')) - before >= 3000 ? true : undefined));
    assert.equal((await expired('places', 'notify')) - before, 3000);
    for (const reason of ['not_json', 'shape', 'tile', 'unknown_source']) assert.equal(await rejected(reason), 0, reason);
  });

  test('malformed payloads are logged, counted by reason and ignored; the server stays up and keeps listening', async () => {
    const payloads: [string, string][] = [
      ['not json', 'not_json'],
      ['[1, 2]', 'shape'],
      ['{"table": "public.places", "bbox": [0, 0, 200, 1]}', 'bbox'],
      ['{"table": "public.nope", "bbox": [0, 0, 1, 1]}', 'unknown_table'],
      ['{"source": "nope", "tiles": ["1/0/0"]}', 'unknown_source'],
      ['{"source": "places", "tiles": ["1/2/0"]}', 'tile'],
    ];
    const before = new Map<string, number>();
    for (const [, reason] of payloads) before.set(reason, await rejected(reason));
    for (const [payload] of payloads) await db.sql('SELECT pg_notify($1, $2)', [CHANNEL, payload]);
    for (const [, reason] of payloads) await waitFor(`a ${reason} rejection`, async () => ((await rejected(reason)) === before.get(reason)! + 1 ? true : undefined));
    // One line each, naming what was wrong (the log is JSON: the quotes inside the message are escaped).
    assert.match(server.output(), /"reason":"unknown_table".*notification ignored: no \[\[postgres.tables\]\] source reads the table \\"public.nope\\"/);
    assert.equal((await fetch(`${server.url}/health`)).status, 200);
    // Still listening: a good payload after the bad ones is applied.
    const expiredBefore = await expired('places', 'notify');
    await db.sql('SELECT pg_notify($1, $2)', [CHANNEL, '{"source": "places", "tiles": ["14/2620/6331"]}']);
    await waitFor('the good payload', async () => ((await expired('places', 'notify')) === expiredBefore + 1 ? true : undefined));
  });

  test('a killed session comes back and expires every source of the database, covering changes made meanwhile', async () => {
    const lost = (await scrape()).value('expire_notify_sessions_total', { event: 'lost' }) ?? 0;
    const back = (await scrape()).value('expire_notify_sessions_total', { event: 'back' }) ?? 0;
    const reconnects = await expired('places', 'reconnect');
    const roadsReconnects = await expired('roads', 'reconnect');
    // Cached with the current name, then the session is killed and the row changed while nobody listens.
    await placeNames();
    const killed = await db.sql("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'tileserver-ts expire'");
    assert.equal(killed.rowCount, 1);
    await db.sql("UPDATE public.places SET name = 'Ferry Plaza' WHERE id = 1");
    await waitFor('the session back', async () => (((await scrape()).value('expire_notify_sessions_total', { event: 'back' }) ?? 0) > back ? true : undefined));
    const s = await scrape();
    assert.equal(s.value('expire_notify_sessions_total', { event: 'lost' }), lost + 1);
    // Every source of the database, whole (one key: 0/0/0).
    assert.equal(await expired('places', 'reconnect'), reconnects + 1);
    assert.equal(await expired('roads', 'reconnect'), roadsReconnects + 1);
    assert.match(server.output(), /lost the database session listening for notifications/);
    // And it listens again.
    const before = await expired('places', 'notify');
    await db.sql('UPDATE public.places SET rank = 4 WHERE id = 1');
    await waitFor('a notify expiry after the reconnection', async () => ((await expired('places', 'notify')) > before ? true : undefined));
    // Needs the vector-tile cache to honour expiries (issue 47's caches part).
    const names = await placeNames();
    assert.ok(names.includes('Ferry Plaza'), `the tile still says ${JSON.stringify(names)}`);
  });

  test('INSERT and DELETE send their rows\' box; TRUNCATE expires the whole table at once', async () => {
    let before = await expired('roads', 'notify');
    await db.sql("INSERT INTO public.roads VALUES (12, 'George Street', 2, ST_Transform(ST_SetSRID(ST_MakeLine(ST_MakePoint(151.2070, -33.8700), ST_MakePoint(151.2075, -33.8600)), 4326), 3857))");
    await waitFor('the INSERT', async () => ((await expired('roads', 'notify')) > before ? true : undefined));
    before = await expired('roads', 'notify');
    await db.sql('DELETE FROM public.roads WHERE gid = 12');
    await waitFor('the DELETE', async () => ((await expired('roads', 'notify')) > before ? true : undefined));
    before = await expired('parks', 'notify');
    await db.sql('TRUNCATE parks.areas');
    // The world's box is marked at zoom 0: one tile, 0/0/0, everything of the source.
    await waitFor('the TRUNCATE', async () => ((await expired('parks', 'notify')) > before ? true : undefined));
    assert.equal(await expired('parks', 'notify'), before + 1);
  });

  test('a reload that changes the channel listens on the new one and no longer on the old one', async () => {
    const file = server.configFile!;
    writeFileSync(file, readFileSync(file, 'utf8').replace(`expire_channel = "${CHANNEL}"`, 'expire_channel = "tile_expiry_next"'));
    server.proc.kill('SIGHUP');
    const one = (tile: string) => JSON.stringify({ source: 'places', tiles: [tile] });
    let before = await expired('places', 'notify');
    // Sent again until the new session hears it (the reload runs in the background).
    await waitFor('the new channel', async () => {
      await db.sql('SELECT pg_notify($1, $2)', ['tile_expiry_next', one('14/2620/6332')]);
      await new Promise((r) => setTimeout(r, 100));
      return (await expired('places', 'notify')) > before ? true : undefined;
    });
    before = await expired('places', 'notify');
    // The old channel first, then the new one: once the second is counted, the first would have been too.
    await db.sql('SELECT pg_notify($1, $2)', [CHANNEL, one('14/2620/6333')]);
    await db.sql('SELECT pg_notify($1, $2)', ['tile_expiry_next', one('14/2620/6334')]);
    await waitFor('the second notification', async () => ((await expired('places', 'notify')) > before ? true : undefined));
    await new Promise((r) => setTimeout(r, 200));
    assert.equal(await expired('places', 'notify'), before + 1);
    const sessions = await db.sql("SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = 'tileserver-ts expire'");
    assert.equal(sessions.rows[0].n, 1, 'the old session is closed');
  });

  test('with several worker processes one session listens for the machine, and its counters are in the cluster scrape', async () => {
    const scrapePort = await freePort();
    const cluster = await startServer({
      workers: 2,
      toml: `[telemetry]\nscrape_bind = "127.0.0.1:${scrapePort}"\n[postgres]\nconnection_string = "${db.url}"\npool_size = 2\nexpire_channel = "tile_expiry_cluster"\n[[postgres.tables]]\nid = "places"\ntable = "places"\n`,
    });
    try {
      const listening = async () => (await db.sql(`SELECT count(*)::int AS n FROM pg_stat_activity WHERE query = 'LISTEN "tile_expiry_cluster"'`)).rows[0].n as number;
      await waitFor('the cluster listening', async () => ((await listening()) > 0 ? true : undefined));
      await db.sql('SELECT pg_notify($1, $2)', ['tile_expiry_cluster', 'not json']);
      const clusterRejected = async () => {
        const res = await fetch(`http://127.0.0.1:${scrapePort}/metrics`);
        // A scrape while a worker is too busy to report answers 503: asked again.
        return res.ok ? parseScrape(await res.text()).value('expire_notify_rejected_total', { reason: 'not_json' }) : undefined;
      };
      await waitFor('the rejection in the cluster scrape', async () => ((await clusterRejected()) === 1 ? true : undefined), 30_000);
      // One session for the machine, not one per worker.
      assert.equal(await listening(), 1);
    } finally {
      await cluster.stop();
    }
  });
});
