// Synthetic DEM windows for the terrain tests: an elevation function of ground position sampled at the pixel
// centres of a tile window, so every test knows the exact surface its answers come from.
import { type DemWindow, MERCATOR_HALF_WIDTH, tileSpan } from '../../src/terrain/dem-window.js';

/** Metres east and south of the tile's north-west corner, in mercator metres (not ground metres). */
export type Surface = (east: number, south: number) => number;

export function sampleWindow(z: number, x: number, y: number, size: number, border: number, surface: Surface): DemWindow {
  const w = size + 2 * border;
  const px = tileSpan(z) / size;
  const data = new Float32Array(w * w);
  for (let row = 0; row < w; row++) {
    for (let col = 0; col < w; col++) data[row * w + col] = surface((col - border + 0.5) * px, (row - border + 0.5) * px);
  }
  return { z, x, y, size, border, data };
}

/** The same surface seen from tile (x + dx, y + dy): positions shifted so both windows sample one landscape. */
export function shifted(surface: Surface, z: number, dx: number, dy: number): Surface {
  const span = tileSpan(z);
  return (east, south) => surface(east + dx * span, south + dy * span);
}

/** Mercator y of the north edge of tile row y at zoom z. */
export function tileNorth(z: number, y: number): number {
  return MERCATOR_HALF_WIDTH - y * tileSpan(z);
}
