// BENCH=mbtiles (issue 48): `mbtiles diff` and `mbtiles apply-patch` of two archives that differ in 1 % of their
// tiles, against a full `mbtiles copy` of the same file, per schema. Each verb runs as the real CLI (dist/) under
// /usr/bin/time, which gives its wall time and peak resident memory. The target: diff and apply-patch at least
// 10x faster than the copy, each under 300 MB.
// The archives: random (incompressible) tiles of 4-28 KiB at zooms 0..N until the size is reached; the second
// file is a copy of the first with 1 % of the tiles given new bytes (a third of those deleted instead, and as
// many added). Made once per schema in a scratch folder (not timed); their agg_tiles_hash written.
// Each timed verb starts after `sync`: the files made just before it (the archives, the base copied for
// apply-patch) would otherwise still be written back to the disk while it runs, and a verb's own fsyncs would wait
// behind a gigabyte of someone else's dirty pages. A user's base has long been on the disk when a diff arrives.
// Settings: MBTILES_BENCH_MB (default 1024: the 1 GB), MBTILES_BENCH_SCHEMAS (default
// normalized,flat-with-hash,flat).
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdtempSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { randomBytes } from 'node:crypto';
import { aggTilesHash } from '../src/mbtiles/agg-hash.js';
import { createArchive, insertTiles, openArchive, positionTable, WRITABLE_SCHEMAS, type WritableSchema } from '../src/mbtiles/archive.js';
import { envNumber, fmt, ROOT, table } from './lib.js';

const MB = envNumber('MBTILES_BENCH_MB', 1024);
const SCHEMAS = (process.env.MBTILES_BENCH_SCHEMAS ?? 'normalized,flat-with-hash,flat').split(',').map((s) => s.trim()) as WritableSchema[];
for (const s of SCHEMAS) if (!(WRITABLE_SCHEMAS as readonly string[]).includes(s)) throw new Error(`MBTILES_BENCH_SCHEMAS: unknown schema ${s}`);
const CLI = path.join(ROOT, 'dist/cli.js');
const dir = mkdtempSync(path.join(os.tmpdir(), 'tsts-bench-mbtiles-'));

/** A tile of 4..28 KiB of random bytes. */
const tile = () => randomBytes(4096 + Math.floor(Math.random() * 24 * 1024));

function writeHash(file: string): void {
  const a = openArchive(file, true);
  a.db.prepare("INSERT OR REPLACE INTO metadata VALUES ('agg_tiles_hash', ?)").run(aggTilesHash(a.db));
  a.db.close();
}

/** The base archive: tiles in (zoom, column, row) order until `MB` megabytes of tile bytes. */
function makeBase(schema: WritableSchema, file: string): number {
  const a = createArchive(file, schema);
  a.db.pragma('journal_mode = OFF');
  a.db.pragma('synchronous = OFF');
  a.db.exec("CREATE TEMP TABLE t (zoom_level INTEGER, tile_column INTEGER, tile_row INTEGER, tile_data BLOB, tile_hash TEXT); INSERT INTO metadata VALUES ('name', 'bench'), ('format', 'pbf')");
  const ins = a.db.prepare('INSERT INTO temp.t VALUES (?, ?, ?, ?, NULL)');
  const flush = () => {
    insertTiles(a.db, schema, 'SELECT * FROM temp.t', '');
    a.db.exec('DELETE FROM temp.t');
  };
  let bytes = 0;
  let count = 0;
  a.db.exec('BEGIN');
  outer: for (let z = 0; ; z++)
    for (let x = 0; x < 2 ** z; x++)
      for (let y = 0; y < 2 ** z; y++) {
        const t = tile();
        ins.run(z, x, y, t);
        bytes += t.length;
        if (++count % 2000 === 0) flush();
        if (bytes >= MB * 2 ** 20) break outer;
      }
  flush();
  a.db.exec('COMMIT');
  a.db.close();
  writeHash(file);
  return count;
}

/** A copy of `base` with 1 % of its tiles changed: two thirds new bytes, one third deleted, as many added. */
function makeNext(schema: WritableSchema, base: string, file: string): number {
  copyFileSync(base, file);
  const a = openArchive(file, true);
  const every = 100;
  const table = positionTable(schema);
  const rows = a.db.prepare(`SELECT zoom_level, tile_column, tile_row FROM ${table} WHERE rowid % ${every} = 7`).raw().all() as [number, number, number][];
  a.db.exec('CREATE TEMP TABLE t (zoom_level INTEGER, tile_column INTEGER, tile_row INTEGER, tile_data BLOB, tile_hash TEXT)');
  const ins = a.db.prepare('INSERT INTO temp.t VALUES (?, ?, ?, ?, NULL)');
  const del = a.db.prepare(`DELETE FROM ${table} WHERE zoom_level = ? AND tile_column = ? AND tile_row = ?`);
  const deepest = (a.db.prepare(`SELECT max(zoom_level) FROM ${table}`).pluck().get() as number) + 1;
  a.db.exec('BEGIN');
  rows.forEach(([z, x, y], i) => {
    if (i % 3 === 2) {
      del.run(z, x, y);
      ins.run(deepest, i, 0, tile());
    } else ins.run(z, x, y, tile());
  });
  insertTiles(a.db, schema, 'SELECT * FROM temp.t', 'OR REPLACE');
  if (schema === 'normalized') a.db.exec('DELETE FROM images WHERE tile_id NOT IN (SELECT tile_id FROM map)');
  a.db.exec('COMMIT');
  a.db.close();
  writeHash(file);
  return rows.length + Math.floor(rows.length / 3);
}

interface Run {
  seconds: number;
  rssMb: number;
}
/** One verb through the CLI under /usr/bin/time, on a settled disk: wall seconds and peak RSS. */
function run(args: string[]): Run {
  spawnSync('sync');
  const r = spawnSync('/usr/bin/time', ['-f', '%e %M', process.execPath, CLI, 'mbtiles', ...args], { encoding: 'utf8', stdio: ['ignore', 'ignore', 'pipe'] });
  const last = r.stderr.trim().split('\n').pop() ?? '';
  if (r.status !== 0) throw new Error(`mbtiles ${args[0]} failed: ${r.stderr}`);
  const [secs, kb] = last.split(' ').map(Number);
  return { seconds: secs, rssMb: kb / 1024 };
}

process.stdout.write(`archives of ${fmt(MB)} MB of tiles (MBTILES_BENCH_MB), schemas ${SCHEMAS.join(', ')}; scratch ${dir}\n`);
// What every run below includes: Node's start and the mbtiles modules (not the server's: src/cli.ts loads them
// only to serve).
const start = run(['--help']);
process.stdout.write(`CLI start (tileserver-ts mbtiles --help): ${fmt(start.seconds, 2)} s, ${fmt(start.rssMb)} MB RSS\n`);
const rows: string[][] = [['schema', 'tiles', 'file MB', 'changed', 'copy s', 'copy MB RSS', 'diff s', 'diff MB RSS', 'apply s', 'apply MB RSS', 'copy/diff', 'copy/apply']];
try {
  for (const schema of SCHEMAS) {
    const base = path.join(dir, `${schema}-a.mbtiles`);
    const next = path.join(dir, `${schema}-b.mbtiles`);
    const started = Date.now();
    const count = makeBase(schema, base);
    const changed = makeNext(schema, base, next);
    process.stdout.write(`${schema}: ${fmt(count)} tiles, ${fmt(statSync(base).size / 2 ** 20)} MB, ${fmt(changed)} positions changed; made in ${fmt((Date.now() - started) / 1000)} s\n`);
    const copied = path.join(dir, `${schema}-copy.mbtiles`);
    const copy = run(['copy', base, copied]);
    rmSync(copied);
    const d = path.join(dir, `${schema}-diff.mbtiles`);
    const diff = run(['diff', base, next, d]);
    const target = path.join(dir, `${schema}-target.mbtiles`);
    copyFileSync(base, target);
    const apply = run(['apply-patch', target, d]);
    rows.push([
      schema,
      fmt(count),
      fmt(statSync(base).size / 2 ** 20),
      fmt(changed),
      fmt(copy.seconds, 2),
      fmt(copy.rssMb),
      fmt(diff.seconds, 2),
      fmt(diff.rssMb),
      fmt(apply.seconds, 2),
      fmt(apply.rssMb),
      fmt(copy.seconds / Math.max(0.01, diff.seconds), 1),
      fmt(copy.seconds / Math.max(0.01, apply.seconds), 1),
    ]);
    for (const f of [base, next, d, target]) rmSync(f, { force: true });
  }
  process.stdout.write(`\n${table(rows)}\n`);
  process.stdout.write('Wall times include the CLI start above. Target: copy/diff and copy/apply >= 10, RSS < 300 MB.\n');
} finally {
  rmSync(dir, { recursive: true, force: true });
}
