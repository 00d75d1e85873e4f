// Real features for the data-file sources' tests and bench: the OpenMapTiles tile of central Dortmund
// (fixtures/vector/omt-tiles/13_4265_5468.mvt, XYZ 13/4265/2723) decoded into longitude/latitude, one GeoJSON file
// per layer, then written as a GeoPackage and loaded into PostGIS with GDAL's ogr2ogr, so every format holds the
// same rows. Feature ids are 1..n per layer (GeoJSON `id`, the GeoPackage FID, the PostGIS `fid` column).
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { decodeMvt } from '../../src/tiles/mvt-decode.js';
import { featureGeometry } from '../../src/tiles/geojson.js';
import { tileUnitsToLonLat } from '../../src/tiles/project.js';
import { gdalTool } from './gdal.js';
import { fixture } from './server.js';

export const CITY_TILE = { z: 13, x: 4265, y: 2723 } as const;
/** The layers written: lines, polygons and points. */
export const CITY_LAYERS = ['transportation', 'building', 'place'] as const;

export interface CityFiles {
  /** layer → its GeoJSON file */
  geojson: Record<string, string>;
  gpkg: string;
  /** Features per layer. */
  counts: Record<string, number>;
}

/**
 * Writes the GeoJSON files and the GeoPackage into `dir`. Transportation features get a boolean `tunnel`
 * (brunnel = "tunnel"; absent where brunnel is), so filters have a property of each type.
 */
export function writeCityFiles(dir: string): CityFiles {
  const tile = decodeMvt(readFileSync(fixture('vector/omt-tiles/13_4265_5468.mvt')));
  const geojson: Record<string, string> = {};
  const counts: Record<string, number> = {};
  const gpkg = path.join(dir, 'city.gpkg');
  for (const name of CITY_LAYERS) {
    const layer = tile.find((l) => l.name === name);
    if (!layer) throw new Error(`the Dortmund tile has no layer ${name}`);
    const project = tileUnitsToLonLat(CITY_TILE.z, CITY_TILE.x, CITY_TILE.y, layer.extent);
    const features = layer.features.map((f, i) => {
      const properties: Record<string, unknown> = {};
      for (const [k, v] of Object.entries(f.properties)) properties[k] = typeof v === 'bigint' ? Number(v) : v;
      if (name === 'transportation' && typeof properties.brunnel === 'string') properties.tunnel = properties.brunnel === 'tunnel';
      return { type: 'Feature', id: i + 1, geometry: featureGeometry(f, project), properties };
    });
    const file = path.join(dir, `${name}.geojson`);
    writeFileSync(file, JSON.stringify({ type: 'FeatureCollection', features }));
    geojson[name] = file;
    counts[name] = features.length;
    const r = gdalTool('ogr2ogr', ['-f', 'GPKG', ...(Object.keys(geojson).length > 1 ? ['-update'] : []), gpkg, file, '-nln', name, '-preserve_fid']);
    if (r.status !== 0) throw new Error(`ogr2ogr GPKG ${name}: ${r.stderr}`);
  }
  return { geojson, gpkg, counts };
}

/** Loads each layer's GeoJSON into PostGIS as table `<layer>` (columns named as the properties, `fid`, `geometry`). */
export function loadCityIntoPostgis(files: CityFiles, url: string): void {
  const u = new URL(url);
  const pgConn = `PG:host=${u.hostname} port=${u.port} user=${u.username} dbname=${u.pathname.slice(1)}`;
  for (const [name, file] of Object.entries(files.geojson)) {
    const r = gdalTool('ogr2ogr', ['-f', 'PostgreSQL', pgConn, file, '-nln', name, '-preserve_fid', '-lco', 'FID=fid', '-lco', 'GEOMETRY_NAME=geometry', '-lco', 'LAUNDER=NO', '-lco', 'SPATIAL_INDEX=GIST', '-nlt', 'PROMOTE_TO_MULTI']);
    if (r.status !== 0) throw new Error(`ogr2ogr PostgreSQL ${name}: ${r.stderr}`);
  }
}
