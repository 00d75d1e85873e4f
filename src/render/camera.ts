// Web Mercator geometry of a frame, in MapLibre's conventions: the world is 512 px wide at zoom 0, bearing
// turns the map clockwise (the camera heads `bearing` degrees east of north), pitch tilts it away from the
// viewer with a 36.87° vertical field of view. Overlays are projected with this, so they sit where the
// renderer draws the map under them.

export const TILE_SIZE = 512;
export const MAX_LATITUDE = 85.0511287798066;
/** MapLibre's default vertical field of view (radians): the camera is 1.5 frame heights from the centre. */
const FOV = 0.6435011087932844;

export interface Camera {
  center: [number, number];
  zoom: number;
  bearing: number;
  pitch: number;
  /** CSS pixels. */
  width: number;
  height: number;
}

const clamp = (lat: number, limit: number) => Math.max(-limit, Math.min(limit, lat));

/**
 * Mercator x, y (y down; [0, 1] inside the world) of a longitude/latitude. Like MapLibre's, latitudes beyond
 * the world's edge (±85.05°) project beyond it; only the poles themselves, at infinity, are held back.
 */
export function mercator(lon: number, lat: number): [number, number] {
  const phi = (clamp(lat, 89.9999) * Math.PI) / 180;
  return [(lon + 180) / 360, (1 - Math.log(Math.tan(Math.PI / 4 + phi / 2)) / Math.PI) / 2];
}

/** Longitude/latitude of mercator x, y in [0, 1]. */
export function unmercator(x: number, y: number): [number, number] {
  const lon = x * 360 - 180;
  const lat = (Math.atan(Math.sinh(Math.PI * (1 - 2 * y))) * 180) / Math.PI;
  return [lon, lat];
}

export const worldSize = (zoom: number) => TILE_SIZE * 2 ** zoom;

/**
 * Screen position (CSS pixels from the top-left corner) of a longitude/latitude, or undefined when the point is
 * behind the camera. `wrap` shifts the longitude by whole worlds (for drawing a geometry on the world copy
 * nearest the centre).
 */
export function project(cam: Camera, lon: number, lat: number, wrap = 0): [number, number] | undefined {
  const ws = worldSize(cam.zoom);
  const [cx, cy] = mercator(cam.center[0], cam.center[1]);
  const [px, py] = mercator(lon + wrap * 360, lat);
  const dx = (px - cx) * ws;
  const dy = (py - cy) * ws;
  const b = (cam.bearing * Math.PI) / 180;
  const rx = dx * Math.cos(b) + dy * Math.sin(b);
  const ry = -dx * Math.sin(b) + dy * Math.cos(b);
  if (cam.pitch === 0) return [cam.width / 2 + rx, cam.height / 2 + ry];
  const p = (cam.pitch * Math.PI) / 180;
  const d = (0.5 / Math.tan(FOV / 2)) * cam.height;
  const depth = d - ry * Math.sin(p);
  if (depth <= 1e-6) return undefined;
  return [cam.width / 2 + (d * rx) / depth, cam.height / 2 + (d * ry * Math.cos(p)) / depth];
}

/** The number of whole worlds to shift a longitude by so that it is nearest the camera's centre longitude. */
export function nearestWrap(cam: Camera, lon: number): number {
  return Math.round((cam.center[0] - lon) / 360);
}

export interface Bounds {
  west: number;
  south: number;
  east: number;
  north: number;
}

/**
 * Centre and zoom that fit `b` into a width x height frame (bearing and pitch 0), leaving `padding` (a fraction
 * of each dimension) free on every side, with the zoom at most `maxZoom`. A west edge east of the east edge
 * means the box crosses the antimeridian. A box without extent (one point) gets `maxZoom`.
 */
export function fitBounds(b: Bounds, width: number, height: number, padding: number, maxZoom: number, minZoom = 0): { center: [number, number]; zoom: number } {
  const east = b.east < b.west ? b.east + 360 : b.east;
  // A box reaching towards a pole is fitted to the world's edge, not to the unreachable pole.
  const [x0, y0] = mercator(b.west, clamp(b.north, MAX_LATITUDE));
  const [x1, y1] = mercator(east, clamp(b.south, MAX_LATITUDE));
  const [lon, lat] = unmercator((x0 + x1) / 2, (y0 + y1) / 2);
  const center: [number, number] = [lon > 180 ? lon - 360 : lon, lat];
  const spanX = (x1 - x0) * TILE_SIZE;
  const spanY = (y1 - y0) * TILE_SIZE;
  const availW = Math.max(1, width * (1 - 2 * padding));
  const availH = Math.max(1, height * (1 - 2 * padding));
  const fits = [spanX > 0 ? Math.log2(availW / spanX) : Infinity, spanY > 0 ? Math.log2(availH / spanY) : Infinity];
  const zoom = Math.min(maxZoom, ...fits);
  return { center, zoom: Math.max(minZoom, zoom) };
}

/** A camera moved by (dx, dy) screen pixels (bearing respected, pitch must be 0): the centre of a sub-frame. */
export function offsetCenter(cam: Camera, dx: number, dy: number): [number, number] {
  const ws = worldSize(cam.zoom);
  const b = (cam.bearing * Math.PI) / 180;
  // Inverse of the rotation in `project`.
  const wx = dx * Math.cos(b) - dy * Math.sin(b);
  const wy = dx * Math.sin(b) + dy * Math.cos(b);
  const [cx, cy] = mercator(cam.center[0], cam.center[1]);
  return unmercator(cx + wx / ws, cy + wy / ws);
}
