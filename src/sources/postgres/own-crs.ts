// The own CRS of PostGIS tables stored in an SRID other than 4326 and 3857 (a UTM zone, a national grid), for OGC
// API - Features Part 2: answering in it needs its EPSG axis order (latitude or northing first, or not), which only
// GDAL's OSR knows here. PostGIS's spatial_ref_sys cannot tell: its WKT leaves the EPSG axes out (even 4326's).
// GDAL is asked in the raster pool's thread, the one thread of the process that may load gdal-async.
import type { TileSource } from '../source.js';
import { PgTableSource } from './table.js';
import { log } from '../../log.js';

/** An EPSG code's axis order from GDAL, or null when it does not know the code (RasterPool.epsgAxes). */
export type EpsgAxes = (code: number) => Promise<{ swap: boolean } | null>;

/**
 * Sets `ownCrs` on every table source whose SRID GDAL knows as an EPSG code, asking once per SRID. Only tables in
 * other SRIDs than 0, 4326 and 3857 ask, so a server without such tables never starts GDAL for this. A question
 * that fails (the raster thread could not start) leaves the table's own CRS unlisted, with a warning; the tables
 * are still served and answer in CRS84, EPSG:4326 and EPSG:3857.
 */
export async function learnOwnCrs(sources: readonly TileSource[], ask: EpsgAxes): Promise<void> {
  const tables = sources.flatMap((s) => (s instanceof PgTableSource && ![0, 4326, 3857].includes(s.features.srid) ? [s.features] : []));
  if (tables.length === 0) return;
  const answers = new Map<number, { swap: boolean } | null>();
  for (const srid of new Set(tables.map((t) => t.srid))) {
    answers.set(
      srid,
      await ask(srid).catch((err: unknown) => {
        log.warn({ srid, err: err instanceof Error ? err.message : String(err) }, 'GDAL could not say the axis order of a table SRID: OGC API - Features does not list it as a CRS');
        return null;
      }),
    );
  }
  for (const t of tables) {
    const own = answers.get(t.srid);
    if (own) t.ownCrs = own;
  }
}
