// `tileserver-ts mbtiles` and `convert`: martin's files read and written as martin does (its fixtures: stored
// hashes printed, its diffs applied, our diff of its before/after equal to its diff), each verb on the three
// schemas with diff-then-apply round trips, copy's filters and duplicate modes, the conversion both ways, and
// every bad input refused with one line and its exit status, and an apply-patch into OUT killed mid-write (no
// OUT left). Verbs run in-process where only the result is checked; through the built CLI where the exit status
// and the one line are.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { describe, test } from 'node:test';
import Database from 'better-sqlite3';
import { copyFileSync, existsSync, readFileSync, statSync, truncateSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { CLI, fixture, runCli } from './helpers/server.js';
import { tempDir } from './helpers/foundation.js';
import { aggTilesHash } from '../src/mbtiles/agg-hash.js';
import { createArchive, insertTiles, md5Hex, metaGet, metaSet, openArchive, WRITABLE_SCHEMAS, type WritableSchema } from '../src/mbtiles/archive.js';
import { diff } from '../src/mbtiles/diff.js';
import { applyPatch } from '../src/mbtiles/apply-patch.js';
import { copy, boxTiles } from '../src/mbtiles/copy.js';
import { convert } from '../src/mbtiles/convert.js';
import { validate } from '../src/mbtiles/validate.js';

const dir = tempDir('tsts-mbtiles-');
let serial = 0;
const file = (name: string) => path.join(dir, `${++serial}-${name}`);

/** A martin fixture (SQL dump) as an MBTiles file. */
function martin(name: string): string {
  const out = file(`${name}.mbtiles`);
  const db = new Database(out);
  db.exec(readFileSync(fixture(`mbtiles-martin/${name}.sql`), 'utf8'));
  db.close();
  return out;
}

type Row = [z: number, x: number, row: number, data: string | null];
/** Every tile of a file (its `tiles` view) as hex, in order. */
function tilesOf(f: string): Row[] {
  const db = new Database(f, { readonly: true });
  try {
    return db.prepare("SELECT zoom_level, tile_column, tile_row, hex(tile_data) FROM tiles ORDER BY 1, 2, 3").raw().all() as Row[];
  } finally {
    db.close();
  }
}
/** The tile positions a diff holds, with their bytes (NULL: deleted), whatever its schema. */
function diffRows(f: string): Row[] {
  const db = new Database(f, { readonly: true });
  try {
    const has = (t: string) => db.prepare("SELECT 1 FROM sqlite_master WHERE name = ?").get(t) !== undefined;
    const sql = has('map')
      ? 'SELECT m.zoom_level, m.tile_column, m.tile_row, hex(i.tile_data) FROM map m LEFT JOIN images i ON i.tile_id = m.tile_id'
      : has('tiles_with_hash')
        ? 'SELECT zoom_level, tile_column, tile_row, hex(tile_data) FROM tiles_with_hash'
        : 'SELECT zoom_level, tile_column, tile_row, hex(tile_data) FROM tiles';
    return (db.prepare(`${sql} ORDER BY 1, 2, 3`).raw().all() as Row[]).map((r) => [r[0], r[1], r[2], r[3] === '' ? null : r[3]] as Row);
  } finally {
    db.close();
  }
}
const meta = (f: string, key: string) => {
  const a = openArchive(f);
  try {
    return metaGet(a.db, key);
  } finally {
    a.db.close();
  }
};
const computed = (f: string) => {
  const a = openArchive(f);
  try {
    return aggTilesHash(a.db);
  } finally {
    a.db.close();
  }
};

type Tiles = Map<string, Buffer>;
const tileBytes = (seed: string) => Buffer.from(`tile ${seed} `.repeat(3 + (seed.length % 5)));
/** Version 1: every tile of z0-3 (85). */
function version1(): Tiles {
  const t: Tiles = new Map();
  for (let z = 0; z <= 3; z++) for (let x = 0; x < 2 ** z; x++) for (let y = 0; y < 2 ** z; y++) t.set(`${z}/${x}/${y}`, tileBytes(`${z}/${x}/${y}`));
  // Two positions with the same bytes (normalized stores one image for both).
  t.set('3/0/0', tileBytes('ocean'));
  t.set('3/0/1', tileBytes('ocean'));
  return t;
}
/** Version 2: some tiles changed, some deleted, some added (z4), one made equal to another. */
function version2(): Tiles {
  const t = version1();
  for (const k of ['1/0/0', '2/3/1', '3/5/5']) t.set(k, tileBytes(`${k} v2`));
  for (const k of ['3/7/7', '3/7/6', '2/0/0']) t.delete(k);
  for (const k of ['4/0/0', '4/15/15']) t.set(k, tileBytes(`${k} new`));
  t.set('3/1/1', tileBytes('ocean'));
  return t;
}
/** An MBTiles file of `schema` holding `tiles` (keys z/x/row) and metadata. */
function build(schema: WritableSchema, tiles: Tiles, metadata: Record<string, string>, withHash = true): string {
  const out = file(`${schema}.mbtiles`);
  const a = createArchive(out, schema);
  a.db.exec('CREATE TEMP TABLE t (zoom_level INTEGER, tile_column INTEGER, tile_row INTEGER, tile_data BLOB, tile_hash TEXT)');
  const ins = a.db.prepare('INSERT INTO temp.t VALUES (?, ?, ?, ?, NULL)');
  for (const [k, data] of tiles) {
    const [z, x, row] = k.split('/').map(Number);
    ins.run(z, x, row, data);
  }
  insertTiles(a.db, schema, 'SELECT * FROM temp.t', '');
  for (const [k, v] of Object.entries(metadata)) a.db.prepare('INSERT INTO metadata VALUES (?, ?)').run(k, v);
  if (withHash) a.db.prepare("INSERT INTO metadata VALUES ('agg_tiles_hash', ?)").run(aggTilesHash(a.db));
  a.db.close();
  return out;
}
const META1 = { name: 'v1', format: 'png', description: 'first', legend: 'gone in v2' };
const META2 = { name: 'v2', format: 'png', description: 'first', attribution: 'new in v2' };

/** Runs the CLI and asserts a refusal: the exit status and one line on stderr matching `pattern`, no stack. */
async function refused(args: string[], code: number, pattern: RegExp) {
  const r = await runCli(args, {}, 60_000);
  assert.equal(r.code, code, `exit status; stderr: ${r.stderr}`);
  const lines = r.stderr.split('\n').filter((l) => l.trim() !== '');
  assert.equal(lines.length, 1, r.stderr);
  assert.match(lines[0], pattern);
  assert.doesNotMatch(r.stderr, /\n\s+at /);
}

describe("martin's files", () => {
  test('validate prints the agg_tiles_hash martin stored (flat-with-hash, normalized-dedup-id), and writes it with --update', async () => {
    const r = await runCli(['mbtiles', 'validate', martin('zoomed_world_cities')], {}, 60_000);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(r.stdout, 'AC15E26A1FCF82FDB6D0E8F43EE37821\n');
    const dedup = openArchive(martin('normalized-dedup-id'));
    assert.equal(dedup.schema, 'normalized-dedup-id');
    assert.equal(validate(dedup, false).computed, '3CE4DB27DDC5A385756CC384CDAFC3D5');
    dedup.db.close();
    // geography-class-jpg stores none: refused, then written; the value is the one martin's diff names as its base.
    const geo = martin('geography-class-jpg');
    await refused(['mbtiles', 'validate', geo], 1, /agg_tiles_hash is not stored but the tiles give 3CE4DB27DDC5A385756CC384CDAFC3D5/);
    const g = openArchive(geo, true);
    assert.equal(validate(g, true).updated, true);
    g.db.close();
    assert.equal(meta(geo, 'agg_tiles_hash'), meta(martin('geography-class-jpg-diff'), 'agg_tiles_hash_before_apply'));
  });

  test("world_cities: the stored hash is older than its tiles; we compute what martin's own tests print", () => {
    // martin's e2e log: "Updating agg_tiles_hash ... old=84792BF4... new=08934F8E..." for this file.
    assert.equal(meta(martin('world_cities'), 'agg_tiles_hash'), '84792BF4EE9AEDDC5B1A60E707011FEE');
    assert.equal(computed(martin('world_cities')), '08934F8E3E58DED510920E1DE6F4E78F');
    // ... and "agg_tiles_hash=72D8C992..." for world_cities with martin's diff applied, "9FDA1E99..." for its diff.
    assert.equal(computed(martin('world_cities_modified')), '72D8C992AF67EC97093B0087933FA160');
    assert.equal(computed(martin('world_cities_diff')), '9FDA1E9908727A8C2ACB295210355E56');
  });

  test("apply-patch applies martin's diff to martin's base: martin's expected hash stored, the tiles of martin's modified file", () => {
    const base = martin('world_cities');
    const p = applyPatch(base, martin('world_cities_diff'), undefined, false);
    assert.equal(p.after, '578FB5BD64746C39E3D344662947FD0D');
    assert.equal(meta(base, 'agg_tiles_hash'), meta(martin('world_cities_modified'), 'agg_tiles_hash'));
    assert.deepEqual(tilesOf(base), tilesOf(martin('world_cities_modified')));
    assert.equal(meta(base, 'description'), 'A modified version of major cities from Natural Earth data');
    // Normalized: the base stores no hash, so only --force applies it (as martin's own test does).
    const geo = martin('geography-class-jpg');
    assert.throws(() => applyPatch(geo, martin('geography-class-jpg-diff'), undefined, false), /stores no agg_tiles_hash/);
    applyPatch(geo, martin('geography-class-jpg-diff'), undefined, true);
    assert.equal(meta(geo, 'agg_tiles_hash'), '0B5497687F57C65097D89B675E1AC255');
    // martin's diff names, for 1/1/1, an image it does not hold: read as martin reads it (LEFT JOIN), a deletion.
    const modified = tilesOf(martin('geography-class-jpg-modified')).filter((r) => !(r[0] === 1 && r[1] === 1 && r[2] === 1));
    assert.deepEqual(tilesOf(geo), modified);
  });

  test("our diff of martin's before and after is martin's diff: the same tiles, deletions and hashes", () => {
    const out = file('wc-diff.mbtiles');
    diff(martin('world_cities'), martin('world_cities_modified'), out, false);
    const theirs = martin('world_cities_diff');
    assert.deepEqual(diffRows(out), diffRows(theirs));
    for (const k of ['agg_tiles_hash_before_apply', 'agg_tiles_hash_after_apply', 'description']) assert.equal(meta(out, k), meta(theirs, k), k);
    assert.equal(computed(out), computed(theirs));
    // Normalized: our diff of martin's geography files, applied, gives martin's after-apply hash from the tiles.
    const geoDiff = file('geo-diff.mbtiles');
    const base = martin('geography-class-jpg');
    diff(base, martin('geography-class-jpg-modified'), geoDiff, false);
    applyPatch(base, geoDiff, undefined, true);
    assert.deepEqual(tilesOf(base), tilesOf(martin('geography-class-jpg-modified')));
    assert.equal(computed(base), meta(martin('geography-class-jpg-diff'), 'agg_tiles_hash_after_apply'));
  });
});

describe('each schema', () => {
  for (const schema of WRITABLE_SCHEMAS) {
    test(`${schema}: validate, diff, apply-patch in place and to OUT give the new file's agg_tiles_hash and tiles`, () => {
      const v1 = build(schema, version1(), META1);
      const v2 = build(schema, version2(), META2);
      const a = openArchive(v1, true);
      assert.equal(a.schema, schema);
      assert.equal(validate(a, false).computed, meta(v1, 'agg_tiles_hash'));
      a.db.close();
      const d = file(`${schema}-diff.mbtiles`);
      const r = diff(v1, v2, d, false);
      assert.deepEqual([r.changed, r.deleted], [6, 3]);
      assert.equal(openArchive(d).schema, schema);
      assert.equal(meta(d, 'legend'), undefined);
      assert.equal(meta(d, 'name'), 'v2');
      assert.equal(meta(d, 'description'), undefined, 'an unchanged value is not in the diff');
      const out = file(`${schema}-out.mbtiles`);
      applyPatch(v1, d, out, false);
      applyPatch(v1, d, undefined, false);
      for (const f of [out, v1]) {
        assert.deepEqual(tilesOf(f), tilesOf(v2));
        assert.equal(meta(f, 'agg_tiles_hash'), meta(v2, 'agg_tiles_hash'));
        assert.equal(computed(f), meta(v2, 'agg_tiles_hash'));
        assert.equal(meta(f, 'legend'), undefined);
        assert.equal(meta(f, 'attribution'), 'new in v2');
        // Still valid, per-tile hashes included; no image left behind (normalized).
        const b = openArchive(f);
        validate(b, false);
        b.db.close();
      }
      if (schema === 'normalized') {
        const db = new Database(v1, { readonly: true });
        assert.equal(db.prepare('SELECT count(*) FROM images WHERE tile_id NOT IN (SELECT tile_id FROM map)').pluck().get(), 0);
        db.close();
      }
      // The same diff again: the base has moved on.
      assert.throws(() => applyPatch(v1, d, undefined, false), /made for another base/);
    });
  }

  test('a diff between two schemas compares bytes; a stored tile hash that lies is found by validate', () => {
    const v1 = build('flat-with-hash', version1(), META1);
    const v2 = build('flat', version2(), META1);
    const d = file('mixed-diff.mbtiles');
    assert.deepEqual(Object.values(diff(v1, v2, d, false)).slice(0, 2), [6, 3]);
    applyPatch(v1, d, undefined, false);
    assert.deepEqual(tilesOf(v1), tilesOf(v2));
    const db = new Database(v1);
    db.prepare("UPDATE tiles_with_hash SET tile_hash = ? WHERE zoom_level = 0").run(md5Hex('other'));
    db.close();
    const a = openArchive(v1);
    assert.throws(() => validate(a, false), /tile 0\/0\/0 .* does not match its tile_hash/);
    a.db.close();
  });
});

describe('copy', () => {
  test('into each schema, with zoom and bbox filters: the tiles asked for, and a valid agg_tiles_hash', () => {
    const src = build('flat', version2(), META2);
    for (const dstType of WRITABLE_SCHEMAS) {
      const dst = file(`copy-${dstType}.mbtiles`);
      copy([src], dst, { bboxes: [], dstType }, undefined);
      assert.equal(openArchive(dst).schema, dstType);
      assert.deepEqual(tilesOf(dst), tilesOf(src));
      assert.equal(meta(dst, 'agg_tiles_hash'), meta(src, 'agg_tiles_hash'));
      assert.equal(meta(dst, 'name'), 'v2');
    }
    const zooms = file('copy-zooms.mbtiles');
    copy([src], zooms, { minZoom: 1, maxZoom: 2, bboxes: [] });
    assert.deepEqual([...new Set(tilesOf(zooms).map((r) => r[0]))], [1, 2]);
    // The north-east quarter of the world (lon 0..180, lat 0..85): at z2 columns 2-3 and TMS rows 2-3.
    const box = file('copy-box.mbtiles');
    copy([src], box, { minZoom: 2, maxZoom: 2, bboxes: [[1, 1, 179, 84]] });
    assert.deepEqual(boxTiles(2, [1, 1, 179, 84]), [2, 3, 2, 3]);
    assert.deepEqual(tilesOf(box).map((r) => r.slice(0, 3)), [[2, 2, 2], [2, 2, 3], [2, 3, 2], [2, 3, 3]]);
  });

  test('several sources and --on-duplicate override, ignore, abort', async () => {
    const a = build('flat', version1(), META1);
    const b = build('normalized', version2(), META2);
    const both = file('both.mbtiles');
    copy([a, b], both, { bboxes: [], dstType: 'flat-with-hash' });
    // The later source wins; tiles only the first has stay.
    const rows = new Map(tilesOf(both).map((r) => [r.slice(0, 3).join('/'), r[3]]));
    assert.equal(rows.get('1/0/0'), tileBytes('1/0/0 v2').toString('hex').toUpperCase());
    assert.ok(rows.has('3/7/7'));
    const ignoring = file('ignore.mbtiles');
    copy([a], ignoring, { bboxes: [] });
    copy([b], ignoring, { bboxes: [], onDuplicate: 'ignore' });
    assert.equal(new Map(tilesOf(ignoring).map((r) => [r.slice(0, 3).join('/'), r[3]])).get('1/0/0'), tileBytes('1/0/0').toString('hex').toUpperCase());
    assert.equal(computed(ignoring), meta(ignoring, 'agg_tiles_hash'));
    const before = tilesOf(ignoring);
    assert.throws(() => copy([b], ignoring, { bboxes: [], onDuplicate: 'abort' }), /tile 1\/0\/0 .* differs from the one .* holds \(--on-duplicate abort\); nothing was copied/);
    assert.deepEqual(tilesOf(ignoring), before);
    assert.throws(() => copy([b], ignoring, { bboxes: [] }), /already exists; give --on-duplicate/);
    // Identical tiles are no clash for abort.
    copy([a], ignoring, { bboxes: [], onDuplicate: 'abort', maxZoom: 0 });
  });
});

describe('convert', () => {
  test('MBTiles to PMTiles and back: the same tiles, hash and metadata', async () => {
    const src = martin('world_cities');
    const pm = file('wc.pmtiles');
    const r = await runCli(['convert', src, pm], {}, 60_000);
    assert.equal(r.code, 0, r.stderr);
    const back = file('wc-back.mbtiles');
    assert.equal(await convert(pm, back, 'normalized'), 8);
    assert.deepEqual(tilesOf(back), tilesOf(src));
    assert.equal(meta(back, 'agg_tiles_hash'), computed(src));
    assert.equal(meta(back, 'name'), 'Major cities from Natural Earth data');
    assert.equal(meta(back, 'format'), 'pbf');
    assert.equal(meta(back, 'maxzoom'), '6');
    assert.deepEqual((JSON.parse(meta(back, 'json')!) as { vector_layers: { id: string }[] }).vector_layers.map((l) => l.id), ['cities']);
    const raster = file('geo.pmtiles');
    await convert(martin('geography-class-jpg'), raster, undefined);
    const rasterBack = file('geo-back.mbtiles');
    await convert(raster, rasterBack, undefined);
    assert.deepEqual(tilesOf(rasterBack), tilesOf(martin('geography-class-jpg')));
    assert.equal(meta(rasterBack, 'format'), 'jpg');
  });
});

describe('the other verbs and every bad input', () => {
  test('meta-get, meta-set (and removal), summary', async () => {
    const f = build('flat-with-hash', version1(), META1);
    assert.equal((await runCli(['mbtiles', 'meta-get', f, 'name'], {}, 60_000)).stdout, 'v1\n');
    assert.equal((await runCli(['mbtiles', 'meta-set', f, 'legend'], {}, 60_000)).code, 0);
    assert.equal(meta(f, 'legend'), undefined);
    const a = openArchive(f, true);
    metaSet(a.db, 'name', 'renamed');
    a.db.close();
    assert.equal(meta(f, 'name'), 'renamed');
    const s = await runCli(['mbtiles', 'summary', f], {}, 60_000);
    assert.equal(s.code, 0);
    assert.match(s.stdout, /flat-with-hash/);
    assert.match(s.stdout, /^\s+3\s+64\s/m);
    assert.match(s.stdout, /^ all\s+85\s/m);
  });

  test('a missing file, a text file, SQLite without tiles, a truncated file, a wrong base, usage mistakes', async () => {
    const text = file('text.mbtiles');
    writeFileSync(text, 'this is not a database, it is a sentence long enough to fill a header of one hundred bytes......');
    const empty = file('empty.mbtiles');
    new Database(empty).exec('CREATE TABLE something (a)');
    const big = build('flat', version1(), META1);
    const cut = file('cut.mbtiles');
    copyFileSync(big, cut);
    truncateSync(cut, statSync(cut).size - 4096);
    const v1 = build('flat', version1(), META1);
    const other = build('flat', version2(), META2);
    const d = file('bad-diff.mbtiles');
    diff(other, v1, d, false);
    await refused(['mbtiles', 'validate', file('nothing.mbtiles')], 1, /no such file/);
    await refused(['mbtiles', 'validate', text], 1, /not an MBTiles file \(not an SQLite database\)/);
    await refused(['mbtiles', 'summary', empty], 1, /not an MBTiles file \(no tiles table/);
    await refused(['mbtiles', 'validate', cut], 1, /truncated/);
    await refused(['mbtiles', 'apply-patch', v1, d], 1, /made for another base/);
    await refused(['mbtiles', 'frobnicate'], 2, /unknown mbtiles verb "frobnicate".*--help/);
    assert.throws(() => applyPatch(v1, big, undefined, false), /not a diff file/);
    const x = file('x.mbtiles');
    assert.throws(() => diff(v1, d, x, false), /is a diff file/);
    assert.throws(() => diff(v1, other, d, false), /already exists/);
    await assert.rejects(convert(v1, file('y.mbtiles'), undefined), /both MBTiles/);
    await assert.rejects(convert(text.replace('.mbtiles', '.pmtiles'), file('y.mbtiles'), undefined), /no such file/);
    const notPm = file('text.pmtiles');
    copyFileSync(text, notPm);
    await assert.rejects(convert(notPm, file('y.mbtiles'), undefined), /not a PMTiles archive/);
    assert.throws(() => copy([text], file('z.mbtiles'), { bboxes: [] }), /not an MBTiles file/);
    // Nothing was left behind by the refusals that would have written a file.
    assert.equal(existsSync(x), false);
    assert.equal(existsSync(file('y.mbtiles')), false);
    // The forced apply of the wrong diff goes through (its deletions name tiles this base does not hold).
    assert.deepEqual(Object.values(applyPatch(v1, d, undefined, true)).slice(0, 2), [7, 0]);
  });
});

describe('apply-patch into OUT', () => {
  test('killed while it writes, it leaves no OUT and BASE as it was; run again, OUT is the patched file', async () => {
    // OUT is patched as OUT.partial, without SQLite's journal, and renamed when complete: the CLI is killed the
    // moment OUT.partial appears (while it copies BASE or writes the diff's 8 MB), and OUT must not exist. BASE
    // is about 16 MB of random tiles so that the copy and the patch outlast the poll.
    const tiles: Tiles = new Map();
    for (let i = 0; i < 1000; i++) tiles.set(`11/${i % 64}/${Math.floor(i / 64)}`, randomBytes(16_000));
    const base = build('flat', tiles, META1);
    const changed: Tiles = new Map(tiles);
    for (let i = 0; i < 500; i++) changed.set(`11/${(2 * i) % 64}/${Math.floor((2 * i) / 64)}`, randomBytes(16_000));
    const next = build('flat', changed, META2);
    const d = file('big-diff.mbtiles');
    diff(base, next, d, false);
    const out = file('patched.mbtiles');
    const partial = `${out}.partial`;
    const before = readFileSync(base);
    const proc = spawn(process.execPath, [CLI, 'mbtiles', 'apply-patch', base, d, out], { stdio: 'ignore' });
    const exited = new Promise<number | null>((resolve) => proc.on('exit', (code) => resolve(code)));
    // A tight poll (the test's own event loop may wait: the CLI runs in its own process).
    const deadline = Date.now() + 60_000;
    while (!existsSync(partial) && !existsSync(out) && Date.now() < deadline);
    proc.kill('SIGKILL');
    assert.equal(await exited, null, 'the CLI was killed before it finished');
    assert.equal(existsSync(out), false, 'no OUT after a crash mid-apply');
    assert.ok(before.equals(readFileSync(base)), 'BASE untouched');
    // A leftover OUT.partial is replaced by the next run, which completes.
    const r = await runCli(['mbtiles', 'apply-patch', base, d, out], {}, 60_000);
    assert.equal(r.code, 0, r.stderr);
    assert.equal(existsSync(partial), false);
    assert.equal(computed(out), meta(next, 'agg_tiles_hash'));
    assert.equal(meta(out, 'agg_tiles_hash'), meta(next, 'agg_tiles_hash'));
  });
});
