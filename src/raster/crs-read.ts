// What GDAL's OSR says about a CRS, asked from the HTTP thread but answered in the raster pool's thread
// (workers/raster.ts), the one thread of the process that may load gdal-async (src/sources/raster/pool.ts says
// why): a data file's CRS as a PROJ string, which the HTTP thread hands to proj4js for the coordinates themselves
// (src/sources/files/crs.ts), and the axis order of a PostGIS table's EPSG code, which OGC API - Features Part 2
// answers in (src/ogc/crs.ts).
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

/**
 * Whether EPSG `code`'s definition puts latitude or northing first (as EPSG:4326 and many national grids do), or
 * null when GDAL has no such EPSG code (a custom SRID of spatial_ref_sys has no EPSG URI to be named by).
 */
export function epsgAxes(code: number): { swap: boolean } | null {
  let ref: gdal.SpatialReference;
  try {
    ref = gdal.SpatialReference.fromEPSGA(code);
  } catch {
    return null;
  }
  return { swap: ref.EPSGTreatsAsLatLong() || ref.EPSGTreatsAsNorthingEasting() };
}
