// The geometry blob of a GeoPackage feature table (OGC 12-128r18, "GeoPackage Binary"): a header ("GP", version,
// flags, SRS id, an optional envelope) followed by the geometry as ISO well-known binary, read here into GeoJSON
// geometry (x and y; Z and M are read past). Every length is checked against the blob: a truncated or malformed
// blob is a GpkgGeometryError, never a read past the end.
import type { Geometry, Position } from 'geojson';

export class GpkgGeometryError extends Error {}

/** Bytes of the envelope for each envelope-contents indicator of the flags (0: none ... 4: xyzm). */
const ENVELOPE_BYTES = [0, 32, 48, 48, 64];
/** Nesting allowed for geometry collections, so that a hostile blob cannot exhaust the stack. */
const MAX_DEPTH = 32;

class Cursor {
  private pos: number;
  private little = true;
  constructor(
    private readonly view: DataView,
    start: number,
  ) {
    this.pos = start;
  }
  need(n: number): void {
    if (this.pos + n > this.view.byteLength) throw new GpkgGeometryError(`the geometry is truncated (needs ${n} bytes at offset ${this.pos} of ${this.view.byteLength})`);
  }
  order(): void {
    this.need(1);
    const b = this.view.getUint8(this.pos++);
    if (b > 1) throw new GpkgGeometryError(`byte order ${b} is neither 0 (big-endian) nor 1 (little-endian)`);
    this.little = b === 1;
  }
  uint32(): number {
    this.need(4);
    const v = this.view.getUint32(this.pos, this.little);
    this.pos += 4;
    return v;
  }
  /** A count of items each taking at least `each` bytes: refused when the blob cannot hold that many. */
  count(each: number): number {
    const n = this.uint32();
    if (n * each > this.view.byteLength - this.pos) throw new GpkgGeometryError(`a count of ${n} does not fit in the geometry`);
    return n;
  }
  position(dims: number): Position {
    this.need(8 * dims);
    const x = this.view.getFloat64(this.pos, this.little);
    const y = this.view.getFloat64(this.pos + 8, this.little);
    this.pos += 8 * dims;
    return [x, y];
  }
}

function positions(c: Cursor, dims: number): Position[] {
  const n = c.count(8 * dims);
  const out: Position[] = new Array(n);
  for (let i = 0; i < n; i++) out[i] = c.position(dims);
  return out;
}

/** One WKB geometry; `expect` is the type a multi-geometry's members must have. */
function wkb(c: Cursor, depth: number, expect?: number): Geometry | undefined {
  if (depth > MAX_DEPTH) throw new GpkgGeometryError(`geometry collections nested deeper than ${MAX_DEPTH}`);
  c.order();
  const code = c.uint32();
  // ISO codes: 1..7 plus 1000 (Z), 2000 (M), 3000 (ZM). Extended WKB's high flag bits are read the same way.
  const ewkbZ = (code & 0x80000000) !== 0;
  const ewkbM = (code & 0x40000000) !== 0;
  const plain = code & 0x0fffffff;
  const kind = plain % 1000;
  const family = Math.floor(plain / 1000);
  if (kind < 1 || kind > 7 || family > 3) throw new GpkgGeometryError(`geometry type code ${code} is not a WKB geometry type`);
  if (expect !== undefined && kind !== expect) throw new GpkgGeometryError(`a member of type ${kind} inside a multi-geometry of type ${expect + 3}`);
  const dims = 2 + (family === 1 || family === 2 ? 1 : family === 3 ? 2 : 0) + (ewkbZ ? 1 : 0) + (ewkbM ? 1 : 0);
  switch (kind) {
    case 1: {
      const p = c.position(dims);
      // An empty point is written as NaN coordinates.
      return Number.isNaN(p[0]) && Number.isNaN(p[1]) ? undefined : { type: 'Point', coordinates: p };
    }
    case 2: {
      const line = positions(c, dims);
      return line.length ? { type: 'LineString', coordinates: line } : undefined;
    }
    case 3: {
      const n = c.count(4);
      const rings: Position[][] = [];
      for (let i = 0; i < n; i++) rings.push(positions(c, dims));
      return rings.length ? { type: 'Polygon', coordinates: rings } : undefined;
    }
    case 4:
    case 5:
    case 6: {
      const n = c.count(9);
      const members: Geometry[] = [];
      for (let i = 0; i < n; i++) {
        const m = wkb(c, depth + 1, kind - 3);
        if (m) members.push(m);
      }
      if (!members.length) return undefined;
      if (kind === 4) return { type: 'MultiPoint', coordinates: members.map((m) => (m as { coordinates: Position }).coordinates) };
      if (kind === 5) return { type: 'MultiLineString', coordinates: members.map((m) => (m as { coordinates: Position[] }).coordinates) };
      return { type: 'MultiPolygon', coordinates: members.map((m) => (m as { coordinates: Position[][] }).coordinates) };
    }
    default: {
      const n = c.count(9);
      const members: Geometry[] = [];
      for (let i = 0; i < n; i++) {
        const m = wkb(c, depth + 1);
        if (m) members.push(m);
      }
      return members.length ? { type: 'GeometryCollection', geometries: members } : undefined;
    }
  }
}

/** The geometry of a GeoPackage blob, or undefined for an empty geometry. */
export function readGpkgGeometry(blob: Uint8Array): Geometry | undefined {
  const view = new DataView(blob.buffer, blob.byteOffset, blob.byteLength);
  if (blob.byteLength < 8 || blob[0] !== 0x47 || blob[1] !== 0x50) throw new GpkgGeometryError('not a GeoPackage geometry (no "GP" magic)');
  if (blob[2] !== 0) throw new GpkgGeometryError(`GeoPackage geometry version ${blob[2]} (only 0 is defined)`);
  const flags = blob[3];
  if (flags & 0x20) throw new GpkgGeometryError('an extended GeoPackage geometry type (not a simple feature)');
  const envelope = (flags >> 1) & 0x07;
  if (envelope >= ENVELOPE_BYTES.length) throw new GpkgGeometryError(`envelope contents indicator ${envelope} is not 0..4`);
  // The empty flag says the geometry is empty whatever the WKB holds.
  if (flags & 0x10) return undefined;
  const start = 8 + ENVELOPE_BYTES[envelope];
  if (start >= blob.byteLength) throw new GpkgGeometryError('the geometry is truncated (no WKB after the header)');
  return wkb(new Cursor(view, start), 0);
}
