// Which tiles a seed covers: every tile of a zoom range that meets a bounding box, or that meets the geometries
// of a GeoJSON file (points, lines, polygons; a polygon's holes excluded). Tiles are listed zoom by zoom, rows
// north to south, so a run (and its progress) moves through the area in an order a person can follow; a style's
// seed lists them frame by frame (every tile of one bulk block, then the next), so the tiles of a frame are asked
// for together and drawn in one frame, whose source tiles the page then parses once.
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

/**
 * Every tile of zoom z in the area: by blocks of `frame` x `frame` tiles aligned as the render service aligns its
 * bulk blocks, blocks in rows north to south, and rows north to south within a block (frame 1: plain rows).
 */
export function* tilesAt(c: Coverage, z: number, frame = 1): Generator<TileCoord> {
  const { x0, x1, y0, y1 } = tileRange(c.bbox, z);
  const f = Math.max(1, Math.min(frame, 2 ** z));
  for (let by = Math.floor(y0 / f) * f; by <= y1; by += f) {
    for (let bx = Math.floor(x0 / f) * f; bx <= x1; bx += f) {
      for (let y = Math.max(by, y0); y <= Math.min(by + f - 1, y1); y++) {
        for (let x = Math.max(bx, x0); x <= Math.min(bx + f - 1, x1); x++) {
          if (c.shapes && !tileMeetsShapes(c.shapes, z, x, y)) continue;
          yield { z, x, y };
        }
      }
    }
  }
}

/** Every tile of the zoom range, zoom by zoom (in frames of `frame` tiles: tilesAt). */
export function* tilesOf(c: Coverage, minZoom: number, maxZoom: number, frame = 1): Generator<TileCoord> {
  for (let z = minZoom; z <= maxZoom; z++) yield* tilesAt(c, z, frame);
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
