// The live bench's data (bench/live.bench.ts): the Dortmund OpenMapTiles tile's buildings and roads
// (test/helpers/city-features.ts) loaded into a throwaway PostGIS, a style that colours each building by a
// `colour` class (so a changed row changes pixels), the expire trigger the project ships (sql/expire-trigger.sql)
// attached to the building table, and the writer that recolours a share of the rows at a fixed period, as an
// editor's commits would arrive.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { CITY_TILE, loadCityIntoPostgis, writeCityFiles } from '../test/helpers/city-features.js';
import { startPostgres, type PostgresCluster } from '../test/helpers/postgres.js';
import { ROOT } from './lib.js';

/** The configured source ids of the two tables, and the style drawing them. */
export const BUILDINGS = 'buildings';
export const ROADS = 'roads';
export const LIVE_STYLE = 'live';
/** The NOTIFY channel the server listens on (`[postgres] expire_channel`) and the trigger sends to. */
export const CHANNEL = 'tileserver_expire';
/** The trigger SQL of the PostgreSQL part of issue 47; the bench runs it as shipped. */
export const TRIGGER_SQL = path.join(ROOT, 'sql/expire-trigger.sql');

export interface City {
  db: PostgresCluster;
  /** Rows of the building table. */
  buildings: number;
  /** The style file. */
  style: string;
}

/** Five colours far apart: a building whose class moves on by one is drawn visibly differently (class 4 and above: the last). */
export const COLOURS = ['#d7191c', '#2b83ba', '#1a9641', '#fdae61', '#7b3294'];

function writeStyle(file: string): void {
  const style = {
    version: 8,
    name: 'live bench',
    sources: {
      [BUILDINGS]: { type: 'vector', url: `source://${BUILDINGS}` },
      [ROADS]: { type: 'vector', url: `source://${ROADS}` },
    },
    layers: [
      { id: 'background', type: 'background', paint: { 'background-color': '#f4f1ea' } },
      { id: 'roads', type: 'line', source: ROADS, 'source-layer': ROADS, paint: { 'line-color': '#9a9a9a', 'line-width': ['interpolate', ['linear'], ['zoom'], 14, 1, 18, 6] } },
      {
        id: 'buildings',
        type: 'fill',
        source: BUILDINGS,
        'source-layer': BUILDINGS,
        paint: { 'fill-color': ['match', ['get', 'colour'], ...COLOURS.slice(0, -1).flatMap((c, i) => [i, c]), COLOURS[COLOURS.length - 1]], 'fill-outline-color': '#333333' },
      },
    ],
  };
  writeFileSync(file, JSON.stringify(style));
}

/**
 * The shipped SQL run as an operator would (psql -f), then its installer on the building table, as its opening
 * comment says: one NOTIFY per statement on the channel. Fails naming the file when it is not there (the
 * PostgreSQL part of issue 47 not merged).
 */
async function attachTrigger(db: PostgresCluster): Promise<string> {
  if (!existsSync(TRIGGER_SQL)) throw new Error(`${path.relative(ROOT, TRIGGER_SQL)} is missing: the live bench needs the PostgreSQL part of issue 47 (branch h47-postgres) merged`);
  await db.sql(readFileSync(TRIGGER_SQL, 'utf8'));
  await db.sql(`SELECT tileserver_expire_install('public.building', '${CHANNEL}', 'geometry')`);
  return 'tileserver_expire_install';
}

/** PostGIS with the city loaded, a `colour` class on every building, the style written into `dir`. */
export async function startCity(dir: string, trigger: boolean): Promise<City & { trigger: string | undefined }> {
  const files = writeCityFiles(dir);
  const db = await startPostgres(['seed.sql']);
  loadCityIntoPostgis(files, db.url);
  await db.sql('ALTER TABLE building ADD COLUMN colour integer NOT NULL DEFAULT 0');
  await db.sql(`UPDATE building SET colour = fid % ${COLOURS.length}`);
  await db.sql('ANALYZE building; ANALYZE transportation');
  const buildings = Number((await db.sql('SELECT count(*) AS n FROM building')).rows[0].n);
  const style = path.join(dir, 'live-style.json');
  writeStyle(style);
  return { db, buildings, style, trigger: trigger ? await attachTrigger(db) : undefined };
}

/** The `[postgres]` section and the two table sources. */
export function cityPostgresToml(db: PostgresCluster, notify: boolean): string {
  return `[postgres]
connection_string = "${db.url}"
${notify ? `expire_channel = "${CHANNEL}"` : ''}
[[postgres.tables]]
id = "${BUILDINGS}"
table = "building"
id_column = "fid"
[[postgres.tables]]
id = "${ROADS}"
table = "transportation"
id_column = "fid"
`;
}

/** One commit of the writer: when it returned, and the tiles (`z/x/y`, zooms given) its rows' boxes touch. */
export interface Commit {
  at: number;
  rows: number;
  tiles: Set<string>;
}

/** Tiles of zoom z touching a lon/lat box (edges included: a box on a tile border touches both). */
export function boxTiles(box: [number, number, number, number], z: number, out: Set<string>): void {
  const n = 2 ** z;
  const col = (lon: number) => Math.min(n - 1, Math.max(0, Math.floor(((lon + 180) / 360) * n)));
  const row = (lat: number) => {
    const r = (lat * Math.PI) / 180;
    return Math.min(n - 1, Math.max(0, Math.floor(((1 - Math.log(Math.tan(r) + 1 / Math.cos(r)) / Math.PI) / 2) * n)));
  };
  for (let x = col(box[0]); x <= col(box[2]); x++) for (let y = row(box[3]); y <= row(box[1]); y++) out.add(`${z}/${x}/${y}`);
}

export interface Writer {
  commits: Commit[];
  stop(): Promise<void>;
}

/**
 * Every `periodMs`, one UPDATE (its own transaction) moves the colour class of `share` of the buildings, chosen
 * at random, on by one; the commit's time is taken when the statement returns (the NOTIFY goes out at commit).
 * The box around the changed rows (what the trigger sends) gives the tiles of `zooms` the commit touched.
 */
export function startWriter(db: PostgresCluster, rows: number, share: number, periodMs: number, zooms: number[]): Writer {
  const commits: Commit[] = [];
  const n = Math.max(1, Math.round(rows * share));
  let stopped = false;
  let wake: (() => void) | undefined;
  const loop = (async () => {
    while (!stopped) {
      const r = await db.sql(
        `UPDATE building SET colour = (colour + 1) % ${COLOURS.length}
         WHERE fid IN (SELECT fid FROM building ORDER BY random() LIMIT $1)
         RETURNING ST_XMin(geometry) AS w, ST_YMin(geometry) AS s, ST_XMax(geometry) AS e, ST_YMax(geometry) AS n`,
        [n],
      );
      const at = Date.now();
      // The commit's area as the shipped trigger reports it: one box around every changed row.
      const rows = r.rows as { w: number; s: number; e: number; n: number }[];
      const box: [number, number, number, number] = [Math.min(...rows.map((b) => b.w)), Math.min(...rows.map((b) => b.s)), Math.max(...rows.map((b) => b.e)), Math.max(...rows.map((b) => b.n))];
      const tiles = new Set<string>();
      for (const z of zooms) boxTiles(box, z, tiles);
      commits.push({ at, rows: r.rowCount ?? 0, tiles });
      await new Promise<void>((resolve) => {
        wake = resolve;
        setTimeout(resolve, periodMs);
      });
    }
  })();
  return {
    commits,
    async stop() {
      stopped = true;
      wake?.();
      await loop;
    },
  };
}

/** The city tile: the area the users browse. */
export { CITY_TILE };
