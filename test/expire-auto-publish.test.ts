// Expiries of tables published by `auto_publish` (src/sources/postgres/expiry-aliases.ts): their sources are
// discovered where tiles are served, so an expiry by table (`POST /__admin/expire?table=`, a NOTIFY payload) and
// the whole-database expiry after a lost NOTIFY session name the table or the database, and the discovered
// sources answer to those names. Against a real PostGIS and the server from dist, with the vector-tile cache on:
// an edit the server was not told of stays invisible (the cache answers), and shows once the expiry arrives.
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { freePort, ROOT, startServer, type TestServer } from './helpers/server.js';
import { startPostgres, type PostgresCluster } from './helpers/postgres.js';
import { parseScrape } from './helpers/prom-text.js';
import { readMvt } from './helpers/vector-tiles.js';
import { waitFor } from './helpers/foundation.js';

const CHANNEL = 'tile_expiry';
/** The z14 tile holding the Ferry Building (-122.3937, 37.7955). */
const FERRY = { z: 14, x: 2621, y: 6331 };

describe('expiries of auto-published tables', () => {
  let db: PostgresCluster;
  let server: TestServer;
  let adminUrl: string;
  let metricsUrl: string;
  const placeNames = async () => {
    const res = await fetch(`${server.url}/data/places/${FERRY.z}/${FERRY.x}/${FERRY.y}.pbf`);
    assert.equal(res.status, 200);
    return readMvt(new Uint8Array(await res.arrayBuffer())).get('places')!.features.map((f) => String(f.properties.name));
  };
  /** Renames the Ferry Building's row without a notification (the table's trigger off for the statement). */
  const renameQuietly = async (name: string) => {
    await db.sql('ALTER TABLE public.places DISABLE TRIGGER USER');
    await db.sql('UPDATE public.places SET name = $1 WHERE id = 1', [name]);
    await db.sql('ALTER TABLE public.places ENABLE TRIGGER USER');
  };
  const expired = async (source: string, input: string) => parseScrape(await (await fetch(metricsUrl)).text()).value('expire_tiles_total', { source, input }) ?? 0;

  before(async () => {
    db = await startPostgres();
    await db.sql(readFileSync(path.join(ROOT, 'sql/expire-trigger.sql'), 'utf8'));
    await db.sql(`SELECT tileserver_expire_install('public.places', '${CHANNEL}')`);
    const [adminPort, scrapePort] = [await freePort(), await freePort()];
    adminUrl = `http://127.0.0.1:${adminPort}`;
    metricsUrl = `http://127.0.0.1:${scrapePort}/metrics`;
    server = await startServer({
      toml: `
[server]
admin_bind = "127.0.0.1:${adminPort}"

[telemetry]
scrape_bind = "127.0.0.1:${scrapePort}"

[postgres]
connection_string = "${db.url}"
pool_size = 2
auto_publish = true
expire_channel = "${CHANNEL}"
`,
    });
    await waitFor('the listening session', async () => ((await db.sql("SELECT 1 FROM pg_stat_activity WHERE application_name = 'tileserver-ts expire'")).rowCount ? true : undefined));
  });

  after(async () => {
    await server?.stop();
    db?.destroy();
  });

  test("table= reaches a discovered source through the table's name", async () => {
    assert.ok((await placeNames()).includes('Ferry Building'), 'the discovered source serves the table');
    await renameQuietly('Pier One');
    assert.ok((await placeNames()).includes('Ferry Building'), 'an edit nobody was told of stays in the cache');
    const res = await fetch(`${adminUrl}/__admin/expire?table=public.places`, { method: 'POST', headers: { 'content-type': 'text/plain' }, body: `${FERRY.z}/${FERRY.x}/${FERRY.y}\n` });
    assert.equal(res.status, 200, await res.text());
    const names = await placeNames();
    assert.ok(names.includes('Pier One'), `the tile still says ${JSON.stringify(names)}`);
    // Counted under the table's name (tiles marked over the zooms served).
    assert.ok((await expired('table:public.places', 'list')) > 0);
  });

  test('a notification naming the table reaches it', async () => {
    await db.sql("UPDATE public.places SET name = 'Ferry Terminal' WHERE id = 1");
    await waitFor('the notified name', async () => ((await placeNames()).includes('Ferry Terminal') ? true : undefined));
  });

  test('a lost session expires the discovered sources with the rest of the database', async () => {
    await renameQuietly('Ferry Plaza');
    assert.ok(!(await placeNames()).includes('Ferry Plaza'), 'the edit is not seen before the session is lost');
    const killed = await db.sql("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE application_name = 'tileserver-ts expire'");
    assert.equal(killed.rowCount, 1);
    await waitFor('the whole database expired', async () => ((await expired('postgres:database', 'reconnect')) >= 1 ? true : undefined), 30_000);
    const names = await placeNames();
    assert.ok(names.includes('Ferry Plaza'), `the tile still says ${JSON.stringify(names)}`);
  });
});
