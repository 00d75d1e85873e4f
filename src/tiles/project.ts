// Web Mercator conversions between longitude/latitude and positions inside a tile, in tile units.
const MAX_LAT = 85.0511287798066;

/** Fractional world position (0..1 on both axes, y down) of a longitude/latitude. */
export function worldXY(lon: number, lat: number): [number, number] {
  const phi = (Math.max(-MAX_LAT, Math.min(MAX_LAT, lat)) * Math.PI) / 180;
  return [(lon + 180) / 360, (1 - Math.log(Math.tan(phi) + 1 / Math.cos(phi)) / Math.PI) / 2];
}

/** A projection from tile units of tile z/x/y (extent `extent`) to longitude/latitude, rounded to 1e-7 degrees. */
export function tileUnitsToLonLat(z: number, x: number, y: number, extent: number): (px: number, py: number) => [number, number] {
  const n = 2 ** z;
  const round = (v: number) => Math.round(v * 1e7) / 1e7;
  return (px, py) => {
    const lon = ((x + px / extent) / n) * 360 - 180;
    const lat = (Math.atan(Math.sinh(Math.PI * (1 - (2 * (y + py / extent)) / n))) * 180) / Math.PI;
    return [round(lon), round(lat)];
  };
}

/** A longitude/latitude as tile units of tile z/x/y (may fall outside 0..extent). */
export function lonLatToTileUnits(lon: number, lat: number, z: number, x: number, y: number, extent: number): [number, number] {
  const n = 2 ** z;
  const [wx, wy] = worldXY(lon, lat);
  return [(wx * n - x) * extent, (wy * n - y) * extent];
}
