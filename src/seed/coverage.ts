// Which tiles a seed covers: every tile of a zoom range that meets a bounding box, or that meets the geometries
// of a GeoJSON file (points, lines, polygons; a polygon's holes excluded). Tiles are listed zoom by zoom, rows
// north to south, so a run (and its progress) moves through the area in an order a person can follow.
import { readFileSync } from 'node:fs';
import { GeoAreaError, geojsonArea, tileMeetsShapes, tileRange, type GeoArea } from '../tiles/geo-area.js';
import type { TileCoord } from '../tiles/coords.js';
import type { BBox } from './request.js';

/** The area of a seed, ready to list tiles: its bounding box and, for GeoJSON, its shapes in world units (0..1). */
export type Coverage = GeoArea;

export { GeoAreaError as CoverageError };

export const bboxCoverage = (bbox: BBox): Coverage => ({ bbox, shapes: undefined });

/** Reads a GeoJSON file (FeatureCollection, Feature or bare geometry); CoverageError says what is wrong with it. */
export function geojsonCoverage(file: string): Coverage {
  let doc: unknown;
  try {
    doc = JSON.parse(readFileSync(file, 'utf8'));
  } catch (err) {
    const e = err as NodeJS.ErrnoException;
    throw new GeoAreaError(`--geojson: cannot read ${file}: ${e.code === 'ENOENT' ? 'no such file' : e instanceof SyntaxError ? 'not JSON' : e.message}`);
  }
  return geojsonArea(doc, `--geojson: ${file}`);
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
