// The GeoPackage geometry blob reader (src/sources/files/gpkg-geometry.ts): random geometries written as blobs
// (any envelope kind, either byte order, XY/XYZ/XYM/XYZM) read back as the same GeoJSON; blobs GDAL wrote read as
// the geometries GDAL reports; and any bytes at all, truncated or random, give a geometry or a GpkgGeometryError,
// never another exception or a read past the end.
import assert from 'node:assert/strict';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { test } from 'node:test';
import Database from 'better-sqlite3';
import type { Geometry, Position } from 'geojson';
import { GpkgGeometryError, readGpkgGeometry } from '../src/sources/files/gpkg-geometry.js';
import fc from './helpers/fast-check.js';
import { gdalTool } from './helpers/gdal.js';

/** A test-side WKB writer: ISO codes, `dims` extra ordinates (Z and/or M) filled with a marker value. */
class Writer {
  readonly bytes: number[] = [];
  constructor(
    private readonly little: boolean,
    private readonly extra: number,
    private readonly family: number,
  ) {}
  private push(buf: ArrayBuffer): void {
    this.bytes.push(...new Uint8Array(buf));
  }
  u32(v: number): void {
    const b = new ArrayBuffer(4);
    new DataView(b).setUint32(0, v, this.little);
    this.push(b);
  }
  f64(v: number): void {
    const b = new ArrayBuffer(8);
    new DataView(b).setFloat64(0, v, this.little);
    this.push(b);
  }
  head(kind: number): void {
    this.bytes.push(this.little ? 1 : 0);
    this.u32(this.family * 1000 + kind);
  }
  pos(p: Position): void {
    this.f64(p[0]);
    this.f64(p[1]);
    for (let i = 0; i < this.extra; i++) this.f64(123.5);
  }
  line(l: Position[]): void {
    this.u32(l.length);
    l.forEach((p) => this.pos(p));
  }
  geometry(g: Geometry): void {
    switch (g.type) {
      case 'Point':
        this.head(1);
        return this.pos(g.coordinates);
      case 'LineString':
        this.head(2);
        return this.line(g.coordinates);
      case 'Polygon':
        this.head(3);
        this.u32(g.coordinates.length);
        return g.coordinates.forEach((r) => this.line(r));
      case 'MultiPoint':
        this.head(4);
        this.u32(g.coordinates.length);
        return g.coordinates.forEach((p) => this.geometry({ type: 'Point', coordinates: p }));
      case 'MultiLineString':
        this.head(5);
        this.u32(g.coordinates.length);
        return g.coordinates.forEach((l) => this.geometry({ type: 'LineString', coordinates: l }));
      case 'MultiPolygon':
        this.head(6);
        this.u32(g.coordinates.length);
        return g.coordinates.forEach((p) => this.geometry({ type: 'Polygon', coordinates: p }));
      case 'GeometryCollection':
        this.head(7);
        this.u32(g.geometries.length);
        return g.geometries.forEach((m) => this.geometry(m));
    }
  }
}

const ENVELOPE_BYTES = [0, 32, 48, 48, 64];

function blob(g: Geometry, little: boolean, family: number, envelope: number): Uint8Array {
  const extra = family === 3 ? 2 : family > 0 ? 1 : 0;
  const w = new Writer(little, extra, family);
  w.geometry(g);
  const head = [0x47, 0x50, 0, (envelope << 1) | (little ? 1 : 0), 0xe6, 0x10, 0, 0];
  return Uint8Array.from([...head, ...new Array(ENVELOPE_BYTES[envelope]).fill(0), ...w.bytes]);
}

const num = fc.double({ min: -1e6, max: 1e6, noNaN: true, noDefaultInfinity: true });
const pos = fc.tuple(num, num).map((p) => p as Position);
const line = fc.array(pos, { minLength: 2, maxLength: 5 });
const ring = fc.array(pos, { minLength: 3, maxLength: 5 }).map((r) => [...r, r[0]]);
const polygon = fc.array(ring, { minLength: 1, maxLength: 3 });
const simple: fc.Arbitrary<Geometry> = fc.oneof(
  pos.map((c) => ({ type: 'Point', coordinates: c }) as Geometry),
  line.map((c) => ({ type: 'LineString', coordinates: c }) as Geometry),
  polygon.map((c) => ({ type: 'Polygon', coordinates: c }) as Geometry),
  fc.array(pos, { minLength: 1, maxLength: 4 }).map((c) => ({ type: 'MultiPoint', coordinates: c }) as Geometry),
  fc.array(line, { minLength: 1, maxLength: 3 }).map((c) => ({ type: 'MultiLineString', coordinates: c }) as Geometry),
  fc.array(polygon, { minLength: 1, maxLength: 3 }).map((c) => ({ type: 'MultiPolygon', coordinates: c }) as Geometry),
);
const geometry = fc.oneof({ weight: 4, arbitrary: simple }, { weight: 1, arbitrary: fc.array(simple, { minLength: 1, maxLength: 3 }).map((g) => ({ type: 'GeometryCollection', geometries: g }) as Geometry) });

test('blobs of random geometries (any envelope, byte order and dimensions) read back as the same geometry', () => {
  fc.assert(
    fc.property(geometry, fc.boolean(), fc.integer({ min: 0, max: 3 }), fc.integer({ min: 0, max: 4 }), (g, little, family, envelope) => {
      assert.deepEqual(readGpkgGeometry(blob(g, little, family, envelope)), g);
    }),
    { numRuns: 1500 },
  );
});

test('any bytes: a geometry or a GpkgGeometryError, never another error (truncated blobs, random bytes, bad counts)', () => {
  const check = (bytes: Uint8Array) => {
    try {
      readGpkgGeometry(bytes);
    } catch (err) {
      if (!(err instanceof GpkgGeometryError)) throw err;
    }
  };
  fc.assert(
    fc.property(geometry, fc.boolean(), fc.integer({ min: 0, max: 4 }), fc.nat(), (g, little, envelope, cut) => {
      const b = blob(g, little, 0, envelope);
      const truncated = b.subarray(0, cut % b.length);
      assert.throws(() => readGpkgGeometry(truncated), GpkgGeometryError, 'a truncated blob is refused');
    }),
    { numRuns: 1000 },
  );
  fc.assert(
    fc.property(fc.uint8Array({ maxLength: 80 }), fc.boolean(), (bytes, gp) => {
      // With a valid header half the time, so that the WKB reader sees random bytes too.
      check(gp ? Uint8Array.from([0x47, 0x50, 0, 1, 0, 0, 0, 0, ...bytes]) : bytes);
    }),
    { numRuns: 3000 },
  );
  // A count claiming more items than the blob holds is refused before any allocation.
  const huge = Uint8Array.from([0x47, 0x50, 0, 1, 0, 0, 0, 0, 1, 2, 0, 0, 0, 0xff, 0xff, 0xff, 0x7f]);
  assert.throws(() => readGpkgGeometry(huge), /does not fit/);
});

test('blobs GDAL wrote read as the geometries GDAL reports (with Z, and the envelope GDAL writes)', () => {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'tsts-gpkg-geom-'));
  try {
    const src = path.join(dir, 'in.geojson');
    const features: { geometry: Geometry | null }[] = [
      { geometry: { type: 'Point', coordinates: [7.5, 51.5, 100] } },
      { geometry: { type: 'LineString', coordinates: [[0, 0, 1], [1, 1, 2]] } },
      { geometry: { type: 'Polygon', coordinates: [[[0, 0, 0], [2, 0, 0], [2, 2, 0], [0, 0, 0]]] } },
      { geometry: { type: 'MultiPolygon', coordinates: [[[[0, 0, 5], [1, 0, 5], [1, 1, 5], [0, 0, 5]]], [[[3, 3, 5], [4, 3, 5], [4, 4, 5], [3, 3, 5]]]] } },
    ];
    writeFileSync(src, JSON.stringify({ type: 'FeatureCollection', features: features.map((f, i) => ({ type: 'Feature', id: i + 1, properties: {}, geometry: f.geometry })) }));
    const out = path.join(dir, 'out.gpkg');
    assert.equal(gdalTool('ogr2ogr', ['-f', 'GPKG', out, src, '-nln', 't']).status, 0);
    const db = new Database(out, { readonly: true });
    const rows = db.prepare('SELECT geom FROM t ORDER BY fid').all() as { geom: Buffer }[];
    db.close();
    const xy = (g: Geometry): unknown => JSON.parse(JSON.stringify(g, (k, v) => (Array.isArray(v) && typeof v[0] === 'number' ? v.slice(0, 2) : v)));
    assert.equal(rows.length, features.length);
    rows.forEach((r, i) => assert.deepEqual(readGpkgGeometry(r.geom), xy(features[i].geometry!), `feature ${i + 1}`));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});
