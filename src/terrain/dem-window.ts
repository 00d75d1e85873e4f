// The one input every terrain product reads: elevations resampled onto the web-mercator pixel grid of one XYZ
// tile, with a border of pixels from the neighbouring tiles. Slopes (hillshade) and isolines (contours) need
// the neighbours' pixels at the tile edge, or adjacent tiles would disagree there and show a seam; the border
// carries them, so the products stay pure functions of one window.

/** Elevations in metres on a grid of web-mercator pixels: one tile of the XYZ grid plus a border on each side. */
export interface DemWindow {
  z: number;
  x: number;
  y: number;
  /** Pixels per tile side (256 or 512). */
  size: number;
  /** Pixels of border on each side, read from the neighbouring data (0 allowed). */
  border: number;
  /** (size + 2*border)^2 elevations, row-major, north row first; NaN where there is no data. */
  data: Float32Array;
}

/** Half the width of the web-mercator world, in projected metres. */
export const MERCATOR_HALF_WIDTH = 20037508.342789244;
const EARTH_RADIUS = 6378137;

/** Width (and height) of tile z/x/y in projected metres. */
export function tileSpan(z: number): number {
  return (2 * MERCATOR_HALF_WIDTH) / 2 ** z;
}

/** Pixels per side of the window, border included. */
export function windowWidth(win: Pick<DemWindow, 'size' | 'border'>): number {
  return win.size + 2 * win.border;
}

/** Web-mercator x, y (metres) of the centre of window pixel (col, row); col and row count the border. */
export function pixelCentreMercator(win: DemWindow, col: number, row: number): [number, number] {
  const span = tileSpan(win.z);
  const px = span / win.size;
  const minX = -MERCATOR_HALF_WIDTH + win.x * span;
  const maxY = MERCATOR_HALF_WIDTH - win.y * span;
  return [minX + (col - win.border + 0.5) * px, maxY - (row - win.border + 0.5) * px];
}

/** Longitude and latitude (degrees, WGS84) of the centre of window pixel (col, row). */
export function pixelCentreLonLat(win: DemWindow, col: number, row: number): [number, number] {
  const [mx, my] = pixelCentreMercator(win, col, row);
  const lon = (mx / EARTH_RADIUS) * (180 / Math.PI);
  const lat = (2 * Math.atan(Math.exp(my / EARTH_RADIUS)) - Math.PI / 2) * (180 / Math.PI);
  return [lon, lat];
}

/**
 * Ground size in metres of one pixel on window row `row`: mercator stretches distances by 1/cos(latitude), so a
 * pixel that spans span/size projected metres covers that times cos(latitude) on the ground (sphere scale; the
 * ellipsoid would change it by well under 1 %).
 */
export function pixelGroundSize(win: DemWindow, row: number): number {
  const lat = pixelCentreLonLat(win, win.border, row)[1];
  return (tileSpan(win.z) / win.size) * Math.cos((lat * Math.PI) / 180);
}
