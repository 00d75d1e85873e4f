// Well-Known Binary to GeoJSON geometry, in two dimensions: GeoParquet stores geometries as WKB. hyparquet has a
// decoder, but it keeps Z and M in the positions (GeoJSON allows Z only, and tiles want neither) and reads the
// type as ISO only, while files written through PostGIS or GDAL's older paths carry EWKB flags (the high bits
// for Z, M and an embedded SRID). This reads both, drops Z and M, and refuses anything that does not fit the
// bytes (a count larger than what is left) with an Error rather than allocating on a corrupt length.
import type { Geometry, Position } from 'geojson';

const EWKB_Z = 0x80000000;
const EWKB_M = 0x40000000;
const EWKB_SRID = 0x20000000;

class Cursor {
  private readonly view: DataView;
  at = 0;
  constructor(bytes: Uint8Array) {
    this.view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  }
  get left(): number {
    return this.view.byteLength - this.at;
  }
  need(n: number): void {
    if (n > this.left) throw new Error(`WKB cut short at byte ${this.at}`);
  }
  u8(): number {
    this.need(1);
    return this.view.getUint8(this.at++);
  }
  u32(little: boolean): number {
    this.need(4);
    const v = this.view.getUint32(this.at, little);
    this.at += 4;
    return v;
  }
  f64(little: boolean): number {
    const v = this.view.getFloat64(this.at, little);
    this.at += 8;
    return v;
  }
}

interface Head {
  little: boolean;
  type: number;
  /** Doubles per position: 2, 3 or 4. */
  dims: number;
}

function head(c: Cursor): Head {
  const order = c.u8();
  if (order > 1) throw new Error(`WKB byte order ${order} is neither 0 nor 1`);
  const little = order === 1;
  const raw = c.u32(little);
  let z = (raw & EWKB_Z) !== 0;
  let m = (raw & EWKB_M) !== 0;
  if (raw & EWKB_SRID) c.u32(little);
  let type = raw & 0x0fffffff;
  // ISO: 1000 + type has Z, 2000 + type M, 3000 + type both.
  const iso = Math.floor(type / 1000);
  if (iso > 3) throw new Error(`WKB geometry type ${raw} is not known`);
  if (iso === 1 || iso === 3) z = true;
  if (iso === 2 || iso === 3) m = true;
  type %= 1000;
  return { little, type, dims: 2 + (z ? 1 : 0) + (m ? 1 : 0) };
}

function count(c: Cursor, h: Head, minBytesEach: number): number {
  const n = c.u32(h.little);
  if (n * minBytesEach > c.left) throw new Error(`WKB count ${n} is larger than the bytes left`);
  return n;
}

function position(c: Cursor, h: Head): Position {
  c.need(8 * h.dims);
  const x = c.f64(h.little);
  const y = c.f64(h.little);
  c.at += 8 * (h.dims - 2);
  return [x, y];
}

function line(c: Cursor, h: Head): Position[] {
  const n = count(c, h, 8 * h.dims);
  const out: Position[] = new Array(n);
  for (let i = 0; i < n; i++) out[i] = position(c, h);
  return out;
}

function rings(c: Cursor, h: Head): Position[][] {
  const n = count(c, h, 4);
  const out: Position[][] = new Array(n);
  for (let i = 0; i < n; i++) out[i] = line(c, h);
  return out;
}

/** Reads the parts of a Multi* geometry: each is a whole WKB geometry of `partType`. */
function parts<T>(c: Cursor, h: Head, partType: number, read: (c: Cursor, h: Head) => T): T[] {
  const n = count(c, h, 5);
  const out: T[] = new Array(n);
  for (let i = 0; i < n; i++) {
    const ph = head(c);
    if (ph.type !== partType) throw new Error(`WKB part of type ${ph.type} inside a geometry of type ${h.type}`);
    out[i] = read(c, ph);
  }
  return out;
}

function geometry(c: Cursor, depth: number): Geometry {
  if (depth > 32) throw new Error('WKB geometry collections nested deeper than 32');
  const h = head(c);
  switch (h.type) {
    case 1:
      return { type: 'Point', coordinates: position(c, h) };
    case 2:
      return { type: 'LineString', coordinates: line(c, h) };
    case 3:
      return { type: 'Polygon', coordinates: rings(c, h) };
    case 4:
      return { type: 'MultiPoint', coordinates: parts(c, h, 1, position) };
    case 5:
      return { type: 'MultiLineString', coordinates: parts(c, h, 2, line) };
    case 6:
      return { type: 'MultiPolygon', coordinates: parts(c, h, 3, rings) };
    case 7: {
      const n = count(c, h, 5);
      const geometries: Geometry[] = [];
      for (let i = 0; i < n; i++) geometries.push(geometry(c, depth + 1));
      return { type: 'GeometryCollection', geometries };
    }
    default:
      throw new Error(`WKB geometry type ${h.type} is not one of Point..GeometryCollection (1-7)`);
  }
}

/**
 * The GeoJSON geometry of one WKB value, positions as [x, y]. An empty point (NaN coordinates, as WKB writes
 * it) has no position GeoJSON can hold and comes back as an empty MultiPoint. Throws Error on malformed bytes.
 */
export function parseWkb(bytes: Uint8Array): Geometry {
  const c = new Cursor(bytes);
  const g = geometry(c, 0);
  if (g.type === 'Point' && (Number.isNaN(g.coordinates[0]) || Number.isNaN(g.coordinates[1]))) return { type: 'MultiPoint', coordinates: [] };
  return g;
}
