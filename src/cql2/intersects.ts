// Whether two geometries in longitude/latitude share a point, boundaries included: what PostGIS's ST_Intersects
// answers on the plane of the coordinates (geometry, not geography), so that S_INTERSECTS evaluated in memory over a
// data file keeps the features the database keeps. Two closed sets meet when an edge of one crosses or touches an
// edge of the other, or when one lies wholly inside the other (then any vertex of it is inside the other).
import type { Geometry as GeoJsonGeometry } from 'geojson';

/** A geometry broken into what the test needs: lone points, polylines (line strings and rings) and polygons. */
interface Parts {
  points: number[][];
  lines: number[][][];
  polygons: number[][][][];
  /** west, south, east, north */
  box: [number, number, number, number];
}

function parts(g: GeoJsonGeometry): Parts {
  const out: Parts = { points: [], lines: [], polygons: [], box: [Infinity, Infinity, -Infinity, -Infinity] };
  const grow = (p: number[]) => {
    if (p[0] < out.box[0]) out.box[0] = p[0];
    if (p[1] < out.box[1]) out.box[1] = p[1];
    if (p[0] > out.box[2]) out.box[2] = p[0];
    if (p[1] > out.box[3]) out.box[3] = p[1];
  };
  const walk = (g: GeoJsonGeometry) => {
    switch (g.type) {
      case 'Point':
        out.points.push(g.coordinates);
        grow(g.coordinates);
        return;
      case 'MultiPoint':
        for (const p of g.coordinates) (out.points.push(p), grow(p));
        return;
      case 'LineString':
        out.lines.push(g.coordinates);
        g.coordinates.forEach(grow);
        return;
      case 'MultiLineString':
        for (const l of g.coordinates) (out.lines.push(l), l.forEach(grow));
        return;
      case 'Polygon':
        out.polygons.push(g.coordinates);
        for (const r of g.coordinates) (out.lines.push(r), r.forEach(grow));
        return;
      case 'MultiPolygon':
        for (const poly of g.coordinates) {
          out.polygons.push(poly);
          for (const r of poly) (out.lines.push(r), r.forEach(grow));
        }
        return;
      case 'GeometryCollection':
        g.geometries.forEach(walk);
    }
  };
  walk(g);
  return out;
}

const orient = (ax: number, ay: number, bx: number, by: number, cx: number, cy: number) => (bx - ax) * (cy - ay) - (by - ay) * (cx - ax);

/** c lies on the segment a-b (collinear and within its box). */
function onSegment(ax: number, ay: number, bx: number, by: number, cx: number, cy: number): boolean {
  return orient(ax, ay, bx, by, cx, cy) === 0 && Math.min(ax, bx) <= cx && cx <= Math.max(ax, bx) && Math.min(ay, by) <= cy && cy <= Math.max(ay, by);
}

function segmentsMeet(a: number[], b: number[], c: number[], d: number[]): boolean {
  const d1 = orient(c[0], c[1], d[0], d[1], a[0], a[1]);
  const d2 = orient(c[0], c[1], d[0], d[1], b[0], b[1]);
  const d3 = orient(a[0], a[1], b[0], b[1], c[0], c[1]);
  const d4 = orient(a[0], a[1], b[0], b[1], d[0], d[1]);
  if (((d1 > 0 && d2 < 0) || (d1 < 0 && d2 > 0)) && ((d3 > 0 && d4 < 0) || (d3 < 0 && d4 > 0))) return true;
  return (
    onSegment(c[0], c[1], d[0], d[1], a[0], a[1]) ||
    onSegment(c[0], c[1], d[0], d[1], b[0], b[1]) ||
    onSegment(a[0], a[1], b[0], b[1], c[0], c[1]) ||
    onSegment(a[0], a[1], b[0], b[1], d[0], d[1])
  );
}

function pointOnLine(p: number[], line: number[][]): boolean {
  if (line.length === 1) return line[0][0] === p[0] && line[0][1] === p[1];
  for (let i = 1; i < line.length; i++) if (onSegment(line[i - 1][0], line[i - 1][1], line[i][0], line[i][1], p[0], p[1])) return true;
  return false;
}

/** Strictly inside a ring by the even-odd rule (boundary points are found by pointOnLine first). */
function insideRing(p: number[], ring: number[][]): boolean {
  let inside = false;
  for (let i = 0, j = ring.length - 1; i < ring.length; j = i++) {
    const [xi, yi] = ring[i];
    const [xj, yj] = ring[j];
    if (yi > p[1] !== yj > p[1] && p[0] < ((xj - xi) * (p[1] - yi)) / (yj - yi) + xi) inside = !inside;
  }
  return inside;
}

/** In a polygon, its boundary included: inside the outer ring and not strictly inside a hole. */
function pointInPolygon(p: number[], polygon: number[][][]): boolean {
  if (polygon.length === 0) return false;
  if (polygon.some((r) => pointOnLine(p, r))) return true;
  if (!insideRing(p, polygon[0])) return false;
  for (let i = 1; i < polygon.length; i++) if (insideRing(p, polygon[i])) return false;
  return true;
}

/** The point lies in (or on) what `g` covers. */
function pointMeets(p: number[], g: Parts): boolean {
  for (const q of g.points) if (q[0] === p[0] && q[1] === p[1]) return true;
  for (const l of g.lines) if (pointOnLine(p, l)) return true;
  for (const poly of g.polygons) if (pointInPolygon(p, poly)) return true;
  return false;
}

function linesMeet(a: number[][], b: number[][]): boolean {
  // One-position lines are points: the segment loops below need two.
  if (a.length === 1) return pointOnLine(a[0], b);
  if (b.length === 1) return pointOnLine(b[0], a);
  for (let i = 1; i < a.length; i++) {
    const p = a[i - 1];
    const q = a[i];
    const minX = Math.min(p[0], q[0]);
    const maxX = Math.max(p[0], q[0]);
    const minY = Math.min(p[1], q[1]);
    const maxY = Math.max(p[1], q[1]);
    for (let j = 1; j < b.length; j++) {
      const r = b[j - 1];
      const s = b[j];
      if (Math.max(r[0], s[0]) < minX || Math.min(r[0], s[0]) > maxX || Math.max(r[1], s[1]) < minY || Math.min(r[1], s[1]) > maxY) continue;
      if (segmentsMeet(p, q, r, s)) return true;
    }
  }
  return false;
}

function partsMeet(a: Parts, b: Parts): boolean {
  if (a.box[0] > b.box[2] || b.box[0] > a.box[2] || a.box[1] > b.box[3] || b.box[1] > a.box[3]) return false;
  for (const p of a.points) if (pointMeets(p, b)) return true;
  for (const p of b.points) if (pointMeets(p, a)) return true;
  for (const la of a.lines) for (const lb of b.lines) if (linesMeet(la, lb)) return true;
  // No edges meet: one can still lie wholly inside a polygon of the other.
  for (const l of a.lines) if (l.length > 0 && b.polygons.some((poly) => pointInPolygon(l[0], poly))) return true;
  for (const l of b.lines) if (l.length > 0 && a.polygons.some((poly) => pointInPolygon(l[0], poly))) return true;
  return false;
}

/** ST_Intersects on the coordinates' plane, boundaries included. */
export function geometriesIntersect(a: GeoJsonGeometry, b: GeoJsonGeometry): boolean {
  return partsMeet(parts(a), parts(b));
}

/** The polygon of a box (west, south, east, north), as ST_MakeEnvelope makes it. */
export function boxPolygon(w: number, s: number, e: number, n: number): GeoJsonGeometry {
  return {
    type: 'Polygon',
    coordinates: [
      [
        [w, s],
        [w, n],
        [e, n],
        [e, s],
        [w, s],
      ],
    ],
  };
}
