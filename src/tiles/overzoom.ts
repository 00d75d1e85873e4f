// Cutting a deeper tile out of a stored one ("overzoom"): the part of an ancestor tile that covers a tile `dz`
// zoom levels below it, scaled up to a full tile and clipped to the tile plus a buffer, as a tile generator
// would have cut it had the archive gone that deep.
//
// Why: MapLibre draws a view beyond a source's maxzoom from the ancestor tile, and lays out that whole ancestor
// (every polygon tessellated, every label shaped) once for each deeper tile it shows. Rendering z17 from a z14
// archive repeats the full z14 work 64 times. Given the cut tile instead, it lays out only what it draws. The
// renderers ask for these tiles (src/render); public tile URLs keep answering the archive's zoom range.
//
// Geometry is in tile units (flat coordinate lists, vector-model.ts). Cut coordinates are rounded to whole units,
// as MVT stores them; the ancestor's precision is all there is, so a deep cut shows the ancestor's steps.
import { inside, segmentRange, type Rect } from './intersect.js';
import type { TileFeature, TileLayer, VectorTileData } from './vector-model.js';

/** The deepest zoom renderers are offered for vector sources (the tile URL's own limit). */
export const RENDER_MAXZOOM = 22;

/**
 * The tile `dz` levels below the given ancestor tile at offset (`cx`, `cy`) in the ancestor's grid of 2^dz x 2^dz
 * children. `buffer` is a fraction of each layer's extent: geometry is kept out to that far beyond the tile's
 * edges, so strokes and fills run on under the tile edge as they do in a generated tile.
 */
export function cutTile(ancestor: VectorTileData, dz: number, cx: number, cy: number, buffer: number): VectorTileData {
  const out: VectorTileData = [];
  const k = 2 ** dz;
  for (const layer of ancestor) {
    const e = layer.extent;
    // Child coordinate = ancestor coordinate * k - offset; the clip box in child units.
    const b = Math.round(buffer * e);
    const box: Rect = { minX: -b, minY: -b, maxX: e + b, maxY: e + b };
    const ox = cx * e;
    const oy = cy * e;
    const features: TileFeature[] = [];
    for (const f of layer.features) {
      const parts = cutFeature(f, k, ox, oy, box);
      if (parts.length) features.push({ id: f.id, type: f.type, geometry: parts, properties: f.properties });
    }
    if (features.length) out.push({ name: layer.name, extent: e, version: layer.version, features } satisfies TileLayer);
  }
  return out;
}

function cutFeature(f: TileFeature, k: number, ox: number, oy: number, box: Rect): number[][] {
  const parts: number[][] = [];
  for (const part of f.geometry) {
    // Most parts of an ancestor lie wholly outside a deep cut: skip them before copying anything.
    let minX = Infinity;
    let minY = Infinity;
    let maxX = -Infinity;
    let maxY = -Infinity;
    for (let i = 0; i < part.length; i += 2) {
      const x = part[i];
      const y = part[i + 1];
      if (x < minX) minX = x;
      if (x > maxX) maxX = x;
      if (y < minY) minY = y;
      if (y > maxY) maxY = y;
    }
    if (maxX * k - ox < box.minX || minX * k - ox > box.maxX || maxY * k - oy < box.minY || minY * k - oy > box.maxY) continue;
    const t = transform(part, k, ox, oy);
    if (f.type === 1) {
      const kept: number[] = [];
      for (let i = 0; i < t.length; i += 2) if (inside(box, t[i], t[i + 1])) kept.push(Math.round(t[i]), Math.round(t[i + 1]));
      if (kept.length) parts.push(kept);
    } else if (f.type === 2) {
      for (const piece of clipLine(t, box)) if (piece.length >= 4) parts.push(piece);
    } else {
      const ring = clipRing(t, box);
      if (ring.length >= 6) parts.push(ring);
    }
  }
  return parts;
}

function transform(part: readonly number[], k: number, ox: number, oy: number): number[] {
  const t = new Array<number>(part.length);
  for (let i = 0; i < part.length; i += 2) {
    t[i] = part[i] * k - ox;
    t[i + 1] = part[i + 1] * k - oy;
  }
  return t;
}

/** Rounded vertices, without a repeat of the previous vertex (rounding can make neighbours equal). */
function push(out: number[], x: number, y: number): void {
  const rx = Math.round(x);
  const ry = Math.round(y);
  const n = out.length;
  if (n >= 2 && out[n - 2] === rx && out[n - 1] === ry) return;
  out.push(rx, ry);
}

/**
 * A line string clipped to the box: the pieces inside it (a line that leaves and re-enters gives several).
 * Each segment is clipped on its own (Liang-Barsky); consecutive inside segments join into one piece.
 */
function clipLine(t: readonly number[], b: Rect): number[][] {
  const pieces: number[][] = [];
  let cur: number[] | undefined;
  if (t.length === 2) return inside(b, t[0], t[1]) ? [[Math.round(t[0]), Math.round(t[1])]] : [];
  for (let i = 0; i + 3 < t.length; i += 2) {
    const seg = clipSegment(t[i], t[i + 1], t[i + 2], t[i + 3], b);
    if (!seg) {
      cur = undefined;
      continue;
    }
    const [ax, ay, bx, by, enteredInside, leftInside] = seg;
    if (!cur || !enteredInside) {
      cur = [];
      pieces.push(cur);
      push(cur, ax, ay);
    }
    push(cur, bx, by);
    if (!leftInside) cur = undefined;
  }
  return pieces;
}

/** The part of segment a-b inside the box, and whether it starts at a and ends at b (no cut at either end). */
function clipSegment(ax: number, ay: number, bx: number, by: number, b: Rect): [number, number, number, number, boolean, boolean] | undefined {
  const range = segmentRange(b, ax, ay, bx, by);
  if (!range) return undefined;
  const [t0, t1] = range;
  const dx = bx - ax;
  const dy = by - ay;
  return [ax + t0 * dx, ay + t0 * dy, ax + t1 * dx, ay + t1 * dy, t0 === 0, t1 === 1];
}

/**
 * A polygon ring clipped to the box (Sutherland-Hodgman against each edge). The result keeps the ring's winding,
 * so exterior rings stay exterior and holes stay holes; edges along the box lie in the buffer, outside the tile.
 */
function clipRing(t: readonly number[], b: Rect): number[] {
  let pts = t;
  // Whole ring inside: only rounding to do.
  let all = true;
  for (let i = 0; i < t.length && all; i += 2) all = inside(b, t[i], t[i + 1]);
  if (!all) {
    pts = clipEdge(pts, 0, b.minX, false);
    pts = clipEdge(pts, 0, b.maxX, true);
    pts = clipEdge(pts, 1, b.minY, false);
    pts = clipEdge(pts, 1, b.maxY, true);
  }
  const out: number[] = [];
  for (let i = 0; i < pts.length; i += 2) push(out, pts[i], pts[i + 1]);
  // An open ring: drop a last vertex equal to the first.
  while (out.length >= 4 && out[0] === out[out.length - 2] && out[1] === out[out.length - 1]) out.length -= 2;
  return out;
}

/** One Sutherland-Hodgman pass: keep the side of the line (axis 0: x = v, 1: y = v) below v, or above when `max`. */
function clipEdge(pts: readonly number[], axis: 0 | 1, v: number, max: boolean): number[] {
  const out: number[] = [];
  const n = pts.length;
  if (n === 0) return out;
  const keep = (c: number) => (max ? c <= v : c >= v);
  let px = pts[n - 2];
  let py = pts[n - 1];
  let pIn = keep(axis === 0 ? px : py);
  for (let i = 0; i < n; i += 2) {
    const x = pts[i];
    const y = pts[i + 1];
    const cIn = keep(axis === 0 ? x : y);
    if (cIn !== pIn) {
      // The crossing point of the edge p-c with the line.
      const s = axis === 0 ? (v - px) / (x - px) : (v - py) / (y - py);
      out.push(axis === 0 ? v : px + s * (x - px), axis === 0 ? py + s * (y - py) : v);
    }
    if (cIn) out.push(x, y);
    px = x;
    py = y;
    pIn = cIn;
  }
  return out;
}
