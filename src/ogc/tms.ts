// The WebMercatorQuad tile matrix set (OGC Two Dimensional Tile Matrix Set 2.0, the registered definition of
// web mercator tiles), and the tile matrix limits of a bounding box in it.
import { lonLatToTile } from '../tiles/coords.js';
import type { Bounds } from '../sources/source.js';

export const TMS_ID = 'WebMercatorQuad';
export const TMS_URI = 'http://www.opengis.net/def/tilematrixset/OGC/1.0/WebMercatorQuad';
export const CRS_3857 = 'http://www.opengis.net/def/crs/EPSG/0/3857';
export const CRS84 = 'http://www.opengis.net/def/crs/OGC/1.3/CRS84';
/** The registered set has matrices 0..24; tiles here go to zoom 22 (the service's limit), which limits say. */
export const TMS_MAX_MATRIX = 24;

/** Half the width of the web mercator world in metres (πR with the WGS84 semi-major axis). */
const HALF_WORLD = Math.PI * 6378137;
/** The standardized rendering pixel, 0.28 mm: scale denominators are cell sizes over it. */
const PIXEL_METRES = 0.00028;

export interface TileMatrix {
  id: string;
  /** The draft encoding's name of `id` (see webMercatorQuad). */
  identifier: string;
  scaleDenominator: number;
  cellSize: number;
  cornerOfOrigin: 'topLeft';
  pointOfOrigin: [number, number];
  /** The draft encoding's name of `pointOfOrigin`. */
  topLeftCorner: [number, number];
  tileWidth: number;
  tileHeight: number;
  matrixWidth: number;
  matrixHeight: number;
}

function matrix(z: number): TileMatrix {
  const cellSize = (2 * HALF_WORLD) / 256 / 2 ** z;
  return {
    id: String(z),
    identifier: String(z),
    scaleDenominator: cellSize / PIXEL_METRES,
    cellSize,
    cornerOfOrigin: 'topLeft',
    pointOfOrigin: [-HALF_WORLD, HALF_WORLD],
    topLeftCorner: [-HALF_WORLD, HALF_WORLD],
    tileWidth: 256,
    tileHeight: 256,
    matrixWidth: 2 ** z,
    matrixHeight: 2 ** z,
  };
}

/**
 * The TMS 2.0 JSON encoding. It also carries the three members of the draft encoding (`identifier`,
 * `supportedCRS`, and per matrix `identifier` and `topLeftCorner`) that GDAL before 3.7 reads instead of `id`,
 * `crs` and `pointOfOrigin`: Debian 12's GDAL (3.6) cannot open the tilesets otherwise. Extra members are allowed.
 */
export function webMercatorQuad(): Record<string, unknown> {
  return {
    id: TMS_ID,
    identifier: TMS_ID,
    supportedCRS: CRS_3857,
    title: 'Google Maps Compatible for the World',
    uri: TMS_URI,
    crs: CRS_3857,
    orderedAxes: ['X', 'Y'],
    wellKnownScaleSet: 'http://www.opengis.net/def/wkss/OGC/1.0/GoogleMapsCompatible',
    boundingBox: { lowerLeft: [-HALF_WORLD, -HALF_WORLD], upperRight: [HALF_WORLD, HALF_WORLD], crs: CRS_3857 },
    tileMatrices: Array.from({ length: TMS_MAX_MATRIX + 1 }, (_, z) => matrix(z)),
  };
}

export interface TileMatrixLimits {
  tileMatrix: string;
  minTileRow: number;
  maxTileRow: number;
  minTileCol: number;
  maxTileCol: number;
}

/**
 * The rows and columns of each zoom in minzoom..maxzoom that a bounding box touches; without bounds (a source
 * whose tiles exist everywhere), whole matrices. Bounds across the antimeridian take every column.
 */
export function tileMatrixLimits(bounds: Bounds | undefined, minzoom: number, maxzoom: number): TileMatrixLimits[] {
  const out: TileMatrixLimits[] = [];
  for (let z = minzoom; z <= maxzoom; z++) {
    const last = 2 ** z - 1;
    if (!bounds) {
      out.push({ tileMatrix: String(z), minTileRow: 0, maxTileRow: last, minTileCol: 0, maxTileCol: last });
      continue;
    }
    const nw = lonLatToTile(bounds[0], bounds[3], z);
    const se = lonLatToTile(bounds[2], bounds[1], z);
    const wraps = bounds[0] > bounds[2];
    out.push({ tileMatrix: String(z), minTileRow: nw.y, maxTileRow: se.y, minTileCol: wraps ? 0 : nw.x, maxTileCol: wraps ? last : se.x });
  }
  return out;
}

/** Whether a tile lies inside the limits of its matrix. */
export function withinLimits(limits: readonly TileMatrixLimits[], z: number, row: number, col: number): boolean {
  const l = limits.find((m) => m.tileMatrix === String(z));
  return l !== undefined && row >= l.minTileRow && row <= l.maxTileRow && col >= l.minTileCol && col <= l.maxTileCol;
}
