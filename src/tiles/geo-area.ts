// An area on the map given as a bounding box or as GeoJSON, and the tiles of one zoom it touches. Shared by
// seeding (which tiles to make) and expiry (which tiles changed): both need "the tiles a geometry meets", never
// its box, with a polygon's holes left out. Shapes are kept in world units (0..1 on both axes, y down), so one
// test serves every zoom; latitudes beyond Web Mercator's ±85.05° fall on the edge rows (worldXY clamps them).
import { featureIntersects, type Rect } from './intersect.js';
import { worldXY } from './project.js';
import type { TileFeature } from './vector-model.js';

/** West, south, east, north in degrees (EPSG:4326). */
export type BBox = [west: number, south: number, east: number, north: number];

/** An area ready to list tiles: its bounding box and, for GeoJSON, its shapes in world units. */
export interface GeoArea {
  bbox: BBox;
  /** Absent: every tile of the bounding box. */
  shapes: TileFeature[] | undefined;
}

/** What is wrong with a GeoJSON document, its message starting with the caller's name for the document. */
export class GeoAreaError extends Error {}

type Position = number[];

/**
 * The area of a GeoJSON value: a FeatureCollection, a Feature or a bare geometry (every geometry type, nested
 * collections included). `where` names the document in messages (`--geojson: FILE`, `geometry`).
 */
export function geojsonArea(doc: unknown, where: string): GeoArea {
  const shapes: TileFeature[] = [];
  let w = Infinity;
  let s = Infinity;
  let e = -Infinity;
  let n = -Infinity;
  const project = (p: Position): [number, number] => {
    if (!Array.isArray(p) || p.length < 2 || !p.every((c) => typeof c === 'number' && Number.isFinite(c))) throw new GeoAreaError(`${where} has a position that is not [longitude, latitude]`);
    const [lon, lat] = p;
    if (lon < -180 || lon > 180 || lat < -90 || lat > 90) throw new GeoAreaError(`${where} has a position outside ±180/±90 degrees: [${lon}, ${lat}]`);
    w = Math.min(w, lon);
    e = Math.max(e, lon);
    s = Math.min(s, lat);
    n = Math.max(n, lat);
    return worldXY(lon, lat);
  };
  const shape = (type: 1 | 2 | 3, geometry: number[][]) => shapes.push({ id: undefined, type, geometry, properties: Object.create(null) });
  const list = (v: unknown): unknown[] => {
    if (!Array.isArray(v)) throw new GeoAreaError(`${where} has a geometry without coordinates`);
    return v;
  };
  /** A ring or line: a list of positions, flattened to [x0, y0, x1, y1, ...] in world units. */
  const path = (v: unknown) => (list(v) as Position[]).flatMap(project);
  const visit = (g: unknown): void => {
    const geom = g as { type?: unknown; coordinates?: unknown; geometries?: unknown; features?: unknown; geometry?: unknown };
    switch (geom?.type) {
      case 'FeatureCollection':
        if (!Array.isArray(geom.features)) throw new GeoAreaError(`${where}: a FeatureCollection without features`);
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
        throw new GeoAreaError(`${where}: ${JSON.stringify(String(geom?.type ?? 'no type')).slice(0, 60)} is not a GeoJSON object type`);
    }
  };
  visit(doc);
  if (shapes.length === 0 || w > e) throw new GeoAreaError(`${where} holds no geometry`);
  return { bbox: [w, s, e, n], shapes };
}

/** The column and row ranges of the tiles meeting a bounding box at zoom z. */
export function tileRange(bbox: BBox, z: number): { x0: number; x1: number; y0: number; y1: number } {
  const size = 2 ** z;
  const [wx, ny] = worldXY(bbox[0], bbox[3]);
  const [ex, sy] = worldXY(bbox[2], bbox[1]);
  const clamp = (v: number) => Math.min(size - 1, Math.max(0, v));
  // A box ending exactly on a tile edge does not reach into the next tile; a box of no width still has its tile.
  const x0 = clamp(Math.floor(wx * size));
  const y0 = clamp(Math.floor(ny * size));
  return { x0, x1: Math.max(x0, clamp(Math.ceil(ex * size) - 1)), y0, y1: Math.max(y0, clamp(Math.ceil(sy * size) - 1)) };
}

/** Whether tile z/x/y meets one of the shapes (its edges included). */
export function tileMeetsShapes(shapes: readonly TileFeature[], z: number, x: number, y: number): boolean {
  const size = 2 ** z;
  const r: Rect = { minX: x / size, minY: y / size, maxX: (x + 1) / size, maxY: (y + 1) / size };
  return shapes.some((f) => featureIntersects(f, r));
}

/** The number of tiles of zoom z in the area's bounding box (an upper bound of the tiles it touches). */
export function boxTileCount(bbox: BBox, z: number): number {
  const r = tileRange(bbox, z);
  return (r.x1 - r.x0 + 1) * (r.y1 - r.y0 + 1);
}
