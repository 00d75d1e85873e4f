// A data file's CRS read by GDAL's OSR, for src/sources/files/crs.ts: runs in the raster pool's thread
// (workers/raster.ts), the one thread of the process that may load gdal-async (src/sources/raster/pool.ts says
// why). The answer is a PROJ string, which the HTTP thread hands to proj4js for the coordinates themselves.
import gdal from 'gdal-async';

/** What GDAL made of a CRS: its PROJ string (east, north), and whether it is longitude/latitude on WGS84 already. */
export interface CrsReading {
  proj4: string;
  lonLat: boolean;
}

const WGS84 = '+proj=longlat +datum=WGS84 +no_defs';

/**
 * The PROJ string of `input` (an AUTHORITY:CODE, WKT or PROJJSON), or, when GDAL cannot read it, of `fallback`
 * (a file's own definition beside a code GDAL does not know). Throws Error with a one-line reason otherwise.
 */
export function readCrs(input: string, fallback?: string): CrsReading {
  let own: gdal.SpatialReference;
  try {
    own = gdal.SpatialReference.fromProj4(gdal.SpatialReference.fromUserInput(input).toProj4());
  } catch {
    if (fallback === undefined || fallback === input) throw new Error(`GDAL cannot read its CRS ${input.slice(0, 80)}`);
    try {
      own = gdal.SpatialReference.fromProj4(gdal.SpatialReference.fromUserInput(fallback).toProj4());
    } catch {
      throw new Error(`GDAL cannot read its CRS ${input.slice(0, 80)}`);
    }
  }
  return { proj4: own.toProj4().trim(), lonLat: own.isSame(gdal.SpatialReference.fromProj4(WGS84)) };
}
