// The WKB parser of the GeoParquet reader (src/sources/files/wkb.ts): any geometry, written as WKB by
// hyparquet-writer (ISO, 2D) or by the writer below (either byte order, ISO or EWKB flags, Z and/or M, an EWKB
// SRID), reads back as the same 2D GeoJSON geometry; cut-short and random bytes are an Error, never a hang or a
// geometry made up from bytes that are not there.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import type { Geometry, Position } from 'geojson';
import { geojsonToWkb } from 'hyparquet-writer';
import fc from './helpers/fast-check.js';
import { parseWkb } from '../src/sources/files/wkb.js';

const coord = fc.double({ noNaN: true, noDefaultInfinity: true, min: -1e9, max: 1e9 });
const position = fc.tuple(coord, coord) as fc.Arbitrary<Position>;
const line = fc.array(position, { maxLength: 5 });
const polygon = fc.array(line, { maxLength: 3 });

const geometry: fc.Arbitrary<Geometry> = fc.letrec<{ g: Geometry }>((tie) => ({
  g: fc.oneof(
    { depthSize: 'small', withCrossShrink: true },
    position.map((coordinates): Geometry => ({ type: 'Point', coordinates })),
    line.map((coordinates): Geometry => ({ type: 'LineString', coordinates })),
    polygon.map((coordinates): Geometry => ({ type: 'Polygon', coordinates })),
    fc.array(position, { maxLength: 4 }).map((coordinates): Geometry => ({ type: 'MultiPoint', coordinates })),
    fc.array(line, { maxLength: 3 }).map((coordinates): Geometry => ({ type: 'MultiLineString', coordinates })),
    fc.array(polygon, { maxLength: 3 }).map((coordinates): Geometry => ({ type: 'MultiPolygon', coordinates })),
    fc.array(tie('g'), { maxLength: 3 }).map((geometries): Geometry => ({ type: 'GeometryCollection', geometries })),
  ),
})).g;

interface Flavour {
  little: boolean;
  z: boolean;
  m: boolean;
  ewkb: boolean;
  srid: number | undefined;
}

const CODES: Record<Geometry['type'], number> = { Point: 1, LineString: 2, Polygon: 3, MultiPoint: 4, MultiLineString: 5, MultiPolygon: 6, GeometryCollection: 7 };

/** WKB of `g` as `f` says; extra dimensions get values from `extra` (they must be dropped on reading). */
function writeWkb(g: Geometry, f: Flavour, extra: () => number): Uint8Array {
  const out: number[] = [];
  const u8 = (v: number) => out.push(v);
  const u32 = (v: number) => {
    const b = new DataView(new ArrayBuffer(4));
    b.setUint32(0, v, f.little);
    out.push(...new Uint8Array(b.buffer));
  };
  const f64 = (v: number) => {
    const b = new DataView(new ArrayBuffer(8));
    b.setFloat64(0, v, f.little);
    out.push(...new Uint8Array(b.buffer));
  };
  const pos = (p: Position) => {
    f64(p[0]);
    f64(p[1]);
    if (f.z) f64(extra());
    if (f.m) f64(extra());
  };
  const head = (type: number, top: boolean) => {
    u8(f.little ? 1 : 0);
    if (f.ewkb) u32((type | (f.z ? 0x80000000 : 0) | (f.m ? 0x40000000 : 0) | (top && f.srid !== undefined ? 0x20000000 : 0)) >>> 0);
    else u32(type + (f.z && f.m ? 3000 : f.z ? 1000 : f.m ? 2000 : 0));
    if (f.ewkb && top && f.srid !== undefined) u32(f.srid);
  };
  const lineOf = (l: Position[]) => {
    u32(l.length);
    l.forEach(pos);
  };
  const rings = (p: Position[][]) => {
    u32(p.length);
    p.forEach(lineOf);
  };
  const write = (x: Geometry, top: boolean): void => {
    head(CODES[x.type], top);
    switch (x.type) {
      case 'Point':
        return pos(x.coordinates);
      case 'LineString':
        return lineOf(x.coordinates);
      case 'Polygon':
        return rings(x.coordinates);
      case 'MultiPoint':
        u32(x.coordinates.length);
        return x.coordinates.forEach((c) => write({ type: 'Point', coordinates: c }, false));
      case 'MultiLineString':
        u32(x.coordinates.length);
        return x.coordinates.forEach((c) => write({ type: 'LineString', coordinates: c }, false));
      case 'MultiPolygon':
        u32(x.coordinates.length);
        return x.coordinates.forEach((c) => write({ type: 'Polygon', coordinates: c }, false));
      case 'GeometryCollection':
        u32(x.geometries.length);
        return x.geometries.forEach((c) => write(c, false));
    }
  };
  write(g, true);
  return new Uint8Array(out);
}

const flavour = fc.record({ little: fc.boolean(), z: fc.boolean(), m: fc.boolean(), ewkb: fc.boolean(), srid: fc.option(fc.integer({ min: 0, max: 999999 }), { nil: undefined }) });

test('WKB in any byte order, ISO or EWKB, with Z and M, reads back as the same 2D geometry', () => {
  fc.assert(
    fc.property(geometry, flavour, coord, (g, f, e) => {
      const bytes = writeWkb(g, f, () => e);
      assert.deepEqual(parseWkb(bytes), g);
      // Inside a larger buffer (as Parquet pages hand values over): the view's offset is respected.
      const padded = new Uint8Array(bytes.length + 7);
      padded.set(bytes, 3);
      assert.deepEqual(parseWkb(padded.subarray(3, 3 + bytes.length)), g);
    }),
    { numRuns: 400 },
  );
});

test("hyparquet-writer's WKB reads back as the geometry it was written from", () => {
  fc.assert(
    fc.property(geometry, (g) => {
      assert.deepEqual(parseWkb(geojsonToWkb(g as Parameters<typeof geojsonToWkb>[0])), g);
    }),
    { numRuns: 300 },
  );
});

test('cut-short WKB is an Error, and random bytes are an Error or a geometry within the bytes', () => {
  fc.assert(
    fc.property(geometry, flavour, fc.nat(), (g, f, cut) => {
      const bytes = writeWkb(g, f, () => 1);
      const n = cut % bytes.length;
      assert.throws(() => parseWkb(bytes.subarray(0, n)), Error);
    }),
    { numRuns: 300 },
  );
  fc.assert(
    fc.property(fc.uint8Array({ maxLength: 64 }), fc.constantFrom(0, 1), fc.integer({ min: 1, max: 7 }), (tail, order, type) => {
      // Mostly well-formed heads followed by anything: counts larger than what is left must not allocate.
      const bytes = new Uint8Array([order, ...(order ? [type, 0, 0, 0] : [0, 0, 0, type]), ...tail]);
      try {
        const out = parseWkb(bytes);
        assert.ok(JSON.stringify(out).length < 64 * 64, 'a geometry no larger than its bytes allow');
      } catch (err) {
        assert.ok(err instanceof Error);
      }
    }),
    { numRuns: 500 },
  );
});
