// GeoPackage files (OGC 12-128): SQLite, read with better-sqlite3. Each feature table of `gpkg_contents` is a layer
// (or the tables listed in `layers`). A box is answered through the table's R*Tree (`rtree_<table>_<column>`, which
// GDAL and QGIS create), so a tile reads only the rows whose envelope meets it; geometries are GeoPackage blobs
// (gpkg-geometry.ts). Geometries in EPSG:4326 are read as they are, EPSG:3857 ones are turned into degrees.
import Database from 'better-sqlite3';
import type { LRUCache } from 'lru-cache';
import type { Geometry, Position } from 'geojson';
import { SourceOpenError, type Bounds } from '../source.js';
import { DEFAULT_FEATURE_CACHE_BYTES, featureCache } from './feature-cache.js';
import { BoxIndex, MAX_BOXES_IN_MEMORY } from './gpkg-boxes.js';
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

/** A decoded row and its estimated size in memory. */
interface DecodedRow {
  feature: FileFeature;
  bytes: number;
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
  /** A column is named `__proto__`: properties must be defined, not assigned. */
  protoColumn: boolean;
  /** FIDs of the rows whose envelope meets a box. */
  idsInBox: Database.Statement<{ w: number; s: number; e: number; n: number; limit: number }, unknown>;
  byId: Database.Statement<[number], unknown[]>;
  /** Decoded rows by FID, within the table's share of the source's `feature_cache_mb`. */
  cache: LRUCache<number, DecodedRow>;
  /** The R*Tree's boxes in memory, for a table of at most MAX_BOXES_IN_MEMORY rows (gpkg-boxes.ts). */
  boxes: BoxIndex | undefined;
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

  /** A row as a feature; undefined for an empty geometry. */
  private decode(t: Table, row: unknown[]): FileFeature | undefined {
    const blob = row[1] as Uint8Array | null;
    if (!blob) return undefined;
    let geometry: Geometry | undefined;
    try {
      geometry = readGpkgGeometry(blob);
    } catch (err) {
      if (err instanceof GpkgGeometryError) throw new GpkgGeometryError(`${this.location}: feature ${String(row[0])} of table "${t.layer.name}": ${err.message}`);
      throw err;
    }
    if (!geometry) return undefined;
    if (t.mercator) geometry = mapPositions(geometry, (p) => [toLon(Math.max(-MAX_MERC, Math.min(MAX_MERC, p[0]))), toLat(p[1])]);
    // Missing values are left out (as MVT and PostGIS's tiles leave them out). Plain assignment is the fast path;
    // a table with a column named __proto__ (checked at open) defines its properties instead.
    const properties: Record<string, PropertyValue> = {};
    for (let i = 0; i < t.columns.length; i++) {
      const name = t.columns[i];
      let v = row[i + 2] as PropertyValue | bigint | Uint8Array;
      if (v === null || v === undefined) continue;
      if (typeof v === 'bigint') v = Number(v);
      else if (v instanceof Uint8Array) continue;
      if (t.booleans.has(name)) v = v === 1 || v === true;
      if (t.protoColumn) Object.defineProperty(properties, name, { value: v, enumerable: true, writable: true, configurable: true });
      else properties[name] = v;
    }
    const id = row[0];
    return { id: typeof id === 'number' && id >= 0 ? id : undefined, geometry, properties };
  }

  /** A decoded row's estimated size in memory: JavaScript arrays of positions take about four times their WKB. */
  private static bytesOf(row: unknown[]): number {
    let n = 200 + ((row[1] as Uint8Array | null)?.byteLength ?? 0) * 4;
    for (let i = 2; i < row.length; i++) n += typeof row[i] === 'string' ? 40 + (row[i] as string).length * 2 : 16;
    return n;
  }

  /**
   * The features of a box in FID order, synchronously (SQLite answers from its page cache; the source calls this per
   * tile): the R*Tree names the rows, decoded rows come from the cache, the others are read and decoded. At most
   * `limit` rows (the source's max_features): a tile's page, never the file.
   */
  private *read(t: Table, bbox: Bounds | undefined, limit = Infinity): Generator<FileFeature> {
    if (!bbox) {
      for (const row of t.all.iterate()) {
        const f = this.decode(t, row);
        if (f) yield f;
      }
      return;
    }
    let [w, s, e, n] = bbox;
    if (t.mercator) [w, s, e, n] = [toX(w), toY(s), toX(e), toY(n)];
    const ids = t.boxes ? t.boxes.search(w, s, e, n, limit) : (t.idsInBox.all({ w, s, e, n, limit: Number.isFinite(limit) ? limit : -1 }) as number[]);
    ids.sort((a, b) => a - b);
    // This request's features, held here: reading the missing rows may evict cached ones it also needs.
    const fresh = new Map<number, FileFeature | undefined>();
    const missing: number[] = [];
    for (const id of ids) {
      const f = t.cache.get(id)?.feature;
      if (f) fresh.set(id, f);
      else missing.push(id);
    }
    const keep = (row: unknown[]) => {
      const f = this.decode(t, row);
      fresh.set(row[0] as number, f);
      if (f) t.cache.set(row[0] as number, { feature: f, bytes: GeoPackageReader.bytesOf(row) });
    };
    // Many rows to read: one join over the box; a few: each by its primary key.
    if (missing.length > ids.length / 4) {
      const wanted = new Set(missing);
      for (const row of t.inBox.iterate({ w, s, e, n })) if (wanted.has(row[0] as number)) keep(row);
    } else for (const id of missing) {
      const row = t.byId.get(id);
      if (row) keep(row);
    }
    for (const id of ids) {
      const f = fresh.get(id);
      if (f) yield f;
    }
  }

  async featuresInBox(layer: string, bbox: Bounds, limit: number): Promise<FileFeature[]> {
    const t = this.tables.get(layer);
    if (!t) return [];
    const out: FileFeature[] = [];
    for (const f of this.read(t, bbox, limit)) if (out.push(f) >= limit) break;
    return out;
  }

  heldInMemory(): undefined {
    return undefined;
  }

  memoryBytes(): number {
    // SQLite's page cache of this connection (its bound: its own setting), the decoded features kept and the boxes.
    const pages = this.db.pragma('cache_size', { simple: true }) as number;
    const pageSize = this.db.pragma('page_size', { simple: true }) as number;
    let decoded = 0;
    for (const t of this.tables.values()) decoded += t.cache.calculatedSize + (t.boxes?.bytes ?? 0);
    return (pages < 0 ? -pages * 1024 : pages * pageSize) + decoded;
  }

  async close(): Promise<void> {
    this.db.close();
  }
}

function openTable(db: Db, id: string, location: string, name: string, geomColumn: string, srsId: number, cacheBytes: number, boxesInMemory: number): Table {
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
  const list = [pk.name, geomColumn, ...columns].map((c) => `t.${quote(c)}`).join(', ');
  // The R*Tree is scanned and each row it names looked up by primary key; the rows are put in FID order in
  // JavaScript (an IN (subquery) ... ORDER BY plan costs SQLite about twice as much).
  const inBox = db.prepare(`SELECT ${list} FROM ${quote(rtree)} AS r JOIN ${quote(name)} AS t ON t.${quote(pk.name)} = r.id WHERE r.minx <= $e AND r.maxx >= $w AND r.miny <= $n AND r.maxy >= $s`).raw(true) as Table['inBox'];
  const all = db.prepare(`SELECT ${list} FROM ${quote(name)} AS t ORDER BY t.${quote(pk.name)}`).raw(true) as Table['all'];
  const idsInBox = db.prepare(`SELECT id FROM ${quote(rtree)} WHERE minx <= $e AND maxx >= $w AND miny <= $n AND maxy >= $s LIMIT $limit`).pluck(true) as Table['idsInBox'];
  const byId = db.prepare(`SELECT ${list} FROM ${quote(name)} AS t WHERE t.${quote(pk.name)} = ?`).raw(true) as Table['byId'];
  const extent = db.prepare(`SELECT min(minx) AS w, min(miny) AS s, max(maxx) AS e, max(maxy) AS n, count(*) AS c FROM ${quote(rtree)}`).get() as { w: number | null; s: number; e: number; n: number; c: number };
  const mercator = epsg === 3857;
  let bounds: Bounds | undefined;
  if (extent.w !== null) bounds = mercator ? [toLon(extent.w), toLat(extent.s), toLon(extent.e), toLat(extent.n)] : [extent.w, extent.s, extent.e, extent.n];
  const boxes = extent.c <= boxesInMemory ? BoxIndex.build(db.prepare(`SELECT id, minx, maxx, miny, maxy FROM ${quote(rtree)}`).raw(true).iterate() as Iterable<unknown[]>, extent.c) : undefined;
  return { layer: { name, fields, bounds, featureCount: extent.c }, inBox, all, columns, booleans, mercator, protoColumn: columns.includes('__proto__'), idsInBox, byId, cache: featureCache<number, DecodedRow>(cacheBytes), boxes };
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
      tables.set(name, openTable(db, id, location, row.name, row.geom, row.srs, Math.floor((options.cacheBytes ?? DEFAULT_FEATURE_CACHE_BYTES) / wanted.length), options.boxesInMemory ?? MAX_BOXES_IN_MEMORY));
    }
    return new GeoPackageReader(db, tables, location);
  } catch (err) {
    db?.close();
    if (err instanceof SourceOpenError) throw err;
    const msg = (err as Error).message;
    throw new SourceOpenError(id, `cannot open GeoPackage ${location}: ${/directory does not exist|unable to open/.test(msg) ? 'no such file' : /not a database/.test(msg) ? 'not a SQLite file' : msg}`);
  }
};
