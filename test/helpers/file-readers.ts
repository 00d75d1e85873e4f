// What the FlatGeobuf and GeoParquet reader tests share: the reference features (GDAL's reading of a file as
// GeoJSON, or the GeoJSON a file was written from), reading a reader to the end, and the comparison: the same
// features in the same order, coordinates within 1e-9 degrees, the same properties (nulls left out, as tiles
// leave them out) and the same ids.
import assert from 'node:assert/strict';
import type { CrsReader } from '../../src/sources/files/crs.js';
import { readFileSync } from 'node:fs';
import type { Feature, Geometry, Position } from 'geojson';
import * as v from 'valibot';
import { StorageSchema } from '../../src/config/schema.js';
import type { FeatureReader, FileFeature } from '../../src/sources/files/reader.js';
import { gdalTool } from './gdal.js';
import { geometryBox } from './city-collection.js';

export const STORAGE = v.parse(StorageSchema, {});

/**
 * GDAL's reading of a projected file's CRS, as the server's raster thread does it (src/raster/crs-read.ts), here
 * in the test's own thread: a test process of readers has no raster pool, so GDAL may load in it.
 */
export const readCrs: CrsReader = async (input, fallback) => (await import('../../src/raster/crs-read.js')).readCrs(input, fallback);

/** GDAL's features of a file, as `ogr2ogr -f GeoJSON` writes them (extra arguments such as -t_srs before the file). */
export function gdalFeatures(file: string, extra: string[] = []): Feature[] {
  const out = `${file}.gdal-${extra.join('_').replace(/[^\w]/g, '')}.geojson`;
  const r = gdalTool('ogr2ogr', ['-f', 'GeoJSON', out, ...extra, file]);
  assert.equal(r.status, 0, r.stderr);
  return (JSON.parse(readFileSync(out, 'utf8')) as { features: Feature[] }).features;
}

export async function readAll(reader: FeatureReader, layer: string, bbox?: [number, number, number, number]): Promise<FileFeature[]> {
  const out: FileFeature[] = [];
  for await (const f of reader.features(layer, bbox)) out.push(f);
  return out;
}

/** Whether a feature's bounding box meets `bbox` (west, south, east, north; edges count). */
export function meets(g: Geometry, bbox: readonly number[]): boolean {
  const b = geometryBox(g);
  return b[0] <= bbox[2] && b[2] >= bbox[0] && b[1] <= bbox[3] && b[3] >= bbox[1];
}

function samePositions(a: unknown, b: unknown, where: string): void {
  if (typeof a === 'number' || typeof b === 'number') {
    assert.ok(typeof a === 'number' && typeof b === 'number' && Math.abs(a - b) <= 1e-9, `${where}: ${String(a)} vs ${String(b)}`);
    return;
  }
  assert.ok(Array.isArray(a) && Array.isArray(b), `${where}: not both arrays`);
  const pa = a as Position[];
  const pb = b as Position[];
  // Positions: x and y only (the readers drop Z and M).
  const n = typeof pa[0] === 'number' ? 2 : pa.length;
  assert.equal(typeof pa[0] === 'number' ? Math.min(pa.length, 2) : pa.length, typeof pb[0] === 'number' ? Math.min(pb.length, 2) : pb.length, `${where}: lengths`);
  for (let i = 0; i < n; i++) samePositions(pa[i], pb[i], `${where}[${i}]`);
}

export function sameGeometry(a: Geometry, b: Geometry, where: string): void {
  assert.equal(a.type, b.type, `${where}: geometry type`);
  if (a.type === 'GeometryCollection' && b.type === 'GeometryCollection') {
    assert.equal(a.geometries.length, b.geometries.length, `${where}: parts`);
    a.geometries.forEach((g, i) => sameGeometry(g, b.geometries[i], `${where}.${i}`));
    return;
  }
  samePositions((a as { coordinates: unknown }).coordinates, (b as { coordinates: unknown }).coordinates, where);
}

const withoutNulls = (p: Record<string, unknown> | null) => Object.fromEntries(Object.entries(p ?? {}).filter(([, x]) => x !== null && x !== undefined));

/**
 * The reader's features are the expected ones: order, geometry, properties, and ids (`expectedId` of each
 * expected feature; undefined: the reader must give none).
 */
export function assertSameFeatures(actual: FileFeature[], expected: Feature[], expectedId: (f: Feature) => number | undefined, what: string): void {
  assert.equal(actual.length, expected.length, `${what}: feature count`);
  actual.forEach((f, i) => {
    const e = expected[i];
    sameGeometry(f.geometry, e.geometry, `${what} #${i}`);
    assert.deepEqual(f.properties, withoutNulls(e.properties), `${what} #${i}: properties`);
    assert.equal(f.id, expectedId(e), `${what} #${i}: id`);
  });
}
