// Uploads against the real server (one process): a valid MBTiles served at once everywhere a source is (TileJSON,
// tiles decoded, /data.json, ad-hoc composites, the spatial API), a GeoTIFF served as raster tiles, every way an
// upload is refused (type, non-SQLite, cut-off SQLite, SQLite without the MBTiles tables, too large while it is
// still being sent), deletion by both id forms, the list, hostile file names, a client hanging up, leftovers of
// an earlier run, an upload surviving a SIGHUP reload, and the routes without server.upload_dir.
import { after, before, describe, test } from 'node:test';
import assert from 'node:assert/strict';
import Database from 'better-sqlite3';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import sharp from 'sharp';
import { fixture, runCli, startServer, writeTempConfig, type TestServer } from './helpers/server.js';
import { getJson, request, storedMbtilesTile, tempDir, ungzipIfNeeded, waitFor } from './helpers/foundation.js';
import { readMvt } from './helpers/vector-tiles.js';
import { BOUNDARY, memoryOf, multipartBody, partHead, postMultipart, streamUpload, uploadFile } from './helpers/upload.js';

const OMT_PMTILES = fixture('vector/omt-planet-z0-1.pmtiles');
const OMT_MBTILES = fixture('vector/omt-z0-1.mbtiles');
const COG = fixture('cog/test-rgb.cog.tif');
const LIMIT_MB = 5;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

function configText(uploadDir: string, extra = ''): string {
  return `
[server]
disable_render = true
upload_dir = "${uploadDir}"
upload_max_size_mb = ${LIMIT_MB}
[[sources]]
id = "omt"
type = "pmtiles"
path = "${OMT_PMTILES}"
[[sources]]
id = "cogref"
type = "cog"
path = "${COG}"
${extra}`;
}

/** The XYZ tile holding (lon, lat) at zoom z. */
function tileAt(lon: number, lat: number, z: number): { x: number; y: number } {
  const n = 2 ** z;
  const rad = (lat * Math.PI) / 180;
  return { x: Math.floor(((lon + 180) / 360) * n), y: Math.floor(((1 - Math.log(Math.tan(rad) + 1 / Math.cos(rad)) / Math.PI) / 2) * n) };
}

/** The files in `dir` named the way the server names uploads (stored or partial). */
const ownFiles = (dir: string) => readdirSync(dir).filter((n) => /^\.?upload-/.test(n));

const problemOf = (a: { status: number; headers: Record<string, unknown>; json: Record<string, unknown> }, status: number) => {
  assert.equal(a.status, status);
  assert.match(String(a.headers['content-type']), /^application\/problem\+json/);
  assert.equal(a.json.status, status);
  assert.equal(typeof a.json.title, 'string');
  return String(a.json.detail);
};

describe('uploads (one process)', () => {
  let server: TestServer;
  let dir: string;
  const leftoverStored = 'upload-0b7c2a8e-1111-4222-8333-944445555666.mbtiles';
  const leftoverPart = '.upload-0b7c2a8e-1111-4222-8333-944445555667.part';
  const leftoverWal = '.upload-0b7c2a8e-1111-4222-8333-944445555667.part-wal';
  const notOurs = ['keep.mbtiles', 'upload-notauuid.mbtiles', 'notes.txt'];

  before(async () => {
    dir = path.join(tempDir('tsts-uploads-'), 'uploads');
    mkdirSync(dir);
    for (const name of [leftoverStored, leftoverPart, leftoverWal, ...notOurs]) writeFileSync(path.join(dir, name), 'left by an earlier run');
    server = await startServer({ toml: configText(dir) });
  });
  after(async () => {
    await server?.stop();
  });

  test('start-up removes leftovers under the upload names only', () => {
    assert.ok(!existsSync(path.join(dir, leftoverStored)), 'stored upload of an earlier run removed');
    assert.ok(!existsSync(path.join(dir, leftoverPart)), 'partial upload of an earlier run removed');
    assert.ok(!existsSync(path.join(dir, leftoverWal)), 'SQLite side file of an earlier run removed');
    for (const name of notOurs) assert.ok(existsSync(path.join(dir, name)), `${name} kept`);
  });

  test('a valid MBTiles is served at once: TileJSON, decoded tile, /data.json, composite, spatial API', async () => {
    const up = await uploadFile(server.url, 'omt-z0-1.mbtiles', OMT_MBTILES);
    assert.equal(up.status, 200, up.text);
    const id = String(up.json.id);
    assert.match(id, UUID);
    assert.equal(up.json.source_id, `upload-${id}`);
    assert.equal(up.json.file_name, 'omt-z0-1.mbtiles');
    assert.equal(up.json.format, 'mbtiles');
    assert.equal(up.json.tilejson_url, `${server.url}/data/upload-${id}.json`);

    const tj = await getJson<{ tiles: string[]; format: string; vector_layers: unknown[] }>(server.url, `/data/upload-${id}.json`);
    assert.equal(tj.status, 200);
    assert.equal(tj.json.format, 'pbf');
    assert.equal(tj.json.tiles[0], `${server.url}/data/upload-${id}/{z}/{x}/{y}.pbf`);

    const tile = await request(server.url, `/data/upload-${id}/0/0/0.pbf`);
    assert.equal(tile.status, 200);
    const got = readMvt(ungzipIfNeeded(tile.body));
    const stored = readMvt(ungzipIfNeeded(storedMbtilesTile(OMT_MBTILES, 0, 0, 0)!));
    assert.ok(stored.size > 0);
    assert.deepEqual([...got.keys()].sort(), [...stored.keys()].sort());
    for (const [name, layer] of stored) assert.equal(got.get(name)!.features.length, layer.features.length, `features of ${name}`);

    const all = await getJson<{ id: string }[]>(server.url, '/data.json');
    assert.ok(all.json.some((s) => s.id === `upload-${id}`), '/data.json lists the upload');

    const composite = await request(server.url, `/data/omt+upload-${id}/0/0/0.pbf`);
    assert.equal(composite.status, 200);
    assert.ok(readMvt(ungzipIfNeeded(composite.body)).size >= stored.size);

    const schema = await getJson<{ source: string; layers: unknown[] }>(server.url, `/api/spatial/schema/upload-${id}`);
    assert.equal(schema.status, 200);
    assert.equal(schema.json.layers.length, tj.json.vector_layers.length);
  });

  test('an MBTiles in WAL mode is served without side files beside it', async () => {
    const wal = path.join(tempDir('tsts-uploads-wal-'), 'wal.mbtiles');
    writeFileSync(wal, readFileSync(OMT_MBTILES));
    const db = new Database(wal);
    assert.equal(db.pragma('journal_mode = WAL', { simple: true }), 'wal');
    db.close();
    const up = await uploadFile(server.url, 'wal.mbtiles', wal);
    assert.equal(up.status, 200, up.text);
    const id = String(up.json.id);
    assert.equal((await request(server.url, `/data/upload-${id}/0/0/0.pbf`)).status, 200);
    assert.deepEqual(readdirSync(dir).filter((n) => n.includes(id)), [`upload-${id}.mbtiles`]);
  });

  test('a GeoTIFF is served as raster tiles, the same pixels as the file configured as a COG', async () => {
    const up = await uploadFile(server.url, 'scene.TIFF', COG);
    assert.equal(up.status, 200, up.text);
    assert.equal(up.json.format, 'cog');
    const id = String(up.json.id);
    const tj = await getJson<{ bounds: number[]; maxzoom: number }>(server.url, `/data/upload-${id}.json`);
    assert.equal(tj.status, 200);
    const [w, s, e, n] = tj.json.bounds;
    const z = Math.min(tj.json.maxzoom, 12);
    const { x, y } = tileAt((w + e) / 2, (s + n) / 2, z);
    const mine = await request(server.url, `/data/upload-${id}/${z}/${x}/${y}.png`);
    const ref = await request(server.url, `/data/cogref/${z}/${x}/${y}.png`);
    assert.equal(mine.status, 200);
    assert.equal(ref.status, 200);
    const a = await sharp(mine.body).ensureAlpha().raw().toBuffer({ resolveWithObject: true });
    const b = await sharp(ref.body).ensureAlpha().raw().toBuffer({ resolveWithObject: true });
    assert.equal(a.info.width, 256);
    assert.ok(a.data.equals(b.data), 'same pixels as the configured COG');
    let opaque = 0;
    for (let i = 3; i < a.data.length; i += 4) if (a.data[i] > 0) opaque++;
    assert.ok(opaque > 256 * 256 * 0.5, `the tile at the centre has data (${opaque} opaque pixels)`);
  });

  test('refused uploads: 400 naming what is wrong, and no file left', async () => {
    const before = ownFiles(dir).sort();
    const wrongType = await uploadFile(server.url, 'notes.txt', Buffer.from('hello'));
    assert.match(problemOf(wrongType, 400), /unsupported file type "notes\.txt".*\.mbtiles, \.sqlite, \.db, \.tif, \.tiff/);

    const notSqlite = await uploadFile(server.url, 'random.mbtiles', Buffer.alloc(4096, 7));
    assert.match(problemOf(notSqlite, 400), /not a SQLite database/);

    const whole = readFileSync(OMT_MBTILES);
    const cut = await uploadFile(server.url, 'cut.mbtiles', whole.subarray(0, Math.floor(whole.length / 2)));
    assert.match(problemOf(cut, 400), /truncated/);

    const plainDb = path.join(tempDir('tsts-uploads-db-'), 'plain.db');
    const db = new Database(plainDb);
    db.exec('CREATE TABLE things (a INTEGER); INSERT INTO things VALUES (1);');
    db.close();
    const noTables = await uploadFile(server.url, 'plain.db', plainDb);
    assert.match(problemOf(noTables, 400), /not an MBTiles archive: no tiles and no metadata table/);

    const tiffLike = await uploadFile(server.url, 'fake.tif', OMT_MBTILES);
    assert.match(problemOf(tiffLike, 400), /not a TIFF/);

    const jsonFormat = await uploadFile(server.url, 'json.mbtiles', fixture('broken/json-format.mbtiles'));
    assert.match(problemOf(jsonFormat, 400), /format "json" is not a tile format/);

    const wrongField = await postMultipart(server.url, multipartBody([{ field: 'upload', fileName: 'a.mbtiles', data: readFileSync(OMT_MBTILES) }]));
    assert.match(problemOf(wrongField, 400), /field "file"/);
    const noFile = await postMultipart(server.url, multipartBody([{ field: 'file', data: 'not a file' }]));
    assert.match(problemOf(noFile, 400), /missing the field "file"/);
    const two = await postMultipart(
      server.url,
      multipartBody([
        { field: 'file', fileName: 'a.mbtiles', data: readFileSync(OMT_MBTILES) },
        { field: 'file', fileName: 'b.mbtiles', data: readFileSync(OMT_MBTILES) },
      ]),
    );
    assert.match(problemOf(two, 400), /more than one file/);
    const notMultipart = await postMultipart(server.url, Buffer.from('file=x'), '/api/upload', 'application/x-www-form-urlencoded');
    assert.match(problemOf(notMultipart, 400), /multipart\/form-data/);

    for (const a of [wrongType, notSqlite, cut, noTables, tiffLike, jsonFormat, two]) assert.doesNotMatch(a.text, new RegExp(dir.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')), 'no server path in answers');
    assert.deepEqual(ownFiles(dir).sort(), before, 'no file left by a refused upload');
  });

  test('too large: 413 while the client is still sending, the connection closed, the partial file gone, memory bounded', async () => {
    const pid = server.proc.pid!;
    const rssBefore = memoryOf(pid).rssKb;
    let peak = rssBefore;
    const sampler = setInterval(() => (peak = Math.max(peak, memoryOf(pid).rssKb)), 20);
    const total = 60 * 1024 * 1024;
    const answer = await streamUpload(server.url, 'big.mbtiles', total).finally(() => clearInterval(sampler));
    assert.equal(answer.status, 413, answer.body);
    const detail = String((JSON.parse(answer.body) as { detail: string }).detail);
    assert.match(detail, new RegExp(`${LIMIT_MB} MB`));
    assert.equal(answer.headers.connection, 'close');
    assert.equal(answer.finishedSending, false, 'answered before the client sent everything');
    assert.ok(answer.sentWhenAnswered < total, `answered after ${answer.sentWhenAnswered} of ${total} bytes`);
    assert.ok(answer.sentWhenAnswered > LIMIT_MB * 1024 * 1024, 'not before the limit was passed');
    assert.deepEqual(ownFiles(dir).filter((n) => n.endsWith('.part')), [], 'partial file removed');
    const list = await getJson<{ file_name: string }[]>(server.url, '/api/upload');
    assert.ok(!list.json.some((u) => u.file_name === 'big.mbtiles'));
    const growthMb = (peak - rssBefore) / 1024;
    assert.ok(growthMb < 40, `server RSS grew by ${growthMb.toFixed(1)} MB while 60 MB were sent`);
  });

  test('a file of exactly the limit is accepted as far as the size goes (400 for its content, not 413)', async () => {
    const exact = await uploadFile(server.url, 'exact.mbtiles', Buffer.alloc(LIMIT_MB * 1024 * 1024, 1));
    assert.match(problemOf(exact, 400), /not a SQLite database/);
  });

  test('a client hanging up mid-upload leaves no file', async () => {
    const head = partHead({ field: 'file', fileName: 'gone.mbtiles' });
    const declared = head.length + 4 * 1024 * 1024;
    const socket = net.connect(server.port, '127.0.0.1');
    socket.on('error', () => {});
    await new Promise<void>((r) => socket.once('connect', () => r()));
    socket.write(`POST /api/upload HTTP/1.1\r\nHost: test\r\nContent-Type: multipart/form-data; boundary=${BOUNDARY}\r\nContent-Length: ${declared}\r\n\r\n`);
    socket.write(head);
    socket.write(Buffer.alloc(1024 * 1024, 3));
    await waitFor('the partial file to appear', () => (ownFiles(dir).some((n) => n.endsWith('.part')) ? true : undefined));
    socket.destroy();
    await waitFor('the partial file to be removed', () => (ownFiles(dir).some((n) => n.endsWith('.part')) ? undefined : true));
    const list = await getJson<{ file_name: string }[]>(server.url, '/api/upload');
    assert.ok(!list.json.some((u) => u.file_name === 'gone.mbtiles'));
    assert.equal((await request(server.url, '/health')).status, 200);
  });

  test('hostile file names never become paths', async () => {
    const bytes = readFileSync(OMT_MBTILES);
    const outside = path.resolve(dir, '../../x.mbtiles');
    const cases = [
      { name: '../../x.mbtiles', encoded: false },
      { name: '../../x.mbtiles', encoded: true },
      { name: '..\\..\\y.mbtiles', encoded: false },
      { name: 'a\u0000b.mbtiles', encoded: true },
      { name: `${'n'.repeat(5000)}.mbtiles`, encoded: false },
    ];
    for (const { name, encoded } of cases) {
      const up = await postMultipart(server.url, multipartBody([{ field: 'file', fileName: name, encoded, data: bytes }]));
      assert.equal(up.status, 200, `${JSON.stringify(name.slice(0, 40))}: ${up.text}`);
      const id = String(up.json.id);
      const fileName = String(up.json.file_name);
      assert.ok(!fileName.includes('\u0000') && fileName.length <= 255, `file_name cleaned: ${JSON.stringify(fileName.slice(0, 40))}`);
      if (name.includes('\u0000')) assert.equal(fileName, 'ab.mbtiles');
      const list = await getJson<{ id: string; file_path: string }[]>(server.url, '/api/upload');
      const entry = list.json.find((u) => u.id === id)!;
      assert.equal(entry.file_path, path.join(dir, `upload-${id}.mbtiles`));
      assert.ok(existsSync(entry.file_path));
    }
    // A raw NUL inside a part header is not a valid header at all.
    const rawNul = await postMultipart(server.url, multipartBody([{ field: 'file', fileName: 'a\u0000b.mbtiles', data: bytes }]));
    assert.match(problemOf(rawNul, 400), /malformed/);
    assert.deepEqual(ownFiles(dir).filter((n) => n.endsWith('.part')), []);
    assert.ok(!existsSync(outside), 'nothing written outside the upload directory');
    assert.ok(!readdirSync(path.dirname(dir)).some((n) => n.endsWith('.mbtiles')), 'nothing beside the upload directory');
  });

  test('list and delete by both id forms; unknown ids 404', async () => {
    const a = await uploadFile(server.url, 'a.mbtiles', OMT_MBTILES);
    const b = await uploadFile(server.url, 'b.sqlite', OMT_MBTILES);
    assert.equal(a.status, 200);
    assert.equal(b.status, 200);
    const ids = [String(a.json.id), String(b.json.id)];
    const list = await getJson<{ id: string; file_name: string; format: string; file_path: string }[]>(server.url, '/api/upload');
    assert.equal(list.status, 200);
    const listed = ids.map((id) => list.json.find((u) => u.id === id));
    assert.deepEqual(listed, [
      { id: ids[0], file_name: 'a.mbtiles', format: 'mbtiles', file_path: path.join(dir, `upload-${ids[0]}.mbtiles`) },
      { id: ids[1], file_name: 'b.sqlite', format: 'mbtiles', file_path: path.join(dir, `upload-${ids[1]}.sqlite`) },
    ]);

    // An ad-hoc composite with an upload is remembered by the state: it must not outlive the upload.
    assert.equal((await request(server.url, `/data/omt+upload-${ids[0]}/0/0/0.pbf`)).status, 200);
    assert.equal((await request(server.url, `/styles/upload-${ids[0]}/style.json`)).status, 200);
    const byUuid = await request(server.url, `/api/upload/${ids[0]}`, { method: 'DELETE' });
    assert.equal(byUuid.status, 204);
    const bySourceId = await request(server.url, `/api/upload/upload-${ids[1]}`, { method: 'DELETE' });
    assert.equal(bySourceId.status, 204);
    for (const id of ids) {
      assert.ok(!existsSync(path.join(dir, `upload-${id}.mbtiles`)) && !existsSync(path.join(dir, `upload-${id}.sqlite`)), 'file deleted');
      assert.equal((await request(server.url, `/data/upload-${id}.json`)).status, 404);
      assert.equal((await request(server.url, `/data/upload-${id}/0/0/0.pbf`)).status, 404);
    }
    assert.equal((await request(server.url, `/data/omt+upload-${ids[0]}/0/0/0.pbf`)).status, 404);
    assert.equal((await request(server.url, `/styles/upload-${ids[0]}/style.json`)).status, 404);
    const after = await getJson<{ id: string }[]>(server.url, '/api/upload');
    assert.ok(!after.json.some((u) => ids.includes(u.id)));

    const again = await request(server.url, `/api/upload/${ids[0]}`, { method: 'DELETE' });
    assert.equal(again.status, 404);
    assert.match(String(JSON.parse(again.body.toString()).detail), /no upload with id/);
    assert.equal((await request(server.url, '/api/upload/not-a-uuid', { method: 'DELETE' })).status, 404);
  });

  test('tile requests racing a delete get answers, and the process lives on', async () => {
    const up = await uploadFile(server.url, 'race.mbtiles', OMT_MBTILES);
    const id = String(up.json.id);
    const tiles = Array.from({ length: 30 }, (_, i) => request(server.url, `/data/upload-${id}/${i % 2}/0/0.pbf`));
    const del = request(server.url, `/api/upload/${id}`, { method: 'DELETE' });
    const statuses = (await Promise.all(tiles)).map((r) => r.status);
    assert.equal((await del).status, 204);
    for (const s of statuses) assert.ok([200, 204, 404].includes(s), `tile answered ${s}`);
    assert.equal((await request(server.url, '/health')).status, 200);
  });

  test('an upload survives a SIGHUP reload of the configuration', async () => {
    const up = await uploadFile(server.url, 'kept.mbtiles', OMT_MBTILES);
    const id = String(up.json.id);
    const hash = (await getJson<{ config_hash: string }>(server.url, '/ping')).json.config_hash;
    writeFileSync(server.configFile!, configText(dir, `[[sources]]\nid = "omt2"\ntype = "pmtiles"\npath = "${OMT_PMTILES}"\n`));
    server.proc.kill('SIGHUP');
    await waitFor('the reloaded configuration', async () => ((await getJson<{ config_hash: string }>(server.url, '/ping')).json.config_hash !== hash ? true : undefined));
    const ids = (await getJson<{ id: string }[]>(server.url, '/data.json')).json.map((s) => s.id);
    assert.ok(ids.includes('omt2'), 'the new configuration is active');
    assert.ok(ids.includes(`upload-${id}`), 'the upload is still listed');
    assert.equal((await request(server.url, `/data/upload-${id}/0/0/0.pbf`)).status, 200);
    // The old state is closed after its drain period; the upload's source belongs to the process, not to it.
    assert.ok((await getJson<{ id: string }[]>(server.url, '/api/upload')).json.some((u) => u.id === id));
  });

  test('the upload routes are in /openapi.json', async () => {
    const doc = await getJson<{ paths: Record<string, Record<string, unknown>> }>(server.url, '/openapi.json');
    assert.ok(doc.json.paths['/api/upload']?.post && doc.json.paths['/api/upload']?.get);
    assert.ok(doc.json.paths['/api/upload/{id}']?.delete);
  });
});

describe('uploads without server.upload_dir', () => {
  let server: TestServer;
  before(async () => {
    server = await startServer({ toml: `[server]\ndisable_render = true\n[[sources]]\nid = "omt"\ntype = "pmtiles"\npath = "${OMT_PMTILES}"\n` });
  });
  after(async () => {
    await server?.stop();
  });

  test('every upload route answers 404 naming the setting', async () => {
    const post = await uploadFile(server.url, 'a.mbtiles', OMT_MBTILES);
    assert.match(problemOf(post, 404), /server\.upload_dir/);
    for (const [method, p] of [
      ['GET', '/api/upload'],
      ['DELETE', '/api/upload/0b7c2a8e-1111-4222-8333-944445555666'],
    ]) {
      const res = await request(server.url, p, { method });
      assert.equal(res.status, 404);
      assert.match(String(JSON.parse(res.body.toString()).detail), /server\.upload_dir/);
    }
    const doc = await getJson<{ paths: Record<string, unknown> }>(server.url, '/openapi.json');
    assert.equal(doc.json.paths['/api/upload'], undefined);
  });
});

describe('uploads that cannot be written', () => {
  let server: TestServer;
  let blocker: string;
  before(async () => {
    // The upload directory's path is taken by a plain file: the server cannot create the directory.
    blocker = path.join(tempDir('tsts-uploads-blocked-'), 'uploads');
    writeFileSync(blocker, 'a file where the directory should be');
    server = await startServer({ toml: `[server]\ndisable_render = true\nupload_dir = "${blocker}"\n` });
  });
  after(async () => {
    await server?.stop();
  });

  test('500 without internal detail; the error and the request id are in the log', async () => {
    const up = await postMultipart(server.url, multipartBody([{ field: 'file', fileName: 'a.mbtiles', data: readFileSync(OMT_MBTILES) }]));
    const detail = problemOf(up, 500);
    assert.doesNotMatch(detail, /ENOTDIR|EEXIST|mkdir|uploads/);
    const reqId = String(up.headers['x-request-id']);
    await waitFor('the logged upload failure', () => (server.output().includes('upload failed') ? true : undefined));
    const line = server.output().split('\n').find((l) => l.includes('upload failed'))!;
    assert.ok(line.includes(reqId), `the log line names the request id ${reqId}: ${line}`);
    assert.equal(readFileSync(blocker, 'utf8'), 'a file where the directory should be', 'the file in the way is untouched');
  });
});

test('a configured source id starting with upload- is refused at start-up', async () => {
  const file = writeTempConfig(`[[sources]]\nid = "upload-mine"\ntype = "pmtiles"\npath = "${OMT_PMTILES}"\n`);
  const run = await runCli(['--config', file]);
  assert.equal(run.code, 1);
  assert.match(run.stderr + run.stdout, /id "upload-mine" starts with "upload-", which is kept for uploaded files/);
});

test('database source ids starting with upload- are refused at start-up, naming the entry', async () => {
  // Refused while the configuration is read, before any connection: the database need not exist.
  const pg = '[postgres]\nconnection_string = "postgresql://nobody@127.0.0.1:1/none"\n';
  for (const [section, entry, where] of [
    ['tables', 'id = "upload-roads"\ntable = "roads"', 'postgres.tables[0]'],
    ['functions', 'id = "upload-fn"', 'postgres.functions[0]'],
    ['outdb_rasters', 'id = "upload-dem"', 'postgres.outdb_rasters[0]'],
  ]) {
    const run = await runCli(['--config', writeTempConfig(`${pg}[[postgres.${section}]]\n${entry}\n`)]);
    assert.equal(run.code, 1, run.stderr);
    assert.match(run.stderr + run.stdout, new RegExp(`${where.replace(/[.[\]]/g, '\\$&')}: id "upload-[a-z]+" starts with "upload-"`));
  }
});
