// OGC API - Features Part 2 (OGC 18-058r1, "Coordinate Reference Systems by Reference"): the CRSs a collection of
// features answers in and takes bboxes and (writable tables) bodies in, named by their OGC URIs. A PostGIS table
// lists CRS84, EPSG:4326, EPSG:3857 and its own SRID (its storageCrs); PostGIS transforms in the statement. A
// layer of a data file lists CRS84 only: its features come out of the reader in longitude/latitude and nothing
// transforms them, and a collection lists only the CRSs it can really answer in (docs/ogc.md).
//
// Axis order: Part 2 asks for the coordinates in the order the CRS defines. CRS84 is longitude, latitude; EPSG:4326
// is latitude, longitude; EPSG:3857 is easting, northing. PostGIS keeps x = longitude (easting) whatever the CRS,
// so EPSG:4326 is answered with its axes swapped.
//
// A table stored in another SRID (a UTM zone, a national grid) is answered in these three and in its own CRS, which
// is its storageCrs, when GDAL knows the SRID as an EPSG code: the axis order of an arbitrary EPSG code needs
// GDAL's OSR, asked once per SRID when the state is built (src/sources/postgres/own-crs.ts), in the raster pool's
// thread, since gdal-async may load in one thread per process only (loaded here, it broke every raster source of
// the process). PostGIS's spatial_ref_sys cannot say it: its WKT leaves the EPSG axes out (4326 and SWEREF99 TM
// carry no AXIS). docs/ogc.md says so.
import type { FeatureCollectionOf } from './feature-collections.js';
import { CRS84 } from './tms.js';

/** The OGC URI of an EPSG code's CRS. */
export const epsgUri = (code: number) => `http://www.opengis.net/def/crs/EPSG/0/${code}`;

/** A CRS a collection offers: its URI, the PostGIS SRID of its coordinates, and whether its first axis is y. */
export interface Crs {
  uri: string;
  srid: number;
  /** The CRS's first axis is latitude or northing: positions are [y, x] in it, [x, y] in PostGIS. */
  swap: boolean;
}

export const CRS84_ENTRY: Crs = { uri: CRS84, srid: 4326, swap: false };
export const EPSG_4326: Crs = { uri: epsgUri(4326), srid: 4326, swap: true };
export const EPSG_3857: Crs = { uri: epsgUri(3857), srid: 3857, swap: false };

/** Half the side of EPSG:3857's square, in metres (pi times the sphere's radius). */
export const MERCATOR_HALF = Math.PI * 6378137;

/**
 * The CRSs a PostGIS table with geometries in `srid` answers in, CRS84 first, and its storage CRS: the table's
 * SRID, listed last when it is another than 4326 and 3857 and `own` (GDAL's axis order of it) is known, else none
 * (Part 2 makes storageCrs optional).
 */
export function tableCrss(srid: number, own?: { swap: boolean }): { list: Crs[]; storage: Crs | undefined } {
  const list = [CRS84_ENTRY, EPSG_4326, EPSG_3857];
  if (srid === 4326) return { list, storage: EPSG_4326 };
  if (srid === 3857) return { list, storage: EPSG_3857 };
  if (!own) return { list, storage: undefined };
  const crs: Crs = { uri: epsgUri(srid), srid, swap: own.swap };
  return { list: [...list, crs], storage: crs };
}

/** What a data-file layer answers in: CRS84 only. */
export const FILE_CRSS: { list: Crs[]; storage: Crs } = { list: [CRS84_ENTRY], storage: CRS84_ENTRY };

/**
 * The listed CRS a parameter or header names, or undefined. The value is the URI exactly as listed; a header
 * (Content-Crs) writes it in angle brackets, which are taken off (and spaces around it).
 */
export function crsNamed(list: readonly Crs[], text: string): Crs | undefined {
  const trimmed = text.trim();
  const uri = trimmed.startsWith('<') && trimmed.endsWith('>') ? trimmed.slice(1, -1).trim() : trimmed;
  return list.find((c) => c.uri === uri);
}

/** The Content-Crs header value of coordinates in `crs`. */
export const contentCrs = (crs: Crs) => `<${crs.uri}>`;

/** A bbox given in `crs` (its axis order, 4 numbers) as x/y: west, south, east, north. */
export function bboxToXy(bbox: readonly number[], crs: Crs): [number, number, number, number] {
  const [a, b, c, d] = bbox;
  return crs.swap ? [b, a, d, c] : [a, b, c, d];
}

/** Whether coordinates in `crs` are longitude/latitude degrees (CRS84, EPSG:4326). */
export const isLonLat = (crs: Crs) => crs.srid === 4326;

/** The CRSs a collection of features offers (a table's per its SRID, a file layer's CRS84 only). */
export function collectionCrss(t: FeatureCollectionOf): { list: Crs[]; storage: Crs | undefined } {
  return t.kind === 'table' ? tableCrss(t.source.features.srid, t.source.features.ownCrs) : FILE_CRSS;
}
