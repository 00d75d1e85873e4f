// The readings of a data-file source (src/sources/files/reading.ts), in this process on a real GeoPackage written by
// ogr2ogr: a reload that finds the file replaced while a request reads the old one lets that request finish on the
// old file, then closes it (the old file's descriptor, seen in /proc/self/fd, is released when the request ends,
// not before and not 30 s later); and a tile filter is compiled once per reading, not for every tile.
import assert from 'node:assert/strict';
import { copyFileSync, mkdtempSync, readdirSync, readlinkSync, renameSync, rmSync, utimesSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import * as v from 'valibot';
import { SourceSchema } from '../src/config/schema.js';
import { parseTileFilter } from '../src/serve/tile-filter.js';
import { FileSource } from '../src/sources/files/source.js';
import type { Bounds, TileFilter } from '../src/sources/source.js';
import { STORAGE } from './helpers/file-readers.js';
import { gdalTool } from './helpers/gdal.js';

let dir: string;
let first: string;
let second: string;
let live: string;

const WORLD: Bounds = [-180, -85, 180, 85];

/** A GeoPackage of points with these ids (layer `places`), written by ogr2ogr from GeoJSON. */
function writeGpkg(name: string, ids: number[]): string {
  const json = path.join(dir, `${name}.geojson`);
  writeFileSync(json, JSON.stringify({ type: 'FeatureCollection', features: ids.map((id) => ({ type: 'Feature', properties: { n: id, kind: id % 2 ? 'odd' : 'even' }, geometry: { type: 'Point', coordinates: [id, id / 2] } })) }));
  const out = path.join(dir, `${name}.gpkg`);
  const r = gdalTool('ogr2ogr', ['-f', 'GPKG', '-nln', 'places', out, json]);
  assert.equal(r.status, 0, r.stderr);
  return out;
}

/** This process's open descriptors on `file`: its current inode, or a replaced one (" (deleted)"). */
function descriptorsOn(file: string): string[] {
  const out: string[] = [];
  for (const fd of readdirSync('/proc/self/fd')) {
    try {
      const target = readlinkSync(`/proc/self/fd/${fd}`);
      if (target === file || target === `${file} (deleted)`) out.push(target);
    } catch {
      // The directory's own descriptor is gone by the time it is read.
    }
  }
  return out;
}

before(() => {
  dir = mkdtempSync(path.join(os.tmpdir(), 'tsts-files-readings-'));
  first = writeGpkg('first', [1, 2, 3]);
  second = writeGpkg('second', [10, 11, 12, 13]);
  live = path.join(dir, 'live.gpkg');
});
after(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const open = () => {
  const cfg = v.parse(SourceSchema, { id: 'live', type: 'geopackage', path: live });
  assert.ok(cfg.type === 'geopackage');
  return FileSource.open(cfg, STORAGE);
};
const ids = async (source: FileSource) => source.onCurrentReading(async (r) => (await r.reader.featuresInBox('places', WORLD, 100)).map((f) => f.properties.n));

test('a reading replaced while a request reads it: the request finishes on the old file, whose descriptor is released when it ends', async () => {
  copyFileSync(first, live);
  const source = await open();
  try {
    assert.deepEqual(descriptorsOn(live), [live], 'the source holds the file open');
    let release!: () => void;
    const gate = new Promise<void>((resolve) => (release = resolve));
    let started!: () => void;
    const running = new Promise<void>((resolve) => (started = resolve));
    // A request in flight on the first file: it reads only once the reload below has replaced the file.
    const held = source.onCurrentReading(async (r) => {
      started();
      await gate;
      return (await r.reader.featuresInBox('places', WORLD, 100)).map((f) => f.properties.n);
    });
    await running;

    // The file is replaced by another (a new inode, as a tool that writes and renames leaves it), and a reload sees it.
    const tmp = path.join(dir, 'live.tmp');
    copyFileSync(second, tmp);
    utimesSync(tmp, new Date(), new Date(Date.now() + 5000));
    renameSync(tmp, live);
    await source.refresh();
    assert.deepEqual(await ids(source), [10, 11, 12, 13], 'new requests read the new file');
    assert.deepEqual(descriptorsOn(live).sort(), [live, `${live} (deleted)`], 'the old file stays open while a request reads it');

    release();
    assert.deepEqual(await held, [1, 2, 3], 'the request in flight read the old file, whole');
    assert.deepEqual(descriptorsOn(live), [live], 'the old file is closed as its last request ended');
  } finally {
    await source.close();
  }
  assert.deepEqual(descriptorsOn(live), [], 'closing the source closes the file');
});

test('a reading whose requests have all ended is closed at the reload that replaces it', async () => {
  copyFileSync(first, live);
  const source = await open();
  try {
    assert.deepEqual(await ids(source), [1, 2, 3]);
    const tmp = path.join(dir, 'live.tmp');
    copyFileSync(second, tmp);
    utimesSync(tmp, new Date(), new Date(Date.now() + 10_000));
    renameSync(tmp, live);
    await source.refresh();
    // Closing the old reader happens at the swap itself (no request reads it): nothing of it is left open.
    await new Promise((resolve) => setImmediate(resolve));
    assert.deepEqual(descriptorsOn(live), [live]);
  } finally {
    await source.close();
  }
});

test('a tile filter is compiled once per reading: the same predicate for every tile, a new one for a new reading', async () => {
  copyFileSync(first, live);
  const source = await open();
  try {
    const parsed = parseTileFilter(new URLSearchParams({ filter: "kind = 'odd'" }), { maxLength: 100, maxTerms: 10 });
    assert.ok(parsed.ok && parsed.filter);
    const filter: TileFilter = parsed.filter;
    // The same filter written otherwise has the same normalised text, and so the same compiled predicate.
    const again = parseTileFilter(new URLSearchParams({ filter: " kind='odd' " }), { maxLength: 100, maxTerms: 10 });
    assert.ok(again.ok && again.filter);
    const [a, b, reading] = await source.onCurrentReading(async (r) => [r.predicate(filter), r.predicate(again.filter!), r] as const);
    assert.ok(a, 'a predicate');
    assert.equal(a, b, 'compiled once, kept for the next tile');
    // The tiles it filters hold the odd places only.
    const tile = await source.getTile(0, 0, 0, undefined, undefined, filter);
    assert.ok(tile && tile.byteLength > 0);
    const odd = await source.onCurrentReading(async (r) => (await r.reader.featuresInBox('places', WORLD, 100)).filter((f) => r.predicate(filter)!(f)).map((f) => f.properties.n));
    assert.deepEqual(odd, [1, 3]);
    // A filter that does not fit is refused each time with the same 400, without a new compilation.
    const bad = parseTileFilter(new URLSearchParams({ filter: "n = 'text'" }), { maxLength: 100, maxTerms: 10 });
    assert.ok(bad.ok && bad.filter);
    await assert.rejects(source.getTile(0, 0, 0, undefined, undefined, bad.filter), (err: Error & { status?: number; title?: string }) => err.status === 400 && err.title === 'Invalid filter');
    await assert.rejects(source.getTile(0, 0, 0, undefined, undefined, bad.filter), (err: Error & { status?: number }) => err.status === 400);

    const tmp = path.join(dir, 'live.tmp');
    copyFileSync(second, tmp);
    utimesSync(tmp, new Date(), new Date(Date.now() + 20_000));
    renameSync(tmp, live);
    await source.refresh();
    const c = await source.onCurrentReading(async (r) => (assert.notEqual(r, reading, 'a new reading'), r.predicate(filter)));
    assert.ok(c && c !== a, 'the new reading compiles the filter against its own properties');
  } finally {
    await source.close();
  }
});
