// Which tiles a seed covers: every tile of a zoom range that meets a bounding box, or that meets the geometries
// of a GeoJSON file (points, lines, polygons; a polygon's holes excluded). Tiles are listed zoom by zoom, rows
// north to south, so a run (and its progress) moves through the area in an order a person can follow.
import { readFileSync } from 'node:fs';
import { featureIntersects, type Rect } from '../tiles/intersect.js';
import { worldXY } from '../tiles/project.js';
import type { TileCoord } from '../tiles/coords.js';
import type { TileFeature } from '../tiles/vector-model.js';
import type { BBox } from './request.js';

/** The area of a seed, ready to list tiles: its bounding box and, for GeoJSON, its shapes in world units (0..1). */
export interface Coverage {
  bbox: BBox;
  /** Absent: every tile of the bounding box. */
  shapes: TileFeature[] | undefined;
}

export class CoverageError extends Error {}

export const bboxCoverage = (bbox: BBox): Coverage => ({ bbox, shapes: undefined });

type Position = number[];

/** Reads a GeoJSON file (FeatureCollection, Feature or bare geometry); CoverageError says what is wrong with it. */
export function geojsonCoverage(file: string): Coverage {
  let doc: unknown;
  try {
    doc = JSON.parse(readFileSync(file, 'utf8'));
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    throw new CoverageError(`--geojson: cannot read ${file}: ${e.code === 'ENOENT' ? 'no such file' : e instanceof SyntaxError ? 'not JSON' : e.message}`);
  }
  const shapes: TileFeature[] = [];
  let w = Infinity;
  let s = Infinity;
  let e = -Infinity;
  let n = -Infinity;
  const project = (p: Position): [number, number] => {
    if (!Array.isArray(p) || p.length < 2 || !p.every((c) => typeof c === 'number' && Number.isFinite(c))) throw new CoverageError(`--geojson: ${file} has a position that is not [longitude, latitude]`);
    const [lon, lat] = p;
    if (lon < -180 || lon > 180 || lat < -90 || lat > 90) throw new CoverageError(`--geojson: ${file} has a position outside ±180/±90 degrees: [${lon}, ${lat}]`);
    w = Math.min(w, lon);
    e = Math.max(e, lon);
    s = Math.min(s, lat);
    n = Math.max(n, lat);
    return worldXY(lon, lat);
  };
  const flat = (ps: Position[]) => ps.flatMap(project);
  const shape = (type: 1 | 2 | 3, geometry: number[][]) => shapes.push({ id: undefined, type, geometry, properties: Object.create(null) });
  const list = (v: unknown): unknown[] => {
    if (!Array.isArray(v)) throw new CoverageError(`--geojson: ${file} has a geometry without coordinates`);
    return v;
  };
  /** A ring or line: a list of positions, flattened to [x0, y0, x1, y1, ...] in world units. */
  const path = (v: unknown) => flat(list(v) as Position[]);
  const visit = (g: unknown): void => {
    const geom = g as { type?: unknown; coordinates?: unknown; geometries?: unknown; features?: unknown; geometry?: unknown };
    switch (geom?.type) {
      case 'FeatureCollection':
        if (!Array.isArray(geom.features)) throw new CoverageError(`--geojson: ${file}: a FeatureCollection without features`);
        return geom.features.forEach(visit);
      case 'Feature':
        return geom.geometry === null ? undefined : visit(geom.geometry);
      case 'GeometryCollection':
        return list(geom.geometries).forEach(visit);
      case 'Point':
        return void shape(1, [project(list(geom.coordinates) as Position)]);
      case 'MultiPoint':
        return void shape(1, [path(geom.coordinates)]);
      case 'LineString':
        return void shape(2, [path(geom.coordinates)]);
      case 'MultiLineString':
      case 'Polygon':
        return void shape(geom.type === 'Polygon' ? 3 : 2, list(geom.coordinates).map(path));
      case 'MultiPolygon':
        // One shape per polygon: the even-odd test of one polygon must not see another's rings.
        for (const poly of list(geom.coordinates)) shape(3, list(poly).map(path));
        return;
      default:
        throw new CoverageError(`--geojson: ${file}: ${JSON.stringify(String(geom?.type ?? 'no type')).slice(0, 60)} is not a GeoJSON object type`);
    }
  };
  visit(doc);
  if (shapes.length === 0 || w > e) throw new CoverageError(`--geojson: ${file} holds no geometry`);
  return { bbox: [w, s, e, n], shapes };
}

/** The column and row ranges of the tiles meeting a bounding box at zoom z. */
function tileRange(bbox: BBox, z: number): { x0: number; x1: number; y0: number; y1: number } {
  const size = 2 ** z;
  const [wx, ny] = worldXY(bbox[0], bbox[3]);
  const [ex, sy] = worldXY(bbox[2], bbox[1]);
  const clamp = (v: number) => Math.min(size - 1, Math.max(0, v));
  // A box ending exactly on a tile edge does not reach into the next tile.
  return { x0: clamp(Math.floor(wx * size)), x1: clamp(Math.ceil(ex * size) - 1), y0: clamp(Math.floor(ny * size)), y1: clamp(Math.ceil(sy * size) - 1) };
}

function tileMeetsShapes(shapes: readonly TileFeature[], z: number, x: number, y: number): boolean {
  const size = 2 ** z;
  const r: Rect = { minX: x / size, minY: y / size, maxX: (x + 1) / size, maxY: (y + 1) / size };
  return shapes.some((f) => featureIntersects(f, r));
}

/** Every tile of zoom z in the area, rows north to south. */
export function* tilesAt(c: Coverage, z: number): Generator<TileCoord> {
  const { x0, x1, y0, y1 } = tileRange(c.bbox, z);
  for (let y = y0; y <= y1; y++) {
    for (let x = x0; x <= x1; x++) {
      if (c.shapes && !tileMeetsShapes(c.shapes, z, x, y)) continue;
      yield { z, x, y };
    }
  }
}

/** Every tile of the zoom range, zoom by zoom. */
export function* tilesOf(c: Coverage, minZoom: number, maxZoom: number): Generator<TileCoord> {
  for (let z = minZoom; z <= maxZoom; z++) yield* tilesAt(c, z);
}

/** How many tiles each zoom has in the area (what --dry-run prints). */
export function countPerZoom(c: Coverage, minZoom: number, maxZoom: number): Map<number, number> {
  const counts = new Map<number, number>();
  for (let z = minZoom; z <= maxZoom; z++) {
    if (!c.shapes) {
      const r = tileRange(c.bbox, z);
      counts.set(z, (r.x1 - r.x0 + 1) * (r.y1 - r.y0 + 1));
      continue;
    }
    let n = 0;
    for (const _ of tilesAt(c, z)) n++;
    counts.set(z, n);
  }
  return counts;
}
