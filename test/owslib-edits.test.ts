// OWSLib, a real OGC API - Features client, editing a writable PostGIS table through the real server (issue 48).
// OWSLib writes items from 0.28; Debian 12's python3-owslib is 0.27, so the client runs in a Debian 13 (trixie)
// minbase image holding python3-owslib 0.33 and no recommends, built once by scripts/image-base.sh (mmdebstrap) and
// kept under its tag like the image tests' base. The script test/clients/owslib_edits.py lists the collection,
// creates two features, replaces one (refused without If-Match and with a stale one, then with the right ETag),
// reads it back and deletes the other, all through OWSLib's calls, from a container on the host's network, and
// prints what OWSLib answered as JSON. The checks here compare that with the database rows and the served items.
// Podman and mmdebstrap missing is a failure, not a skip: `make system-deps` installs them.
import assert from 'node:assert/strict';
import { rmSync } from 'node:fs';
import path from 'node:path';
import { after, before, describe, test } from 'node:test';
import { hashKey } from '../src/auth/keys.js';
import { tempDir } from './helpers/foundation.js';
import { has, podman, podmanEnv, run } from './helpers/podman.js';
import { startPostgres, type PostgresCluster } from './helpers/postgres.js';
import { jsonLogLines, ROOT, startServer, type TestServer } from './helpers/server.js';

/** The Debian 13 client image: trixie minbase with python3-owslib and its dependencies only (no Node: NODE=no). */
const TAG = 'localhost/tsts-owslib:trixie';
const KEY = 'tsk_owslib-editor-key-000000000000000000000000';
const COLLECTION = 'sites';

let db: PostgresCluster;
let server: TestServer;
let scratch: string;
/** What the OWSLib script printed. */
let printed: any;

const log = (line: string) => process.stderr.write(`# owslib: ${line}\n`);

before(async () => {
  for (const tool of ['podman', 'mmdebstrap']) assert.ok(await has(tool), `${tool} is missing: \`make system-deps\` installs it (Debian package ${tool})`);
  const start = Date.now();
  const base = await run(path.join(ROOT, 'scripts/image-base.sh'), [TAG], 900_000, { ...podmanEnv(), RELEASE: 'trixie', INCLUDE: 'python3-owslib', NODE: 'no' });
  assert.equal(base.code, 0, `scripts/image-base.sh failed:\n${base.stderr}\n${base.stdout}`);
  log(`${base.stdout.trim()} (${((Date.now() - start) / 1000).toFixed(1)} s)`);

  db = await startPostgres([]);
  await db.sql(`
    CREATE TABLE public.sites (id serial PRIMARY KEY, name text UNIQUE, rank integer, geom geometry(Point, 4326));
    INSERT INTO public.sites (name, rank, geom) VALUES ('existing', 0, ST_SetSRID(ST_MakePoint(7, 51), 4326));`);
  scratch = tempDir('tsts-owslib-');
  server = await startServer({
    env: { LOG_LEVEL: 'info' },
    toml: `
[server]
disable_render = true

[auth]
[[auth.keys]]
name = "owslib"
hash = "${hashKey(KEY)}"
write = ["${COLLECTION}"]

[postgres]
connection_string = "${db.url}"

[[postgres.tables]]
id = "${COLLECTION}"
table = "sites"
writable = true
require_if_match = true

[cache]
dir = "${path.join(scratch, 'cache')}"
`,
  });
  const clientStart = Date.now();
  const out = await podman(
    ['run', '--rm', '--network', 'host', '-v', `${path.join(ROOT, 'test/clients')}:/clients:ro`, '-e', `OGC_URL=${server.url}/ogc`, '-e', `OGC_KEY=${KEY}`, '-e', `OGC_COLLECTION=${COLLECTION}`, TAG, 'python3', '/clients/owslib_edits.py'],
    120_000,
  );
  log(`the OWSLib script ran in ${((Date.now() - clientStart) / 1000).toFixed(1)} s`);
  printed = JSON.parse(out.trim().split('\n').pop()!);
});

after(async () => {
  await server?.stop();
  db?.destroy();
  if (scratch) rmSync(scratch, { recursive: true, force: true });
});

const row = async (id: string) => (await db.sql('SELECT name, rank, ST_X(geom) AS lon, ST_Y(geom) AS lat FROM sites WHERE id = $1', [Number(id)])).rows[0];
const served = async (id: string) => {
  const r = await fetch(`${server.url}/ogc/collections/${COLLECTION}/items/${id}`, { headers: { accept: 'application/geo+json' } });
  return { status: r.status, etag: r.headers.get('etag'), body: r.status === 200 ? ((await r.json()) as any) : undefined };
};

describe('OWSLib (Debian 13, python3-owslib) edits features', () => {
  test('it is a version that writes (0.28 or later), and it lists the collection with what was there', () => {
    const [major, minor] = String(printed.version).split('.').map(Number);
    assert.ok(major > 0 || minor >= 28, `OWSLib ${printed.version}`);
    assert.ok(printed.collections.includes(COLLECTION), JSON.stringify(printed.collections));
    assert.deepEqual(printed.names_before, ['existing']);
  });

  test('without credentials its create is refused (401) and nothing is written', async () => {
    assert.deepEqual(printed.anonymous_create, { raised: true, status: 401, member: null });
    assert.equal(Number((await db.sql(`SELECT count(*) AS n FROM sites WHERE name = 'nobody'`)).rows[0].n), 0);
  });

  test('its creates land as rows, at the URL the Location it read names', async () => {
    const [kept, gone] = printed.created as string[];
    assert.match(kept, /^\d+$/);
    assert.match(gone, /^\d+$/);
    assert.equal(printed.kept_location, `${server.url}/ogc/collections/${COLLECTION}/items/${kept}`);
    assert.deepEqual(printed.kept_first.properties, { id: Number(kept), name: 'owslib-kept', rank: 1 });
    assert.deepEqual(printed.kept_first.geometry, { type: 'Point', coordinates: [7.4653, 51.5136] });
    assert.match(printed.kept_first.etag, /^"[0-9a-f]{32}"$/);
  });

  test('its replace is 428 without If-Match and 412 with a stale ETag, then lands with the ETag it read', async () => {
    assert.deepEqual(printed.update_without_if_match, { raised: true, status: 428, member: 'If-Match' });
    assert.deepEqual(printed.update_stale, { raised: true, status: 412, member: 'If-Match' });
    assert.equal(printed.update, true);
    assert.notEqual(printed.update_etag, printed.kept_first.etag);
  });

  test('what it read back is the database row and the item the server serves', async () => {
    const kept = printed.created[0];
    assert.deepEqual(printed.kept_after.properties, { id: Number(kept), name: 'owslib-updated', rank: 5 });
    assert.deepEqual(printed.kept_after.geometry, { type: 'Point', coordinates: [7.5, 51.55] });
    assert.deepEqual(await row(kept), { name: 'owslib-updated', rank: 5, lon: 7.5, lat: 51.55 });
    const s = await served(kept);
    assert.equal(s.status, 200);
    assert.equal(s.etag, printed.kept_after.etag);
    assert.equal(s.etag, printed.update_etag);
    assert.deepEqual(s.body.properties, printed.kept_after.properties);
    assert.deepEqual(s.body.geometry, printed.kept_after.geometry);
  });

  test('its delete (If-Match through its auth delegate) removes the row; reading it again is 404', async () => {
    const gone = printed.created[1];
    assert.equal(printed.delete, true);
    assert.equal(await row(gone), undefined);
    assert.equal((await served(gone)).status, 404);
    assert.deepEqual(printed.read_deleted, { raised: true, status: 404, member: null });
  });

  test('credentials given as `headers=` do not reach its DELETE (OWSLib 0.33 sends only `auth` there): 401, the row stays', async () => {
    assert.deepEqual(printed.headers_delete, { raised: true, status: 401, member: null });
    assert.equal((await row(printed.created[0]))?.name, 'owslib-updated');
  });

  test('every write is logged with the key`s name', () => {
    const writes = jsonLogLines<{ principal?: string; collection?: string; feature?: string; action?: string }>(server).filter((l) => l.collection === COLLECTION && l.action);
    assert.deepEqual(
      writes.map((l) => [l.principal, l.action, l.feature]),
      [
        ['owslib', 'created', printed.created[0]],
        ['owslib', 'created', printed.created[1]],
        ['owslib', 'replaced', printed.created[0]],
        ['owslib', 'deleted', printed.created[1]],
      ],
    );
  });
});
