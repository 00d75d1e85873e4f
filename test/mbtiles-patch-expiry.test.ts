// A served MBTiles changed by `tileserver-ts mbtiles apply-patch`, through the real server: patched in place
// (same inode: the old content cannot be read back), the reload expires exactly the tiles the diff holds, from
// the record the patch leaves in the file; patched into a copy that is renamed over the served file, the
// reload's diff of the two files finds the same tiles. A change in place that is not a recorded patch expires
// the whole source, as before.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import Database from 'better-sqlite3';
import { copyFileSync, renameSync, statSync } from 'node:fs';
import path from 'node:path';
import { gunzipSync } from 'node:zlib';
import { fixture, freePort, runCli, startServer, type TestServer, jsonLogLines } from './helpers/server.js';
import { tempDir } from './helpers/foundation.js';
import { parseScrape } from './helpers/prom-text.js';
import { openArchive } from '../src/mbtiles/archive.js';
import { validate } from '../src/mbtiles/validate.js';
import { diff } from '../src/mbtiles/diff.js';

interface LogLine {
  msg?: string;
  source?: string;
  tiles?: number;
  reason?: string;
}
const logLines = (s: TestServer) => jsonLogLines<LogLine>(s);

/** The server's log lines that `pick` keeps, once there are `count` of them (the log is written asynchronously). */
async function logged(s: TestServer, pick: (l: LogLine) => boolean, count: number): Promise<LogLine[]> {
  const deadline = Date.now() + 15_000;
  for (;;) {
    const found = logLines(s).filter(pick);
    if (found.length >= count || Date.now() > deadline) return found;
    await new Promise((r) => setTimeout(r, 100));
  }
}

/** A copy of `from` changed by `sql`, its agg_tiles_hash written. */
function version(from: string, to: string, sql: string): string {
  copyFileSync(from, to);
  const db = new Database(to);
  db.exec(sql);
  db.close();
  const a = openArchive(to, true);
  validate(a, true);
  a.db.close();
  return to;
}

describe('a served MBTiles patched by mbtiles apply-patch', () => {
  const dir = tempDir('tsts-mbpatch-');
  const served = path.join(dir, 'cities.mbtiles');
  let server: TestServer;
  let adminPort: number;
  let scrapePort: number;
  const expired = async () => parseScrape(await (await fetch(`http://127.0.0.1:${scrapePort}/metrics`)).text()).value('expire_tiles_total', { source: 'cities', input: 'archive' }) ?? 0;
  const reload = async () => {
    const res = await fetch(`http://127.0.0.1:${adminPort}/__admin/reload?flush=true`, { method: 'POST' });
    assert.equal(res.status, 200, await res.text());
  };
  const stored = (f: string, z: number, x: number, row: number) => new Database(f, { readonly: true }).prepare('SELECT tile_data FROM tiles WHERE zoom_level = ? AND tile_column = ? AND tile_row = ?').pluck().get(z, x, row) as Buffer;

  before(async () => {
    version(fixture('vector/world_cities.mbtiles'), served, 'SELECT 1');
    adminPort = await freePort();
    scrapePort = await freePort();
    server = await startServer({
      toml: `[server]\nadmin_bind = "127.0.0.1:${adminPort}"\ndisable_render = true\n[telemetry]\nscrape_bind = "127.0.0.1:${scrapePort}"\n[[sources]]\nid = "cities"\ntype = "mbtiles"\npath = "${served}"\n[cache]\ndir = "${path.join(dir, 'cache')}"\n`,
      env: { LOG_LEVEL: 'info' },
      timeoutMs: 60_000,
    });
  });
  after(() => server?.stop());

  test('patched in place: the reload expires exactly the diff tiles, and serves the new bytes', async () => {
    // Three positions: one changed (4/7/8 takes 2/3/1's bytes), one deleted (a z6 tile), one added (6/0/0).
    const next = version(served, path.join(dir, 'next.mbtiles'), `UPDATE tiles SET tile_data = (SELECT tile_data FROM tiles WHERE zoom_level = 2 AND tile_column = 3 AND tile_row = 1) WHERE zoom_level = 4 AND tile_column = 7 AND tile_row = 8;
      DELETE FROM tiles WHERE rowid = (SELECT min(rowid) FROM tiles WHERE zoom_level = 6); INSERT INTO tiles SELECT 6, 0, 0, tile_data FROM tiles WHERE zoom_level = 0;`);
    const d = path.join(dir, 'patch.mbtiles');
    assert.deepEqual(Object.values(diff(served, next, d, false)).slice(0, 2), [2, 1]);
    const inode = statSync(served).ino;
    const was = await expired();
    const r = await runCli(['mbtiles', 'apply-patch', served, d], {}, 60_000);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(statSync(served).ino, inode, 'patched in place');
    await reload();
    const found = await logged(server, (l) => l.msg === 'archive patched in place: expiring the tiles the patch holds', 1);
    assert.deepEqual(found.map((l) => [l.source, l.tiles]), [['cities', 3]]);
    assert.equal((await expired()) - was, 3);
    assert.equal(logLines(server).filter((l) => l.reason === 'the file was overwritten in place').length, 0);
    // XYZ row of TMS row 8 at z4: 7.
    const res = await fetch(`${server.url}/data/cities/4/7/7.pbf`);
    assert.equal(res.status, 200);
    assert.equal(Buffer.compare(Buffer.from(await res.arrayBuffer()), gunzipSync(stored(next, 2, 3, 1))), 0);
  });

  test('patched into a copy renamed over the served file: the reload diff finds the same tiles', async () => {
    const next = version(served, path.join(dir, 'third.mbtiles'), 'UPDATE tiles SET tile_data = (SELECT tile_data FROM tiles WHERE zoom_level = 0) WHERE zoom_level = 1 AND tile_column = 0 AND tile_row = 0');
    const d = path.join(dir, 'patch2.mbtiles');
    diff(served, next, d, false);
    const out = path.join(dir, 'patched-copy.mbtiles');
    const r = await runCli(['mbtiles', 'apply-patch', served, d, out], {}, 60_000);
    assert.equal(r.code, 0, r.stderr);
    const was = await expired();
    renameSync(out, served);
    await reload();
    const found = await logged(server, (l) => l.msg === 'archive replaced: expiring the tiles that changed', 1);
    assert.deepEqual(found.map((l) => [l.source, l.tiles]), [['cities', 1]]);
    assert.equal((await expired()) - was, 1);
  });

  test('a change in place that is not a recorded patch expires the whole source', async () => {
    const db = new Database(served);
    // (Bytes no tile of z0 held: SQLite writes nothing for an update that changes no value.)
    db.prepare('UPDATE tiles SET tile_data = (SELECT tile_data FROM tiles WHERE zoom_level = 5 ORDER BY tile_column, tile_row LIMIT 1) WHERE zoom_level = 0').run();
    db.close();
    await reload();
    const whole = await logged(server, (l) => l.source === 'cities' && l.reason === 'the file was overwritten in place', 1);
    assert.equal(whole.length, 1);
  });
});
