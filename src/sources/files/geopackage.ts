// GeoPackage files (OGC 12-128): SQLite, read with better-sqlite3. Each feature table of `gpkg_contents` is a layer
// (or the tables listed in `layers`). A box is answered through the table's R*Tree (`rtree_<table>_<column>`, which
// GDAL and QGIS create), so a tile reads only the rows whose envelope meets it; geometries are GeoPackage blobs
// (gpkg-geometry.ts). Geometries in EPSG:4326 are read as they are, EPSG:3857 ones are turned into degrees.
import Database from 'better-sqlite3';
import type { Geometry, Position } from 'geojson';
import { SourceOpenError, type Bounds } from '../source.js';
import { GpkgGeometryError, readGpkgGeometry } from './gpkg-geometry.js';
import type { FeatureReader, FieldType, FileFeature, FileLayer, OpenReader, PropertyValue } from './reader.js';

type Db = InstanceType<typeof Database>;

const quote = (name: string) => `"${name.replaceAll('"', '""')}"`;

const EARTH = 6378137;
const MAX_MERC = Math.PI * EARTH;
const toLon = (x: number) => (x / EARTH) * (180 / Math.PI);
const toLat = (y: number) => (Math.atan(Math.sinh(y / EARTH)) * 180) / Math.PI;
const toX = (lon: number) => (lon * Math.PI * EARTH) / 180;
const toY = (lat: number) => EARTH * Math.log(Math.tan(Math.PI / 4 + (Math.max(-85.0511287798, Math.min(85.0511287798, lat)) * Math.PI) / 360));

function mapPositions(g: Geometry, f: (p: Position) => Position): Geometry {
  switch (g.type) {
    case 'Point':
      return { type: 'Point', coordinates: f(g.coordinates) };
    case 'MultiPoint':
    case 'LineString':
      return { type: g.type, coordinates: g.coordinates.map(f) } as Geometry;
    case 'MultiLineString':
    case 'Polygon':
      return { type: g.type, coordinates: g.coordinates.map((l) => l.map(f)) } as Geometry;
    case 'MultiPolygon':
      return { type: 'MultiPolygon', coordinates: g.coordinates.map((p) => p.map((l) => l.map(f))) };
    case 'GeometryCollection':
      return { type: 'GeometryCollection', geometries: g.geometries.map((m) => mapPositions(m, f)) };
  }
}

/** A column's field type from its declared SQLite type (GeoPackage's names), or undefined for BLOBs. */
function fieldType(declared: string): FieldType | undefined {
  const t = declared.toUpperCase();
  if (t === 'BOOLEAN') return 'Boolean';
  if (/^(INTEGER|INT|MEDIUMINT|SMALLINT|TINYINT|REAL|DOUBLE|FLOAT)/.test(t)) return 'Number';
  if (/^(TEXT|DATE|DATETIME)/.test(t) || t === '') return 'String';
  return undefined;
}

interface Table {
  layer: FileLayer;
  /** SELECT of the rows meeting a box ($w, $s, $e, $n in the table's CRS), in fid order. */
  inBox: Database.Statement<{ w: number; s: number; e: number; n: number }, unknown[]>;
  all: Database.Statement<[], unknown[]>;
  /** Column names in the SELECT's order after fid and geometry. */
  columns: string[];
  booleans: Set<string>;
  mercator: boolean;
}

class GeoPackageReader implements FeatureReader {
  readonly layers: readonly FileLayer[];
  constructor(
    private readonly db: Db,
    private readonly tables: Map<string, Table>,
    private readonly location: string,
  ) {
    this.layers = [...tables.values()].map((t) => t.layer);
  }

  async *features(layer: string, bbox: Bounds | undefined, signal?: AbortSignal): AsyncIterable<FileFeature> {
    const t = this.tables.get(layer);
    if (!t) return;
    for (const f of this.read(t, bbox)) {
      if (signal?.aborted) return;
      yield f;
    }
  }

  /** The rows of a box, synchronously (SQLite answers from the page cache; the source calls this per tile). */
  *read(t: Table, bbox: Bounds | undefined): Generator<FileFeature> {
    let rows: IterableIterator<unknown[]>;
    if (!bbox) rows = t.all.iterate();
    else {
      let [w, s, e, n] = bbox;
      if (t.mercator) [w, s, e, n] = [toX(w), toY(s), toX(e), toY(n)];
      rows = t.inBox.iterate({ w, s, e, n });
    }
    for (const row of rows) {
      const blob = row[1] as Uint8Array | null;
      if (!blob) continue;
      let geometry: Geometry | undefined;
      try {
        geometry = readGpkgGeometry(blob);
      } catch (err) {
        if (err instanceof GpkgGeometryError) throw new GpkgGeometryError(`${this.location}: feature ${String(row[0])} of table "${t.layer.name}": ${err.message}`);
        throw err;
      }
      if (!geometry) continue;
      if (t.mercator) geometry = mapPositions(geometry, (p) => [toLon(Math.max(-MAX_MERC, Math.min(MAX_MERC, p[0]))), toLat(p[1])]);
      const properties: Record<string, PropertyValue> = {};
      for (let i = 0; i < t.columns.length; i++) {
        const name = t.columns[i];
        let v = row[i + 2] as PropertyValue | bigint | Uint8Array;
        if (v === null || v === undefined) continue;
        if (typeof v === 'bigint') v = Number(v);
        else if (v instanceof Uint8Array) continue;
        if (t.booleans.has(name)) v = v === 1 || v === true;
        Object.defineProperty(properties, name, { value: v, enumerable: true, writable: true, configurable: true });
      }
      const id = row[0];
      yield { id: typeof id === 'number' && id >= 0 ? id : undefined, geometry, properties };
    }
  }

  tableOf(layer: string): Table | undefined {
    return this.tables.get(layer);
  }

  memoryBytes(): number {
    // SQLite's page cache of this connection (its own setting, bounded), the only memory held between requests.
    const pages = this.db.pragma('cache_size', { simple: true }) as number;
    const pageSize = this.db.pragma('page_size', { simple: true }) as number;
    return pages < 0 ? -pages * 1024 : pages * pageSize;
  }

  async close(): Promise<void> {
    this.db.close();
  }
}

function openTable(db: Db, id: string, location: string, name: string, geomColumn: string, srsId: number): Table {
  const where = `${location}: table "${name}"`;
  const srs = db.prepare('SELECT organization, organization_coordsys_id AS code FROM gpkg_spatial_ref_sys WHERE srs_id = ?').get(srsId) as { organization: string; code: number } | undefined;
  const epsg = srs && srs.organization.toUpperCase() === 'EPSG' ? srs.code : srsId;
  if (epsg !== 4326 && epsg !== 3857) throw new SourceOpenError(id, `${where} is in ${srs ? `${srs.organization}:${srs.code}` : `srs_id ${srsId}`}; only EPSG:4326 and EPSG:3857 are read (reproject with ogr2ogr -t_srs EPSG:4326)`);
  const rtree = `rtree_${name}_${geomColumn}`;
  const hasIndex = db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?").get(rtree);
  if (!hasIndex) throw new SourceOpenError(id, `${where} has no spatial index (${rtree}); create it with: ogrinfo ${location} -sql "SELECT CreateSpatialIndex('${name}', '${geomColumn}')"`);
  const info = db.prepare(`PRAGMA table_info(${quote(name)})`).all() as { name: string; type: string; pk: number }[];
  const pk = info.find((c) => c.pk === 1 && /^INTEGER$/i.test(c.type));
  if (!pk) throw new SourceOpenError(id, `${where} has no INTEGER PRIMARY KEY (a GeoPackage feature table needs one)`);
  const fields: Record<string, FieldType> = {};
  const columns: string[] = [];
  const booleans = new Set<string>();
  for (const c of info) {
    if (c.name === pk.name || c.name === geomColumn) continue;
    const type = fieldType(c.type);
    if (!type) continue;
    Object.defineProperty(fields, c.name, { value: type, enumerable: true, writable: true, configurable: true });
    columns.push(c.name);
    if (type === 'Boolean') booleans.add(c.name);
  }
  const select = `SELECT ${[pk.name, geomColumn, ...columns].map(quote).join(', ')} FROM ${quote(name)}`;
  const inBox = db.prepare(`${select} WHERE ${quote(pk.name)} IN (SELECT id FROM ${quote(rtree)} WHERE minx <= $e AND maxx >= $w AND miny <= $n AND maxy >= $s) ORDER BY ${quote(pk.name)}`).raw(true) as Table['inBox'];
  const all = db.prepare(`${select} ORDER BY ${quote(pk.name)}`).raw(true) as Table['all'];
  const extent = db.prepare(`SELECT min(minx) AS w, min(miny) AS s, max(maxx) AS e, max(maxy) AS n, count(*) AS c FROM ${quote(rtree)}`).get() as { w: number | null; s: number; e: number; n: number; c: number };
  const mercator = epsg === 3857;
  let bounds: Bounds | undefined;
  if (extent.w !== null) bounds = mercator ? [toLon(extent.w), toLat(extent.s), toLon(extent.e), toLat(extent.n)] : [extent.w, extent.s, extent.e, extent.n];
  return { layer: { name, fields, bounds, featureCount: extent.c }, inBox, all, columns, booleans, mercator };
}

export const openGeoPackage: OpenReader = async (location, options) => {
  const id = options.sourceId;
  let db: Db | undefined;
  try {
    db = new Database(location, { readonly: true, fileMustExist: true });
    db.defaultSafeIntegers(false);
    const hasContents = db.prepare("SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = 'gpkg_contents'").get();
    if (!hasContents) throw new SourceOpenError(id, `${location} is not a GeoPackage (no gpkg_contents table)`);
    const rows = db
      .prepare("SELECT c.table_name AS name, g.column_name AS geom, g.srs_id AS srs FROM gpkg_contents c JOIN gpkg_geometry_columns g ON g.table_name = c.table_name WHERE c.data_type = 'features' ORDER BY c.table_name")
      .all() as { name: string; geom: string; srs: number }[];
    if (!rows.length) throw new SourceOpenError(id, `${location} has no feature table (gpkg_contents lists none with data_type 'features')`);
    const wanted = options.layers ?? rows.map((r) => r.name);
    const tables = new Map<string, Table>();
    for (const name of wanted) {
      const row = rows.find((r) => r.name === name);
      if (!row) throw new SourceOpenError(id, `${location} has no feature table "${name}" (layers); it has ${rows.map((r) => r.name).join(', ')}`);
      tables.set(name, openTable(db, id, location, row.name, row.geom, row.srs));
    }
    return new GeoPackageReader(db, tables, location);
  } catch (err) {
    db?.close();
    if (err instanceof SourceOpenError) throw err;
    const msg = (err as Error).message;
    throw new SourceOpenError(id, `cannot open GeoPackage ${location}: ${/directory does not exist|unable to open/.test(msg) ? 'no such file' : /not a database/.test(msg) ? 'not a SQLite file' : msg}`);
  }
};

/** The synchronous read of GeoPackage readers (the source's fast path: no async iteration per feature). */
export function isGeoPackage(r: FeatureReader): r is GeoPackageReader {
  return r instanceof GeoPackageReader;
}

export type { GeoPackageReader };
